"""The leaves of a greedy DP tree: their noisy counts, and what each leaf predicts.

Privacy role: :func:`noisy_leaf_counts` is the release — each leaf's class counts plus
exact discrete Laplace noise, P(z) ∝ exp(−ε|z|), at the leaf's own ε (ε' at full depth,
more for a leaf closed earlier; integers, so no floating-point side channel). One record
changes one count of one leaf by one, and the leaves hold disjoint records (parallel
composition). Everything after it is post-processing of released values and costs no ε:

- **Graceful degradation** (``fallback="hierarchical"``, :func:`smooth_shares`): each
  node gets an estimate of its class counts — a leaf its noisy counts, an inner node the
  sum of its children's estimates, and a node with its own noisy histogram (root,
  stopping rule) the inverse-variance mean of that and the rest. From the root down, a
  node keeps the part of its deviation from its parent's shares that stands out of its
  noise and its records' sampling (empirical Bayes shrinkage, one heterogeneity estimate
  per depth): a leaf with a clear signal keeps its own shares, a noise-dominated leaf
  (empty, or small against its noise) or a chance imbalance falls back to its parent's
  and ultimately to the root's noisy class prior, so when noise or chance dominates the
  model predicts the majority class rather than them.
- ``fallback="none"`` (:func:`own_shares`): a leaf predicts from its own clipped noisy
  counts (the papers' rule).
- The released label of a leaf is a class of largest predicted share, ties broken
  uniformly at random.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.models.greedy.grow import GrownTree
from dpviz.models.trees.draws import Rng

# The fallback keeps a depth's deviations from the parents only beyond this many standard
# deviations that noise and sampling give their moment estimate (see node_shares).
SHRINK_MARGIN = 1.0


def discrete_laplace_variance(epsilon) -> np.ndarray:
    """Variance of the discrete Laplace law P(z) ∝ exp(−ε|z|): 2q / (1 − q)², q = e^−ε."""
    q = np.exp(-np.asarray(epsilon, dtype=np.float64))
    return 2.0 * q / (1.0 - q) ** 2


def noisy_leaf_counts(counts: np.ndarray, epsilon: np.ndarray, rng: Rng) -> np.ndarray:
    """The released counts: ``counts`` (one row per leaf) plus exact discrete Laplace
    noise, P(z) ∝ exp(−ε|z|) at each leaf's ε (``epsilon``): integer counts. One draw
    per group of leaves sharing an ε (the largest first), leaves in node order."""
    k = counts.shape[1]
    noisy = counts.copy()
    for eps in sorted(set(epsilon.tolist()), reverse=True):
        rows = np.flatnonzero(epsilon == eps)
        noise = rng.discrete_laplace(eps, size=len(rows) * k)
        noisy[rows] += noise.reshape(len(rows), k)
    return noisy


def release_leaves(
    tree: GrownTree,
    hierarchical: bool,
    rng: Rng,
    root_class: int | None = None,
    sampling: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The leaves' noisy counts, predicted class shares and released labels.

    ``hierarchical``: shares by :func:`smooth_shares` (``sampling``: counting it,
    :func:`node_shares`), else :func:`own_shares`. The
    label is a class of largest predicted share (of the noisy counts themselves without
    the fallback); ties (frequent with integer counts) are broken uniformly at random
    (post-processing)."""
    k = tree.leaf_counts.shape[1]
    noisy = noisy_leaf_counts(tree.leaf_counts, tree.leaf_epsilon, rng)
    if hierarchical:
        proba = smooth_shares(tree, noisy, k, root_class, sampling)
    else:
        proba = own_shares(noisy)
    released = proba if hierarchical else noisy
    top = released.max(axis=1, keepdims=True)
    jitter = rng.random(released.shape)
    labels = np.argmax(np.where(released >= top, jitter, -1.0), axis=1)
    return noisy, proba, labels


