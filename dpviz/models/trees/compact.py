"""Every record through every tree of a forest built whole, one or two bytes a cell.

:func:`compact_forest` builds a forest's trees whole when that fits the build budget and
numbers each tree's leaves (≤ 65,535); :func:`route_compact` then writes each record's
leaf number within each tree (a (trees, records) uint8/uint16 matrix) with the compiled
kernels, straight from the heap order of complete binary trees where it can.

Privacy: reads records, so it runs only inside a family's booked release or on data the
user predicts on; the compact forest itself is structure only (public).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.compiled import kernels as kernels
from dpviz.compiled.kernels import LEAF, UNBUILT
from dpviz.models.trees import passes
from dpviz.models.trees.passes import (
    record_layout,
    run_jobs,
    split_ranges,
    thread_count,
    with_zero_column,
)
from dpviz.models.trees.routing import descend_numpy
from dpviz.models.trees.space import TreeSpace
from dpviz.models.trees.store import NodeStore, TooWide, binary_levels, build_budget

# Node ids routed at a time by route_compact before they become one-byte leaf numbers.
COMPACT_CHUNK_CELLS = 8_000_000
# (tree, record) cells per leaf from which route_compact keeps every leaf of the trees
# instead of finding and renumbering the reached ones (nearly all are reached then).
KEEP_ALL_LEAVES_FROM = 64


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
    budget = build_budget(n_records * len(trees), space)
    if (
        space.n_discrete == 0
        and binary_levels(len(trees), space.max_depth, budget) < space.max_depth
    ):
        # Binary trees the budget stops short of their leaves: the build below would
        # leave nodes unbuilt, and the routers build what they need themselves.
        return None
    try:
        store.build(store.roots, budget)
    except TooWide:
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


def split_arrays(
    arrays: tuple[np.ndarray, ...], n_continuous: int, n_discrete: int
) -> tuple[np.ndarray, ...]:
    """The node arrays of the branch-free descent (``descend_split_table``) from
    :meth:`~.store.NodeStore.compiled_arrays` (feature, threshold, first child, kind):
    each node's continuous column (0 when it splits on none), its discrete column (the
    zero column after the discrete ones when it splits on none: leaves, unbuilt nodes
    and the sentinel read it and stay put), its threshold (NaN when it splits on no
    continuous column: a comparison with NaN is never true), its first child.
    Public structure."""
    feature, threshold, first_child, _ = arrays
    on_value = feature < n_continuous
    column = np.where(on_value, feature, 0).astype(np.int32)
    # Other nodes have feature ≥ n_continuous: a discrete column, or the zero column.
    code = np.where(on_value, n_discrete, feature - n_continuous).astype(np.int32)
    cut = np.where(on_value, threshold, np.nan)
    return column, code, cut, first_child


def route_compact(
    space: TreeSpace,
    root_keys: np.ndarray,
    trees: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    *,
    forest: CompactForest | None = None,
) -> CompactRouted | None:
    """:func:`~.routing.route_matrix` with one or two bytes per (tree, record) instead of four,
    for forests whose trees are built whole (``forest``, or built here by
    :func:`compact_forest`); None when they cannot be (then use :func:`~.routing.route_matrix`).
    The kernels write each leaf's number straight into the matrix."""
    cont, disc = record_layout(continuous, discrete)
    n = cont.shape[0]
    if forest is None:
        forest = compact_forest(space, root_keys, trees, n)
        if forest is None:
            return None
    store, trees, table = forest.store, forest.trees, forest.table
    n_pairs = n * len(trees)
    local = np.empty((len(trees), n), dtype=table.dtype)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= passes.COMPILED_FROM_VISITS)
    roots = store.roots.astype(np.int32)
    if compiled is not None and forest.heap is not None:
        fn = compiled["descend_heap"]
        jobs = [
            (fn, (*forest.heap, cont, space.max_depth, a, b, local))
            for a, b in split_ranges(len(trees), min(len(trees), thread_count(n_pairs)))
        ]
        if jobs:
            run_jobs(jobs)
    elif compiled is not None:
        if forest.arrays is None:
            forest.arrays = split_arrays(
                store.compiled_arrays(), space.n_continuous, space.n_discrete
            )
        arrays = (*forest.arrays, cont, with_zero_column(disc))
        fn = compiled["descend_split_table"]
        jobs = [
            (fn, (*arrays, space.max_depth, roots, a, b, table, local))
            for a, b in split_ranges(len(trees), min(len(trees), thread_count(n_pairs)))
        ]
        if jobs:
            run_jobs(jobs)
    else:
        rows = max(1, min(len(trees), COMPACT_CHUNK_CELLS // max(1, n)))
        for t0 in range(0, len(trees), rows):
            t1 = min(len(trees), t0 + rows)
            nodes = descend_numpy(
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
