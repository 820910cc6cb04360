import numpy as np
import pandas as pd
import pytest

from dpviz.evaluation.cross_validation import cross_validate
from dpviz.evaluation.metrics import majority_score
from dpviz.evaluation.sweep import (
    BASELINE_COLUMNS,
    SERIES_DP,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepCancelled,
    SweepGrid,
    fold_splits,
    run_sweep,
    summarise,
)
from dpviz.evaluation.synthetic import make_synth
from dpviz.tabular.encode import encode


@pytest.fixture(scope="module")
def synth():
    frame, schema = make_synth("SynthF", 3000, seed=0)
    return encode(frame, schema), schema


def test_sweep_point_equals_plain_evaluate(synth):
    """Same folds and seeds: a sweep's point at ε = 1 is exactly evaluate at ε = 1,
    because both route once per fold and draw each leaf's noise from its own key."""
    encoded, schema = synth
    grid = SweepGrid(
        epsilons=[0.05, 1.0, 4.0],
        mechanisms=["permute_flip", "count_em"],
        n_estimators=[20],
        references=False,
    )
    summary = run_sweep(encoded, schema, grid, folds=3, seed=5, noise_seed=2).summary
    row = summary[(summary.epsilon == 1.0) & (summary.mechanism == "count_em")].iloc[0]
    plain = cross_validate(
        encoded,
        schema,
        epsilon=1.0,
        n_estimators=20,
        mechanism="count_em",
        folds=3,
        seed=5,
        noise_seed=2,
    )
    assert row.accuracy_mean == pytest.approx(plain["accuracy"]["mean"], abs=1e-12)
    assert row.auc_mean == pytest.approx(plain["auc"]["mean"], abs=1e-12)
    assert row.flipped_leaf_pct == pytest.approx(plain["flipped_leaf_pct"], abs=1e-12)


def test_tidy_results_and_references(synth):
    encoded, schema = synth
    grid = SweepGrid(epsilons=[0.1, 1.0], n_estimators=[5, 10], depths=["theorem2", 3])
    result = run_sweep(encoded, schema, grid, folds=2, repeats=2, seed=0)
    dp = result.results[result.results.series == SERIES_DP]
    assert len(dp) == grid.n_points * 2 * 2
    assert set(result.results.series) == {SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN}
    assert len(result.summary[result.summary.series == SERIES_DP]) == grid.n_points
    assert (result.summary.n_runs[result.summary.series == SERIES_DP] == 4).all()
    for column in (
        "accuracy_mean",
        "accuracy_std",
        "auc_mean",
        "f1_mean",
        "empty_leaf_pct",
        "flipped_leaf_pct",
        "expected_flip_pct",
        "mean_smooth_sensitivity",
        "fit_seconds",
    ):
        assert column in result.summary.columns
    nonprivate = result.summary[result.summary.series == SERIES_NONPRIVATE]
    assert not nonprivate.private.any() and np.isinf(nonprivate.epsilon).all()


def test_flips_fall_as_epsilon_grows(synth):
    encoded, schema = synth
    # Uniform split points: one structure for every ε (quantile ones: one per rung, each
    # from its own noisy histogram, so their leaves, and expected flips, differ).
    grid = SweepGrid(
        epsilons=[0.01, 0.1, 1.0, 10.0],
        n_estimators=[10],
        references=False,
        presets={"fletcher_islam": {"split_points": "uniform"}},
    )
    summary = run_sweep(encoded, schema, grid, folds=2).summary
    assert np.all(np.diff(summary.expected_flip_pct.to_numpy()) < 0)


def test_parallel_folds_match_serial(synth):
    encoded, schema = synth
    grid = SweepGrid(epsilons=[0.5], n_estimators=[10], references=False)
    serial = run_sweep(encoded, schema, grid, folds=3, n_jobs=1, noise_seed=4).results
    parallel = run_sweep(encoded, schema, grid, folds=3, n_jobs=2, noise_seed=4).results
    cols = ["fold", "accuracy", "auc", "f1", "flipped_leaf_pct"]
    assert serial[cols].equals(parallel[cols])


