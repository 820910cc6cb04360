"""Utility benchmark (issue 13): dpviz's algorithms against private and non-private peers.

Every algorithm of ``dpviz.models.registry.ALGORITHMS`` at its registry defaults (default
mechanism, fresh secret noise per fit: what a user gets) is scored beside

* diffprivlib 0.6 — RandomForestClassifier, DecisionTreeClassifier (their defaults:
  10 trees / depth 5), LogisticRegression and GaussianNB, each with the schema's bounds and
  integer labels (no ``PrivacyLeakWarning``);
* interpret's DP-EBM (``DPExplainableBoostingClassifier``, (ε, δ = 1e-5)-DP, binary only);
* DPBoost's non-private twin (DPBoost at ε = 10⁶), scikit-learn's HistGradientBoosting
  (not private) and the majority class (the training fold's most frequent class),

on the shared UCI datasets (``../shared/datasets``), at each ε of ``--epsilons``, with
scikit-learn's ``StratifiedKFold(shuffle=True, random_state=seed)``. Metrics come from
``dpviz.evaluation.metrics``: accuracy and macro-F1 of ``predict`` (macro over every schema class),
ROC AUC of ``predict_proba`` (binary: the rarer training class is positive; more classes:
macro one-vs-rest over the classes in the test fold).

Privacy of the benchmark itself: the schema (class list, feature domains) is inferred from
the whole file, as ``dpviz.evaluation.reproduce`` does, and treated as public for every
method alike.
Only the public randomness (folds, subsampling, dpviz's ``random_state``, HistGradientBoosting)
is seeded; dpviz, diffprivlib and DP-EBM draw fresh noise in every fit, so two runs differ
by the noise — the ± columns show how much.

Usage::

    python bench/bench_utility.py                      # the 7 datasets, 5 folds, ε 0.1 1 10
    python bench/bench_utility.py --max-rows 3000 --folds 2 --datasets car adult
    python bench/bench_utility.py --tables bench/results/utility.csv   # tables from a CSV

Writes one row per (dataset, fold, method, ε) to ``--out`` (CSV), then prints the markdown
tables and the issue's must-hold checks (also written beside the CSV as ``.md``). A peer
that fails to import or raises is recorded with its error in the row and shown in the table.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpviz.evaluation.metrics import majority_score, score  # noqa: E402
from dpviz.evaluation.peers import (  # noqa: E402  the shim and LR the Curves page uses too
    diffprivlib_lr,
    patch_sklearn_for_diffprivlib,
)
from dpviz.models.data import encode, read_csv  # noqa: E402
from dpviz.models.registry import ALGORITHMS, get_algorithm  # noqa: E402
from dpviz.privacy.schema import Schema, infer_schema  # noqa: E402

DATASETS_DIR = ROOT.parent / "shared" / "datasets"
# Every dataset in ../shared/datasets (its MANIFEST): the 7 of the DPBoost
# measurements and the 4 added since (votes, abalone, pendigits, wall_robot), so that the
# checks run "on any of the shared datasets" and the AUC mean covers all 6 binary ones.
DEFAULT_DATASETS = (
    "adult",
    "bank_marketing",
    "car",
    "magic_gamma",
    "mushroom",
    "nursery",
    "tic_tac_toe",
    "votes",
    "abalone",
    "pendigits",
    "wall_robot",
)
DEFAULT_EPSILONS = (0.1, 1.0, 10.0)
TWIN_EPSILON = 1e6  # DPBoost's non-private twin: the same trees with negligible noise
DPEBM_DELTA = 1e-5  # interpret's default δ for DP-EBM
PEERS = ("diffprivlib_rf", "diffprivlib_dt", "diffprivlib_lr", "diffprivlib_gnb", "dp_ebm")
REFERENCES = ("dpboost_twin", "hist_gradient_boosting")
LABELS = {
    "fletcher_islam": "dpviz FI forest",
    "jpw": "dpviz JPW",
    "friedman_schuster": "dpviz FS",
    "dpea": "dpviz DPEA",
    "dpboost": "dpviz DPBoost",
    "diffprivlib_rf": "diffprivlib RF",
    "diffprivlib_dt": "diffprivlib DT",
    "diffprivlib_lr": "diffprivlib LR",
    "diffprivlib_gnb": "diffprivlib GNB",
    "dp_ebm": "DP-EBM (δ = 10⁻⁵)",  # DPEBM_DELTA
    "dpboost_twin": "DPBoost twin (ε=10⁶, not DP)",
    "hist_gradient_boosting": "HistGB (not DP)",
    "majority": "majority class",
}
COLUMNS = (
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
)


def all_methods() -> list[str]:
    """Registry algorithms (in registry order), then the peers and references."""
    return [*ALGORITHMS, *PEERS, *REFERENCES]


# --- data ----------------------------------------------------------------------------


@dataclass
class Dataset:
    """One dataset: raw string frame, its schema and the encoded arrays."""

    name: str
    frame: pd.DataFrame  # features as read (strings), label column last
    schema: Schema
    y: np.ndarray  # class index per row
    continuous: np.ndarray  # the schema's continuous features
    discrete: np.ndarray  # codes of the schema's discrete features

    @property
    def n_classes(self) -> int:
        return len(self.schema.classes)

    @property
    def features(self) -> pd.DataFrame:
        return self.frame[self.schema.feature_names]

    def labels(self) -> np.ndarray:
        return np.asarray(self.schema.classes, dtype=object)[self.y]


def load_dataset(
    name: str,
    datasets_dir: Path = DATASETS_DIR,
    max_rows: int | None = None,
    seed: int = 0,
    frame: pd.DataFrame | None = None,
) -> Dataset:
    """Read ``name``.csv with dpviz's reader, infer its schema from the whole file (as
    ``dpviz.evaluation.reproduce`` does: public for this benchmark) and encode it. ``max_rows``
    keeps a stratified random subset (seeded: public randomness). ``frame`` replaces the
    file (tests)."""
    if frame is None:
        path = Path(datasets_dir) / f"{name}.csv"
        if not path.exists():
            raise ValueError(f"dataset {path} is missing; pass --datasets-dir")
        frame = read_csv(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the inferred schema is declared public here
        schema = infer_schema(frame, "label")
    if max_rows is not None and len(frame) > max_rows:
        from sklearn.model_selection import train_test_split

        frame, _ = train_test_split(
            frame, train_size=max_rows, stratify=frame["label"], random_state=seed
        )
    frame = frame.reset_index(drop=True)
    encoded = encode(frame, schema)
    if encoded.report.rows_used != len(frame):
        raise ValueError(f"{name}: encoding dropped rows; the benchmark needs complete rows")
    return Dataset(name, frame, schema, encoded.y, encoded.continuous, encoded.discrete)


def _tree_matrix(data: Dataset) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Continuous values and discrete codes as floats, with the schema's bounds."""
    s = data.schema
    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    low = [f.low for f in s.continuous] + [0.0] * len(s.discrete)
    high = [f.high for f in s.continuous] + [len(f.values) - 1.0 for f in s.discrete]
    return X, (np.array(low, dtype=np.float64), np.array(high, dtype=np.float64))


