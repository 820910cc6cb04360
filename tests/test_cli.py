"""The CLI contract of issue 3: names, JSON keys and exit statuses are relied on."""

import argparse
import json

import numpy as np
import pytest

import dpviz.cli as cli
import dpviz.cli.audit
import dpviz.cli.common
import dpviz.cli.data
import dpviz.cli.evaluate
import dpviz.cli.train
from dpviz.cli import main
from dpviz.evaluation.synthetic import make_synth


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def synth_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    frame, schema = make_synth("SynthA", 1500, seed=2)
    data = folder / "synth.csv"
    frame.to_csv(data, index=False)
    schema_path = folder / "synth.schema.json"
    schema_path.write_text(schema.to_json())
    return data, schema_path, folder


def test_depth_prints_integer(capsys):
    status, out, _ = run(capsys, "depth", "--continuous", 6, "--discrete", 8)
    assert status == 0 and out.strip() == "9"
    status, out, _ = run(capsys, "depth", "--continuous", 6, "--discrete", 8, "--rule", "half")
    assert out.strip() == "7"


def test_mechanism_json(capsys):
    status, out, err = run(
        capsys, "mechanism", "--name", "count_em", "--counts", "5,10", "--epsilon", 0.1, "--json"
    )
    result = json.loads(out)
    assert status == 0
    assert result["probabilities"][1] == pytest.approx(0.622, abs=5e-4)
    assert result["smooth_sensitivity"] == pytest.approx(np.exp(-0.5))
    assert result["private"] is True
    status, out, err = run(
        capsys, "mechanism", "--name", "smooth_em", "--counts", "5,10", "--epsilon", 0.1, "--json"
    )
    assert json.loads(out)["private"] is False
    assert "NOT differentially private" in err


def test_audit_json(capsys):
    status, out, _ = run(
        capsys,
        "audit",
        "--mechanism",
        "permute_flip",
        "--epsilon",
        1,
        "--classes",
        3,
        "--max-count",
        15,
        "--json",
    )
    result = json.loads(out)
    assert status == 0
    assert set(result) >= {"max_privacy_loss", "epsilon", "worst_counts", "private"}
    assert result["private"] and result["max_privacy_loss"] <= 1 + 1e-9
    status, out, _ = run(capsys, "audit", "--mechanism", "smooth_em", "--epsilon", 1, "--json")
    assert json.loads(out)["private"] is False


def test_audit_release_json(capsys):
    """The empirical audit of a whole release: ledger ε, lower bound, verdict."""
    status, out, err = run(
        capsys, "audit", "--release", "friedman_schuster", "--runs", 200, "--json"
    )
    assert status == 0, err
    result = json.loads(out)
    assert result["algorithm"] == "friedman_schuster" and result["epsilon"] == 1.0
    assert result["ledger_epsilon"] == pytest.approx(1.0)
    assert 0 <= result["lower_bound"] <= result["ledger_epsilon"]
    assert result["consistent"] is True and "never prove" in result["verdict"]
    assert result["n_runs"] == 200 and result["confidence"] == 0.95
    assert result["sharpened"] is False and result["params"] == {}  # the registry defaults
    assert result["events"] and {"event", "hits_d", "hits_d_prime"} <= set(result["events"][0])
    assert "warning" not in err


def test_audit_release_text_and_epsilon(capsys):
    status, out, err = run(
        capsys, "audit", "--release", "dpboost", "--epsilon", 2, "--runs", 50, "--seed", 3
    )
    assert status == 0, err
    for key in ("ledger_epsilon: 2.0", "lower_bound:", "consistent: True", "claimed_pair_loss"):
        assert key in out


def test_audit_release_refutes_a_mutant(capsys, monkeypatch):
    """DPBoost with its leaf noise quartered, audited --sharpened (the registry
    defaults deal x to a secret one of 10 trees; tests/privacy/test_ledger_entries.py
    guards their leaves): the visible loss is 2ε > the ledger's ε
    (see tests/evaluation/test_release_audit.py); 400 fits per dataset refute it."""
    from dpviz.privacy.noise import SecureGenerator

    real = SecureGenerator.laplace
    monkeypatch.setattr(
        SecureGenerator,
        "laplace",
        lambda self, loc=0.0, scale=1.0, size=None: real(self, loc, scale / 4, size),
    )
    status, out, err = run(
        capsys, "audit", "--release", "dpboost", "--sharpened", "--runs", 400, "--json"
    )
    assert status == 0
    result = json.loads(out)
    assert result["consistent"] is False and result["lower_bound"] > 1.0
    assert result["verdict"].startswith("REFUTED")
    assert "warning: dpboost: empirical lower bound" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("audit", "--mechanism", "permute_flip"),  # the exact audit needs its ε
        ("audit", "--epsilon", 1),  # neither --mechanism nor --release
        ("audit", "--mechanism", "permute_flip", "--release", "jpw", "--epsilon", 1),
        ("audit", "--release", "nope"),
        ("audit", "--release", "jpw", "--classes", 3),
        ("audit", "--mechanism", "permute_flip", "--epsilon", 1, "--runs", 10),
        ("audit", "--release", "jpw", "--runs", 0),
        ("audit", "--release", "jpw", "--runs", 5, "--confidence", 1.5),
    ],
)
def test_audit_argument_errors(capsys, argv):
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.strip().splitlines()[-1].startswith("error: ")


