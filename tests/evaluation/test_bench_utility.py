"""The utility benchmark (bench/bench_utility.py, its parts in bench/utility/) on tiny
data: its frame, its baseline, its tables and its must-hold checks. Peers that are not
installed are skipped by name."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.models.registry import ALGORITHMS
from tests.conftest import mixed_records

ROOT = Path(__file__).resolve().parent.parent.parent
EPSILONS = (1.0, 10.0)
FOLDS = 2


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_utility", ROOT / "bench" / "bench_utility.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


bench = _bench()
from bench.utility import methods as bench_methods  # noqa: E402  (on the path via _bench)


def _frames() -> dict[str, pd.DataFrame]:
    """A 3-class set and a binary one (``small`` against the rest), 240 rows each, as
    strings like dpviz's CSV reader gives them."""
    three = mixed_records(seed=1, n=240)
    two = three.assign(label=np.where(three.label == "small", "small", "big"))
    return {"three": three.astype(str), "two": two.astype(str)}


def _run(methods: list[str]) -> tuple[pd.DataFrame, dict]:
    data = {name: bench.load_dataset(name, frame=f) for name, f in _frames().items()}
    results = bench.run_benchmark(
        data.values(), methods=methods, epsilons=EPSILONS, folds=FOLDS, seed=0
    )
    return results, data


@pytest.fixture(scope="module")
def dpviz_run():
    return _run([*ALGORITHMS, *bench.REFERENCES])


def test_frame_has_every_method_epsilon_and_fold(dpviz_run):
    results, _ = dpviz_run
    assert list(results.columns) == list(bench.COLUMNS)
    for name in ("three", "two"):
        part = results[results.dataset == name]
        for algorithm in ALGORITHMS:
            rows = part[part.method == algorithm]
            assert sorted(rows.epsilon.unique()) == list(EPSILONS)
            assert len(rows) == FOLDS * len(EPSILONS)
            assert rows.private.all()
        for method in (*bench.REFERENCES, "majority"):
            rows = part[part.method == method]
            assert len(rows) == FOLDS and np.isinf(rows.epsilon).all()
            assert not rows.private.any()
    # dpviz never fails on these data: no errors, every score a rate.
    assert (results.error.fillna("") == "").all()
    for col in ("accuracy", "macro_f1", "auc"):
        assert results[col].between(0.0, 1.0).all(), col


def test_majority_is_the_training_majority_class_rate(dpviz_run):
    """The majority row of a fold equals the test share of that fold's training majority
    class (recomputed here from the same stratified folds), its AUC is 0.5, and every
    row of the fold carries the same baseline."""
    from sklearn.model_selection import StratifiedKFold

    results, data = dpviz_run
    for name, d in data.items():
        splits = StratifiedKFold(FOLDS, shuffle=True, random_state=0).split(d.y, d.y)
        for fold, (train, test) in enumerate(splits):
            rows = results[(results.dataset == name) & (results.fold == fold)]
            majority = rows[rows.method == "majority"].iloc[0]
            top = np.argmax(np.bincount(d.y[train], minlength=d.n_classes))
            assert majority.accuracy == pytest.approx(np.mean(d.y[test] == top))
            assert majority.auc == pytest.approx(0.5)
            assert (rows.majority_accuracy == majority.accuracy).all()
            assert rows.n_rows.eq(240).all() and rows.n_classes.eq(d.n_classes).all()


def test_tables_and_checks(dpviz_run):
    results, _ = dpviz_run
    text = bench.to_markdown(results)
    assert "**three**" in text and "**two**" in text and "| majority class |" in text
    assert "acc ε=10" in text
    overview = bench.overview_markdown(results)
    assert "Over 2 datasets (AUC: the 1 binary ones: two)" in overview
    assert "| dpviz DPBoost |" in overview and "*" not in overview.split("\n")[3]
    summary = bench.summarise(results)
    majority = summary[(summary.dataset == "two") & (summary.method == "majority")].iloc[0]
    assert majority.accuracy == pytest.approx(majority.majority)
    checks = {c["check"]: c for c in bench.checks(results)}
    for algorithm in ALGORITHMS:
        verdict = checks[f"{algorithm}: never more than 0.5 points below the majority"]
        assert verdict["result"] in ("PASS", "FAIL")
    # Neither adult nor car is in this run: those checks cannot be decided.
    assert checks["dpboost at ε=1 on adult ≥ 80%"]["result"] == "N/A"
    twin = checks["dpboost at ε=10 within 5 points of its twin (ε=10⁶) on every dataset"]
    assert twin["result"] in ("PASS", "FAIL") and "three" in twin["detail"]


def test_a_failing_peer_is_a_row_not_a_crash(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("peer exploded")

    monkeypatch.setattr(bench_methods, "_fit_diffprivlib", broken)
    data = bench.load_dataset("two", frame=_frames()["two"])
    results = bench.run_benchmark([data], methods=["diffprivlib_rf"], epsilons=[1.0], folds=2)
    failed = results[results.method == "diffprivlib_rf"]
    assert len(failed) == 2 and failed.error.str.contains("RuntimeError: peer exploded").all()
    assert failed.accuracy.isna().all()
    assert "error: RuntimeError: peer exploded" in bench.to_markdown(results)


@pytest.mark.parametrize(
    ("method", "module"),
    [
        ("diffprivlib_rf", "diffprivlib"),
        ("diffprivlib_dt", "diffprivlib"),
        ("diffprivlib_lr", "diffprivlib"),
        ("diffprivlib_gnb", "diffprivlib"),
        ("dp_ebm", "interpret"),
    ],
)
def test_peer_scores(method, module):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -r bench/requirements.txt)")
    data = {name: bench.load_dataset(name, frame=f) for name, f in _frames().items()}
    results = bench.run_benchmark(data.values(), methods=[method], epsilons=[10.0], folds=2)
    rows = results[results.method == method]
    assert len(rows) == 4
    for _, row in rows.iterrows():
        if method == "dp_ebm" and row.dataset == "three":
            assert "binary classification only" in row.error
            continue
        assert row.error == "", row.error
        assert 0.0 <= row.accuracy <= 1.0 and 0.0 <= row.auc <= 1.0
        assert not math.isnan(row.macro_f1)
        # Bounds were given: no privacy-leak warning from the peer.
        assert "PrivacyLeak" not in str(row.warning)