def _linear_matrix(data: Dataset) -> tuple[np.ndarray, float]:
    """Continuous features scaled to [0, 1] by the schema's bounds, discrete ones one-hot
    over the schema's values; and the largest row norm those bounds allow (every feature
    contributes at most 1 to the squared norm): diffprivlib LR's ``data_norm``."""
    s = data.schema
    span = np.array([max(f.high - f.low, 1e-12) for f in s.continuous])
    low = np.array([f.low for f in s.continuous])
    parts = [(data.continuous - low) / span] if s.continuous else []
    for j, feat in enumerate(s.discrete):
        parts.append((data.discrete[:, j][:, None] == np.arange(len(feat.values))).astype(float))
    return np.hstack(parts), math.sqrt(len(s.features))


# --- methods --------------------------------------------------------------------------


@dataclass
class Fitted:
    predict: Callable[[np.ndarray], np.ndarray]  # test row indices -> class indices
    proba: Callable[[np.ndarray], np.ndarray | None]  # -> (n, k) in class-index order


def _expand(proba: np.ndarray, classes: Iterable, k: int) -> np.ndarray:
    """Probabilities over the classes a model saw, as columns of all k class indices."""
    out = np.zeros((proba.shape[0], k))
    out[:, np.asarray(list(classes), dtype=int)] = proba
    return out


