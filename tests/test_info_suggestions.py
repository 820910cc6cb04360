"""`info` describes every file it is given, and train leaves out what it suggests: an ID
column with more than 1,000 values, a row-number column, an unnamed trailing column
(whose suggested option is quoted for a shell). Files are generated here."""

from __future__ import annotations

import json
import shlex

import numpy as np
import pandas as pd

from dpviz.cli import main


def export(tmp_path, n: int = 2_000):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "row": np.arange(1, n + 1),
            "ref": [f"A{i:06d}X" for i in rng.permutation(n)],
            "age": rng.integers(18, 80, n),
            "label": rng.choice(["yes", "no"], n),
            "Unnamed: 4": [""] * n,
        }
    )
    path = tmp_path / "export.csv"
    frame.to_csv(path, index=False, sep=";")
    return path


def test_info_exits_0_and_lists_what_it_suggests_leaving_out(tmp_path, capsys):
    path = export(tmp_path)
    assert main(["info", "--data", str(path), "--label", "label", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert set(info["suggested_drops"]) == {"row", "ref", "Unnamed: 4"}
    assert list(info["features"]) == ["age"]
    # The suggested option survives a shell: one argument, the names as written.
    words = shlex.split(info["suggested_drop_option"])
    assert words[0] == "--drop" and words[1].split(",") == ["row", "ref", "Unnamed: 4"]


def test_train_leaves_the_suggestions_out_and_keeps_one_on_request(tmp_path, capsys):
    path = export(tmp_path)
    out = tmp_path / "m.json"
    base = ["train", "--data", str(path), "--label", "label", "--epsilon", "1"]
    assert main([*base, "--values-public", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "left out 'ref'" in err and "--keep ref" in err
    features = [f["name"] for f in json.loads(out.read_text())["schema"]["features"]]
    assert features == ["age"]
    assert main([*base, "--values-public", "--keep", "row", "--out", str(out)]) == 0
    features = [f["name"] for f in json.loads(out.read_text())["schema"]["features"]]
    assert features == ["row", "age"] and "keeping 'row'" in capsys.readouterr().err


def test_info_describes_a_file_whose_schema_cannot_be_inferred(tmp_path, capsys):
    path = tmp_path / "one.csv"
    pd.DataFrame({"label": ["a"] * 5, "Unnamed: 1": [""] * 5}).to_csv(path, index=False)
    assert main(["info", "--data", str(path), "--label", "label", "--json"]) == 0
    captured = capsys.readouterr()
    info = json.loads(captured.out)
    assert info["schema"] is None and info["schema_problem"]
    assert "no schema could be inferred" in captured.err
