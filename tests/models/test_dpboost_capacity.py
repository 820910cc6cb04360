"""DPBoost's capacity at large ε (issue 28): the default preset grows to LARGE_EPSILON
when ε ≥ CAPACITY_EPSILON and the released prior counts ≥ CAPACITY_RECORDS records.

The rule reads ε, the parameters and the booked prior only; the grown model's ledger
totals ε, its file replays its scores and its ledger, and its leaf noise has the law the
ledger claims (a mutant with a quarter of the noise, i.e. 4×ε, is refuted)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from dpviz.evaluation.synthetic import make_synth
from dpviz.models.boosting import estimator as boosting
from dpviz.models.boosting.estimator import (
    CAPACITY_EPSILON,
    CAPACITY_RECORDS,
    LARGE_EPSILON,
    PRESETS,
    DPBoostClassifier,
    grows,
)
from dpviz.models.files import load as files
from dpviz.models.registry import get_algorithm
from tests.evaluation.test_release_audit import less_noise


@pytest.fixture(scope="module")
def large():
    frame, schema = make_synth("SynthA", 9000, seed=1)
    return frame[list(schema.feature_names)], frame["label"], schema


def test_the_rule_reads_epsilon_the_released_count_and_the_parameters():
    model = DPBoostClassifier(epsilon=10.0)
    assert CAPACITY_EPSILON == 5.0 and CAPACITY_RECORDS == 6000
    assert grows(model, CAPACITY_RECORDS) and not grows(model, CAPACITY_RECORDS - 1)
    assert grows(DPBoostClassifier(epsilon=5.0), 1e6)
    assert not grows(DPBoostClassifier(epsilon=4.99), 1e6)
    # A value set by hand keeps the model as asked; the paper preset never grows.
    assert not grows(DPBoostClassifier(epsilon=10.0, max_depth=4), 1e6)
    assert not grows(DPBoostClassifier(epsilon=10.0, preset="paper"), 1e6)
    # The registry (which passes every default) and the CLI build a model that may grow.
    assert grows(get_algorithm("dpboost").make(10.0), 1e6)
    # The grown model differs from the default preset in sizes, the leaf clip, its
    # split points (bin edges from noisy quantiles), its loss (log-loss, Newton leaves),
    # the split share and selection and the levels' budget only.
    default = PRESETS["default"]
    assert LARGE_EPSILON.leaf_clip == "flat" and default.leaf_clip == "geometric"
    assert LARGE_EPSILON.split_points == "quantile" and default.split_points == "equal"
    assert LARGE_EPSILON.loss == "logistic" and default.loss == "square"
    assert LARGE_EPSILON.selection == "exponential" and default.selection == "gumbel"
    assert LARGE_EPSILON.level_growth == 1.5 and default.level_growth == 1.0
    assert LARGE_EPSILON.split_share == 0.5 and default.split_share == 0.75
    for preset in (default, PRESETS["paper"]):
        assert preset.split_points == "equal" and preset.loss == "square"
        assert preset.selection == "gumbel" and preset.level_growth == 1.0
    for name in ("gradients", "candidates", "subsets", "prior_share"):
        assert getattr(LARGE_EPSILON, name) == getattr(default, name)
    for name in ("split_score", "start", "multiclass"):
        assert getattr(LARGE_EPSILON, name) == getattr(default, name)


def test_a_large_epsilon_fit_grows_and_its_ledger_totals_epsilon(large):
    X, y, schema = large
    model = DPBoostClassifier(epsilon=10.0, schema=schema).fit(X, y)
    assert model.grown_
    # The parameters stay as given (scikit-learn's contract); the fit's sizes are _-ed.
    assert model.n_estimators == 10 and model.n_estimators_ == 20
    assert model.fitted_parameters_ == {
        "n_estimators": 20,
        "trees_per_ensemble": 10,
        "max_depth": 4,
        "learning_rate": 0.5,
        "reg_lambda": 10.0,
        "n_bins": 32,
    }
    assert len(model.models_[0]) == 20
    assert all(len(t["feature"]) == 4 and len(t["value"]) == 16 for t in model.models_[0])
    ledger = model.ledger_
    assert ledger.private and ledger.epsilon_total == pytest.approx(10.0)
    # the prior (ε = 1), the bin edges' noisy histograms (ε = 0.5); two ensembles of
    # ten trees, the last one with the check
    assert [len(g) for g in ledger.groups] == [1, 1, 10, 11]
    assert model.edge_epsilon_ == pytest.approx(0.5) and model.bin_edges_ is not None
    assert ledger.groups[1][0].epsilon == pytest.approx(0.5)
    eps_t = (10.0 - 1.0 - 0.5) / 2
    assert all(e.epsilon == pytest.approx(eps_t) for g in ledger.groups[2:] for e in g)
    # ½ of ε_t on the splits, level d's share ∝ 1.5^d
    levels = 0.5 * eps_t * 1.5 ** np.arange(4) / (1.5 ** np.arange(4)).sum()
    np.testing.assert_allclose(model.split_epsilon_, levels)
    assert sum(model.split_epsilon_) + model.leaf_epsilon_ == pytest.approx(eps_t)
    text = ", ".join(f"{e:.4g}" for e in levels)
    assert f"for splits over 4 levels (ε = {text} from the root down" in ledger.describe()
    assert "clipped Newton values of the log-loss of L1 sensitivity 0.1125" in ledger.describe()
    # Newton leaves clipped to ±2 (log-odds): every tree's leaves have the sensitivity
    # (1 + c)²/(4c·λ) = 9/80 (two classes; newton.py).
    for t in (1, 20):
        assert model.leaf_l1_sensitivity(t) == pytest.approx(9 / 80)
    clipped = np.concatenate([record[1] for record in model.leaf_records_])
    assert np.abs(clipped).max() <= 2.0
    assert model.score(X, y) > 0.8  # SynthA's signal, learnt (HistGB-level is ~0.9)


@pytest.mark.parametrize(("epsilon", "rows"), [(10.0, 3000), (4.0, 9000), (1.0, 9000)])
def test_below_the_rule_the_model_is_the_one_before(large, monkeypatch, epsilon, rows):
    """Too few records or too small an ε: the same file, byte for byte, as with the rule
    switched off (replayable noise; NOT private)."""
    X, y, schema = large

    def fitted():
        model = DPBoostClassifier(epsilon=epsilon, schema=schema, noise_seed=5)
        return model.fit(X.iloc[:rows], y.iloc[:rows])

    model = fitted()
    assert not model.grown_ and model.fitted_parameters_["n_estimators"] == 10
    monkeypatch.setattr(boosting, "grows", lambda model, n_hat: False)
    assert files.release(model).to_json() == files.release(fitted()).to_json()


def test_clone_and_refit_follow_the_rule_each_time(large):
    X, y, schema = large
    grown = DPBoostClassifier(epsilon=10.0, schema=schema).fit(X, y)
    again = clone(grown).fit(X.iloc[:2000], y.iloc[:2000])
    assert grown.grown_ and not again.grown_
    assert again.n_estimators_ == 10 and again.max_depth_ == 3
    assert grown.fit(X.iloc[:2000], y.iloc[:2000]).grown_ is False


def test_a_grown_model_file_replays_its_scores_and_its_ledger(large):
    X, y, schema = large
    model = DPBoostClassifier(epsilon=10.0, schema=schema).fit(X, y)
    back = files.ReleasedBoost.from_json(files.release(model).to_json())
    assert back.meta["params"]["n_estimators"] == 20 and back.meta["max_depth"] == 4
    assert back.meta["n_bins"] == 32 and back.meta["learning_rate"] == 0.5
    assert back.meta["loss"] == "logistic"
    assert back.meta["privacy"]["epsilon_total"] == pytest.approx(10.0)
    assert "4 levels" in back.meta["privacy"]["summary"]
    assert "Newton values" in back.meta["privacy"]["summary"]
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))


def _leaf_noise_p_value(large) -> float:
    """KS p-value of the grown model's released − clipped leaf values (20 trees × 16
    leaves), each over its claimed Laplace scale, against Laplace(0, 1)."""
    X, y, schema = large
    model = DPBoostClassifier(epsilon=10.0, schema=schema, noise_seed=11).fit(X, y)
    assert model.grown_
    noise = np.concatenate(
        [
            (released - clipped) / model.leaf_scale(t + 1)
            for t, (_, clipped, released) in enumerate(model.leaf_records_)
        ]
    )
    assert len(noise) == 320
    return stats.kstest(noise, stats.laplace.cdf).pvalue


def test_the_grown_leaves_carry_the_noise_the_ledger_claims(large):
    """Fixed replayable seed (noise_seed=11): the 320 standardised draws pass a KS test
    at 0.1% (a sound release fails it with probability 0.1% over seeds)."""
    assert _leaf_noise_p_value(large) > 1e-3


def test_a_quarter_of_the_noise_is_refuted(large, monkeypatch):
    """The 4×ε mutant: Laplace noise at a quarter of its scale. Its standardised draws
    are Laplace(0, 1/4); with 320 of them the KS distance (≈ 0.47) is > 4 times its
    0.1% critical value (≈ 0.11), so the test cannot miss it."""
    less_noise(monkeypatch, "dpboost", 4)
    assert _leaf_noise_p_value(large) < 1e-6


def test_the_train_preview_says_when_the_model_grows(large):
    """The Train page's preview (for the data owner: the true record count stands in for
    the prior's noisy one) shows the grown sizes at ε = 10 with 9,000 records only."""
    from dpviz.app import train as app_train

    _, _, schema = large
    grown = app_train.structure_preview(schema, 9000, "dpboost", {}, epsilon=10.0)
    assert grown.depth == 4 and "2 ensembles of up to 10 trees of depth 4" in grown.text
    assert "Grown for large ε" in grown.text and "32 bins" in grown.text
    assert "log-loss" in grown.text
    for n, eps in ((3000, 10.0), (9000, 1.0)):
        plain = app_train.structure_preview(schema, n, "dpboost", {}, epsilon=eps)
        assert plain.depth == 3 and "Grown" not in plain.text


def test_the_train_preview_names_the_softmax_of_a_grown_multiclass_model():
    """Grown with three classes, one tree serves every class's softmax score; smaller
    models keep their one-vs-rest wording."""
    from dpviz.app import train as app_train
    from dpviz.privacy.schema import Schema

    schema = Schema.from_dict(
        {
            "label": "y",
            "classes": ["a", "b", "c"],
            "features": [{"name": "x", "type": "continuous", "min": 0, "max": 1}],
        }
    )
    grown = app_train.structure_preview(schema, 9000, "dpboost", {}, epsilon=10.0)
    assert "all 3 classes' softmax scores" in grown.text and "one-vs-rest" not in grown.text
    # (1,000 records: at ε = 1 and 9,000 the random-split mode would serve softmax too)
    plain = app_train.structure_preview(schema, 1000, "dpboost", {}, epsilon=1.0)
    assert "softmax" not in plain.text and "one-vs-rest" in plain.text