def _fit_dpviz(algorithm: str, epsilon: float, data: Dataset, train, random_state) -> Fitted:
    model = get_algorithm(algorithm).make(epsilon, random_state=random_state, schema=data.schema)
    model.fit(data.features.iloc[train], data.labels()[train])
    index = {c: i for i, c in enumerate(data.schema.classes)}
    order = [index[str(c)] for c in model.classes_]
    k = data.n_classes

    def predict(test):
        pred = model.predict(data.features.iloc[test])
        return np.array([index[str(c)] for c in pred])

    return Fitted(
        predict, lambda test: _expand(model.predict_proba(data.features.iloc[test]), order, k)
    )


def _fit_sklearn_like(model, X: np.ndarray, data: Dataset, train) -> Fitted:
    model.fit(X[train], data.y[train])
    k = data.n_classes
    return Fitted(
        lambda test: np.asarray(model.predict(X[test]), dtype=int),
        lambda test: _expand(model.predict_proba(X[test]), model.classes_, k),
    )


def _fit_diffprivlib(kind: str, epsilon: float, data: Dataset, train, random_state) -> Fitted:
    patch_sklearn_for_diffprivlib()
    from diffprivlib import models

    classes = list(range(data.n_classes))
    if kind in ("rf", "dt"):
        X, bounds = _tree_matrix(data)
        if kind == "rf":
            model = models.RandomForestClassifier(
                epsilon=epsilon, bounds=bounds, classes=classes, n_jobs=1
            )
        else:
            model = models.DecisionTreeClassifier(epsilon=epsilon, bounds=bounds, classes=classes)
    else:
        X, norm = _linear_matrix(data)
        if kind == "lr":
            model = diffprivlib_lr(models)(epsilon=epsilon, data_norm=norm)
        else:
            ones = np.ones(X.shape[1])
            model = models.GaussianNB(epsilon=epsilon, bounds=(0 * ones, ones))
    return _fit_sklearn_like(model, X, data, train)


def _fit_dp_ebm(epsilon: float, data: Dataset, train, random_state) -> Fitted:
    if data.n_classes != 2:
        raise ValueError("DP-EBM supports binary classification only")
    from interpret.privacy import DPExplainableBoostingClassifier

    s = data.schema
    X = pd.DataFrame(data.continuous, columns=[f.name for f in s.continuous])
    for j, feat in enumerate(s.discrete):
        X[feat.name] = np.asarray(feat.values, dtype=object)[data.discrete[:, j]]
    types = ["continuous"] * len(s.continuous) + ["nominal"] * len(s.discrete)
    bounds = {f.name: (f.low, f.high) for f in s.continuous}
    model = DPExplainableBoostingClassifier(
        feature_types=types,
        epsilon=epsilon,
        delta=DPEBM_DELTA,
        privacy_bounds=bounds or None,
        n_jobs=1,
        random_state=None,  # fresh noise, as every private method here
    )
    model.fit(X.iloc[train], data.y[train])
    k = data.n_classes
    return Fitted(
        lambda test: np.asarray(model.predict(X.iloc[test]), dtype=int),
        lambda test: _expand(model.predict_proba(X.iloc[test]), model.classes_, k),
    )


def _fit_hgb(data: Dataset, train, random_state) -> Fitted:
    from sklearn.ensemble import HistGradientBoostingClassifier

    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    mask = np.r_[
        np.zeros(len(data.schema.continuous), bool), np.ones(len(data.schema.discrete), bool)
    ]
    # scikit-learn requires at most max_bins (255) categories per categorical feature.
    cats = [len(f.values) <= 255 for f in data.schema.discrete]
    mask[len(data.schema.continuous) :] = cats
    model = HistGradientBoostingClassifier(
        categorical_features=mask if mask.any() else None, random_state=random_state
    )
    return _fit_sklearn_like(model, X, data, train)


