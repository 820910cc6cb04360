"""Records to leaves: every (record, tree) pair descends the trees' nodes (:func:`route`,
:func:`route_matrix`), and each record's tree by a public hash (:func:`record_trees`).

Routing materialises the nodes records can reach in a ``store.NodeStore``, eagerly while
that stays small next to the work (a forest of depth-8 continuous trees is 100 × 511
nodes), and lets each record descend it in one pass: a compiled kernel
(``dpviz.compiled.kernels``, numba) or the same descent in numpy, level by level
(:func:`descend_numpy`). Records that stop at a node whose children are not built yet
(large discrete trees, built only where records go) resume after those children are
built. Trees whose nodes have too many children for a store are routed level by level
(:func:`route_levels`), to the same leaves.

Privacy: reads records, so it runs only inside a family's booked release (the leaf
counts it feeds are what the mechanism noises) or on data the user predicts on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.compiled import kernels as kernels
from dpviz.compiled.kernels import LEAF, UNBUILT
from dpviz.models.trees import passes
from dpviz.models.trees.passes import (
    flat_view,
    record_layout,
    run_jobs,
    split_ranges,
    thread_count,
    with_zero_column,
)
from dpviz.models.trees.space import (
    Frontier,
    NodeTable,
    TreeSpace,
    choose_splits,
    expand,
    is_leaf,
)
from dpviz.models.trees.store import NodeStore, TooWide, build_budget
from dpviz.privacy.randomness import GOLDEN, SALT_CHILD, splitmix64


def compact(codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes in increasing order and each input's index among them."""
    if n_codes <= 4 * len(codes) + 1_000_000:
        present = np.zeros(n_codes, dtype=bool)
        present[codes] = True
        rank = np.cumsum(present) - 1
        return np.flatnonzero(present), rank[codes]
    return np.unique(codes, return_inverse=True)


@dataclass
class Routed:
    """Where routed (record, tree) pairs ended: distinct leaves and each pair's leaf."""

    leaf_keys: np.ndarray
    leaf_tree: np.ndarray
    leaf_depth: np.ndarray
    leaf_node: np.ndarray
    pair_leaf: np.ndarray
    nodes: dict[str, np.ndarray] | None