def depth_heterogeneity(
    squared: np.ndarray,
    noise: np.ndarray,
    sampling: np.ndarray,
    n_hat: np.ndarray,
    k: int,
    per_node: bool = True,
) -> float:
    """δ²: how far the true class shares of one depth's nodes stand from their parents'
    (E‖d‖²), from their squared deviations ``squared`` = ‖r‖², whose noise adds
    ``noise`` and sampling ``sampling`` (n̂·(1 − Σp_P²): records drawn at the parent's
    shares) on average, ``n_hat`` the nodes' sizes. The larger of two moment estimates,
    each less :data:`SHRINK_MARGIN` of its spread without a true deviation:

    - pooled, Σ(‖r‖² − noise − sampling)/Σn̂²: ruled by the large nodes;
    - per node, the mean of (‖r‖² − noise − sampling)/n̂² over the nodes of n̂ ≥ 1:
      every node counts alike, so small pure leaves under large mixed nodes are not
      shrunk by the large nodes' small deviations.

    Without a true deviation both are about 0 and the depth keeps its parents' shares.
    ``per_node=False``: the pooled estimate alone. Post-processing of released counts and
    public ε."""
    # Var of a node's ‖r‖² without a true deviation: Laplace noise 5·noise², multinomial
    # sampling 2·s²/(k − 1).
    noise_sq, sampling_sq = 5.0 * noise**2, 2.0 * sampling**2 / max(k - 1, 1)
    excess = squared - noise - sampling
    size = float(np.sum(n_hat**2))
    margin = math.sqrt(float(np.sum(noise_sq)) + float(np.sum(sampling_sq)))
    pooled = float(np.sum(excess)) - SHRINK_MARGIN * margin
    best = max(0.0, pooled) / size if size > 0 else 0.0
    big = n_hat >= 1.0
    if per_node and big.any():
        each = excess[big] / n_hat[big] ** 2
        fourth = n_hat[big] ** 4
        spread = math.sqrt(float(np.sum((noise_sq[big] + sampling_sq[big]) / fourth)))
        best = max(best, float(np.mean(each)) - SHRINK_MARGIN * spread / len(each))
    return best


def own_shares(noisy: np.ndarray) -> np.ndarray:
    """Each leaf's class shares from its own noisy counts clipped at 0 (uniform when
    none is positive): the papers' rule, ``fallback="none"``."""
    k = noisy.shape[1]
    clipped = np.clip(noisy, 0, None).astype(np.float64)
    total = clipped.sum(axis=1, keepdims=True)
    return np.divide(clipped, total, out=np.full_like(clipped, 1.0 / k), where=total > 0)


def smooth_shares(
    tree: GrownTree,
    noisy: np.ndarray,
    k: int,
    root_class: int | None = None,
    sampling: bool = True,
) -> np.ndarray:
    """Each leaf's predicted class shares, from released values only (the leaves' rows
    of :func:`node_shares`)."""
    return node_shares(tree, noisy, k, root_class, sampling)[tree.leaf_nodes]


