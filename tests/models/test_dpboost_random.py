"""DPBoost's random-split mode (issue 28, ``random_``): k > 2 classes on many records (from
ε = 5 up, fewer than the grown model's 6,000) boost complete trees whose splits read no
record, every tree on every record.

The rule reads public values and the released prior's total only; the splits do not
depend on the data; the ledger books the prior, the edges and one sequential entry per
tree and totals ε; the leaves carry the Laplace noise the ledger claims (a 4×ε mutant is
refuted); the model file replays the scores and the ledger."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpviz.models.boosting import randomsplit
from dpviz.models.boosting.estimator import DPBoostClassifier, random_note
from dpviz.models.boosting.randomsplit import (
    RANDOM_RATE,
    RANDOM_RECORDS,
    applies,
    draw_splits,
    tree_budget,
)
from dpviz.models.files import load as files
from dpviz.models.files.manifest import unaccounted
from dpviz.models.registry import get_algorithm
from dpviz.privacy.schema import Schema
from tests.evaluation.test_release_audit import less_noise

SCHEMA = Schema.from_dict(
    {
        "label": "y",
        "classes": ["a", "b", "c", "d"],
        "features": [
            {"name": "x0", "type": "continuous", "min": 0, "max": 1},
            {"name": "x1", "type": "continuous", "min": 0, "max": 1},
            {"name": "x2", "type": "continuous", "min": 0, "max": 1},
            {"name": "colour", "type": "discrete", "values": ["r", "g", "b"]},
        ],
    }
)


def records(n: int, seed: int, labels: str = "signal") -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` records of :data:`SCHEMA`: the class is the quadrant of (x0, x1) (or drawn
    at random with ``labels="random"``)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3))
    frame = pd.DataFrame(x, columns=["x0", "x1", "x2"])
    frame["colour"] = rng.choice(["r", "g", "b"], n)
    quadrant = 2 * (x[:, 0] > 0.5) + (x[:, 1] > 0.5)
    index = quadrant if labels == "signal" else rng.integers(0, 4, n)
    return frame, np.array(["a", "b", "c", "d"], dtype=object)[index]


@pytest.fixture(scope="module")
def fitted():
    X, y = records(4000, 0)
    model = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=7).fit(X, y)
    return X, y, model


@pytest.fixture(scope="module")
def secret(fitted):
    """The same records fitted with secret noise: a private ledger, a file to export."""
    X, y, _ = fitted
    return DPBoostClassifier(epsilon=1.0, schema=SCHEMA).fit(X, y)


def test_the_rule_reads_public_values_and_the_released_total():
    model = DPBoostClassifier(epsilon=1.0)
    assert RANDOM_RECORDS == 2500 and RANDOM_RATE == 20.0
    assert applies(model, RANDOM_RECORDS, 3) and not applies(model, RANDOM_RECORDS - 1, 3)
    assert not applies(model, 1e6, 2)  # two classes: never
    # From ε = 5 up the estimator asks the grown model first (presets.grows): the mode
    # runs there only on fewer than CAPACITY_RECORDS records (test below).
    assert applies(DPBoostClassifier(epsilon=5.0), 1e6, 3)
    assert randomsplit.check_z(4.99) == 0.5 and randomsplit.check_z(5.0) == 2.0
    # ε = 0.1: the prior's 0.095 and the edges' 0.005 leave the trees nothing.
    assert tree_budget(0.1) == 0.0 and not applies(DPBoostClassifier(epsilon=0.1), 1e9, 3)
    # ε = 0.3: 0.3 − 0.095 − 0.015 = 0.19, so 28 classes need n̂·0.19/28 ≥ 20.
    assert tree_budget(0.3) == pytest.approx(0.19)
    least = RANDOM_RATE * 28 / 0.19
    small = DPBoostClassifier(epsilon=0.3)
    assert applies(small, np.ceil(least), 28) and not applies(small, np.floor(least), 28)
    # A size set by hand or the paper preset keeps the model as asked.
    assert not applies(DPBoostClassifier(epsilon=1.0, max_depth=4), 1e6, 3)
    assert not applies(DPBoostClassifier(epsilon=1.0, preset="paper"), 1e6, 3)
    assert applies(get_algorithm("dpboost").make(1.0), 1e6, 3)  # the registry's defaults


def test_a_fit_on_many_records_splits_at_random_and_its_ledger_totals_epsilon(fitted, secret):
    X, y, model = fitted
    assert secret.random_ and secret.ledger_.private
    assert model.random_ and not model.grown_
    assert model.fitted_parameters_ == {
        "n_estimators": 30,
        "trees_per_ensemble": 1,
        "max_depth": 4,
        "learning_rate": 0.3,
        "reg_lambda": 1.0,
        "n_bins": 32,
    }
    assert all(len(trees) == 30 for trees in model.models_)
    assert secret.ledger_.epsilon_total == pytest.approx(1.0)
    ledger = model.ledger_
    # the prior (0.1), the edges (0.05), then per tree one group: the tree on the
    # records not held out ∥ 1/30 of the check's ε on the held-out ones
    assert [len(g) for g in ledger.groups[-32:]] == [1, 1] + [2] * 30
    assert ledger.groups[-32][0].epsilon == pytest.approx(0.1)
    assert ledger.groups[-31][0].epsilon == pytest.approx(0.05)
    eps_t = (1.0 - 0.1 - 0.05) / 30
    for tree, check in ledger.groups[-30:]:
        assert tree.epsilon == pytest.approx(eps_t) and check.epsilon == pytest.approx(eps_t)
        assert tree.data == "the records not held out" and "held-out" in check.data
    assert "4 gradient sums, L1 sensitivity 2" in ledger.groups[-30][0].query
    assert f"ε = {eps_t * 30:g} in all" in ledger.groups[-30][1].query
    # the check passed on this signal, so the trees keep their weight
    wins, losses = model.check_wins_, model.check_losses_
    assert model.check_gain_ == wins - losses
    bar = np.log(1000) / (30 * eps_t) + 0.5 * np.sqrt(max(wins + losses, 0))
    assert randomsplit.check_bar(model) == pytest.approx(bar)
    assert model.check_passed_ and model.check_gain_ > bar
    np.testing.assert_array_equal(model.tree_weight_, 1.0)
    assert model.leaf_scale(1) == pytest.approx(2 / eps_t)
    assert model.score(X, y) > 0.8  # the quadrants, learnt
    assert "Random splits" in random_note(model)


def test_from_epsilon_5_the_mode_runs_where_the_grown_model_does_not():
    """4,000 records at ε = 5: too few for the grown model (6,000), so the mode runs, with
    T = 30 trees of depth 5 and the sign test's larger z; 8,000 grow the model instead."""
    X, y = records(8000, 12)
    mid = DPBoostClassifier(epsilon=5.0, schema=SCHEMA, noise_seed=3).fit(X[:4000], y[:4000])
    assert mid.random_ and not mid.grown_
    assert (mid.n_estimators_, mid.max_depth_) == (30, 5)
    disagreements = max(mid.check_wins_ + mid.check_losses_, 0)
    bar = np.log(1000) / (30 * mid.tree_epsilon_) + 2.0 * np.sqrt(disagreements)
    assert randomsplit.check_bar(mid) == pytest.approx(bar)
    assert mid.check_passed_ and mid.score(X[4000:], y[4000:]) > 0.9
    assert "below 6,000 from ε = 5 up" in random_note(mid)
    large = DPBoostClassifier(epsilon=5.0, schema=SCHEMA, noise_seed=3).fit(X, y)
    assert large.grown_ and not large.random_


