"""Issue 29: the compiled builder of binary trees writes exactly the node store the
numpy level loop writes (same keys, splits, sub-domains and node order), with and
without released split points and feature weights, for whole trees and for the first
levels a build budget allows."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled import kernels
from dpviz.compiled.kernels import UNBUILT
from dpviz.models.forest.splits import cdf_from_counts
from dpviz.models.trees.space import TreeSpace
from dpviz.models.trees.store import STORE_FIELDS, NodeStore, binary_levels
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


def _store(space, root_keys, compiled: bool, monkeypatch, budget: int = 10**9) -> NodeStore:
    with monkeypatch.context() as patch:
        if not compiled:
            patch.setattr(NodeStore, "_build_compiled", lambda self, ids, levels: False)
        trees = np.arange(len(root_keys))
        store = NodeStore(space, root_keys, trees)
        store.build(store.roots, budget)
    return store


def _assert_same(fast: NodeStore, slow: NodeStore) -> None:
    assert fast.size == slow.size
    for name in _FIELDS:
        np.testing.assert_array_equal(
            getattr(fast, name)[: fast.size], getattr(slow, name)[: slow.size], err_msg=name
        )


@pytest.mark.parametrize("depth", [1, 2, 7])
@pytest.mark.parametrize("released", [False, True])
def test_compiled_build_equals_numpy_levels(depth, released, monkeypatch):
    space = _space(depth, released)
    root_keys = tree_root_keys(17 + depth, 13)
    assert "build_binary_levels" in kernels.get(wait=True)
    fast = _store(space, root_keys, True, monkeypatch)
    slow = _store(space, root_keys, False, monkeypatch)
    assert fast.size == 13 * (2 ** (depth + 1) - 1)
    _assert_same(fast, slow)
    if released:  # the zero-weight feature is never split on
        assert not (fast.feature[: fast.size] == 1).any()


def test_compiled_build_leaves_partial_stores_to_numpy(monkeypatch):
    space = _space(3, False)
    store = NodeStore(space, tree_root_keys(5, 4), np.arange(4))
    store.expand(store.roots)  # children built already: not the kernel's case
    assert store._build_compiled(store.roots, 3) is False


# 13 roots of depth-7 trees: the budget stops the level loop after 1, 2, 3 or 6 levels
# (26 + 52 > 70; 78 + 104 > 150; 182 + 208 > 300; 1638 + 1664 > 3000), and at a
# budget below the first level, which is built all the same.
@pytest.mark.parametrize(("budget", "levels"), [(5, 1), (70, 1), (150, 2), (300, 3), (3000, 6)])
@pytest.mark.parametrize("released", [False, True])
def test_compiled_first_levels_equal_numpy_levels(budget, levels, released, monkeypatch):
    """Where the budget stops the build early, the compiled pass stops at the same level,
    its last level's nodes unbuilt with the same drawn splits."""
    space = _space(7, released)
    root_keys = tree_root_keys(41, 13)
    assert binary_levels(13, 7, budget) == levels
    fast = NodeStore(space, root_keys, np.arange(13))
    assert fast._build_compiled(fast.roots, levels) is True
    slow = _store(space, root_keys, False, monkeypatch, budget)
    assert fast.size == 13 * (2 ** (levels + 1) - 1)
    last = fast.depth[: fast.size] == levels
    assert (fast.first_child[: fast.size][last] == UNBUILT).all()
    assert (fast.feature[: fast.size][last] >= 0).all()
    _assert_same(fast, slow)


def test_binary_levels_follow_the_level_loop(monkeypatch):
    """The levels the numpy loop builds, counted: every tree whole when it fits."""
    space = _space(5, False)
    for n_roots in (1, 3, 8):
        for budget in (1, 10, 40, 100, 200, 500, 10**6):
            store = _store(space, tree_root_keys(3, n_roots), False, monkeypatch, budget)
            built = int(store.depth[: store.size].max())
            assert binary_levels(n_roots, 5, budget) == built
    assert binary_levels(4, 0, 10) == 0  # roots that are leaves: nothing below them
