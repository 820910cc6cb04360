"""A fitted greedy tree at work: routing records to leaves, and the data owner's leaf reports.

Privacy role: :func:`leaf_of` and :func:`leaf_proba` read only the released tree (its
splits and the leaves' predicted shares) and the records being predicted: post-
processing, no ε. :func:`leaf_diagnostics` and :func:`leaf_report` read the leaves'
TRUE counts: they are NOT private, for the data owner only, never part of a release.

The functions taking ``model`` read a fitted
:class:`~dpviz.models.greedy.estimator.DPDecisionTreeClassifier` (its ``feature_``,
``first_child_``, ``node_depth_``, ``leaf_nodes_``, ``leaf_proba_``, ``leaf_counts_``,
``leaf_labels_``, ``leaf_epsilon_``, ``schema_``, ``classes_``, ``bin_edges_`` and the
``n_bins`` parameter), which calls them from its members of the same names.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from dpviz.models.objective import ACCURACY, MACRO_F1, decide, prior_from_counts
from dpviz.models.trees.edges import codes_at
from dpviz.models.trees.threshold import NEVER, best_threshold
from dpviz.privacy.mechanisms import get_mechanism, is_majority
from dpviz.tabular.encode import EncodedData
from dpviz.tabular.inputs import prediction_data


def leaf_of(
    codes: np.ndarray, feature: np.ndarray, first_child: np.ndarray, depth: int
) -> np.ndarray:
    """The leaf node of each record (rows of ``codes``, see ``bin_codes``) in a tree of
    at most ``depth`` levels; -1 where an unknown discrete value stops it."""
    node = np.zeros(len(codes), dtype=np.int64)
    active = np.arange(len(codes))
    for _ in range(depth + 1):
        f = feature[node[active]]
        active = active[f >= 0]
        if len(active) == 0:
            break
        value = codes[active, feature[node[active]]]
        unknown = value < 0
        node[active[unknown]] = -1
        active, value = active[~unknown], value[~unknown]
        node[active] = first_child[node[active]] + value
    return node


def leaf_proba(node: np.ndarray, leaf_nodes: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """The predicted class shares of records at leaf ``node`` (``shares``: one row per
    leaf of ``leaf_nodes``); a record stopped by an unknown value (-1) abstains
    (uniform), as in an exported model. The shares are normalised again here exactly as
    a released model normalises its leaf outputs (clip at 0, divide by the sum), so both
    give the same floats."""
    leaf = np.minimum(np.searchsorted(leaf_nodes, node), len(leaf_nodes) - 1)
    output = np.clip(shares[leaf], 0.0, None)
    output[node < 0] = 0.0
    total = output.sum(axis=1, keepdims=True)
    k = output.shape[1]
    return np.divide(output, total, out=np.full_like(output, 1.0 / k), where=total > 0)


def exact_flip_probability(counts: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Exact Laplace flip probability of each row of ``counts`` at its own ε (a leaf
    closed early has a larger ε than ε'); equal rows share one computation."""
    mech = get_mechanism("laplace_counts")
    out = np.zeros(len(counts))
    for value in np.unique(eps):
        rows = np.flatnonzero(eps == value)
        unique, inverse = np.unique(counts[rows], axis=0, return_inverse=True)
        flip = mech.flip_probability(unique, float(value))
        out[rows] = flip[inverse.reshape(-1)]
    return out


def leaf_diagnostics(counts: np.ndarray, labels: np.ndarray, eps: np.ndarray) -> dict:
    """Leaf diagnostics from the TRUE ``counts`` (NOT private), as the forest reports
    them: ``labels`` the released label of each leaf, ``eps`` the ε of its counts."""
    nonempty = counts.sum(axis=1) > 0
    flipped = ~is_majority(counts)[np.arange(len(counts)), labels]
    flip = np.zeros(len(counts))
    flip[nonempty] = exact_flip_probability(counts[nonempty], eps[nonempty])
    return {
        "n_leaves_total": float(len(counts)),
        "n_leaves_total_exact": True,
        "n_leaves_nonempty": int(nonempty.sum()),
        "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
        "flipped_leaf_pct": 100.0 * float(flipped[nonempty].mean()) if nonempty.any() else 0.0,
        "expected_flip_pct": 100.0 * float(flip[nonempty].mean()) if nonempty.any() else 0.0,
        "mean_smooth_sensitivity": float("nan"),
    }


def leaf_report(
    counts: np.ndarray, labels: np.ndarray, eps: np.ndarray, depth: np.ndarray, classes
) -> pd.DataFrame:
    """One row per leaf from the TRUE ``counts`` (NOT private, for the data owner):
    ``depth`` of each leaf, its released label, ε and the public class list."""
    names = [str(c) for c in classes]
    flipped = ~is_majority(counts)[np.arange(len(counts)), labels]
    return pd.DataFrame(
        {
            "tree": 1,
            "depth": depth,
            "n_records": counts.sum(axis=1),
            **{f"count[{c}]": counts[:, i] for i, c in enumerate(names)},
            "released_label": np.asarray(names, dtype=object)[labels],
            "true_majority": np.asarray(names, dtype=object)[np.argmax(counts, axis=1)],
            "flipped": flipped & (counts.sum(axis=1) > 0),
            "flip_probability": exact_flip_probability(counts, eps),
            "empty": counts.sum(axis=1) == 0,
        }
    )


