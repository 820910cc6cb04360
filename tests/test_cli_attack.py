"""``dpviz attack``: the membership attack's numbers (and the whole-release audit's) on
the command line, labelled NOT private, with user errors as one line."""

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.evaluation.attack import advantage_bound


@pytest.fixture(scope="module")
def csv_and_schema(tmp_path_factory):
    """400 records whose label follows ``a > 0.5`` with 30% flips, and a public schema."""
    folder = tmp_path_factory.mktemp("attack")
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, (400, 2))
    y = (x[:, 0] > 0.5) ^ (rng.random(400) < 0.3)
    frame = pd.DataFrame(x, columns=["a", "b"])
    frame["label"] = np.where(y, "yes", "no")
    frame.to_csv(folder / "d.csv", index=False)
    schema = {
        "label": "label",
        "classes": ["no", "yes"],
        "features": [
            {"name": c, "type": "continuous", "min": 0.0, "max": 1.0} for c in ("a", "b")
        ],
    }
    (folder / "d.schema.json").write_text(json.dumps(schema))
    return folder / "d.csv", folder / "d.schema.json"


def test_attack_json_with_release_audit(capsys, csv_and_schema):
    data, schema = csv_and_schema
    argv = ["attack", "--data", str(data), "--label", "label", "--schema", str(schema)]
    argv += ["--epsilon", "0.5", "--algorithm", "friedman_schuster", "--seed", "3"]
    argv += ["--release-audit", "--runs", "30", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert "NOT private" in captured.err
    assert out["algorithm"] == "friedman_schuster" and out["random_state"] == 3
    assert out["bound"] == pytest.approx(advantage_bound(0.5))
    assert out["n_records"] == 400 and 150 < out["n_members"] < 250
    for curve in (out["dp"], out["reference"]):
        assert 0.0 <= curve["auc"] <= 1.0
        assert curve["ci_low"] <= curve["heldout_advantage"] <= curve["ci_high"]
    # The non-private greedy tree memorises the flipped labels; the DP one stays close.
    assert out["reference"]["auc"] > 0.6
    assert out["release_audit"]["n_runs"] == 30
    assert out["release_audit"]["ledger_epsilon"] == pytest.approx(0.5)
    assert "does not" in out["verdict"] or "REFUTES" in out["verdict"]


def test_attack_refuses_bad_input_in_one_line(capsys, csv_and_schema):
    data, schema = csv_and_schema
    argv = ["attack", "--data", str(data), "--label", "label", "--schema", str(schema)]
    assert main(argv + ["--epsilon", "1", "--param", "colour=3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error:") and "no parameter 'colour'" in err[-1]
