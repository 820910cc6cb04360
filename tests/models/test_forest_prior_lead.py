"""The small-ε noise margin weighed by the released prior's lead over each class
(:func:`dpviz.models.forest.scoring.prior_lead_weights`): post-processing only."""

import math

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier, load_model, release
from dpviz.models.forest import scoring
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema("label", ("p", "q", "r"), (Feature("a", "continuous", low=0.0, high=100.0),))


def _spread(eps: float) -> float:
    """√2 × the sd of one discrete Laplace count at ``eps``."""
    q = math.exp(-eps)
    return math.sqrt(2 * 2 * q / (1 - q) ** 2)


def test_the_weight_is_the_lead_in_noise_spreads_up_to_one():
    eps = 0.025
    s = scoring.PRIOR_LEAD_Z * _spread(eps)  # ≈ 160 counts at ε = 0.025
    counts = np.array([1000, 1000 - 0.25 * s, 1000 - s, 1000 - 3 * s])
    weights = scoring.prior_lead_weights(counts, eps, 4)
    np.testing.assert_allclose(weights, [0.0, 0.25, 1.0, 1.0])
    # A tie with the first class: no lead, no margin; negative counts read as 0.
    np.testing.assert_allclose(scoring.prior_lead_weights([50, 50, -9], eps, 3)[:2], [0, 0])
    assert scoring.prior_lead_weights([50, 50, -9], eps, 3)[2] == pytest.approx(50 / s)
    # No released prior (or no ε for it): the full margin, as before.
    np.testing.assert_array_equal(scoring.prior_lead_weights(None, eps, 3), np.ones(3))
    np.testing.assert_array_equal(scoring.prior_lead_weights([5, 1, 1], 0.0, 3), np.ones(3))


def test_the_weights_scale_the_margin_and_nothing_else():
    prior = np.array([0.36, 0.34, 0.30])
    sums = np.array([[0.0, 0.05, -0.05, 3.0], [0.1, 0.0, 0.0, 3.0]])
    eps = 0.06  # below a leaf ε of 1/4: the small-ε margin acts
    plain = scoring.count_votes(sums, prior, eps)
    full = scoring.count_votes(sums, prior, eps, margin_weights=np.ones(3))
    np.testing.assert_array_equal(plain, full)
    none = scoring.count_votes(sums, prior, eps, margin_weights=np.zeros(3))
    without = scoring.count_votes(sums, prior, eps, noise_margins=False)
    np.testing.assert_array_equal(none, without)
    assert not np.allclose(plain, none)  # the margin does act on these sums
    # From a leaf ε of 1/4 there is no margin: the weights change nothing.
    np.testing.assert_array_equal(
        scoring.count_votes(sums, prior, 0.5),
        scoring.count_votes(sums, prior, 0.5, margin_weights=np.zeros(3)),
    )


def _data(n: int, seed: int):
    # Three near-tied classes (36 / 33 / 31%) that cuts on a separate in part (60% of the
    # labels redrawn at random: a weak signal, where the margin decides many records).
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 100, n)
    y = np.where(a < 36, "p", np.where(a < 69, "q", "r"))
    flip = rng.random(n) < 0.6
    y[flip] = rng.choice(["p", "q", "r"], flip.sum())
    return pd.DataFrame({"a": a}), y


def test_a_near_tied_prior_lets_the_trees_decide_and_a_file_scores_alike(tmp_path, monkeypatch):
    X, y = _data(6_000, 0)
    test_X, test_y = _data(20_000, 1)
    kwargs = dict(epsilon=0.1, schema=SCHEMA, random_state=0, noise_seed=3, declared_n=len(X))
    model = DPRandomForestClassifier(**kwargs).fit(X, y)
    assert model.tree_epsilon_ < scoring.SMALL_MARGIN_EPSILON  # the margin acts here
    weights = scoring.prior_lead_weights(
        model.prior_counts_, model.prior_epsilon_, len(model.classes_)
    )
    assert 0 < np.sort(weights)[1] < 1  # one class's lead is within the prior's noise
    ours = model.predict(test_X)
    # The same release under the full margin (the law before): a tiny z makes every
    # weight 1. Post-processing: the released counts are the same.
    monkeypatch.setattr(scoring, "PRIOR_LEAD_Z", 1e-9)
    before = model.predict(test_X)
    monkeypatch.undo()
    assert (ours != before).any()
    # Fixed seeds (data, structure, noise): measured 56.9% against 52.9% on 20,000 new
    # records. Other noise seeds of this shape gave +0.8 and −0.0 points, and 2,000 records
    # with 80% of labels redrawn −0.3 to −1.3 (bench/README, h-small2): the rule is a
    # trade, and this seed one where it pays clearly (a failing assert means the law moved).
    assert (ours == test_y).mean() >= (before == test_y).mean() + 0.02
    path = tmp_path / "model.json"
    release(model).save(path)
    loaded = load_model(path)
    np.testing.assert_allclose(
        loaded.predict_proba(test_X[:500]), model.predict_proba(test_X[:500])
    )
    np.testing.assert_array_equal(loaded.predict(test_X), ours)


def test_exact_prior_counts_keep_the_full_margin_and_no_nan():
    """A non-private twin's prior is exact (ε = ∞, no noise spread): its order is certain,
    so every class keeps its full margin (before: 0/0 for the first class, NaN scores)."""
    weights = scoring.prior_lead_weights([500.0, 498.0, 2.0], math.inf, 3)
    assert weights.tolist() == [1.0, 1.0, 1.0]
