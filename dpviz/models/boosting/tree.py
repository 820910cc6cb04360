"""One DP regression tree of DPBoost, and how records find their leaf.

Privacy role: a tree reads only the records dealt to it (disjoint from its ensemble's
other trees) and spends its ε_t in two parts. Each level's splits are drawn by the
exponential mechanism over public candidates (:func:`split_candidates`: from the schema
alone) on a utility of bounded sensitivity (:func:`split_utility`): the gain
G = Σ_sides (Σg)²/(n + λ), 3g*² for |g| ≤ g* (Li et al.'s Lemma 1), or the absolute
sums Σ_sides |Σg|, g*; the sum over k parts when one tree serves k parts, B for the
absolute sums when each record's k gradients have an L1 norm ≤ B (the nodes of a level
hold disjoint records). The leaf values −Σg/(n + λ), clipped to g*(1−η)^(t−1), are
released with Laplace noise of sensitivity min(g*/(1+λ), 2g*(1−η)^(t−1)) (Lemma 2 and
the clip), for a leaf's k values the L1 form min(B/(1+λ), 2k·g*(1−η)^(t−1)). Given
hessians (the grown model's log-loss), the leaves are Newton values −Σg/(Σh + λ) of the
sensitivity :func:`~dpviz.models.boosting.newton.newton_sensitivity`; :func:`choose`
draws a level's splits by the exponential mechanism or by report-noisy-max.
:func:`route` and :func:`tree_scores` only read released trees (post-processing).
"""

from __future__ import annotations

import numpy as np

from dpviz.models.boosting.budget import G_STAR
from dpviz.models.trees.draws import Rng
from dpviz.privacy.schema import Schema


def split_candidates(schema: Schema, n_values: np.ndarray, kind: str) -> tuple[np.ndarray, ...]:
    """The public split candidates (feature, value, equal) of a schema.

    ``equal`` False: a record goes right when its code is > value (a threshold between
    public bins, or between discrete codes for ``kind="bins"``). ``equal`` True (discrete
    features with ``kind="one_hot"`` and at least three values): right when its code is
    == value, "feature == v" against the rest. A two-valued feature has one candidate,
    the threshold at 0, which is the same partition as either one-hot test. The list
    depends on the schema only, never on the data.
    """
    n_continuous = len(schema.continuous)
    features, values, equal = [], [], []
    for f, width in enumerate(int(w) for w in n_values):
        if kind == "one_hot" and f >= n_continuous and width > 2:
            features += [f] * width
            values += list(range(width))
            equal += [True] * width
        else:
            features += [f] * (width - 1)
            values += list(range(width - 1))
            equal += [False] * (width - 1)
    if not features:  # every feature single-valued: one split that sends all left
        features, values, equal = [0], [int(n_values[0]) - 1], [False]
    return (
        np.asarray(features, dtype=np.int64),
        np.asarray(values, dtype=np.int64),
        np.asarray(equal, dtype=bool),
    )


