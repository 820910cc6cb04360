"""The greedy trees' floor: a signal test on the released leaf counts, and the fall-back.

Where the data carry no signal, a greedy tree at large ε still splits (the exponential
mechanism picks the best-looking split of chance differences) and labels each leaf with
its own majority, which on new records is right less often than the majority class:
1,250 records at 52 / 48% without signal (a label-permuted magic_gamma, smarket's shape)
put Friedman–Schuster 1.6 points and DPEA 2.2 points below the majority at ε = 10
(bench/README, "Issue 28: the greedy trees' floor"). The hierarchical fallback
(:func:`~dpviz.models.greedy.leaves.smooth_shares`) shrinks each depth's nodes against
their noise and sampling, but its heterogeneity estimate per depth keeps the chance
differences of a depth whose nodes stand out by chance; this test asks of the whole tree
whether any depth stands out beyond what the splits' selection gives.

**The test.** Take a partition of the records into groups of released noisy counts c̃_g
(k classes, n̂_g = Σ c̃_g, not clipped), X the groups' spread around their pooled shares
beyond their noise, s the mean sampling alone gives X without signal and σ X's spread
then (:func:`~dpviz.models.trees.floor.partition_terms`, which Private-RDT's floor reads
too; h-floor2's statistic clipped n̂_g at 0 and left out each group's weight in the
pooled shares, both overstating X where the noise is large: bench/README "the greedy
floor's statistic without the clip"). The splits were chosen where the records looked
most unlike, which inflates s by a factor the selection allowance S =
:data:`FLOOR_SELECTION` covers: a partition passes when X ≥ S·s + z·σ. The partitions
are the tree's depths (the records grouped by their node at depth d; a leaf above d is
its own group): the leaves' with z =
:data:`FLOOR_Z`, the coarser ones with z = :data:`FLOOR_INNER_Z`. The tree is trusted
when any passes — a clear first split counts even where the leaves below it hold two
records each (continuous features at 8 bins, depth 3, 1,000 records). On label-permuted
shared sets at ε = 1 and 10 the leaves' X/s stayed within 0.2–2.3 per fit; trees with
signal on the shared sets and their 400–1,250-record subsamples reach 2–2,000
(bench/README).

**The fall-back.** If the test fails the tree answers its root's class for every
record, with :func:`~dpviz.models.trees.floor.floor_scores` of the root's shares π̂ (the
hierarchical fallback's, :func:`~dpviz.models.greedy.leaves.node_shares`): each leaf's
shares become (1 − w)·π̂ + w·p̂_l, so every class's ranking of the records, and AUC, is
the tree's.

**Privacy.** Post-processing only: the test reads the released noisy leaf counts and
their public ε, the fall-back the released counts the root's shares come from (and the
released report-noisy-max class below ε = 0.8). No ε, no ledger entry, no new field in
a file (the leaves' outputs carry the fall-back scores). Public values decide where it
applies: ``objective="accuracy"`` (the other objectives weigh the shares by the prior or
a threshold; the fall-back scores would not change their decisions and they keep their
own rules), ``fallback="hierarchical"`` (``"none"`` is the papers' rule) and a tree with
at least two leaves.

Constants chosen on the 11 shared datasets and stand-ins made from them only.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import discrete_laplace_variance, node_shares
from dpviz.models.objective import ACCURACY
from dpviz.models.trees.floor import FloorOutcome, floor_scores, partition_terms

# S: how much more than sampling alone the groups of a tree grown on data without signal
# spread (its splits were chosen where the records looked most unlike). Chosen on
# label-permuted shared sets, shared sets' subsamples and synthetic data (bench/README
# "Issue 28: the greedy trees' floor"): 1.5 let a third more of the smarket-shaped
# stand-in's runs through.
FLOOR_SELECTION = 2.0
# z: standard deviations of the statistic's spread under no signal added to the bar, for
# the leaves' partition and for the coarser partitions above them (each node's split the
# best of many: without signal their statistic strays further; up to 1.6 at S = 1.5 on
# the stand-ins where the leaves' stayed below 1.3 at ε = 10).
FLOOR_Z = 1.0
FLOOR_INNER_Z = 2.0

__all__ = [
    "FLOOR_INNER_Z",
    "FLOOR_SELECTION",
    "FLOOR_Z",
    "apply_floor",
    "floor_outcome",
    "floor_applies",
    "leaf_signal",
    "partition_signal",
]


def floor_applies(objective: str, fallback: str, n_leaves: int) -> bool:
    """Whether a greedy tree runs the floor's test: ``objective="accuracy"``,
    ``fallback="hierarchical"`` and at least two leaves. Public: settings and the
    released tree."""
    return objective == ACCURACY and fallback == "hierarchical" and n_leaves >= 2


def partition_signal(
    counts: np.ndarray, variance: np.ndarray, z: float = FLOOR_Z
) -> tuple[float, float]:
    """(X, the bar X must reach) for a partition of the records into groups of released
    noisy ``counts`` (one row per group) whose every count has noise of ``variance``
    (one per group): the groups' spread around their pooled shares beyond their noise,
    and S·s + ``z``·σ (module docstring). Nothing is clipped before the deviations:
    a group's n̂ = Σ c̃ may be negative (a group of pure noise), and the shares p pool
    the groups' counts as released (clipped at 0 per class only once pooled), so the
    noise's mean is the one subtracted (to first order in the noise;
    :func:`~dpviz.models.trees.floor.partition_terms`). Post-processing."""
    excess, sampling, spread = partition_terms(counts, variance, FLOOR_SELECTION)
    return excess, sampling + z * spread


def leaf_signal(tree: GrownTree, noisy: np.ndarray) -> tuple[float, float]:
    """(X, the bar) of the depth whose partition stands out most: for each depth d the
    records are grouped by their node at depth d (a leaf above d is its own group; a
    group's counts are the sum of its leaves' released counts, their noise variances
    added) and :func:`partition_signal` is taken, with z = :data:`FLOOR_Z` for the
    leaves' partition and :data:`FLOOR_INNER_Z` above it; the depth of largest X − bar is
    returned. A signal in one early split thus counts even where the leaves below it are
    small. Post-processing of the released counts, their public ε and the tree."""
    noisy = np.asarray(noisy, dtype=np.float64)
    variance = discrete_laplace_variance(tree.leaf_epsilon)
    node = np.asarray(tree.leaf_nodes).copy()
    depth = np.asarray(tree.node_depth)[node]
    best = None
    deepest = int(depth.max())
    for level in range(deepest, 0, -1):
        # Lift every leaf deeper than ``level`` to its ancestor at ``level``.
        deep = depth > level
        node[deep] = tree.parent[node[deep]]
        depth = np.where(deep, depth - 1, depth)
        groups, index = np.unique(node, return_inverse=True)
        k = noisy.shape[1]
        counts = np.zeros((len(groups), k))
        np.add.at(counts, index, noisy)
        summed = np.bincount(index, weights=variance, minlength=len(groups))
        z = FLOOR_Z if level == deepest else FLOOR_INNER_Z
        excess, bar = partition_signal(counts, summed, z)
        if best is None or excess - bar > best[0] - best[1]:
            best = (excess, bar)
    return best


def apply_floor(
    tree: GrownTree,
    noisy: np.ndarray,
    proba: np.ndarray,
    root_class: int | None,
) -> tuple[np.ndarray, np.ndarray | None, float, float]:
    """(the leaves' shares, their labels or None, X, the bar): ``proba`` unchanged and
    None when the leaves pass :func:`leaf_signal`'s test; else the fall-back scores
    :func:`~dpviz.models.trees.floor.floor_scores` of ``proba`` around the root's
    shares (:func:`~dpviz.models.greedy.leaves.node_shares` with the released
    ``root_class``) and every leaf labelled with the root's first class.
    Post-processing of released values."""
    excess, bar = leaf_signal(tree, noisy)
    if excess >= bar:
        return proba, None, excess, bar
    root = node_shares(tree, noisy, proba.shape[1], root_class)[0]
    floored = floor_scores(proba, root)
    labels = np.full(len(floored), int(np.argmax(root)), dtype=np.int64)
    return floored, labels, excess, bar


def floor_outcome(signal: float | None, bar: float | None, answer) -> FloorOutcome | None:
    """The greedy floor's decision (:func:`apply_floor`'s X and bar), ``answer`` the class
    the leaves answer when it falls back (the root's first class); None where the test did
    not run. Public: released values."""
    if signal is None or bar is None:
        return None
    return FloorOutcome(
        test="leaf signal test",
        reads=(
            "the released noisy counts of the tree's leaves: how far the groups of records "
            "at the depth that stands out most spread around their pooled class shares "
            "beyond noise and sampling"
        ),
        statistic=float(signal),
        bar=float(bar),
        trusted=bool(signal >= bar),
        fallback=(
            f"the root's released first class, {str(answer)!r}, for every record; its scores "
            "still rank the records as the leaves do (ROC AUC unchanged)"
        ),
    )
