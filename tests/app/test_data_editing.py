"""The Data page's schema editor: value lists that hold commas (quoted, CSV-style), bounds
rounded outwards to round numbers, and the page's tables (wide bounds columns, blank or
"—" for missing cells, a Columns heading that says how to leave a column out)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import data as app_data
from dpviz.app.session import DATA_KEY
from dpviz.privacy.schema import Feature, Schema
from tests.page_checks import key, texts

APP = str(Path(__file__).resolve().parent.parent.parent / "app.py")
CITIES = ("Boston, MA", "Austin, TX", "Denver, CO")

# --- value lists ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ('"Boston, MA", "Austin, TX"', ("Boston, MA", "Austin, TX")),
        ("a, b,,c ", ("a", "b", "c")),
        ('"say ""hi""", x', ('say "hi"', "x")),
        ('5" screen, y', ('5" screen', "y")),
        ('"  padded  ", z', ("  padded  ", "z")),
        ("", ()),
        (None, ()),
    ],
)
def test_split_list_reads_quoted_entries_with_commas(text, values):
    assert app_data.split_list(text) == values


@pytest.mark.parametrize(
    "values",
    [
        CITIES,
        ("plain", "list"),
        ('say "hi"', '5" screen', '"quoted"', " lead", "trail "),
        ("a,b", ",", "x, y, z"),
    ],
)
def test_join_list_round_trips_through_split_list(values):
    text = app_data.join_list(values)
    assert app_data.split_list(text) == values
    if values == CITIES:
        assert text == '"Boston, MA", "Austin, TX", "Denver, CO"'
    if values == ("plain", "list"):
        assert text == "plain, list"  # nothing to quote: written as before


def test_schema_table_keeps_a_value_list_with_commas():
    frame = pd.DataFrame({"city": list(CITIES) * 4, "label": list("ab") * 6})
    schema = Schema("label", ("a", "b"), (Feature("city", "discrete", values=CITIES),))
    table = app_data.schema_table(schema)
    assert table.loc[0, "values"] == '"Boston, MA", "Austin, TX", "Denver, CO"'
    again, filled = app_data.table_to_schema(table, app_data.join_list(("a", "b")), "label", frame)
    assert again == schema and filled == []
    classes = app_data.table_to_schema(table, '"yes, really", no', "label", frame)[0].classes
    assert classes == ("yes, really", "no")


# --- rounding bounds outwards ---------------------------------------------------------------


def test_nice_step_is_on_the_1_2_5_ladder():
    assert [app_data.nice_step(s) for s in (62.3, 49.38, 300911.3, 0.04, 10, 0)] == [
        10,
        5,
        50000,
        0.005,
        1,
        1,
    ]


@pytest.mark.parametrize(
    ("low", "high", "rounded"),
    [
        (17.3, 79.6, (10, 80)),
        (-37.35, 12.03, (-40, 15)),
        (-318427.8, -17516.5, (-350000, 0)),
        (20050, 77419, (20000, 80000)),
        (0.1, 0.7, (0.1, 0.7)),  # already round: kept (not 0.30000000000000004 noise)
        (1000.3, 1000.7, (1000.3, 1000.7)),
        (5, 5, (5, 5)),
    ],
)
def test_round_outwards_examples(low, high, rounded):
    got = app_data.round_outwards(low, high)
    assert got == rounded and math.copysign(1, got[1]) == 1  # never -0.0


def test_round_outwards_always_contains_the_range_with_at_most_eleven_steps():
    # Fixed seed; the property must hold for every pair, so no tolerance is involved.
    rng = np.random.default_rng(7)
    scale = 10.0 ** rng.integers(-6, 7, 500)
    pairs = np.sort(rng.normal(size=(500, 2)) * scale[:, None], axis=1)
    for low, high in pairs:
        new_low, new_high = app_data.round_outwards(low, high)
        assert new_low <= low and new_high >= high
        step = app_data.nice_step(high - low)
        assert (new_high - new_low) / step <= 12 + 1e-9  # 10 parts, plus one at each end


def test_rounded_table_rounds_filled_continuous_bounds_only():
    table = pd.DataFrame(
        [
            {"use": True, "feature": "age", "type": "continuous", "min": 17.3, "max": 79.6},
            {"use": True, "feature": "t", "type": "continuous", "min": np.nan, "max": 79.6},
            {"use": True, "feature": "city", "type": "discrete", "min": np.nan, "max": np.nan},
        ]
    )
    table["values"] = ["", "", app_data.join_list(CITIES)]
    out = app_data.rounded_table(table)
    assert (out.loc[0, "min"], out.loc[0, "max"]) == (10, 80)
    assert math.isnan(out.loc[1, "min"]) and out.loc[1, "max"] == 80  # a blank stays blank
    assert out.loc[2].equals(table.loc[2]) and table.loc[0, "min"] == 17.3  # a copy


# --- the page --------------------------------------------------------------------------------


def cities_csv() -> bytes:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "temperature": np.round(rng.normal(-12.5, 8, 120), 2),
            "age": rng.integers(17, 80, 120),
            "city": rng.choice(list(CITIES), 120),
            "label": rng.choice(["yes", "no"], 120),
        }
    )
    frame.loc[3, "temperature"] = np.nan
    return frame.to_csv(index=False).encode()


def uploaded() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/data.py").run()
    at.radio(key=key("data.source")).set_value("My own CSV file").run()
    at.file_uploader(key="data.csv").set_value(("cities.csv", cities_csv(), "text/csv")).run()
    assert not at.exception, at.exception
    return at


def test_data_page_rounds_bounds_outwards_and_keeps_city_names_whole():
    at = uploaded()
    assert "the data's own min and max" in texts(at.warning)
    heading = texts(at.markdown)
    assert "under 'Leave out these columns'" in heading and "untick" not in heading
    # Missing cells show blank in the editor (its caption speaks of blank cells) and as
    # "—" in the other tables, never as "None"; the bounds columns are wide enough for
    # a sign and every digit, in the default format (%g cut -318427.8 to -318428).
    (editor,) = [frame for frame in at.dataframe if frame.proto.editing_mode]
    assert editor.proto.placeholder == ""
    assert all(frame.proto.placeholder == "—" for frame in at.dataframe if frame != editor)
    columns = json.loads(editor.proto.columns)
    for bound in ("min", "max"):
        assert columns[bound]["width"] >= 120 and "format" not in columns[bound]
    rounding = next(b for b in at.button if b.label == "Round min/max outwards and apply")
    rounding.click().run()
    assert not at.exception, at.exception
    data = at.session_state[DATA_KEY]
    temperature, age, city = data.schema.features
    for feature in (temperature, age):
        column = pd.to_numeric(data.frame[feature.name], errors="coerce")
        expected = app_data.round_outwards(column.min(), column.max())
        assert (feature.low, feature.high) == expected
        assert feature.low < column.min() and feature.high > column.max()
    assert (age.low, age.high) == (10, 80)  # ages 17 to 79
    assert set(city.values) == set(CITIES)  # read back whole, not split at the comma
    assert "the data's own min and max" not in texts(at.warning)
