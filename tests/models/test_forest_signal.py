"""The small-ε evidence scale: a test of the released leaf counts against leaves that
follow the prior (:mod:`dpviz.models.forest.signal`), post-processing only."""

import math

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier, load_model, release
from dpviz.models.forest import signal
from dpviz.models.forest.voting import release_evidence_scale
from dpviz.privacy.schema import Feature, Schema


def _noisy(true: np.ndarray, epsilon: float, seed: int) -> np.ndarray:
    """``true`` counts plus discrete Laplace noise at ``epsilon`` (a fixed seed)."""
    rng = np.random.default_rng(seed)
    q = math.exp(-epsilon)
    return true + rng.geometric(1 - q, true.shape) - rng.geometric(1 - q, true.shape)


def test_leaves_that_follow_the_prior_score_near_zero_and_signal_far_above():
    # 200 leaves of 20 records each at ε = 0.07 (noise sd ≈ 20 counts a class).
    rng = np.random.default_rng(7)
    prior = np.array([0.65, 0.35])
    null = [
        signal.signal_z(_noisy(rng.multinomial(20, prior, 200), 0.07, seed), prior, 0.07)
        for seed in range(20)
    ]
    # Under the null z is a standardised statistic: 20 fixed-seed draws, each |z| < 4
    # (the threshold) and their mean within 4/√20 ≈ 0.9 of 0 (sd ≈ 1 a draw).
    assert max(abs(z) for z in null) < signal.SIGNAL_Z
    assert abs(np.mean(null)) < 0.9
    # Pure leaves of 60 records, each of one class as the prior's shares say: five
    # fixed-seed draws all far above the threshold (measured 23-26; 20 records a leaf,
    # at the noise's sd, gave -0.2 to 4: too little to tell from noise).
    pure = np.zeros((200, 2), dtype=np.int64)
    pure[:130, 0] = pure[130:, 1] = 60
    for seed in range(5):
        assert signal.signal_z(_noisy(pure, 0.07, seed), prior, 0.07) > 3 * signal.SIGNAL_Z


def test_the_score_does_not_depend_on_the_leaves_order():
    prior = np.array([0.5, 0.3, 0.2])
    counts = _noisy(np.random.default_rng(3).multinomial(30, prior, 50), 0.1, 2)
    shuffled = counts[np.random.default_rng(4).permutation(len(counts))]
    assert signal.signal_z(counts, prior, 0.1) == signal.signal_z(shuffled, prior, 0.1)


def test_the_scale_acts_only_below_its_leaf_epsilon_and_when_the_test_passes():
    prior = np.array([0.5, 0.5])
    pure = np.zeros((100, 2), dtype=np.int64)
    pure[:50, 0] = pure[50:, 1] = 40
    for trees in (1, 3, 5):  # up to SIGNAL_TREES trees: SIGNAL_SCALE
        assert signal.evidence_scale(_noisy(pure, 0.07, 0), prior, 0.07, trees) == 1.5
    # More trees: the scale follows the count (each leaf holds 1/τ of the records).
    assert signal.evidence_scale(_noisy(pure, 0.07, 0), prior, 0.07, 10) == 3.0
    assert signal.evidence_scale(_noisy(pure, 0.3, 0), prior, 0.3, 10) == 1.0
    follow = np.random.default_rng(5).multinomial(40, prior, 100)
    assert signal.evidence_scale(_noisy(follow, 0.07, 0), prior, 0.07, 10) == 1.0
    assert signal.evidence_scale(np.zeros((0, 2)), prior, 0.07, 10) == 1.0


SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("c", "discrete", values=("u", "v", "w")),
    ),
)


def _data(n: int, informative: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.uniform(0, 100, n), "c": rng.choice(["u", "v", "w"], n)})
    if informative:  # class "yes" above 40: a split on a separates the classes
        y = np.where(X["a"] > 40, "yes", "no")
    else:  # 70% "no" whatever the features say
        y = np.where(rng.random(n) < 0.3, "yes", "no")
    return X, y


@pytest.mark.parametrize(
    ("informative", "n", "trees", "scale"),
    [(True, 20_000, 10, 3.0), (True, 4_000, 5, 1.5), (False, 20_000, 10, 1.0)],
)
def test_a_release_scales_its_evidence_only_where_its_leaves_carry_signal(
    tmp_path, informative, n, trees, scale
):
    X, y = _data(n, informative)
    model = DPRandomForestClassifier(
        epsilon=0.1, schema=SCHEMA, random_state=0, noise_seed=1, declared_n=len(X)
    ).fit(X, y)
    assert model.tree_epsilon_ < signal.SIGNAL_EPSILON
    assert model.n_estimators_ == trees
    assert release_evidence_scale(model) == scale
    # The file scores as the estimator: it computes the same scale from its leaves and
    # its list of trees (no new field).
    path = tmp_path / "model.json"
    release(model).save(path)
    loaded = load_model(path)
    np.testing.assert_allclose(loaded.predict_proba(X[:500]), model.predict_proba(X[:500]))
    np.testing.assert_array_equal(loaded.predict(X[:500]), model.predict(X[:500]))


def test_the_scale_moves_predictions_off_the_majority_where_the_trees_see_it():
    # Post-processing: the same release (a noise seed) with and without the scale. A weak
    # signal (55% "yes" above a = 40, 30% below), where the prior's pull decides some
    # records: with a clean one every decision is already the trees'.
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 100, 20_000), "c": rng.choice(["u", "v", "w"], 20_000)})
    y = np.where(rng.random(20_000) < np.where(X["a"] > 40, 0.55, 0.3), "yes", "no")
    # Five trees (SIGNAL_TREES): with the 10 the size rule gives, each leaf holds half as
    # many records and this weak signal does not pass the test at this seed.
    kwargs = dict(
        epsilon=0.1, schema=SCHEMA, random_state=0, noise_seed=1, declared_n=len(X), n_estimators=5
    )
    scaled = DPRandomForestClassifier(**kwargs).fit(X, y)
    plain = DPRandomForestClassifier(**kwargs).fit(X, y)
    plain._scale_cache = ((plain.leaf_noisy_counts_, plain.prior_counts_), 1.0)
    np.testing.assert_array_equal(scaled.leaf_noisy_counts_, plain.leaf_noisy_counts_)
    assert release_evidence_scale(scaled) == signal.SIGNAL_SCALE
    moved = scaled.predict(X) != plain.predict(X)
    assert moved.any()  # the scale changes decisions (5% of them here), not the release
    gained = (scaled.predict(X) == y).mean() - (plain.predict(X) == y).mean()
    assert gained >= 0.0
    # From ε = 1 up the scale is 1: the law there is the one before it.
    large = DPRandomForestClassifier(**{**kwargs, "epsilon": 1.0}).fit(X, y)
    assert release_evidence_scale(large) == 1.0
