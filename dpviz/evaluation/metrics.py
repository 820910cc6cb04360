"""Classification metrics under the papers' conventions (SPEC §5).

A sweep scores hundreds of grid points per fold, and scikit-learn's input validation
costs more than the metric itself there; these are the same formulas on class
indices, checked against scikit-learn in the tests.
"""

from __future__ import annotations

import numpy as np


def positive_class(y_train: np.ndarray, n_classes: int) -> int:
    """The least frequent training class (lowest index on ties): the paper's positive case."""
    return int(np.argmin(np.bincount(y_train, minlength=n_classes)))


def _f1(true: np.ndarray, pred: np.ndarray) -> float:
    tp = np.count_nonzero(true & pred)
    denominator = np.count_nonzero(true) + np.count_nonzero(pred)
    return 0.0 if denominator == 0 else float(2.0 * tp / denominator)


def binary_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC as the Mann–Whitney statistic (ties count one half), as scikit-learn's.

    The positives' rank sum from one sort: each run of tied scores gets its average rank
    (a multiple of 1/2, exact in float64), as ``scipy.stats.rankdata`` gives it, without
    its input checks (a sweep scores hundreds of points per fold)."""
    positive = np.asarray(positive, dtype=bool)
    n_pos = np.count_nonzero(positive)
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return np.nan
    score = np.asarray(score, dtype=np.float64)
    order = np.argsort(score)  # ties share one average rank: any order
    ordered = score[order]
    # Runs of equal scores: [start, end) in sorted order; average rank (start + end + 1)/2.
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    ends = np.append(starts[1:], len(ordered))
    below = np.concatenate(([0], np.cumsum(positive[order], dtype=np.int64)))
    in_run = below[ends] - below[starts]
    rank_sum = float(np.dot(in_run, (starts + ends + 1) / 2.0))
    return float((rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _predicted_classes(y_pred: np.ndarray) -> np.ndarray:
    """``np.unique(y_pred)``: from a count of each class index when they are
    non-negative integers (a tenth of the sort's time on 10,000 predictions, paid at
    every sweep point)."""
    y_pred = np.asarray(y_pred)
    if y_pred.ndim == 1 and y_pred.dtype.kind in "iu" and (not len(y_pred) or y_pred.min() >= 0):
        return np.flatnonzero(np.bincount(y_pred)).astype(y_pred.dtype)
    return np.unique(y_pred)


def score(
    y_true: np.ndarray,
    proba: np.ndarray,
    y_train: np.ndarray,
    n_classes: int,
    y_pred: np.ndarray | None = None,
    positive: int | None = None,
) -> dict[str, float]:
    """Accuracy, F1, ROC AUC and macro F1 of class-index predictions from vote fractions.

    ``y_pred``: the class indices the model predicts (its ``objective``'s decision,
    :mod:`dpviz.models.objective`); None is the argmax of ``proba``. Accuracy, F1 and
    macro F1 score ``y_pred``; AUC ranks ``proba``.

    Binary labels: F1 and AUC with the least frequent training class as positive.
    More classes: macro F1 over all classes and macro one-vs-rest AUC over the classes
    present in ``y_true`` (NaN when fewer than two are present). ``macro_f1`` is the
    unweighted mean of every class's F1 for any number of classes (for more than two it
    equals ``f1``). ``one_class`` says whether the predictions hold a single class, and
    ``only_class`` is that class's index (-1 when several classes are predicted).
    ``positive``: :func:`positive_class` of ``y_train``, when the caller has it already
    (a sweep scores hundreds of points on one training fold).
    """
    if y_pred is None:
        y_pred = np.argmax(proba, axis=1)
    out = {"accuracy": float(np.mean(y_pred == y_true))}
    f1s = [_f1(y_true == c, y_pred == c) for c in range(n_classes)]
    macro = float(np.mean(f1s))
    predicted = _predicted_classes(y_pred)
    flags = {
        "macro_f1": macro,
        "one_class": bool(len(predicted) == 1),
        "only_class": int(predicted[0]) if len(predicted) == 1 else -1,
    }
    if n_classes == 2:
        pos = positive_class(y_train, n_classes) if positive is None else int(positive)
        out["f1"] = f1s[pos]  # the positive class's F1, computed for the macro F1
        out["auc"] = binary_auc(y_true == pos, proba[:, pos])
        return {**out, **flags}
    out["f1"] = macro
    present = np.unique(y_true)
    if len(present) < 2:
        out["auc"] = np.nan
        return {**out, **flags}
    sub = proba[:, present]
    if len(present) < n_classes:
        # Renormalising rows that already sum to one would break exact ties by rounding.
        sums = sub.sum(axis=1, keepdims=True)
        sub = np.divide(sub, sums, out=np.full_like(sub, 1.0 / len(present)), where=sums > 0)
    out["auc"] = float(
        np.mean([binary_auc(y_true == c, sub[:, i]) for i, c in enumerate(present)])
    )
    return {**out, **flags}


# The metrics a trivial baseline is reported for (its flags are known: one class).
BASELINE_METRICS = ("accuracy", "f1", "auc", "macro_f1")


def majority_score(y_true: np.ndarray, y_train: np.ndarray, n_classes: int) -> dict[str, float]:
    """The trivial baseline of a fold, scored by :func:`score`: every test record gets the
    training fold's class shares as its probabilities, so the prediction is always the
    training majority (lowest index on ties), as scikit-learn's
    ``DummyClassifier(strategy="prior")``.

    Its accuracy is the test share of that class; with two classes its F1 is 0 (the
    positive class is the least frequent one, never predicted) and its AUC 0.5 (every
    score ties); with more classes its macro F1 is that class's F1 over ``n_classes``
    and its macro AUC 0.5. A model must beat these numbers to have learnt anything.
    Returns the :data:`BASELINE_METRICS` of :func:`score`.
    """
    y_train = np.asarray(y_train)
    shares = np.bincount(y_train, minlength=n_classes)[:n_classes] / max(1, len(y_train))
    proba = np.tile(shares.astype(np.float64), (len(y_true), 1))
    out = score(np.asarray(y_true), proba, y_train, n_classes)
    return {m: out[m] for m in BASELINE_METRICS}