# --- the objective (issue 28: the macro-F1 objective on imbalanced sets) ---------------


def _objective_rows(f1: dict, majority_f1: float, share: float, objective="macro_f1"):
    """Hand-made result rows of one binary set with minority ``share``: two folds, one
    ``fletcher_islam`` row per (ε, fold) with macro-F1 ``f1[ε]`` and the majority's rows."""
    rows = []
    for fold in (0, 1):
        base = {"group": "shared", "seed": 0, "dataset": "rare", "n_rows": 1000}
        base |= {"n_classes": 2, "fold": fold, "objective": objective, "error": ""}
        base |= {"majority_accuracy": 1 - share, "majority_macro_f1": majority_f1}
        rows.append({**base, "method": "majority", "epsilon": math.inf, "macro_f1": majority_f1})
        for eps, value in f1.items():
            rows.append({**base, "method": "fletcher_islam", "epsilon": eps, "macro_f1": value})
    return pd.DataFrame(rows)


def test_objective_check_passes_only_above_the_majority_on_every_epsilon():
    """Exact arithmetic on hand-made rows: above at every ε passes; equal at one ε fails
    and names that cell; a set with ≥ 15% minority or an accuracy run is not checked."""
    name = "fletcher_islam with objective macro_f1"
    above = bench.objective_checks(_objective_rows({0.1: 0.50, 1.0: 0.60}, 0.47, 0.06))
    assert [c["result"] for c in above] == ["PASS"] and above[0]["check"].startswith(name)
    assert "above in 2 of 2" in above[0]["detail"] and "rare 6.0%" in above[0]["detail"]
    tied = bench.objective_checks(_objective_rows({0.1: 0.47, 1.0: 0.60}, 0.47, 0.06))
    assert tied[0]["result"] == "FAIL" and "rare ε=0.1 47.0 vs 47.0" in tied[0]["detail"]
    balanced = bench.objective_checks(_objective_rows({0.1: 0.40}, 0.47, 0.30))
    assert balanced[0]["result"] == "N/A"
    assert bench.objective_checks(_objective_rows({0.1: 0.40}, 0.47, 0.06, "accuracy")) == []


def test_objective_reaches_dpviz_estimators_and_every_row(monkeypatch):
    """--objective is passed to every dpviz fit (and only to dpviz's), recorded in every
    row, named in the report with its must-hold line; an unknown one is a ValueError."""
    from dpviz.models import registry

    seen = []

    def recording(algorithm):
        found = registry.get_algorithm(algorithm)

        class Spy:
            def make(self, epsilon, **params):
                seen.append((algorithm, params["objective"]))
                return found.make(epsilon, **params)

        return Spy()

    monkeypatch.setattr(bench_methods, "get_algorithm", recording)
    frame = _frames()["two"]
    data = bench.load_dataset("two", frame=frame)
    results = bench.run_benchmark(
        [data],
        methods=["fletcher_islam", "dpboost_twin"],
        epsilons=[1.0],
        folds=2,
        objective="macro_f1",
    )
    assert sorted(seen) == [("dpboost", "macro_f1")] * 2 + [("fletcher_islam", "macro_f1")] * 2
    assert (results.objective == "macro_f1").all() and len(results) == 6
    report = bench.report_markdown(results)
    assert "## shared group (1 datasets), seed 0, objective macro_f1" in report
    assert "| shared, objective macro_f1 | 0 | 1 |" in report
    # An accuracy CSV written before the column existed reads as accuracy, unchanged.
    old = bench.normalise(results.drop(columns="objective").assign(objective=None))
    assert (old.objective == "accuracy").all()
    with pytest.raises(ValueError, match="objective must be one of"):
        bench.run_benchmark([data], methods=["fletcher_islam"], objective="f1")


def test_best_threshold_diagnostic_is_exact():
    """bench/bench_objective.py's "does any threshold help?": a score that separates the
    classes reaches macro-F1 1; a constant score only ties the majority (exact values)."""
    spec = importlib.util.spec_from_file_location(
        "bench_objective", ROOT / "bench" / "bench_objective.py"
    )
    diag = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diag)
    y = np.array([1, 0, 0, 0, 0])
    assert diag.best_threshold_f1(y, np.array([0.9, 0.1, 0.2, 0.3, 0.2]), 1) == 1.0
    majority = diag.macro_f1(y, np.zeros(5, dtype=int))
    assert majority == pytest.approx(4 / 9)  # (2·4/(2·4 + 1) + 0) / 2
    assert diag.best_threshold_f1(y, np.full(5, 0.4), 1) == pytest.approx(majority)
    # One tie between a positive and a negative at the top: the cut takes both.
    assert diag.best_threshold_f1(y, np.array([0.9, 0.9, 0.2, 0.3, 0.1]), 1) == pytest.approx(
        (2 / 3 + 6 / 7) / 2
    )