def build(method: str, epsilon: float, data: Dataset, train, random_state) -> Fitted:
    """Fit ``method`` on the training rows; ε is ignored by the non-private references."""
    if method in ALGORITHMS:
        return _fit_dpviz(method, epsilon, data, train, random_state)
    if method == "dpboost_twin":
        return _fit_dpviz("dpboost", TWIN_EPSILON, data, train, random_state)
    if method.startswith("diffprivlib_"):
        return _fit_diffprivlib(
            method.removeprefix("diffprivlib_"), epsilon, data, train, random_state
        )
    if method == "dp_ebm":
        return _fit_dp_ebm(epsilon, data, train, random_state)
    if method == "hist_gradient_boosting":
        return _fit_hgb(data, train, random_state)
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(all_methods())}")


def is_private(method: str) -> bool:
    return method not in REFERENCES


# --- the run --------------------------------------------------------------------------


def _one(method, epsilon, data: Dataset, train, test, random_state) -> dict:
    """Scores of one fit; an exception becomes the row's error, never the run's."""
    row = {"method": method, "private": is_private(method), "epsilon": epsilon}
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            fitted = build(method, epsilon, data, train, random_state)
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
) -> list[dict]:
    """Every method at every ε on one fold (references once: they do not depend on ε)."""
    from threadpoolctl import threadpool_limits

    random_state = seed * 1_000_003 + fold  # public randomness only
    base = {
        "dataset": data.name,
        "n_rows": len(data.y),
        "n_classes": data.n_classes,
        "fold": fold,
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
                rows.append({**base, **_one(method, eps, data, train, test, random_state)})
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
) -> pd.DataFrame:
    """One row per (dataset, fold, method, ε); ``majority`` rows and ``majority_*``
    columns hold the trivial baseline of each fold. Folds: ``StratifiedKFold(folds,
    shuffle=True, random_state=seed)``."""
    from sklearn.model_selection import StratifiedKFold

    methods = list(all_methods() if methods is None else methods)
    unknown = [m for m in methods if m not in all_methods()]
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r}; choose from {', '.join(all_methods())}")
    epsilons = [float(e) for e in epsilons]
    tasks = []
    for data in datasets:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        for fold, (train, test) in enumerate(splitter.split(data.y, data.y)):
            tasks.append((data, fold, train, test))
    if n_jobs == 1:
        parts = [run_fold(*t, methods, epsilons, seed, log) for t in tasks]
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=n_jobs, verbose=0)(
            delayed(run_fold)(*t, methods, epsilons, seed, log) for t in tasks
        )
    frame = pd.DataFrame([row for part in parts for row in part])
    return frame.reindex(columns=list(COLUMNS))