def test_folds_on_threads_give_the_same_rows_and_progress_and_cancel(synth):
    """Folds on threads (``threads``, what the Curves page and the CLI use on a
    machine with spare cores): every row equal to the serial sweep's, to the last bit
    (replayable noise seeds), from ε = 2 up too (the floor's check); progress counts
    every fold once, from the caller's thread; a cancel stops between folds."""
    import threading

    encoded, schema = synth
    grid = SweepGrid(
        epsilons=[0.05, 0.5, 3.0],
        mechanisms=["laplace_counts", "permute_flip"],
        n_estimators=["auto"],
        depths=["records"],
    )
    serial = run_sweep(encoded, schema, grid, folds=3, seed=1, noise_seed=6).results
    seen = []
    caller = threading.get_ident()
    threaded = run_sweep(
        encoded,
        schema,
        grid,
        folds=3,
        seed=1,
        noise_seed=6,
        threads=2,
        progress=lambda d, t, m: seen.append((d, t, threading.get_ident() == caller)),
    ).results
    assert seen == [(1, 3, True), (2, 3, True), (3, 3, True)]
    assert (serial.epsilon == 3.0).any() and (serial.series == SERIES_NONPRIVATE).any()
    pd.testing.assert_frame_equal(
        serial.drop(columns="fit_seconds"), threaded.drop(columns="fit_seconds"), check_exact=True
    )
    with pytest.raises(SweepCancelled, match="of 3"):
        run_sweep(encoded, schema, grid, folds=3, threads=2, cancel=lambda: True)


