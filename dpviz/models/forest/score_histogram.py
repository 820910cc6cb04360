"""The default forest's decision threshold from ε = 1 up: a booked histogram of the
checked records' out-of-bag scores, for the ``accuracy`` and ``balanced_accuracy`` (by
class) and ``macro_f1`` objectives.

Where the floor's out-of-bag check runs (:func:`~dpviz.models.forest.floor.check_applies`:
ε ≥ 1, disjoint trees, a prior), each release of a two-class count forest books one more
count: the checked records, each scored by every tree but its own as a new record would
be (the check's routing), fall into cells of class 1's score, counted with exact discrete
Laplace noise at :data:`SHARE`·ε taken from the leaves.

**accuracy** (the default objective). The forest ranks well but its scores sit below
class 1's share where the leaves are noisy, and the argmax (class 1 where its score
passes 0.5) then answers the majority too often: MAGIC at ε = 1 scored AUC 87.5 and
accuracy 73.8, where a cut on the same scores reaches 81–82. The histogram counts each
class apart in public cells (:data:`ACCURACY_EDGES`, every 0.25 in log-odds, 0.5 among
them), and the cut is the cell edge of largest noisy accuracy
Σ_{cells ≥ cut} c̃₁ + Σ_{cells < cut} c̃₀, used only where it beats the argmax's cut (0.5)
by :data:`CUT_Z` noise standard deviations of the difference (:func:`accuracy_cut`; the
cells between the two cuts, two counts each) and the floor trusted the trees; elsewhere
the argmax stands. Chosen on the shared sets and their stand-ins (bench/README.md, "the
default forest's accuracy cut").

**balanced_accuracy.** The same release, with one more public cell edge at class 1's
share π̂₁ of the released prior (where the prior-weighed argmax p̂₁/π̂₁ > p̂₀/π̂₀ cuts), and
the cut of largest noisy balanced accuracy ½(Σ_{≥ cut} c̃₁/ñ₁ + Σ_{< cut} c̃₀/ñ₀), used where
it beats the cut at π̂₁ by the same margin (:func:`balanced_cut`). The scores that sit
below class 1's share put the prior-weighed cut too high: on bank marketing at ε = 1 the
rule reached a balanced accuracy of 62.9 where a cut on the same scores reaches 79.9.

**macro_f1.** Below ε = 1 (and wherever this release does not apply) the threshold is
read from the released leaf counts alone (:func:`~dpviz.models.forest.voting.decision_threshold`:
synthetic records drawn from the leaves). On imbalanced data with little signal those
synthetic scores spread wider than real records' scores, and that threshold answers the
rare class for almost no record (caravan, 6% positives, at ε = 1: 0.0–0.5% of the test
records, at or below the majority's macro-F1 in both benchmark seeds). From ε = 1 the
histogram counts the checked records' scores (both classes together), and the rule
answers the rarer class for about :data:`TARGET` times its share p̂ of the records (p̂
from the released prior; :func:`target_share`), cutting at the cell edge where the noisy
counts come closest: under a binormal score the cut of largest macro-F1 answers the
rarer class for 1.0–1.3 × its share at every AUC from 0.5 to 0.9 (bench/README.md, "the
macro_f1 threshold kept to a window"), and even a ranking no better than chance then
beats the majority's macro-F1. The cells' edges are weighted quantiles of the release's
synthetic scores, finer near the cut. Chosen on the shared sets and their stand-ins
(bench/README.md, "the default forest's macro_f1 threshold from a booked score
histogram"): against the leaves' rule, and against a class × score histogram with the
curve's best cut, at ε = 1 and 10.

Privacy: the edges are public (accuracy) or a function of the released leaves and prior
and a public seed (macro_f1); a checked record's score reads only the released leaves of
the trees other than its own, and which records are checked is the public record hash
and a released count (:func:`~dpviz.models.forest.floor.out_of_bag_records`). Adding or
removing one record changes one cell's count by one: L1 sensitivity 1, so the noisy
histogram is ``SHARE``·ε-DP, booked in the ledger after the check (sequential: the same
records). The threshold is post-processing of it and the released prior.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.forest.floor import CHECK_RECORDS, check_applies
from dpviz.models.objective import ACCURACY, MACRO_F1
from dpviz.models.trees.prior import decimal_times
from dpviz.models.trees.threshold import NEVER
from dpviz.privacy.mechanisms import get_mechanism

# The share of ε the histogram spends (taken from the leaves).
SHARE = 0.05
# The share of the records the rule answers class 1 for, as a multiple of class 1's
# released share (1.25 measured above 1.0 at ε = 1 on the shared sets, equal at 10).
TARGET = 1.25
# Cells: weighted quantiles of the synthetic scores at k/BINS, and near the cut: at
# 1 − p̂·m (class 1 the rarer, share p̂) or (1 − p̂)·m (class 0 the rarer) for these m.
BINS = 32
TAIL = (3.0, 2.0, 1.5, 1.25, 1.1, 1.0, 0.9, 0.75, 0.5)
# The noise stream of the histogram within a release.
STREAM = 0xF2_0000
BALANCED = "balanced_accuracy"
# The objectives whose threshold the histogram sets, and those it counts per class for.
OBJECTIVES = (ACCURACY, BALANCED, MACRO_F1)
BY_CLASS = (ACCURACY, BALANCED)
# accuracy: the public cells' inner edges, every 0.25 in log-odds from −6 to 6 (0.5 at
# 0). A fixed grid, not the synthetic scores' quantiles: those left MAGIC's real scores
# from 0.2 to 0.5, 40% of the records and the best cut among them, in one cell
# (bench/README.md).
ACCURACY_EDGES = 1.0 / (1.0 + np.exp(-np.arange(-24, 25) / 4.0))
# accuracy: the cut must beat the argmax's by this many noise standard deviations. The
# best of about 50 noisy cuts is picked, so 2 let noise alone move the cut (votes at
# ε = 1 lost 1.5 points, a label-permuted MAGIC stand-in 0.3); 3.5 moved no
# label-permuted stand-in (bench/README.md).
CUT_Z = 3.5
# accuracy: booked only where the checked records (about min(n̂, CHECK_RECORDS), n̂ the
# declared or booked record count) times the histogram's ε reach this. The smallest gain
# the margin can show between neighbouring cuts is CUT_Z · 2/ε_h ≈ 7/ε_h records (two
# counts of sd √2/ε_h); below 350 that is more than 2% of the checked records, a cut
# almost never passes, and the leaves would pay 5% of ε for nothing (the validation run:
# breast cancer, 455 records, −2.1 accuracy points at ε = 1; bench/README.md).
CUT_RECORDS = 350.0


def applies(model) -> bool:
    """Whether ``model``'s releases book the histogram: an objective of
    :data:`OBJECTIVES`, two classes, noisy counts and the floor's check (ε ≥ 1, disjoint
    trees, a prior); for ``accuracy`` also records enough that a cut can show
    (:data:`CUT_RECORDS`). Public: the configuration and the declared or booked record
    count."""
    objective = getattr(model, "objective", None)
    if objective not in OBJECTIVES or len(model.classes_) != 2:
        return False
    if get_mechanism(model.mechanism).releases != "counts" or not check_applies(model):
        return False
    if objective not in BY_CLASS:
        return True
    n_hat = getattr(model, "depth_n_", None)
    checked = min(float(n_hat or 0), CHECK_RECORDS)
    return checked * histogram_epsilon(float(model.epsilon)) >= CUT_RECORDS


def by_class(model) -> bool:
    """Whether the histogram counts each class apart (the ``accuracy`` and
    ``balanced_accuracy`` objectives'). Public: the configuration."""
    return getattr(model, "objective", None) in BY_CLASS


def class_edges(objective: str, prior_share: float) -> np.ndarray:
    """The per-class histogram's inner edges: :data:`ACCURACY_EDGES`, and for
    ``balanced_accuracy`` also class 1's share π̂₁ of the released prior (with one count
    per class added, as the decision weighs it), where its prior-weighed argmax cuts.
    Public: a function of the released prior."""
    if objective != BALANCED:
        return ACCURACY_EDGES
    return np.unique(np.concatenate([ACCURACY_EDGES, [float(prior_share)]]))


def histogram_epsilon(epsilon: float) -> float:
    """ε of the histogram at a forest's ``epsilon``: :data:`SHARE`·ε. Public."""
    return decimal_times(SHARE, float(epsilon))


def cell_edges(scores: np.ndarray, weights: np.ndarray, share: float) -> np.ndarray:
    """The cells' inner edges: the distinct weighted quantiles of the synthetic records'
    class-1 ``scores`` (each of weight ``weights``: its class's estimated records per
    draw) at k/:data:`BINS` and, for m in :data:`TAIL`, at 1 − p̂·m where class 1 is the
    rarer (p̂ = ``share``, the released prior's class-1 share), else at (1 − p̂)·m.
    Post-processing of released values."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(scores, kind="stable")
    mass = np.cumsum(np.clip(np.asarray(weights, dtype=np.float64)[order], 0.0, None))
    if not len(mass) or mass[-1] <= 0:
        return np.zeros(0)
    share = float(share)
    rare = np.asarray(TAIL) * min(share, 1.0 - share)
    tail = 1.0 - rare if share <= 0.5 else rare
    levels = np.concatenate([np.arange(1, BINS) / BINS, tail[(tail > 0) & (tail < 1)]])
    at = np.searchsorted(mass / mass[-1], np.sort(levels))
    return np.unique(scores[order][np.clip(at, 0, len(order) - 1)])


def lower_edges(edges: np.ndarray) -> np.ndarray:
    """Each cell's lowest score (the threshold's candidates): 0, then the inner edges."""
    return np.concatenate([[0.0], edges])


def true_histogram(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """How many of the checked records' class-1 ``scores`` fall in each cell. TRUE
    counts: released only with noise."""
    cell = np.searchsorted(edges, np.asarray(scores, dtype=np.float64), side="right")
    return np.bincount(cell, minlength=len(edges) + 1).astype(np.int64)


def true_class_histogram(scores: np.ndarray, y: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(2, cells): how many of the checked records of class 0 and of class 1 (their TRUE
    classes ``y``) have their class-1 ``scores`` in each cell. TRUE counts: released only
    with noise."""
    cell = np.searchsorted(edges, np.asarray(scores, dtype=np.float64), side="right")
    y = np.asarray(y)
    return np.stack([np.bincount(cell[y == c], minlength=len(edges) + 1) for c in (0, 1)]).astype(
        np.int64
    )


