"""The default forest below ε = 1: trees, depth and the prior's ε follow the signal a leaf
can carry (n·s records, s = ε rounded down to a power of ten), read only from ε and a
declared or booked record count."""

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.evaluation.synthetic import make_synth
from dpviz.models.forest.scoring import (
    FEW_TREES_GAIN_CUT,
    count_votes,
    evidence_gain,
    few_trees_cut,
    noise_margin,
)
from dpviz.models.trees.depth import records_depth, theorem2_depth


@pytest.fixture(scope="module")
def synth():
    frame, schema = make_synth("SynthA", 1_000, seed=0)
    return frame.drop(columns="label"), frame["label"], schema


def _branching(schema):
    return [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]


@pytest.mark.parametrize(
    ("epsilon", "declared", "trees", "signal"),
    [
        (0.1, 348, 3, 34),  # votes-sized: the least, 3 trees, for 34 signal records
        (0.1, 8_800, 5, 880),  # pendigits-sized: at most 5 trees, of 176
        (0.5, 8_800, 5, 880),  # the same decade of ε, the same structure
        (0.1, 36_000, 5, 3_600),  # adult-sized: 5 trees of 720, not 50 of 72
        (1.0, 348, 10, 348),  # from ε = 1 up: the sizes measured at ε = 1
        (10.0, 8_800, 50, 8_800),
    ],
)
def test_declared_size_and_epsilon_set_trees_and_depth(synth, epsilon, declared, trees, signal):
    X, y, schema = synth
    model = DPRandomForestClassifier(
        epsilon=epsilon, declared_n=declared, schema=schema, random_state=0
    ).fit(X, y)
    assert model.n_estimators_ == trees
    cap = theorem2_depth(len(schema.continuous), len(schema.discrete))
    assert model.depth_ == records_depth(max(1, signal // trees), _branching(schema), cap)
    # Nothing but ε and the declared count: another data set of another size, same shape.
    other = DPRandomForestClassifier(
        epsilon=epsilon, declared_n=declared, schema=schema, random_state=0
    ).fit(X.iloc[:300], y.iloc[:300])
    assert (other.n_estimators_, other.depth_) == (model.n_estimators_, model.depth_)


def test_below_epsilon_one_the_prior_takes_at_most_a_quarter(synth):
    X, y, schema = synth
    small = DPRandomForestClassifier(
        epsilon=0.1, declared_n=348, schema=schema, random_state=0
    ).fit(X, y)
    # The floor alone would give 0.08 of 0.1 here (150/348 is above it).
    assert small.prior_epsilon_ == pytest.approx(0.025)
    assert small.ledger_.epsilon_total == pytest.approx(0.1)
    assert small.tree_epsilon_ == pytest.approx(0.1 - small.split_epsilon_ - 0.025)
    # A fixed size reads no record count: its prior keeps the floor.
    fixed = DPRandomForestClassifier(
        epsilon=0.1, n_estimators=10, depth=5, schema=schema, random_state=0
    ).fit(X, y)
    assert fixed.prior_epsilon_ == pytest.approx(0.08)
    # From ε = 1 up nothing changes: the share, 10% of ε.
    large = DPRandomForestClassifier(
        epsilon=1.0, declared_n=348, schema=schema, random_state=0
    ).fit(X, y)
    assert large.prior_epsilon_ == pytest.approx(0.1)


def test_a_noisy_count_sizes_the_small_forest_and_is_booked(synth):
    X, y, schema = synth
    model = DPRandomForestClassifier(epsilon=0.1, schema=schema, random_state=0).fit(X, y)
    entries = [e.query for e in model.ledger_.entries if "record count" in e.query]
    assert len(entries) == 1 and model.depth_count_epsilon_ == pytest.approx(0.005)
    # ~1,000 records ± the count's noise (scale 200): 3 trees (5 from n̂ = 2,500).
    assert model.n_estimators_ in (3, 5)
    assert np.isfinite(model.predict_proba(X)).all()


def test_records_under_few_trees_get_a_cut_gain_at_a_tiny_leaf_epsilon():
    """Below a leaf ε of 1/4 a record whose score averages fewer than FEW_TREES leaves
    has its gain γ cut (its mean evidence is noisier); with FEW_TREES or more, or from a
    leaf ε of 1/4 up, the votes are the uncut formula value for value."""
    prior = np.array([0.65, 0.35])
    # Per record: the summed evidence of each class, then the trees it reached.
    sums = np.array([[-0.6, 0.9, 3.0], [-1.0, 1.5, 5.0], [-0.6, 0.9, 3.0]])

    def uncut(eps, row):
        gamma = evidence_gain(eps)
        reached = sums[row, 2]
        score = np.log(prior) + gamma * sums[row, :2] / reached
        lead = np.log(prior).max() - np.log(prior)
        score -= np.maximum(gamma * noise_margin(prior, eps) / np.sqrt(reached) - lead, 0.0)
        return np.exp(score - score.max())

    eps = 0.07
    cut = few_trees_cut(eps)
    assert cut == pytest.approx(FEW_TREES_GAIN_CUT * (1 - 4 * eps))
    votes = count_votes(sums, prior, eps)
    # 5 trees: uncut.
    np.testing.assert_allclose(votes[1], uncut(eps, 1), rtol=1e-9)
    # 3 trees: the same formula with γ·(1 − cut), margin included.
    gamma = evidence_gain(eps) * (1 - cut)
    score = np.log(prior) + gamma * sums[0, :2] / 3.0
    lead = np.log(prior).max() - np.log(prior)
    score -= np.maximum(gamma * noise_margin(prior, eps) / np.sqrt(3.0) - lead, 0.0)
    np.testing.assert_allclose(votes[0], np.exp(score - score.max()), rtol=1e-9)
    # The cut keeps this record on the prior's class, which the uncut gain would leave.
    assert np.argmax(votes[0]) == 0 and np.argmax(uncut(eps, 0)) == 1
    # From a leaf ε of 1/4 up (every forest at ε ≥ 1): no cut, the same votes exactly.
    for eps in (0.25, 0.85, 5.0):
        assert few_trees_cut(eps) == 0.0
        for row in range(3):
            votes = count_votes(sums, prior, eps)[row]
            np.testing.assert_allclose(votes, uncut(eps, row), rtol=1e-9)
    # Trees that share the records (no noise margins) have no cut either.
    shared = count_votes(sums, prior, 0.07, noise_margins=False)
    gamma = evidence_gain(0.07)
    plain = np.log(prior) + gamma * sums[0, :2] / 3.0
    np.testing.assert_allclose(shared[0], np.exp(plain - plain.max()), rtol=1e-9)