def test_progress_and_cancel(synth):
    encoded, schema = synth
    grid = SweepGrid(epsilons=[1.0], n_estimators=[5], references=False)
    seen = []
    run_sweep(encoded, schema, grid, folds=3, progress=lambda d, t, m: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    with pytest.raises(SweepCancelled, match="after 1 of 3"):
        run_sweep(encoded, schema, grid, folds=3, cancel=lambda: True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilons": []}, "empty"),
        ({"epsilons": [0.0]}, "epsilon"),
        ({"epsilons": [1.0], "n_estimators": [0]}, "tree counts"),
        ({"epsilons": [1.0], "depths": ["deep"]}, "depth rule"),
        ({"epsilons": [1.0], "mechanisms": ["magic"]}, "mechanism"),
        ({"epsilons": [1.0], "data_splits": ["half"]}, "data split"),
    ],
)
def test_bad_grids(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SweepGrid(**kwargs)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--epsilons", ""], "empty"),
        (["--epsilons", "0,1"], "positive"),
        (["--epsilons", "1", "--trees", "0"], "tree counts"),
        (["--epsilons", "1", "--depth", "deep"], "depth rule"),
        (["--epsilons", "1", "--mechanism", "magic"], "mechanism"),
    ],
)
def test_cli_sweep_bad_grids(tmp_path, capsys, argv, match):
    from dpviz.cli import main

    status = main(
        ["sweep", "--data", "x.csv", "--label", "y", "--out", str(tmp_path / "r.csv"), *argv]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("error: ") and match in err[-1]


def test_cli_sweep_writes_tidy_csv(tmp_path, capsys):
    from dpviz.cli import main

    frame, schema = make_synth("SynthA", 800, seed=0)
    data, schema_path = tmp_path / "d.csv", tmp_path / "s.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(schema.to_json())
    status = main(
        [
            "sweep",
            "--data",
            str(data),
            "--label",
            "label",
            "--schema",
            str(schema_path),
            "--epsilons",
            "0.1,1",
            "--trees",
            "5,10",
            "--folds",
            "2",
            "--no-references",
            "--out",
            str(tmp_path / "r.csv"),
            "--summary",
            str(tmp_path / "s.csv"),
        ]
    )
    err = capsys.readouterr().err
    assert status == 0, err
    assert "2/2" in err  # the progress bar
    import pandas as pd

    assert len(pd.read_csv(tmp_path / "r.csv")) == 2 * 2 * 2
    assert len(pd.read_csv(tmp_path / "s.csv")) == 4


# --- the trivial baseline ------------------------------------------------------------------


@pytest.fixture(scope="module")
def rare():
    from tests.rare_data import RARE_SCHEMA, rare_frame

    return encode(rare_frame(600), RARE_SCHEMA), RARE_SCHEMA


def test_every_row_carries_its_folds_majority_baseline(rare):
    encoded, schema = rare
    grid = SweepGrid(epsilons=[0.1, 1.0], n_estimators=[5])
    result = run_sweep(encoded, schema, grid, folds=3, seed=2, noise_seed=1)
    results = result.results
    # Rows as before: one per grid point and fold, plus the references.
    assert len(results) == 3 * (grid.n_points + 2)
    splits = fold_splits(encoded.y, 3, 1, 2)
    for fold, (train, test) in enumerate(splits):
        expected = majority_score(encoded.y[test], encoded.y[train], 2)
        rows = results[results["fold"] == fold]
        for metric, value in expected.items():
            assert np.allclose(rows[f"majority_{metric}"], value, equal_nan=True), metric
    assert (results["majority_f1"] == 0).all() and (results["majority_auc"] == 0.5).all()
    assert set(BASELINE_COLUMNS) | {"macro_f1", "one_class", "only_class"} <= set(results)
    assert results["one_class"].dtype == bool
    flagged = results[results["one_class"]]
    assert (flagged["only_class"] >= 0).all() and (
        results[~results["one_class"]].only_class == -1
    ).all()
    # A model answering the majority class everywhere scores exactly the baseline.
    assert np.allclose(flagged["accuracy"], flagged["majority_accuracy"])


def test_summary_has_baseline_means_macro_f1_and_the_one_class_share(rare):
    encoded, schema = rare
    grid = SweepGrid(epsilons=[1.0], n_estimators=[5], references=False)
    result = run_sweep(encoded, schema, grid, folds=3, seed=0, noise_seed=3)
    row = result.summary.iloc[0]
    results = result.results
    for metric in (*BASELINE_COLUMNS, "macro_f1"):
        assert row[f"{metric}_mean"] == pytest.approx(results[metric].mean())
        assert row[f"{metric}_std"] == pytest.approx(results[metric].std(), nan_ok=True)
    assert row["one_class_share"] == pytest.approx(results["one_class"].mean())
    assert row["one_class_share"] == 1.0  # 3% positives and features without signal
    assert row["n_runs"] == 3
    # A results frame without the baseline (an older CSV) still summarises, alone or
    # concatenated with a new one.
    old = results.drop(columns=[*BASELINE_COLUMNS, "macro_f1", "one_class", "only_class"])
    assert "majority_accuracy_mean" not in summarise(old).columns
    both = summarise(pd.concat([results, old.assign(epsilon=2.0)], ignore_index=True))
    assert list(both["one_class_share"].fillna(-1)) == [1.0, -1]


def test_evaluate_reports_the_majority_baseline_macro_f1_and_one_class_share(rare):
    encoded, schema = rare
    kwargs = {"epsilon": 1.0, "n_estimators": 5, "folds": 3, "seed": 4, "noise_seed": 0}
    plain = cross_validate(encoded, schema, **kwargs)
    grid = SweepGrid(epsilons=[1.0], n_estimators=[5], references=False)
    row = run_sweep(encoded, schema, grid, folds=3, seed=4, noise_seed=0).summary.iloc[0]
    assert set(plain["majority"]) == {"accuracy", "f1", "auc", "macro_f1"}
    for metric, value in plain["majority"].items():
        assert value["mean"] == pytest.approx(row[f"majority_{metric}_mean"])
        assert value["std"] == pytest.approx(row[f"majority_{metric}_std"])
    assert plain["majority"]["f1"] == {"mean": 0.0, "std": 0.0}
    assert plain["majority"]["auc"]["mean"] == 0.5
    assert plain["macro_f1"]["mean"] == pytest.approx(row["macro_f1_mean"])
    assert plain["predicts_one_class"] == 1.0
    assert plain["accuracy"]["mean"] == pytest.approx(plain["majority"]["accuracy"]["mean"])


def test_cli_evaluate_json_and_sweep_csvs_carry_the_baseline(tmp_path, capsys):
    import json

    import pandas as pd

    from dpviz.cli import main
    from tests.rare_data import RARE_SCHEMA, rare_frame

    data, schema_path = tmp_path / "d.csv", tmp_path / "s.json"
    rare_frame(600).to_csv(data, index=False)
    schema_path.write_text(RARE_SCHEMA.to_json())
    common = ["--data", str(data), "--label", "label", "--schema", str(schema_path)]
    status = main(["evaluate", *common, "--epsilon", "1", "--folds", "3", "--json"])
    out = capsys.readouterr().out
    assert status == 0
    result = json.loads(out)
    assert result["majority"]["accuracy"]["mean"] == pytest.approx(0.97, abs=0.01)
    assert result["majority"]["f1"]["mean"] == 0.0 and result["majority"]["auc"]["mean"] == 0.5
    assert 0.0 <= result["predicts_one_class"] <= 1.0 and "mean" in result["macro_f1"]
    status = main(
        [
            "sweep",
            *common,
            "--epsilons",
            "0.1,1",
            "--trees",
            "5",
            "--folds",
            "2",
            "--no-references",
            "--quiet",
            "--out",
            str(tmp_path / "r.csv"),
            "--summary",
            str(tmp_path / "s.csv"),
        ]
    )
    assert status == 0, capsys.readouterr().err
    folds = pd.read_csv(tmp_path / "r.csv")
    summary = pd.read_csv(tmp_path / "s.csv")
    assert len(folds) == 4 and len(summary) == 2
    assert {*BASELINE_COLUMNS, "macro_f1", "one_class"} <= set(folds.columns)
    assert {"majority_accuracy_mean", "majority_f1_std", "macro_f1_mean"} <= set(summary.columns)
    assert "one_class_share" in summary.columns


def test_cli_sweep_with_the_default_tree_count(tmp_path, capsys):
    """The CLI's default ``--trees`` is the registry's ``auto``: the sweep sizes each
    fold's forest from its declared record count (it once stopped at the work check)."""
    from dpviz.cli import main

    frame, schema = make_synth("SynthA", 800, seed=0)
    data, schema_path = tmp_path / "d.csv", tmp_path / "s.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(schema.to_json())
    argv = ["sweep", "--data", str(data), "--label", "label", "--schema", str(schema_path)]
    argv += ["--epsilons", "0.5,2", "--folds", "2", "--no-references", "--quiet"]
    status = main([*argv, "--out", str(tmp_path / "r.csv")])
    assert status == 0, capsys.readouterr().err
    rows = pd.read_csv(tmp_path / "r.csv")
    # 400 training records a fold: at ε = 2, 10 trees keep 40 a tree (the fewest auto
    # offers from ε = 1 up); at ε = 0.5 the 40 signal records (n/10) get the least, 3.
    sizes = rows.groupby("epsilon")["n_estimators"].unique().to_dict()
    assert {e: list(t) for e, t in sizes.items()} == {0.5: [3], 2.0: [10]}
    assert len(rows) == 2 * 2


def test_evaluate_states_the_ledger_of_the_models_it_fitted(rare):
    """The privacy entry of ``evaluate`` is a fold model's ledger, not the unfitted
    configuration's: the auto tree count the fold's size gives (not the 100 trees of no
    count), the split tables, the floor's check and, with ``objective="macro_f1"`` on two
    classes, the score histogram beside it (two queries of 0.05; the default accuracy
    objective's needs more records than these folds hold), summing to ε (fresh noise: a
    replayable seed voids the total)."""
    encoded, schema = rare
    found = cross_validate(encoded, schema, epsilon=1.0, objective="macro_f1", folds=3, seed=2)
    summary = found["privacy"]["summary"].lower()
    assert found["privacy"]["epsilon_total"] == pytest.approx(1.0)
    assert "each of 10 trees" in summary and "100 trees" not in summary
    assert "class × value tables" in summary, summary
    assert "2 queries (noisy out-of-bag gain" in summary, summary
    plain = cross_validate(encoded, schema, epsilon=1.0, folds=3, seed=2)["privacy"]["summary"]
    assert "2 queries (noisy out-of-bag gain" not in plain.lower()
