"""Compiled routing kernels (numba), loaded only when routing is large enough to pay.

A record descends a tree of a :class:`dpviz.models.trees.store.NodeStore` node by node. The
numba kernels do it a block of records at a time, at 1.5-2.5 ns per visited node on one core
here; the pure numpy kernel in ``dpviz.models.trees.routing`` does the same work level by
level (6.6× slower on 60,000 records × 100 trees) and runs when numba is not installed, or
for small work while numba is still loading: importing numba costs 0.5-0.8 s and loading
the cached machine code 2-4 s on the shared 2-core machine (compiling it where no cache
exists, ~17 s), more than small routing takes in numpy. Work of
``dpviz.models.trees.passes.COMPILED_FROM_VISITS`` node visits or more waits for the kernels;
smaller work starts their loading in a background thread (:func:`warm_up`, which the app calls
at start-up) and carries on in numpy. ``DPVIZ_NO_NUMBA=1`` keeps numpy throughout.

Node encoding shared with ``dpviz.models.trees.store``: ``first_child[v]`` is ``LEAF`` (-1) for a
leaf, ``UNBUILT`` (-2) for an internal node whose children are not built yet, or the
id of its first child (children are contiguous). The result of a descent is the leaf's
id, -1 when the record abstains (an unknown discrete value at a node splitting on it),
or ``-(v + 2)`` when it stopped at the unbuilt node ``v``.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

LEAF = -1
UNBUILT = -2

_lock = threading.Lock()
_pool_lock = threading.Lock()
_kernels = None  # the compiled functions, once loaded
_failed = False
_loader: threading.Thread | None = None
_pool: ThreadPoolExecutor | None = None
_inline = threading.local()  # .on: this thread maps in place (see items_in_place)


def cores() -> int:
    """CPU cores this process may use (``DPVIZ_THREADS`` caps the kernels' threads)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n = os.cpu_count() or 1
    cap = os.environ.get("DPVIZ_THREADS", "")
    return max(1, min(n, int(cap)) if cap.isdigit() else n)


def pool() -> ThreadPoolExecutor:
    """One thread per core, shared: the compiled kernels release the GIL."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=cores(), thread_name_prefix="dpviz-route")
        return _pool


def map_on_threads(fn, items) -> list:
    """``list(map(fn, items))``, the items side by side on the shared threads (one per
    core) when there are several cores and items; ``fn`` releases the GIL for most of its
    work (compiled kernels, the cipher) and writes disjoint outputs."""
    items = list(items)
    if cores() == 1 or len(items) < 2 or getattr(_inline, "on", False):
        return [fn(item) for item in items]
    return list(pool().map(fn, items))


@contextmanager
def items_in_place():
    """Within it, :func:`map_on_threads` runs this thread's items one after the other
    in this thread: for work that already runs side by side with other work on every
    core (a sweep's parts), where handing items to the shared threads only adds queueing
    and GIL hand-offs (a default Curves sweep's noise buffers: 8% of its CPU time,
    measured in process on 2 cores)."""
    before = getattr(_inline, "on", False)
    _inline.on = True
    try:
        yield
    finally:
        _inline.on = before


def _compile():
    from dpviz.compiled import numba_counts, numba_heap, numba_stream
    from dpviz.compiled import numba_kernels as compiled

    return {
        "leaf_class_counts": numba_counts.leaf_class_counts,
        "stream_discrete_laplace": numba_stream.stream_discrete_laplace,
        "counter_blocks": numba_stream.counter_blocks,
        "heap_value_sums": numba_heap.heap_value_sums,
        "descend_heap": numba_heap.descend_heap,
    } | {
        name: getattr(compiled, name)
        for name in (
            "descend_table",
            "descend_split_table",
            "result_table",
            "descend_pairs",
            "mark",
            "remap",
            "label_counts",
            "packed_counts",
            "value_sums",
            "packed_counts_local",
            "label_counts_local",
            "value_sums_local",
            "word_sums_local",
            "unpack_votes",
            "descend_heap_pairs",
            "record_trees",
            "column_ranges",
            "clip_columns",
            "bin_counts",
            "heap_fit_counts",
            "row_argmax",
            "discrete_laplace_words",
            "build_binary_levels",
            "build_levels",
            "reached",
            "renumber",
        )
    }


def _load() -> None:
    global _kernels, _failed
    if os.environ.get("DPVIZ_NO_NUMBA"):
        _failed = True
        return
    try:
        compiled = _compile()
    except Exception:  # numba missing or unable to compile here: numpy does the work
        _failed = True
        return
    from dpviz.privacy import noise

    # Keyed discrete Laplace noise read by a compiled loop (the same numbers).
    noise.register_compiled_laplace(compiled["discrete_laplace_words"], map_on_threads)
    noise.register_compiled_noise(compiled["stream_discrete_laplace"], compiled["counter_blocks"])
    _kernels = compiled


def get(wait: bool):
    """The compiled kernels, or None for the numpy path.

    ``wait`` loads them now when needed (large work); otherwise a background load
    starts and None is returned until it has finished."""
    if _kernels is not None or _failed:
        return _kernels
    if wait:
        with _lock:
            if _kernels is None and not _failed:
                _load()
        return _kernels
    warm_up()
    return None


def loaded():
    """The compiled kernels if they have loaded already, else None (loads nothing): for
    small work that takes them when they are there and numpy otherwise."""
    return _kernels


def warm_up() -> None:
    """Load the kernels in a background thread (idempotent)."""
    global _loader
    with _lock:
        if _kernels is not None or _failed or _loader is not None:
            return

        def run():
            with _lock:
                if _kernels is None and not _failed:
                    _load()

        _loader = threading.Thread(target=run, name="dpviz-numba-load", daemon=True)
    _loader.start()