def test_hand_set_sizes_two_classes_and_few_records_keep_the_model(fitted):
    X, y, _ = fitted
    hand = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, max_depth=4, noise_seed=1).fit(X, y)
    few = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=1).fit(X[:1500], y[:1500])
    assert not hand.random_ and not few.random_
    assert hand.check_passed_ is not None and few.n_estimators_ == 10


def test_the_splits_do_not_read_the_records():
    """Two datasets of one schema (the same features, unrelated labels) with the same
    noise source: the same splits in every tree."""
    X, y = records(4000, 3)
    _, other = records(4000, 4, labels="random")
    a = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=2).fit(X, y)
    b = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=2).fit(X, other)
    assert a.random_ and b.random_
    np.testing.assert_array_equal(a.bin_edges_, b.bin_edges_)
    for ta, tb in zip(a.models_[0], b.models_[0]):
        for key in ("feature", "threshold", "equal"):
            for la, lb in zip(ta[key], tb[key]):
                np.testing.assert_array_equal(la, lb)
    assert not np.array_equal(a.models_[0][0]["value"], b.models_[0][0]["value"])
    # A draw reads only the public widths and the generator: uniform over the features
    # that can split, each threshold inside its feature's codes.
    widths = np.array([0, 5, 2])
    splits = draw_splits(widths, 3, np.random.default_rng(0))
    features = np.concatenate(splits["feature"])
    thresholds = np.concatenate(splits["threshold"])
    assert set(features) <= {1, 2} and np.all(thresholds < widths[features])