def node_shares(
    tree: GrownTree,
    noisy: np.ndarray,
    k: int,
    root_class: int | None = None,
    sampling: bool = True,
) -> np.ndarray:
    """Every node's class shares (one row per node; the root's first), from released
    values only.

    **Estimates, bottom-up.** Every node gets an estimate ĉ of its class counts and
    a per-class noise variance v: a leaf its noisy counts (v = 2q/(1 − q)², q =
    e^−ε, of the discrete Laplace at its ε); an inner node the sum of its children's
    estimates (variances add); a node with its own noisy histogram (the root with
    "auto", the stopping rule's nodes) the inverse-variance mean of that and the rest.

    **Shares, top-down** (empirical Bayes shrinkage towards the parent). The root's
    shares p are max(ĉ, 0) normalised (uniform if all ≤ 0), and with ``root_class`` (the
    released report-noisy-max class of the root, below ε = 0.8) that class's share is
    swapped with the largest, so the fallback's majority is that class. At each depth, a node
    of estimated size n̂ = max(Σ ĉ, 0) and parent shares p_P has deviation r = ĉ −
    n̂·p_P, whose noise contributes v·(k − 2 + k·Σp_P²) to ‖r‖² (the noise of ĉ
    projected off n̂), and sampling s = n̂·(1 − Σp_P²) (its records drawn at the
    parent's shares). The true deviation is modelled as n̂·d with E‖d‖² = δ², one δ² per
    depth estimated by moments over its nodes, conservatively
    (:func:`depth_heterogeneity`: less z = ``SHRINK_MARGIN`` = 1 spread of the estimate
    without a true deviation, Laplace noise having kurtosis 6, so Var(e²) = 5·Var(e)²);
    pure noise and chance imbalances thus rarely pass for a signal. The node keeps the
    share w = n̂²δ² / (n̂²δ² + noise + s) of its deviation: p = normalise(max(n̂·p_P +
    w·r, 0)). A large node with a clear deviation keeps nearly all of it; a node whose
    counts are noise-dominated (empty, or small against √v), or a depth whose deviations
    do not stand out of noise and sampling, gets w → 0 and predicts its parent's shares —
    ultimately the root's noisy class prior, the majority class. Counting sampling
    matters at large ε, where the noise is small: without it weak-signal data put the
    greedy trees 2–3 points below the majority at ε = 10 (a leaf's chance lead decided
    its label), and the floor's whole-tree test let them through because a signal was
    there (bench/README, "the greedy fallback counts sampling"). ``sampling=False``
    leaves s out (and δ² is the pooled estimate alone): the estimator does so for the
    objectives other than accuracy, whose decisions weigh the shares by the prior or a
    threshold on their order (on the validation group's imbalanced sets counting
    sampling cost the macro_f1 objective 0.25 points).

    **Privacy.** Every input is released already (the noisy leaf and node counts,
    the tree) or public (the ε of each count), so this is post-processing: it costs
    no ε and needs no ledger entry."""
    n_nodes = len(tree.feature)
    est = np.zeros((n_nodes, k))
    var = np.zeros(n_nodes)
    est[tree.leaf_nodes] = noisy
    var[tree.leaf_nodes] = discrete_laplace_variance(tree.leaf_epsilon)
    own = np.full(n_nodes, -1)
    own[tree.counted_nodes] = np.arange(len(tree.counted_nodes))
    own_var = discrete_laplace_variance(tree.counted_epsilon)
    max_depth = int(tree.node_depth.max())
    for depth in range(max_depth, -1, -1):
        nodes = np.flatnonzero(tree.node_depth == depth)
        mine = nodes[own[nodes] >= 0]
        if len(mine):
            row = own[mine]
            w_rest, w_own = 1.0 / var[mine], 1.0 / own_var[row]
            own_counts = tree.counted_noisy_counts[row] * w_own[:, None]
            est[mine] = (est[mine] * w_rest[:, None] + own_counts) / (w_rest + w_own)[:, None]
            var[mine] = 1.0 / (w_rest + w_own)
        if depth > 0:
            np.add.at(est, tree.parent[nodes], est[nodes])
            np.add.at(var, tree.parent[nodes], var[nodes])
    proba = np.full((n_nodes, k), 1.0 / k)
    root = np.clip(est[0], 0.0, None)
    if root.sum() > 0:
        proba[0] = root / root.sum()
    if root_class is not None:
        # The released report-noisy-max class goes first: swap its share with the top's.
        top = int(np.argmax(proba[0]))
        proba[0, [top, root_class]] = proba[0, [root_class, top]]
    for depth in range(1, max_depth + 1):
        nodes = np.flatnonzero(tree.node_depth == depth)
        prior = proba[tree.parent[nodes]]
        n_hat = np.maximum(est[nodes].sum(axis=1), 0.0)
        dev = est[nodes] - n_hat[:, None] * prior
        purity = (prior**2).sum(axis=1)
        noise = var[nodes] * (k - 2 + k * purity)
        spread = n_hat * (1.0 - purity) if sampling else np.zeros_like(n_hat)
        squared = (dev**2).sum(axis=1)
        delta2 = depth_heterogeneity(squared, noise, spread, n_hat, k, per_node=sampling)
        noise = noise + spread
        signal = n_hat**2 * delta2
        keep = np.divide(signal, signal + noise, out=np.zeros_like(signal), where=signal > 0)
        fit = np.clip(n_hat[:, None] * prior + keep[:, None] * dev, 0.0, None)
        total = fit.sum(axis=1, keepdims=True)
        # A node that keeps none of its deviation gets its parent's shares exactly: the
        # sum n̂·p_P normalised differs from p_P in the last bits, and leaves tied in all
        # but rounding made the macro_f1 threshold split them at random (issue 28).
        own = (total > 0) & (keep[:, None] > 0)
        proba[nodes] = np.where(own, fit / np.where(total > 0, total, 1.0), prior)
    return proba


