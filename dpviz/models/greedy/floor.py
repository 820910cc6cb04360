"""The greedy trees' floor: a signal test on the released leaf counts, and the fall-back.

Where the data carry no signal, a greedy tree at large ε still splits (the exponential
mechanism picks the best-looking split of chance differences) and labels each leaf with
its own majority, which on new records is right less often than the majority class:
1,250 records at 52 / 48% without signal (a label-permuted magic_gamma, smarket's shape)
put Friedman–Schuster 1.6 points and DPEA 2.2 points below the majority at ε = 10
(bench/README, "Issue 28: the greedy trees' floor"). The hierarchical fallback
(:func:`~dpviz.models.greedy.leaves.smooth_shares`) shrinks leaves against their counts'
*noise* only; at large ε that noise is tiny and every chance difference is kept.

**The test.** With L leaves of released noisy counts c̃_l (k classes, n̂_l = Σ c̃_l) and
p the leaves' pooled shares (their clipped counts summed), the leaves' spread around p
beyond their noise is

    X = Σ_l (‖c̃_l − n̂_l·p‖² − v_l·(k − 2 + k·Σp²)),

v_l the discrete Laplace variance of leaf l's counts at its ε. Without signal, sampling
alone gives it the mean s = Σ_l n̂_l·(1 − n̂_l/N̂)·(1 − Σp²) (multinomial counts around a
shared p, N̂ = Σ n̂_l); the splits were chosen where the records looked most unlike, which
inflates that by a factor the selection allowance S = :data:`FLOOR_SELECTION` covers. The
leaves are trusted when X ≥ S·s + z·σ, z = :data:`FLOOR_Z`, σ² = 5·Σ(v_l·(k − 2 +
k·Σp²))² + S²·2·Σ(n̂_l·(1 − n̂_l/N̂)·(1 − Σp²))²/(k − 1) (the spread of X under no signal:
the noise's, as in the fallback, and a χ²-like sampling term). On label-permuted shared
sets at ε = 1 and 10 the statistic X/s stayed within 0.2–2.3 per fit; trees with signal
on the shared sets and their 400–1,250-record subsamples reach 2–2,000 (bench/README).

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

import math

import numpy as np

from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import discrete_laplace_variance, node_shares
from dpviz.models.objective import ACCURACY
from dpviz.models.trees.floor import floor_scores

# S: how much more than sampling alone the leaves of a tree grown on data without signal
# spread (its splits were chosen where the records looked most unlike). Chosen on
# label-permuted shared sets and shared sets' subsamples (bench/README "Issue 28: the
# greedy trees' floor").
FLOOR_SELECTION = 1.5
# z: standard deviations of the statistic's spread under no signal added to the bar.
FLOOR_Z = 1.0

__all__ = [
    "FLOOR_SELECTION",
    "FLOOR_Z",
    "apply_floor",
    "floor_applies",
    "leaf_signal",
    "partition_signal",
]


def floor_applies(objective: str, fallback: str, n_leaves: int) -> bool:
    """Whether a greedy tree runs the floor's test: ``objective="accuracy"``,
    ``fallback="hierarchical"`` and at least two leaves. Public: settings and the
    released tree."""
    return objective == ACCURACY and fallback == "hierarchical" and n_leaves >= 2


def partition_signal(counts: np.ndarray, variance: np.ndarray) -> tuple[float, float]:
    """(X, the bar X must reach) for a partition of the records into groups of released
    noisy ``counts`` (one row per group) whose every count has noise of ``variance``
    (one per group): the groups' spread around their pooled shares beyond their noise,
    and S·s + z·σ (module docstring). Post-processing."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[1]
    n_hat = np.maximum(counts.sum(axis=1), 0.0)
    pooled = np.clip(counts, 0.0, None).sum(axis=0)
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.full(k, 1.0 / k)
    purity = float(np.sum(shares**2))
    deviation = counts - n_hat[:, None] * shares[None, :]
    noise = np.asarray(variance, dtype=np.float64) * (k - 2 + k * purity)
    total = float(n_hat.sum())
    inside = np.clip(1.0 - n_hat / total, 0.0, 1.0) if total > 0 else np.zeros_like(n_hat)
    sampling = n_hat * inside * (1.0 - purity)
    excess = float(np.sum((deviation**2).sum(axis=1) - noise))
    spread = math.sqrt(
        5.0 * float(np.sum(noise**2))
        + FLOOR_SELECTION**2 * 2.0 * float(np.sum(sampling**2)) / max(k - 1, 1)
    )
    return excess, FLOOR_SELECTION * float(sampling.sum()) + FLOOR_Z * spread


def leaf_signal(tree: GrownTree, noisy: np.ndarray) -> tuple[float, float]:
    """(X, the bar) of the depth whose partition stands out most: for each depth d the
    records are grouped by their node at depth d (a leaf above d is its own group; a
    group's counts are the sum of its leaves' released counts, their noise variances
    added) and :func:`partition_signal` is taken; the depth of largest X − bar is
    returned. A signal in one early split thus counts even where the leaves below it are
    small. Post-processing of the released counts, their public ε and the tree."""
    noisy = np.asarray(noisy, dtype=np.float64)
    variance = discrete_laplace_variance(tree.leaf_epsilon)
    node = np.asarray(tree.leaf_nodes).copy()
    depth = np.asarray(tree.node_depth)[node]
    best = None
    for level in range(int(depth.max()), 0, -1):
        # Lift every leaf deeper than ``level`` to its ancestor at ``level``.
        deep = depth > level
        node[deep] = tree.parent[node[deep]]
        depth = np.where(deep, depth - 1, depth)
        groups, index = np.unique(node, return_inverse=True)
        k = noisy.shape[1]
        counts = np.zeros((len(groups), k))
        np.add.at(counts, index, noisy)
        summed = np.bincount(index, weights=variance, minlength=len(groups))
        excess, bar = partition_signal(counts, summed)
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
