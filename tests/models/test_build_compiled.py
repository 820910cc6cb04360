"""Issue 29: the compiled builder of whole binary trees writes exactly the node store
the numpy level loop writes (same keys, splits, sub-domains and node order), with and
without released split points and feature weights."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled import kernels
from dpviz.models.forest.splits import cdf_from_counts
from dpviz.models.trees.space import TreeSpace
from dpviz.models.trees.store import STORE_FIELDS, NodeStore
from dpviz.privacy.randomness import tree_root_keys

pytestmark = pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")

_FIELDS = [name for name, _ in STORE_FIELDS] + ["lows", "highs", "used"]


def _space(depth: int, released: bool, s: int = 4) -> TreeSpace:
    rng = np.random.default_rng(depth)
    lows, highs = np.linspace(-3, 0, s), np.linspace(1, 9, s)
    highs[-1] = lows[-1]  # a feature of one value: the width-1 guard
    cdf = weights = None
    if released:
        cdf = cdf_from_counts(rng.integers(-5, 200, size=(s, 32)).astype(float), 3.0)
        weights = rng.dirichlet(np.ones(s))
        weights[1] = 0.0  # a feature never drawn
    return TreeSpace(lows, highs, np.zeros(0, np.int64), depth, cdf, weights)


def _store(space, root_keys, compiled: bool, monkeypatch) -> NodeStore:
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(NodeStore, "_build_compiled", lambda self, ids: False)
        trees = np.arange(len(root_keys))
        store = NodeStore(space, root_keys, trees)
        store.build(store.roots, 10**9)
    return store


@pytest.mark.parametrize("depth", [1, 2, 7])
@pytest.mark.parametrize("released", [False, True])
def test_compiled_build_equals_numpy_levels(depth, released, monkeypatch):
    space = _space(depth, released)
    root_keys = tree_root_keys(17 + depth, 13)
    assert "build_binary_levels" in kernels.get(wait=True)
    fast = _store(space, root_keys, True, monkeypatch)
    slow = _store(space, root_keys, False, monkeypatch)
    assert fast.size == slow.size == 13 * (2 ** (depth + 1) - 1)
    for name in _FIELDS:
        np.testing.assert_array_equal(
            getattr(fast, name)[: fast.size], getattr(slow, name)[: slow.size], err_msg=name
        )
    if released:  # the zero-weight feature is never split on
        assert not (fast.feature[: fast.size] == 1).any()


def test_compiled_build_leaves_partial_stores_to_numpy(monkeypatch):
    space = _space(3, False)
    store = NodeStore(space, tree_root_keys(5, 4), np.arange(4))
    store.expand(store.roots)  # children built already: not the kernel's case
    assert store._build_compiled(store.roots) is False
