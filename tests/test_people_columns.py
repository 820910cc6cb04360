"""Issue 26: columns that name people (names, e-mail addresses, phone numbers, postal
addresses) are left out by default, with the reason, in the app's data preparation and
the CLI; keeping one needs its own confirmation (a tick of its own on the Data page,
``--keep`` in the CLI), since a model lists a discrete feature's values.

The data are generated here from fixed lists (no copied records)."""

from __future__ import annotations

import io
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import data as app_data
from dpviz.app.session import DATA_KEY
from dpviz.cli import main
from dpviz.privacy.schema import PrivacyLeakWarning, Schema
from dpviz.tabular.columns import PEOPLE_REASON, people_columns, suggest_drops
from tests.page_checks import key, texts

APP = str(Path(__file__).resolve().parent.parent / "app.py")
FIRST = (
    "Anna Ben Carla Dmitri Eva Farid Grace Hugo Ines Jonas Kai Lena Mia Noah Olga Pia Quentin Rosa"
).split()
LAST = "Rossi Kelly Novak Smith Garcia Okafor Chen Dubois Silva Larsen".split()
NAMES = [f"{f} {s}" for f in FIRST for s in LAST]  # 180 distinct "Firstname Lastname"


def applicants(n: int = 2380) -> pd.DataFrame:
    """Loan applicants: a name column (180 names, each on many rows: neither an ID nor
    free text), an income, a region and the decision. Fixed seed: the same every run."""
    rng = np.random.default_rng(180)
    income = rng.integers(10, 120, n)
    return pd.DataFrame(
        {
            "applicant": rng.choice(NAMES, n),
            "income": income.astype(str),
            "region": rng.choice(["north", "south", "east"], n),
            "approved": np.where(income + rng.integers(-30, 30, n) > 60, "yes", "no"),
        }
    )


def csv_bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue().encode()


def cli(capsys, *argv) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# --- the judgement ------------------------------------------------------------------------


def test_a_repeated_name_column_is_personal_data_and_not_an_id_or_free_text():
    frame = applicants()
    assert frame["applicant"].nunique() == 180
    why = suggest_drops(frame, "approved")
    assert set(why) == {"applicant"}
    assert why["applicant"].startswith(PEOPLE_REASON) and "people's names" in why["applicant"]
    assert people_columns(frame, "approved") == why


def test_values_and_names_that_look_like_people_and_those_that_do_not():
    n = 300
    rng = np.random.default_rng(7)  # fixed seed: fixed cells
    people = rng.choice(NAMES, n)
    frame = pd.DataFrame(
        {
            "contact": [p.lower().replace(" ", ".") + "@example.org" for p in people],
            "reach": [
                f"+44 20 {rng.integers(1000, 9999)} {rng.integers(1000, 9999)}" for _ in people
            ],
            "home": [
                f"{rng.integers(1, 300)} {rng.choice(['Oak', 'High'])} Street" for _ in people
            ],
            "Nachname": rng.choice(LAST, n),  # by its (German) name
            "Teléfono": rng.integers(100, 999, n).astype(str),  # by its name, accents dropped
            # not people: dates, a few two-word categories, amounts, a yes/no flag
            "applied": [f"2021-0{rng.integers(1, 9)}-1{rng.integers(0, 9)}" for _ in people],
            "city": rng.choice(["New York", "Los Angeles", "San Diego"], n),
            "amount": rng.integers(1_000_000, 9_999_999, n).astype(str),
            "has_email": rng.choice(["yes", "no"], n),
            "label": rng.choice(["a", "b"], n),
        }
    )
    found = people_columns(frame, "label")
    assert set(found) == {"contact", "reach", "home", "Nachname", "Teléfono"}
    assert "e-mail addresses" in found["contact"] and "phone numbers" in found["reach"]
    assert "postal addresses" in found["home"] and "phone numbers" in found["Teléfono"]


# --- the app's data preparation -------------------------------------------------------------