def release_histogram(counts: np.ndarray, epsilon: float, noise) -> np.ndarray:
    """``counts`` plus exact discrete Laplace noise at ``epsilon`` each (one record
    changes one count by one: ε-DP)."""
    return counts + noise.discrete_laplace(epsilon, counts.size).reshape(counts.shape)


def target_share(share: float) -> float:
    """The share of the records the rule answers class 1 for, from class 1's released
    share p̂: :data:`TARGET`·p̂ where class 1 is the rarer class, else all but
    :data:`TARGET`·(1 − p̂) (macro-F1 weighs both classes alike: the rarer one gets the
    larger share). Public: a released share."""
    share = float(share)
    return TARGET * share if share <= 0.5 else 1.0 - TARGET * (1.0 - share)


def histogram_threshold(noisy: np.ndarray, edges: np.ndarray, share: float) -> float:
    """The lower edge of the cell from which the noisy counts (negatives as 0) put the
    share of the records closest to :func:`target_share` of class 1's released share
    ``share`` at or above it (the lowest such edge on ties), or
    :data:`~dpviz.models.trees.threshold.NEVER` where that target is 0 (the prior holds no
    class 1) or the counts hold no record. Never the majority's answer otherwise: even a
    ranking no better than chance beats the majority's macro-F1 at a cut that answers the
    rarer class for a few times its share. Post-processing of the released histogram and
    prior."""
    counts = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None)
    above = np.cumsum(counts[::-1])[::-1]
    target = target_share(share)
    if not above[0] > 0 or not target > 0:
        return NEVER
    gap = np.abs(above / above[0] - target)
    return float(lower_edges(edges)[int(np.argmin(gap))])