def _leaf_noise(model) -> np.ndarray:
    """Each tree's released − true leaf values times −denominator over 2/ε_t: the noise
    on the gradient sums in units of its claimed Laplace scale."""
    den = randomsplit.denominator(model)
    scale = model.leaf_scale(1)
    return np.concatenate(
        [(released - true) * -den / scale for _, true, released in model.leaf_records_]
    )


def test_the_floor_keeps_the_prior_class_on_records_without_signal():
    """Labels drawn at random (no signal): the held-out check fails and the model answers
    the prior's class for every record (replayable seeds 0–2)."""
    X, y = records(4000, 5, labels="random")
    for seed in range(3):
        model = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=seed).fit(X, y)
        assert model.random_ and not model.check_passed_
        np.testing.assert_array_equal(model.tree_weight_, 0.0)
        assert len(set(model.predict(X))) == 1
        outcome = model.floor_outcome()
        assert outcome.trusted is False and "prior's class" in outcome.fallback
        # the bar the fit compared against: ln(1000)/(T·ε_t) plus the sign test's spread
        disagreements = max(model.check_wins_ + model.check_losses_, 0)
        bar = np.log(1000) / (model.n_estimators_ * model.tree_epsilon_)
        bar += randomsplit.check_z(1.0) * np.sqrt(disagreements)
        assert outcome.bar == pytest.approx(bar) and outcome.statistic <= outcome.bar


def test_the_check_counts_wins_and_losses_against_the_prior_class():
    """Exact: the trees' class against the prior's on five held-out records."""
    start = np.log([0.5, 0.3, 0.2])  # the prior's class is 0
    scores = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0, 1], [1, 0, 0]])
    y = np.array([1, 0, 0, 2, 2])
    # record 0: trees right, prior wrong (a win); 1: prior right, trees wrong (a loss);
    # 2: both right; 3: a win; 4: both wrong
    assert randomsplit.sign_counts(scores + start, start, y) == (2, 1)


def test_the_leaves_carry_the_noise_the_ledger_claims(fitted):
    """Fixed replayable seed (noise_seed=7): 30 trees × 16 leaves × 4 classes = 1,920
    standardised draws pass a KS test at 0.1% (a sound release fails with probability
    0.1% over seeds)."""
    noise = _leaf_noise(fitted[2])
    assert len(noise) == 1920
    assert stats.kstest(noise, stats.laplace.cdf).pvalue > 1e-3


def test_a_quarter_of_the_noise_is_refuted(fitted, monkeypatch):
    """The 4×ε mutant: Laplace noise at a quarter of its scale. With 1,920 draws the KS
    distance (≈ 0.47) is ten times its 0.1% critical value (≈ 0.044)."""
    X, y, _ = fitted
    less_noise(monkeypatch, "dpboost", 4)
    model = DPBoostClassifier(epsilon=1.0, schema=SCHEMA, noise_seed=7).fit(X, y)
    assert stats.kstest(_leaf_noise(model), stats.laplace.cdf).pvalue < 1e-6


