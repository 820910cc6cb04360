"""Random decision trees whose structure never looks at the data (SPEC §2).

A node is named by a 64-bit key derived from its tree's root key and its path. Its
split (feature, threshold) is a pure function of that key and of what its path
already fixed (the discrete features used, the continuous sub-domain), so the
forest is one fixed data-independent object, yet only the nodes that records
reach are ever built: memory grows with visited nodes, not with 2^depth.

This module holds the tree space (:class:`TreeSpace`), a level of nodes
(:class:`Frontier`) and the draws that grow it (:func:`choose_splits`, :func:`expand`),
and the sizes that bound a frontier and an export. The nodes records reach are kept in
``store`` and found by ``routing`` (``compact`` for trees built whole); ``votes`` sums
what the leaves give.

Privacy: nothing here reads a record. Splits come from the root keys (``random_state``,
public) and from released noisy histograms (``split_cdf``, ``feature_weights``): the
structure is post-processing of booked releases.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.models.trees.thresholds import quantile_thresholds
from dpviz.privacy.randomness import SALT_FEATURE, SALT_THRESHOLD, child_keys, uniform

# (record, tree) pairs routed in one pass: bounds a pass's node store and temporaries;
# the output (int32 per pair) is the only allocation proportional to the pairs.
PAIR_CHUNK = 64_000_000
# Every frontier node of the level-by-level router and of the leaf estimate carries its
# continuous sub-domain (two floats per continuous feature): on wide data that, not the
# pair count, bounds a pass. 256 MB of frontier.
FRONTIER_BYTES = 256 * 2**20


def node_bytes(space: TreeSpace) -> int:
    """Bytes one frontier node holds (its sub-domain, used-feature flags and ids)."""
    return 16 * space.n_continuous + space.n_discrete + 48


# The most nodes an exported model lists (every node of every tree), and the frontier
# bytes listing them may hold (a sub-domain per node): on wide data the bytes bound an
# export before the node count does. Leaves no record reached are drawn at fit time
# exactly when the trees fit within this limit (:func:`leaf_space_keys`).
MAX_EXPORT_NODES = 2_000_000
EXPORT_FRONTIER_BYTES = 512 * 2**20


def export_node_limit(space: TreeSpace) -> int:
    """Most nodes an export of trees over ``space`` may list (memory-aware)."""
    return int(min(MAX_EXPORT_NODES, EXPORT_FRONTIER_BYTES // node_bytes(space)))


def pair_chunk(space: TreeSpace) -> int:
    """Pairs to route at once: :data:`PAIR_CHUNK`, fewer on wide data so that a
    frontier stays within :data:`FRONTIER_BYTES`."""
    return max(1_000, min(PAIR_CHUNK, FRONTIER_BYTES // node_bytes(space)))


@dataclass(frozen=True)
class TreeSpace:
    """The public inputs of the structure: domains, value counts and the depth.

    Features are numbered continuous first (0..s-1), then discrete (s..s+r-1).
    ``split_cdf``: the released distribution function of each continuous feature
    (:mod:`dpviz.models.forest.splits`) that thresholds are drawn uniformly in; None
    draws them uniformly in the node's sub-domain (SPEC §2). ``feature_weights``: each
    feature's released split-draw weight (same module); None draws the allowed features
    uniformly (SPEC §2).
    """

    lows: np.ndarray
    highs: np.ndarray
    n_values: np.ndarray
    max_depth: int
    split_cdf: np.ndarray | None = None
    feature_weights: np.ndarray | None = None

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


def choose_features(space: TreeSpace, keys: np.ndarray, used: np.ndarray) -> np.ndarray:
    """The split feature of each internal node from its key and the discrete features its
    path used: an allowed feature drawn uniformly, or in proportion to the space's
    released feature weights. Public structure only."""
    s, r = space.n_continuous, space.n_discrete
    unused = ~used
    draw = uniform(keys, SALT_FEATURE)
    if space.feature_weights is None:
        n_allowed = s + unused.sum(axis=1)
        pick = np.minimum((draw * n_allowed).astype(np.int64), n_allowed - 1)
        feature = pick.copy()
        discrete = pick >= s
        if discrete.any():
            rank = pick[discrete] - s
            position = np.cumsum(unused[discrete], axis=1) > rank[:, None]
            feature[discrete] = s + np.argmax(position, axis=1)
        return feature
    weights = np.broadcast_to(space.feature_weights, (len(keys), s + r)).copy()
    weights[:, s:] *= unused
    cumulative = np.cumsum(weights, axis=1)
    below = cumulative <= (draw * cumulative[:, -1])[:, None]
    # A feature of weight 0 is never drawn: the first one whose cumulative weight
    # passes the draw.
    return np.minimum(below.sum(axis=1), s + r - 1)


def choose_splits(space: TreeSpace, frontier: Frontier) -> Splits:
    """Draw each node's split from its key: an allowed feature (uniformly, or in
    proportion to the space's released feature weights), and for a continuous one a
    threshold uniform in the node's current domain (or in the space's released
    distribution function over that domain)."""
    s, r = space.n_continuous, space.n_discrete
    feature = choose_features(space, frontier.keys, frontier.used)
    discrete = feature >= s
    threshold = np.full(len(frontier), np.nan)
    cont = ~discrete
    if cont.any():
        rows = np.flatnonzero(cont)
        lo = frontier.lows[rows, feature[cont]]
        hi = frontier.highs[rows, feature[cont]]
        u = uniform(frontier.keys[cont], SALT_THRESHOLD)
        if space.split_cdf is None:
            threshold[cont] = lo + u * (hi - lo)
        else:
            threshold[cont] = quantile_thresholds(
                space.split_cdf, space.lows, space.highs, feature[cont], lo, hi, u
            )
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
