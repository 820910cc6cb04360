"""Issue 17: outputs never destroy inputs, work is bounded before it starts, released
files carry no raw values unless declared public, CSVs are safe in a spreadsheet, and
the Dask path validates the whole data, not each partition."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app.report import decision_report
from dpviz.cli import main
from dpviz.models.files.load import check_forest_export, release
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.trees.depth import MAX_DEPTH, forest_work_seconds, resolve_depth
from dpviz.privacy.schema import Feature, Schema, infer_schema
from dpviz.tabular.outputs import check_outputs, csv_text, escape_formulas, write_text

CORPUS = Path(__file__).resolve().parent / "bad_inputs"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path):
    for name in ("valid.csv", "valid.schema.json", "model_valid.json", "model_counts_valid.json"):
        shutil.copy(CORPUS / name, tmp_path / name)
    shutil.copy(CORPUS / "update_batch.csv", tmp_path / "batch.csv")
    return tmp_path


def one_error(argv, capsys) -> str:
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 2, err
    assert "Traceback" not in err + out
    lines = err.rstrip().splitlines()
    assert lines[-1].startswith("error: ") and sum(x.startswith("error:") for x in lines) == 1
    return lines[-1]


# --- 1. never overwrite an input -------------------------------------------------------


def _commands(d: Path):
    data, schema = d / "valid.csv", d / "valid.schema.json"
    common = ["--label", "label", "--epsilon", "1", "--trees", "3"]
    model, counts = d / "model_valid.json", d / "model_counts_valid.json"
    return [
        (
            "train-out=data",
            ["train", "--data", data, *common, "--schema", schema, "--out", data],
            data,
        ),
        (
            "train-out=schema",
            ["train", "--data", data, *common, "--schema", schema, "--out", schema],
            schema,
        ),
        ("predict-out=data", ["predict", "--model", model, "--data", data, "--out", data], data),
        (
            "predict-out=model",
            ["predict", "--model", model, "--data", data, "--out", model],
            model,
        ),
        (
            "update-out=data",
            ["update", "--model", counts, "--data", d / "batch.csv", "--out", d / "batch.csv"],
            d / "batch.csv",
        ),
        (
            "update-out=model",
            ["update", "--model", counts, "--data", d / "batch.csv", "--out", counts],
            counts,
        ),
        (
            "sweep-out=data",
            [
                "sweep",
                "--data",
                data,
                "--label",
                "label",
                "--epsilons",
                "1",
                "--trees",
                "3",
                "--folds",
                "2",
                "--out",
                data,
            ],
            data,
        ),
        (
            "sweep-summary=data",
            [
                "sweep",
                "--data",
                data,
                "--label",
                "label",
                "--epsilons",
                "1",
                "--folds",
                "2",
                "--out",
                d / "r.csv",
                "--summary",
                data,
            ],
            data,
        ),
        (
            "info-schema-out=data",
            ["info", "--data", data, "--label", "label", "--schema-out", data],
            data,
        ),
        (
            "info-schema-out=schema",
            [
                "info",
                "--data",
                data,
                "--label",
                "label",
                "--schema",
                schema,
                "--schema-out",
                schema,
            ],
            schema,
        ),
        (
            "reproduce-out=reference",
            [
                "reproduce",
                "--figure",
                "4",
                "--reference",
                data,
                "--datasets-dir",
                d,
                "--out",
                data,
            ],
            data,
        ),
    ]


@pytest.mark.parametrize("case", range(11))
def test_output_equal_to_an_input_is_refused_and_the_input_kept(case, files, capsys):
    name, argv, victim = _commands(files)[case]
    before = {p.name: digest(p) for p in files.iterdir()}
    message = one_error(argv, capsys)
    assert "is an input file of this command" in message, name
    assert {p.name: digest(p) for p in files.iterdir()} == before, name
    assert digest(victim) == before[victim.name]


def test_output_through_another_spelling_or_a_link_is_refused(files, capsys):
    data = files / "valid.csv"
    os.symlink(data, files / "link.csv")
    os.link(data, files / "hard.csv")
    before = digest(data)
    for out in (files / "." / "valid.csv", files / "link.csv", files / "hard.csv"):
        argv = ["predict", "--model", files / "model_valid.json", "--data", data, "--out", out]
        assert "is an input file" in one_error(argv, capsys)
    assert digest(data) == before


def test_sweep_out_and_summary_must_differ(files, capsys):
    argv = ["sweep", "--data", files / "valid.csv", "--label", "label", "--epsilons", "1"]
    argv += ["--out", files / "r.csv", "--summary", files / "r.csv"]
    assert "name the same file" in one_error(argv, capsys)


def test_check_outputs_accepts_distinct_paths(tmp_path):
    check_outputs([tmp_path / "a.csv", None], {"--out": tmp_path / "b.csv", "--summary": None})


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "model.json"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_text(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_write_text_replaces_the_file_whole(tmp_path):
    target = tmp_path / "out.json"
    write_text(target, "first")
    write_text(target, "second")
    assert target.read_text() == "second"
    assert oct(target.stat().st_mode & 0o777) != oct(0o600)


# --- 8. formula escaping --------------------------------------------------------------


def test_formula_cells_are_escaped_and_numbers_stay_numbers():
    frame = pd.DataFrame(
        {
            "text": [
                "=cmd|' /C calc'!A0",
                "+1+1",
                "-2+3",
                "@SUM(1)",
                "\tx",
                "\rx",
                "plain",
                "-3.2",
            ],
            "number": [-3.2, 1.0, -1.0, 0.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    escaped = escape_formulas(frame)
    assert escaped["text"].tolist() == [
        "'=cmd|' /C calc'!A0",
        "'+1+1",
        "'-2+3",
        "'@SUM(1)",
        "'\tx",
        "'\rx",
        "plain",
        "-3.2",
    ]
    assert escaped["number"].tolist() == frame["number"].tolist()
    assert "-3.2" in csv_text(frame).splitlines()[1]


def test_predict_output_escapes_class_names(capsys, tmp_path):
    out = tmp_path / "p.csv"
    model, data = CORPUS / "model_formula_classes.json", CORPUS / "predict_input.csv"
    assert main(["predict", "--model", str(model), "--data", str(data), "--out", str(out)]) == 0
    cells = pd.read_csv(out, dtype=str)["prediction"].tolist()
    assert cells == ['\'=HYPERLINK("http://x")', "'@SUM(1)"]
    assert main(["predict", "--model", str(model), "--data", str(data)]) == 0
    assert "\n=" not in capsys.readouterr().out


# --- 2. work estimated before it starts -----------------------------------------------


def wide_schema(n_continuous: int) -> Schema:
    features = tuple(Feature(f"c{i}", "continuous", -5.0, 5.0) for i in range(n_continuous))
    return Schema("label", ("a", "b"), features)


def test_theorem2_on_wide_data_is_capped_and_the_export_refused_before_fitting():
    schema = wide_schema(2000)
    assert resolve_depth("theorem2", 2000, 0) == MAX_DEPTH
    with pytest.raises(ValueError, match=r"pass --depth (\d+) or lower") as info:
        check_forest_export(schema, MAX_DEPTH, 100)
    fit = int(info.value.args[0].split("--depth ")[1].split()[0])
    check_forest_export(schema, fit, 100)  # the suggested depth fits
    with pytest.raises(ValueError):
        check_forest_export(schema, fit + 1, 100)


def test_wide_csv_train_is_a_quick_clear_error(tmp_path, capsys):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        rng.normal(size=(200, 2000)).round(3), columns=[f"c{i}" for i in range(2000)]
    )
    frame["label"] = rng.choice(["a", "b"], 200)
    frame.to_csv(tmp_path / "wide.csv", index=False)
    argv = ["train", "--data", tmp_path / "wide.csv", "--label", "label", "--epsilon", "1"]
    argv += ["--depth", "theorem2"]  # the default records rule gives depth 1 here
    message = one_error([*argv, "--values-public", "--out", tmp_path / "m.json"], capsys)
    assert "an exported model lists every node" in message and "--depth" in message
    assert not (tmp_path / "m.json").exists()


def test_work_estimate_refuses_hours_of_work(capsys, monkeypatch):
    assert forest_work_seconds(200, 2000, 100, 40, folds=5) < 60
    big = forest_work_seconds(10**6, 10, 10_000, 40, data_split="shared", folds=20, repeats=100)
    assert big > 3600
    monkeypatch.setattr("dpviz.models.trees.depth.MAX_WORK_SECONDS", 1e-9)
    argv = ["evaluate", "--data", CORPUS / "valid.csv", "--label", "label", "--epsilon", "1"]
    message = one_error([*argv, "--folds", "2"], capsys)
    assert "on a 2-core server" in message and "--repeats, --folds, --trees or --depth" in message


def test_wide_forest_routes_within_the_frontier_budget():
    """On 300 continuous features the routing chunk shrinks so a frontier stays small."""
    from dpviz.models.forest.estimator import space_for
    from dpviz.models.trees.space import FRONTIER_BYTES, node_bytes, pair_chunk

    space = space_for(wide_schema(300), 10)
    assert pair_chunk(space) * node_bytes(space) <= FRONTIER_BYTES


# --- 7. no raw values in released files -----------------------------------------------


@pytest.fixture
def email_frame():
    rng = np.random.default_rng(1)
    n = 60
    return pd.DataFrame(
        {
            "email": [f"person{i}@example.org" for i in range(n)],
            "salary": rng.integers(20_000, 90_000, n).astype(str),
            "label": rng.choice(["yes", "no"], n),
        }
    )


def test_email_column_never_reaches_an_export_or_report(email_frame, tmp_path, capsys):
    email_frame.loc[0, "salary"] = "2500000"
    email_frame.to_csv(tmp_path / "people.csv", index=False)
    argv = ["train", "--data", tmp_path / "people.csv", "--label", "label", "--epsilon", "1"]
    message = one_error([*argv, "--out", tmp_path / "m.json"], capsys)
    assert "schema was inferred" in message and "@" not in message
    assert not (tmp_path / "m.json").exists()

    schema = infer_schema(email_frame, "label", warn=False)
    model = DPRandomForestClassifier(epsilon=1, n_estimators=3, schema=schema, random_state=0)
    model.fit(email_frame.drop(columns="label"), email_frame["label"])
    with pytest.raises(ValueError, match="schema was inferred"):
        release(model)
    html = decision_report(
        schema=schema, algorithm="fletcher_islam", parameters={}, seeds={}, chosen_epsilon=1.0
    )
    assert "@example.org" not in html and "2500000" not in html and "2.5e+06" not in html


def test_email_label_names_are_withheld_from_the_report(email_frame):
    frame = pd.DataFrame({"x": np.arange(20.0), "label": email_frame["email"].head(20)})
    schema = infer_schema(frame, "label", warn=False)
    html = decision_report(
        schema=schema, algorithm="fletcher_islam", parameters={}, seeds={}, chosen_epsilon=1.0
    )
    assert "@example.org" not in html and "20 classes (names withheld" in html


def test_declared_values_may_be_exported(email_frame, tmp_path, capsys):
    frame = email_frame.drop(columns="email")
    frame.to_csv(tmp_path / "d.csv", index=False)
    argv = [
        "train",
        "--data",
        tmp_path / "d.csv",
        "--label",
        "label",
        "--epsilon",
        "1",
        "--trees",
        "3",
    ]
    assert main([str(a) for a in [*argv, "--values-public", "--out", tmp_path / "m.json"]]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["schema_inferred"] is True
