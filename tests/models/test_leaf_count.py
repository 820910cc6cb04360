"""The forest's leaf count (the empty-leaf share of its NOT-private diagnostics): trees
small enough to count are counted all at once, and give what counting each tree alone
gives; the public bound bounds every tree. The leaf space a release draws, enumerated
from the trees' shape alone, is the leaves of the whole trees an export lists."""

import numpy as np
import pytest

from bench.bench_tree_build import leaf_space_before  # the code before, kept once
from dpviz.models.trees.full import (
    _count_forest,
    _count_tree,
    _knuth_estimate,
    build_full,
    estimate_leaves,
    leaf_bound,
    leaf_space_keys,
)
from dpviz.models.trees.space import TreeSpace
from dpviz.privacy.randomness import tree_root_keys


def _spaces():
    """Continuous and discrete features (value counts 1-4, so a one-value feature that
    does not branch), with and without released feature weights (some weight 0)."""
    rng = np.random.default_rng(1)
    for case in range(24):
        s, r = int(rng.integers(0, 4)), int(rng.integers(1, 6))
        weights = None
        if case % 2:
            weights = rng.random(s + r)
            weights[rng.random(s + r) < 0.2] = 0.0
            weights[0] = max(weights[0], 0.1)
        yield (
            case,
            TreeSpace(
                np.zeros(s),
                np.ones(s),
                rng.integers(1, 5, r),
                int(rng.integers(1, 9)),
                None,
                weights,
            ),
        )


@pytest.mark.parametrize(("case", "space"), list(_spaces()))
def test_counting_all_trees_at_once_equals_counting_each(case, space):
    keys = tree_root_keys(case, 12)
    alone = [_count_tree(space, keys[t : t + 1], t, 10**9) for t in range(len(keys))]
    together = _count_forest(space, keys, leaf_bound(space))
    np.testing.assert_array_equal(together, np.asarray(alone, dtype=float))
    assert max(alone) <= leaf_bound(space)


@pytest.mark.parametrize(("case", "space"), list(_spaces()))
def test_leaf_space_from_the_shape_equals_whole_frontiers(case, space):
    """The leaf space from keys and used features alone: the keys (or None) the whole
    frontiers gave, at a limit the trees fit, one node below it, and far below it."""
    keys = tree_root_keys(case, 19)
    n_nodes = len(build_full(space, keys, 10**7).key)
    for limit in (10**7, n_nodes, n_nodes - 1, n_nodes // 3):
        before = leaf_space_before(space, keys, limit)
        after = leaf_space_keys(space, keys, limit)
        assert (after is None) == (before is None)
        if before is not None:
            assert after.dtype == before.dtype
            np.testing.assert_array_equal(after, before)
    assert leaf_space_keys(space, keys, n_nodes // 3) is None


def test_groups_of_trees_count_as_one_group(monkeypatch):
    """Trees are counted in groups when the bound is large: the split changes nothing."""
    space = TreeSpace(np.zeros(2), np.ones(2), np.array([3, 4, 2]), 7)
    keys = tree_root_keys(5, 9)
    whole = _count_forest(space, keys, leaf_bound(space))
    monkeypatch.setattr("dpviz.models.trees.full.COUNT_NODES", 2 * leaf_bound(space))
    np.testing.assert_array_equal(_count_forest(space, keys, leaf_bound(space)), whole)


def test_the_bound_is_the_largest_path_product():
    # Depth 3 over values (4, 3) and a continuous feature: 4 · 3 · 2.
    assert leaf_bound(TreeSpace(np.zeros(1), np.ones(1), np.array([4, 3]), 3)) == 24
    # Without a continuous feature a path uses each discrete feature at most once.
    assert leaf_bound(TreeSpace(np.zeros(0), np.ones(0), np.array([4, 3]), 5)) == 12
    # Continuous only beyond the discrete features: 2 per level.
    assert leaf_bound(TreeSpace(np.zeros(1), np.ones(1), np.array([1]), 4)) == 16


def test_estimates_above_the_limit_keep_the_random_probes():
    """A space whose bound passes the limit takes Knuth's estimate first, as before."""
    space = TreeSpace(np.zeros(1), np.ones(1), np.array([3, 4, 2, 5]), 6)
    keys = tree_root_keys(3, 4)
    limit = leaf_bound(space) - 1
    totals, exact = estimate_leaves(space, keys, exact_limit=limit)
    probes = _knuth_estimate(space, keys, 512)
    counted = [_count_tree(space, keys[t : t + 1], t, 4 * limit) for t in range(len(keys))]
    expected = np.where(probes <= limit, counted, probes)
    np.testing.assert_array_equal(totals, expected)
    np.testing.assert_array_equal(exact, probes <= limit)