def test_evaluate_json(capsys, synth_files):
    data, schema, _ = synth_files
    status, out, err = run(
        capsys,
        "evaluate",
        "--data",
        data,
        "--label",
        "label",
        "--schema",
        schema,
        "--epsilon",
        1,
        "--trees",
        20,
        "--folds",
        3,
        "--json",
    )
    assert status == 0, err
    result = json.loads(out)
    for key in ("accuracy", "auc", "f1"):
        assert set(result[key]) == {"mean", "std"}
        assert 0 <= result[key]["mean"] <= 1
    for key in (
        "empty_leaf_pct",
        "flipped_leaf_pct",
        "expected_flip_pct",
        "mean_smooth_sensitivity",
        "depth",
        "fit_seconds",
    ):
        assert key in result
    assert result["depth"] == 5
    assert result["privacy"]["epsilon_total"] == 1.0 and result["privacy"]["private"]
    assert "warning" not in err


def test_evaluate_without_schema_warns(capsys, synth_files):
    data, _, _ = synth_files
    status, out, err = run(
        capsys,
        "evaluate",
        "--data",
        data,
        "--label",
        "label",
        "--epsilon",
        1,
        "--trees",
        10,
        "--folds",
        2,
        "--json",
    )
    assert status == 0
    assert "warning:" in err and "NOT differentially private" in err
    assert json.loads(out)["privacy"]["private"] is False


def test_train_then_predict(capsys, synth_files):
    data, schema, folder = synth_files
    model = folder / "model.json"
    status, out, err = run(
        capsys,
        "train",
        "--data",
        data,
        "--label",
        "label",
        "--schema",
        schema,
        "--epsilon",
        1,
        "--trees",
        10,
        "--out",
        model,
        "--json",
    )
    assert status == 0, err
    assert json.loads(out)["privacy"]["epsilon_total"] == 1.0
    preds = folder / "preds.csv"
    status, out, err = run(capsys, "predict", "--model", model, "--data", data, "--out", preds)
    assert status == 0, err
    lines = preds.read_text().splitlines()
    assert lines[0] == "prediction,proba[0],proba[1]"
    assert len(lines) == 1501
    # The same public seed gives the same trees where they do not follow the data
    # (uniform split points); the noise is fresh and secret, so the leaf outputs differ
    # (all 10 trees × 32 leaves equal has probability about 2^-320). Quantile split
    # points also follow a noisy release: fresh each time, so may the split features.
    train = ("train", "--data", data, "--label", "label", "--schema", schema)
    train += ("--epsilon", 1, "--trees", 10)
    uniform = ("--param", "split_points=uniform")
    run(capsys, *train, *uniform, "--out", folder / "u1.json")
    run(capsys, *train, *uniform, "--out", folder / "u2.json")
    first = json.loads((folder / "u1.json").read_text())
    again = json.loads((folder / "u2.json").read_text())
    assert [t["feature"] for t in first["trees"]] == [t["feature"] for t in again["trees"]]
    assert [t["output"] for t in first["trees"]] != [t["output"] for t in again["trees"]]
    assert first["noise"] == "secret"
    # Replayable noise: the same file byte for byte, and NOT private everywhere.
    status, out, err = run(capsys, *train, "--noise-seed", 3, "--out", folder / "r1.json")
    assert status == 0 and "NOT private: the noise can be replayed" in err
    run(capsys, *train, "--noise-seed", 3, "--out", folder / "r2.json")
    replay = json.loads((folder / "r1.json").read_text())
    assert (folder / "r1.json").read_bytes() == (folder / "r2.json").read_bytes()
    assert replay["privacy"]["private"] is False and replay["privacy"]["epsilon_total"] is None
    assert "NOT private: the noise can be replayed" in replay["privacy"]["summary"]
    assert "NOT private" in replay["noise"]


