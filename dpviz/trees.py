"""Random decision trees whose structure never looks at the data (SPEC §2).

A node is named by a 64-bit key derived from its tree's root key and its path. Its
split (feature, threshold) is a pure function of that key and of what its path
already fixed (the discrete features used, the continuous sub-domain), so the
forest is one fixed data-independent object, yet only the nodes that records
reach are ever built: memory grows with visited nodes, not with 2^depth.

Records are routed level by level, all trees at once, with numpy arrays of
(record, tree) pairs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .hashing import SALT_FEATURE, SALT_THRESHOLD, child_keys, uniform

# Pairs routed together; bounds the memory of one routing pass.
# A million pairs keeps each pass's temporaries small: predicting 200,000 records through
# 100 trees took 1.9 s in chunks of 1M pairs against 2.3 s in chunks of 4M.
PAIR_CHUNK = 1_000_000
# Every frontier node carries its continuous sub-domain (two floats per continuous
# feature): on wide data that, not the pair count, bounds a pass. 256 MB of frontier.
FRONTIER_BYTES = 256 * 2**20


def node_bytes(space: TreeSpace) -> int:
    """Bytes one frontier node holds (its sub-domain, used-feature flags and ids)."""
    return 16 * space.n_continuous + space.n_discrete + 48


def pair_chunk(space: TreeSpace) -> int:
    """Pairs to route at once: :data:`PAIR_CHUNK`, fewer on wide data so that the
    frontier stays within :data:`FRONTIER_BYTES`."""
    return max(1_000, min(PAIR_CHUNK, FRONTIER_BYTES // node_bytes(space)))


@dataclass(frozen=True)
class TreeSpace:
    """The public inputs of the structure: domains, value counts and the depth.

    Features are numbered continuous first (0..s-1), then discrete (s..s+r-1).
    """

    lows: np.ndarray
    highs: np.ndarray
    n_values: np.ndarray
    max_depth: int

    @property
    def n_continuous(self) -> int:
        return len(self.lows)

    @property
    def n_discrete(self) -> int:
        return len(self.n_values)

    @property
    def branching(self) -> int:
        return int(max(2, self.n_values.max(initial=0)))


@dataclass
class Frontier:
    """The nodes of one level: key, path state, and the node-table id of each."""

    keys: np.ndarray
    used: np.ndarray
    lows: np.ndarray
    highs: np.ndarray
    ids: np.ndarray
    trees: np.ndarray

    @classmethod
    def roots(cls, space: TreeSpace, root_keys: np.ndarray, trees: np.ndarray, first_id: int):
        n = len(root_keys)
        return cls(
            keys=np.asarray(root_keys, dtype=np.uint64),
            used=np.zeros((n, space.n_discrete), dtype=bool),
            lows=np.tile(space.lows, (n, 1)),
            highs=np.tile(space.highs, (n, 1)),
            ids=np.arange(first_id, first_id + n),
            trees=np.asarray(trees),
        )

    def __len__(self) -> int:
        return len(self.keys)

    def take(self, index: np.ndarray) -> Frontier:
        return Frontier(
            self.keys[index],
            self.used[index],
            self.lows[index],
            self.highs[index],
            self.ids[index],
            self.trees[index],
        )


@dataclass
class Splits:
    """The split of each internal frontier node."""

    feature: np.ndarray
    threshold: np.ndarray
    n_children: np.ndarray


class NodeTable:
    """Append-only record of built nodes: parent, the edge that leads in, depth."""

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, ...]] = []
        self.size = 0

    def add(self, parent, feature, threshold, child, depth) -> np.ndarray:
        n = len(parent)
        self._parts.append((parent, feature, threshold, child, np.full(n, depth)))
        ids = np.arange(self.size, self.size + n)
        self.size += n
        return ids

    def arrays(self) -> dict[str, np.ndarray]:
        if not self._parts:
            return {k: np.empty(0) for k in ("parent", "feature", "threshold", "child", "depth")}
        cols = list(zip(*self._parts))
        names = ("parent", "feature", "threshold", "child", "depth")
        return {name: np.concatenate(col) for name, col in zip(names, cols)}


def is_leaf(space: TreeSpace, frontier: Frontier, depth: int) -> np.ndarray:
    if depth >= space.max_depth:
        return np.ones(len(frontier), dtype=bool)
    if space.n_continuous > 0:
        return np.zeros(len(frontier), dtype=bool)
    return frontier.used.all(axis=1)


def choose_splits(space: TreeSpace, frontier: Frontier) -> Splits:
    """Draw each node's split from its key: a uniformly chosen allowed feature, and for a
    continuous one a threshold uniform in the node's current domain."""
    s, r = space.n_continuous, space.n_discrete
    unused = ~frontier.used
    n_allowed = s + unused.sum(axis=1)
    pick = np.minimum(
        (uniform(frontier.keys, SALT_FEATURE) * n_allowed).astype(np.int64), n_allowed - 1
    )
    feature = pick.copy()
    discrete = pick >= s
    if discrete.any():
        rank = pick[discrete] - s
        position = np.cumsum(unused[discrete], axis=1) > rank[:, None]
        feature[discrete] = s + np.argmax(position, axis=1)
    threshold = np.full(len(frontier), np.nan)
    cont = ~discrete
    if cont.any():
        rows = np.flatnonzero(cont)
        lo = frontier.lows[rows, feature[cont]]
        hi = frontier.highs[rows, feature[cont]]
        threshold[cont] = lo + uniform(frontier.keys[cont], SALT_THRESHOLD) * (hi - lo)
    n_children = np.full(len(frontier), 2, dtype=np.int64)
    if r:
        n_children[discrete] = space.n_values[feature[discrete] - s]
    return Splits(feature, threshold, n_children)