def route_levels(
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
    flat_cont, cont_at = flat_view(continuous, np.float64)
    flat_disc, disc_at = flat_view(
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


def record_trees(
    continuous: np.ndarray, discrete: np.ndarray, n_trees: int, seed: int
) -> np.ndarray | None:
    """Each record's tree, ``hash_columns(its feature columns, seed) % n_trees`` (see
    ``dpviz.models.forest.estimator.hash_trees``), by the compiled kernel in one pass over the
    rows; None while the kernels are not loaded (their loading starts)."""
    compiled = kernels.get(wait=False)
    if compiled is None:
        return None
    cont, disc = record_layout(continuous, discrete)
    n = cont.shape[0]
    width = cont.shape[1] + disc.shape[1]
    mult = splitmix64(np.arange(1, width + 1, dtype=np.uint64) ^ SALT_CHILD) | np.uint64(1)
    start = splitmix64(np.uint64(seed))
    out = np.empty(n, dtype=np.int64)
    fn = compiled["record_trees"]
    args = (cont.view(np.uint64), disc, np.uint64(start), mult, GOLDEN, int(n_trees))
    jobs = [(fn, (*args, a, b, out)) for a, b in split_ranges(n, thread_count(n))]
    if jobs:
        run_jobs(jobs)
    return out


def descend_numpy(store: NodeStore, cont, disc, rec, node) -> np.ndarray:
    """The kernels' descent (``dpviz.compiled.kernels``) in numpy, all pairs one level a step."""
    s, r = store.space.n_continuous, store.space.n_discrete
    feature, threshold, first_child = store.kernel_arrays()
    flat_cont, cont_at = flat_view(cont, np.float64)
    flat_disc, disc_at = flat_view(disc, np.int32)
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


def _descend_pairs(compiled, store, cont, disc, rec, node) -> np.ndarray:
    if compiled is None:
        return descend_numpy(store, cont, disc, rec, node)
    arrays = (*store.compiled_arrays(), cont, with_zero_column(disc))
    s, steps = store.space.n_continuous, store.space.max_depth
    rec = np.ascontiguousarray(rec, dtype=np.int64)
    node = np.ascontiguousarray(node, dtype=np.int32)
    out = np.empty(len(rec), dtype=np.int32)
    fn = compiled["descend_pairs"]
    jobs = [
        (fn, (*arrays, s, steps, rec, node, a, b, out))
        for a, b in split_ranges(len(rec), thread_count(len(rec)))
    ]
    if jobs:
        run_jobs(jobs)
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
            raise TooWide
        store.build(ids, max(budget, len(pending) // 4))
        out[pending] = _descend_pairs(compiled, store, cont, disc, record_of(pending), at)


def number_leaves(compiled, store: NodeStore, out: np.ndarray, keep_nodes: bool) -> Routed:
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
            for a, b in split_ranges(len(flat), thread_count(len(flat)))
        ]
        if jobs:
            run_jobs(jobs)
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
    ``root_keys`` (a :class:`~.compact.CompactForest`'s), used and grown instead of a new one.
    """
    pair_record = np.asarray(pair_record, dtype=np.int64)
    pair_tree = np.asarray(pair_tree, dtype=np.int64)
    present = np.bincount(pair_tree, minlength=len(root_keys)) > 0
    if store is not None:
        present[:] = True  # the store's roots are every tree's
    trees = np.flatnonzero(present)
    if store is None:
        store = NodeStore(space, np.asarray(root_keys)[trees], trees)
    cont, disc = record_layout(continuous, discrete)
    n_pairs = len(pair_record)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= passes.COMPILED_FROM_VISITS)
    budget = build_budget(n_pairs, space)
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
            for a, b in split_ranges(n_pairs, thread_count(n_pairs))
        ]
        if jobs:
            run_jobs(jobs)
        out = leaf_nodes[out]
        routed = number_leaves(compiled, store, out, keep_nodes)
        routed.pair_leaf = routed.pair_leaf.astype(np.int64)
        return routed
    try:
        store.build(store.roots, budget)
        node = store.roots[(np.cumsum(present) - 1)[pair_tree]]
        out = _descend_pairs(compiled, store, cont, disc, pair_record, node)
        _resume(compiled, store, cont, disc, out, lambda p: pair_record[p], budget)
    except TooWide:
        return route_levels(
            space, root_keys, continuous, discrete, pair_record, pair_tree, keep_nodes=keep_nodes
        )
    routed = number_leaves(compiled, store, out, keep_nodes)
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
    cont, disc = record_layout(continuous, discrete)
    n = cont.shape[0]
    n_pairs = n * len(trees)
    store = NodeStore(space, np.asarray(root_keys)[trees], trees)
    compiled = kernels.get(wait=n_pairs * (space.max_depth + 1) >= passes.COMPILED_FROM_VISITS)
    budget = build_budget(n_pairs, space)
    out = np.empty((len(trees), n), dtype=np.int32)
    try:
        store.build(store.roots, budget)
        roots = store.roots.astype(np.int32)
        if compiled is None:
            out.reshape(-1)[:] = descend_numpy(
                store, cont, disc, np.tile(np.arange(n), len(trees)), np.repeat(roots, n)
            )
        else:
            # The compact router's kernel, writing each stop's node result (int32).
            fn = compiled["descend_table"]
            arrays = store.compiled_arrays()
            results = np.empty(len(arrays[3]), dtype=np.int32)
            compiled["result_table"](arrays[3], results)
            arrays = (*arrays, cont, with_zero_column(disc))
            s, steps = space.n_continuous, space.max_depth
            jobs = [
                (fn, (*arrays, s, steps, roots, a, b, results, out))
                for a, b in split_ranges(len(trees), min(len(trees), thread_count(n_pairs)))
            ]
            if jobs:
                run_jobs(jobs)
        _resume(compiled, store, cont, disc, out.reshape(-1), lambda p: p % n, budget)
    except TooWide:
        routed = route_levels(
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
    return number_leaves(compiled, store, out, keep_nodes)
