"""How a count forest (``laplace_counts``, the default) turns released noisy counts into
scores: shrunk log shares, evidence over a leaf that follows the prior, and the gain γ.

Exact checks on hand-made counts, then the floor on data without signal (fixed noise
seeds: replayable, NOT private, so the test is deterministic)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.models.forest import scoring as _forest_scoring
from dpviz.models.forest.estimator import (
    clipped_noise_mean,
    count_prior,
    count_values,
    count_votes,
    evidence_gain,
    shrunk_log_shares,
)
from dpviz.models.forest.scoring import (
    NOISE_MARGIN_EPSILON,
    SMALL_MARGIN_EPSILON,
    family_z,
    noise_margin,
)
from tests.rare_data import RARE_SCHEMA, rare_frame


def test_shrunk_shares_follow_the_formula():
    counts = np.array([[10, 0], [-3, 2], [0, 0]])
    prior = np.array([0.75, 0.25])
    eps = 0.5  # α = max(2/ε, 2) = 4
    got = np.exp(shrunk_log_shares(counts, prior, eps))
    expected = np.array([[13 / 14, 1 / 14], [3 / 6, 3 / 6], [0.75, 0.25]])
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    # At large ε the shrinkage keeps two records' worth: a leaf of 3 is not certain.
    assert np.exp(shrunk_log_shares([[3, 0]], [0.5, 0.5], 100.0))[0, 0] == pytest.approx(4 / 5)


def test_clipped_noise_mean_is_the_exact_expectation():
    eps = 0.7
    q = math.exp(-eps)
    z = np.arange(1, 400)
    # P(z) = (1 − q)/(1 + q) · q^|z|, so E[max(Z, 0)] = Σ z·P(z) over z ≥ 1.
    exact = float(((1 - q) / (1 + q) * z * q**z).sum())
    assert clipped_noise_mean(eps) == pytest.approx(exact, rel=1e-12)


def test_a_leaf_that_follows_the_prior_gives_no_evidence():
    prior = np.array([0.8, 0.2])
    eps = 5.0  # the clipped noise mean is tiny: counts in the prior's ratio carry none
    values = count_values(np.array([[80, 20], [20, 80], [0, 0]]), prior, eps)
    assert values.shape == (3, 3) and (values[:, 2] == 1).all()
    follows, against, empty = values[:, :2]
    assert np.abs(follows).max() < 0.01  # a leaf in the prior's ratio
    assert against[1] > 1.0 > 0 > against[0]  # the minority class gains evidence
    assert np.abs(empty).max() < 0.05  # an empty leaf answers the prior


def test_noise_alone_gives_no_evidence_for_a_rare_class_on_average():
    """Clipping noise at 0 puts a positive count in every class; measured against a leaf
    that follows the prior (which carries the same clipped noise) a rare class gains
    nothing. 200,000 draws: the mean's standard error is below 0.005."""
    rng = np.random.default_rng(0)
    eps, prior = 1.0, np.array([0.96, 0.04])
    p = -math.expm1(-eps)
    noise = rng.geometric(p, (200_000, 2)) - rng.geometric(p, (200_000, 2))
    evidence = count_values(noise, prior, eps)[:, :2]
    rare_gain = evidence[:, 1] - evidence[:, 0]
    assert rare_gain.mean() < 0.01


def test_votes_are_the_prior_where_no_tree_reached_and_scale_with_gamma():
    prior = np.array([0.6, 0.4])
    sums = np.array([[0.0, 0.0, 0.0], [0.5, -0.5, 5.0]])  # no tree; 5 trees
    votes = count_votes(sums, prior, 1.0)
    shares = votes / votes.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(shares[0], prior)
    gamma = evidence_gain(1.0)
    log_odds = math.log(0.6 / 0.4) + gamma * (0.1 - -0.1)
    assert math.log(shares[1, 0] / shares[1, 1]) == pytest.approx(log_odds)
    assert evidence_gain(1e-3) == pytest.approx(1.0, abs=0.01)
    assert evidence_gain(10.0) == pytest.approx(5.0, abs=0.01)


def test_count_prior_keeps_every_class_above_zero():
    np.testing.assert_allclose(count_prior([398, -5], 2), [399 / 400, 1 / 400])
    np.testing.assert_allclose(count_prior(None, 4), [0.25] * 4)


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 10.0])
def test_no_signal_and_three_percent_positives_never_go_below_the_majority(epsilon):
    """2,000 records, 3% positives, features without signal, 5 trees: every fixed seed
    0–4 predicts "yes" for at most 0.2% of 2,000 new records (measured: none). A gain of
    1 + 12(1 − e^(−ε)) instead of 1 + 4(1 − e^(−ε)) answers "yes" for up to 10% of them."""
    train, test = rare_frame(2000, seed=1), rare_frame(2000, seed=2)
    X, y = train.drop(columns="label"), train["label"]
    for seed in range(5):
        model = DPRandomForestClassifier(
            epsilon=epsilon, n_estimators=5, schema=RARE_SCHEMA, random_state=seed, noise_seed=seed
        ).fit(X, y)
        assert (model.predict(test.drop(columns="label")) == "yes").mean() <= 0.002, seed


def test_relabel_refuses_an_epsilon_the_count_and_prior_leave_nothing_of():
    frame = rare_frame(400)
    model = DPRandomForestClassifier(epsilon=1.0, schema=RARE_SCHEMA, random_state=0)
    model.fit(frame.drop(columns="label"), frame["label"])
    assert model.depth_count_epsilon_ == pytest.approx(0.05)  # records rule, no declared n
    with pytest.raises(ValueError, match="declare the record count"):
        model.relabel(0.1)  # 0.1 − 0.05 (count) − 0.08 (prior) < 0
    assert "record count that sizes the trees" in model.ledger_.describe()
    # The refused release changed nothing: the model is still the ε = 1 one.
    assert model.epsilon == 1.0 and model.ledger_.epsilon_total == pytest.approx(1.0)


