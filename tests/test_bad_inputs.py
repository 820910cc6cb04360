"""Bad inputs give one clear ``error: ...`` line and exit status 2, never a traceback.

The files live in ``tests/bad_inputs/`` and are written by ``make_corpus.py`` there.
Every CLI case runs in-process through ``dpviz.cli.main`` and checks:

* exit status 2;
* the last line of stderr starts with ``error: `` and it is the only ``error:`` line
  (``warning:``/``note:`` lines may come before it);
* no "Traceback" on stdout or stderr;
* the message holds a phrase that says what to fix.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest

import dpviz.cli.reading
from dpviz.cli import main
from dpviz.models.files.load import ReleasedForest
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import read_csv

CORPUS = Path(__file__).resolve().parent / "bad_inputs"
FAST = ["--epsilon", "1", "--trees", "5", "--folds", "2"]


def _load_corpus_module():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_corpus = _load_corpus_module()


def c(name: str) -> str:
    """Path of a corpus file, as the CLI gets it."""
    return str(CORPUS / name)


def evaluate(data: str, *extra: str, label: str = "label") -> list[str]:
    return ["evaluate", "--data", c(data), "--label", label, *FAST, *extra]


def predict(model: str, data: str = "valid.csv") -> list[str]:
    return ["predict", "--model", c(model), "--data", c(data)]


def info_with_schema(schema: str) -> list[str]:
    return ["info", "--data", c("valid.csv"), "--label", "label", "--schema", c(schema)]


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out and "Traceback" not in err, err
    return status, out, err


def assert_one_error(argv: list[str], capsys, phrase: str) -> str:
    """Run the CLI; check the error contract and return the message after 'error: '."""
    status, out, err = run_cli(argv, capsys)
    lines = err.rstrip("\n").splitlines()
    assert status == 2, f"exit status {status}; stderr:\n{err}"
    assert lines, "nothing on stderr"
    assert lines[-1].startswith("error: "), f"last stderr line is not an error:\n{err}"
    assert sum(line.startswith("error:") for line in lines) == 1, err
    message = lines[-1].removeprefix("error: ")
    assert phrase in message, f"{phrase!r} not in {message!r}"
    return message


# --- the corpus itself ------------------------------------------------------------------


def test_corpus_files_are_small_and_up_to_date():
    expected = make_corpus.corpus()
    for name, data in expected.items():
        path = CORPUS / name
        assert path.exists(), f"{name} is missing: run python tests/bad_inputs/make_corpus.py"
        assert path.read_bytes() == data, f"{name} is stale: rerun make_corpus.py"
        assert len(data) < 20_000
    assert (CORPUS / "empty.csv").stat().st_size == 0


# --- bad data files ---------------------------------------------------------------------

DATA_CASES = [
    pytest.param(evaluate("empty.csv"), "the file is empty", id="empty-file"),
    pytest.param(evaluate("whitespace.csv"), "the file is empty", id="whitespace-only"),
    pytest.param(evaluate("header_only.csv"), "no data rows", id="header-only"),
    pytest.param(
        evaluate("valid.csv", label="nosuch"),
        "label column 'nosuch' is not in",
        id="unknown-label-column",
    ),
    pytest.param(evaluate("one_class.csv"), "at least 2 classes", id="one-class-only"),
    pytest.param(evaluate("no_labels.csv"), "at least 2 classes", id="label-column-empty"),
    pytest.param(
        evaluate("text_in_continuous.csv", "--schema", c("text_in_continuous.schema.json")),
        "holds text ('about 2' in data row 3)",
        id="text-in-continuous-column",
    ),
    pytest.param(evaluate("latin1.csv"), "not UTF-8 text", id="latin1-not-utf8"),
    pytest.param(evaluate("many_labels.csv"), "at most 100 classes", id="label-1000-values"),
    pytest.param(evaluate("binary.png"), "looks binary", id="binary-png"),
    pytest.param(evaluate("binary.csv.gz"), "looks binary", id="binary-gzip"),
    pytest.param(evaluate("one_column.txt"), "only one column", id="space-separated-one-column"),
    pytest.param(
        evaluate("ragged.csv"), "line 5 has 5 fields but the header has 3", id="ragged-row"
    ),
    pytest.param(
        evaluate("duplicate_header.csv"), "names column 'x' twice", id="duplicate-header"
    ),
    pytest.param(evaluate("does_not_exist.csv"), "does not exist", id="missing-file"),
    pytest.param(
        ["info", "--data", str(CORPUS), "--label", "label"], "is a folder", id="folder-as-data"
    ),
    pytest.param(
        evaluate("valid.csv", "--schema", c("valid.schema.json"), label="colour"),
        "the schema's label is 'label' but --label is 'colour'",
        id="schema-label-mismatch",
    ),
]


@pytest.mark.parametrize(("argv", "phrase"), DATA_CASES)
def test_bad_data_file(argv, phrase, capsys):
    assert_one_error(argv, capsys, phrase)


def test_an_infinite_cell_is_a_missing_value_with_a_note(capsys):
    """`inf` in a number column is no value a domain can hold: read as missing (the
    row then follows the missing-value rule), said on stderr, the column still numeric."""
    status, out, err = run_cli(evaluate("infinite_value.csv") + ["--json"], capsys)
    assert status == 0, err
    assert "'inf' read as missing values" in err


def test_latin1_message_says_where_and_how_to_fix(capsys):
    message = assert_one_error(evaluate("latin1.csv"), capsys, "UTF-8")
    assert "0xE9 on line 5" in message
    assert "save it as UTF-8" in message


def test_unknown_label_lists_the_columns(capsys):
    message = assert_one_error(evaluate("valid.csv", label="nosuch"), capsys, "columns are")
    assert message.endswith("columns are: x, colour, label")


def test_file_without_header_row(capsys):
    """A file whose first row is data (iris rows, no header).

    dpviz cannot tell a data row from a header row with certainty, so it reads the first
    row as column names. The asserted behaviour: the run stops with the usual single
    error line, which says the label column is missing and lists the "columns" it found
    -- the first data row (5.1, 3.5, ...) -- so the user sees the header is missing.
    (The same file with a repeated value in its first row is caught by the duplicate-
    header check, whose message suggests adding a header row.)
    """
    message = assert_one_error(evaluate("no_header.csv"), capsys, "label column 'label'")
    assert "columns are: 5.1, 3.5, 1.4, 0.2, Iris-setosa" in message


def test_file_over_the_size_limit(capsys, monkeypatch):
    # The real limit is 200 MB; the CLI gets a read_csv with a 64-byte limit instead.
    monkeypatch.setattr(dpviz.cli.reading, "read_csv", functools.partial(read_csv, max_bytes=64))
    message = assert_one_error(evaluate("valid.csv"), capsys, "the limit is 64 bytes")
    assert "the file is 171 bytes" in message


# --- bad model files --------------------------------------------------------------------

MODEL_CASES = [
    pytest.param("model_truncated.json", "not valid JSON", id="model-truncated"),
    pytest.param("model_not_dpviz.json", "not a dpviz model file", id="model-not-dpviz"),
    pytest.param(
        "model_wrong_version.json", "version 99 is not supported", id="model-wrong-version"
    ),
    pytest.param(
        "model_child_outside.json", "children outside the tree", id="model-child-outside"
    ),
    pytest.param(
        "model_leaf_out_of_range.json",
        "a leaf label is not a class index 0..1",
        id="model-leaf-label-out-of-range",
    ),
    pytest.param("model_huge_int.json", "malformed", id="model-huge-integer"),
    pytest.param(
        "model_classes_not_list.json", "'classes' must be a list", id="model-classes-not-list"
    ),
    pytest.param(
        "model_bad_counts.json", "noisy counts are not 2 numbers", id="model-counts-not-numbers"
    ),
    pytest.param("model_latin1.json", "not UTF-8", id="model-not-utf8"),
    pytest.param("binary.png", "not UTF-8", id="model-binary"),
    pytest.param("empty.csv", "not valid JSON", id="model-empty"),
    pytest.param("does_not_exist.json", "does not exist", id="model-missing"),
]


@pytest.mark.parametrize(("model", "phrase"), MODEL_CASES)
def test_bad_model_file(model, phrase, capsys):
    assert_one_error(predict(model), capsys, phrase)


def test_predict_data_without_the_model_features(capsys):
    assert_one_error(
        predict("model_valid.json", "no_header.csv"), capsys, "lacks the schema's feature columns"
    )


def test_valid_model_predicts(capsys, tmp_path):
    out_path = tmp_path / "predictions.csv"
    status, _, err = run_cli([*predict("model_valid.json"), "--out", str(out_path)], capsys)
    assert status == 0, err
    frame = pd.read_csv(out_path)
    assert list(frame["prediction"]) == ["b"] * 12  # every x >= 0.5: the right leaf


def test_predict_with_a_single_feature_column(capsys):
    status, _, err = run_cli(predict("model_valid.json", "predict_input.csv"), capsys)
    assert status == 0, err


# --- bad schema files -------------------------------------------------------------------

SCHEMA_CASES = [
    pytest.param(
        "schema_missing_classes.json", "the schema has no 'classes' entry", id="schema-no-classes"
    ),
    pytest.param(
        "schema_min_above_max.json", "min 12.0 is above max 0.0", id="schema-min-above-max"
    ),
    pytest.param(
        "schema_discrete_no_values.json",
        "discrete feature 'colour' needs a 'values' list",
        id="schema-discrete-without-values",
    ),
    pytest.param("schema_truncated.json", "not valid JSON", id="schema-truncated"),
    pytest.param(
        "schema_bad_type.json", "must be 'continuous' or 'discrete'", id="schema-unknown-type"
    ),
    pytest.param("binary.png", "not UTF-8", id="schema-binary"),
    pytest.param("does_not_exist.json", "does not exist", id="schema-missing"),
]


@pytest.mark.parametrize(("schema", "phrase"), SCHEMA_CASES)
def test_bad_schema_file(schema, phrase, capsys):
    assert_one_error(info_with_schema(schema), capsys, phrase)


# --- bad command-line arguments ---------------------------------------------------------


def _evaluate_with(*extra: str) -> list[str]:
    """evaluate on the valid file; later options override the fast defaults."""
    return ["evaluate", "--data", c("valid.csv"), "--label", "label", *FAST, *extra]


ARG_CASES = [
    pytest.param(_evaluate_with("--epsilon", "0"), "positive finite number", id="epsilon-0"),
    pytest.param(
        _evaluate_with("--epsilon", "-1"), "positive finite number", id="epsilon-negative"
    ),
    pytest.param(_evaluate_with("--epsilon", "nan"), "positive finite number", id="epsilon-nan"),
    pytest.param(_evaluate_with("--epsilon", "inf"), "positive finite number", id="epsilon-inf"),
    pytest.param(_evaluate_with("--epsilon", "abc"), "argument --epsilon", id="epsilon-text"),
    pytest.param(_evaluate_with("--trees", "0"), "--trees: must be at least 1", id="trees-0"),
    pytest.param(_evaluate_with("--trees", "x"), "not a whole number", id="trees-text"),
    pytest.param(
        _evaluate_with("--depth", "nosuchrule"),
        "unknown depth rule 'nosuchrule'; use one of records, theorem2",
        id="depth-unknown-rule",
    ),
    pytest.param(_evaluate_with("--depth", "0"), "must be a positive integer", id="depth-zero"),
    pytest.param(
        _evaluate_with("--mechanism", "nosuch"),
        "unknown mechanism 'nosuch'; choose one of permute_flip",
        id="mechanism-unknown",
    ),
    pytest.param(_evaluate_with("--folds", "1"), "folds must be between 2 and 20", id="folds-1"),
    pytest.param(_evaluate_with("--split", "nosuch"), "invalid choice", id="split-unknown"),
    pytest.param(
        ["mechanism", "--name", "permute_flip", "--counts", "5,x", "--epsilon", "1"],
        "--counts must be whole numbers separated by commas",
        id="counts-not-numbers",
    ),
    pytest.param(
        ["mechanism", "--name", "permute_flip", "--counts", "5", "--epsilon", "1"],
        "at least two non-negative counts",
        id="counts-single",
    ),
    pytest.param(
        ["evaluate", "--data", c("valid.csv"), "--label", "label"],
        "required: --epsilon",
        id="epsilon-missing",
    ),
    pytest.param(["nosuchcommand"], "invalid choice: 'nosuchcommand'", id="unknown-command"),
    pytest.param([], "required: command", id="no-command"),
]


@pytest.mark.parametrize(("argv", "phrase"), ARG_CASES)
def test_bad_argument(argv, phrase, capsys):
    assert_one_error(argv, capsys, phrase)


# --- valid but unusual files work -------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("valid.csv", id="comma"),
        pytest.param("semicolon.csv", id="semicolon-sniffed"),
        pytest.param("tab.csv", id="tab-sniffed"),
        pytest.param("bom_crlf.csv", id="utf8-bom-and-crlf"),
    ],
)
def test_unusual_but_valid_file_is_read(name, capsys):
    status, out, err = run_cli(["info", "--data", c(name), "--label", "label", "--json"], capsys)
    assert status == 0, err
    result = json.loads(out)
    assert result["n_rows"] == 12
    assert result["features"] == {"x": "continuous", "colour": "discrete"}
    assert result["classes"] == ["no", "yes"]


def test_semicolon_file_evaluates(capsys):
    status, out, err = run_cli(
        ["evaluate", "--data", c("semicolon.csv"), "--label", "label", *FAST, "--json"], capsys
    )
    assert status == 0, err
    assert "error:" not in err
    result = json.loads(out)
    assert result["n_records"] == 12
    assert 0.0 <= result["accuracy"]["mean"] <= 1.0


# --- direct unit tests: read_csv ------------------------------------------------------

READ_CSV_CASES = [
    pytest.param(b"", "the file is empty", id="empty"),
    pytest.param(b" \n\t\r\n", "the file is empty", id="whitespace"),
    pytest.param(b"a,b\x00,c\n1,2,3\n", "looks binary", id="nul-byte"),
    pytest.param(b"a,b\ncaf\xe9,1\n", "bad byte 0xE9 on line 2", id="latin1"),
    pytest.param(b"a,b,label\n", "no data rows", id="header-only"),
    pytest.param(b"one two three\nfour five six\n", "only one column", id="one-column"),
    pytest.param(b"a,b\n1,2\n1,2,3\n", "line 3 has 3 fields but the header has 2", id="ragged"),
    pytest.param(b"a,a,b\n1,2,3\n", "names column 'a' twice", id="duplicate-header"),
    pytest.param(b",,\n1,2,3\n", "no column names", id="blank-header"),
]


@pytest.mark.parametrize(("raw", "phrase"), READ_CSV_CASES)
def test_read_csv_rejects(raw, phrase):
    with pytest.raises(ValueError) as info:
        read_csv(raw)
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(b"a,b\n" + b"1,2\n" * 40, id="bytes"),
        pytest.param(io.BytesIO(b"a,b\n" + b"1,2\n" * 40), id="file-object"),
    ],
)
def test_read_csv_size_limit(source):
    with pytest.raises(ValueError) as info:
        read_csv(source, max_bytes=100)
    message = str(info.value)
    assert "the limit is 100 bytes" in message
    assert "sample it first" in message


def test_read_csv_size_limit_of_a_path(tmp_path):
    path = tmp_path / "big.csv"
    path.write_bytes(b"a,b\n" + b"1,2\n" * 600)
    with pytest.raises(ValueError, match=r"the file is 2\.3 KB; the limit is 1\.0 KB"):
        read_csv(path, max_bytes=1024)


def test_read_csv_missing_path(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_csv(tmp_path / "nope.csv")


def test_read_csv_sniffs_semicolons():
    frame = read_csv((CORPUS / "semicolon.csv").read_bytes())
    assert list(frame.columns) == ["x", "colour", "label"]
    assert frame.shape == (12, 3)


def test_read_csv_single_column_when_allowed():
    frame = read_csv(b"x\n0.1\n0.9\n", min_columns=1)
    assert list(frame["x"]) == ["0.1", "0.9"]


# --- direct unit tests: ReleasedForest.from_json and Schema.from_dict -----------------


@pytest.mark.parametrize(("model", "phrase"), MODEL_CASES[:9])
def test_from_json_rejects(model, phrase):
    with pytest.raises(ValueError) as info:
        ReleasedForest.from_json((CORPUS / model).read_bytes())
    assert phrase in str(info.value)


def test_from_json_accepts_the_valid_model():
    forest = ReleasedForest.from_json((CORPUS / "model_valid.json").read_text())
    assert list(forest.predict(pd.DataFrame({"x": ["0.1", "0.9"]}))) == ["a", "b"]


_WRONG_VALUES = [None, 5, -1, 10**30, 1.5, math.inf, "s", "", [], {}, [None], [[1]], True]


def _paths(obj, prefix=()):
    """Every key path into a JSON document."""
    if prefix:
        yield prefix
    if isinstance(obj, dict | list):
        for key, value in obj.items() if isinstance(obj, dict) else enumerate(obj):
            yield from _paths(value, (*prefix, key))


def _replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def test_from_json_never_raises_anything_but_value_error():
    """Every entry of a valid model, replaced by a wrong-typed value: ValueError or OK."""
    records = pd.DataFrame({"x": ["0.1", "0.9"]})
    for path in _paths(make_corpus.MODEL):
        for value in _WRONG_VALUES:
            text = json.dumps(_replaced(make_corpus.MODEL, path, value))
            try:
                ReleasedForest.from_json(text).predict_proba(records)
            except ValueError:
                pass


def test_schema_from_dict_never_raises_anything_but_value_error():
    for path in _paths(make_corpus.SCHEMA):
        for value in _WRONG_VALUES:
            try:
                Schema.from_dict(_replaced(make_corpus.SCHEMA, path, value))
            except ValueError:
                pass


# --- issue 17: tampered and malformed files, unbounded numbers -----------------------

ISSUE17_MODEL_CASES = [
    pytest.param("model_deep_nesting.json", "nests 5001 levels deep", id="model-deep-nesting"),
    pytest.param(
        "model_float_version.json", "version 1.0 is not supported", id="model-float-version"
    ),
    pytest.param(
        "model_claims_private.json",
        "claims ε = 1.0, but its algorithm, mechanism, ε and structure give NO privacy",
        id="model-claims-a-guarantee-its-mechanism-lacks",
    ),
    pytest.param(
        "model_claims_smaller_epsilon.json",
        "claims ε = 0.1, but its algorithm, mechanism, ε and structure give ε = 1",
        id="model-claims-a-smaller-epsilon",
    ),
    pytest.param(
        "model_claims_inferred_private.json",
        "give NO privacy guarantee",
        id="model-inferred-schema-claims-private",
    ),
    pytest.param(
        "model_trees_1e9.json",
        "'n_estimators' must be a whole number from 1",
        id="model-1e9-trees",
    ),
    pytest.param(
        "model_depth_1e9.json", "'depth' must be a whole number from 1 to 40", id="model-depth-1e9"
    ),
    pytest.param(
        "model_chain_deeper_than_claimed.json",
        "a path is deeper than the model's depth 2",
        id="model-chain-deeper-than-claimed",
    ),
    pytest.param("model_two_parents.json", "do not form a tree", id="model-node-with-two-parents"),
    pytest.param(
        "model_counts_bad_tree_epsilon.json",
        "'tree_epsilon' must be from 0 to 1",
        id="model-per-tree-epsilon-edited",
    ),
    pytest.param(
        "model_counts_inconsistent_tree_epsilon.json",
        "per-tree ε 0.5 does not follow from its ε, trees and data split (that gives 1)",
        id="model-per-tree-epsilon-inconsistent",
    ),
]


@pytest.mark.parametrize(("model", "phrase"), ISSUE17_MODEL_CASES)
def test_tampered_model_is_refused_on_load(model, phrase, capsys):
    assert_one_error(predict(model), capsys, phrase)


def update(model: str, out: str, data: str = "valid.csv") -> list[str]:
    return ["update", "--model", c(model), "--data", c(data), "--out", out]


@pytest.mark.parametrize(
    ("model", "phrase"),
    [
        pytest.param(
            "model_counts_epsilon_zero.json", "'epsilon' must be from", id="update-epsilon-0"
        ),
        pytest.param(
            "model_counts_epsilon_text.json",
            "'epsilon' must be a number",
            id="update-epsilon-text",
        ),
        pytest.param(
            "model_counts_no_epsilon.json", "'epsilon' must be a number", id="update-no-epsilon"
        ),
        pytest.param(
            "model_claims_private.json", "NO privacy guarantee", id="update-edited-claim"
        ),
    ],
)
def test_update_validates_the_model_like_train(model, phrase, capsys, tmp_path):
    assert_one_error(update(model, str(tmp_path / "u.json")), capsys, phrase)
    assert not (tmp_path / "u.json").exists()


def test_update_validates_the_data_like_train(capsys, tmp_path):
    out = str(tmp_path / "u.json")
    assert_one_error(
        update("model_counts_valid.json", out, "no_labels.csv"), capsys, "no usable rows"
    )
    assert_one_error(
        update("model_counts_valid.json", out, "header_only.csv"), capsys, "no data rows"
    )
    assert_one_error(
        update("model_counts_valid.json", out, "update_batch_no_label.csv"),
        capsys,
        "no label column 'label'",
    )
    assert_one_error(
        update("model_counts_valid.json", out, "valid.csv"), capsys, "outside the class list"
    )
    assert not (tmp_path / "u.json").exists()


def test_update_of_a_valid_counts_model_works(capsys, tmp_path):
    argv = update("model_counts_valid.json", str(tmp_path / "u.json"), "update_batch.csv")
    status, _, err = run_cli(argv, capsys)
    assert status == 0, err
    updated = json.loads((tmp_path / "u.json").read_text())
    assert updated["n_batches"] == 2 and updated["privacy"]["private"] is True
    # The corpus file is unsigned: the update says so and is written unsigned and marked.
    assert "note: privacy claim not verified by this installation (the file is not signed)" in err
    assert updated["claim"] == "not verified" and "signature" not in updated
    assert [b["batch"] for b in updated["batches"]] == [1, 2]


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        pytest.param("model_valid.json", "the file is not signed", id="unsigned"),
        pytest.param(
            "model_signed_elsewhere.json",
            "it was signed by another installation's key",
            id="signed-elsewhere",
        ),
        pytest.param(
            "model_counts_marked_unverified.json", "the file says so itself", id="marked"
        ),
    ],
)
def test_unverified_models_predict_with_the_note(model, reason, capsys):
    status, out, err = run_cli(predict(model, "predict_input.csv"), capsys)
    assert status == 0, err
    assert f"note: privacy claim not verified by this installation ({reason}" in err
    assert out.splitlines()[0].startswith("prediction")


def test_update_of_a_marked_model_stays_marked(capsys, tmp_path):
    argv = update("model_counts_marked_unverified.json", str(tmp_path / "u.json"))
    status, out, err = run_cli([*argv[:-3], c("update_batch.csv"), *argv[-2:]], capsys)
    assert status == 0, err
    assert "not verified by this installation" in err and "claim: not verified" in out
    saved = json.loads((tmp_path / "u.json").read_text())
    assert saved["claim"] == "not verified" and "signature" not in saved


def test_schema_nested_deeply_is_one_line(capsys):
    assert_one_error(
        info_with_schema("schema_deep_nesting.json"), capsys, "nests 5001 levels deep"
    )


@pytest.mark.parametrize("name", ["model_bom.json"])
def test_model_with_a_utf8_bom_loads(name, capsys):
    status, _, err = run_cli(predict(name, "predict_input.csv"), capsys)
    assert status == 0, err


def test_schema_with_a_utf8_bom_is_accepted(capsys):
    status, out, err = run_cli([*info_with_schema("schema_bom.json"), "--json"], capsys)
    assert status == 0, err
    assert json.loads(out)["classes"] == ["no", "yes"]


def test_loaded_privacy_statement_is_recomputed_not_the_files():
    """A hand-written (or flipped-leaf) model is shown with its own ledger's words, never
    the file's summary, and (unsigned) with the note that its claim is not verified."""
    forest = ReleasedForest.from_json((CORPUS / "model_valid.json").read_bytes())
    assert forest.meta["privacy"]["summary"] != "hand-written test model"
    assert (
        "1-differentially private. Privacy claim not verified by this installation"
        in (forest.meta["privacy"]["summary"])
    )
    flipped = make_corpus.model_with(tree={"output": [None, 1, 0]})
    assert ReleasedForest.from_json(json.dumps(flipped)).meta["privacy"]["epsilon_total"] == 1.0


