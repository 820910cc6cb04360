"""What the leaves a record reaches add up to: label votes and value sums over the trees.

From a leaf matrix (trees × records, :func:`~.routing.route_matrix` or
:func:`~.compact.route_compact`) the compiled kernels count each
record's votes per label (:func:`matrix_label_counts`), several label releases in one
pass (:func:`packed_label_votes`), or sum per-leaf values (:func:`matrix_value_sums`,
:func:`heap_value_sums` without a matrix). Each returns None when the kernels are not
loaded; callers then take the numpy path.

Privacy: post-processing. The per-leaf labels and values summed are released (or, for
diagnostics labelled not private, computed by the caller); the leaf a record reaches is
public structure applied to the record.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpviz.compiled import kernels as kernels
from dpviz.models.trees import passes
from dpviz.models.trees.compact import CompactForest
from dpviz.models.trees.passes import record_layout, run_jobs, split_ranges, thread_count


def _matrix_jobs(fn, matrix, args: tuple, out):
    """Calls ``fn(matrix, *args, a, b, out)`` over ranges of records, one per thread."""
    n = matrix.shape[1]
    return [
        (fn, (matrix, *args, a, b, out)) for a, b in split_ranges(n, thread_count(matrix.size))
    ]


def matrix_label_counts(
    matrix: np.ndarray, labels: np.ndarray, k: int, offsets: np.ndarray | None = None
) -> np.ndarray | None:
    """Per record, how many trees give each label: ``labels`` (uint8, one per leaf,
    ``k`` for abstain) of the leaves in ``matrix`` (trees, records): leaf indices, or
    per-tree leaf numbers to which ``offsets[t]`` is added (:func:`~.compact.route_compact`).
    (records, k) floats, or None when the compiled kernels are not loaded."""
    compiled = kernels.get(wait=matrix.size >= passes.COMPILED_FROM_VISITS)
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
        run_jobs(jobs)
    return out[:, :k]


def heap_sums_kernels(forest: CompactForest, n_records: int) -> dict | None:
    """The compiled kernels when :func:`heap_value_sums` applies to ``forest`` and
    ``n_records`` records (waiting for them only for large work, as routing does)."""
    if forest.heap is None or len(forest.trees) != len(forest.offsets):
        return None
    visits = n_records * len(forest.trees) * (forest.store.space.max_depth + 1)
    return kernels.get(wait=visits >= passes.COMPILED_FROM_VISITS)


def heap_value_sums(
    forest: CompactForest, continuous: np.ndarray, values: np.ndarray
) -> np.ndarray | None:
    """Per record, the sum over the trees of ``values`` (one row per leaf of ``forest``,
    in its leaf order) of the leaves it reaches, added in tree order: what
    :func:`~.compact.route_compact` then :func:`matrix_value_sums` give, in one compiled pass that
    writes no leaf matrix. None where that does not apply (trees not in heap order,
    kernels not loaded)."""
    compiled = heap_sums_kernels(forest, len(continuous))
    if compiled is None:
        return None
    cont = record_layout(continuous, np.empty((0, 0), np.int32))[0]
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
        for a, b in split_ranges(n, thread_count(n * len(forest.trees)))
    ]
    if jobs:
        run_jobs(jobs)
    if sums is not out:
        out[:, :ones] = sums
    return out


def matrix_value_sums(
    matrix: np.ndarray, values: np.ndarray, offsets: np.ndarray | None = None
) -> np.ndarray | None:
    """Per record, the sum over the trees of ``values`` (leaves × k) of its leaves in
    ``matrix`` (as in :func:`matrix_label_counts`), added in tree order; None when the
    compiled kernels are not loaded."""
    compiled = kernels.get(wait=matrix.size >= passes.COMPILED_FROM_VISITS)
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
        run_jobs(jobs)
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
    ``offsets`` are a compact matrix (:class:`~.compact.CompactRouted`) in which every record
    reaches a leaf of every tree. Each leaf adds a few integers whose bit fields count
    the labels of several releases, so a 20-ε sweep reads the matrix once instead of
    20 times; the trees are summed in chunks small enough for narrow fields
    (:func:`_packing`). A release with no abstaining leaf needs no field for class 0
    (the trees less the other classes' votes). Returns ``votes(r)``, release r's
    (records, k) float counts (equal to :func:`matrix_label_counts`'s), or None when the
    compiled kernels are not loaded or a release's fields do not fit."""
    compiled = kernels.get(wait=local.size >= passes.COMPILED_FROM_VISITS)
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
        for a, b in split_ranges(n, thread_count(local.size))
    ]
    run_jobs(jobs)

    def votes(r: int, base: np.ndarray | None = None) -> np.ndarray:
        w, shift, first = layout[r]
        out = np.empty((n, k))
        add = np.zeros(k) if base is None else np.asarray(base, np.float64).reshape(k)
        compiled["unpack_votes"](sums[w], shift, bits, first, n_trees, add, out)
        return out

    return votes