def expand(
    space: TreeSpace,
    frontier: Frontier,
    splits: Splits,
    parent: np.ndarray,
    child: np.ndarray,
    table: NodeTable | None,
    depth: int,
) -> Frontier:
    """Build the children (parent[i], child[i]) of internal frontier nodes."""
    s = space.n_continuous
    feature = splits.feature[parent]
    keys = child_keys(frontier.keys[parent], child)
    used = frontier.used[parent]
    lows, highs = frontier.lows[parent], frontier.highs[parent]
    disc = feature >= s
    if disc.any():
        used[np.flatnonzero(disc), feature[disc] - s] = True
    cont = np.flatnonzero(~disc)
    if len(cont):
        thr = splits.threshold[parent[cont]]
        right = child[cont] == 1
        highs[cont[~right], feature[cont[~right]]] = thr[~right]
        lows[cont[right], feature[cont[right]]] = thr[right]
    if table is not None:
        ids = table.add(frontier.ids[parent], feature, splits.threshold[parent], child, depth + 1)
    else:
        ids = np.zeros(len(parent), dtype=np.int64)
    return Frontier(keys, used, lows, highs, ids, frontier.trees[parent])


def compact(codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes in increasing order and each input's index among them."""
    if n_codes <= 4 * len(codes) + 1_000_000:
        present = np.zeros(n_codes, dtype=bool)
        present[codes] = True
        rank = np.cumsum(present) - 1
        return np.flatnonzero(present), rank[codes]
    return np.unique(codes, return_inverse=True)


def _flat(matrix: np.ndarray, dtype) -> tuple[np.ndarray, Callable]:
    """``matrix`` as one flat array, without a copy when its layout and dtype allow, and
    the function giving the flat position of (row, column) pairs."""
    n_rows, n_cols = matrix.shape
    if matrix.flags.f_contiguous and matrix.dtype == dtype:
        return matrix.ravel(order="F"), lambda rows, cols: rows + cols * n_rows
    flat = np.ascontiguousarray(matrix, dtype=dtype).ravel()
    return flat, lambda rows, cols: rows * n_cols + cols


@dataclass
class Routed:
    """Where routed (record, tree) pairs ended: distinct leaves and each pair's leaf."""

    leaf_keys: np.ndarray
    leaf_tree: np.ndarray
    leaf_depth: np.ndarray
    leaf_node: np.ndarray
    pair_leaf: np.ndarray
    nodes: dict[str, np.ndarray] | None


def route(
    space: TreeSpace,
    root_keys: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    pair_record: np.ndarray,
    pair_tree: np.ndarray,
    *,
    keep_nodes: bool = False,
) -> Routed:
    """Route (record, tree) pairs to their leaves, building only the nodes they reach.

    A pair whose record has an unknown discrete value (code -1) at a node splitting on
    that feature stops there and abstains (pair_leaf = -1).
    """
    s, r = space.n_continuous, space.n_discrete
    present = np.bincount(pair_tree, minlength=len(root_keys)) > 0
    trees = np.flatnonzero(present)
    table = NodeTable() if keep_nodes else None
    root_ids = (
        table.add(
            np.full(len(trees), -1),
            np.full(len(trees), -1),
            np.full(len(trees), np.nan),
            np.full(len(trees), -1),
            0,
        )
        if table is not None
        else np.zeros(len(trees), dtype=np.int64)
    )
    frontier = Frontier.roots(space, root_keys[trees], trees, 0)
    frontier.ids = root_ids
    pair_node = (np.cumsum(present) - 1)[pair_tree]
    # Flat views: one gather per level instead of boolean-masked copies per feature kind.
    flat_cont, cont_at = _flat(continuous, np.float64)
    flat_disc, disc_at = _flat(
        discrete, discrete.dtype if discrete.dtype.kind == "i" else np.int64
    )
    pair_index = np.arange(len(pair_record))
    records = np.asarray(pair_record)
    pair_leaf = np.full(len(pair_record), -1, dtype=np.int64)
    leaves: list[tuple[np.ndarray, ...]] = []
    n_leaves = 0
    for depth in range(space.max_depth + 1):
        leaf = is_leaf(space, frontier, depth)
        if leaf.any():
            leaf_rows = np.flatnonzero(leaf)
            leaf_id = np.full(len(frontier), -1, dtype=np.int64)
            leaf_id[leaf_rows] = np.arange(n_leaves, n_leaves + len(leaf_rows))
            n_leaves += len(leaf_rows)
            leaves.append(
                (
                    frontier.keys[leaf_rows],
                    frontier.trees[leaf_rows],
                    np.full(len(leaf_rows), depth),
                    frontier.ids[leaf_rows],
                )
            )
            at_leaf = leaf[pair_node]
            pair_leaf[pair_index[at_leaf]] = leaf_id[pair_node[at_leaf]]
            inner = np.flatnonzero(~leaf)
            if len(inner) == 0:
                break
            remap = np.full(len(frontier), -1, dtype=np.int64)
            remap[inner] = np.arange(len(inner))
            frontier = frontier.take(inner)
            keep = ~at_leaf
            pair_node, pair_index, records = (
                remap[pair_node[keep]],
                pair_index[keep],
                records[keep],
            )
        splits = choose_splits(space, frontier)
        feature = splits.feature[pair_node]
        if r == 0:
            child = (flat_cont[cont_at(records, feature)] >= splits.threshold[pair_node]).astype(
                np.int64
            )
        elif s == 0:
            child = flat_disc[disc_at(records, feature)]
        else:
            above = (
                flat_cont[cont_at(records, np.minimum(feature, s - 1))]
                >= splits.threshold[pair_node]
            )
            code = flat_disc[disc_at(records, np.clip(feature - s, 0, r - 1))]
            child = np.where(feature < s, above, code)
        known = child >= 0
        if not known.all():
            pair_node, pair_index, records, child = (
                pair_node[known],
                pair_index[known],
                records[known],
                child[known],
            )
        width = space.branching
        distinct, pair_node = compact(pair_node * width + child, len(frontier) * width)
        frontier = expand(
            space, frontier, splits, distinct // width, distinct % width, table, depth
        )
    keys, tree, depth_, node = (np.concatenate(c) for c in zip(*leaves))
    return Routed(keys, tree, depth_, node, pair_leaf, table.arrays() if table else None)


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
    totals = _knuth_estimate(space, np.asarray(root_keys, dtype=np.uint64), probes)
    exact = np.zeros(n, dtype=bool)
    for t in np.flatnonzero(totals <= exact_limit):
        count = _count_tree(space, root_keys[t : t + 1], t, 4 * exact_limit)
        if count is not None:
            totals[t], exact[t] = count, True
    return totals, exact


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
