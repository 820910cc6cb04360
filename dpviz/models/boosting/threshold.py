"""DPBoost's macro-F1 threshold: a booked release of its training scores per class.

A forest's leaves release noisy class counts, so its own score-versus-class curve can
be read from the release (:mod:`dpviz.models.trees.threshold`). DPBoost's leaves release
values, not counts: it has no such curve. With ``objective="macro_f1"`` and two classes
the fit therefore books one more release: after the trees, each training record's
decision score q(x) (class 1's score on the probability scale,
:func:`~dpviz.models.boosting.predict.decision_scores`) falls into one of
:data:`BINS` equal-width bins between the lowest and the highest score the released
model can give (a public rule on released values), counted per class; the 2 × BINS
counts get exact discrete Laplace noise at ε_th = :data:`THRESHOLD_SHARE` of the
trees' budget. The threshold is the lower edge of the bin that maximises macro-F1 on
the posterior (deconvolved) counts (:func:`~dpviz.models.trees.threshold.posterior_counts`
and :func:`~dpviz.models.trees.threshold.best_threshold`), or
:data:`~dpviz.models.trees.threshold.NEVER` where the majority's answer scores best.

The small macro_f1 model (one tree of depth 2,
:data:`~dpviz.models.boosting.budget.SMALL_MACRO_F1`) counts the records per leaf of its
one tree instead (4 cells a class, not 2 × 64 mostly empty bins, at
:data:`SMALL_THRESHOLD_SHARE`), and the candidates are the leaves' released scores.

Privacy: the histogram has L1 sensitivity 1 under add/remove-one (a record adds one
to one bin or leaf of its class; the bins' edges, or the leaves, are a function of the
released trees, the released prior and public settings, fixed before the histogram is
read), so exact
discrete Laplace noise at ε_th makes it ε_th-DP, booked in the ledger after the trees
(sequential). The threshold is post-processing of that release and public ε_th. Other
objectives and more classes spend nothing here and draw no noise, so their models are
unchanged. Where the model's released tree weight is below :data:`MIN_TREE_WEIGHT` (it
answers about the prior's score), the histogram is not drawn: its ε_th stays booked,
unspent (a bound still), and the objective falls back to weighting by the prior.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from dpviz.models.boosting.budget import small_macro_f1
from dpviz.models.boosting.predict import decision_scores
from dpviz.models.boosting.tree import route, tree_scores
from dpviz.models.objective import MACRO_F1
from dpviz.models.trees.threshold import NEVER, best_threshold, posterior_counts

# The share of the trees' budget (ε − ε_prior − ε_edges) the score histogram spends.
# Chosen on the shared bank_marketing only (bench/README.md, "Issue 28: DPBoost's
# macro_f1 threshold from a booked release").
THRESHOLD_SHARE = 0.05
# The share in the small macro_f1 model (:data:`~dpviz.models.boosting.budget.SMALL_MACRO_F1`),
# whose one tree's leaves are few and large.
SMALL_THRESHOLD_SHARE = 0.25
# Below this tree weight (released: the prior and the held-out check's noisy count
# set it) the model answers about the prior's score and no histogram is drawn. The
# weight is either near 1 or near 0 (0.0016 at ε = 0.1 on bank_marketing), so any
# value between separates them.
MIN_TREE_WEIGHT = 0.5
# Public equal-width bins of the score range.
BINS = 64


def threshold_epsilon(model: BaseEstimator) -> float:
    """ε_th of the score histogram: :data:`THRESHOLD_SHARE` of what the prior and the
    bin edges leave, when ``objective="macro_f1"`` and the schema has two classes; else
    0 (public settings only)."""
    if getattr(model, "objective", None) != MACRO_F1 or not hasattr(model, "schema_"):
        return 0.0
    if len(model.schema_.classes) != 2:
        return 0.0
    rest = float(model.epsilon) - model.prior_epsilon_ - model.edge_epsilon_
    share = SMALL_THRESHOLD_SHARE if small_macro_f1(model) else THRESHOLD_SHARE
    return share * max(rest, 0.0)


def score_range(model: BaseEstimator) -> tuple[float, float]:
    """The lowest and highest decision score q the fitted two-class ``model`` can give:
    its init score plus its weight times η·Σ_t of each tree's lowest (highest) released
    leaf value, mapped as :func:`~dpviz.models.boosting.predict.decision_scores` maps a
    score. Post-processing of the released trees, prior and weight."""
    eta = float(model.learning_rate_)
    trees = model.models_[0]
    low = sum(float(np.min(t["value"])) for t in trees) * eta
    high = sum(float(np.max(t["value"])) for t in trees) * eta
    init, weight = float(model.init_score_[0]), float(model.tree_weight_[0])
    ends = np.array([[init + weight * low], [init + weight * high]])
    lo, hi = sorted(float(v) for v in class_one_scores(model, ends))
    return lo, hi


def class_one_scores(model: BaseEstimator, scores: np.ndarray) -> np.ndarray:
    """Class 1's decision score q of one part's ``scores`` (records, 1), as the model's
    objective weighs them (:func:`~dpviz.models.boosting.predict.decision_scores`, on
    the model's loss where it has one): monotone in the score. Post-processing."""
    loss = getattr(model, "loss_", "square")
    if loss == "square":
        return decision_scores(scores, model.reach_)[:, 1]
    return decision_scores(scores, model.reach_, loss)[:, 1]


def bin_edges(low: float, high: float, bins: int = BINS) -> np.ndarray:
    """``bins`` + 1 equal-width edges from ``low`` to ``high`` (a public rule)."""
    if not high > low:
        high = low + 1e-9
    return np.linspace(low, high, bins + 1)


def one_tree(model: BaseEstimator) -> bool:
    """Whether the model is one tree of one part (the small macro_f1 model): its
    histogram's cells are then the tree's 2^depth leaves (public sizes only)."""
    return model.n_estimators_ == 1 and model.n_outputs_ == 1


def histogram_cells(model: BaseEstimator) -> int:
    """How many cells the score histogram has per class: the one tree's 2^depth leaves,
    else :data:`BINS` (public)."""
    return 2**model.max_depth_ if one_tree(model) else BINS


def score_cells(model: BaseEstimator, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each record's cell of the score histogram, and each cell's class-1 score (the
    threshold's candidates). One tree: the record's leaf, and the leaf's score. More:
    the bin of its score q among :func:`bin_edges` of :func:`score_range`, and the
    bins' lower edges. The cells are a function of the released trees, prior and weight
    and of public settings (post-processing); the records only choose their cell."""
    eta = float(model.learning_rate_)
    init, weight = model.init_score_, model.tree_weight_
    if one_tree(model):
        tree = model.models_[0][0]
        leaf_scores = class_one_scores(model, init + weight * eta * tree["value"][:, None])
        return route(tree, codes), leaf_scores
    raw = tree_scores(model.models_, codes, eta)
    q = class_one_scores(model, init + weight * raw)
    edges = bin_edges(*score_range(model))
    cell = np.clip(np.searchsorted(edges, q, side="right") - 1, 0, len(edges) - 2)
    return cell, edges[:-1]


def noisy_score_histogram(cell, y, cells: int, epsilon: float, rng) -> np.ndarray:
    """The records' counts per cell (rows) and class (columns 0, 1) plus exact discrete
    Laplace noise at ``epsilon`` (L1 sensitivity 1: one record, one count).

    Privacy: ``epsilon``-DP given public (or released) cells; noise from ``rng``."""
    counts = np.zeros((cells, 2), dtype=np.int64)
    np.add.at(counts, (np.asarray(cell), np.asarray(y, dtype=np.int64)), 1)
    noise = np.asarray(rng.discrete_laplace(epsilon, 2 * cells), dtype=np.int64)
    return counts + noise.reshape(cells, 2)


def threshold_from_histogram(noisy: np.ndarray, scores: np.ndarray, epsilon: float) -> float:
    """The macro-F1 threshold: the class-1 score of the cell (a bin's lower edge, or a
    leaf's score) from which up "class 1" scores best on the posterior mean counts
    given the noisy ones, or :data:`NEVER` (majority). Post-processing of the released
    histogram, the cells' released scores and public ε."""
    weights = posterior_counts(np.asarray(noisy, dtype=np.float64), epsilon)
    return best_threshold(np.asarray(scores, dtype=np.float64)[: len(weights)], weights)


def fit_threshold(model: BaseEstimator, codes: np.ndarray, y: np.ndarray, rng) -> None:
    """Set ``decision_threshold_`` (None unless ε_th > 0 and the tree weight is at least
    :data:`MIN_TREE_WEIGHT`) and ``threshold_counts_`` (the
    released noisy histogram) of a fitted two-class ``model`` from its training
    records' ``codes`` and labels ``y``; draws noise from ``rng`` only when ε_th > 0."""
    eps = threshold_epsilon(model)
    model.decision_threshold_ = None
    model.threshold_counts_ = None
    if eps <= 0 or float(model.tree_weight_[0]) < MIN_TREE_WEIGHT:
        # The model answers (nearly) the prior's score: the trees' scores carry no
        # signal a threshold could use, so nothing is read (ε_th stays booked, unspent).
        return
    cell, scores = score_cells(model, codes)
    model.threshold_counts_ = noisy_score_histogram(cell, y, len(scores), eps, rng)
    model.decision_threshold_ = float(
        threshold_from_histogram(model.threshold_counts_, scores, eps)
    )


__all__ = [
    "BINS",
    "NEVER",
    "THRESHOLD_SHARE",
    "bin_edges",
    "class_one_scores",
    "fit_threshold",
    "histogram_cells",
    "one_tree",
    "score_cells",
    "noisy_score_histogram",
    "score_range",
    "threshold_epsilon",
    "threshold_from_histogram",
]
