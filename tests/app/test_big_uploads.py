"""Big uploads (issue 17): Arrow-backed reading equals pandas' reading, the per-session
memory budget, and cross-validation on a stratified sample when the data is huge (the
thresholds are monkeypatched down so that the tests stay small)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY
from dpviz.evaluation.demos import DEMO_CSV
from dpviz.tabular import encode as data
from dpviz.tabular.encode import ARROW_TEXT, read_csv, to_numbers
from tests.app.test_pages import open_page, set_forest_trees, upload_csv
from tests.page_checks import key, texts

CORPUS = Path(__file__).resolve().parent.parent / "bad_inputs"
# Corpus files that read (the others are refused, with the same message on both paths).
READABLE = [
    "bom_crlf.csv",
    "free_text_column.csv",
    "infinite_value.csv",
    "nan_labels.csv",
    "no_header.csv",
    "one_class.csv",
    "predict_input.csv",
    "semicolon.csv",
    "valid.csv",
]


def both_paths(monkeypatch, source) -> tuple[pd.DataFrame, pd.DataFrame]:
    small = read_csv(source, min_columns=1)
    monkeypatch.setattr(data, "ARROW_FROM_BYTES", 0)
    big = read_csv(source, min_columns=1)
    monkeypatch.undo()
    return small, big


@pytest.mark.parametrize("name", [n for n in READABLE if (CORPUS / n).exists()])
def test_arrow_reading_gives_the_same_cells_and_notes(monkeypatch, name):
    small, big = both_paths(monkeypatch, CORPUS / name)
    assert all(dtype == ARROW_TEXT for dtype in big.dtypes)
    assert list(big.columns) == list(small.columns)
    pd.testing.assert_frame_equal(big.astype(object), small.astype(object))
    assert big.attrs["read_notes"] == small.attrs["read_notes"]


def test_arrow_reading_trims_cells_reads_decimal_commas_and_quoted_delimiters(monkeypatch):
    text = b'name;"w, kg";label\n  a ;39,1;yes\n"b;c";   ;no\nd;1.234,5;NA\n'
    small, big = both_paths(monkeypatch, text)
    pd.testing.assert_frame_equal(big.astype(object), small.astype(object))
    assert big["w, kg"].tolist()[0] == "39.1" and pd.isna(big["w, kg"].iloc[1])
    assert big["name"].tolist() == ["a", "b;c", "d"]
    assert any("decimal commas" in n for n in big.attrs["read_notes"])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"x,y\n1,2\n3,4,5\n", "line 3 has 3 fields but the header has 2"),
        (b"x,x\n1,2\n", "names column 'x' twice"),
        (b"x,y\n1,\xe9\n", "not UTF-8 text (bad byte 0xE9 on line 2"),
    ],
)
def test_arrow_path_words_bad_files_as_pandas_path(monkeypatch, text, message):
    monkeypatch.setattr(data, "ARROW_FROM_BYTES", 0)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        read_csv(text)


def test_to_numbers_matches_pandas_and_falls_back_on_odd_cells():
    cells = ["1", "-1.5", "+2", "1e5", "inf", "nan", " 3", "1e400", "x", None]
    column = pd.Series(cells, dtype=ARROW_TEXT)
    expected = pd.to_numeric(pd.Series(cells, dtype=object), errors="coerce")
    np.testing.assert_array_equal(to_numbers(column).to_numpy(), expected.to_numpy(float))
    clean = pd.Series(["1", "2.5", None], dtype=ARROW_TEXT)
    np.testing.assert_array_equal(to_numbers(clean).to_numpy(), [1.0, 2.5, np.nan])


def test_memory_budget_refuses_before_and_after_parsing(monkeypatch):
    text = DEMO_CSV.read_bytes()
    rows, columns = 2000, 6
    need = data.frame_memory(rows, columns, len(text))
    assert need > rows * columns * 17  # text, Arrow offsets and the encoded copy
    # Small files: checked on the parsed frame.
    with pytest.raises(ValueError, match="2,000 rows × 6 columns would need about"):
        read_csv(text, memory_budget=need // 2)
    assert len(read_csv(text, memory_budget=10 * need)) == rows
    # Large files: refused before parsing, from the line count.
    monkeypatch.setattr(data, "ARROW_FROM_BYTES", 0)
    with pytest.raises(ValueError, match="of memory once read; the limit per session is"):
        read_csv(text, memory_budget=need // 2)
    assert len(read_csv(text, memory_budget=10 * need)) == rows


def test_app_refuses_an_upload_over_the_session_memory_budget(monkeypatch):
    monkeypatch.setattr(support, "SESSION_MEMORY_BUDGET", 100_000)
    at = upload_csv(open_page("pages/data.py"), "big.csv", DEMO_CSV.read_bytes())
    error = texts(at.error)
    assert "would need about" in error and "the limit per session is 0.0 GB" in error
    assert "Upload a sample of the rows or fewer columns" in error
    assert at.session_state[DATA_KEY].name.startswith("demo.csv")


def test_cv_sample_is_stratified_public_and_bounded():
    prepared = support.prepare_demo("demo_csv")
    encoded = data.encode(prepared.frame, prepared.schema)
    assert app_train.cv_sample(encoded, 0, rows=encoded.n_records) is encoded
    sample = app_train.cv_sample(encoded, 3, rows=500)
    again = app_train.cv_sample(encoded, 3, rows=500)
    other = app_train.cv_sample(encoded, 4, rows=500)
    assert sample.n_records == 500
    np.testing.assert_array_equal(sample.continuous, again.continuous)  # from the seed
    assert not np.array_equal(sample.continuous, other.continuous)
    shares = np.bincount(encoded.y) / encoded.n_records
    np.testing.assert_allclose(np.bincount(sample.y) / 500, shares, atol=1 / 500)


def test_train_on_huge_data_cross_validates_a_sample_and_says_so(monkeypatch):
    monkeypatch.setattr(app_train, "CV_SAMPLE_ROWS", 600)
    at = open_page("pages/train.py")
    set_forest_trees(at, 10)
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    run = at.session_state[RUN_KEY]
    assert run.sampled and run.cv_records == 600 and run.n_records == 2000
    assert "stratified sample of 600 of 2,000 records" in texts(at.caption)
    note = texts(at.info)
    assert "ran on a stratified sample of 600 of them" in note
    assert "fitted on all 2,000 records" in note
    # The released model read every record (the folds only a sample).
    assert run.model.n_train_records_ == 2000 and sum(run.class_counts) == 2000


def test_train_on_small_data_uses_every_record():
    settings = app_train.TrainSettings(n_estimators=5, folds=2, sklearn_reference=False)
    run = app_train.train(support.prepare_demo("demo_csv"), settings)
    assert not run.sampled and run.sample_note is None
    assert "2-fold CV on 2,000 records" in app_train.run_caption(run)


def test_parsed_numbers_encode_exactly_as_text_and_keep_text_cells(monkeypatch):
    text = b"a,b,c,label\n1.5,x,3,yes\n,y,3 or 4,no\n2e3,x,4,no\n-0.25,y,5,yes\n"
    monkeypatch.setattr(data, "ARROW_FROM_BYTES", 0)
    frame = read_csv(text)
    from dpviz.privacy.schema import Feature, Schema

    schema = Schema(
        label="label",
        classes=("no", "yes"),
        features=(
            Feature("a", "continuous", -1.0, 10.0, missing="low"),
            Feature("b", "discrete", values=("x", "y")),
        ),
    )
    parsed = data.parsed_numbers(frame, ["a", "c", "b"])
    assert parsed["a"].dtype == np.float64 and parsed["b"].dtype == ARROW_TEXT
    assert parsed["c"].dtype == ARROW_TEXT  # "3 or 4" is not a number
    before, after = data.encode(frame, schema), data.encode(parsed, schema)
    np.testing.assert_array_equal(before.continuous, after.continuous)
    np.testing.assert_array_equal(before.discrete, after.discrete)
    assert before.report.messages() == after.report.messages()
    with_c = Schema(
        label="label", classes=("no", "yes"), features=(Feature("c", "continuous", 0, 9),)
    )
    with pytest.raises(ValueError, match="holds text \\('3 or 4'"):
        data.encode(data.parsed_numbers(frame, ["c"]), with_c)
