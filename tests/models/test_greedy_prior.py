"""A greedy tree without splits (issue 28's floor at small ε): the root histogram at
0.1·ε, the prior's reserve kept off the depth rule when n̂ is small, and the class picked
by report-noisy-max with exponential noise."""

import math

import numpy as np
import pytest

from dpviz.models.greedy.budget import (
    class_epsilon,
    make_budget,
    reserved_epsilon,
    root_count_epsilon,
)
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import smooth_shares
from dpviz.models.greedy.prior import constant_leaf, noisy_max_class
from dpviz.privacy.schema import Feature, Schema


@pytest.mark.parametrize("epsilon", [0.8, 1.0, 2.5, 10.0])
@pytest.mark.parametrize("n_records", [-40.0, 50.0, 1_000.0, 10.0**6])
def test_from_epsilon_0_8_the_reserve_is_the_root_histogram(epsilon, n_records):
    """From ε = 0.8 up the depth rule sees what it saw before (ε − 0.1·ε): the same
    trees, bit for bit, as before the reserve."""
    assert reserved_epsilon(epsilon, n_records) == root_count_epsilon(epsilon)


def test_below_0_8_the_reserve_follows_the_record_count():
    """At ε = 0.1 the forest's prior rule: 0.08 for small n̂ (and a non-positive noisy n̂),
    down to 0.1·ε = 0.01 from about 12,000 records."""
    assert root_count_epsilon(0.1) == 0.01
    assert reserved_epsilon(0.1, 300.0) == reserved_epsilon(0.1, -5.0) == 0.08
    assert reserved_epsilon(0.1, 2_000.0) == 2.0**-4
    assert reserved_epsilon(0.1, 50_000.0) == 0.01


def test_a_tree_of_depth_0_books_the_pick_instead_of_leaf_counts():
    budget = make_budget(0.1, 0, 1, root_count=True, node_counts=True)
    assert (budget.root, budget.level, budget.count) == (0.01, 0.0, 0.0)
    assert budget.pick == pytest.approx(0.09)
    # Without the root histogram (declared n, explicit depth) nothing changes.
    assert make_budget(0.1, 0, 1, root_count=False, node_counts=True).pick == 0.0
    assert make_budget(0.1, 2, 1, root_count=True, node_counts=True).pick == 0.0


@pytest.mark.parametrize(("epsilon", "gap"), [(0.1, 10), (0.5, 3), (0.05, 40)])
def test_noisy_max_class_has_the_exact_two_class_law(epsilon, gap):
    """Two classes ``gap`` records apart: the smaller wins with probability ½e^(−ε·gap)
    exactly (the difference of two Exponential(ε) is Laplace(1/ε)). 4,000 replayable
    draws (seeded numpy generator): the tolerance is 4 standard deviations of that
    binomial share."""
    rng = np.random.default_rng(11)
    n = 4_000
    wins = sum(noisy_max_class(np.array([gap, 0]), epsilon, rng) == 1 for _ in range(n))
    p = 0.5 * math.exp(-epsilon * gap)
    assert wins / n == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / n))


def test_constant_leaf_puts_the_chosen_class_strictly_on_top():
    counts, shares, labels = constant_leaf(np.array([30, 50, -4]), chosen=0)
    np.testing.assert_array_equal(counts, [[30, 50, -4]])
    np.testing.assert_allclose(shares, [[50 / 80, 30 / 80, 0.0]])
    assert labels.tolist() == [0]
    # A tie (here: nothing positive, uniform shares) goes to the chosen class.
    _, shares, _ = constant_leaf(np.array([-3, -1]), chosen=1)
    assert np.argmax(shares[0]) == 1 and shares.sum() == pytest.approx(1.0)


def test_a_small_fit_at_small_epsilon_has_no_split_and_answers_its_class():
    """120 records at ε = 0.1: depth 0; the ledger books the root histogram (0.01) and
    the class (0.09), ε in all; every record gets the leaf's class."""
    schema = Schema("label", ("a", "b"), (Feature("x", "continuous", low=0.0, high=1.0),))
    rng = np.random.default_rng(0)
    X = rng.random((120, 1))
    y = np.where(rng.random(120) < 0.75, "a", "b")
    model = DPDecisionTreeClassifier(epsilon=0.1, schema=schema, noise_seed=3).fit(X, y)
    assert model.depth_ == 0 and model.budget_.pick == pytest.approx(0.09)
    assert [e.epsilon for e in model.ledger_.entries if e.private] == pytest.approx([0.01, 0.09])
    assert model.ledger_.entries[-1].query.startswith("report-noisy-max class")
    label = model.classes_[model.leaf_labels_[0]]
    assert (model.predict(X) == label).all()
    np.testing.assert_array_equal(model.leaf_noisy_counts_[0], model.counted_noisy_counts_[0])


def test_below_0_8_a_tree_with_splits_books_the_root_class():
    """min(0.2·ε, 0.08 − 0.1·ε): 0.02 at ε = 0.1, 0.03 at 0.5, nothing from 0.8 up; the
    levels share what is left, and every record spends ε."""
    assert class_epsilon(0.1) == pytest.approx(0.02)
    assert class_epsilon(0.5) == pytest.approx(0.03)
    assert class_epsilon(0.8) == class_epsilon(1.0) == class_epsilon(10.0) == 0.0
    budget = make_budget(0.1, 2, 1, root_count=True, node_counts=True, root_class=True)
    assert budget.pick == pytest.approx(0.02)
    assert budget.root + budget.pick + 3 * budget.level == pytest.approx(0.1)
    same = make_budget(1.0, 2, 1, root_count=True, node_counts=True, root_class=True)
    assert same == make_budget(1.0, 2, 1, root_count=True, node_counts=True)


def test_the_root_class_leads_the_shares_of_leaves_without_signal():
    """Leaves drowned in noise fall back on the root's shares; with a released root
    class those shares put it first (its share swapped with the largest)."""
    counts = np.array([[448, 52], [127, 14], [910, 140]])
    tree = GrownTree(
        feature=np.array([0, -1, -1, -1]),
        first_child=np.array([1, -1, -1, -1]),
        node_depth=np.array([0, 1, 1, 1]),
        parent=np.array([-1, 0, 0, 0]),
        leaf_nodes=np.arange(1, 4),
        leaf_counts=counts,
        leaf_epsilon=np.full(3, 1e-3),
        counted_nodes=np.zeros(0, dtype=np.int64),
        counted_noisy_counts=np.zeros((0, 2), dtype=np.int64),
        counted_epsilon=np.zeros(0),
        candidates=1,
        mcmc_acceptance=float("nan"),
    )
    plain = smooth_shares(tree, counts, 2)
    chosen = smooth_shares(tree, counts, 2, root_class=1)
    assert (np.argmax(plain, axis=1) == 0).all() and (np.argmax(chosen, axis=1) == 1).all()
    np.testing.assert_array_equal(chosen, plain[:, ::-1])
