"""Currency, unit and date cells read as numbers (issue 27): ``€5.914,00``, ``$1,234.50``,
``12 %``, ``EUR 12``, ``(1,234.00)``, ``31.01.2020``, ``1/31/2020``, ISO dates and
timestamps, by :func:`dpviz.tabular.encode.read_csv`, with a read note per column, in the
CLI (``note:`` on stderr) and for the Data page (the upload's notes)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.app import data as app_data
from dpviz.cli import main
from dpviz.privacy.schema import PrivacyLeakWarning, infer_schema
from dpviz.tabular.encode import ARROW_TEXT, normalise_numbers, read_csv

# 2020-01-01 is day 18262 after 1970-01-01.
DAY_2020 = 18262


def read(text: str) -> pd.DataFrame:
    return read_csv(text.encode())


def numbers(frame: pd.DataFrame, column: str) -> list:
    return pd.to_numeric(frame[column]).tolist()


def note(frame: pd.DataFrame, column: str) -> str:
    found = [n for n in frame.attrs["read_notes"] if f"column {column!r}" in n]
    assert len(found) == 1, frame.attrs["read_notes"]
    return found[0]


def csv(sep: str, **columns) -> str:
    """A CSV of the given columns (lists of equal length) and a label column."""
    n = len(next(iter(columns.values())))
    rows = [sep.join([*columns, "y"])]
    rows += [sep.join([*(str(v[i]) for v in columns.values()), "ab"[i % 2]]) for i in range(n)]
    return "\n".join(rows) + "\n"


# --- currency signs and codes ---------------------------------------------------------------


def test_euro_amounts_with_decimal_commas_in_a_semicolon_file():
    frame = read(csv(";", price=["€5.914,00", "€1.234,50", "€-2,5", "€0,99"]))
    assert numbers(frame, "price") == [5914.0, 1234.5, -2.5, 0.99]
    text = note(frame, "price")
    assert "amounts in '€'" in text and "decimal commas" in text
    assert "('€5.914,00' as 5914.00)" in text  # the longest amount is the example


def test_euro_sign_after_the_amount_and_dollar_amounts_with_comma_groups():
    frame = read(csv(";", eur=["1.234,50 €", "12,00 €", "3 €"], usd=["$1,234.50", "$3", "$0.5"]))
    assert numbers(frame, "eur") == [1234.5, 12.0, 3.0]
    assert numbers(frame, "usd") == [1234.5, 3.0, 0.5]
    assert "amounts in '$'" in note(frame, "usd") and "decimal commas" not in note(frame, "usd")


def test_negative_amounts_sign_before_or_after_the_symbol_and_in_parentheses():
    frame = read(csv(",", usd=["-$3.20", "$-1.00", '"(1,234.00)"', '"($5.00)"', "$2.00"]))
    assert numbers(frame, "usd") == [-3.2, -1.0, -1234.0, -5.0, 2.0]


def test_currency_codes_before_or_after_the_amount():
    frame = read(csv(",", a=["EUR 12", "EUR 3.5", "EUR12"], b=["12 USD", "1 USD", "0.25 USD"]))
    assert numbers(frame, "a") == [12.0, 3.5, 12.0]
    assert numbers(frame, "b") == [12.0, 1.0, 0.25]
    assert "amounts in 'EUR'" in note(frame, "a")


def test_comma_alone_is_decided_by_the_file():
    # "€1,234" is 1.234 in a ;-separated (European) file and 1234 in a comma-separated one.
    eu = read(csv(";", p=["€1,234", "€2,5", "€7"]))
    assert numbers(eu, "p") == [1.234, 2.5, 7.0]
    us = read(csv(",", p=['"€1,234"', '"€2,000"', "€7"]))
    assert numbers(us, "p") == [1234.0, 2000.0, 7.0]
    # A comma-separated file whose other column has decimal commas decides the same way.
    mixed = read(csv(",", x=['"3,5"', '"1,25"', '"7,0"'], p=['"€1,234"', '"€2,000"', "€7"]))
    assert numbers(mixed, "p") == [1.234, 2.0, 7.0]


def test_decimal_comma_currency_makes_dotted_numbers_thousands_elsewhere():
    frame = read(csv(",", p=['"€1.234,50"', '"€2,5"', "€7"], n=["3.750", "1.000", "12"]))
    assert numbers(frame, "n") == [3750, 1000, 12]
    assert any("dots as thousands separators" in n for n in frame.attrs["read_notes"])


# --- units ----------------------------------------------------------------------------------


def test_percent_keeps_the_number_as_written_and_says_so():
    frame = read(csv(";", rate=["12 %", "3,5 %", "100%", "0 %"], per=["5 ‰", "12‰", "1 ‰", "0‰"]))
    assert numbers(frame, "rate") == [12.0, 3.5, 100.0, 0.0]
    assert numbers(frame, "per") == [5.0, 12.0, 1.0, 0.0]
    assert "as written ('3,5 %' as 3.5, not divided by 100)" in note(frame, "rate")
    assert "not divided by 1000" in note(frame, "per")


@pytest.mark.parametrize("unit", ["kg", "g", "km", "m", "cm", "mm", "h", "min", "s"])
def test_units(unit):
    frame = read(csv(",", v=[f"1.5 {unit}", f"2{unit}", f"10 {unit}"]))
    assert numbers(frame, "v") == [1.5, 2.0, 10.0]
    assert f"numbers with the unit {unit!r}" in note(frame, "v")


# --- what stays text ------------------------------------------------------------------------


def test_text_that_mentions_a_currency_and_codes_are_not_numbers():
    frame = read(
        csv(
            ",",
            talk=["paid €5 for coffee", "€5", "refund of €12.00 pending", "no"],
            code=["A12", "B7", "C1", "A12"],
            both=["€5", "$6", "€7", "$8"],  # two currencies do not compare
            units=["5 kg", "6 m", "7 kg", "8 m"],  # nor two units
        )
    )
    assert frame["talk"].iloc[0] == "paid €5 for coffee" and frame["talk"].iloc[1] == "€5"
    assert frame["code"].tolist() == ["A12", "B7", "C1", "A12"]
    assert frame["both"].tolist() == ["€5", "$6", "€7", "$8"]
    assert frame["units"].tolist() == ["5 kg", "6 m", "7 kg", "8 m"]
    assert frame.attrs["read_notes"] == []


def test_a_column_with_too_many_cells_that_do_not_parse_stays_text():
    # 3 of 4 filled cells are amounts: below the 90% a conversion needs.
    frame = read(csv(";", p=["€1", "€2", "€3", "ask"]))
    assert frame["p"].tolist() == ["€1", "€2", "€3", "ask"]


# --- mixed columns: blanks, NA cells, stray text ---------------------------------------------


def test_mostly_currency_with_blanks_na_and_a_stray_cell():
    cells = [f"€{i},50" for i in range(20)] + ["", "NA", "NA", "call us"]
    frame = read(csv(";", p=cells))
    got = pd.to_numeric(frame["p"])
    assert got.iloc[:20].tolist() == [i + 0.5 for i in range(20)]
    assert got.iloc[20:].isna().all()
    text = note(frame, "p")
    assert "2 cells 'NA' read as missing values" in text
    assert "1 other cells that do not read so became missing values (such as 'call us')" in text


def test_bare_numbers_in_a_currency_column_are_amounts():
    frame = read(csv(",", p=["$5.00", "0", "$7.25", "$1"]))
    assert numbers(frame, "p") == [5.0, 0.0, 7.25, 1.0]


# --- dates ----------------------------------------------------------------------------------


def test_iso_dates_are_days_since_1970():
    frame = read(csv(",", d=["2020-01-01", "1970-01-01", "1969-12-31", "2020-03-01"]))
    assert numbers(frame, "d") == [DAY_2020, 0, -1, DAY_2020 + 60]
    assert "dates (yyyy-mm-dd): read as days since 1970-01-01 ('2020-01-01' as 18262)" in note(
        frame, "d"
    )


def test_dotted_dates():
    frame = read(csv(";", d=["01.01.2020", "31.01.2020", "1.2.2020", "29.02.2020"]))
    assert numbers(frame, "d") == [DAY_2020, DAY_2020 + 30, DAY_2020 + 31, DAY_2020 + 59]
    assert "dates (dd.mm.yyyy)" in note(frame, "d")


def test_slashed_dates_decided_by_a_part_above_12():
    frame = read(
        csv(
            ",", us=["1/31/2020", "2/1/2020", "1/1/2020"], eu=["31/1/2020", "1/2/2020", "1/1/2020"]
        )
    )
    assert numbers(frame, "us") == [DAY_2020 + 30, DAY_2020 + 31, DAY_2020]
    assert numbers(frame, "eu") == [DAY_2020 + 30, DAY_2020 + 31, DAY_2020]
    assert "dates (mm/dd/yyyy)" in note(frame, "us") and "assumed" not in note(frame, "us")
    assert "dates (dd/mm/yyyy)" in note(frame, "eu") and "assumed" not in note(frame, "eu")


def test_ambiguous_slashed_dates_say_which_order_was_assumed():
    us = read(csv(",", d=["1/2/2020", "2/3/2020", "12/12/2020"]))
    assert numbers(us, "d")[0] == DAY_2020 + 1  # January 2nd
    assert "mm/dd/yyyy assumed" in note(us, "d")
    eu = read(csv(";", d=["1/2/2020", "2/3/2020", "12/12/2020"]))
    assert numbers(eu, "d")[0] == DAY_2020 + 31  # 1 February
    assert "dd/mm/yyyy assumed" in note(eu, "d") and "European" in note(eu, "d")


def test_both_orders_in_one_column_stay_text():
    frame = read(csv(",", d=["31/1/2020", "1/31/2020", "1/1/2020"]))
    assert frame["d"].tolist() == ["31/1/2020", "1/31/2020", "1/1/2020"]


def test_iso_timestamps_keep_the_fraction_of_a_day():
    cells = ["2020-01-01T12:00", "2020-01-01T06:00:00", "2020-01-02 18:00", "2020-01-03"]
    frame = read(csv(",", t=cells))
    assert numbers(frame, "t") == [DAY_2020 + 0.5, DAY_2020 + 0.25, DAY_2020 + 1.75, DAY_2020 + 2]
    assert "dates (yyyy-mm-ddThh:mm[:ss])" in note(frame, "t")


def test_impossible_dates_become_missing_and_are_counted():
    cells = [f"{d:02d}.01.2020" for d in range(1, 31)] + ["31.02.2020", "NA"]
    frame = read(csv(";", d=cells))
    got = pd.to_numeric(frame["d"])
    assert got.iloc[:30].tolist() == list(range(DAY_2020, DAY_2020 + 30))
    assert got.iloc[30:].isna().all()
    text = note(frame, "d")
    assert "1 cell 'NA' read as missing values" in text and "'31.02.2020'" in text


def test_a_date_column_is_continuous_and_a_schema_declares_it_in_days(capsys, tmp_path):
    rng = np.random.default_rng(0)
    days = rng.integers(DAY_2020, DAY_2020 + 700, 300)
    label = np.where(days > DAY_2020 + 350, "late", "early")
    dates = pd.to_datetime(days, unit="D").strftime("%d.%m.%Y")
    data = tmp_path / "d.csv"
    pd.DataFrame({"when": dates, "y": label}).to_csv(data, sep=";", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        schema = infer_schema(read_csv(data), "y")
    assert schema.features[0].kind == "continuous"
    declared = {
        "label": "y",
        "classes": ["early", "late"],
        "features": [{"name": "when", "type": "continuous", "min": DAY_2020, "max": 19000}],
    }
    (tmp_path / "s.json").write_text(json.dumps(declared))
    argv = ["train", "--data", str(data), "--label", "y", "--schema", str(tmp_path / "s.json")]
    argv += ["--out", str(tmp_path / "m.json")]
    code = main([*argv, "--epsilon", "2", "--trees", "5", "--json"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "note: column 'when' holds dates (dd.mm.yyyy): read as days since 1970-01-01" in err


# --- the Data page: the same notes -------------------------------------------------------------


def test_the_data_page_upload_carries_the_notes():
    text = csv(
        ";", price=["€5.914,00", "€1,5", "€3"], when=["01.01.2020", "02.01.2020", "03.01.2020"]
    )
    upload = app_data.read_upload("eu.csv", text.encode())
    assert any("amounts in '€'" in n for n in upload.notes)
    assert any("holds dates (dd.mm.yyyy)" in n for n in upload.notes)
    assert pd.to_numeric(upload.frame["when"]).tolist() == [DAY_2020, DAY_2020 + 1, DAY_2020 + 2]


# --- a million cells ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [object, ARROW_TEXT])
def test_a_million_cell_column_is_converted(dtype):
    n, kinds = 1_000_000, 20_000
    rng = np.random.default_rng(1)
    # 20,000 distinct amounts (some with thousands dots) and dates, drawn into a million cells.
    cents = np.arange(-kinds // 2, kinds // 2) * 997
    whole = [f"{abs(c) // 100:,}".replace(",", ".") for c in cents]
    amounts = np.array(
        [f"{'-' if c < 0 else ''}€{w},{abs(c) % 100:02d}" for c, w in zip(cents, whole)]
    )
    days = np.arange(kinds) - 5_000
    dates = pd.to_datetime(days, unit="D").strftime("%d.%m.%Y").to_numpy()
    pick, when = rng.integers(0, kinds, n), rng.integers(0, kinds, n)
    amount = pd.Series(amounts[pick], dtype=object)
    amount[::1000] = np.nan  # empty cells stay missing
    frame = pd.DataFrame({"amount": amount, "date": dates[when], "y": "a"}).astype(dtype)
    out, notes = normalise_numbers(frame, ";")
    assert out["amount"].dtype == dtype and out["date"].dtype == dtype
    expected = np.where(amount.isna(), np.nan, cents[pick] / 100)
    np.testing.assert_array_equal(pd.to_numeric(out["amount"]).to_numpy(), expected)
    np.testing.assert_array_equal(pd.to_numeric(out["date"]).to_numpy(), days[when])
    assert len(notes) == 2 and "1,000 cells" not in notes[0]  # empty cells are not counted
