"""Counting a forest's leaves: the one step that reads the training data.

Privacy role: :func:`leaf_counts_of` routes training records through the public trees and
counts classes per reached leaf: TRUE counts, kept on the model for the release
(:mod:`~dpviz.models.forest.release`) and the data owner's diagnostics, never released
as such. With disjoint parts each record trains the one tree the public keyed hash
(:func:`dpviz.models.forest.estimator.assign_pairs`) deals it to, which is what parallel
composition needs; with shared data every tree counts every record. :func:`add_counts`
adds counted batches to a model's leaves. ``model`` is a
:class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`, which calls these.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from dpviz.compiled import kernels
from dpviz.models.forest.assign import assign_pairs
from dpviz.models.forest.floor import halved, record_halves
from dpviz.models.forest.records import LeafCounts, _tree_chunks
from dpviz.models.trees.passes import run_jobs, split_ranges, thread_count
from dpviz.models.trees.routing import number_leaves, route, route_matrix
from dpviz.privacy.randomness import GOLDEN, SALT_CHILD, splitmix64
from dpviz.tabular.encode import EncodedData


def leaf_counts_of(
    model: BaseEstimator, encoded: EncodedData, split_seed: int, *, keep_nodes: bool = True
) -> LeafCounts:
    """Route a batch of records and count classes per reached leaf. Reads only the
    structure, so data partitions can run it independently and add the results.
    ``keep_nodes`` keeps the visited-node tables that the leaf table's path rules use."""
    parts = []
    k = len(model.schema_.classes)
    y = encoded.y
    if model.data_split_ != "shared":
        model._compact_forest(np.arange(model.n_estimators_), encoded.n_records, keep=True)
    pairs = model._pass_pairs()
    if model.data_split_ != "shared":
        fused = heap_counts(model, encoded, split_seed, keep_nodes)
        if fused is not None:
            return fused
    # A halved forest's tree t counts the records of half t mod 2 only.
    half = record_halves(model, encoded) if halved(model) else None
    for chunk in _tree_chunks(model.n_estimators_, encoded.n_records, model.data_split_, pairs):
        if model.data_split_ == "shared":
            routed = route_matrix(
                model.space_,
                model.root_keys_,
                chunk,
                encoded.continuous,
                encoded.discrete,
                keep_nodes=keep_nodes,
            )
            code = routed.pair_leaf.astype(np.int64) * k + y
            if half is not None:
                code = code[chunk[:, None] % 2 == half[None, :]]
        else:
            rec, tree = assign_pairs(
                encoded, model.n_estimators_, model.data_split_, split_seed, chunk
            )
            # The trees built whole once, kept for predict and sweeps (routing only
            # reads the structure; prediction then changes nothing on the model).
            whole = model._compact_forest(
                np.arange(model.n_estimators_), encoded.n_records, keep=True
            )
            routed = route(
                model.space_,
                model.root_keys_,
                encoded.continuous,
                encoded.discrete,
                rec,
                tree,
                keep_nodes=keep_nodes,
                store=None if whole is None else whole.store,
            )
            code = routed.pair_leaf * k + y[rec]
        n_leaves = len(routed.leaf_keys)
        counts = np.bincount(code.reshape(-1), minlength=n_leaves * k).reshape(n_leaves, k)
        # Routed leaves that only the other half's records reached count nobody here.
        kept = slice(None) if half is None else counts.any(axis=1)
        parts.append(
            LeafCounts(
                routed.leaf_keys[kept],
                routed.leaf_tree[kept],
                routed.leaf_depth[kept],
                counts[kept],
                [(routed.leaf_keys, routed.leaf_node, routed.nodes)] if keep_nodes else [],
            )
        )
    return LeafCounts.combine(parts, k)


def heap_counts(
    model: BaseEstimator, encoded: EncodedData, split_seed: int, keep_nodes: bool
) -> LeafCounts | None:
    """A disjoint fit through trees built whole in heap order (continuous features
    only), counted by one compiled pass over the rows (``heap_fit_counts``: the
    record → tree hash of :func:`~dpviz.models.forest.estimator.hash_trees`, the descent and
    the count together); None where that kernel does not apply (then the pairs are
    hashed, routed and counted in turn: the same counts)."""
    compiled = kernels.get(wait=False)
    cont, y = encoded.continuous, encoded.y
    n = encoded.n_records
    if compiled is None or encoded.discrete.shape[1] or not n or cont.dtype != np.float64:
        return None
    whole = model._compact_forest(np.arange(model.n_estimators_), n, keep=True)
    heap = getattr(whole.store, "heap_pairs", None) if whole is not None else None
    if heap is None or not (cont.flags.c_contiguous or cont.flags.f_contiguous):
        return None
    store = whole.store
    feature, threshold, leaf_nodes, offsets = heap
    if len(offsets) != model.n_estimators_:
        return None
    k = len(model.schema_.classes)
    s = cont.shape[1]
    if not cont.flags.writeable:
        # The kernel is compiled for writeable arrays; joblib hands parallel folds
        # read-only memory maps (a copy: n × s floats, as the encoding made).
        cont = np.array(cont, order="K")
    mult = splitmix64(np.arange(1, s + 1, dtype=np.uint64) ^ SALT_CHILD) | np.uint64(1)
    start = np.uint64(splitmix64(np.uint64(split_seed)))
    y = np.array(y, dtype=np.int32)  # writeable and contiguous, as the kernel needs
    if y.min() < 0 or y.max() >= k:  # the kernel writes counts[.. * k + y] unchecked
        return None
    ranges = split_ranges(n, thread_count(n))
    counts = np.zeros((len(ranges), len(leaf_nodes) * k), dtype=np.int64)
    fn = compiled["heap_fit_counts"]
    args = (cont, cont.view(np.uint64), y, start, mult, GOLDEN, model.n_estimators_)
    args += (feature, threshold, model.space_.max_depth, offsets, k)
    run_jobs([(fn, (*args, a, b, counts[j])) for j, (a, b) in enumerate(ranges)])
    counts = counts.sum(axis=0).reshape(len(leaf_nodes), k)
    reached = np.flatnonzero(counts.any(axis=1))
    nodes = leaf_nodes[reached]
    order = np.argsort(nodes)  # number_leaves numbers the leaves in node order
    routed = number_leaves(compiled, store, nodes[order].astype(np.int32), keep_nodes)
    return LeafCounts(
        routed.leaf_keys,
        routed.leaf_tree,
        routed.leaf_depth,
        counts[reached[order]],
        [(routed.leaf_keys, routed.leaf_node, routed.nodes)] if keep_nodes else [],
    )


def add_counts(model: BaseEstimator, parts: list[LeafCounts], n_records: int) -> None:
    """Add counted batches (or partitions) to the model's leaves (TRUE counts, kept for
    the release)."""
    k = len(model.schema_.classes)
    current = LeafCounts(
        model.leaf_keys_, model.leaf_tree_, model.leaf_depth_, model.leaf_counts_, []
    )
    merged = LeafCounts.combine([current, *parts], k)
    model.leaf_keys_, model.leaf_tree_ = merged.keys, merged.tree
    model.leaf_depth_, model.leaf_counts_ = merged.depth, merged.counts
    model.node_tables_.extend(merged.nodes)
    model.n_train_records_ += n_records
    model.n_batches_ += 1