def test_info_json(capsys, synth_files):
    data, _, folder = synth_files
    out_schema = folder / "inferred.json"
    status, out, err = run(
        capsys, "info", "--data", data, "--label", "label", "--json", "--schema-out", out_schema
    )
    result = json.loads(out)
    assert status == 0
    assert result["n_continuous"] == 5 and result["n_discrete"] == 0
    assert result["depth"]["theorem2"] == 5 and result["depth"]["full"] == 5
    assert json.loads(out_schema.read_text())["label"] == "label"
    assert "inferred" in err


def test_errors_are_one_line(capsys):
    status, out, err = run(
        capsys, "evaluate", "--data", "/nonexistent.csv", "--label", "y", "--epsilon", 1
    )
    assert status == 2
    assert err.strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in err


def test_evaluate_text_output_names_nested_entries(capsys, synth_files):
    data, schema, _ = synth_files
    status, out, err = run(
        capsys, "evaluate", "--data", data, "--label", "label", "--schema", schema,
        "--epsilon", 1, "--trees", 5, "--folds", 2,
    )  # fmt: skip
    assert status == 0, err
    lines = {line.split(":")[0].strip(): line for line in out.splitlines()}
    # The trivial baseline's metrics, each a mean ± std on its own line, never a raw dict.
    assert "majority.accuracy" in lines and "±" in lines["majority.accuracy"]
    assert "privacy.epsilon_total" in lines and "{" not in out


# --- the parser, built one subcommand at a time --------------------------------------------


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def options(parser: argparse.ArgumentParser) -> dict[str, tuple]:
    """Each option of ``parser`` with what it parses to: dest, default, required, choices."""
    return {
        a.option_strings[-1]: (a.dest, a.default, a.required, a.choices)
        for a in parser._actions
        if a.option_strings
    }


def test_each_subcommand_runs_its_own_handler_in_the_documented_order():
    names = list(subparsers(cli.build_parser()))
    assert names == [
        "depth", "mechanism", "audit", "attack", "evaluate", "sweep", "reproduce", "train",
        "predict", "update", "info",
    ]  # fmt: skip
    # Each command group's module owns its subcommands' handlers.
    groups = {
        **dict.fromkeys(("depth", "mechanism", "audit", "attack"), dpviz.cli.audit),
        **dict.fromkeys(("evaluate", "sweep", "reproduce"), dpviz.cli.evaluate),
        **dict.fromkeys(("train", "predict", "update"), dpviz.cli.train),
        "info": dpviz.cli.data,
    }
    for name, sub in subparsers(cli.build_parser()).items():
        assert sub.get_default("func") is getattr(groups[name], f"cmd_{name}")
        assert sub.prog == f"python -m dpviz {name}"


def test_the_shared_groups_give_evaluate_and_train_the_same_options():
    shared = argparse.ArgumentParser()
    dpviz.cli.common.data_args(shared)
    dpviz.cli.common.model_args(shared)
    subs = subparsers(cli.build_parser())
    for name in ("evaluate", "train"):
        assert options(shared).items() <= options(subs[name]).items(), name
    # sweep takes data and a cluster but comma-separated grids, not one model's options
    assert options(subs["sweep"])["--local-cluster"] == options(shared)["--local-cluster"]
    assert "--param" not in options(subs["sweep"])
    assert options(subs["sweep"])["--trees"][1] == "auto"  # the registry's default


def test_info_needs_no_label_where_training_does(capsys):
    subs = subparsers(cli.build_parser())
    assert options(subs["info"])["--label"][2] is False
    assert options(subs["train"])["--label"][2] is True
    status, _, err = run(capsys, "train", "--data", "x.csv", "--epsilon", 1, "--out", "m.json")
    assert status == 2 and "--label" in err


def test_scheduler_and_local_cluster_exclude_each_other(capsys):
    status, _, err = run(
        capsys, "sweep", "--data", "x.csv", "--label", "y", "--epsilons", 1, "--out", "o.csv",
        "--scheduler", "tcp://127.0.0.1:1", "--local-cluster", 2,
    )  # fmt: skip
    assert status == 2 and "not allowed with argument" in err


def test_evaluate_with_the_auto_data_split_shares_the_records_at_large_epsilon(
    capsys, synth_files
):
    """--split auto at ε = 10: ⌈ε/0.5⌉ = 20 trees in two halves of the records (their
    work is estimated as such), private by its ledger."""
    data, schema, _ = synth_files
    common = ["--data", data, "--label", "label", "--schema", schema, "--folds", 2, "--json"]
    status, out, err = run(capsys, "evaluate", *common, "--epsilon", 10, "--split", "auto")
    assert status == 0, err
    result = json.loads(out)
    assert result["data_split"] == "auto"
    assert "Trees 1 and 2 read the two halves of the records" in result["privacy"]["summary"]
    assert "Trees 19 and 20 read the two halves" in result["privacy"]["summary"]
    assert result["privacy"]["epsilon_total"] == 10.0 and result["privacy"]["private"]
