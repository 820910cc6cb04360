"""The default forest below ε = 1: trees, depth and the prior's ε follow the signal a leaf
can carry (n·s records, s = ε rounded down to a power of ten), read only from ε and a
declared or booked record count."""

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.app.preview import depth_preview
from dpviz.evaluation.synthetic import make_synth
from dpviz.models.trees.depth import records_depth, theorem2_depth
from dpviz.privacy.schema import Schema


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
        (0.1, 4_000, 5, 400),  # 5 trees of 80 (depth 6 > Theorem 2's cap 5)
        (0.1, 8_800, 10, 880),  # pendigits-sized: at most 10 trees, of 88
        (0.5, 8_800, 10, 880),  # the same decade of ε, the same structure
        (0.1, 36_000, 10, 3_600),  # adult-sized: 10 trees of 360, not 50 of 72
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
    # Theorem 2's cap (5 for SynthA's 5 continuous features) applies from ε = 1 up only.
    cap = theorem2_depth(len(schema.continuous), len(schema.discrete)) if epsilon >= 1 else 40
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


@pytest.mark.parametrize(("epsilon", "depth"), [(0.1, 6), (0.5, 6), (1.0, 4), (10.0, 4)])
def test_theorem_two_caps_the_records_depth_from_epsilon_one_up_only(epsilon, depth):
    """wall_robot's shape (4 continuous features, 4,364 records): Theorem 2 caps the
    records rule at depth 4; below ε = 1 the 5 trees of 87 signal records each grow to
    ⌊log2 87⌋ = 6, from ε = 1 up the cap holds. The Train preview says the same depth."""
    frame, schema = make_synth("SynthA", 400, seed=1)
    frame = frame.drop(columns=["x4"])
    schema = Schema(schema.label, schema.classes, schema.features[:4])
    X, y = frame.drop(columns="label"), frame["label"]
    assert theorem2_depth(4, 0) == 4
    model = DPRandomForestClassifier(
        epsilon=epsilon, declared_n=4_364, schema=schema, random_state=0
    ).fit(X, y)
    assert model.depth_ == depth
    preview = depth_preview(schema, "records", 4_364, model.n_estimators_, "disjoint", epsilon)
    assert preview.depth == depth
