"""The exponential-mechanism step of the greedy trees: each frontier node's next subtree.

The step reads records as codes (:func:`bin_codes`, also DPBoost's): a continuous
feature cut at ``n_bins`` equal-width bins of its public domain, a discrete one its
value index, so the candidate splits come from the schema alone, never from the data.

Privacy role: the score of a subtree (Σ over its leaves of the largest class count,
plus β times the leaf's Gini score) changes by at most Δ = 1 + 2β when a record is
added or removed (:mod:`~dpviz.models.greedy.score`), so drawing a subtree with
P ∝ exp(ε'·score/(2Δ)) is ε'-DP; the nodes of a step hold disjoint
records (parallel composition). One or two layers are drawn exactly (the factorised
sampler below); three or more go to the Metropolis chain of
:mod:`dpviz.models.greedy.mcmc`, which is only approximate (no proven ε).

The score of a subtree (the max operator, plus β·Gini by default: see
:mod:`~dpviz.models.greedy.score`) is a sum over its leaves, so the exponential
mechanism's distribution over all subtrees factorises: P(root feature a) ∝
Π_children Σ_f exp(ε'·s(child, f)/2), and given a, each child's feature is drawn
independently. Sampling that way is exactly the exhaustive exponential mechanism
(d ≤ 2) without listing its m·(m−1)^b candidates; :func:`enumerate_subtrees` lists
them by brute force for audits and tests.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np
from scipy.special import logsumexp

from dpviz.models.greedy.mcmc import mcmc_subtrees
from dpviz.models.greedy.score import leaf_score, score_sensitivity
from dpviz.models.trees.draws import Rng


def max_operator(counts: np.ndarray, beta: float = 0.0) -> np.ndarray:
    """Σ over the last-but-one axis of each leaf's score: the largest class count (the FS
    max operator), plus ``beta`` times the Gini score (see
    :func:`~dpviz.models.greedy.score.leaf_score`)."""
    return leaf_score(counts, beta).sum(axis=-1)


def split_scores(
    node: np.ndarray,
    codes: np.ndarray,
    y: np.ndarray,
    n_nodes: int,
    n_values: np.ndarray,
    k: int,
    beta: float = 0.0,
) -> np.ndarray:
    """Score (n_nodes, n_features) of splitting each node on each feature (max operator
    plus ``beta`` · Gini)."""
    scores = np.zeros((n_nodes, codes.shape[1]))
    for f, width in enumerate(n_values):
        flat = (node * width + codes[:, f]) * k + y
        counts = np.bincount(flat, minlength=n_nodes * width * k).reshape(n_nodes, width, k)
        scores[:, f] = max_operator(counts, beta)
    return scores


def choose_subtrees(
    state,
    n_values: np.ndarray,
    k: int,
    layers: int,
    eps: float,
    mcmc_steps: int,
    rng: Rng,
    beta: float = 0.0,
) -> tuple[np.ndarray, int, int, int]:
    """Exponential-mechanism choice of each frontier node's next ``layers`` layers.

    ``state`` is the frontier (``record_node``, ``codes``, ``y``, ``used``), ``eps`` the
    step's ε', ``beta`` the weight of the Gini score next to the max operator (the score's
    sensitivity is 1 + 2β, see :mod:`~dpviz.models.greedy.score`). One or two layers:
    the exact mechanism. Three or more: Metropolis MCMC with ``mcmc_steps`` proposals
    (only approximately the mechanism; not proven DP).

    Returns
    -------
    feat : ndarray
        The chosen subtrees as a padded feature array (see
        :func:`~dpviz.models.greedy.mcmc._layout`): one row per frontier node, -1 where
        a node has no feature left (a leaf).
    candidates : int
        How many subtrees the nodes chose among, summed over the nodes.
    proposed, accepted : int
        The Metropolis proposals made and accepted (0 for one or two layers).
    """
    scale = eps / (2.0 * score_sensitivity(beta))  # exp(ε'·score / (2Δ)), Δ = 1 + 2β
    n_nodes, m = state.used.shape
    allowed = ~state.used
    if layers > 2:
        feat, proposed, accepted = mcmc_subtrees(
            state.record_node,
            state.codes,
            state.y,
            state.used,
            n_values,
            k,
            layers,
            scale,
            mcmc_steps,
            rng,
            beta,
        )
        widths = [tuple(sorted(n_values[row].tolist())) for row in allowed]
        return feat, sum(_n_subtrees(w, layers) for w in widths), proposed, accepted
    s1 = split_scores(state.record_node, state.codes, state.y, n_nodes, n_values, k, beta)
    if layers == 1:
        root = _gumbel_argmax(np.where(allowed, scale * s1, -np.inf), rng)
        return root[:, None], int(allowed.sum()), 0, 0
    width = int(n_values.max())
    pair = np.full((n_nodes, m, width, m), -np.inf)
    leaf_term = np.zeros((n_nodes, m, width))
    for a in range(m):
        wa = int(n_values[a])
        child = state.record_node * wa + state.codes[:, a]
        counts = _node_counts(child, state.y, n_nodes * wa, k).reshape(n_nodes, wa, k)
        leaf_term[:, a, :wa] = scale * leaf_score(counts, beta)
        sub = split_scores(child, state.codes, state.y, n_nodes * wa, n_values, k, beta)
        pair[:, a, :wa, :] = scale * sub.reshape(n_nodes, wa, m)
    # A child of a may split on any feature its path has not used, a excluded.
    not_a = ~np.eye(m, dtype=bool)
    child_allowed = allowed[:, None, :] & not_a[None, :, :]  # (node, a, f)
    pair = np.where(child_allowed[:, :, None, :], pair, -np.inf)
    has_feature = child_allowed.any(axis=-1)  # (node, a)
    valid = np.arange(width)[None, :] < n_values[:, None]  # (a, v)
    with np.errstate(divide="ignore"):
        split_logz = logsumexp(pair, axis=-1)
    child_logz = np.where(has_feature[:, :, None], split_logz, leaf_term)
    child_logz = np.where(valid[None], child_logz, 0.0)
    root = _gumbel_argmax(np.where(allowed, child_logz.sum(axis=-1), -np.inf), rng)
    rows = np.arange(n_nodes)
    child = _gumbel_argmax(pair[rows, root], rng)
    child = np.where(has_feature[rows, root][:, None] & valid[root], child, -1)
    n_allowed = allowed.sum(axis=1)
    candidates = 0
    for i in range(n_nodes):
        for a in np.flatnonzero(allowed[i]):
            candidates += max(1, int(n_allowed[i]) - 1) ** int(n_values[a])
    return np.concatenate([root[:, None], child], axis=1), candidates, 0, 0


def enumerate_subtrees(
    codes: np.ndarray, y: np.ndarray, n_values: np.ndarray, k: int, layers: int, beta: float = 0.0
) -> tuple[list[tuple], np.ndarray]:
    """Every (layers+1)-layer subtree at a root holding these records, with its score (max
    operator plus ``beta`` · Gini).

    Brute force, for audits and tests on tiny data: a candidate is (a,) for one layer;
    for more, (a, (c_0, …, c_{b-1})) where c_v is child v's own subtree in the same
    nested form — a bare feature at the last layer — or -1 when child v has no feature
    left (a leaf). Two layers thus read (a, (f_0, …, f_{b-1})).
    """
    allowed = frozenset(range(codes.shape[1]))
    options = _subtree_options(codes, y, n_values, k, layers, allowed, beta)
    candidates = [(c,) if layers == 1 else c for c, _ in options]
    return candidates, np.asarray([score for _, score in options], dtype=np.float64)


def _subtree_options(codes, y, n_values, k, layers, allowed, beta) -> list[tuple]:
    if not allowed:
        return [(-1, float(leaf_score(np.bincount(y, minlength=k), beta)))]
    options = []
    for a in sorted(allowed):
        wa = int(n_values[a])
        if layers == 1:
            counts = _node_counts(codes[:, a], y, wa, k)
            options.append((a, float(max_operator(counts, beta))))
            continue
        per_child = []
        for v in range(wa):
            rows = codes[:, a] == v
            per_child.append(
                _subtree_options(
                    codes[rows], y[rows], n_values, k, layers - 1, allowed - {a}, beta
                )
            )
        for combo in itertools.product(*per_child):
            options.append(((a, tuple(c for c, _ in combo)), sum(score for _, score in combo)))
    return options


@lru_cache(maxsize=4096)
def _n_subtrees(widths: tuple[int, ...], layers: int) -> int:
    """How many (layers+1)-layer subtrees a node has whose allowed features have these
    numbers of values (sorted)."""
    if layers == 0 or not widths:
        return 1
    return sum(
        _n_subtrees(widths[:i] + widths[i + 1 :], layers - 1) ** w for i, w in enumerate(widths)
    )


def _node_counts(node: np.ndarray, y: np.ndarray, n_nodes: int, k: int) -> np.ndarray:
    return np.bincount(node * k + y, minlength=n_nodes * k).reshape(n_nodes, k)


def _gumbel_argmax(logits: np.ndarray, rng: Rng) -> np.ndarray:
    """Per row, a draw with P(i) ∝ exp(logits_i): argmax of logits plus Gumbel noise."""
    gumbel = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + gumbel, axis=-1)