def count_variance(epsilon: float) -> float:
    """The variance of one count's exact discrete Laplace noise at ``epsilon``:
    2q/(1 − q)², q = e^(−ε). Public."""
    q = float(np.exp(-float(epsilon)))
    return 2.0 * q / (1.0 - q) ** 2


def balanced_cut(
    noisy: np.ndarray, edges: np.ndarray, epsilon: float, base: float
) -> float | None:
    """The ``balanced_accuracy`` objective's cut on class 1's score from the released
    (2, cells) histogram ``noisy``: the lower edge of largest noisy balanced accuracy
    ½(Σ_{cells ≥ cut} c̃₁ / ñ₁ + Σ_{cells < cut} c̃₀ / ñ₀), ñ_c the class's noisy total
    (at least 1), or None (the prior-weighed argmax, whose cut is ``base``, an edge)
    unless it beats the cut at ``base`` by :data:`CUT_Z` standard deviations of the
    difference (the noise of the cells between them, each class's count over its total).
    Post-processing of the released histogram and prior."""
    noisy = np.asarray(noisy, dtype=np.float64)
    totals = np.maximum(noisy.sum(axis=1), 1.0)
    lower = np.concatenate([lower_edges(edges), [NEVER]])
    above_1 = np.concatenate([np.cumsum(noisy[1][::-1])[::-1], [0.0]]) / totals[1]
    below_0 = np.concatenate([[0.0], np.cumsum(noisy[0])]) / totals[0]
    balanced = (above_1 + below_0) / 2.0
    at = int(np.flatnonzero(lower == base)[0])
    best = len(balanced) - 1 - int(np.argmax(balanced[::-1]))
    per_cell = count_variance(epsilon) * float(np.sum(1.0 / totals**2)) / 4.0
    spread = np.sqrt(abs(best - at) * per_cell)
    return float(lower[best]) if balanced[best] - balanced[at] > CUT_Z * spread else None


