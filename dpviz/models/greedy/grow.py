"""Growing a greedy DP tree, step level by step level (the loop of Friedman–Schuster / DPEA).

At each step level the frontier nodes (i) close as leaves when no feature or depth is
left, (ii) below the root, when the stopping rule is on, release a noisy class
histogram and close when :func:`~dpviz.models.greedy.stopping.stopping_rule` says
their children would drown in noise, and (iii) draw their next subtree by the
exponential mechanism (:func:`~dpviz.models.greedy.select.choose_subtrees`), which
then splits them into the next frontier.

Privacy role: the shape of the tree depends on the data only through those two
releases — the exponential-mechanism draws (ε' less the count share per level) and the
node histograms (discrete Laplace at ``Budget.count``, sensitivity 1: one record changes
one count by one) — and the nodes of a level hold disjoint records (parallel
composition). Every leaf records the ε its final counts get
(:meth:`~dpviz.models.greedy.budget.Budget.leaf`), so each record spends exactly ε.
The leaves' counts collected here are the TRUE counts (NOT private): they are released
only through :func:`~dpviz.models.greedy.leaves.release_leaves`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.models.greedy.budget import Budget
from dpviz.models.greedy.mcmc import _layout
from dpviz.models.greedy.select import _node_counts, choose_subtrees
from dpviz.models.greedy.stopping import stopping_rule
from dpviz.models.trees.draws import Rng

MAX_NODES = 2_000_000


@dataclass
class GrownTree:
    """A grown tree before its leaves are released; the estimator keeps each field as
    the attribute of the same name plus ``_`` (``feature`` → ``feature_``, …).

    ``leaf_counts`` are the leaves' TRUE class counts (NOT private); ``counted_*`` the
    nodes with a released noisy class histogram (the root with "auto"; the stopping
    rule's frontier nodes), those histograms and their ε."""

    feature: np.ndarray
    first_child: np.ndarray
    node_depth: np.ndarray
    parent: np.ndarray
    leaf_nodes: np.ndarray
    leaf_counts: np.ndarray
    leaf_epsilon: np.ndarray
    counted_nodes: np.ndarray
    counted_noisy_counts: np.ndarray
    counted_epsilon: np.ndarray
    candidates: int
    mcmc_acceptance: float


def grow_tree(
    codes: np.ndarray,
    y: np.ndarray,
    n_values: np.ndarray,
    k: int,
    rng: Rng,
    budget: Budget,
    root_counts: np.ndarray | None,
    stopping: bool,
    mcmc_steps: int,
    beta: float = 0.0,
    test_root: bool = True,
) -> GrownTree:
    """Grow the tree of depth at most ``budget.depth`` in steps of ``budget.steps`` layers.

    ``root_counts`` is the root's released noisy class histogram (``max_depth="auto"``
    without a declared count; the root's stopping test), ``stopping`` whether
    Friedman & Schuster's rule may close nodes, ``mcmc_steps`` the Metropolis proposals
    of a step of three or more layers, ``beta`` the weight of the Gini score next to the
    max operator in the split score (:mod:`~dpviz.models.greedy.score`), ``test_root``
    whether the root's noisy histogram may close it (False where the macro_f1 objective
    forces a split: :func:`~dpviz.models.greedy.stopping.forced_split`). Every draw
    comes from ``rng``."""
    D, d = budget.depth, budget.steps
    tree = _NodeTable()
    state = _Frontier(
        ids=np.array([0]),
        used=np.zeros((1, codes.shape[1]), dtype=bool),
        record_node=np.zeros(len(y), dtype=np.int64),
        codes=codes,
        y=y,
    )
    counted = ([], [], [])  # node ids, noisy histograms, their ε
    if root_counts is not None:
        counted[0].append(np.array([0]))
        counted[1].append(root_counts[None, :])
        counted[2].append(np.array([budget.root]))
    candidates = proposed = accepted = 0
    depth = level = 0
    while len(state.ids):
        left = D - depth
        closing = state.used.all(axis=1) | (left <= 0)
        state = state.close(closing, tree, k, budget.leaf(level, counted=False))
        if not len(state.ids):
            break
        layers = min(d, left)
        noisy = None
        if level == 0 and root_counts is not None:
            noisy, stop_eps = root_counts[None, :], budget.leaf(0, counted=False)
        elif level > 0 and budget.count > 0:
            true = _node_counts(state.record_node, state.y, len(state.ids), k)
            noise = rng.discrete_laplace(budget.count, size=true.size)
            noisy = true + noise.reshape(true.shape)
            counted[0].append(state.ids.copy())
            counted[1].append(noisy)
            counted[2].append(np.full(len(state.ids), budget.count))
            stop_eps = budget.leaf(level, counted=True)
        if noisy is not None and stopping and (level > 0 or test_root):
            stop = stopping_rule(noisy, state.used, n_values, layers, budget.level)
            state = state.close(stop, tree, k, stop_eps)
            if not len(state.ids):
                break
        feat, n_candidates, n_proposed, n_accepted = choose_subtrees(
            state, n_values, k, layers, budget.split(level), mcmc_steps, rng, beta
        )
        candidates += n_candidates
        proposed += n_proposed
        accepted += n_accepted
        state = _expand_subtrees(
            state, feat, n_values, tree, depth, k, layers, budget.leaf(level + 1, False)
        )
        depth += layers
        level += 1
    order = np.argsort(tree.leaf_ids)
    if counted[0]:
        counted_nodes = np.concatenate(counted[0])
        counted_noisy = np.concatenate(counted[1]).astype(np.int64)
        counted_eps = np.concatenate(counted[2])
    else:
        counted_nodes = np.zeros(0, dtype=np.int64)
        counted_noisy = np.zeros((0, k), dtype=np.int64)
        counted_eps = np.zeros(0)
    return GrownTree(
        feature=np.asarray(tree.feature),
        first_child=np.asarray(tree.first_child),
        node_depth=np.asarray(tree.depth),
        parent=np.asarray(tree.parent),
        leaf_nodes=np.asarray(tree.leaf_ids)[order],
        leaf_counts=np.concatenate(tree.leaf_counts)[order],
        leaf_epsilon=np.asarray(tree.leaf_eps, dtype=np.float64)[order],
        counted_nodes=counted_nodes,
        counted_noisy_counts=counted_noisy,
        counted_epsilon=counted_eps,
        candidates=candidates,
        mcmc_acceptance=accepted / proposed if proposed else float("nan"),
    )


def _expand_subtrees(
    state, feat, n_values, tree, depth: int, k: int, layers: int, leaf_eps: float = 0.0
):
    """Add each frontier node's chosen subtree (padded ``feat`` rows) to the tree; a node
    inside it left without a feature becomes a leaf whose counts get ``leaf_eps``."""
    width = int(n_values.max())
    offsets, _, _ = _layout(width, layers)
    chain = np.arange(len(state.ids))
    pos = np.zeros(len(chain), dtype=np.int64)
    for level in range(layers):
        f = feat[chain, pos]
        if level:
            stop = f < 0
            state = state.close(stop, tree, k, leaf_eps)
            chain, pos, f = chain[~stop], pos[~stop], f[~stop]
            if not len(chain):
                break
        state, parent, value = state.expand(f, n_values, tree, depth + level)
        chain = chain[parent]
        pos = offsets[level + 1] + (pos[parent] - offsets[level]) * width + value
    return state


class _NodeTable:
    """The tree as flat lists: split feature and first child per node, and leaves."""

    def __init__(self) -> None:
        self.feature, self.first_child, self.depth, self.parent = [-1], [-1], [0], [-1]
        self.leaf_ids: list[int] = []
        self.leaf_counts: list[np.ndarray] = []
        self.leaf_eps: list[float] = []

    def add_children(
        self, nodes: np.ndarray, features: np.ndarray, widths: np.ndarray, depth: int
    ) -> np.ndarray:
        base = len(self.feature)
        if base + int(widths.sum()) > MAX_NODES:
            raise ValueError(
                f"the tree would exceed {MAX_NODES:,} nodes; lower max_depth or n_bins"
            )
        starts = base + np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
        for node, f, start in zip(nodes.tolist(), features.tolist(), starts.tolist()):
            self.feature[node], self.first_child[node] = f, start
        n_new = int(widths.sum())
        self.feature.extend([-1] * n_new)
        self.first_child.extend([-1] * n_new)
        self.depth.extend([depth + 1] * n_new)
        self.parent.extend(np.repeat(nodes, widths).tolist())
        return starts


class _Frontier:
    """Nodes still to split, their used features, and the records that reached them."""

    def __init__(self, ids, used, record_node, codes, y):
        self.ids, self.used, self.record_node, self.codes, self.y = (
            ids,
            used,
            record_node,
            codes,
            y,
        )

    def close(self, stop: np.ndarray, tree: _NodeTable, k: int, eps: float = 0.0) -> _Frontier:
        """Turn the ``stop`` nodes into leaves whose counts get ``eps``; keep the rest."""
        if not stop.any():
            return self
        counts = _node_counts(self.record_node, self.y, len(self.ids), k)
        tree.leaf_ids.extend(self.ids[stop].tolist())
        tree.leaf_counts.append(counts[stop])
        tree.leaf_eps.extend([float(eps)] * int(stop.sum()))
        keep = ~stop
        remap = np.cumsum(keep) - 1
        on = keep[self.record_node]
        return _Frontier(
            self.ids[keep],
            self.used[keep],
            remap[self.record_node[on]],
            self.codes[on],
            self.y[on],
        )

    def expand(self, features: np.ndarray, n_values: np.ndarray, tree: _NodeTable, depth: int):
        """Split every node on its feature; returns the children and their (parent, value)."""
        widths = n_values[features]
        starts = tree.add_children(self.ids, features, widths, depth)
        parent = np.repeat(np.arange(len(self.ids)), widths)
        value = np.arange(len(parent)) - np.repeat(np.cumsum(widths) - widths, widths)
        used = self.used[parent].copy()
        used[np.arange(len(parent)), features[parent]] = True
        offset = np.cumsum(widths) - widths
        record_child = (
            offset[self.record_node]
            + self.codes[np.arange(len(self.record_node)), features[self.record_node]]
        )
        ids = np.concatenate([s + np.arange(w) for s, w in zip(starts, widths)])
        return _Frontier(ids, used, record_child, self.codes, self.y), parent, value
