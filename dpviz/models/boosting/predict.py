"""A fitted DPBoost model at work: scores, class probabilities and the owner's diagnostics.

Privacy role: :func:`predict_proba` and its helpers read only the released
model (the trees' released leaf values, ``init_score_`` and ``tree_weight_``) and the
records being predicted: post-processing, no ε. ``diagnostics_`` reads the trees' TRUE
leaf counts and values: NOT private, for the data owner only, never part of a release.

The functions taking ``model`` read a fitted
:class:`~dpviz.models.boosting.estimator.DPBoostClassifier` (its ``models_``,
``init_score_``, ``tree_weight_``, ``prior_counts_``, ``reach_``, ``schema_``,
``classes_`` and the ``n_bins``, ``learning_rate`` and ``objective`` parameters), which
calls them from its members of the same names.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from dpviz.models.boosting.newton import probabilities
from dpviz.models.boosting.tree import tree_scores
from dpviz.models.objective import ACCURACY, decide, prior_from_counts
from dpviz.models.trees.edges import codes_at
from dpviz.tabular.encode import EncodedData
from dpviz.tabular.inputs import prediction_data


def model_codes(model: BaseEstimator, encoded: EncodedData) -> tuple[np.ndarray, np.ndarray]:
    """The records' codes as the fitted ``model`` cut them: at its released bin edges
    (grown model) or at its public equal-width bins. Post-processing."""
    return codes_at(encoded, model.schema_, model.n_bins_, getattr(model, "bin_edges_", None))


def scores_to_proba(scores: np.ndarray, loss: str = "square") -> np.ndarray:
    """Class probabilities from the parts' scores: one part (two classes) maps its score,
    clipped to [−1, 1], linearly to the positive class; more parts take a softmax. On
    the log-loss (``loss="logistic"``) one part is the log-odds (its sigmoid)."""
    if scores.shape[1] == 1 and loss == "logistic":
        positive = probabilities(scores)[:, 0]
        return np.stack([1 - positive, positive], axis=1)
    if scores.shape[1] == 1:
        positive = (np.clip(scores[:, 0], -1, 1) + 1) / 2
        return np.stack([1 - positive, positive], axis=1)
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def decision_scores(scores: np.ndarray, scale: float, loss: str = "square") -> np.ndarray:
    """Class scores on the probability scale for an ``objective``: each part's score
    over κ = ``scale`` (the share of E[y|x] the trees reach, :attr:`reach_`), mapped
    from [−1, 1] to [0, 1]; two classes: (1 − q, q). The scores estimate about
    κ·E[y|x] (with a prior-centred start: κ·p̂ plus the trees' κ·(E[y|x] − p̂)), so
    unlike :func:`scores_to_proba` these sit near the class shares, which the objective
    compares with the prior (a 6% class scores 0.06, not 0.47). A function of released
    scores and κ (public settings and the released prior): post-processing. On the
    log-loss (``loss="logistic"``) the scores are log-odds / logits, and these are the
    class probabilities (:func:`scores_to_proba`)."""
    if loss == "logistic":
        return scores_to_proba(scores, loss)
    q = np.clip((scores / (scale if scale > 0 else 1.0) + 1) / 2, 0.0, 1.0)
    if scores.shape[1] == 1:
        return np.stack([1 - q[:, 0], q[:, 0]], axis=1)
    return q


def leaf_diagnostics(leaf_records: list[tuple]) -> dict:
    """Leaf diagnostics from the TRUE leaf records (NOT private): sign flips of leaf
    values. ``leaf_records`` holds per tree (counts, clipped values, released values)."""
    counts = np.concatenate([c for c, _, _ in leaf_records])
    true = np.concatenate([v for _, v, _ in leaf_records])
    released = np.concatenate([r for _, _, r in leaf_records])
    nonempty = counts > 0
    flipped = np.sign(true) != np.sign(released)
    return {
        "n_leaves_total": float(len(counts)),
        "n_leaves_total_exact": True,
        "n_leaves_nonempty": int(nonempty.sum()),
        "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
        "flipped_leaf_pct": 100.0 * float(flipped[nonempty].mean()) if nonempty.any() else 0.0,
        "expected_flip_pct": float("nan"),
        "mean_smooth_sensitivity": float("nan"),
    }


def scores(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """Per part, ``init_score_ + tree_weight_ · η · Σ_t value_t[leaf_t(x)]``."""
    codes, _ = model_codes(model, encoded)
    raw = tree_scores(model.models_, codes, float(model.learning_rate_))
    return model.init_score_ + model.tree_weight_ * raw


def proba(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """Class probabilities of encoded records (:func:`scores_to_proba` of :func:`scores`)."""
    return scores_to_proba(scores(model, encoded), model.loss_)


def predict_proba(model: BaseEstimator, X) -> np.ndarray:
    """Class probabilities of the records ``X`` (post-processing)."""
    check_is_fitted(model, "models_")
    return proba(model, prediction_data(model, X))


def decision_prior(model: BaseEstimator) -> np.ndarray:
    """The class prior the ``objective`` weighs by: the released noisy class
    histogram, one added per class (:func:`~dpviz.models.objective.prior_from_counts`),
    or uniform and public without one (paper preset). Post-processing."""
    check_is_fitted(model, "models_")
    return prior_from_counts(model.prior_counts_, len(model.classes_))


def decision(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """Each record's class index under the ``objective`` (accuracy: the argmax of
    :func:`proba`; otherwise :func:`decision_scores` weighed against the model's
    ``decision_prior_``)."""
    if model.objective == ACCURACY:
        return np.argmax(proba(model, encoded), axis=1)
    weighed = decision_scores(scores(model, encoded), model.reach_, model.loss_)
    threshold = getattr(model, "decision_threshold_", None)
    return decide(weighed, model.decision_prior_, model.objective, threshold)


def predict(model: BaseEstimator, X) -> np.ndarray:
    """The most likely class, weighed by the ``objective`` (post-processing)."""
    check_is_fitted(model, "models_")
    return model.classes_[decision(model, prediction_data(model, X))]
