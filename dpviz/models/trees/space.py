"""Random decision trees whose structure never looks at the data (SPEC §2).

A node is named by a 64-bit key derived from its tree's root key and its path. Its
split (feature, threshold) is a pure function of that key and of what its path
already fixed (the discrete features used, the continuous sub-domain), so the
forest is one fixed data-independent object, yet only the nodes that records
reach are ever built: memory grows with visited nodes, not with 2^depth.

Routing (:func:`route`, :func:`route_matrix`) materialises the nodes records can reach
in a :class:`NodeStore` (flat arrays: split feature, threshold, first child), eagerly
while that stays small next to the work (a forest of depth-8 continuous trees is
100 × 511 nodes), and lets each record descend it in one pass: a compiled kernel
(``dpviz.compiled.kernels``, numba) or the same descent in numpy, level by level. Records that
stop at a node whose children are not built yet (large discrete trees, built only
where records go) resume after those children are built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dpviz.compiled import kernels as kernels
from dpviz.compiled.kernels import LEAF, UNBUILT
from dpviz.models.trees.thresholds import quantile_thresholds
from dpviz.privacy.randomness import (
    _GOLDEN as GOLDEN,
)
from dpviz.privacy.randomness import (
    SALT_CHILD,
    SALT_FEATURE,
    SALT_THRESHOLD,
    child_keys,
    splitmix64,
    uniform,
)

# (record, tree) pairs routed in one pass: bounds a pass's node store and temporaries;
# the output (int32 per pair) is the only allocation proportional to the pairs.
PAIR_CHUNK = 64_000_000
# Node visits from which routing waits for the compiled kernels rather than numpy: about
# 4 s of numpy (~22 ns a visit), more than loading the cached kernels takes on a busy
# machine (2-4 s), so smaller work never stalls on them.
COMPILED_FROM_VISITS = 200_000_000
# Node ids routed at a time by route_compact before they become one-byte leaf numbers.
COMPACT_CHUNK_CELLS = 8_000_000
# (tree, record) cells per leaf from which route_compact keeps every leaf of the trees
# instead of finding and renumbering the reached ones (nearly all are reached then).
KEEP_ALL_LEAVES_FROM = 64
# Pairs from which a routing pass is split across threads (the kernels release the GIL).
THREADS_FROM_PAIRS = 2_000_000
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


# Bytes a node store may hold: each node keeps its continuous sub-domain, so on wide data
# a store of (records × depth) lazily built nodes would not fit (300 columns, depth 40:
# 3.8 GB for 200 records), and building whole levels eagerly must stop sooner.
STORE_BYTES = 256 * 2**20


def lazy_pair_chunk(space: TreeSpace) -> int:
    """Pairs per routing pass when the trees are built lazily (each pair may add a node
    per level): the store then stays within :data:`STORE_BYTES`."""
    per_pair = node_bytes(space) * (space.max_depth + 1)
    return max(1_000, min(PAIR_CHUNK, STORE_BYTES // per_pair))


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


def _route_levels(
    space: TreeSpace,
    root_keys: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    pair_record: np.ndarray,
    pair_tree: np.ndarray,
    *,
    keep_nodes: bool = False,
) -> Routed:
    """Route (record, tree) pairs level by level, building only the children they reach.

    The fallback of :func:`route` for trees whose nodes have so many children (a
    discrete feature of hundreds of values) that building all children of the reached
    nodes would cost more than the routing itself. Gives the same leaves.
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


class _TooWide(Exception):
    """Building every child of the reached nodes would cost more than routing."""


_STORE_FIELDS = (
    ("key", np.uint64),
    ("tree", np.int64),
    ("depth", np.int64),
    ("parent", np.int64),
    ("edge", np.int64),
    ("in_feature", np.int64),
    ("in_threshold", np.float64),
    ("feature", np.int32),
    ("threshold", np.float64),
    ("n_children", np.int64),
    ("first_child", np.int32),
)