def accuracy_cut(noisy: np.ndarray, edges: np.ndarray, epsilon: float) -> float | None:
    """The ``accuracy`` objective's cut on class 1's score from the released (2, cells)
    histogram ``noisy`` of the checked records (cells split at ``edges``, 0.5 among them;
    noise at ``epsilon`` a count): the lower edge of the cell from which answering class
    1 has the largest noisy accuracy Σ_{cells ≥ cut} c̃₁ + Σ_{cells < cut} c̃₀ (0: class 1
    everywhere, :data:`~dpviz.models.trees.threshold.NEVER`: class 0 everywhere; the
    highest cut on ties), or None (the argmax, the cut at 0.5) unless that accuracy beats
    the cut at 0.5 by :data:`CUT_Z` standard deviations of the two sums' difference (the
    noise of the cells between them, two counts each). Post-processing of the released
    histogram."""
    noisy = np.asarray(noisy, dtype=np.float64)
    lower = np.concatenate([lower_edges(edges), [NEVER]])
    above_1 = np.concatenate([np.cumsum(noisy[1][::-1])[::-1], [0.0]])
    below_0 = np.concatenate([[0.0], np.cumsum(noisy[0])])
    accuracy = above_1 + below_0
    base = int(np.flatnonzero(lower == 0.5)[0])
    best = len(accuracy) - 1 - int(np.argmax(accuracy[::-1]))
    spread = np.sqrt(2.0 * abs(best - base) * count_variance(epsilon))
    return float(lower[best]) if accuracy[best] - accuracy[base] > CUT_Z * spread else None
