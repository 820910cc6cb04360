"""The numba versions of ``dpviz.compiled.kernels`` (imported only by it: importing numba costs
~0.3-0.7 s). Compiled on first import with explicit signatures, cached on disk.

The descent runs ``steps`` levels for a block of records at a time, each level a loop
over the block whose iterations are independent: the processor overlaps their memory
loads and the loop has no data-dependent exit. Leaves, unbuilt nodes and the abstain
sentinel (the last node) loop to themselves: their split reads a column of zeros
(the extra last column of ``disc``) and their first child is themselves. ``kind``
tells them apart at the end (0 leaf, 1 unbuilt, 2 abstain, 3 internal).
"""

import numba as nb
import numpy as np

from dpviz.compiled.numba_build import (  # noqa: F401 (kernels.get lists them)
    build_binary_levels,
    build_levels,
)
from dpviz.compiled.numba_noise import discrete_laplace_words  # noqa: F401 (kernels.get lists it)

i32, f64, i64, i8 = nb.int32, nb.float64, nb.int64, nb.int8
# feature, threshold, first_child, kind, continuous, discrete (+ zero column), s, steps
_COMMON = (i32[::1], f64[::1], i32[::1], i8[::1], f64[:, :], i32[:, :], i64, i64)
BLOCK = 256
HASH_BLOCK = 256  # records hashed ahead of their descent by heap_fit_counts


@nb.njit(inline="always")
def _walk(feature, threshold, first_child, cont, disc, s, steps, node, rows, m):
    sentinel = len(feature) - 1
    for _ in range(steps):
        for j in range(m):
            v = node[j]
            f = feature[v]
            i = rows[j]
            if f < s:
                v = first_child[v] + np.int32(cont[i, f] >= threshold[v])
            else:
                c = disc[i, f - s]
                v = first_child[v] + c if c >= 0 else sentinel
            node[j] = v


@nb.njit(inline="always")
def _result(kind, v):  # leaf id, -1 abstains, -(v + 2) stopped at unbuilt v
    k = kind[v]
    if k == 0:
        return v
    if k == 2:
        return -1
    return -(v + 2)


@nb.njit((i8[::1], i32[::1]), nogil=True, cache=True)
def result_table(kind, out):
    """out[v] = the result of a descent that stops at node v (see ``_result``)."""
    for v in range(len(kind)):
        out[v] = _result(kind, v)


@nb.njit((*_COMMON, i64[::1], i32[::1], i64, i64, i32[::1]), nogil=True, cache=True)
def descend_pairs(
    feature, threshold, first_child, kind, cont, disc, s, steps, rec, start, p0, p1, out
):
    """Pairs ``p0``..``p1``: record ``rec[p]`` from node ``start[p]``."""
    node = np.empty(BLOCK, np.int32)
    rows = np.empty(BLOCK, np.int64)
    for b0 in range(p0, p1, BLOCK):
        m = min(p1, b0 + BLOCK) - b0
        for j in range(m):
            rows[j] = rec[b0 + j]
            node[j] = start[b0 + j]
        _walk(feature, threshold, first_child, cont, disc, s, steps, node, rows, m)
        for j in range(m):
            out[b0 + j] = _result(kind, node[j])


@nb.njit((i32[::1], nb.boolean[::1]), nogil=True, cache=True)
def mark(out, present):
    for x in out:
        if x >= 0:
            present[x] = True


@nb.njit((i32[::1], i32[::1]), nogil=True, cache=True)
def remap(out, rank):
    for p in range(out.shape[0]):
        x = out[p]
        if x >= 0:
            out[p] = rank[x]


@nb.njit((i32[:, ::1], nb.uint8[::1], i64, i64, f64[:, ::1]), nogil=True, cache=True)
def label_counts(matrix, labels, a, b, out):
    """out[i, labels[matrix[t, i]]] += 1 over the trees, for records ``a``..``b``."""
    k = out.shape[1]
    acc = np.zeros((1024, k), np.int32)
    for b0 in range(a, b, 1024):
        m = min(b, b0 + 1024) - b0
        acc[:m] = 0
        for t in range(matrix.shape[0]):
            row = matrix[t]
            for j in range(m):
                acc[j, labels[row[b0 + j]]] += 1
        for j in range(m):
            for c in range(k):
                out[b0 + j, c] = acc[j, c]


