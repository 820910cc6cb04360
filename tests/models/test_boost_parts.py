"""DPBoost's separated parts, one job each: presets, the check's weights and its noisy
count, the class prior, one DP regression tree, and the scores of released trees."""

import math

import numpy as np
import pytest

from dpviz.models.boosting import check as check
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.boosting.predict import scores_to_proba
from dpviz.models.boosting.presets import PRESETS, apply_preset
from dpviz.models.boosting.tree import grow_tree, route, split_utility, tree_scores
from dpviz.privacy.noise import NoiseSource


def replayable(seed: int):
    return NoiseSource.replayable(seed).generator()


def test_check_weights_for_two_classes():
    """τ = κ/2: w_trust = τ²/(τ² + σ²); w_floor = |κ·p̂|/(10·√(2σ²)) below it (the
    prior is passed on the trees' scale, κ·p̂)."""
    c, noise = 0.5, 0.01
    trust, floor = check.check_weights(c, noise, np.array([0.2]))
    assert trust == pytest.approx(0.0625 / 0.0725)
    assert floor == pytest.approx(0.2 / (10 * math.sqrt(0.02)))
    assert floor < trust


def test_check_weights_for_more_classes_use_the_lead_of_the_top_two():
    c, noise = 0.8, 0.05
    trust, floor = check.check_weights(c, noise, 0.8 * np.array([-0.8, 0.2, -0.4]))
    assert floor == pytest.approx(0.8 * 0.6 / (10 * math.sqrt(0.1)))
    # a prior whose lead is large caps the floor at w_trust
    assert check.check_weights(c, 1e-6, np.array([-0.9, 0.9]))[1] == trust_of(c, 1e-6)


def trust_of(c, noise):
    return (c / 2) ** 2 / ((c / 2) ** 2 + noise)


def test_check_weights_without_noise_trust_the_trees_fully():
    assert check.check_weights(0.65, 0.0, np.array([0.2])) == (1.0, 1.0)


def test_held_out_check_releases_the_gain_of_trusting_the_trees():
    """The prior says class 1 for all; trusting the trees gets 30 more of 40 right. At
    ε = 60 the count's noise is 0 but with probability ~2e-26."""
    y = np.repeat([0, 1], [30, 10])
    raw = np.where(y == 1, 1.0, -1.0)[:, None]
    prior = np.array([0.2])
    gain, passed = check.held_out_check(raw, prior, y, (0.9, 0.0), 60.0, replayable(0))
    assert gain == 30 and passed
    # no gain: fails whatever the (small) noise at ε = 1
    gain, passed = check.held_out_check(raw, prior, y, (0.0, 0.0), 1.0, replayable(0))
    assert gain < check.CHECK_THRESHOLD and not passed


def test_classify_reads_one_score_column_as_the_positive_class():
    np.testing.assert_array_equal(check.classify(np.array([[0.3], [-0.1], [0.0]])), [1, 0, 0])
    np.testing.assert_array_equal(check.classify(np.array([[0.1, 0.5, -1.0]])), [1])


def test_noisy_prior_is_none_without_budget_and_the_shares_score_otherwise():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    counts, score = check.noisy_prior(y, 3, [0, 1, 2], 0.0, rng=None)
    assert counts is None and (score == 0).all()
    counts, score = check.noisy_prior(y, 3, [0, 1, 2], 60.0, replayable(1))
    np.testing.assert_array_equal(counts, [50, 30, 20])
    np.testing.assert_allclose(score, [0.0, -0.4, -0.6])
    counts, _ = check.noisy_prior(y, 3, [0, 1, 2], 0.1, replayable(1))
    assert counts.dtype.kind == "i" and not np.array_equal(counts, [50, 30, 20])


def test_apply_preset_fills_only_what_was_left_at_the_default():
    model = DPBoostClassifier()
    model.preset = "paper"
    apply_preset(model, given={"max_depth"})
    paper = PRESETS["paper"]
    assert model.n_estimators == paper.n_estimators and model.reg_lambda == paper.reg_lambda
    assert model.max_depth == PRESETS["default"].max_depth  # named: kept


def test_grow_tree_splits_on_the_signal_and_clips_its_leaves():
    """At a huge split ε the mechanism takes the best candidate (feature 0 at 0); at a
    huge leaf ε the released values are the clipped ones; the leaf record is true."""
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 2, 400), rng.integers(0, 4, 400)], axis=1)
    gradient = np.where(codes[:, 0] == 1, -1.0, 1.0)
    candidates = (np.array([0, 1, 1, 1]), np.array([0, 0, 1, 2]), np.zeros(4, dtype=bool))
    tree, (counts, clipped, released) = grow_tree(
        codes, gradient, candidates, 4, 1, 1.0, 1e6, 1e9, 0.5, 0.1, replayable(2)
    )
    assert tree["feature"][0].tolist() == [0] and tree["threshold"][0].tolist() == [0]
    assert counts.sum() == 400 and (np.abs(clipped) <= 0.5).all()
    np.testing.assert_allclose(clipped, [-0.5, 0.5])  # −Σg/(n + λ) ≈ ∓1, clipped
    np.testing.assert_allclose(released, clipped, atol=1e-6)
    np.testing.assert_array_equal(route(tree, codes), codes[:, 0])


