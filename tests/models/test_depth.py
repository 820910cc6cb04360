import pandas as pd
import pytest

from dpviz.models.trees.depth import jpw_depth, resolve_depth, theorem2_depth
from tests.conftest import reference_path


def test_theorem2_reproduces_table4():
    table = pd.read_csv(reference_path("fletcher2017_results.csv"))
    rows = table[table.figure == "Table4"]
    assert len(rows) == 14
    for _, row in rows.iterrows():
        s, r = (int(part.split("=")[1]) for part in row.note.split())
        assert theorem2_depth(s, r) == int(row.value), row.dataset


@pytest.mark.parametrize(
    ("rule", "s", "r", "expected"),
    [("half", 6, 8, 7), ("full", 6, 8, 14), ("half", 1, 0, 1), (7, 3, 3, 7), ("4", 3, 3, 4)],
)
def test_simple_rules(rule, s, r, expected):
    assert resolve_depth(rule, s, r) == expected


def test_jpw_rule_uses_branching_and_records():
    # b = 2, n = 1024: floor(log2 1024) - 1 = 9, capped by m / 2 = 10.
    assert jpw_depth(1024, [2] * 20) == 9
    assert jpw_depth(10**6, [2] * 4) == 2


@pytest.mark.parametrize("rule", ["deep", 0, -3, "2.5", 2.5, True])
def test_bad_rules_are_value_errors(rule):
    with pytest.raises(ValueError, match="depth"):
        resolve_depth(rule, 3, 2)


def test_records_rule_gives_about_one_leaf_per_record_of_a_tree():
    # 2,000 records over 100 disjoint trees: 20 per tree; binary splits → ⌊log2 20⌋ = 4.
    assert resolve_depth("records", 6, 0, n_records=2000, branching=[2] * 6, n_trees=100) == 4
    # Shared trees read all records: ⌊log2 2000⌋ = 10, capped by theorem2 (6 features: 5).
    assert resolve_depth("records", 6, 0, n_records=2000, branching=[2] * 6) == 5
    # Mean branching 3 (ternary features), 766 records over 10 trees: ⌊log3 76⌋ = 3.
    assert resolve_depth("records", 0, 9, n_records=766, branching=[3] * 9, n_trees=10) == 3
    # Fewer records than trees still gives a tree of depth 1.
    assert resolve_depth("records", 2, 0, n_records=5, branching=[2, 2], n_trees=100) == 1
    with pytest.raises(ValueError, match="record count"):
        resolve_depth("records", 2, 0, branching=[2, 2])