@nb.njit((i32[:, ::1], i64[::1], i64, i64, i64, f64[:, ::1]), nogil=True, cache=True)
def packed_counts(matrix, increment, bits, a, b, out):
    """label_counts with each leaf's label as one bit field of ``increment``: one add
    per (tree, record), no read-modify-write of a row (few classes, counts < 2^bits)."""
    k = out.shape[1]
    mask = (1 << bits) - 1
    acc = np.zeros(2048, np.int64)
    for b0 in range(a, b, 2048):
        m = min(b, b0 + 2048) - b0
        acc[:m] = 0
        for t in range(matrix.shape[0]):
            row = matrix[t]
            for j in range(m):
                acc[j] += increment[row[b0 + j]]
        for j in range(m):
            v = acc[j]
            for c in range(k):
                out[b0 + j, c] = (v >> (bits * c)) & mask


@nb.njit((i32[:, ::1], f64[:, ::1], i64, i64, f64[:, ::1]), nogil=True, cache=True)
def value_sums(matrix, values, a, b, out):
    """out[i] += values[matrix[t, i]] over the trees (in tree order), records ``a``..``b``."""
    k = values.shape[1]
    for b0 in range(a, b, 4096):
        b1 = min(b, b0 + 4096)
        for t in range(matrix.shape[0]):
            for i in range(b0, b1):
                leaf = matrix[t, i]
                for c in range(k):
                    out[i, c] += values[leaf, c]


@nb.njit(
    [(*_COMMON, i32[::1], i64, i64, t[::1], t[:, ::1]) for t in (nb.uint8, nb.uint16, nb.int32)],
    nogil=True,
    cache=True,
)
def descend_table(
    feature, threshold, first_child, kind, cont, disc, s, steps, roots, t0, t1, table, out
):
    """Every record of ``cont``/``disc`` through trees ``t0``..``t1`` (rows of ``out``),
    writing ``table[node]`` of the node each stops at: a leaf's number within its tree
    in one or two bytes (the compact matrix), or ``int32`` node results
    (:func:`result_table`) for stores that may hold unbuilt nodes."""
    n = out.shape[1]
    node = np.empty(BLOCK, np.int32)
    rows = np.empty(BLOCK, np.int64)
    for b0 in range(0, n, BLOCK):
        m = min(n, b0 + BLOCK) - b0
        for j in range(m):
            rows[j] = b0 + j
        for t in range(t0, t1):
            for j in range(m):
                node[j] = roots[t]
            _walk(feature, threshold, first_child, cont, disc, s, steps, node, rows, m)
            for j in range(m):
                out[t, b0 + j] = table[node[j]]


_U = nb.uint64
# Values of a block of records copied feature-major (as numba_heap.BLOCK_VALUES: 128 KB).
_SPLIT_VALUES = 16_384


