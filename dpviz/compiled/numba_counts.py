"""Per-leaf class counts from a compact leaf matrix, compiled (numba).

Imported only by ``dpviz.compiled.kernels``. Privacy: none of its own; it counts the
TRUE classes of records per leaf for the caller (a sweep's non-private twin, labelled
NOT private), as the numpy bincount it replaces.
"""

import numba as nb

_i64 = nb.int64


@nb.njit(
    [(m, _i64[::1], _i64[::1], _i64[:, ::1]) for m in (nb.uint8[:, ::1], nb.uint16[:, ::1])],
    nogil=True,
    cache=True,
)
def leaf_class_counts(local, offsets, y, out):
    """out[offsets[t] + local[t, i], y[i]] += 1 for every tree t and record i: one pass
    over each tree's row of one or two bytes a record (a bincount per tree read it as
    intp codes first: three passes and a copy)."""
    for t in range(local.shape[0]):
        row = local[t]
        base = offsets[t]
        for i in range(local.shape[1]):
            out[base + row[i], y[i]] += 1