# --- tables and checks -------------------------------------------------------------------


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over folds per (dataset, method, ε), in points (×100); ``error`` is the
    first error seen, ``failed`` how many folds failed."""
    r = results.copy()
    r["error"] = r["error"].fillna("").astype(str)
    for col in (
        "accuracy",
        "macro_f1",
        "auc",
        "majority_accuracy",
        "majority_macro_f1",
        "majority_auc",
    ):
        r[col] = 100.0 * r[col].astype(float)
    keys = ["dataset", "method", "epsilon"]
    grouped = r.groupby(keys, sort=False)
    out = grouped.agg(
        accuracy=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        macro_f1=("macro_f1", "mean"),
        auc=("auc", "mean"),
        majority=("majority_accuracy", "mean"),
        folds=("fold", "nunique"),
        fit_seconds=("fit_seconds", "mean"),
        n_classes=("n_classes", "first"),
        n_rows=("n_rows", "first"),
    ).reset_index()
    errors = grouped["error"].agg(lambda e: next((x for x in e if x), ""))
    failed = grouped["error"].agg(lambda e: int(sum(bool(x) for x in e)))
    out["error"] = errors.to_numpy()
    out["failed"] = failed.to_numpy()
    return out


def _fmt(mean: float, sd: float | None = None, digits: int = 1) -> str:
    if mean is None or not np.isfinite(mean):
        return "–"
    if sd is None or not np.isfinite(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def to_markdown(results: pd.DataFrame) -> str:
    """One table per dataset: a row per method, accuracy ± sd / macro-F1 / AUC per ε (in
    %); references and the majority class once (they do not depend on ε)."""
    summary = summarise(results)
    lines = []
    methods = [m for m in [*all_methods(), "majority"] if m in set(summary.method)]
    for name, part in summary.groupby("dataset", sort=False):
        first = part.iloc[0]
        epsilons = sorted(e for e in part.epsilon.unique() if np.isfinite(e))
        folds = int(part.folds.max())
        lines.append(
            f"**{name}** ({int(first.n_rows):,} rows, {int(first.n_classes)} classes, "
            f"{folds} folds; majority {_fmt(part.majority.iloc[0])}%)\n"
        )
        head = ["method"]
        for e in epsilons:
            head += [f"acc ε={e:g}", f"F1 ε={e:g}", f"AUC ε={e:g}"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" + "---:|" * (len(head) - 1))
        for method in methods:
            rows = part[part.method == method].set_index("epsilon")
            cells = [LABELS.get(method, method)]
            for e in epsilons:
                key = e if e in rows.index else (math.inf if math.inf in rows.index else None)
                if key is None:
                    cells += ["", "", ""]
                    continue
                row = rows.loc[key]
                if row.failed == row.folds:
                    said = f"error: {_short(row.error)}"
                    cells += ["same error" if said in cells else said, "", ""]
                    continue
                acc = _fmt(row.accuracy, row.accuracy_sd)
                if row.failed:
                    acc += f" ({int(row.failed)} folds failed)"
                cells += [acc, _fmt(row.macro_f1), _fmt(row.auc)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def overview_markdown(results: pd.DataFrame) -> str:
    """Per method and ε, over the datasets run: the mean and the worst accuracy gap to the
    majority rate (points) and the mean AUC over the binary datasets (%)."""
    s = summarise(results)
    s = s[s.failed < s.folds]
    epsilons = sorted(e for e in s.epsilon.unique() if np.isfinite(e))
    binary = sorted(s[s.n_classes == 2].dataset.unique())
    head = ["method"]
    for e in epsilons:
        head += [f"Δacc ε={e:g}: mean (worst)", f"AUC ε={e:g}"]
    lines = [
        f"Over {s.dataset.nunique()} datasets (AUC: the {len(binary)} binary ones: "
        f"{', '.join(binary)}); Δacc = accuracy − majority rate, in points.\n",
        "| " + " | ".join(head) + " |",
        "|" + "---|" + "---:|" * (len(head) - 1),
    ]
    for method in [m for m in all_methods() if m in set(s.method)]:
        cells = [LABELS.get(method, method)]
        for e in epsilons:
            part = s[(s.method == method) & (s.epsilon.isin([e, math.inf]))]
            gap = part.accuracy - part.majority
            if part.empty:
                cells += ["", ""]
                continue
            worst = part.loc[gap.idxmin()]
            fewer = "" if part.dataset.nunique() == s.dataset.nunique() else "*"
            cells.append(f"{gap.mean():+.1f} ({gap.min():+.1f} {worst.dataset}){fewer}")
            auc = part[part.n_classes == 2]
            cells.append(_fmt(auc.auc.mean()) + ("" if len(auc) == len(binary) else "*"))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("\\* over fewer datasets: the method failed on the others (tables below).")
    return "\n".join(lines)


def _short(error: str) -> str:
    return error.split(" (")[0].replace("|", "/")[:90]


def checks(results: pd.DataFrame) -> list[dict]:
    """The issue's must-hold checks on what was run: name, PASS/FAIL/N/A and detail."""
    s = summarise(results)
    s = s[s.failed < s.folds]
    out = []

    def get(dataset, method, eps):
        row = s[(s.dataset == dataset) & (s.method == method) & (s.epsilon == eps)]
        return None if row.empty else row.iloc[0]

    for algorithm in ALGORITHMS:
        part = s[(s.method == algorithm) & np.isfinite(s.epsilon)]
        if part.empty:
            continue
        gaps = part.accuracy - part.majority
        worst = part.loc[gaps.idxmin()]
        ok = bool((gaps >= -0.5).all())
        out.append(
            {
                "check": f"{algorithm}: never more than 0.5 points below the majority",
                "result": "PASS" if ok else "FAIL",
                "detail": f"worst gap {gaps.min():+.2f} points ({worst.dataset}, "
                f"ε={worst.epsilon:g}: {worst.accuracy:.1f} vs {worst.majority:.1f}); "
                f"{int((gaps < -0.5).sum())} of {len(gaps)} cells below −0.5",
            }
        )
    row = get("adult", "dpboost", 1.0)
    out.append(
        {
            "check": "dpboost at ε=1 on adult ≥ 80%",
            "result": "N/A" if row is None else ("PASS" if row.accuracy >= 80 else "FAIL"),
            "detail": "not run" if row is None else f"{row.accuracy:.1f} ± {row.accuracy_sd:.1f}%",
        }
    )
    details, ok = [], True
    for name in s.dataset.unique():
        private, twin = get(name, "dpboost", 10.0), get(name, "dpboost_twin", math.inf)
        if private is None or twin is None:
            continue
        gap = twin.accuracy - private.accuracy
        ok &= gap <= 5
        details.append(f"{name} {private.accuracy:.1f} vs {twin.accuracy:.1f} ({gap:+.1f})")
    out.append(
        {
            "check": "dpboost at ε=10 within 5 points of its twin (ε=10⁶) on every dataset",
            "result": "N/A" if not details else ("PASS" if ok else "FAIL"),
            "detail": "; ".join(details) or "not run",
        }
    )
    for algorithm in ("friedman_schuster", "dpea"):
        row = get("car", algorithm, 1.0)
        out.append(
            {
                "check": f"{algorithm} on car at ε=1 ≥ majority + 2",
                "result": "N/A"
                if row is None
                else ("PASS" if row.accuracy >= row.majority + 2 else "FAIL"),
                "detail": "not run"
                if row is None
                else f"{row.accuracy:.2f} vs majority {row.majority:.2f} "
                f"({row.accuracy - row.majority:+.2f})",
            }
        )
    part = s[(s.method == "fletcher_islam") & (s.epsilon == 1.0) & (s.n_classes == 2)]
    mean = part.auc.mean() if not part.empty else math.nan
    out.append(
        {
            "check": "fletcher_islam mean AUC over the binary datasets at ε=1 ≥ 87",
            "result": "N/A" if part.empty else ("PASS" if mean >= 87 else "FAIL"),
            "detail": "not run"
            if part.empty
            else f"{mean:.1f} over "
            + ", ".join(f"{d} {a:.1f}" for d, a in zip(part.dataset, part.auc, strict=True)),
        }
    )
    return out