@nb.njit(
    [
        (i32[::1], i32[::1], f64[::1], i32[::1], f64[:, :], i32[:, :], i64, i32[::1], i64, i64)
        + (t[::1], t[:, ::1])
        for t in (nb.uint8, nb.uint16, nb.int32)
    ],
    nogil=True,
    cache=True,
)
def descend_split_table(
    column, code, threshold, first_child, cont, disc, steps, roots, t0, t1, table, out
):
    """:func:`descend_table`'s result (the same node for every record and tree), a
    level as one branch-free step: node v goes to ``first_child[v]`` + the record's code
    in discrete column ``code[v]`` + (its value in continuous column ``column[v]`` ≥
    ``threshold[v]``); a continuous split reads the zero column as its code, every other
    node a NaN threshold (never ≥), and a negative (unknown) code goes to the sentinel.

    Why it is faster (3.3-3.4x on 10,000-40,000 records × 100 trees of 8 continuous and
    6 discrete features): the split kind is not a branch (mispredicted on mixed
    features), a block of records is copied feature-major so that a record's value is
    one load at a per-node offset, and every index is unsigned (no negative-index
    wraparound)."""
    n = out.shape[1]
    n_cont, n_disc = cont.shape[1], disc.shape[1]
    width = max(256, min(2048, _SPLIT_VALUES // max(1, n_cont + n_disc)))
    sentinel = np.uint32(len(first_child) - 1)
    n_nodes = len(first_child)
    at_value = np.empty(n_nodes, np.uint64)  # each node's column as its start in the block
    at_code = np.empty(n_nodes, np.uint64)
    child = np.empty(n_nodes, np.uint32)
    for v in range(n_nodes):
        at_value[v] = _U(column[v]) * _U(width)
        at_code[v] = _U(code[v]) * _U(width)
        child[v] = np.uint32(first_child[v])
    values = np.zeros(max(1, n_cont) * width)  # with no continuous column: one to read
    codes = np.empty(n_disc * width, np.int32)
    node = np.empty(width, np.uint32)
    for b0 in range(0, n, width):
        m = min(n, b0 + width) - b0
        for f in range(n_cont):
            for j in range(m):
                values[f * width + j] = cont[b0 + j, f]
        for f in range(n_disc):
            for j in range(m):
                codes[f * width + j] = disc[b0 + j, f]
        for t in range(t0, t1):
            root = np.uint32(roots[t])
            for j in range(m):
                node[j] = root
            for _ in range(steps):
                for i in range(m):
                    j = _U(i)
                    v = _U(node[j])
                    c = codes[at_code[v] + j]
                    up = np.uint32(values[at_value[v] + j] >= threshold[v])
                    node[j] = child[v] + np.uint32(c) + up if c >= 0 else sentinel
            row = out[t]
            for i in range(m):
                row[b0 + i] = table[_U(node[_U(i)])]


# The same sums over a compact matrix: per-tree leaf numbers (uint8 or uint16) that
# ``offsets[t]`` turns into leaf indices. A quarter (or half) of the bytes per ε.
_u8, _u16 = nb.uint8[:, ::1], nb.uint16[:, ::1]


@nb.njit(
    [(m, i64[::1], i64[::1], i64, i64, i64, f64[:, ::1]) for m in (_u8, _u16)],
    nogil=True,
    cache=True,
)
def packed_counts_local(local, offsets, increment, bits, a, b, out):
    k = out.shape[1]
    mask = (1 << bits) - 1
    acc = np.zeros(2048, np.int64)
    for b0 in range(a, b, 2048):
        m = min(b, b0 + 2048) - b0
        acc[:m] = 0
        for t in range(local.shape[0]):
            row = local[t]
            inc = increment[offsets[t] :]
            for j in range(m):
                acc[j] += inc[row[b0 + j]]
        for j in range(m):
            v = acc[j]
            for c in range(k):
                out[b0 + j, c] = (v >> (bits * c)) & mask


@nb.njit(
    # ``out`` is one chunk of trees' slice of a (words, chunks, records) array.
    [(m, i64[::1], i64[:, ::1], i64, i64, i64[:, :]) for m in (_u8, _u16)],
    nogil=True,
    cache=True,
)
def word_sums_local(local, offsets, increment, a, b, out):
    """out[w, i] = the sum over the trees of increment[w, offsets[t] + local[t, i]], for
    records ``a``..``b``: each word packs counts as bit fields (one per label of one
    release), so one pass over the matrix counts the votes of many releases. Word by
    word within a block of records: a plain gather-add loop (half the time of adding
    every word of a leaf at once)."""
    words = increment.shape[0]
    acc = np.zeros((words, 1024), np.int64)
    for b0 in range(a, b, 1024):
        m = min(b, b0 + 1024) - b0
        acc[:, :m] = 0
        for t in range(local.shape[0]):
            row = local[t, b0 : b0 + m]
            base = offsets[t]
            for w in range(words):
                inc = increment[w, base:]
                sums = acc[w]
                for j in range(m):
                    sums[j] += inc[row[j]]
        for w in range(words):
            out[w, b0 : b0 + m] = acc[w, :m]


@nb.njit((i64[:, ::1], i64, i64, i64, i64, f64[::1], f64[:, ::1]), nogil=True, cache=True)
def unpack_votes(columns, shift, bits, first, n_trees, base, out):
    """One release's votes from its bit fields of ``columns`` (one row per chunk of
    trees, word_sums_local's), plus ``base``: class c's count is field c - first summed
    over the chunks; without a field, class 0 gets the trees less the other classes'
    votes. The first and last rows shift along with the fields (as fast with two rows
    as with one); rows between them, rare, are read field by field."""
    k = out.shape[1]
    mask = (1 << bits) - 1
    rows = columns.shape[0]
    head, tail = columns[0], columns[rows - 1]
    for i in range(columns.shape[1]):
        v = head[i] >> shift
        u = (tail[i] >> shift) if rows > 1 else 0
        others = 0
        for c in range(first, k):
            x = (v & mask) + (u & mask)
            v >>= bits
            u >>= bits
            for h in range(1, rows - 1):
                x += (columns[h, i] >> (shift + bits * (c - first))) & mask
            out[i, c] = np.float64(x) + base[c]
            others += x
        if first:
            out[i, 0] = np.float64(n_trees - others) + base[0]


@nb.njit(
    [(m, i64[::1], nb.uint8[::1], i64, i64, f64[:, ::1]) for m in (_u8, _u16)],
    nogil=True,
    cache=True,
)
def label_counts_local(local, offsets, labels, a, b, out):
    k = out.shape[1]
    acc = np.zeros((1024, k), np.int32)
    for b0 in range(a, b, 1024):
        m = min(b, b0 + 1024) - b0
        acc[:m] = 0
        for t in range(local.shape[0]):
            row = local[t]
            lab = labels[offsets[t] :]
            for j in range(m):
                acc[j, lab[row[b0 + j]]] += 1
        for j in range(m):
            for c in range(k):
                out[b0 + j, c] = acc[j, c]


@nb.njit(
    [(m, i64[::1], f64[:, ::1], i64, i64, f64[:, ::1]) for m in (_u8, _u16)],
    nogil=True,
    cache=True,
)
def value_sums_local(local, offsets, values, a, b, out):
    k = values.shape[1]
    for b0 in range(a, b, 4096):
        b1 = min(b, b0 + 4096)
        for t in range(local.shape[0]):
            row = local[t]
            base = offsets[t]
            for i in range(b0, b1):
                leaf = base + row[i]
                for c in range(k):
                    out[i, c] += values[leaf, c]


@nb.njit(
    [
        (i32[:, ::1], f64[:, ::1], c, i64, i64[::1], i64[::1], i64[::1], i32[::1])
        for c in (f64[:, ::1], f64[::1, :], f64[:, :])
    ],
    nogil=True,
    cache=True,
)
def descend_heap_pairs(feature, threshold, cont, depth, rec, tree, leaf_at, out):
    """descend_heap for (record, tree) pairs (a disjoint fit: one tree per record):
    out[p] = leaf_at[tree[p]] + the leaf's position on the last level, four pairs at a
    time (their trees differ: each chain reads its own)."""
    first_leaf = (1 << depth) - 1
    n = len(rec)
    p = 0
    while p + 4 <= n:
        t0, t1, t2, t3 = tree[p], tree[p + 1], tree[p + 2], tree[p + 3]
        f0, f1, f2, f3 = feature[t0], feature[t1], feature[t2], feature[t3]
        h0, h1, h2, h3 = threshold[t0], threshold[t1], threshold[t2], threshold[t3]
        r0, r1, r2, r3 = cont[rec[p]], cont[rec[p + 1]], cont[rec[p + 2]], cont[rec[p + 3]]
        a0 = a1 = a2 = a3 = 0
        for _ in range(depth):
            a0 = 2 * a0 + 1 + (r0[f0[a0]] >= h0[a0])
            a1 = 2 * a1 + 1 + (r1[f1[a1]] >= h1[a1])
            a2 = 2 * a2 + 1 + (r2[f2[a2]] >= h2[a2])
            a3 = 2 * a3 + 1 + (r3[f3[a3]] >= h3[a3])
        out[p] = leaf_at[t0] + a0 - first_leaf
        out[p + 1] = leaf_at[t1] + a1 - first_leaf
        out[p + 2] = leaf_at[t2] + a2 - first_leaf
        out[p + 3] = leaf_at[t3] + a3 - first_leaf
        p += 4
    while p < n:
        t = tree[p]
        f, h, r = feature[t], threshold[t], cont[rec[p]]
        a = 0
        for _ in range(depth):
            a = 2 * a + 1 + (r[f[a]] >= h[a])
        out[p] = leaf_at[t] + a - first_leaf
        p += 1


@nb.njit(
    [(c, f64[::1], f64[::1]) for c in (f64[:, ::1], f64[::1, :], f64[:, :])],
    nogil=True,
    cache=True,
)
def column_ranges(X, low, high):
    """Each column's min and max over the rows of ``X``, into ``low``/``high`` (which
    start at +inf/-inf); NaN in both where a column holds a NaN (as numpy's min/max)."""
    n, f = X.shape
    nan = np.zeros(f, np.bool_)
    for i in range(n):
        for j in range(f):
            v = X[i, j]
            if v < low[j]:
                low[j] = v
            if v > high[j]:
                high[j] = v
            if v != v:
                nan[j] = True
    for j in range(f):
        if nan[j]:
            low[j] = np.nan
            high[j] = np.nan


@nb.njit(
    [
        (c, f64[::1], f64[::1], f64[::1], f64[:, ::1], i64[::1], i64[::1])
        for c in (f64[:, ::1], f64[::1, :], f64[:, :])
    ],
    nogil=True,
    cache=True,
)
def clip_columns(X, low, high, fill, out, filled, clipped):
    """``out`` = ``X`` with each NaN set to ``fill[j]`` (counted in ``filled``), then each
    value below ``low[j]`` or above ``high[j]`` set to it (counted in ``clipped``): the
    per-column numpy imputation then ``np.clip`` of ``dpviz.tabular.encode``, in one pass
    over the rows (~25x fewer passes over memory)."""
    n, f = X.shape
    for i in range(n):
        for j in range(f):
            v = X[i, j]
            if v != v:
                filled[j] += 1
                v = fill[j]
            if v < low[j]:
                clipped[j] += 1
                v = low[j]
            elif v > high[j]:
                clipped[j] += 1
                v = high[j]
            out[i, j] = v


@nb.njit(
    [
        (c, i64[::1], f64[::1], f64[::1], i64[:, ::1])
        for c in (f64[:, ::1], f64[::1, :], f64[:, :])
    ],
    nogil=True,
    cache=True,
)
def bin_counts(X, y, low, scale, out):
    """Counts of each column's values, by class ``y``, in ``out.shape[1]`` equal-width
    bins starting at ``low`` (``scale`` bins per unit): row ``y·f + j`` of ``out`` for
    column j; values beyond either end count in the end bin."""
    n, f = X.shape
    bins = out.shape[1]
    for i in range(n):
        base = y[i] * f
        for j in range(f):
            z = (X[i, j] - low[j]) * scale[j]
            b = 0
            if z > 0:
                b = min(int(z), bins - 1)
            out[base + j, b] += 1


_u64 = nb.uint64


@nb.njit(
    [
        # Discrete codes in any layout (few columns, usually none): 3 signatures, not 9.
        (c, i32[:, :], _u64, _u64[::1], _u64, i64, i64, i64, i64[::1])
        for c in (_u64[:, ::1], _u64[::1, :], _u64[:, :])
    ],
    nogil=True,
    cache=True,
)
def record_trees(cont, disc, start, mult, golden, n_trees, a, b, out):
    """``dpviz.privacy.randomness.hash_columns`` of each record's feature columns
    (continuous values' bits, discrete codes; ``mult[j]``: column j's odd multiplier) modulo
    ``n_trees``, for records ``a``..``b``: one pass over the rows instead of five
    array passes per column. The same 64-bit arithmetic, so the same trees."""
    s, r = cont.shape[1], disc.shape[1]
    s29, s30, s27, s31 = _u64(29), _u64(30), _u64(27), _u64(31)
    m1, m2 = _u64(0xBF58476D1CE4E5B9), _u64(0x94D049BB133111EB)
    trees = _u64(n_trees)
    for i in range(a, b):
        h = start
        for j in range(s):
            h ^= cont[i, j]
            h *= mult[j]
            h ^= h >> s29
        for j in range(r):
            h ^= _u64(np.int64(disc[i, j]))
            h *= mult[s + j]
            h ^= h >> s29
        h += golden
        h ^= h >> s30
        h *= m1
        h ^= h >> s27
        h *= m2
        h ^= h >> s31
        out[i] = np.int64(h % trees)


@nb.njit(
    [(m, i64[::1], i64, nb.boolean[::1]) for m in (nb.uint8[:, ::1], nb.uint16[:, ::1])],
    nogil=True,
    cache=True,
)
def reached(local, offsets, abstain, present):
    """present[offsets[t] + local[t, i]] = True for every record that votes."""
    for t in range(local.shape[0]):
        base = offsets[t]
        for i in range(local.shape[1]):
            x = local[t, i]
            if x != abstain:
                present[base + x] = True


@nb.njit(
    [(m, i64[::1], i64, i64[::1]) for m in (nb.uint8[:, ::1], nb.uint16[:, ::1])],
    nogil=True,
    cache=True,
)
def renumber(local, offsets, abstain, number):
    """local[t, i] = number[offsets[t] + local[t, i]] (the abstain value stays)."""
    for t in range(local.shape[0]):
        base = offsets[t]
        for i in range(local.shape[1]):
            x = local[t, i]
            if x != abstain:
                local[t, i] = number[base + x]


@nb.njit(inline="always")
def _record_hash(bits, i, s, start, mult, golden):
    """``record_trees``' hash of row ``i`` (continuous columns only), before the modulo."""
    h = start
    for j in range(s):
        h ^= bits[i, j]
        h *= mult[j]
        h ^= h >> _u64(29)
    h += golden
    h ^= h >> _u64(30)
    h *= _u64(0xBF58476D1CE4E5B9)
    h ^= h >> _u64(27)
    h *= _u64(0x94D049BB133111EB)
    h ^= h >> _u64(31)
    return h


@nb.njit(
    [
        (c, u, i32[::1], _u64, _u64[::1], _u64, i64, i32[:, ::1], f64[:, ::1], i64)
        + (i64[::1], i64, i64, i64, i64[::1])
        for c, u in (
            (f64[:, ::1], _u64[:, ::1]),
            (f64[::1, :], _u64[::1, :]),
            (f64[:, :], _u64[:, :]),
        )
    ],
    nogil=True,
    cache=True,
)
def heap_fit_counts(
    cont,
    bits,
    y,
    start,
    mult,
    golden,
    n_trees,
    feature,
    threshold,
    depth,
    leaf_at,
    k,
    a,
    b,
    counts,
):
    """A disjoint fit's counting in one pass over rows ``a``..``b``: each record's tree
    by ``record_trees``' hash (the same bits), its leaf by ``descend_heap_pairs``'
    descent, and ``counts[(leaf_at[tree] + leaf) * k + y] += 1``. No per-record array
    is written (the tree of each record, its leaf, the count codes: three passes of
    2.4 M values less). A block's trees are hashed first, then its records descend
    eight at a time (their nodes in registers, as in ``descend_heap``): 64 ms against
    77 ms hashing and descending four at a time (2.4 M rows, one thread)."""
    s = cont.shape[1]
    first_leaf = (1 << depth) - 1
    trees = _u64(n_trees)
    tree = np.empty(HASH_BLOCK, np.int64)
    for b0 in range(a, b, HASH_BLOCK):
        b1 = min(b, b0 + HASH_BLOCK)
        # The block's trees first: independent hashes, which the core overlaps.
        for i in range(b0, b1):
            tree[i - b0] = np.int64(_record_hash(bits, i, s, start, mult, golden) % trees)
        i = b0
        while i + 8 <= b1:
            t0, t1, t2, t3 = tree[i - b0], tree[i - b0 + 1], tree[i - b0 + 2], tree[i - b0 + 3]
            t4, t5, t6, t7 = tree[i - b0 + 4], tree[i - b0 + 5], tree[i - b0 + 6], tree[i - b0 + 7]
            r0, r1, r2, r3 = cont[i], cont[i + 1], cont[i + 2], cont[i + 3]
            r4, r5, r6, r7 = cont[i + 4], cont[i + 5], cont[i + 6], cont[i + 7]
            f0, f1, f2, f3 = feature[t0], feature[t1], feature[t2], feature[t3]
            f4, f5, f6, f7 = feature[t4], feature[t5], feature[t6], feature[t7]
            h0, h1, h2, h3 = threshold[t0], threshold[t1], threshold[t2], threshold[t3]
            h4, h5, h6, h7 = threshold[t4], threshold[t5], threshold[t6], threshold[t7]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0
            for _ in range(depth):
                a0 = 2 * a0 + 1 + (r0[f0[a0]] >= h0[a0])
                a1 = 2 * a1 + 1 + (r1[f1[a1]] >= h1[a1])
                a2 = 2 * a2 + 1 + (r2[f2[a2]] >= h2[a2])
                a3 = 2 * a3 + 1 + (r3[f3[a3]] >= h3[a3])
                a4 = 2 * a4 + 1 + (r4[f4[a4]] >= h4[a4])
                a5 = 2 * a5 + 1 + (r5[f5[a5]] >= h5[a5])
                a6 = 2 * a6 + 1 + (r6[f6[a6]] >= h6[a6])
                a7 = 2 * a7 + 1 + (r7[f7[a7]] >= h7[a7])
            counts[(leaf_at[t0] + a0 - first_leaf) * k + y[i]] += 1
            counts[(leaf_at[t1] + a1 - first_leaf) * k + y[i + 1]] += 1
            counts[(leaf_at[t2] + a2 - first_leaf) * k + y[i + 2]] += 1
            counts[(leaf_at[t3] + a3 - first_leaf) * k + y[i + 3]] += 1
            counts[(leaf_at[t4] + a4 - first_leaf) * k + y[i + 4]] += 1
            counts[(leaf_at[t5] + a5 - first_leaf) * k + y[i + 5]] += 1
            counts[(leaf_at[t6] + a6 - first_leaf) * k + y[i + 6]] += 1
            counts[(leaf_at[t7] + a7 - first_leaf) * k + y[i + 7]] += 1
            i += 8
        while i < b1:
            t = tree[i - b0]
            f, h, r = feature[t], threshold[t], cont[i]
            v = 0
            for _ in range(depth):
                v = 2 * v + 1 + (r[f[v]] >= h[v])
            counts[(leaf_at[t] + v - first_leaf) * k + y[i]] += 1
            i += 1


@nb.njit([(f64[:, ::1], i64[::1])], nogil=True, cache=True)
def row_argmax(votes, out):
    """out[i] = np.argmax(votes[i]) (the first of tied maxima; votes hold no NaN)."""
    k = votes.shape[1]
    for i in range(votes.shape[0]):
        best, at = votes[i, 0], 0
        for c in range(1, k):
            v = votes[i, c]
            if v > best:
                best, at = v, c
        out[i] = at
