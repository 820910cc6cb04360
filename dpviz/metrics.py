"""Classification metrics under the papers' conventions (SPEC §5)."""

from __future__ import annotations

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score


def positive_class(y_train: np.ndarray, n_classes: int) -> int:
    """The least frequent training class (lowest index on ties): the paper's positive case."""
    return int(np.argmin(np.bincount(y_train, minlength=n_classes)))


def score(
    y_true: np.ndarray, proba: np.ndarray, y_train: np.ndarray, n_classes: int
) -> dict[str, float]:
    """Accuracy, F1 and ROC AUC of class-index predictions from vote fractions.

    Binary labels: F1 and AUC with the least frequent training class as positive.
    More classes: macro F1 and macro one-vs-rest AUC over the classes present in
    ``y_true`` (AUC is NaN when fewer than two classes are present).
    """
    y_pred = np.argmax(proba, axis=1)
    out = {"accuracy": float(accuracy_score(y_true, y_pred))}
    if n_classes == 2:
        pos = positive_class(y_train, n_classes)
        out["f1"] = float(f1_score(y_true == pos, y_pred == pos, zero_division=0))
        both = len(np.unique(y_true)) == 2
        out["auc"] = float(roc_auc_score(y_true == pos, proba[:, pos])) if both else np.nan
        return out
    labels = np.arange(n_classes)
    out["f1"] = float(f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0))
    present = np.unique(y_true)
    if len(present) < 2:
        out["auc"] = np.nan
    else:
        sub = proba[:, present]
        sums = sub.sum(axis=1, keepdims=True)
        sub = np.divide(sub, sums, out=np.full_like(sub, 1.0 / len(present)), where=sums > 0)
        if len(present) == 2:
            out["auc"] = float(roc_auc_score(y_true == present[1], sub[:, 1]))
        else:
            out["auc"] = float(
                roc_auc_score(y_true, sub, multi_class="ovr", average="macro", labels=present)
            )
    return out
