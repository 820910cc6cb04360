"""Issue 28 (auto's speed): the compiled level loop (``build_levels``) writes exactly the
node store the numpy level loop writes — keys, splits, sub-domains, used discrete
features and node order — for trees with discrete features, continuous ones or both,
with and without released split points and feature weights, from the roots and from
nodes a router left unbuilt, whole or as far as a build budget allows."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled import kernels
from dpviz.compiled.kernels import UNBUILT
from dpviz.models.forest.splits import cdf_from_counts
from dpviz.models.trees.space import TreeSpace
from dpviz.models.trees.store import NodeStore
from dpviz.privacy.randomness import tree_root_keys
from tests.models.test_build_compiled import _assert_same

pytestmark = pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")


def _space(s: int, values: list[int], depth: int, released: bool) -> TreeSpace:
    rng = np.random.default_rng(10 * s + len(values) + depth)
    lows, highs = np.linspace(-3, 0, s), np.linspace(1, 9, s)
    if s:
        highs[-1] = lows[-1]  # a feature of one value: the width-1 guard
    cdf = weights = None
    if released:
        if s:
            cdf = cdf_from_counts(rng.integers(-5, 200, size=(s, 32)).astype(float), 3.0)
        weights = rng.dirichlet(np.ones(s + len(values)))
        weights[0] = 0.0  # a feature never drawn
    return TreeSpace(lows, highs, np.array(values, dtype=np.int64), depth, cdf, weights)


def _numpy_only(patch) -> None:
    patch.setattr(NodeStore, "_build_compiled", lambda self, ids, levels: False)
    patch.setattr(NodeStore, "_build_levels_compiled", lambda self, ids, budget: False)


def _built(space, n_trees: int, budget: int, compiled: bool, monkeypatch, steps=()) -> NodeStore:
    """A store of ``n_trees`` trees built from the roots, then (``steps``) built again
    below every other node still unbuilt, as a router resumes."""
    with monkeypatch.context() as patch:
        if not compiled:
            _numpy_only(patch)
        store = NodeStore(space, tree_root_keys(7, n_trees), np.arange(n_trees))
        store.build(store.roots, budget)
        for step in steps:
            unbuilt = np.flatnonzero(store.first_child[: store.size] == UNBUILT)
            store.build(unbuilt[::step], budget)
    return store


SPACES = [
    (0, [2, 3, 4], 3),  # discrete only: a path ends when it has used every feature
    (0, [2, 2, 2, 2, 2], 9),  # discrete only, the depth longer than the features
    (3, [3, 2], 6),  # both
    (1, [5], 4),
    (4, [], 5),  # continuous only, not from the roots: the binary kernel does not apply
]


@pytest.mark.parametrize(("s", "values", "depth"), SPACES)
@pytest.mark.parametrize("released", [False, True])
@pytest.mark.parametrize("budget", [10**9, 40, 400])
def test_build_levels_equals_numpy_levels(s, values, depth, released, budget, monkeypatch):
    space = _space(s, values, depth, released)
    fast = _built(space, 6, budget, True, monkeypatch, steps=(2, 1))
    slow = _built(space, 6, budget, False, monkeypatch, steps=(2, 1))
    _assert_same(fast, slow)
    if released:  # the zero-weight feature is never split on
        assert not (fast.feature[: fast.size] == 0).any()


def test_build_levels_runs_and_builds_trees_whole(monkeypatch):
    """With a large budget the kernel (not the numpy loop) builds every node: no node is
    left unbuilt, and each leaf is at the depth or has used every discrete feature."""
    space = _space(0, [2, 3, 4], 5, False)
    calls = []
    original = NodeStore._build_levels_compiled

    def spy(self, ids, budget):
        calls.append(original(self, ids, budget))
        return calls[-1]

    monkeypatch.setattr(NodeStore, "_build_levels_compiled", spy)
    store = NodeStore(space, tree_root_keys(3, 4), np.arange(4))
    store.build(store.roots, 10**9)
    assert calls == [True]
    first = store.first_child[: store.size]
    assert not (first == UNBUILT).any()
    leaves = first < 0
    assert store.used[: store.size][leaves].all()  # 3 features, depth 5: paths use all
    # Every tree of 2·3·4 paths: each ordering of the three features gives 24 leaves.
    assert leaves.sum() == 4 * 24
