"""dpviz.evaluation.teach: the papers' tables, the playground, the loss map and the tree
walk-through."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpviz.evaluation.teach import (
    PLAYGROUND_MECHANISMS,
    addendum_story,
    compare_with_printed,
    empirical_frequencies,
    majority_probability_table,
    playground,
    printed_unit,
    privacy_loss_grid,
    smooth_sensitivity_table,
    tiny_demo,
    tree_walkthrough,
)
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.audit import pair_loss
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.tabular.encode import encode
from tests.conftest import reference_path


@pytest.fixture(scope="module")
def printed():
    return pd.read_csv(reference_path("mechanism_tables.csv"), dtype=str)


# --- Table 2 and Table 6 ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unit"), [("0.99004", 1e-5), ("1.93e-22", 1e-24), ("52.1", 0.1), ("1.00000", 1e-5)]
)
def test_printed_unit(text, unit):
    assert printed_unit(text) == pytest.approx(unit)


def test_table2_matches_the_paper_to_its_printed_precision(printed):
    """Table 2 is e^(−jε); the paper rounds (or truncates) its entries, so each computed
    value must lie within one unit of the last printed digit."""
    table = smooth_sensitivity_table().set_index("j")
    rows = printed[printed["table"] == "Table2"]
    assert len(rows) == 21
    for row in rows.itertuples(index=False):
        computed = table.loc[int(row.j_or_counts), f"ε = {float(row.epsilon):g}"]
        assert abs(computed - float(row.value)) <= printed_unit(row.value) * (1 + 1e-9), row


def test_table6_matches_the_addendum_to_its_printed_precision(printed):
    table = majority_probability_table().set_index(["f_A", "f_B"])
    rows = printed[printed["table"] == "Table6"]
    assert len(rows) == 12
    for row in rows.itertuples(index=False):
        pair = dict(part.split("=") for part in row.j_or_counts.split(";"))
        mech = row.quantity.removeprefix("P(B)_").removesuffix("_pct")
        computed = table.loc[(int(pair["fA"]), int(pair["fB"])), f"P(B) {mech} (%)"]
        assert abs(computed - float(row.value)) <= printed_unit(row.value) * (1 + 1e-9), row


def test_compare_with_printed_agrees_everywhere():
    comparison = compare_with_printed(reference_path("mechanism_tables.csv"))
    assert len(comparison) == 33
    assert comparison["agrees"].all()
    # (10, 50) at ε = 0.1 is 93.88% and printed 93.8: truncated, still within one unit
    row = comparison[(comparison["j_or_counts"] == "fA=10;fB=50")].iloc[0]
    assert row["computed"] == pytest.approx(93.877, abs=1e-3)


def test_table6_can_be_extended_beyond_the_paper():
    table = majority_probability_table(mechanisms=("smooth_em", "count_em", "permute_flip"))
    assert (table["P(B) permute_flip (%)"] >= table["P(B) count_em (%)"] - 1e-9).all()
    assert list(table["gap_j"]) == [5, 5, 1, 10, 40, 50]


# --- playground -------------------------------------------------------------------------


def test_playground_probabilities_are_the_exact_laws():
    play = playground([5, 10, 3], 0.5)
    assert play.gap == 5 and play.smooth_sensitivity == pytest.approx(math.exp(-2.5))
    assert list(dict.fromkeys(play.probabilities["mechanism"])) == list(PLAYGROUND_MECHANISMS)
    wide = play.wide()
    np.testing.assert_allclose(wide.sum(axis=1), 1.0, atol=1e-9)
    for m in PLAYGROUND_MECHANISMS:
        exact = MECHANISMS[m].probabilities(np.array([[5, 10, 3]]), 0.5)[0]
        row = play.probabilities[play.probabilities["mechanism"] == m]
        np.testing.assert_allclose(row["probability"], exact, rtol=1e-12)
    assert wide.loc["none (NOT DP)"].tolist() == [0.0, 1.0, 0.0]
    assert "smooth_em (NOT DP)" in wide.index
    assert "j = 5" in play.explanation and "NOT differentially private" in play.explanation


def test_playground_ties_and_names():
    play = playground([4, 4], 1.0, class_names=["spam", "ham"])
    assert play.gap == 0 and play.smooth_sensitivity == 1.0
    assert "tied" in play.explanation
    assert play.wide().loc["none (NOT DP)"].tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([3], "between 2 and 5"),
        ([1, 2, 3, 4, 5, 6], "between 2 and 5"),
        ([1, -2], "whole numbers"),
        ([1.5, 2], "whole numbers"),
        (["a", 2], "whole numbers"),
    ],
)
def test_playground_refuses_bad_counts(counts, message):
    with pytest.raises(ValueError, match=message):
        playground(counts, 1.0)


def test_playground_refuses_bad_epsilon_and_names():
    with pytest.raises(ValueError, match="epsilon"):
        playground([1, 2], 0)
    with pytest.raises(ValueError, match="distinct class names"):
        playground([1, 2], 1.0, class_names=["a", "a"])


def test_empirical_frequencies_follow_the_exact_law():
    """Chi-square goodness of fit of 20,000 seeded draws per mechanism against the exact
    law. The seed is fixed (seed=3), so this test is deterministic: it cannot flake. At
    the 0.1% level a correct sampler fails for about 1 seed in 1,000."""
    counts, eps, n = [3, 5, 4], 0.4, 20_000
    play = playground(counts, eps)
    draws = empirical_frequencies(counts, eps, n_draws=n, seed=3)
    for m in PLAYGROUND_MECHANISMS:
        observed = draws[draws["mechanism"] == m]["hits"].to_numpy()
        expected = n * play.probabilities[play.probabilities["mechanism"] == m]["probability"]
        expected = expected.to_numpy()
        assert observed.sum() == n
        if m == "none":
            np.testing.assert_array_equal(observed, expected)
            continue
        result = stats.chisquare(observed, expected * n / expected.sum())
        assert result.pvalue > 1e-3, (m, observed, expected)


def test_empirical_frequencies_are_reproducible_and_independent_of_the_selection():
    a = empirical_frequencies([2, 6], 1.0, n_draws=500, seed=11)
    b = empirical_frequencies([2, 6], 1.0, n_draws=500, seed=11, mechanisms=["count_em"])
    pd.testing.assert_frame_equal(a, empirical_frequencies([2, 6], 1.0, n_draws=500, seed=11))
    np.testing.assert_array_equal(
        a[a["mechanism"] == "count_em"]["hits"].to_numpy(), b["hits"].to_numpy()
    )
    assert not a.equals(empirical_frequencies([2, 6], 1.0, n_draws=500, seed=12))
    with pytest.raises(ValueError, match="n_draws"):
        empirical_frequencies([2, 6], 1.0, n_draws=0)
    with pytest.raises(ValueError, match="seed"):
        empirical_frequencies([2, 6], 1.0, seed=-1)


# --- privacy-loss map -------------------------------------------------------------------


def test_smooth_em_loss_explodes_with_the_gap():
    """SPEC §3: at ε = 1, 2 classes, between neighbours whose gaps are j and j − 1 the
    loss is 2.13 for j = 2 and 17.3 for j = 4; with the j + 1 neighbour too, the worst
    loss of a j = 2 leaf is 6.32."""
    grid = privacy_loss_grid("smooth_em", 1.0, max_count=10)
    assert round(grid.loss_between((0, 2), (0, 1)), 2) == 2.13
    assert float(f"{grid.loss_between((0, 4), (0, 3)):.3g}") == 17.3
    assert grid.loss_between((2, 0), (1, 0)) == pytest.approx(2.1313, abs=1e-4)  # symmetric
    cell = grid.cells[(grid.cells["count_a"] == 0) & (grid.cells["count_b"] == 2)].iloc[0]
    assert round(cell["loss"], 2) == 6.32 and cell["above"]
    assert cell["worst_neighbour"] == "add one B record"
    assert grid.loss_between((0, 2), (0, 1)) == pytest.approx(
        pair_loss("smooth_em", [0, 2], [0, 1], 1.0), rel=1e-12
    )
    assert not grid.private and grid.n_above > 100 and grid.max_loss > 1e4
    assert "breaks it" in grid.explanation


@pytest.mark.parametrize("mechanism", ["global_em", "count_em", "permute_flip"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_proven_mechanisms_stay_within_epsilon(mechanism, epsilon):
    grid = privacy_loss_grid(mechanism, epsilon, max_count=12)
    assert grid.max_loss <= epsilon + 1e-9
    assert grid.n_above == 0 and grid.private
    assert "keeps every cell within it" in grid.explanation


def test_laplace_loss_is_exactly_epsilon_and_none_is_unbounded():
    laplace = privacy_loss_grid("laplace_counts", 0.7, max_count=5)
    assert (laplace.cells["loss"] == 0.7).all() and laplace.n_above == 0
    none = privacy_loss_grid("none", 1.0, max_count=5)
    assert math.isinf(none.max_loss) and none.n_above > 0


def test_grid_shape_and_edges():
    grid = privacy_loss_grid("count_em", 1.0, max_count=4)
    assert len(grid.cells) == 25 and grid.matrix.shape == (5, 5)
    corner = grid.cells.iloc[0]
    assert math.isnan(corner["loss_remove_a"]) and math.isnan(corner["loss_remove_b"])
    with pytest.raises(ValueError, match="exactly one record"):
        grid.loss_between((1, 1), (2, 2))


def test_grid_refuses_bad_inputs():
    with pytest.raises(ValueError, match="max_count"):
        privacy_loss_grid("count_em", 1.0, max_count=0)
    with pytest.raises(ValueError, match="max_count"):
        privacy_loss_grid("count_em", 1.0, max_count=61)
    with pytest.raises(ValueError, match="underflow"):
        privacy_loss_grid("smooth_em", 20.0, max_count=40)
    with pytest.raises(ValueError, match="unknown mechanism"):
        privacy_loss_grid("nope", 1.0)


def test_addendum_story():
    story = addendum_story()
    for word in ("2017", "2021", "withdrew", "2.13", "17.3", "permute_flip", "count_em"):
        assert word in story
    assert "\n" not in story  # one paragraph


# --- a tree grows -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def walk():
    frame, schema = tiny_demo()
    return tree_walkthrough(frame, schema, depth=2, epsilon=1.0, random_state=0, noise_seed=0)


def test_walkthrough_has_four_steps_with_privacy_marks(walk):
    assert [s.number for s in walk.steps] == [1, 2, 3, 4]
    structure, fall, release, vote = walk.steps
    assert not structure.reads_data and fall.reads_data
    assert "count[yes]" in fall.not_private and "flip_probability" in release.not_private
    assert "released_label" not in release.not_private
    assert "NOT private" in fall.text and "NOT private" in release.text
    assert len(structure.table) == 7  # a depth-2 tree of continuous features
    assert vote.highlight[0] == 0 and vote.highlight[-1] == walk.test_leaf
    # The fixture replays its noise, and its ledger says so; fresh noise is 1-DP.
    assert "NOT private: the noise can be replayed" in walk.ledger
    frame, schema = tiny_demo()
    assert "1-differentially private" in tree_walkthrough(frame, schema).ledger


def test_structure_does_not_depend_on_the_data(walk):
    frame, schema = tiny_demo(n_records=60, seed=9)
    other = tree_walkthrough(frame, schema, depth=2, epsilon=1.0, random_state=0)
    pd.testing.assert_frame_equal(walk.steps[0].table, other.steps[0].table)
    assert not walk.steps[1].table.equals(other.steps[1].table)


def test_walkthrough_leaves_match_the_forests_leaf_table(walk):
    frame, schema = tiny_demo()
    model = DPRandomForestClassifier(
        epsilon=1.0,
        n_estimators=1,
        depth=2,
        mechanism="permute_flip",
        random_state=0,
        noise_seed=0,
        prior_share=0.0,
        split_points="uniform",
    ).fit_encoded(encode(frame.iloc[:-1], schema), schema)
    table = model.leaf_table()
    leaves = walk.steps[2].table
    nonempty = leaves[leaves["count[no]"] + leaves["count[yes]"] > 0]
    assert sorted(map(tuple, nonempty[["count[no]", "count[yes]"]].to_numpy())) == sorted(
        map(tuple, table[["count[no]", "count[yes]"]].to_numpy())
    )
    assert sorted(nonempty["released_label"]) == sorted(table["released_label"])
    assert walk.nodes["n_records"].sum() == len(frame) - 1


def test_vote_is_the_released_label_of_the_test_leaf(walk):
    leaf = walk.nodes.loc[walk.test_leaf]
    assert leaf["is_leaf"] and leaf["released_label"] == walk.prediction
    assert walk.vote_fractions[walk.prediction] == 1.0
    assert set(walk.nodes.loc[walk.nodes["on_test_path"], "node"]) == set(walk.steps[3].highlight)


def test_walkthrough_refuses_large_trees_and_bad_input():
    frame, schema = tiny_demo()
    with pytest.raises(ValueError, match="lower the depth"):
        tree_walkthrough(frame, schema, depth=8)
    with pytest.raises(ValueError, match="depth"):
        tree_walkthrough(frame, schema, depth=0)
    with pytest.raises(ValueError, match="outside"):
        tree_walkthrough(frame, schema, test_row=100)
    with pytest.raises(ValueError, match="n_records"):
        tiny_demo(n_records=2)
