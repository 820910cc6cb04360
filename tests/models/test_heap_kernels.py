"""The compiled loops over complete binary trees in heap order give exactly what a
plain numpy descent gives: the same leaves, and sums with the same additions in the
same order (so equal to the last bit)."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled import kernels

pytestmark = pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")


def _heap_forest(rng, n_trees: int, depth: int, n_features: int):
    size = 2 ** (depth + 1) - 1
    feature = rng.integers(0, n_features, size=(n_trees, size)).astype(np.int32)
    threshold = rng.normal(size=(n_trees, size))
    # Some thresholds equal to record values: ">=" must send them right, as numpy does.
    threshold[:, :3] = 0.5
    first_leaf = 2**depth - 1
    feature[:, first_leaf:] = 0
    threshold[:, first_leaf:] = np.nan  # leaves: never read
    return feature, threshold


def _leaves(feature, threshold, X, depth):
    """Each record's leaf number in each tree, (trees, records), level by level."""
    rows = np.arange(len(X))
    out = []
    for feat, thr in zip(feature, threshold, strict=True):
        v = np.zeros(len(X), dtype=np.int64)
        for _ in range(depth):
            v = 2 * v + 1 + (X[rows, feat[v]] >= thr[v])
        out.append(v - (2**depth - 1))
    return np.array(out)


@pytest.mark.parametrize("order", ["C", "F", "strided"])
@pytest.mark.parametrize(
    # Records spanning several blocks and a ragged last one; fewer than 16; many features
    # (narrow blocks); the range a..b of one thread.
    "n, n_trees, depth, n_features, a, b",
    [
        (5_003, 7, 5, 4, 0, 5_003),
        (5_003, 7, 5, 4, 1_017, 4_100),
        (13, 3, 2, 3, 0, 13),
        (700, 4, 3, 90, 5, 699),
        (40, 2, 9, 2, 0, 40),
    ],
)
def test_heap_value_sums_equal_numpy(order, n, n_trees, depth, n_features, a, b):
    rng = np.random.default_rng(n + depth)
    feature, threshold = _heap_forest(rng, n_trees, depth, n_features)
    X = rng.normal(size=(n, n_features))
    X[::7, 0] = 0.5  # ties with the thresholds set to 0.5
    if order == "F":
        X = np.asfortranarray(X)
    elif order == "strided":
        X = np.ascontiguousarray(np.repeat(X, 2, axis=1))[:, ::2]
    leaves_per_tree = 2**depth
    offsets = np.arange(n_trees, dtype=np.int64) * leaves_per_tree
    values = rng.normal(size=(n_trees * leaves_per_tree, 3))
    out = np.zeros((n, 3))
    out[:, 1] = 7.25  # the kernel adds to what is there
    expected = out.copy()
    local = _leaves(feature, threshold, X, depth)
    for t in range(n_trees):  # tree after tree, as the kernel adds
        expected[a:b] += values[offsets[t] + local[t, a:b]]
    fn = kernels.get(wait=True)["heap_value_sums"]
    fn(feature, threshold, X, depth, offsets, values, a, b, out)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize(
    # Several blocks and a ragged last one; fewer than 16 records; the trees t0..t1 of
    # one thread; many features (narrow blocks).
    "n, n_trees, depth, n_features, t0, t1",
    [(5_003, 6, 6, 4, 0, 6), (5_003, 6, 6, 4, 2, 5), (11, 3, 2, 3, 0, 3), (700, 3, 8, 90, 1, 3)],
)
def test_descend_heap_equals_numpy(order, dtype, n, n_trees, depth, n_features, t0, t1):
    rng = np.random.default_rng(n + depth + t0)
    feature, threshold = _heap_forest(rng, n_trees, depth, n_features)
    X = np.array(rng.normal(size=(n, n_features)), order=order)
    X[::5, 0] = 0.5
    out = np.full((n_trees, n), 255, dtype=dtype)  # rows outside t0..t1 stay as they are
    kernels.get(wait=True)["descend_heap"](feature, threshold, X, depth, t0, t1, out)
    expected = np.full((n_trees, n), 255, dtype=dtype)
    expected[t0:t1] = _leaves(feature, threshold, X, depth)[t0:t1]
    np.testing.assert_array_equal(out, expected)