def checks_markdown(results: pd.DataFrame) -> str:
    lines = ["| must hold | result | measured |", "|---|---|---|"]
    for c in checks(results):
        lines.append(f"| {c['check']} | **{c['result']}** | {c['detail']} |")
    return "\n".join(lines)


# --- machine --------------------------------------------------------------------------


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


# --- CLI ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DEFAULT_DATASETS))
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(DEFAULT_EPSILONS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--methods", nargs="+", default=None, help=f"default: all of {' '.join(all_methods())}"
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="stratified random subset of larger datasets (default: all rows)",
    )
    parser.add_argument("--seed", type=int, default=0, help="folds and public randomness")
    parser.add_argument("--jobs", type=int, default=1, help="folds run in parallel")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "utility.csv")
    parser.add_argument("--tables", type=Path, help="only print the tables of an existing CSV")
    args = parser.parse_args(argv)

    if args.tables is not None:
        results = pd.read_csv(args.tables, keep_default_na=True)
        print(overview_markdown(results) + "\n")
        print(to_markdown(results))
        print(checks_markdown(results))
        return 0

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    log(machine())
    start = time.perf_counter()
    datasets = [
        load_dataset(name, args.datasets_dir, args.max_rows, args.seed) for name in args.datasets
    ]
    results = run_benchmark(
        datasets,
        methods=args.methods,
        epsilons=args.epsilons,
        folds=args.folds,
        seed=args.seed,
        n_jobs=args.jobs,
        log=log,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results.to_csv(args.out, index=False)
    text = "\n\n".join(
        [overview_markdown(results), to_markdown(results), checks_markdown(results)]
    )
    args.out.with_suffix(".md").write_text(f"Machine: {machine()}\n\n" + text)
    print(text)
    log(f"done in {time.perf_counter() - start:.0f} s; wrote {args.out}; {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
