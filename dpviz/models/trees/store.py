"""The built nodes of some trees as flat arrays that a kernel descends (:class:`NodeStore`).

A store starts with its trees' roots and grows where records go: a node's children are
built from its key (``space``), eagerly by whole levels while that stays small next to
the routing work (:func:`build_budget`), and never past :data:`STORE_BYTES`: a store that
would outgrow it raises :class:`TooWide` and the level-by-level router takes over.

Privacy: structure only; the nodes are a pure function of public keys and released
histograms, whichever records asked for them.
"""

from __future__ import annotations

import numpy as np

from dpviz.compiled import kernels as kernels
from dpviz.compiled.kernels import LEAF, UNBUILT
from dpviz.models.trees import space as space_
from dpviz.models.trees.space import Frontier, Splits, TreeSpace, choose_splits, expand, node_bytes
from dpviz.privacy.randomness import SALT_CHILD, splitmix64

# Bytes a node store may hold: each node keeps its continuous sub-domain, so on wide data
# a store of (records × depth) lazily built nodes would not fit (300 columns, depth 40:
# 3.8 GB for 200 records), and building whole levels eagerly must stop sooner.
STORE_BYTES = 256 * 2**20


def lazy_pair_chunk(space: TreeSpace) -> int:
    """Pairs per routing pass when the trees are built lazily (each pair may add a node
    per level): the store then stays within :data:`STORE_BYTES`."""
    per_pair = node_bytes(space) * (space.max_depth + 1)
    return max(1_000, min(space_.PAIR_CHUNK, STORE_BYTES // per_pair))


def binary_levels(n_roots: int, max_depth: int, budget: int) -> int:
    """Levels :meth:`NodeStore.build` builds below ``n_roots`` roots of binary trees
    within ``budget`` nodes: the first always, then each whole level that keeps the
    nodes built within the budget (``max_depth``: the trees are built whole)."""
    level = 1
    # After level k, n_roots * (2**(k+1) - 2) nodes are built and the next level adds
    # n_roots * 2**(k+1): stop before the sum passes the budget.
    while level < max_depth and n_roots * (2 ** (level + 2) - 2) <= budget:
        level += 1
    return min(level, max_depth)


def build_budget(n_pairs: int, space: TreeSpace) -> int:
    """Nodes a router may build ahead of the records routing ``n_pairs`` pairs."""
    # Eager building is worth it while the nodes are few next to the pairs routed, and
    # only while they fit the store's bytes.
    return min(max(65_536, n_pairs // 4), STORE_BYTES // node_bytes(space))


def _threshold_arrays(space: TreeSpace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The compiled builders' threshold inputs: the released split cdf (0 rows: uniform
    thresholds) and the continuous features' public lows and highs. Copies: the kernels
    are typed for writeable arrays, and an unpickled model's space may hold read-only
    ones (joblib's memory maps)."""
    s = space.n_continuous
    cdf = (
        np.zeros((0, 2))
        if space.split_cdf is None
        else np.array(space.split_cdf, dtype=np.float64, order="C")
    )
    return (
        cdf,
        np.array(space.lows[:s], dtype=np.float64),
        np.array(space.highs[:s], dtype=np.float64),
    )


class TooWide(Exception):
    """Building every child of the reached nodes would cost more than routing."""


STORE_FIELDS = (
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
            raise TooWide  # the level-by-level router takes over, in bounded passes
        capacity = max(need, min(2 * self._capacity, 2 * STORE_BYTES // node_bytes(self.space)))
        s, r = self.space.n_continuous, self.space.n_discrete
        for name, dtype in STORE_FIELDS:
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
            # Usually every node is inner (with a continuous feature only the depth makes
            # a leaf): the draws then read the frontier, not a copy of its sub-domains.
            inner_nodes = frontier if len(inner) == n else frontier.take(inner)
            splits = choose_splits(self.space, inner_nodes)
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
            raise TooWide
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
            if self._build_compiled(ids, binary_levels(len(ids), self.space.max_depth, budget)):
                return
        if self._build_levels_compiled(ids, budget):
            return
        while len(ids):
            new = self.expand(ids)
            built += len(new)
            ids = new[self.first_child[new] == UNBUILT]
            if built + int(self.n_children[ids].sum()) > budget:
                return

    def _path_arrays(self) -> tuple[np.ndarray, ...]:
        """What the compiled builders write of each node's path, in their order: key,
        tree, depth, parent, edge, the edge's feature and threshold, the sub-domain."""
        return (
            self.key,
            self.tree,
            self.depth,
            self.parent,
            self.edge,
            self.in_feature,
            self.in_threshold,
            self.lows,
            self.highs,
        )

    def _build_levels_compiled(self, ids: np.ndarray, budget: int) -> bool:
        """The level loop of :meth:`build` in one compiled pass (``build_levels``): the
        same nodes, numbers and order. False (nothing done) when the kernels are not
        loaded or the nodes it may build could outgrow the store's bytes (the loop then
        grows the store as it goes and stops where it must)."""
        compiled = kernels.get(wait=False)
        if compiled is None or "build_levels" not in compiled:
            return False
        space = self.space
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        first = int(self.n_children[ids].sum())
        # Nodes built: the first level, then levels while the total stays within the
        # budget; and no more than the subtrees below ``ids`` hold.
        remaining = space.max_depth - self.depth[ids]
        b = float(space.branching)
        subtrees = float(np.sum(b ** np.minimum(remaining, 64) * b / max(b - 1.0, 1.0)))
        need = self.size + int(min(max(first, budget), subtrees))
        if need * node_bytes(space) > 2 * STORE_BYTES or need >= np.iinfo(np.int32).max:
            return False
        self._grow(need)
        weights = (
            np.empty(0)
            if space.feature_weights is None
            else np.array(space.feature_weights, dtype=np.float64)
        )
        salts = splitmix64(np.arange(space.branching, dtype=np.uint64) ^ SALT_CHILD)
        self.size = compiled["build_levels"](
            *self._path_arrays(),
            self.used,
            self.feature,
            self.threshold,
            self.n_children,
            self.first_child,
            self.size,
            ids,
            budget,
            space.max_depth,
            salts,
            np.array(space.n_values, dtype=np.int64),
            weights,
            *_threshold_arrays(space),
        )
        return True

    def _build_compiled(self, ids: np.ndarray, levels: int) -> bool:
        """Build ``levels`` levels of the binary trees below the roots ``ids`` (all of
        the store, none built yet) in one compiled pass (``build_binary_levels``): the
        nodes, numbers and order the level loop of :meth:`build` gives. False (nothing
        done) when the kernels are not loaded or the store holds more than these roots."""
        n = len(ids)
        if self.size != n or not np.array_equal(ids, np.arange(n)):
            return False
        total = n * (2 ** (levels + 1) - 1)
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
        salts = splitmix64(np.arange(2, dtype=np.uint64) ^ SALT_CHILD)
        self.size = compiled["build_binary_levels"](
            *self._path_arrays(),
            self.feature,
            self.threshold,
            self.n_children,
            self.first_child,
            n,
            space.max_depth,
            levels,
            salts[0],
            salts[1],
            cum,
            *_threshold_arrays(space),
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