def test_noise_margin_grows_with_the_classes_that_could_take_a_record():
    """Bonferroni over the k − 1 other classes: each clears its margin by noise alone
    with probability Φ(−z)/(k − 1), so the chance that ANY does stays Φ(−z) (at most);
    two classes keep z itself."""
    normal = statistics.NormalDist()
    assert family_z(2, 2.0) == pytest.approx(2.0)
    for k in (3, 5, 10, 28):
        z_k = family_z(k, 2.0)
        assert (k - 1) * normal.cdf(-z_k) == pytest.approx(normal.cdf(-2.0))
        assert z_k > family_z(k - 1, 2.0)
    # the margins scale with it: ten near-equal classes against two of the same lead
    ten = noise_margin(np.full(10, 0.1) + np.eye(10)[0] * 0.01, 0.015)
    two = noise_margin(np.array([0.51, 0.49]), 0.015)
    assert ten[0] == 0 and two[0] == 0
    assert ten[1:].min() > two[1] * 1.3


def test_noise_margin_is_zero_from_a_leaf_epsilon_of_one_quarter():
    """Above the ramps (z = 3 to a leaf ε of 1/16, z = 0.5 to 1/4 for the few trees a
    forest sized for its signal grows below ε = 1) the votes are exactly the margin-free
    formula (no score moves at the ε most users pick); below them only the classes other
    than the prior's first pay, less between 1/16 and 1/4."""
    prior = np.array([0.30, 0.45, 0.25])
    for eps in (SMALL_MARGIN_EPSILON, 0.5, 10.0):
        assert not noise_margin(prior, eps).any()
    between = noise_margin(prior, NOISE_MARGIN_EPSILON)
    assert between[1] == 0 and (between[[0, 2]] > 0).all()
    assert (between < noise_margin(prior, 0.015) + 1e-12).all()
    small = noise_margin(prior, 0.015)
    assert small[1] == 0 and (small[[0, 2]] > 0).all()
    # The same inputs, the same margin (a fixed-seed integration, cached).
    np.testing.assert_array_equal(noise_margin(prior, 0.015), small)
    sums = np.array([[0.2, -0.1, 0.3, 4.0]])
    gamma = evidence_gain(1.0)
    expected = np.exp(np.log(prior) + gamma * sums[0, :3] / 4.0)
    votes = count_votes(sums, prior, 1.0)[0]
    np.testing.assert_allclose(votes / votes.sum(), expected / expected.sum(), rtol=1e-12)


def test_noise_only_leaves_do_not_move_records_off_a_near_tied_prior(monkeypatch):
    """Nursery at ε = 0.1 (leaf ε 0.015, top classes 33.8% / 32.9%): leaves of noise
    alone, 50 trees a record. Without the margin noise moves over a quarter of the records
    to another class; with it, far fewer. 4,000 records, fixed generator seed: the share's
    standard error is under 0.7 points."""
    rng = np.random.default_rng(3)
    eps, k, trees, n = 0.015, 5, 50, 4000
    prior = count_prior([3506, 3411, 2, 3264, 270], k)
    q = math.exp(-eps)
    noise = rng.geometric(1 - q, (n * trees, k)) - rng.geometric(1 - q, (n * trees, k))
    values = count_values(noise, prior, eps)
    sums = values.reshape(n, trees, k + 1).sum(axis=1)

    def moved() -> float:
        return float((np.argmax(count_votes(sums, prior, eps), axis=1) != 0).mean())

    with_margin = moved()
    monkeypatch.setattr(_forest_scoring, "NOISE_MARGIN_Z", 0.0)
    monkeypatch.setattr(_forest_scoring, "SMALL_MARGIN_Z", 0.0)
    without = moved()
    assert without > 0.2  # measured: 0.28
    assert with_margin < without / 2  # measured: 0.11


def test_the_margin_acts_on_disjoint_forests_only_and_files_agree(monkeypatch):
    """At ε = 0.1 (leaf ε below 1/16) the default forest's scores carry the margin and
    its released file scores as it does; Private-RDT (every tree reads every record)
    scores without it. z = 50 makes the margin outgrow this prior's lead."""
    from dpviz.models.files.load import model_from_json, release
    from dpviz.models.forest.estimator import PrivateRDTClassifier
    from tests.conftest import MIXED_SCHEMA, mixed_records

    records = mixed_records(3, 1200)
    X, y = records.drop(columns="label"), records["label"]
    fi = DPRandomForestClassifier(
        epsilon=0.1, schema=MIXED_SCHEMA, random_state=0, noise_seed=1
    ).fit(X.iloc[:900], y.iloc[:900])
    assert fi.tree_epsilon_ < NOISE_MARGIN_EPSILON
    jpw = PrivateRDTClassifier(epsilon=0.1, schema=MIXED_SCHEMA, random_state=0, noise_seed=1)
    jpw.fit(X.iloc[:900], y.iloc[:900])
    test = X.iloc[900:]
    monkeypatch.setattr(_forest_scoring, "NOISE_MARGIN_Z", 0.0)
    plain = {m: m.predict_proba(test) for m in (fi, jpw)}
    monkeypatch.setattr(_forest_scoring, "NOISE_MARGIN_Z", 50.0)
    assert not np.allclose(fi.predict_proba(test), plain[fi])
    np.testing.assert_array_equal(jpw.predict_proba(test), plain[jpw])
    loaded = model_from_json(release(fi, "fletcher_islam").to_json())
    np.testing.assert_array_equal(loaded.predict_proba(test), fi.predict_proba(test))