# Under objective="macro_f1" (two classes): leaves whose class-1 shares tie after the
# fallback are ordered by their own counts, shrunk towards the leaves' pooled class-1
# share with this many standard deviations of a leaf's count noise as pseudo-records
# (see order_ties). Chosen on shared-derived sets (bench/README.md, h-mf3): 4 against 1,
# means within a point, DPEA a point ahead on three runs.
TIE_M = 4.0
# The most that order moves a class-1 share (the top leaf's; the leaf of rank r of L
# moves r/L of it): far below any share a count can move (1/n̂), and its steps far above
# float rounding (1e-16).
TIE_STEP = 1e-6


def order_ties(proba: np.ndarray, noisy: np.ndarray, epsilon: np.ndarray) -> np.ndarray:
    """Two-class leaf shares ``proba`` with ties ordered for the ``macro_f1`` threshold.

    The hierarchical fallback gives every noise-dominated leaf its parent's shares
    exactly, so at small ε all leaves of a tree tie and the threshold
    (:func:`~dpviz.models.greedy.predict.decision_threshold`) can only answer class 1
    everywhere or nowhere: the majority. Here each leaf gets a secondary score, its noisy
    class-1 count shrunk towards the pooled share p of all leaves' clipped noisy counts,
    s = (max(c₁, 0) + m·p) / (max(c₀ + c₁, 0) + m), m = :data:`TIE_M`·σ(ε_leaf) (σ the
    discrete Laplace standard deviation of the leaf's counts: a leaf whose counts are
    mostly noise stays near p), and the class-1 share of the leaf of rank r (0 … L−1)
    in s moves up by (r/L)·:data:`TIE_STEP` (class 0's down by as much). Leaves whose
    shares differ by more than ``TIE_STEP`` keep their order; tied ones are ordered by s.

    Privacy: post-processing of the released noisy leaf counts and their public ε (no
    ε). ``predict_proba`` moves by less than ``TIE_STEP``."""
    if proba.shape[1] != 2 or len(proba) < 2:
        return proba
    counts = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None)
    pooled = counts.sum(axis=0)
    p = pooled[1] / pooled.sum() if pooled.sum() > 0 else 0.5
    m = TIE_M * np.sqrt(discrete_laplace_variance(epsilon))
    n = np.clip(np.asarray(noisy, dtype=np.float64).sum(axis=1), 0.0, None)
    score = (counts[:, 1] + m * p) / (n + m)
    rank = np.argsort(np.argsort(score, kind="stable"), kind="stable").astype(np.float64)
    out = np.asarray(proba, dtype=np.float64).copy()
    shift = TIE_STEP * rank / len(rank)
    out[:, 1] += shift
    out[:, 0] -= shift
    return out
