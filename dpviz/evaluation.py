"""Cross-validated evaluation of one configuration (SPEC §5)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import numpy as np
from sklearn.model_selection import RepeatedStratifiedKFold

from .data import EncodedData
from .forest import DPRandomForestClassifier
from .metrics import score
from .schema import Schema

MIN_FOLDS, MAX_FOLDS = 2, 20


def subset(encoded: EncodedData, rows: np.ndarray) -> EncodedData:
    return EncodedData(
        encoded.continuous[rows], encoded.discrete[rows], encoded.y[rows], encoded.report
    )


def check_folds(encoded: EncodedData, folds: int, repeats: int) -> None:
    if not MIN_FOLDS <= folds <= MAX_FOLDS:
        raise ValueError(f"folds must be between {MIN_FOLDS} and {MAX_FOLDS}, got {folds}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    present = np.bincount(encoded.y)
    present = present[present > 0]
    if len(present) < 2:
        raise ValueError("the data holds only one class; a classifier needs at least two")
    if len(encoded.y) < 2 * folds:
        raise ValueError(f"{len(encoded.y)} records are too few for {folds} folds; lower --folds")


def cross_validate(
    encoded: EncodedData,
    schema: Schema,
    *,
    epsilon: float,
    n_estimators: int = 100,
    depth: str | int = "theorem2",
    mechanism: str = "permute_flip",
    data_split: str = "disjoint",
    folds: int = 5,
    repeats: int = 1,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> dict:
    """Repeated stratified k-fold evaluation: metrics (mean ± std) and leaf diagnostics.

    Diagnostics (empty / flipped leaves, sensitivities) come from the raw data and are
    NOT private; the privacy entry is the trained model's ledger.
    """
    DPRandomForestClassifier(
        epsilon=epsilon,
        n_estimators=n_estimators,
        depth=depth,
        mechanism=mechanism,
        data_split=data_split,
    )._validate_params()
    check_folds(encoded, folds, repeats)
    # A class rarer than the fold count (Nursery's 2 'recommend' records) is spread over
    # as many folds as it has records; scikit-learn warns and carries on, and so do we.
    splitter = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    k = len(schema.classes)
    rows = []
    total = folds * repeats
    model = None
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="The least populated class", category=UserWarning
        )
        splits = list(splitter.split(encoded.continuous, encoded.y))
    for i, (train, test) in enumerate(splits):
        model = DPRandomForestClassifier(
            epsilon=epsilon,
            n_estimators=n_estimators,
            depth=depth,
            mechanism=mechanism,
            data_split=data_split,
            random_state=seed * 1_000_003 + i,
        )
        start = time.perf_counter()
        model.fit_encoded(subset(encoded, train), schema)
        fit_seconds = time.perf_counter() - start
        test_data = subset(encoded, test)
        proba = model._votes(test_data)
        proba = proba / np.maximum(proba.sum(axis=1, keepdims=True), 1e-300)
        metrics = score(test_data.y, proba, encoded.y[train], k)
        diag = model.diagnostics_
        rows.append({**metrics, **diag, "fit_seconds": fit_seconds})
        if progress is not None:
            progress(i + 1, total, f"fold {i + 1} of {total}")

    def stat(name):
        values = np.array([r[name] for r in rows], dtype=np.float64)
        return {"mean": float(np.nanmean(values)), "std": float(np.nanstd(values))}

    def mean(name):
        return float(np.nanmean([r[name] for r in rows]))

    ledger = model.ledger_
    return {
        "accuracy": stat("accuracy"),
        "auc": stat("auc"),
        "f1": stat("f1"),
        "empty_leaf_pct": mean("empty_leaf_pct"),
        "flipped_leaf_pct": mean("flipped_leaf_pct"),
        "expected_flip_pct": mean("expected_flip_pct"),
        "mean_smooth_sensitivity": mean("mean_smooth_sensitivity"),
        "depth": int(model.depth_),
        "fit_seconds": mean("fit_seconds"),
        "privacy": {
            "epsilon_total": ledger.epsilon_total,
            "private": ledger.private,
            "summary": ledger.describe(),
        },
        "folds": folds,
        "repeats": repeats,
        "n_records": int(encoded.n_records),
        "mechanism": mechanism,
        "n_estimators": n_estimators,
        "data_split": data_split,
        "epsilon": float(epsilon),
    }
