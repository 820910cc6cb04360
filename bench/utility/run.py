"""The run: every method at every ε on every fold of every dataset, one CSV row each; and
the machine it ran on."""

from __future__ import annotations

import math
import os
import platform
import subprocess
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

from bench.utility.data import ROOT, Dataset
from bench.utility.methods import REFERENCES, all_methods, build, is_private
from dpviz.evaluation.metrics import majority_score, score
from dpviz.models.objective import ACCURACY, check_objective

DEFAULT_EPSILONS = (0.1, 1.0, 10.0)
COLUMNS = (
    "group",
    "seed",
    "dataset",
    "n_rows",
    "n_classes",
    "fold",
    "method",
    "private",
    "epsilon",
    "accuracy",
    "macro_f1",
    "auc",
    "majority_accuracy",
    "majority_macro_f1",
    "majority_auc",
    "fit_seconds",
    "predict_seconds",
    "warning",
    "error",
    "objective",  # the run's --objective: what dpviz's estimators predicted for
)


def _one(
    method, epsilon, data: Dataset, train, test, random_state, objective: str = ACCURACY
) -> dict:
    """Scores of one fit; an exception becomes the row's error, never the run's."""
    row = {"method": method, "private": is_private(method), "epsilon": epsilon}
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            fitted = build(method, epsilon, data, train, random_state, objective)
            fit_seconds = time.perf_counter() - start
            start = time.perf_counter()
            pred = fitted.predict(test)
            proba = fitted.proba(test)
            predict_seconds = time.perf_counter() - start
    except Exception as exc:  # a failing peer is a result, not a crash
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(last.filename).name}:{last.lineno}"
        return {**row, "error": f"{type(exc).__name__}: {exc} ({where})"[:300]}
    k = data.n_classes
    y_test, y_train = data.y[test], data.y[train]
    hard = score(y_test, np.eye(k)[pred], y_train, k)
    auc = score(y_test, proba, y_train, k)["auc"] if proba is not None else math.nan
    seen = sorted({f"{w.category.__name__}: {str(w.message)[:120]}" for w in caught})
    return {
        **row,
        "accuracy": hard["accuracy"],
        "macro_f1": hard["macro_f1"],
        "auc": auc,
        "fit_seconds": fit_seconds,
        "predict_seconds": predict_seconds,
        "warning": " | ".join(seen)[:400],
        "error": "",
    }


def run_fold(
    data: Dataset,
    fold: int,
    train: np.ndarray,
    test: np.ndarray,
    methods: list[str],
    epsilons: list[float],
    seed: int = 0,
    log: Callable[[str], None] | None = None,
    objective: str = ACCURACY,
) -> list[dict]:
    """Every method at every ε on one fold (references once: they do not depend on ε);
    dpviz's estimators predict for ``objective``, every row records it."""
    from threadpoolctl import threadpool_limits

    random_state = seed * 1_000_003 + fold  # public randomness only
    base = {
        "group": data.group,
        "seed": seed,
        "dataset": data.name,
        "n_rows": len(data.y),
        "n_classes": data.n_classes,
        "fold": fold,
        "objective": objective,
    }
    baseline = majority_score(data.y[test], data.y[train], data.n_classes)
    rows = [
        {
            **base,
            "method": "majority",
            "private": False,
            "epsilon": math.inf,
            "accuracy": baseline["accuracy"],
            "macro_f1": baseline["macro_f1"],
            "auc": baseline["auc"],
            "error": "",
        }
    ]
    # One thread per fit: the machine is shared, and folds run in parallel with --jobs.
    with threadpool_limits(limits=1):
        for method in methods:
            for eps in [math.inf] if method in REFERENCES else epsilons:
                start = time.perf_counter()
                row = _one(method, eps, data, train, test, random_state, objective)
                rows.append({**base, **row})
                if log is not None:
                    status = rows[-1]["error"] or f"acc {rows[-1]['accuracy']:.3f}"
                    log(
                        f"{data.name} fold {fold} {method} ε={eps:g}: {status} "
                        f"({time.perf_counter() - start:.1f} s)"
                    )
    for row in rows:
        row.update({f"majority_{m}": baseline[m] for m in ("accuracy", "macro_f1", "auc")})
    return rows


def run_benchmark(
    datasets: Iterable[Dataset],
    *,
    methods: list[str] | None = None,
    epsilons: Iterable[float] = DEFAULT_EPSILONS,
    folds: int = 5,
    seed: int = 0,
    n_jobs: int = 1,
    log: Callable[[str], None] | None = None,
    objective: str = ACCURACY,
) -> pd.DataFrame:
    """One row per (dataset, fold, method, ε); ``majority`` rows and ``majority_*``
    columns hold the trivial baseline of each fold. Folds: ``StratifiedKFold(folds,
    shuffle=True, random_state=seed)``. ``objective``: what dpviz's estimators predict
    for (post-processing of each release; the peers keep their argmax)."""
    from sklearn.model_selection import StratifiedKFold

    methods = list(all_methods() if methods is None else methods)
    unknown = [m for m in methods if m not in all_methods()]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; choose from {', '.join(all_methods())}")
    epsilons = [float(e) for e in epsilons]
    objective = check_objective(objective)
    tasks = []
    for data in datasets:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for fold, (train, test) in enumerate(splitter.split(data.y, data.y)):
            tasks.append((data, fold, train, test))
    if n_jobs == 1:
        parts = [run_fold(*t, methods, epsilons, seed, log, objective) for t in tasks]
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=n_jobs, verbose=0)(
            delayed(run_fold)(*t, methods, epsilons, seed, log, objective) for t in tasks
        )
    frame = pd.DataFrame([row for part in parts for row in part])
    return frame.reindex(columns=list(COLUMNS))


def machine() -> str:
    """nproc, CPU model, Python and package versions, dpviz commit, load average."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = []
    for pkg in ("numpy", "scipy", "pandas", "scikit-learn", "diffprivlib", "interpret-core"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            pass
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "unknown"
    return (
        f"nproc {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()}, "
        + ", ".join(versions)
        + f", dpviz commit {commit}, load average {os.getloadavg()[0]:.2f}"
    )
