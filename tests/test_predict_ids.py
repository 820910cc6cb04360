"""`predict --id` carries ID columns into the predictions, every row is predicted and
the ones that took a default route are counted (issue 27); training says how many
unlabelled rows it dropped (CLI train / evaluate / sweep, the Data page's report).

The CSVs are generated here (fixed seed); the CLI runs in-process.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.app.data import data_report
from dpviz.app.support import PreparedData
from dpviz.cli import main
from dpviz.cli.train import _ids_as_written
from dpviz.privacy.schema import PrivacyLeakWarning, infer_schema

N = 200


def run(argv, capsys) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return status, out, err


def one_error(argv, capsys) -> str:
    status, _, err = run(argv, capsys)
    lines = err.rstrip("\n").splitlines()
    assert status == 2 and lines[-1].startswith("error: "), err
    assert sum(line.startswith("error:") for line in lines) == 1, err
    return lines[-1]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A training CSV, a model trained on it and a CSV to predict with IDs written in
    ways that reading rewrites ("1,001" is read as 1001) or could (leading zeros)."""
    folder = tmp_path_factory.mktemp("predict_ids")
    rng = np.random.default_rng(27)
    train = pd.DataFrame(
        {
            "x": rng.normal(size=N).round(3),
            "colour": rng.choice(["red", "green", "blue"], N),
            "label": rng.choice(["no", "yes"], N),
        }
    )
    train.loc[:4, "label"] = np.nan  # five unlabelled rows
    train.to_csv(folder / "train.csv", index=False)
    model = folder / "model.json"
    args = ["--data", str(folder / "train.csv"), "--label", "label", "--seed", "1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert (
            main(["train", *args, "--epsilon", "1", "--values-public", "--out", str(model)]) == 0
        )
    new = (
        'ref,account,x,colour,label\n"1,001",00017,0.5,red,yes\n"1,002",00018,,green,\n'
        '"1,003",00019,-0.2,purple,no\n"1,004",00020,,,\n"1,005",00021,1.1,blue,yes\n'
    )
    (folder / "new.csv").write_text(new)
    return {"folder": folder, "model": str(model), "new": str(folder / "new.csv")}


def test_id_columns_come_first_as_written_and_every_row_is_predicted(files, capsys):
    out = files["folder"] / "pred.csv"
    argv = ["predict", "--model", files["model"], "--data", files["new"], "--out", str(out)]
    status, _, err = run([*argv, "--id", "ref,account"], capsys)
    assert status == 0, err
    written = pd.read_csv(out, dtype=str)
    assert list(written.columns) == ["ref", "account", "prediction", "proba[no]", "proba[yes]"]
    # every row, in order, beside its ID exactly as the file writes it
    assert list(written["ref"]) == ["1,001", "1,002", "1,003", "1,004", "1,005"]
    assert list(written["account"]) == ["00017", "00018", "00019", "00020", "00021"]
    assert set(written["prediction"]) <= {"no", "yes"}
    # the default routes, counted per column and in rows (rows 2 and 4 miss x; row 3 has
    # an unknown colour, row 4 none): 3 rows; the empty labels play no part
    assert "2 rows had no value for continuous 'x'" in err
    assert "2 rows had a value of 'colour' outside its value list" in err
    assert "predicted anyway, the trees that split on it abstain" in err
    assert "all 5 rows predicted (none dropped); 3 of them had a missing or unknown" in err
    assert "dropped)" not in err.replace("(none dropped)", "")
    # --keep-columns is the same option; without it, only the predictions
    status, _, err = run([*argv, "--keep-columns", "account"], capsys)
    assert status == 0 and list(pd.read_csv(out, dtype=str).columns)[:2] == [
        "account",
        "prediction",
    ]
    assert run(argv, capsys)[0] == 0
    assert list(pd.read_csv(out).columns) == ["prediction", "proba[no]", "proba[yes]"]


def test_complete_rows_need_no_count(files, capsys):
    clean = files["folder"] / "clean.csv"
    clean.write_text("id,x,colour\na,0.1,red\nb,0.2,blue\n")
    argv = ["predict", "--model", files["model"], "--data", str(clean), "--id", "id"]
    status, out, err = run(argv, capsys)
    assert status == 0, err
    assert out.splitlines()[0] == "id,prediction,proba[no],proba[yes]"
    assert [line.split(",")[0] for line in out.splitlines()[1:3]] == ["a", "b"]
    assert "rows predicted" not in err and "outside" not in err


@pytest.mark.parametrize(
    ("ids", "phrase"),
    [
        ("ref,nope", "--id names 'nope', not a column of"),
        ("ref,ref", "--id names 'ref' twice"),
        (",", "the --id list is empty"),
        ("prediction", "--id column 'prediction' has the name of an output column"),
    ],
)
def test_bad_id_columns_are_one_line_errors(files, capsys, ids, phrase):
    data = files["new"]
    if ids == "prediction":
        data = str(files["folder"] / "clash.csv")
        (files["folder"] / "clash.csv").write_text("prediction,x,colour\n1,0.1,red\n")
    argv = ["predict", "--model", files["model"], "--data", data, "--id", ids]
    assert phrase in one_error(argv, capsys)


def test_training_says_how_many_unlabelled_rows_it_dropped(files, capsys):
    data = str(files["folder"] / "train.csv")
    common = ["--data", data, "--label", "label", "--epsilon", "1"]
    status, _, err = run(["evaluate", *common, "--folds", "2", "--json"], capsys)
    assert status == 0 and "5 rows had no label and were dropped" in err, err
    model = str(files["folder"] / "again.json")
    status, _, err = run(["train", *common, "--values-public", "--out", model], capsys)
    assert status == 0 and "5 rows had no label and were dropped" in err, err
    sweep = ["sweep", *common[:4], "--epsilons", "1", "--folds", "2", "--quiet"]
    status, _, err = run([*sweep, "--out", str(files["folder"] / "sweep.csv")], capsys)
    assert status == 0 and "5 rows had no label and were dropped" in err, err
    # the Data page's report says it before training
    frame = pd.read_csv(data, dtype=str)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        report = data_report(PreparedData("t.csv", frame, infer_schema(frame, "label"), ""))
    assert "5 rows had no label and were dropped" in report.messages
    assert report.rows_used == N - 5


def test_an_id_rewritten_by_reading_a_pipe_stays_as_read_with_a_warning(capsys):
    """A pipe cannot be read twice: the rewritten ID is kept as read, and said."""
    frame = pd.DataFrame({"ref": ["1001"], "x": ["0.5"]})
    frame.attrs["read_notes"] = ["column 'ref' uses comma thousands separators"]
    out = _ids_as_written("/dev/stdin", frame, ["ref"])
    assert list(out["ref"]) == ["1001"]
    assert "warning: --id column(s) 'ref' are written as read" in capsys.readouterr().err
