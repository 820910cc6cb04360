"""Classification metrics under the papers' conventions (SPEC §5).

A sweep scores hundreds of grid points per fold, and scikit-learn's input validation
costs more than the metric itself there; these are the same formulas on class
indices, checked against scikit-learn in the tests.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def positive_class(y_train: np.ndarray, n_classes: int) -> int:
    """The least frequent training class (lowest index on ties): the paper's positive case."""
    return int(np.argmin(np.bincount(y_train, minlength=n_classes)))


def _f1(true: np.ndarray, pred: np.ndarray) -> float:
    tp = np.count_nonzero(true & pred)
    denominator = np.count_nonzero(true) + np.count_nonzero(pred)
    return 0.0 if denominator == 0 else 2.0 * tp / denominator


def binary_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC as the Mann–Whitney statistic (ties count one half), as scikit-learn's."""
    n_pos = np.count_nonzero(positive)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.nan
    ranks = rankdata(score)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def score(
    y_true: np.ndarray, proba: np.ndarray, y_train: np.ndarray, n_classes: int
) -> dict[str, float]:
    """Accuracy, F1 and ROC AUC of class-index predictions from vote fractions.

    Binary labels: F1 and AUC with the least frequent training class as positive.
    More classes: macro F1 over all classes and macro one-vs-rest AUC over the classes
    present in ``y_true`` (NaN when fewer than two are present).
    """
    y_pred = np.argmax(proba, axis=1)
    out = {"accuracy": float(np.mean(y_pred == y_true))}
    if n_classes == 2:
        pos = positive_class(y_train, n_classes)
        out["f1"] = _f1(y_true == pos, y_pred == pos)
        out["auc"] = binary_auc(y_true == pos, proba[:, pos])
        return out
    out["f1"] = float(np.mean([_f1(y_true == c, y_pred == c) for c in range(n_classes)]))
    present = np.unique(y_true)
    if len(present) < 2:
        out["auc"] = np.nan
        return out
    sub = proba[:, present]
    if len(present) < n_classes:
        # Renormalising rows that already sum to one would break exact ties by rounding.
        sums = sub.sum(axis=1, keepdims=True)
        sub = np.divide(sub, sums, out=np.full_like(sub, 1.0 / len(present)), where=sums > 0)
    out["auc"] = float(
        np.mean([binary_auc(y_true == c, sub[:, i]) for i, c in enumerate(present)])
    )
    return out