class NodeStore:
    """Built nodes of some trees as flat arrays that a kernel descends.

    ``feature``/``threshold`` are a node's split (feature -1 at a leaf), ``first_child``
    is ``LEAF``, ``UNBUILT`` or the id of its first child (siblings are contiguous);
    ``parent``/``edge``/``in_feature``/``in_threshold`` describe the edge into a node.
    A parent's id is below its children's. The path state (discrete features used and
    the continuous sub-domain) is kept so that any unbuilt node can be expanded later.
    """

    def __init__(self, space: TreeSpace, root_keys: np.ndarray, trees: np.ndarray):
        self.space = space
        self.size = 0
        self._capacity = 0
        self._grow(max(64, 4 * len(trees)))
        n = len(trees)
        self.roots = self._add(
            Frontier.roots(space, root_keys, trees, 0),
            parent=np.full(n, -1),
            edge=np.full(n, -1),
            in_feature=np.full(n, -1),
            in_threshold=np.full(n, np.nan),
            depth=np.zeros(n, dtype=np.int64),
        )

    def _grow(self, need: int) -> None:
        if need <= self._capacity:
            return
        if need * node_bytes(self.space) > 2 * STORE_BYTES:
            raise _TooWide  # the level-by-level router takes over, in bounded passes
        capacity = max(need, min(2 * self._capacity, 2 * STORE_BYTES // node_bytes(self.space)))
        s, r = self.space.n_continuous, self.space.n_discrete
        for name, dtype in _STORE_FIELDS:
            array = np.empty(capacity, dtype=dtype)
            if self._capacity:
                array[: self.size] = getattr(self, name)[: self.size]
            setattr(self, name, array)
        for name, width, dtype in (
            ("lows", s, np.float64),
            ("highs", s, np.float64),
            ("used", r, bool),
        ):
            array = np.empty((capacity, width), dtype=dtype)
            if self._capacity:
                array[: self.size] = getattr(self, name)[: self.size]
            setattr(self, name, array)
        self._capacity = capacity

    def _add(self, frontier: Frontier, *, parent, edge, in_feature, in_threshold, depth):
        """Append nodes, drawing the split of each internal one from its key."""
        n = len(frontier)
        self._grow(self.size + n)
        ids = np.arange(self.size, self.size + n)
        at = slice(self.size, self.size + n)
        self.key[at], self.tree[at], self.depth[at] = frontier.keys, frontier.trees, depth
        self.parent[at], self.edge[at] = parent, edge
        self.in_feature[at], self.in_threshold[at] = in_feature, in_threshold
        self.lows[at], self.highs[at], self.used[at] = frontier.lows, frontier.highs, frontier.used
        leaf = depth >= self.space.max_depth
        if self.space.n_continuous == 0:
            leaf |= frontier.used.all(axis=1)
        self.feature[at], self.threshold[at] = -1, np.nan
        self.n_children[at], self.first_child[at] = 0, LEAF
        inner = np.flatnonzero(~leaf)
        if len(inner):
            splits = choose_splits(self.space, frontier.take(inner))
            self.feature[ids[inner]] = splits.feature
            self.threshold[ids[inner]] = splits.threshold
            self.n_children[ids[inner]] = splits.n_children
            self.first_child[ids[inner]] = UNBUILT
        self.size += n
        return ids

    def _frontier(self, ids: np.ndarray) -> Frontier:
        return Frontier(
            self.key[ids], self.used[ids], self.lows[ids], self.highs[ids], ids, self.tree[ids]
        )

    def expand(self, ids: np.ndarray) -> np.ndarray:
        """Build every child of the unbuilt internal nodes ``ids`` (distinct)."""
        n_children = self.n_children[ids]
        starts = np.cumsum(n_children) - n_children
        parent = np.repeat(np.arange(len(ids)), n_children)
        child = np.arange(len(parent)) - starts[parent]
        splits = Splits(self.feature[ids].astype(np.int64), self.threshold[ids], n_children)
        kids = expand(self.space, self._frontier(ids), splits, parent, child, None, 0)
        new = self._add(
            kids,
            parent=ids[parent],
            edge=child,
            in_feature=splits.feature[parent],
            in_threshold=splits.threshold[parent],
            depth=self.depth[ids][parent] + 1,
        )
        if self.size >= np.iinfo(np.int32).max:
            raise _TooWide
        self.first_child[ids] = new[0] + starts
        return new

    def build(self, ids: np.ndarray, budget: int) -> None:
        """Build the children of ``ids``, then whole levels below them while the nodes
        built stay within ``budget``: one descent then reaches the leaves."""
        ids = ids[self.first_child[ids] == UNBUILT]  # built nodes keep their children
        built = 0
        if self.space.n_discrete == 0:
            # Binary trees: the whole subtrees' size is known, allocate it at once.
            below = 2 ** (self.space.max_depth - self.depth[ids] + 1) - 2
            self._grow(self.size + int(min(budget, below.sum())))
            if int(below.sum()) <= budget and self._build_compiled(ids):
                return
        while len(ids):
            new = self.expand(ids)
            built += len(new)
            ids = new[self.first_child[new] == UNBUILT]
            if built + int(self.n_children[ids].sum()) > budget:
                return

    def _build_compiled(self, ids: np.ndarray) -> bool:
        """Build the whole binary trees below the roots ``ids`` (all of the store, none
        built yet) in one compiled pass (``build_binary_levels``): the nodes, numbers and
        order the level loop of :meth:`build` gives. False (nothing done) when the
        kernels are not loaded or the store holds more than these roots."""
        n = len(ids)
        if self.size != n or not np.array_equal(ids, np.arange(n)):
            return False
        total = n * (2 ** (self.space.max_depth + 1) - 1)
        if total >= np.iinfo(np.int32).max:
            return False
        compiled = kernels.get(wait=False)
        if compiled is None or "build_binary_levels" not in compiled:
            return False
        space = self.space
        self._grow(total)
        weights = space.feature_weights
        cum = (
            np.empty(0)
            if weights is None
            else np.cumsum(np.asarray(weights, dtype=np.float64)[None, :], axis=1)[0]
        )
        s = space.n_continuous
        # Copies: the kernel is typed for writeable arrays, and an unpickled model's
        # space may hold read-only ones (joblib's memory maps).
        cdf = (
            np.zeros((0, 2))
            if space.split_cdf is None
            else np.array(space.split_cdf, dtype=np.float64, order="C")
        )
        salts = splitmix64(np.arange(2, dtype=np.uint64) ^ SALT_CHILD)
        self.size = compiled["build_binary_levels"](
            self.key,
            self.tree,
            self.depth,
            self.parent,
            self.edge,
            self.in_feature,
            self.in_threshold,
            self.lows,
            self.highs,
            self.feature,
            self.threshold,
            self.n_children,
            self.first_child,
            n,
            space.max_depth,
            salts[0],
            salts[1],
            cum,
            cdf,
            np.array(space.lows[:s], dtype=np.float64),
            np.array(space.highs[:s], dtype=np.float64),
        )
        return True

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.size
        return self.feature[:n], self.threshold[:n], self.first_child[:n]

    def compiled_arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays of the compiled kernels (``dpviz.compiled.numba_kernels``): leaves, unbuilt
        nodes and an abstain sentinel (the last node) loop to themselves by reading the
        zero column after the discrete ones; ``kind`` tells them apart."""
        n = self.size
        space = self.space
        first = self.first_child[:n]
        stop = first < 0
        ids = np.arange(n + 1, dtype=np.int32)
        feature = np.append(self.feature[:n], 0).astype(np.int32)
        feature[np.append(stop, True)] = space.n_continuous + space.n_discrete
        first_child = np.append(np.where(stop, ids[:n], first), n).astype(np.int32)
        kind = np.full(n + 1, 3, dtype=np.int8)
        kind[:n][first == LEAF] = 0
        kind[:n][first == UNBUILT] = 1
        kind[n] = 2
        threshold = np.append(self.threshold[:n], np.inf)
        return feature, threshold, first_child, kind


def _layout(continuous: np.ndarray, discrete: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The encodings as contiguous float64 / int32 arrays (no copy when they are)."""

    def fix(a, dtype):
        a = np.asarray(a, dtype=dtype)
        if a.flags.writeable and (a.flags.f_contiguous or a.flags.c_contiguous):
            return a
        # A worker's read-only memory map too: the compiled kernels take writable arrays.
        return np.array(a, order="F" if a.flags.f_contiguous else "C")

    return fix(continuous, np.float64), fix(discrete, np.int32)


def record_trees(
    continuous: np.ndarray, discrete: np.ndarray, y: np.ndarray, n_trees: int, seed: int
) -> np.ndarray | None:
    """Each record's tree, ``hash_columns(its columns, seed) % n_trees`` (see
    ``dpviz.models.forest.estimator.hash_trees``), by the compiled kernel in one pass over the
    rows; None while the kernels are not loaded (their loading starts)."""
    compiled = kernels.get(wait=False)
    if compiled is None:
        return None
    cont, disc = _layout(continuous, discrete)
    y = np.ascontiguousarray(y, dtype=np.int32)
    if not y.flags.writeable:
        y = y.copy()
    width = cont.shape[1] + disc.shape[1] + 1
    mult = splitmix64(np.arange(1, width + 1, dtype=np.uint64) ^ SALT_CHILD) | np.uint64(1)
    start = splitmix64(np.uint64(seed))
    out = np.empty(len(y), dtype=np.int64)
    fn = compiled["record_trees"]
    args = (cont.view(np.uint64), disc, y, np.uint64(start), mult, GOLDEN, int(n_trees))
    jobs = [(fn, (*args, a, b, out)) for a, b in _ranges(len(y), _threads(len(y)))]
    if jobs:
        _run(jobs)
    return out


def _descend_numpy(store: NodeStore, cont, disc, rec, node) -> np.ndarray:
    """The kernels' descent (``dpviz.compiled.kernels``) in numpy, all pairs one level a step."""
    s, r = store.space.n_continuous, store.space.n_discrete
    feature, threshold, first_child = store.kernel_arrays()
    flat_cont, cont_at = _flat(cont, np.float64)
    flat_disc, disc_at = _flat(disc, np.int32)
    out = np.empty(len(rec), dtype=np.int32)
    active = np.arange(len(rec))
    v = np.asarray(node, dtype=np.int64)
    rec = np.asarray(rec, dtype=np.int64)
    while len(active):
        fc = first_child[v].astype(np.int64)
        f = feature[v].astype(np.int64)
        if r == 0:
            c = (flat_cont[cont_at(rec, np.maximum(f, 0))] >= threshold[v]).astype(np.int64)
        elif s == 0:
            c = flat_disc[disc_at(rec, np.clip(f, 0, r - 1))].astype(np.int64)
        else:
            above = flat_cont[cont_at(rec, np.clip(f, 0, s - 1))] >= threshold[v]
            code = flat_disc[disc_at(rec, np.clip(f - s, 0, r - 1))]
            c = np.where(f < s, above, code).astype(np.int64)
        leaf = fc == LEAF
        done = leaf | (c < 0) | (fc == UNBUILT)
        if done.any():
            result = np.where(leaf, v, np.where(c < 0, -1, -(v + 2)))
            out[active[done]] = result[done]
            keep = ~done
            active, v, rec, fc, c = active[keep], v[keep], rec[keep], fc[keep], c[keep]
        v = fc + c
    return out


def _ranges(n: int, parts: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _threads(n_pairs: int) -> int:
    return kernels.cores() if n_pairs >= THREADS_FROM_PAIRS else 1


def _run(jobs) -> None:
    """Run kernel calls, on the shared threads when there are several."""
    if len(jobs) == 1:
        fn, args = jobs[0]
        fn(*args)
        return
    for future in [kernels.pool().submit(fn, *args) for fn, args in jobs]:
        future.result()


def _with_zeros(disc: np.ndarray) -> np.ndarray:
    """The discrete codes and a last column of zeros (read by nodes that stay put)."""
    out = np.zeros((disc.shape[0], disc.shape[1] + 1), dtype=np.int32, order="F")
    out[:, :-1] = disc
    return out


def _descend_pairs(compiled, store, cont, disc, rec, node) -> np.ndarray:
    if compiled is None:
        return _descend_numpy(store, cont, disc, rec, node)
    arrays = (*store.compiled_arrays(), cont, _with_zeros(disc))
    s, steps = store.space.n_continuous, store.space.max_depth
    rec = np.ascontiguousarray(rec, dtype=np.int64)
    node = np.ascontiguousarray(node, dtype=np.int32)
    out = np.empty(len(rec), dtype=np.int32)
    fn = compiled["descend_pairs"]
    jobs = [
        (fn, (*arrays, s, steps, rec, node, a, b, out))
        for a, b in _ranges(len(rec), _threads(len(rec)))
    ]
    if jobs:
        _run(jobs)
    return out


def _resume(compiled, store, cont, disc, out, record_of, budget) -> None:
    """Finish the pairs of ``out`` (flat) that stopped at unbuilt nodes."""
    while True:
        if not (store.first_child[: store.size] == UNBUILT).any():
            return  # every node is built (the usual case): nothing stopped on the way
        pending = np.flatnonzero(out < -1)
        if len(pending) == 0:
            return
        at = -(out[pending].astype(np.int64) + 2)
        ids = np.unique(at)
        if int(store.n_children[ids].sum()) > max(8 * len(pending), 1 << 20):
            raise _TooWide
        store.build(ids, max(budget, len(pending) // 4))
        out[pending] = _descend_pairs(compiled, store, cont, disc, record_of(pending), at)


def _budget(n_pairs: int, space: TreeSpace) -> int:
    # Eager building is worth it while the nodes are few next to the pairs routed, and
    # only while they fit the store's bytes.
    return min(max(65_536, n_pairs // 4), STORE_BYTES // node_bytes(space))


def _leaves(compiled, store: NodeStore, out: np.ndarray, keep_nodes: bool) -> Routed:
    """Number the reached leaves (in node order) and rewrite ``out`` in place from node
    ids to those numbers (-1 stays -1)."""
    flat = out.reshape(-1)
    present = np.zeros(store.size, dtype=bool)
    if compiled is not None:
        compiled["mark"](flat, present)
    else:
        present[flat[flat >= 0]] = True
    leaf_nodes = np.flatnonzero(present)
    rank = np.full(store.size + 1, -1, dtype=np.int32)
    rank[leaf_nodes] = np.arange(len(leaf_nodes), dtype=np.int32)
    if compiled is not None:
        jobs = [
            (compiled["remap"], (flat[a:b], rank))
            for a, b in _ranges(len(flat), _threads(len(flat)))
        ]
        if jobs:
            _run(jobs)
    else:
        flat[:] = rank[flat]  # -1 reads the last entry, -1
    nodes = None
    leaf_node = leaf_nodes
    if keep_nodes:
        # Only the reached part: what the leaf table's paths and the tree views show.
        keep = np.zeros(store.size, dtype=bool)
        frontier = leaf_nodes
        while len(frontier):
            keep[frontier] = True
            up = store.parent[frontier]
            up = up[up >= 0]
            # Siblings share a parent: the repeats do no harm (marking is idempotent, a
            # level holds at most one node per reached leaf) and sorting them out cost
            # more than they do (~1.5 ms a fit of 100 trees of depth 8).
            frontier = up[~keep[up]]
        ids = np.flatnonzero(keep)
        new_id = np.cumsum(keep) - 1
        parent = store.parent[ids]
        nodes = {
            "parent": np.where(parent >= 0, new_id[np.maximum(parent, 0)], -1),
            "feature": store.in_feature[ids],
            "threshold": store.in_threshold[ids],
            "child": store.edge[ids],
            "depth": store.depth[ids],
        }
        leaf_node = new_id[leaf_nodes]
    return Routed(
        store.key[leaf_nodes],
        store.tree[leaf_nodes],
        store.depth[leaf_nodes],
        leaf_node,
        out,
        nodes,
    )


def route(
    space: TreeSpace,
    root_keys: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    pair_record: np.ndarray,
    pair_tree: np.ndarray,
    *,
    keep_nodes: bool = False,
    store: NodeStore | None = None,
) -> Routed:
    """Route (record, tree) pairs to their leaves, building the nodes they can reach.

    A pair whose record has an unknown discrete value (code -1) at a node splitting on
    that feature stops there and abstains (pair_leaf = -1). Leaves are numbered in the
    order of their node ids. ``store``: nodes already built for every tree of
    ``root_keys`` (a :class:`CompactForest`'s), used and grown instead of a new one.
    """
    pair_record = np.asarray(pair_record, dtype=np.int64)
    pair_tree = np.asarray(pair_tree, dtype=np.int64)
    present = np.bincount(pair_tree, minlength=len(root_keys)) > 0
    if store is not None:
        present[:] = True  # the store's roots are every tree's
    trees = np.flatnonzero(present)
    if store is None:
        store = NodeStore(space, np.asarray(root_keys)[trees], trees)
    cont, disc = _layout(continuous, discrete)
    n_pairs = len(pair_record)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= COMPILED_FROM_VISITS)
    budget = _budget(n_pairs, space)
    heap = getattr(store, "heap_pairs", None)
    if compiled is not None and heap is not None:
        # Trees built whole in heap order (compact_forest's): each pair's leaf directly.
        feature, threshold, leaf_nodes, offsets = heap
        position = (np.cumsum(present) - 1)[pair_tree]
        out = np.empty(n_pairs, dtype=np.int32)
        fn = compiled["descend_heap_pairs"]
        args = (feature, threshold, cont, space.max_depth)
        jobs = [
            (fn, (*args, pair_record[a:b], position[a:b], offsets, out[a:b]))
            for a, b in _ranges(n_pairs, _threads(n_pairs))
        ]
        if jobs:
            _run(jobs)
        out = leaf_nodes[out]
        routed = _leaves(compiled, store, out, keep_nodes)
        routed.pair_leaf = routed.pair_leaf.astype(np.int64)
        return routed
    try:
        store.build(store.roots, budget)
        node = store.roots[(np.cumsum(present) - 1)[pair_tree]]
        out = _descend_pairs(compiled, store, cont, disc, pair_record, node)
        _resume(compiled, store, cont, disc, out, lambda p: pair_record[p], budget)
    except _TooWide:
        return _route_levels(
            space, root_keys, continuous, discrete, pair_record, pair_tree, keep_nodes=keep_nodes
        )
    routed = _leaves(compiled, store, out, keep_nodes)
    routed.pair_leaf = routed.pair_leaf.astype(np.int64)
    return routed


def route_matrix(
    space: TreeSpace,
    root_keys: np.ndarray,
    trees: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    *,
    keep_nodes: bool = False,
) -> Routed:
    """Route every record through every tree of ``trees``: ``pair_leaf`` is then a
    (len(trees), n_records) int32 matrix of leaf numbers (-1: abstains), the only
    allocation proportional to records × trees."""
    trees = np.asarray(trees, dtype=np.int64)
    cont, disc = _layout(continuous, discrete)
    n = cont.shape[0]
    n_pairs = n * len(trees)
    store = NodeStore(space, np.asarray(root_keys)[trees], trees)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= COMPILED_FROM_VISITS)
    budget = _budget(n_pairs, space)
    out = np.empty((len(trees), n), dtype=np.int32)
    try:
        store.build(store.roots, budget)
        roots = store.roots.astype(np.int32)
        if compiled is None:
            out.reshape(-1)[:] = _descend_numpy(
                store, cont, disc, np.tile(np.arange(n), len(trees)), np.repeat(roots, n)
            )
        else:
            # The compact router's kernel, writing each stop's node result (int32).
            fn = compiled["descend_table"]
            arrays = store.compiled_arrays()
            results = np.empty(len(arrays[3]), dtype=np.int32)
            compiled["result_table"](arrays[3], results)
            arrays = (*arrays, cont, _with_zeros(disc))
            s, steps = space.n_continuous, space.max_depth
            jobs = [
                (fn, (*arrays, s, steps, roots, a, b, results, out))
                for a, b in _ranges(len(trees), min(len(trees), _threads(n_pairs)))
            ]
            if jobs:
                _run(jobs)
        _resume(compiled, store, cont, disc, out.reshape(-1), lambda p: p % n, budget)
    except _TooWide:
        routed = _route_levels(
            space,
            root_keys,
            continuous,
            discrete,
            np.tile(np.arange(n), len(trees)),
            np.repeat(trees, n),
            keep_nodes=keep_nodes,
        )
        routed.pair_leaf = routed.pair_leaf.astype(np.int32).reshape(len(trees), n)
        return routed
    return _leaves(compiled, store, out, keep_nodes)


def _matrix_jobs(fn, matrix, args: tuple, out):
    """Calls ``fn(matrix, *args, a, b, out)`` over ranges of records, one per thread."""
    n = matrix.shape[1]
    return [(fn, (matrix, *args, a, b, out)) for a, b in _ranges(n, _threads(matrix.size))]


def matrix_label_counts(
    matrix: np.ndarray, labels: np.ndarray, k: int, offsets: np.ndarray | None = None
) -> np.ndarray | None:
    """Per record, how many trees give each label: ``labels`` (uint8, one per leaf,
    ``k`` for abstain) of the leaves in ``matrix`` (trees, records): leaf indices, or
    per-tree leaf numbers to which ``offsets[t]`` is added (:func:`route_compact`).
    (records, k) floats, or None when the compiled kernels are not loaded."""
    compiled = kernels.get(wait=matrix.size >= COMPILED_FROM_VISITS)
    if compiled is None or not matrix.flags.c_contiguous:
        return None
    local = offsets is not None
    lead = (np.asarray(offsets, np.int64),) if local else ()
    out = np.zeros((matrix.shape[1], k + 1))
    bits = max(1, int(matrix.shape[0]).bit_length())
    if bits * (k + 1) <= 63:
        # Counts of every label in one integer: label c adds 2^(bits·c).
        increment = np.left_shift(1, bits * np.asarray(labels, np.int64))
        fn = compiled["packed_counts_local" if local else "packed_counts"]
        jobs = _matrix_jobs(fn, matrix, (*lead, increment, bits), out)
    else:
        fn = compiled["label_counts_local" if local else "label_counts"]
        jobs = _matrix_jobs(fn, matrix, (*lead, np.asarray(labels, np.uint8)), out)
    if jobs:
        _run(jobs)
    return out[:, :k]


def heap_sums_kernels(forest: CompactForest, n_records: int) -> dict | None:
    """The compiled kernels when :func:`heap_value_sums` applies to ``forest`` and
    ``n_records`` records (waiting for them only for large work, as routing does)."""
    if forest.heap is None or len(forest.trees) != len(forest.offsets):
        return None
    visits = n_records * len(forest.trees) * (forest.store.space.max_depth + 1)
    return kernels.get(wait=visits >= COMPILED_FROM_VISITS)


def heap_value_sums(
    forest: CompactForest, continuous: np.ndarray, values: np.ndarray
) -> np.ndarray | None:
    """Per record, the sum over the trees of ``values`` (one row per leaf of ``forest``,
    in its leaf order) of the leaves it reaches, added in tree order: what
    :func:`route_compact` then :func:`matrix_value_sums` give, in one compiled pass that
    writes no leaf matrix. None where that does not apply (trees not in heap order,
    kernels not loaded)."""
    compiled = heap_sums_kernels(forest, len(continuous))
    if compiled is None:
        return None
    cont = _layout(continuous, np.empty((0, 0), np.int32))[0]
    n = cont.shape[0]
    depth = int(forest.store.space.max_depth)
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros((n, values.shape[1]))
    # A column of ones (count_values' trees reached) sums to the tree count exactly in
    # a complete tree, which every record reaches: set, not added (a third of the adds
    # with two classes).
    ones = values.shape[1] - 1 if values.shape[1] and (values[:, -1] == 1.0).all() else None
    if ones is not None:
        out[:, ones] = float(len(forest.trees))
        values, sums = np.ascontiguousarray(values[:, :ones]), np.zeros((n, ones))
    else:
        values, sums = np.ascontiguousarray(values), out
    fn = compiled["heap_value_sums"]
    offsets = np.asarray(forest.offsets, dtype=np.int64)
    jobs = [
        (fn, (*forest.heap, cont, depth, offsets, values, a, b, sums))
        for a, b in _ranges(n, _threads(n * len(forest.trees)))
    ]
    if jobs:
        _run(jobs)
    if sums is not out:
        out[:, :ones] = sums
    return out


def matrix_value_sums(
    matrix: np.ndarray, values: np.ndarray, offsets: np.ndarray | None = None
) -> np.ndarray | None:
    """Per record, the sum over the trees of ``values`` (leaves × k) of its leaves in
    ``matrix`` (as in :func:`matrix_label_counts`), added in tree order; None when the
    compiled kernels are not loaded."""
    compiled = kernels.get(wait=matrix.size >= COMPILED_FROM_VISITS)
    if compiled is None or not matrix.flags.c_contiguous:
        return None
    values = np.ascontiguousarray(values, dtype=np.float64)
    out = np.zeros((matrix.shape[1], values.shape[1]))
    if offsets is None:
        jobs = _matrix_jobs(compiled["value_sums"], matrix, (values,), out)
    else:
        offsets = np.asarray(offsets, np.int64)
        jobs = _matrix_jobs(compiled["value_sums_local"], matrix, (offsets, values), out)
    if jobs:
        _run(jobs)
    return out


def _word_layout(labels: list[np.ndarray], k: int, bits: int) -> list[tuple[int, int, int]] | None:
    """Per release, (word, shift, first class with a field) for ``bits``-bit fields; None
    when one release's fields do not fit in a word (a word's sign bit stays clear)."""
    layout = []
    word, used = 0, 0
    for label in labels:
        first = 0 if (np.asarray(label) < 0).any() else 1
        width = bits * (k - first)
        if width > 63:
            return None
        if used + width > 63:
            word, used = word + 1, 0
        layout.append((word, used, first))
        used += width
    return layout


def _packing(labels: list[np.ndarray], k: int, n_trees: int):
    """The field width, trees per chunk and word layout that cost the fewest passes.

    A chunk of at most 2^bits - 1 trees sums into its own words, so narrower fields
    pack more releases a word at the price of one more chunk row to read per release
    when unpacking (weighed as three gather-adds: measured, 100 trees × 600,000 records,
    one word a tree 17 ms, a chunk row read per release ~1 ms). 20 binary releases
    through 100 trees: 6-bit fields in two chunks, two words a tree instead of three."""
    best = None
    for bits in range(1, n_trees.bit_length() + 1):
        chunk = min(n_trees, (1 << bits) - 1)
        layout = _word_layout(labels, k, bits)
        if layout is None:
            continue
        chunks = -(-n_trees // chunk)
        cost = n_trees * (layout[-1][0] + 1) + 3 * len(labels) * chunks
        if best is None or cost < best[0]:
            best = (cost, bits, chunk, layout)
    return None if best is None else best[1:]


def packed_label_votes(
    local: np.ndarray, offsets: np.ndarray, labels: list[np.ndarray], k: int
) -> Callable[[int], np.ndarray] | None:
    """The votes of several label releases over one compact matrix, in one pass.

    ``labels[r]`` gives release r's label of every leaf (-1 abstains); ``local`` and
    ``offsets`` are a compact matrix (:class:`CompactRouted`) in which every record
    reaches a leaf of every tree. Each leaf adds a few integers whose bit fields count
    the labels of several releases, so a 20-ε sweep reads the matrix once instead of
    20 times; the trees are summed in chunks small enough for narrow fields
    (:func:`_packing`). A release with no abstaining leaf needs no field for class 0
    (the trees less the other classes' votes). Returns ``votes(r)``, release r's
    (records, k) float counts (equal to :func:`matrix_label_counts`'s), or None when the
    compiled kernels are not loaded or a release's fields do not fit."""
    compiled = kernels.get(wait=local.size >= COMPILED_FROM_VISITS)
    if compiled is None or not local.flags.c_contiguous or local.dtype.itemsize > 2:
        return None
    n_trees = int(local.shape[0])
    packing = _packing(labels, k, n_trees) if labels else None
    if packing is None:
        return None
    bits, chunk, layout = packing
    increment = np.zeros((layout[-1][0] + 1, len(labels[0])), dtype=np.int64)
    for label, (w, shift, first) in zip(labels, layout, strict=True):
        label = np.asarray(label, dtype=np.int64)
        # No boolean gather and scatter per release: a leaf with no field adds 0.
        field = np.left_shift(1, shift + bits * np.maximum(label - first, 0))
        increment[w] += np.where(label >= first, field, 0)
    starts = range(0, n_trees, chunk)
    sums = np.zeros((len(increment), len(starts), local.shape[1]), dtype=np.int64)
    offsets = np.asarray(offsets, np.int64)
    n = local.shape[1]
    jobs = [
        (
            compiled["word_sums_local"],
            (local[t0 : t0 + chunk], offsets[t0 : t0 + chunk], increment, a, b, sums[:, c]),
        )
        for c, t0 in enumerate(starts)
        for a, b in _ranges(n, _threads(local.size))
    ]
    _run(jobs)

    def votes(r: int, base: np.ndarray | None = None) -> np.ndarray:
        w, shift, first = layout[r]
        out = np.empty((n, k))
        add = np.zeros(k) if base is None else np.asarray(base, np.float64).reshape(k)
        compiled["unpack_votes"](sums[w], shift, bits, first, n_trees, add, out)
        return out

    return votes


@dataclass
class CompactRouted:
    """Every record through every tree of a fully built forest, compactly: ``local``
    (trees, records) holds each record's leaf number within its tree (uint8 or uint16;
    ``abstain``, the dtype's largest value, where it abstains) and leaf ``offsets[t] +
    local[t, i]`` of the leaf arrays, which list every leaf of the trees, tree by tree."""

    leaf_keys: np.ndarray
    leaf_tree: np.ndarray
    leaf_depth: np.ndarray
    local: np.ndarray
    offsets: np.ndarray
    abstain: int | None


@dataclass
class CompactForest:
    """A fully built node store ready for :func:`route_compact`: leaves numbered tree by
    tree, each leaf's number within its tree, and the kernels' arrays. Depends on the
    structure only, so a model keeps it for every later routing."""

    store: NodeStore
    trees: np.ndarray
    leaf_nodes: np.ndarray
    offsets: np.ndarray
    table: np.ndarray
    abstain: int | None
    arrays: tuple | None = None
    heap: tuple[np.ndarray, np.ndarray] | None = None  # complete binary trees, heap order


def compact_forest(
    space: TreeSpace, root_keys: np.ndarray, trees: np.ndarray, n_records: int
) -> CompactForest | None:
    """Build trees ``trees`` whole if that stays within the build budget for routing
    ``n_records`` records, with ≤ 65,535 leaves each; None otherwise."""
    trees = np.asarray(trees, dtype=np.int64)
    store = NodeStore(space, np.asarray(root_keys)[trees], trees)
    try:
        store.build(store.roots, _budget(n_records * len(trees), space))
    except _TooWide:
        return None
    first = store.first_child[: store.size]
    if (first == UNBUILT).any():
        return None
    leaf_nodes = np.flatnonzero(first == LEAF)
    leaf_nodes = leaf_nodes[np.argsort(store.tree[leaf_nodes], kind="stable")]
    position = np.searchsorted(trees, store.tree[leaf_nodes])
    per_tree = np.bincount(position, minlength=len(trees))
    may_abstain = space.n_discrete > 0
    widest = int(per_tree.max(initial=0)) + may_abstain
    dtype = np.uint8 if widest <= 256 else np.uint16 if widest <= 65536 else None
    if dtype is None:
        return None
    offsets = np.concatenate([[0], np.cumsum(per_tree)[:-1]]).astype(np.int64)
    abstain = int(np.iinfo(dtype).max) if may_abstain else None
    # Node id → leaf number within its tree; the abstain sentinel (the kernels' last
    # node, and index -1 for numpy) maps to ``abstain``.
    table = np.zeros(store.size + 1, dtype=dtype)
    table[leaf_nodes] = np.arange(len(leaf_nodes)) - offsets[position]
    table[-1] = abstain if abstain is not None else 0
    forest = CompactForest(store, trees, leaf_nodes, offsets, table, abstain)
    size = 2 ** (space.max_depth + 1) - 1
    # (The heap kernels read the first two levels' splits once: depth ≥ 2.)
    if space.n_discrete == 0 and space.max_depth >= 2 and store.size == size * len(trees):
        # Ids grow level by level and, within a tree, in parent then child order: sorted
        # by tree they are each tree's nodes in heap order (children of v: 2v+1, 2v+2),
        # and a leaf's number within its tree is its position on the last level.
        order = np.argsort(store.tree[: store.size], kind="stable")
        forest.heap = (
            store.feature[order].reshape(len(trees), size).clip(0),
            store.threshold[order].reshape(len(trees), size),
        )
        # For route() through this store (a disjoint fit): leaf node ids by tree.
        store.heap_pairs = (*forest.heap, leaf_nodes.astype(np.int32), offsets)
    return forest


def route_compact(
    space: TreeSpace,
    root_keys: np.ndarray,
    trees: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    *,
    forest: CompactForest | None = None,
) -> CompactRouted | None:
    """:func:`route_matrix` with one or two bytes per (tree, record) instead of four,
    for forests whose trees are built whole (``forest``, or built here by
    :func:`compact_forest`); None when they cannot be (then use :func:`route_matrix`).
    The kernels write each leaf's number straight into the matrix."""
    cont, disc = _layout(continuous, discrete)
    n = cont.shape[0]
    if forest is None:
        forest = compact_forest(space, root_keys, trees, n)
        if forest is None:
            return None
    store, trees, table = forest.store, forest.trees, forest.table
    n_pairs = n * len(trees)
    local = np.empty((len(trees), n), dtype=table.dtype)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= COMPILED_FROM_VISITS)
    roots = store.roots.astype(np.int32)
    if compiled is not None and forest.heap is not None:
        fn = compiled["descend_heap"]
        jobs = [
            (fn, (*forest.heap, cont, space.max_depth, a, b, local))
            for a, b in _ranges(len(trees), min(len(trees), _threads(n_pairs)))
        ]
        if jobs:
            _run(jobs)
    elif compiled is not None:
        if forest.arrays is None:
            forest.arrays = store.compiled_arrays()
        arrays = (*forest.arrays, cont, _with_zeros(disc))
        s, steps = space.n_continuous, space.max_depth
        fn = compiled["descend_table"]
        jobs = [
            (fn, (*arrays, s, steps, roots, a, b, table, local))
            for a, b in _ranges(len(trees), min(len(trees), _threads(n_pairs)))
        ]
        if jobs:
            _run(jobs)
    else:
        rows = max(1, min(len(trees), COMPACT_CHUNK_CELLS // max(1, n)))
        for t0 in range(0, len(trees), rows):
            t1 = min(len(trees), t0 + rows)
            nodes = _descend_numpy(
                store, cont, disc, np.tile(np.arange(n), t1 - t0), np.repeat(roots[t0:t1], n)
            ).reshape(t1 - t0, n)
            np.take(table, nodes, out=local[t0:t1], mode="wrap")  # -1: the last entry
    # Keep the leaves records reached only (as the other routers do: a leaf nobody
    # reached needs no output), numbered again tree by tree, in place. With many
    # records a leaf nearly every leaf is reached: two passes over the matrix (~12% of
    # predicting 600,000 records) would drop almost none, so every leaf is kept.
    offsets = forest.offsets
    abstain = -1 if forest.abstain is None else forest.abstain
    if local.size >= KEEP_ALL_LEAVES_FROM * len(forest.leaf_nodes):
        leaf_nodes = forest.leaf_nodes
        return CompactRouted(
            store.key[leaf_nodes],
            store.tree[leaf_nodes],
            store.depth[leaf_nodes],
            local,
            offsets,
            forest.abstain,
        )
    present = np.zeros(len(forest.leaf_nodes), dtype=bool)
    if compiled is not None:
        compiled["reached"](local, offsets, abstain, present)
    else:
        voting = local != abstain
        present[(offsets[:, None] + local.astype(np.int64))[voting]] = True
    keep = np.flatnonzero(present)
    if len(keep) < len(present):
        rank = np.cumsum(present) - 1
        start = np.searchsorted(keep, offsets)  # first kept leaf of each tree
        tree_of = np.repeat(np.arange(len(offsets)), np.diff(np.append(offsets, len(present))))
        number = (rank - start[tree_of]).astype(np.int64)
        if compiled is not None:
            compiled["renumber"](local, offsets, abstain, number)
        else:
            voting = local != abstain
            index = (offsets[:, None] + local.astype(np.int64))[voting]
            local[voting] = number[index].astype(local.dtype)
        offsets = start.astype(np.int64)
    leaf_nodes = forest.leaf_nodes[keep]
    return CompactRouted(
        store.key[leaf_nodes],
        store.tree[leaf_nodes],
        store.depth[leaf_nodes],
        local,
        offsets,
        forest.abstain,
    )