def grow_tree(
    codes: np.ndarray,
    gradient: np.ndarray,
    candidates: tuple[np.ndarray, ...],
    width: int,
    depth: int,
    lam: float,
    eps_level: float,
    eps_leaf: float,
    bound: float,
    sensitivity: float,
    rng: Rng,
    score: str = "gain",
    split_gradient: np.ndarray | None = None,
    l1_bound: float | None = None,
    hessian: np.ndarray | None = None,
    selection: str = "gumbel",
) -> tuple[dict, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """One DP regression tree: exponential-mechanism splits, clipped noisy leaves.

    ``codes`` and ``gradient`` are the tree's records (``width`` the most values of a
    feature), ``candidates`` the public (feature, value, equal) splits, ``depth`` its
    levels, ``lam`` λ; each level's splits spend ``eps_level``, the leaves ``eps_leaf``
    (Laplace of scale ``sensitivity``/``eps_leaf`` per value) after clipping to
    ±``bound``. ``score`` is what a split is scored by (:func:`split_utility`), on
    ``split_gradient`` if given (the same shape as ``gradient``), else on ``gradient``.
    ``l1_bound`` is the bound on one record's L1 norm over the k parts of both
    (default k·g*, each part clipped to [−g*, g*]).

    ``gradient`` of shape (n, k) grows one tree for k outputs (the one-vs-rest parts of
    a multiclass model): the splits are scored by the sum of the k parts' utilities
    (sensitivity ``l1_bound`` for "abs", :func:`split_utility`) and every leaf releases k
    values; ``sensitivity`` is then the L1 sensitivity of a leaf's k values, the
    Laplace scale of each over ``eps_leaf``.
    Returns the tree (``feature``, ``threshold``, ``equal`` per level, the released
    ``value`` per leaf, shape (leaves,) or (leaves, k); see :func:`route`) and its leaf
    record (true counts, clipped values, released values: NOT private)."""
    cand_f, cand_v, cand_eq = candidates
    n, m = codes.shape
    grads = gradient[:, None] if gradient.ndim == 1 else gradient
    if split_gradient is None:
        scored = grads
    else:
        scored = split_gradient[:, None] if split_gradient.ndim == 1 else split_gradient
    k = grads.shape[1]
    flat = codes + np.arange(m, dtype=np.int64) * width  # (record, feature) cells
    weights = [np.repeat(scored[:, j], m) for j in range(k)]
    n_nodes_level = 1
    node = np.zeros(n, dtype=np.int64)
    features, thresholds, equal = [], [], []
    rows = np.arange(n)
    eq_axis = cand_eq[:, None]
    level_eps = np.broadcast_to(np.asarray(eps_level, dtype=np.float64), (depth,))
    for level in range(depth):
        cells = n_nodes_level * m * width
        index = (node[:, None] * (m * width) + flat).ravel()
        g_hist = np.stack([np.bincount(index, weights=w, minlength=cells) for w in weights], -1)
        n_hist = np.bincount(index, minlength=cells).astype(np.float64)
        g_hist = g_hist.reshape(n_nodes_level, m, width, k)
        n_hist = n_hist.reshape(n_nodes_level, m, width)
        g_cum, n_cum = np.cumsum(g_hist, axis=2), np.cumsum(n_hist, axis=2)
        g_total, n_total = g_cum[:, cand_f, -1], n_cum[:, cand_f, -1]
        # Right side of candidate c: code == v (one-hot) or code > v (threshold).
        g_right = np.where(eq_axis, g_hist[:, cand_f, cand_v], g_total - g_cum[:, cand_f, cand_v])
        n_right = np.where(cand_eq, n_hist[:, cand_f, cand_v], n_total - n_cum[:, cand_f, cand_v])
        g_left, n_left = g_total - g_right, n_total - n_right
        utility, delta = split_utility(score, g_left, n_left, g_right, n_right, lam, l1_bound)
        choice = choose(level_eps[level] * utility / (2 * delta), rng, selection)
        f_chosen, v_chosen, eq_chosen = cand_f[choice], cand_v[choice], cand_eq[choice]
        features.append(f_chosen)
        thresholds.append(v_chosen)
        equal.append(eq_chosen)
        code = codes[rows, f_chosen[node]]
        v, eq = v_chosen[node], eq_chosen[node]
        node = 2 * node + np.where(eq, code == v, code > v)
        n_nodes_level *= 2
    sums = np.stack(
        [np.bincount(node, weights=grads[:, j], minlength=n_nodes_level) for j in range(k)], -1
    )
    counts = np.bincount(node, minlength=n_nodes_level).astype(np.float64)
    if hessian is None:
        value = -sums / (counts[:, None] + lam)
    else:  # Newton leaves of the log-loss: −Σg / (Σh + λ)
        hess = hessian[:, None] if hessian.ndim == 1 else hessian
        h_sums = np.stack(
            [np.bincount(node, weights=hess[:, j], minlength=n_nodes_level) for j in range(k)],
            -1,
        )
        value = -sums / (h_sums + lam)
    clipped = np.clip(value, -bound, bound)  # geometric leaf clipping
    noise = rng.laplace(0.0, sensitivity / eps_leaf, size=n_nodes_level * k)
    released = clipped + noise.reshape(n_nodes_level, k)
    if gradient.ndim == 1:
        clipped, released = clipped[:, 0], released[:, 0]
    tree = {"feature": features, "threshold": thresholds, "equal": equal, "value": released}
    return tree, (counts, clipped, released)


def choose(logits: np.ndarray, rng: Rng, selection: str = "gumbel") -> np.ndarray:
    """Each row's chosen candidate from ``logits`` = ε·u/(2Δ) (one row per node).

    ``"gumbel"``: argmax of logits + Gumbel noise, the exponential mechanism
    (P ∝ exp(logit)). ``"exponential"``: argmax of logits + Exp(1) noise, report-noisy-max
    with exponential noise of scale 2Δ/ε, which is permute-and-flip (McKenna & Sheldon
    2020; Ding et al. 2021): ε-DP for a utility of sensitivity Δ, and never less likely
    to pick the best candidate than the exponential mechanism."""
    if selection == "exponential":
        noise = -np.log(rng.random(logits.shape))
    else:
        noise = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + noise, axis=1)


