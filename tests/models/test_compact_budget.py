"""compact_forest declines binary trees that the build budget stops short of their
leaves before building any of them: exactly when building them level by level, as it
did before, leaves nodes unbuilt."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz.compiled.kernels import UNBUILT
from dpviz.models.trees.compact import compact_forest
from dpviz.models.trees.space import TreeSpace
from dpviz.models.trees.store import NodeStore, build_budget
from dpviz.privacy.randomness import tree_root_keys


def _space(depth: int) -> TreeSpace:
    return TreeSpace(np.zeros(3), np.ones(3), np.zeros(0, np.int64), depth)


def _built_whole(space: TreeSpace, root_keys, trees, n_records: int) -> bool:
    """The former test: build within the budget, then look for unbuilt nodes."""
    store = NodeStore(space, root_keys[trees], trees)
    store.build(store.roots, build_budget(n_records * len(trees), space))
    return not (store.first_child[: store.size] == UNBUILT).any()


# 65,536 nodes at least: depth 14 (32,766 nodes a tree) fits 2 trees, not 3, unless the
# records raise the budget (a quarter of the pairs); depth 15 fits 1 tree.
@pytest.mark.parametrize(
    ("depth", "n_trees", "n_records"),
    [(14, 2, 10), (14, 3, 10), (14, 3, 200_000), (15, 1, 10), (15, 2, 10), (3, 50, 10)],
)
def test_declined_exactly_when_the_level_loop_stops_short(depth, n_trees, n_records):
    space = _space(depth)
    root_keys = tree_root_keys(7, n_trees)
    trees = np.arange(n_trees)
    forest = compact_forest(space, root_keys, trees, n_records)
    whole = _built_whole(space, root_keys, trees, n_records)
    assert (forest is not None) == whole
    if forest is not None:
        assert forest.store.size == n_trees * (2 ** (depth + 1) - 1)