def model_codes(model: BaseEstimator, encoded: EncodedData) -> tuple[np.ndarray, np.ndarray]:
    """Every feature of ``encoded`` as the tree's codes, and each feature's number of codes:
    continuous features cut at the model's released bin edges (``bin_edges_``:
    post-processing of its booked noisy histograms) or, without them, at ``n_bins``
    equal widths of the public domain."""
    return codes_at(encoded, model.schema_, model.n_bins, getattr(model, "bin_edges_", None))


def record_leaves(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """The leaf node of each record of a fitted tree ``model``; -1 where an unknown
    discrete value stops it (:func:`leaf_of` of its codes, :func:`model_codes`)."""
    codes, _ = model_codes(model, encoded)
    return leaf_of(codes, model.feature_, model.first_child_, int(model.node_depth_.max()))


def proba(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """The leaf's predicted class shares (``leaf_proba_``; see :func:`leaf_proba`)."""
    return leaf_proba(record_leaves(model, encoded), model.leaf_nodes_, model.leaf_proba_)


def decision_prior(model: BaseEstimator) -> np.ndarray:
    """The class prior the ``objective`` weighs the leaves' shares by: the root's
    released noisy class counts (``max_depth="auto"`` without ``declared_n``), else
    the sum of the leaves' released noisy counts (every record reaches one leaf),
    one added per class (:func:`~dpviz.models.objective.prior_from_counts`).
    Post-processing of released counts only."""
    check_is_fitted(model, "feature_")
    root = np.flatnonzero(model.counted_nodes_ == 0)
    if len(root):
        counts = model.counted_noisy_counts_[root[0]]
    else:
        counts = model.leaf_noisy_counts_.sum(axis=0)
    return prior_from_counts(counts, len(model.classes_))


def decision_threshold(model: BaseEstimator) -> float | None:
    """The ``macro_f1`` objective's threshold on class 1's share (two classes; None
    otherwise): each leaf is an atom of the tree's score-versus-class curve — its
    released share, and its released noisy counts as the records of each class that
    get it — and the threshold is the one of largest macro-F1 on that curve
    (:func:`~dpviz.models.trees.threshold.best_threshold`; exact for the released counts).
    Where the leaves' noisy counts sum to ≤ 0 for a class, the prior's class everywhere
    (0.0 for class 1, :data:`~dpviz.models.trees.threshold.NEVER` for class 0).
    Post-processing of released counts only."""
    check_is_fitted(model, "feature_")
    if model.objective != MACRO_F1 or len(model.classes_) != 2:
        return None
    if (model.leaf_noisy_counts_.sum(axis=0) <= 0).any():
        # The leaves' noisy counts hold no record of one class (tiny ε): their curve
        # says nothing, and best_threshold's "never class 1" would answer class 0
        # everywhere even where class 0 is the rare one. Answer the prior's class.
        return 0.0 if int(np.argmax(model.decision_prior_)) == 1 else NEVER
    scores = leaf_proba(model.leaf_nodes_, model.leaf_nodes_, model.leaf_proba_)[:, 1]
    return best_threshold(scores, model.leaf_noisy_counts_)


def answers_one_class(model: BaseEstimator) -> bool:
    """Whether the ``macro_f1`` threshold (:func:`decision_threshold`) answers one class
    at every leaf: :data:`~dpviz.models.trees.threshold.NEVER` (class 0 everywhere), or a
    threshold at or below every leaf's class-1 share (class 1 everywhere, where class 1
    is the majority). False without a threshold. Post-processing of released values."""
    threshold = decision_threshold(model)
    if threshold is None:
        return False
    shares = leaf_proba(model.leaf_nodes_, model.leaf_nodes_, model.leaf_proba_)[:, 1]
    return threshold == NEVER or bool(threshold <= shares.min())


def decision(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """Each record's class index: the leaf's shares weighed by the ``objective``
    (:func:`~dpviz.models.objective.decide`; accuracy: their argmax)."""
    shares = proba(model, encoded)
    if model.objective == ACCURACY:
        return np.argmax(shares, axis=1)
    return decide(shares, model.decision_prior_, model.objective, decision_threshold(model))


def predict_proba(model: BaseEstimator, X) -> np.ndarray:
    """The leaf's class shares of the records ``X`` (post-processing)."""
    check_is_fitted(model, "feature_")
    return proba(model, prediction_data(model, X))


def predict(model: BaseEstimator, X) -> np.ndarray:
    """The leaf's most likely class, weighed by the ``objective`` (post-processing)."""
    check_is_fitted(model, "feature_")
    return model.classes_[decision(model, prediction_data(model, X))]


def model_diagnostics(model: BaseEstimator) -> dict:
    """Leaf diagnostics from the raw data (NOT private), as the forest reports them."""
    return leaf_diagnostics(model.leaf_counts_, model.leaf_labels_, model.leaf_epsilon_)


def model_leaf_table(model: BaseEstimator) -> pd.DataFrame:
    """One row per leaf, from the raw data: NOT private, for the data owner."""
    depth = model.node_depth_[model.leaf_nodes_]
    counts, labels, eps = model.leaf_counts_, model.leaf_labels_, model.leaf_epsilon_
    return leaf_report(counts, labels, eps, depth, model.schema_.classes)