def split_utility(
    score: str,
    g_left: np.ndarray,
    n_left: np.ndarray,
    g_right: np.ndarray,
    n_right: np.ndarray,
    lam: float,
    l1_bound: float | None = None,
) -> tuple[np.ndarray, float]:
    """The exponential mechanism's utility of every candidate split, and its sensitivity.

    The side sums ``g_left``/``g_right`` carry a last axis of k parts; the utility is
    the sum over the parts. A record moves each part's sum on its side by its gradient
    there, at most g* (clipped part by part), and all k sums by at most ``l1_bound`` in
    L1 (default k·g*).

    ``"gain"`` (Li et al.): Σ_sides (Σg)²/(n + λ), sensitivity 3g*² (their Lemma 1).
    ``"abs"``: Σ_sides |Σg|, sensitivity g* (``l1_bound`` over k parts): a record added
    or removed lies on one side of the candidate and moves that side's Σg by its own
    |g| ≤ g*, and |·| is 1-Lipschitz. For a side of n records of mean gradient m the
    gain is about n·m² against noise 3g*², the absolute sum n·|m| against g*: the
    absolute sum is the stronger signal whenever |m| < 3g*, i.e. always (it is the
    first-order loss decrease of a small step against each side's gradient, the regime
    of shrunk leaves and small η). Parts scaled to an L1 bound B (shared multiclass
    trees) have each |g| ≤ B: the gain's sensitivity is then k·3B².
    """
    k = g_left.shape[-1]
    bound = k * G_STAR if l1_bound is None else float(l1_bound)
    if score == "abs":
        return (np.abs(g_left) + np.abs(g_right)).sum(axis=-1), bound
    gain = g_left**2 / (n_left + lam)[..., None] + g_right**2 / (n_right + lam)[..., None]
    # each part's |g| ≤ g* when clipped part by part (default), ≤ the L1 bound when scaled
    part_bound = G_STAR if l1_bound is None or k == 1 else bound
    return gain.sum(axis=-1), k * 3 * part_bound**2


def tree_scores(models: list[list[dict]], codes: np.ndarray, eta: float) -> np.ndarray:
    """The trees' score η·Σ_t value_t[leaf_t(x)] of every record, one column per
    one-vs-rest part (post-processing of the released trees)."""
    return np.stack(
        [sum(eta * t["value"][route(t, codes)] for t in trees) for trees in models], axis=1
    )


def route(tree: dict, codes: np.ndarray) -> np.ndarray:
    """The leaf (0..2^depth−1) of every record: at each level a record goes right when
    its code is > the node's threshold, or == it where the node's ``equal`` flag is set
    (a one-hot split; a tree without ``equal`` has threshold splits only). An unknown
    discrete value (code −1) goes left either way."""
    node = np.zeros(len(codes), dtype=np.int64)
    rows = np.arange(len(codes))
    equal = tree.get("equal") or [None] * len(tree["feature"])
    for f, t, eq in zip(tree["feature"], tree["threshold"], equal):
        code, cut = codes[rows, f[node]], t[node]
        right = code > cut if eq is None else np.where(eq[node], code == cut, code > cut)
        node = 2 * node + right
    return node
