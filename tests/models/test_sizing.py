import pytest

from dpviz.models.forest.sizing import RECORDS_PER_TREE, TREE_STEPS, suggest_trees


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
