"""Building random trees before and after h-fast2, in one process (median of --repeats).

Three steps the test suite and users hit, each timed with the code before h-fast2
(re-created here from the public parts it used) and the library's, on fixed keys:

* ``partial``: a node store's first levels within the build budget, binary trees (20
  continuous features, depth 15, 300 trees, budget 65,536: SynthG in Fig. 8). Before: the
  numpy level loop; now: the compiled builder stops at the same level.
* ``decline``: ``compact_forest`` for those trees, which do not fit whole. Before: it
  built the budget's levels, then found nodes unbuilt; now: it declines first.
* ``leaf_space``: every leaf key of 100 mixed trees (6 continuous, 8 discrete features
  with adult's value counts, depth 7). Before: whole frontiers (sub-domains,
  thresholds); now: keys and used features alone.

Each pair's outputs are checked equal before timing.

    python bench/bench_tree_build.py --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dpviz.compiled import kernels
from dpviz.compiled.kernels import UNBUILT
from dpviz.models.trees.compact import compact_forest
from dpviz.models.trees.full import leaf_space_keys
from dpviz.models.trees.space import (
    Frontier,
    TreeSpace,
    choose_splits,
    expand,
    export_node_limit,
    is_leaf,
)
from dpviz.models.trees.store import NodeStore, build_budget
from dpviz.privacy.randomness import tree_root_keys

BINARY = TreeSpace(np.full(20, -5.0), np.full(20, 5.0), np.zeros(0, np.int64), 15)
MIXED = TreeSpace(np.zeros(6), np.ones(6), np.array([7, 16, 7, 14, 6, 5, 2, 41]), 7)


def level_loop(space: TreeSpace, keys: np.ndarray, budget: int) -> NodeStore:
    """The numpy level loop (what a partial build ran before)."""
    store = NodeStore(space, keys, np.arange(len(keys)))
    store._build_compiled = lambda ids, levels: False
    store.build(store.roots, budget)
    return store


def compiled_levels(space: TreeSpace, keys: np.ndarray, budget: int) -> NodeStore:
    store = NodeStore(space, keys, np.arange(len(keys)))
    store.build(store.roots, budget)
    return store


def decline_before(space: TreeSpace, keys: np.ndarray, n_records: int):
    """compact_forest's answer before: build within the budget, then look."""
    trees = np.arange(len(keys))
    store = level_loop(space, keys, build_budget(n_records * len(trees), space))
    return None if (store.first_child[: store.size] == UNBUILT).any() else store


def leaf_space_before(space: TreeSpace, root_keys: np.ndarray, max_nodes: int):
    """leaf_space_keys before: whole frontiers (sub-domains, thresholds) level by level,
    eight trees at a time (the reference tests/models/test_leaf_count.py compares with)."""
    if space.n_continuous and len(root_keys) * (2 ** (space.max_depth + 1) - 1) > max_nodes:
        return None
    found, total = [], 0
    for first in range(0, len(root_keys), 8):
        roots = root_keys[first : first + 8]
        frontier = Frontier.roots(space, roots, np.arange(len(roots)), 0)
        for depth in range(space.max_depth + 1):
            total += len(frontier)
            if total > max_nodes:
                return None
            leaf = is_leaf(space, frontier, depth)
            found.append(frontier.keys[leaf])
            frontier = frontier.take(np.flatnonzero(~leaf))
            if not len(frontier):
                break
            splits = choose_splits(space, frontier)
            parent = np.repeat(np.arange(len(frontier)), splits.n_children)
            child = np.arange(len(parent)) - np.repeat(
                np.cumsum(splits.n_children) - splits.n_children, splits.n_children
            )
            frontier = expand(space, frontier, splits, parent, child, None, depth)
    return np.sort(np.concatenate(found))


def same_store(a: NodeStore, b: NodeStore) -> None:
    assert a.size == b.size
    for name in ("key", "tree", "depth", "parent", "feature", "threshold", "first_child"):
        np.testing.assert_array_equal(getattr(a, name)[: a.size], getattr(b, name)[: b.size])
    np.testing.assert_array_equal(a.lows[: a.size], b.lows[: b.size])
    np.testing.assert_array_equal(a.highs[: a.size], b.highs[: b.size])


def median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    assert kernels.get(wait=True) is not None, "numba is needed for the compiled builder"
    binary_keys, mixed_keys = tree_root_keys(8, 300), tree_root_keys(11, 100)
    limit = export_node_limit(MIXED)
    same_store(
        compiled_levels(BINARY, binary_keys, 65_536), level_loop(BINARY, binary_keys, 65_536)
    )
    assert compact_forest(BINARY, binary_keys, np.arange(300), 50) is None
    assert decline_before(BINARY, binary_keys, 50) is None
    np.testing.assert_array_equal(
        leaf_space_keys(MIXED, mixed_keys, limit), leaf_space_before(MIXED, mixed_keys, limit)
    )
    pairs = {
        "partial": (
            lambda: level_loop(BINARY, binary_keys, 65_536),
            lambda: compiled_levels(BINARY, binary_keys, 65_536),
        ),
        "decline": (
            lambda: decline_before(BINARY, binary_keys, 50),
            lambda: compact_forest(BINARY, binary_keys, np.arange(300), 50),
        ),
        "leaf_space": (
            lambda: leaf_space_before(MIXED, mixed_keys, limit),
            lambda: leaf_space_keys(MIXED, mixed_keys, limit),
        ),
    }
    print("| step | before s | after s | ratio |")
    print("|---|---:|---:|---:|")
    for name, (before, after) in pairs.items():
        b, a = median_seconds(before, args.repeats), median_seconds(after, args.repeats)
        print(f"| {name} | {b:.4f} | {a:.4f} | {b / a:.1f}× |")


if __name__ == "__main__":
    main()