class _NoNoise:
    def discrete_laplace(self, epsilon, size):
        return np.zeros(size, dtype=np.int64)


def _check_noise(monkeypatch, factor: float, fits: int = 30) -> np.ndarray:
    """The held-out check's released counts (W̃, L̃) less their true values over ``fits``
    fits at ε = 0.3 (replayable noise seeds 0, 1, …), the noise drawn at ``factor`` × its
    booked T·ε_t (1: the real code; 4: the mutant)."""
    real = randomsplit.release_check
    drawn = []

    def recorded(counts, epsilon, rng):
        out = real(counts, factor * epsilon, rng)
        drawn.extend(np.subtract(out, counts))
        return out

    monkeypatch.setattr(randomsplit, "release_check", recorded)
    X, y = records(3000, 11)
    for seed in range(fits):
        model = DPBoostClassifier(epsilon=0.3, schema=SCHEMA, noise_seed=seed).fit(X, y)
        assert model.random_
    return np.asarray(drawn)


def _nonzero_p(epsilon: float) -> float:
    """P(Z ≠ 0) for exact discrete Laplace noise P(z) ∝ exp(−ε|z|): 2q/(1 + q), q = e^−ε."""
    q = np.exp(-epsilon)
    return 2 * q / (1 + q)


def test_the_check_carries_the_noise_the_ledger_books_and_a_4x_mutant_is_refuted():
    """The check's two counts at T·ε_t = 0.19 each (ε = 0.3: 0.3 − 0.095 − 0.015): over 30
    fits (fixed replayable seeds, 60 draws) the share of non-zero noise passes a two-sided
    binomial test at 10⁻³ against P(Z ≠ 0) = 0.905; the mutant drawing them at 4 × 0.19
    (P(Z ≠ 0) = 0.638, about 7 standard deviations lower on 60 draws) fails it."""
    eps_check = randomsplit.tree_budget(0.3)
    assert eps_check == pytest.approx(0.19)
    with pytest.MonkeyPatch.context() as mp:
        real = _check_noise(mp, 1.0)
    assert len(real) == 60
    p = stats.binomtest(int(np.count_nonzero(real)), len(real), _nonzero_p(eps_check)).pvalue
    assert p > 1e-3
    with pytest.MonkeyPatch.context() as mp:
        mutant = _check_noise(mp, 4.0)
    p = stats.binomtest(int(np.count_nonzero(mutant)), len(mutant), _nonzero_p(eps_check))
    assert p.pvalue < 1e-3


def test_the_model_file_replays_its_scores_and_its_ledger(fitted, secret):
    X, model = fitted[0], secret
    doc = files.release(model).to_json()
    assert unaccounted(json.loads(doc)) == []
    back = files.ReleasedBoost.from_json(doc)
    assert back.meta["random_splits"] is True and back.meta["loss"] == "logistic"
    assert back.meta["params"]["n_estimators"] == 30 and back.meta["max_depth"] == 4
    assert back.meta["privacy"]["epsilon_total"] == pytest.approx(1.0)
    assert back.meta["privacy"]["summary"] == model.ledger_.describe()
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))


def test_the_train_preview_says_when_the_trees_split_at_random():
    from dpviz.app import train as app_train

    on = app_train.structure_preview(SCHEMA, 4000, "dpboost", {}, epsilon=1.0)
    assert on.depth == 4 and "30 trees of depth 4" in on.text and "Random splits" in on.text
    mid = app_train.structure_preview(SCHEMA, 4000, "dpboost", {}, epsilon=10.0)
    assert mid.depth == 5 and "30 trees of depth 5" in mid.text and "Random splits" in mid.text
    for n, eps in ((1000, 1.0), (4000, 0.1), (8000, 10.0)):  # few, ε too small, grown
        off = app_train.structure_preview(SCHEMA, n, "dpboost", {}, epsilon=eps)
        assert "Random splits" not in off.text
