import pytest

from dpviz.models.forest.sizing import (
    RECORDS_PER_TREE,
    SMALL_MAX_TREES,
    SMALL_MIN_TREES,
    SMALL_RECORDS_PER_TREE,
    TREE_STEPS,
    signal_records,
    signal_scale,
    suggest_trees,
)


@pytest.mark.parametrize(
    ("n", "trees"),
    [(0, 10), (435, 10), (1_500, 10), (3_749, 10), (3_750, 25), (7_500, 50), (15_000, 100)],
)
def test_tree_count_keeps_enough_records_per_tree(n, trees):
    suggestion = suggest_trees(n)
    assert suggestion.n_estimators == trees
    assert f"{n:,}" in suggestion.reason
    if trees > TREE_STEPS[0]:
        assert n // trees >= RECORDS_PER_TREE


def test_shared_records_keep_the_papers_count_and_bad_counts_are_refused():
    assert suggest_trees(300, "shared").n_estimators == 100
    with pytest.raises(ValueError, match="record count"):
        suggest_trees(-1)


@pytest.mark.parametrize(
    ("epsilon", "scale"),
    [(None, 1.0), (10.0, 1.0), (1.0, 1.0), (0.999, 0.1), (0.5, 0.1), (0.1, 0.1), (0.05, 0.01)],
)
def test_signal_scale_is_epsilon_rounded_down_to_a_decade_below_one(epsilon, scale):
    assert signal_scale(epsilon) == pytest.approx(scale, rel=1e-12)


@pytest.mark.parametrize(
    ("n", "epsilon", "trees"),
    [
        # ε ≥ 1 (and no ε): the sizes measured at ε = 1 stay.
        (348, 1.0, 10),
        (348, None, 10),
        (15_000, 10.0, 100),
        # ε in [0.1, 1): sized for n/10 records, 50 of them a tree, 3 to 10 trees.
        (348, 0.1, 3),  # votes' training folds: 34 signal records, the least, 3 trees
        (2_499, 0.1, 3),  # 249 signal records: 5 trees would keep 49
        (2_500, 0.1, 5),  # 250 → 5 trees of 50
        (3_341, 0.1, 5),  # abalone: 334 → 5 trees of 66
        (4_999, 0.1, 5),  # 499 → 5 trees of 99: 10 would keep 49
        (5_000, 0.1, 10),  # 500 → 10 trees of 50
        (8_800, 0.1, 10),  # pendigits: 880 → 10 trees of 88
        (36_000, 0.5, 10),  # adult: 3,600 → 10 trees of 360 (at most 10; 50 gave the majority)
        (150_000, 0.1, 10),
        # ε in [0.01, 0.1): n/100.
        (36_000, 0.05, 5),  # 360: 10 trees would keep 36
        (24_999, 0.05, 3),
        (0, 0.1, 3),
    ],
)
def test_tree_count_below_epsilon_one_follows_the_signal_records(n, epsilon, trees):
    suggestion = suggest_trees(n, epsilon=epsilon)
    assert suggestion.n_estimators == trees
    signal = signal_records(n, epsilon)
    if trees > SMALL_MIN_TREES and epsilon is not None and epsilon < 1:
        assert signal // trees >= SMALL_RECORDS_PER_TREE
    if epsilon is not None and epsilon < 1:
        assert SMALL_MIN_TREES <= trees <= SMALL_MAX_TREES
    assert f"{n:,}" in suggestion.reason


def test_signal_records_scale_a_count_and_keep_at_least_one():
    assert signal_records(348, 0.1) == 34
    assert signal_records(5, 0.01) == 1
    assert signal_records(0, 0.1) == 0
    assert signal_records(348, 2.0) == 348