def side_sums(codes, gradient, threshold):
    """(g_left, n_left, g_right, n_right) of every threshold candidate of one feature,
    with a last axis of parts (what grow_tree hands to split_utility)."""
    right = codes[:, None] > threshold[None, :]  # (records, candidates)
    g = gradient.reshape(len(codes), gradient.shape[-1])
    g_right = np.einsum("rc,rk->ck", right.astype(float), g)
    n_right = right.sum(0).astype(float)
    return g.sum(0) - g_right, len(codes) - n_right, g_right, n_right


@pytest.mark.parametrize(("score", "parts"), [("abs", 1), ("abs", 3), ("gain", 1), ("gain", 2)])
def test_split_utility_moves_by_at_most_its_sensitivity(score, parts):
    """Removing any one record (|g| ≤ g* in every part) moves every candidate's utility
    by at most the returned sensitivity: g* per part for the absolute sums, 3g*² per
    part for the gain; the bound is nearly reached (it is not loose)."""
    rng = np.random.default_rng(parts)
    worst, bound = 0.0, None
    for _ in range(40):
        n = int(rng.integers(1, 60))
        codes = rng.integers(0, 6, n)
        # mostly one-signed gradients at ±g*: where the sensitivity is reached
        gradient = np.clip(rng.normal(0.8 * rng.choice([-1, 1]), 0.5, (n, parts)), -1, 1)
        threshold = np.arange(5)
        full, bound = split_utility(score, *side_sums(codes, gradient, threshold), 50.0)
        for i in range(n):
            keep = np.arange(n) != i
            less, _ = split_utility(
                score, *side_sums(codes[keep], gradient[keep], threshold), 50.0
            )
            worst = max(worst, float(np.abs(full - less).max()))
    assert bound == (parts * 1.0 if score == "abs" else parts * 3.0)
    assert worst <= bound + 1e-12
    if score == "abs":
        assert worst > 0.9 * bound


def test_grow_tree_for_k_parts_shares_the_splits_and_releases_k_values_per_leaf():
    """One column behaves exactly as the one-dimensional tree (same draws); k columns
    score the splits by the parts' summed evidence and release a (leaves, k) array."""
    rng = np.random.default_rng(1)
    codes = np.stack([rng.integers(0, 2, 300), rng.integers(0, 4, 300)], axis=1)
    gradient = np.where(codes[:, 1] >= 2, -0.6, 0.6)
    candidates = (np.array([0, 1, 1, 1]), np.array([0, 0, 1, 2]), np.zeros(4, dtype=bool))
    args = (candidates, 4, 2, 50.0, 0.5, 0.5, 1.0, 0.02)
    one, record_one = grow_tree(codes, gradient, *args, replayable(3), "abs")
    column, record_column = grow_tree(codes, gradient[:, None], *args, replayable(3), "abs")
    np.testing.assert_array_equal(one["value"], column["value"][:, 0])
    np.testing.assert_array_equal(record_one[1], record_column[1][:, 0])
    # Three parts, the second the negative of the first, the third empty of signal:
    # at a huge split ε the shared tree splits where the first two parts agree it pays.
    three = np.stack([gradient, -gradient, np.zeros_like(gradient)], axis=1)
    tree, (counts, clipped, released) = grow_tree(
        codes, three, candidates, 4, 1, 1.0, 1e6, 1e9, 1.0, 0.1, replayable(4), "abs"
    )
    assert tree["feature"][0].tolist() == [1] and tree["threshold"][0].tolist() == [1]
    assert released.shape == clipped.shape == (2, 3)
    np.testing.assert_allclose(clipped[:, 0], -clipped[:, 1])
    np.testing.assert_allclose(clipped[:, 2], 0.0)


def test_reach_comes_from_public_parameters_and_the_released_prior():
    """κ = c·s: c = 1 − (1−η)^T, s = n̂_leaf/(n̂_leaf + λ) for the expected leaf of
    n̂·(a tree's share)/2^depth records, n̂ the released counts' total (clipped at 0)."""
    model = DPBoostClassifier(epsilon=1.0)
    model.prior_counts_ = np.array([700, 400, -3])
    c = 1 - 0.9**10
    leaf = 1100 / 11 / 8  # ten trees and the held-out cell, depth 3
    assert model.reach_ == pytest.approx(c * leaf / (leaf + 50))
    assert model._reach(0) == 0.0
    model.prior_counts_ = None  # no prior (the paper preset): c alone
    assert model.reach_ == pytest.approx(c)


def test_tree_scores_and_probabilities_of_released_trees():
    tree = {
        "feature": [np.array([0])],
        "threshold": [np.array([0])],
        "value": np.array([-1.0, 2.0]),
    }
    codes = np.array([[0], [1]])
    scores = tree_scores([[tree, tree]], codes, 0.5)
    np.testing.assert_allclose(scores, [[-1.0], [2.0]])
    np.testing.assert_allclose(scores_to_proba(scores), [[1.0, 0.0], [0.0, 1.0]])
    many = scores_to_proba(np.array([[0.0, math.log(3.0)]]))
    np.testing.assert_allclose(many, [[0.25, 0.75]])