def test_a_250k_deep_chain_is_refused_quickly():
    doc = {**make_corpus.model_with(depth=40), "trees": [make_corpus.chain_tree(250_000)]}
    with pytest.raises(ValueError, match="deeper than the model's depth 40"):
        ReleasedForest.from_json(json.dumps(doc))


def test_nan_and_empty_labels_are_missing(capsys):
    status, out, err = run_cli(
        ["info", "--data", c("nan_labels.csv"), "--label", "label", "--json"], capsys
    )
    assert status == 0, err
    assert json.loads(out)["classes"] == ["no", "yes"]
    status, out, err = run_cli(evaluate("nan_labels.csv", "--json"), capsys)
    assert status == 0, err
    assert "6 rows had no label" in err


ISSUE17_ARG_CASES = [
    pytest.param(
        _evaluate_with("--depth", "100"), "a fixed depth must be at most 40", id="depth-100"
    ),
    pytest.param(
        _evaluate_with("--depth", "1100"), "a fixed depth must be at most 40", id="depth-1100"
    ),
    pytest.param(
        _evaluate_with("--repeats", "1000000"), "--repeats: must be at most 100", id="repeats-1e6"
    ),
    pytest.param(_evaluate_with("--epsilon", "1e308"), "above 1e+06", id="epsilon-1e308"),
    pytest.param(_evaluate_with("--seed", str(10**30)), "--seed: must be at most", id="seed-1e30"),
    pytest.param(
        _evaluate_with("--local-cluster", "1000"),
        "--local-cluster: must be at most 32",
        id="local-cluster-1000",
    ),
    pytest.param(
        ["depth", "--continuous", "99999999999", "--discrete", "0"],
        "--continuous: must be at most 1,000,000",
        id="depth-continuous-99999999999",
    ),
    pytest.param(
        [
            "mechanism",
            "--name",
            "permute_flip",
            "--counts",
            ",".join(["1"] * 101),
            "--epsilon",
            "1",
        ],
        "at most 100",
        id="mechanism-101-classes",
    ),
    pytest.param(
        ["mechanism", "--name", "permute_flip", "--counts", f"{10**22},3", "--epsilon", "1"],
        "--counts must be at most",
        id="mechanism-huge-counts",
    ),
    pytest.param(
        ["audit", "--mechanism", "permute_flip", "--epsilon", "1", "--classes", "1000"],
        "--classes: must be at most 100",
        id="audit-1000-classes",
    ),
]


@pytest.mark.parametrize(("argv", "phrase"), ISSUE17_ARG_CASES)
def test_unbounded_number_is_refused(argv, phrase, capsys):
    assert_one_error(argv, capsys, phrase)


def test_theorem2_on_huge_feature_counts_answers_at_once(capsys):
    status, out, err = run_cli(["depth", "--continuous", "1000000", "--discrete", "0"], capsys)
    assert status == 0 and out.strip() == "40"
    assert "gives depth 693148" in err and "caps it at 40" in err


@pytest.mark.parametrize(
    ("epsilon", "phrase"),
    [
        pytest.param("1e5", "a guarantee in name only", id="epsilon-1e5-warns"),
        pytest.param("1e-320", "pure noise", id="epsilon-1e-320-warns"),
    ],
)
def test_extreme_epsilon_warns_with_its_meaning(epsilon, phrase, capsys):
    status, _, err = run_cli(
        ["mechanism", "--name", "permute_flip", "--counts", "5,3", "--epsilon", epsilon], capsys
    )
    assert phrase in err
    # 1e-320 is below what exact noise can draw: a one-line error after the warning.
    assert status == 0 or err.rstrip().splitlines()[-1].startswith("error: ")