def test_the_app_leaves_a_name_column_out_and_keeping_it_needs_its_own_tick():
    upload = app_data.read_upload("applicants.csv", csv_bytes(applicants()))
    workspace = app_data.UploadWorkspace(upload)
    assert workspace.drops("approved") == ["applicant"]
    assert set(workspace.people("approved")) == {"applicant"}
    frame = app_data.working_frame(upload, workspace, "approved")
    choice = app_data.choose_schema(frame, "approved", declared_public=True)
    prepared = app_data.prepare(upload, choice, workspace)
    assert "applicant" not in prepared.frame.columns
    assert choice.public and "applicant" not in choice.schema.feature_names
    # Kept in the column table: one click on the declaration does not publish the names.
    workspace.keep = {c: True for c in upload.frame.columns}
    frame = app_data.working_frame(upload, workspace, "approved")
    people = workspace.people("approved")
    clicked = app_data.choose_schema(frame, "approved", declared_public=True, people=people)
    assert not clicked.public and clicked.schema.declaration == ""
    assert any("Personal data: 'applicant'" in w for w in clicked.warnings)
    ticked = app_data.choose_schema(
        frame, "approved", declared_public=True, people=people, published=["applicant"]
    )
    assert ticked.public and "applicant" in ticked.schema.feature_names
    table = app_data.published_values(ticked.schema, people)
    row = table.set_index("column").loc["applicant"]
    assert row["published"].startswith("180 values: ") and "… and 130 more" in row["published"]
    assert row["personal data"].startswith(PEOPLE_REASON)


# --- the CLI -------------------------------------------------------------------------------


def test_the_cli_lists_it_leaves_it_out_and_keeps_it_only_with_keep(capsys, tmp_path):
    data = tmp_path / "applicants.csv"
    data.write_bytes(csv_bytes(applicants()))
    base = ["--data", str(data), "--label", "approved"]
    code, out, err = cli(capsys, "info", *base, "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["suggested_drops"]["applicant"].startswith(PEOPLE_REASON)
    model = tmp_path / "m.json"
    train = ["train", *base, "--epsilon", "1", "--trees", "5", "--out", str(model)]
    train.append("--values-public")
    code, _, err = cli(capsys, *train)
    assert code == 0, err
    assert "left out 'applicant'" in err and "--keep applicant" in err
    assert "applicant" not in model.read_text()
    code, _, err = cli(capsys, *train, "--keep", "applicant")
    assert code == 0, err
    features = [f["name"] for f in json.loads(model.read_text())["schema"]["features"]]
    assert "applicant" in features and "keeping 'applicant'" in err
    # A declared schema that lists the names is refused without --keep.
    code, out, err = cli(capsys, "info", *base, "--keep", "applicant", "--json")
    assert code == 0, err
    inferred = Schema.from_dict(json.loads(out)["schema"])
    assert "applicant" in inferred.feature_names
    schema = Schema(inferred.label, inferred.classes, inferred.features)  # marks removed
    path = tmp_path / "s.json"
    path.write_text(schema.to_json())
    declared = ["train", *base, "--schema", str(path), "--epsilon", "1", "--trees", "5"]
    declared += ["--out", str(model)]
    code, _, err = cli(capsys, *declared)
    assert code != 0 and "the schema uses 'applicant'" in err
    code, _, err = cli(capsys, *declared, "--keep", "applicant")
    assert code == 0, err
    code, _, err = cli(capsys, *train, "--keep", "nobody")
    assert code != 0 and "--keep names 'nobody'" in err


# --- the Data page (AppTest) -----------------------------------------------------------------


@pytest.fixture
def page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    at.radio(key=key("data.source")).set_value("My own CSV file").run()
    upload = ("applicants.csv", csv_bytes(applicants()), "text/csv")
    at.file_uploader(key="data.csv").set_value(upload).run()
    assert not at.exception, at.exception
    return at


def test_the_data_page_gives_the_reason_and_asks_for_a_tick_of_its_own(page):
    at = page
    drops = next(m for m in at.multiselect if m.label == "Leave out these columns")
    assert drops.value == ["applicant"]
    table = next(d.value for d in at.dataframe if "suggestion" in d.value.columns)
    row = table.set_index("column").loc["applicant"]
    assert not row["keep"] and row["suggestion"].startswith(f"drop — {PEOPLE_REASON}")
    assert not [c for c in at.checkbox if c.label.startswith("Publish the values")]
    # Keep it: its values are shown, and the one-click declaration does not publish them.
    drops.set_value([]).run()
    publish = next(c for c in at.checkbox if c.label.startswith("Publish the values"))
    assert "'applicant'" in publish.label and PEOPLE_REASON in publish.label
    shown = next(d.value for d in at.dataframe if "published" in d.value.columns)
    assert shown.set_index("column").loc["applicant", "published"].startswith("180 values")
    next(c for c in at.checkbox if c.label == app_data.DECLARATION_PROMPT).check().run()
    data = at.session_state[DATA_KEY]
    assert "applicant" in data.schema.feature_names and not data.schema_public
    assert "Personal data: 'applicant'" in texts(at.warning)
    # Its own tick publishes it.
    next(c for c in at.checkbox if c.label.startswith("Publish the values")).check().run()
    assert not at.exception, at.exception
    assert at.session_state[DATA_KEY].schema_public
