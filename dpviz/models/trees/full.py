"""Whole random trees without records: their leaves counted, estimated and listed.

An export lists every node of every tree (:func:`build_full`); a count forest releases an
output for every leaf, reached or not (:func:`leaf_space_keys`); the Trees page and the
diagnostics show how many leaves a forest has (:func:`count_leaves`, or
:func:`estimate_leaves` by Knuth's estimator where the trees are too large to list).

Privacy role: the trees are a pure function of ``random_state`` and released split
histograms (:mod:`dpviz.models.trees.space`); nothing here reads a record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpviz.models.trees.space import (
    Frontier,
    TreeSpace,
    choose_features,
    choose_splits,
    expand,
    is_leaf,
    pair_chunk,
)
from dpviz.privacy.randomness import child_keys


def count_leaves(space: TreeSpace, root_keys: np.ndarray, max_frontier: int = 2_000_000):
    """Number of leaves of each tree, or None for a tree too large to enumerate."""
    if space.n_discrete == 0:
        return [2**space.max_depth] * len(root_keys)
    out = []
    for t, key in enumerate(root_keys):
        out.append(_count_tree(space, np.asarray([key], dtype=np.uint64), t, max_frontier))
    return out


def _count_tree(space, root, tree, max_frontier):
    frontier = Frontier.roots(space, root, np.asarray([tree]), 0)
    total = 0
    for depth in range(space.max_depth + 1):
        leaf = is_leaf(space, frontier, depth)
        total += int(leaf.sum())
        frontier = frontier.take(np.flatnonzero(~leaf))
        if len(frontier) == 0:
            return total
        splits = choose_splits(space, frontier)
        if splits.n_children.sum() > max_frontier:
            return None
        parent = np.repeat(np.arange(len(frontier)), splits.n_children)
        child = np.arange(len(parent)) - np.repeat(
            np.cumsum(splits.n_children) - splits.n_children, splits.n_children
        )
        frontier = expand(space, frontier, splits, parent, child, None, depth)
    return total


# Trees enumerated together by leaf_space_keys: a group's frontier stays a small share of
# what an export may hold.
LEAF_SPACE_TREES = 8


def leaf_space_keys(space: TreeSpace, root_keys: np.ndarray, max_nodes: int) -> np.ndarray | None:
    """Sorted keys of every leaf of every tree, or None when the trees hold more than
    ``max_nodes`` nodes (inner nodes too, as an export counts them).

    Public structure only. Trees of continuous features have 2^(depth+1) − 1 nodes each,
    known before any work; other trees are enumerated level by level, a few at a time,
    and given up as soon as the count passes ``max_nodes``."""
    root_keys = np.asarray(root_keys, dtype=np.uint64)
    if space.n_continuous and len(root_keys) * (2 ** (space.max_depth + 1) - 1) > max_nodes:
        return None
    if not space.n_discrete:
        # Every node splits in two down to the full depth: the leaves are the keys of
        # every path of children 0/1, whatever the splits (their thresholds are not read).
        keys = root_keys
        for _ in range(space.max_depth):
            keys = child_keys(np.repeat(keys, 2), np.tile(np.arange(2), len(keys)))
        return np.sort(keys)
    found, total = [], 0
    for first in range(0, len(root_keys), LEAF_SPACE_TREES):
        keys = root_keys[first : first + LEAF_SPACE_TREES]
        used = np.zeros((len(keys), space.n_discrete), dtype=bool)
        for depth in range(space.max_depth + 1):
            total += len(keys)
            if total > max_nodes:
                return None
            leaf = _shape_leaf(space, used, depth)
            found.append(keys[leaf])
            inner = np.flatnonzero(~leaf)
            if not len(inner):
                break
            keys, used, _ = _shape_children(space, keys[inner], used[inner])
    return np.sort(np.concatenate(found))


def _shape_leaf(space: TreeSpace, used: np.ndarray, depth: int) -> np.ndarray:
    """Which nodes of a level are leaves (:func:`~.space.is_leaf` from the discrete
    features each path used)."""
    if depth >= space.max_depth:
        return np.ones(len(used), dtype=bool)
    if space.n_continuous > 0:
        return np.zeros(len(used), dtype=bool)
    return used.all(axis=1)


def _shape_children(space: TreeSpace, keys: np.ndarray, used: np.ndarray):
    """(keys, used discrete features, parent) of every child of the internal nodes
    ``keys``, in the order :func:`~.space.expand` gives them.

    Only what decides a tree's shape: a node's children follow from its key and the
    discrete features its path used, never from a threshold, so the continuous
    sub-domains (two floats per continuous feature a node) are not carried."""
    s = space.n_continuous
    feature = choose_features(space, keys, used)
    discrete = feature >= s
    n_children = np.full(len(keys), 2, dtype=np.int64)
    n_children[discrete] = space.n_values[feature[discrete] - s]
    parent = np.repeat(np.arange(len(keys)), n_children)
    child = np.arange(len(parent)) - np.repeat(np.cumsum(n_children) - n_children, n_children)
    used = used[parent]
    taken = np.flatnonzero(discrete[parent])
    used[taken, feature[parent[taken]] - s] = True
    return child_keys(keys[parent], child), used, parent


def estimate_leaves(
    space: TreeSpace, root_keys: np.ndarray, *, exact_limit: int = 50_000, probes: int = 512
) -> tuple[np.ndarray, np.ndarray]:
    """Leaf count of each tree and whether it is exact.

    Trees of continuous features only have 2^depth leaves. Other trees are first
    estimated by Knuth's unbiased random-path estimator (the product of the branching
    factors along a uniformly random descent, averaged over ``probes`` descents); those
    estimated at most ``exact_limit`` leaves are then counted exactly. Mushroom-like
    trees (about 10^7 leaves each) keep the estimate.
    """
    n = len(root_keys)
    if space.n_discrete == 0:
        return np.full(n, float(2**space.max_depth)), np.ones(n, dtype=bool)
    bound = leaf_bound(space)
    if bound <= exact_limit:
        # Every probe's product, hence every estimate, is at most ``bound``: each tree
        # would be counted exactly below. Count them all at once instead (same numbers).
        return _count_forest(space, np.asarray(root_keys, dtype=np.uint64), bound), np.ones(
            n, dtype=bool
        )
    totals = _knuth_estimate(space, np.asarray(root_keys, dtype=np.uint64), probes)
    exact = np.zeros(n, dtype=bool)
    for t in np.flatnonzero(totals <= exact_limit):
        count = _count_tree(space, root_keys[t : t + 1], t, 4 * exact_limit)
        if count is not None:
            totals[t], exact[t] = count, True
    return totals, exact


def leaf_bound(space: TreeSpace) -> int:
    """The largest product of branching factors along any root-to-leaf path of a tree
    over ``space``: a public bound on its leaf count and on every Knuth probe. A path
    has at most ``max_depth`` splits; each multiplies by 2 (a continuous feature, which
    may recur) or by the value count of a discrete feature not yet used on the path."""
    factors = sorted((int(v) for v in space.n_values), reverse=True)
    if space.n_continuous:
        factors = sorted([*factors, *[2] * space.max_depth], reverse=True)
    return math.prod(factors[: space.max_depth])


# Nodes of one level counted at once by _count_forest (trees are grouped to stay below).
COUNT_NODES = 1 << 20


def _count_forest(space: TreeSpace, root_keys: np.ndarray, bound: int) -> np.ndarray:
    """Exact leaf count of each tree, every tree of a group enumerated level by level in
    one frontier that holds only what decides the shape (key, used discrete features):
    the thresholds never change which children a node has. The counts ``_count_tree``
    gives, without building the sub-domains."""
    n = len(root_keys)
    r = space.n_discrete
    totals = np.zeros(n)
    group = max(1, COUNT_NODES // max(1, bound))
    for first in range(0, n, group):
        keys = root_keys[first : first + group]
        tree = np.arange(len(keys))
        used = np.zeros((len(keys), r), dtype=bool)
        counts = np.zeros(len(keys), dtype=np.int64)
        for depth in range(space.max_depth + 1):
            leaf = _shape_leaf(space, used, depth)
            counts += np.bincount(tree[leaf], minlength=len(counts))
            inner = np.flatnonzero(~leaf)
            if len(inner) == 0:
                break
            keys, used, parent = _shape_children(space, keys[inner], used[inner])
            tree = tree[inner][parent]
        totals[first : first + group] = counts
    return totals


def _knuth_estimate(space, root_keys, probes):
    # Trees in groups whose probe frontier stays within FRONTIER_BYTES on wide data.
    size = max(1, pair_chunk(space) // probes)
    first = int(root_keys[0])
    return np.concatenate(
        [
            _knuth_chunk(space, root_keys[i : i + size], probes, first if i == 0 else [first, i])
            for i in range(0, len(root_keys), size)
        ]
    )


def _knuth_chunk(space, root_keys, probes, seed):
    n_trees = len(root_keys)
    tree = np.repeat(np.arange(n_trees), probes)
    frontier = Frontier.roots(space, root_keys[tree], tree, 0)
    weight = np.ones(len(tree))
    estimate = np.zeros(len(tree))
    alive = np.arange(len(tree))
    # Public randomness: the probes only explore the data-independent structure.
    rng = np.random.default_rng(seed)
    for depth in range(space.max_depth + 1):
        leaf = is_leaf(space, frontier, depth)
        estimate[alive[leaf]] = weight[alive[leaf]]
        keep = np.flatnonzero(~leaf)
        if len(keep) == 0:
            break
        frontier, alive = frontier.take(keep), alive[keep]
        splits = choose_splits(space, frontier)
        weight[alive] *= splits.n_children
        child = (rng.random(len(frontier)) * splits.n_children).astype(np.int64)
        frontier = expand(space, frontier, splits, np.arange(len(frontier)), child, None, depth)
    return estimate.reshape(n_trees, probes).mean(axis=1)


@dataclass
class FullForest:
    """Every node of every tree, breadth first per tree: what an exported model lists."""

    tree: np.ndarray
    key: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    first_child: np.ndarray
    n_children: np.ndarray


def build_full(space: TreeSpace, root_keys: np.ndarray, max_nodes: int) -> FullForest:
    """Enumerate all nodes, or raise ValueError when there are more than ``max_nodes``."""
    parts = []
    total = 0
    for t in range(len(root_keys)):
        frontier = Frontier.roots(space, root_keys[t : t + 1], np.asarray([t]), 0)
        levels = []
        offset = total
        for depth in range(space.max_depth + 1):
            leaf = is_leaf(space, frontier, depth)
            n = len(frontier)
            feature = np.full(n, -1, dtype=np.int64)
            threshold = np.full(n, np.nan)
            n_children = np.zeros(n, dtype=np.int64)
            inner = np.flatnonzero(~leaf)
            next_frontier = None
            if len(inner):
                sub = frontier.take(inner)
                splits = choose_splits(space, sub)
                feature[inner], threshold[inner] = splits.feature, splits.threshold
                n_children[inner] = splits.n_children
                if total + n + n_children.sum() > max_nodes:
                    raise ValueError(
                        f"the forest has more than {max_nodes:,} nodes, too many to list; "
                        "lower the depth or the number of trees to export it"
                    )
                parent = np.repeat(np.arange(len(inner)), splits.n_children)
                child = np.arange(len(parent)) - np.repeat(
                    np.cumsum(splits.n_children) - splits.n_children, splits.n_children
                )
                next_frontier = expand(space, sub, splits, parent, child, None, depth)
            first_child = offset + n + np.concatenate([[0], np.cumsum(n_children)[:-1]])
            first_child[leaf] = -1
            levels.append(
                (np.full(n, t), frontier.keys, feature, threshold, first_child, n_children)
            )
            offset += n
            total += n
            if next_frontier is None:
                break
            frontier = next_frontier
        parts.extend(levels)
    cols = [np.concatenate(c) for c in zip(*parts)]
    return FullForest(*cols)
