"""The default forest below ε = 1: trees, depth and the prior's ε follow the signal a leaf
can carry (n·s records, s = ε rounded down to a power of ten), read only from ε and a
declared or booked record count."""

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.evaluation.synthetic import make_synth
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
