"""Running the compiled kernels over records: the records' layout, thread ranges, and
when a pass waits for the kernels.

Routing (``routing``, ``compact``) and vote sums (``votes``) call a kernel of
``dpviz.compiled.kernels`` (numba) once per range of records or trees, on the shared
threads when the work is large; under :data:`COMPILED_FROM_VISITS` node visits they use
what is loaded and fall back to numpy twins rather than wait.

Privacy: no release of its own; these helpers move the records that a family's booked
release reads.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpviz.compiled import kernels as kernels

# Node visits from which routing waits for the compiled kernels rather than numpy: about
# 4 s of numpy (~22 ns a visit), more than loading the cached kernels takes on a busy
# machine (2-4 s), so smaller work never stalls on them.
COMPILED_FROM_VISITS = 200_000_000
# Pairs from which a routing pass is split across threads (the kernels release the GIL).
THREADS_FROM_PAIRS = 2_000_000


def flat_view(matrix: np.ndarray, dtype) -> tuple[np.ndarray, Callable]:
    """``matrix`` as one flat array, without a copy when its layout and dtype allow, and
    the function giving the flat position of (row, column) pairs."""
    n_rows, n_cols = matrix.shape
    if matrix.flags.f_contiguous and matrix.dtype == dtype:
        return matrix.ravel(order="F"), lambda rows, cols: rows + cols * n_rows
    flat = np.ascontiguousarray(matrix, dtype=dtype).ravel()
    return flat, lambda rows, cols: rows * n_cols + cols


def record_layout(continuous: np.ndarray, discrete: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The encodings as contiguous float64 / int32 arrays (no copy when they are)."""

    def fix(a, dtype):
        a = np.asarray(a, dtype=dtype)
        if a.flags.writeable and (a.flags.f_contiguous or a.flags.c_contiguous):
            return a
        # A worker's read-only memory map too: the compiled kernels take writable arrays.
        return np.array(a, order="F" if a.flags.f_contiguous else "C")

    return fix(continuous, np.float64), fix(discrete, np.int32)


def split_ranges(n: int, parts: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, n, parts + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def thread_count(n_pairs: int) -> int:
    return kernels.cores() if n_pairs >= THREADS_FROM_PAIRS else 1


def run_jobs(jobs) -> None:
    """Run kernel calls, on the shared threads when there are several."""
    if len(jobs) == 1:
        fn, args = jobs[0]
        fn(*args)
        return
    for future in [kernels.pool().submit(fn, *args) for fn, args in jobs]:
        future.result()


def with_zero_column(disc: np.ndarray) -> np.ndarray:
    """The discrete codes and a last column of zeros (read by nodes that stay put)."""
    out = np.zeros((disc.shape[0], disc.shape[1] + 1), dtype=np.int32, order="F")
    out[:, :-1] = disc
    return out
