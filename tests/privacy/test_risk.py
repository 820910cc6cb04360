"""dpviz.privacy.risk: the risk translations of ε against known values, and choosing ε."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dpviz.privacy.risk
from dpviz.privacy.risk import (
    RISK_COLUMNS,
    attribute_advantage,
    attribute_odds_ratio_bound,
    attribute_posterior_bound,
    balanced_error_rate,
    candidate_table,
    explain_attribute_advantage,
    explain_attribute_posterior,
    explain_hypothesis_testing,
    explain_membership_advantage,
    explain_odds_ratio,
    explain_per_record,
    explain_posterior,
    group_epsilon,
    hypothesis_testing_region,
    membership_advantage,
    min_false_negative_rate,
    odds_ratio_bound,
    posterior_bound,
    risk_sentences,
    risk_table,
    select_curve,
    smallest_epsilon,
)
from dpviz.privacy.risk import epsilon_choice as risk_epsilon_choice
from dpviz.privacy.risk import formulas as risk_formulas
from dpviz.privacy.risk import sentences as risk_sentences_module

LN3 = math.log(3.0)
# What the risk texts said before the audit: e^ε applied to any fact about a person.
OVERCLAIMS = (
    "anyone's odds",
    "odds about a person",
    "any statement about a person",
    "sensitive fact",
    "record would reveal",
    "any property",
)


# --- formulas -------------------------------------------------------------------------


def test_known_values_at_epsilon_ln3():
    assert odds_ratio_bound(LN3) == pytest.approx(3.0)
    assert membership_advantage(LN3) == pytest.approx(0.5)
    assert posterior_bound(0.5, LN3) == pytest.approx(0.75)
    assert balanced_error_rate(LN3) == pytest.approx(0.25)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
def test_formulas_match_their_closed_forms(eps):
    e = math.exp(eps)
    assert odds_ratio_bound(eps) == pytest.approx(e, rel=1e-12)
    assert membership_advantage(eps) == pytest.approx((e - 1) / (e + 1), rel=1e-12)
    for p in (0.0, 0.01, 0.3, 0.5, 0.9, 1.0):
        assert posterior_bound(p, eps) == pytest.approx(p * e / (1 - p + p * e), abs=1e-12)
    # the equal-error corner and the advantage are the same fact about the region
    assert balanced_error_rate(eps) == pytest.approx(1 / (1 + e), rel=1e-12)
    assert membership_advantage(eps) == pytest.approx(1 - 2 * balanced_error_rate(eps))


def test_vectorised_and_scalar_outputs():
    eps = np.array([0.1, 1.0, LN3])
    np.testing.assert_allclose(odds_ratio_bound(eps), np.exp(eps))
    np.testing.assert_allclose(membership_advantage(eps)[2], 0.5)
    assert isinstance(posterior_bound(0.2, 1.0), float)
    np.testing.assert_allclose(posterior_bound(np.array([0.0, 0.5, 1.0]), LN3), [0, 0.75, 1])


def test_large_epsilon_does_not_overflow_into_nan():
    assert membership_advantage(1000.0) == 1.0
    assert posterior_bound(0.01, 1000.0) == 1.0
    assert posterior_bound(0.0, 1000.0) == 0.0
    assert math.isinf(odds_ratio_bound(1000.0))
    assert "more than 10^300" in explain_odds_ratio(1000.0)


def test_region_boundary_points_at_ln3():
    """f(α) = max(0, 1 − 3α, (1 − α)/3): corners (0, 1), (1/4, 1/4), (1, 0)."""
    for fpr, fnr in [(0.0, 1.0), (0.1, 0.7), (0.25, 0.25), (0.5, 1 / 6), (1.0, 0.0)]:
        assert min_false_negative_rate(fpr, LN3) == pytest.approx(fnr)
    region = hypothesis_testing_region(LN3, n_points=11)
    assert 0.25 in set(np.round(region["fpr"], 12))  # the kink is always a sample point
    assert region["fpr"].is_monotonic_increasing
    assert region["fnr_min"].is_monotonic_decreasing
    np.testing.assert_allclose(region["fnr_random_guess"], 1 - region["fpr"])
    assert (region["fnr_min"] <= region["fnr_random_guess"] + 1e-12).all()


def test_region_is_respected_by_every_test_of_a_random_dp_mechanism():
    """Any pair of output laws P, Q with |ln P/Q| ≤ ε and any rejection set S give an
    (FPR, FNR) on or above the boundary; randomised response reaches the corner."""
    rng = np.random.default_rng(7)
    eps = 0.8
    for _ in range(50):
        p = rng.dirichlet(np.ones(5))
        q = p * np.exp(rng.uniform(-eps, eps, 5))
        q /= q.sum()
        if np.abs(np.log(p / q)).max() > eps:
            continue
        for size in range(6):
            for subset in itertools.combinations(range(5), size):
                s = list(subset)
                fpr, fnr = p[s].sum(), 1 - q[s].sum()
                assert fnr >= min_false_negative_rate(min(fpr, 1.0), eps) - 1e-12
    keep = math.exp(eps) / (1 + math.exp(eps))
    assert min_false_negative_rate(1 - keep, eps) == pytest.approx(1 - keep)


def test_best_advantage_is_the_best_point_of_the_region():
    region = hypothesis_testing_region(1.3, n_points=2001)
    best = (1 - region["fnr_min"] - region["fpr"]).max()
    assert best == pytest.approx(membership_advantage(1.3), abs=1e-12)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "abc", []])
def test_bad_epsilon_is_refused_with_a_reason(bad):
    with pytest.raises(ValueError, match="epsilon|ε"):
        odds_ratio_bound(bad)
    with pytest.raises(ValueError):
        membership_advantage(bad)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_prior_outside_0_1_is_refused(bad):
    with pytest.raises(ValueError, match="between 0 and 1"):
        posterior_bound(bad, 1.0)


def test_region_rejects_bad_inputs():
    with pytest.raises(ValueError, match="false-positive rates"):
        min_false_negative_rate(1.2, 1.0)
    with pytest.raises(ValueError, match="one ε"):
        min_false_negative_rate(0.5, [1.0, 2.0])
    with pytest.raises(ValueError, match="n_points"):
        hypothesis_testing_region(1.0, n_points=1)


def test_sentences_state_the_numbers():
    assert "3" in explain_odds_ratio(LN3)
    assert "50 percentage points" in explain_membership_advantage(LN3)
    assert "50%" in explain_posterior(0.5, LN3) and "75%" in explain_posterior(0.5, LN3)
    assert "25%" in explain_hypothesis_testing(LN3)
    # never round a belief below certainty up to "100%"
    assert "100%" not in explain_posterior(0.5, 9.0)
    assert set(risk_sentences(1.0)) == {
        "per_record",
        "odds_ratio_bound",
        "membership_advantage",
        "posterior_bound",
        "balanced_error_rate",
        "attribute_posterior_bound",
        "attribute_advantage",
    }


def test_risk_table_rows():
    table = risk_table([0.5, LN3], prior=0.5)
    assert list(table["epsilon"]) == [0.5, LN3]
    assert table.loc[1, "membership_advantage"] == pytest.approx(0.5)
    assert table.loc[1, "posterior_bound"] == pytest.approx(0.75)
    assert set(RISK_COLUMNS) <= set(table.columns)
    assert table.loc[1, "attribute_odds_ratio_bound"] == pytest.approx(9.0)
    assert table.loc[1, "attribute_posterior_bound"] == pytest.approx(0.9)  # 9/(9 + 1)
    assert table.loc[1, "attribute_advantage"] == pytest.approx(2 / 3)  # 1 − 1/3


# --- attributes of a person known to be in the data, and the per-record scope -----------


def test_attribute_bounds_are_two_neighbour_steps_at_epsilon_1():
    """ε = 1, prior 0.5: membership e/(e + 1) = 0.7311, attribute e²/(e² + 1) = 0.8808."""
    e2 = math.exp(2.0)
    assert posterior_bound(0.5, 1.0) == pytest.approx(0.7311, abs=1e-4)
    assert attribute_posterior_bound(0.5, 1.0) == pytest.approx(0.8808, abs=1e-4)
    assert attribute_posterior_bound(0.5, 1.0) == pytest.approx(e2 / (e2 + 1), rel=1e-12)
    assert attribute_odds_ratio_bound(1.0) == pytest.approx(e2, rel=1e-12)
    assert attribute_advantage(1.0) == pytest.approx(1 - math.exp(-1.0), rel=1e-12)
    assert attribute_advantage(1.0) == pytest.approx(0.6321, abs=1e-4)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0])
def test_attribute_formulas_match_their_closed_forms(eps):
    e2 = math.exp(2 * eps)
    assert attribute_odds_ratio_bound(eps) == pytest.approx(odds_ratio_bound(2 * eps), rel=1e-12)
    for p in (0.0, 0.01, 0.3, 0.5, 0.9, 1.0):
        want = p * e2 / (1 - p + p * e2)
        assert attribute_posterior_bound(p, eps) == pytest.approx(want, abs=1e-12)
        assert attribute_posterior_bound(p, eps) == pytest.approx(posterior_bound(p, 2 * eps))
    # tight attribute advantage: above membership at ε, below the 2ε-DP bound tanh(ε)
    assert membership_advantage(eps) < attribute_advantage(eps) < math.tanh(eps)
    assert math.tanh(eps) == pytest.approx(membership_advantage(2 * eps), rel=1e-12)


def test_bounds_grow_with_epsilon_and_prior():
    eps = np.geomspace(0.01, 20.0, 60)
    for f in (odds_ratio_bound, attribute_odds_ratio_bound):
        assert np.all(np.diff(f(eps)) > 0)
    for f in (membership_advantage, attribute_advantage):
        assert np.all(np.diff(f(eps)) >= 0) and np.all(np.diff(f(eps[:40])) > 0)
    assert np.all(np.diff(balanced_error_rate(eps)) <= 0)
    for p in (0.01, 0.1, 0.5, 0.9):
        member, attribute = posterior_bound(p, eps), attribute_posterior_bound(p, eps)
        assert np.all(np.diff(member) >= 0) and np.all(np.diff(attribute) >= 0)
        assert np.all(np.diff(member[:30]) > 0) and np.all(np.diff(attribute[:30]) > 0)
        assert np.all(attribute > member) and np.all(member > p)
    priors = np.linspace(0.0, 1.0, 41)
    for e in (0.1, 1.0, 5.0):
        assert np.all(np.diff(posterior_bound(priors, e)) > 0)
        assert np.all(np.diff(attribute_posterior_bound(priors, e)) > 0)
        assert np.all(attribute_posterior_bound(priors, e) >= posterior_bound(priors, e))


def test_attribute_bounds_hold_for_random_dp_mechanisms_and_are_reached():
    """Output laws P (data without her record), Q_a, Q_b (with it, holding a or b), each
    within e^ε of P: the attacker's odds move by at most e^(2ε) and its advantage is at
    most 1 − e^(−ε); explicit mechanisms reach both."""
    rng = np.random.default_rng(11)
    eps = 0.7
    checked = 0
    for _ in range(400):
        p = rng.dirichlet(np.ones(4))
        qa = p * np.exp(rng.uniform(-eps, eps, 4))
        qb = p * np.exp(rng.uniform(-eps, eps, 4))
        qa, qb = qa / qa.sum(), qb / qb.sum()
        if max(np.abs(np.log(qa / p)).max(), np.abs(np.log(qb / p)).max()) > eps:
            continue
        checked += 1
        assert np.abs(np.log(qb / qa)).max() <= 2 * eps + 1e-12
        assert np.clip(qb - qa, 0, None).sum() <= attribute_advantage(eps) + 1e-12
    assert checked > 20
    # advantage reached: P(s) = 1/2, Q_b(s) = 1 − e^(−ε)/2, Q_a(s) = e^(−ε)/2
    half = math.exp(-eps) / 2
    p, qa, qb = np.array([0.5, 0.5]), np.array([half, 1 - half]), np.array([1 - half, half])
    assert max(np.abs(np.log(qa / p)).max(), np.abs(np.log(qb / p)).max()) <= eps + 1e-12
    assert qb[0] - qa[0] == pytest.approx(attribute_advantage(eps))
    # odds factor reached: a rare output that Q_b makes e^ε likelier and Q_a e^ε rarer
    p = np.array([0.01, 0.99])
    qb = np.array([0.01 * math.exp(eps), 1 - 0.01 * math.exp(eps)])
    qa = np.array([0.01 * math.exp(-eps), 1 - 0.01 * math.exp(-eps)])
    assert max(np.abs(np.log(qa / p)).max(), np.abs(np.log(qb / p)).max()) <= eps + 1e-12
    assert qb[0] / qa[0] == pytest.approx(attribute_odds_ratio_bound(eps))


def test_attribute_bounds_vectorise_and_do_not_overflow():
    assert isinstance(attribute_posterior_bound(0.2, 1.0), float)
    np.testing.assert_allclose(
        attribute_posterior_bound(np.array([0.0, 0.5, 1.0]), LN3), [0, 0.9, 1]
    )
    np.testing.assert_allclose(attribute_advantage(np.array([LN3, 1.0]))[0], 2 / 3)
    assert attribute_posterior_bound(0.01, 1000.0) == 1.0
    assert attribute_posterior_bound(0.0, 1000.0) == 0.0
    assert attribute_advantage(1000.0) == 1.0
    assert math.isinf(attribute_odds_ratio_bound(400.0))
    assert "more than 10^300" in explain_attribute_posterior(0.01, 400.0)


def test_group_epsilon_is_per_record():
    assert group_epsilon(0.5) == 0.5
    assert group_epsilon(0.5, 3) == pytest.approx(1.5)
    np.testing.assert_allclose(group_epsilon(np.array([0.1, 1.0]), 4), [0.4, 4.0])
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="records"):
            group_epsilon(1.0, bad)
    with pytest.raises(ValueError, match="epsilon"):
        group_epsilon(0.0, 2)


def test_bad_inputs_of_the_attribute_bounds():
    for f in (attribute_odds_ratio_bound, attribute_advantage):
        with pytest.raises(ValueError, match="epsilon|ε"):
            f(0.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        attribute_posterior_bound(1.5, 1.0)


def test_translation_states_the_per_record_scope():
    text = risk_sentences(1.0)["per_record"]
    assert text == explain_per_record(1.0)
    assert "one record per person" in text
    assert "a person with k records in the data is protected only at k·ε" in text
    assert "ε = 2 for 2 records" in text
    assert "ε = 1 for 2 records, 2.5 for 5" in explain_per_record(0.5)
    assert list(risk_sentences(1.0))[0] == "per_record"  # said before any number
    for doc in (
        dpviz.privacy.risk.__doc__,
        odds_ratio_bound.__doc__,
        membership_advantage.__doc__,
        posterior_bound.__doc__,
        attribute_odds_ratio_bound.__doc__,
        attribute_posterior_bound.__doc__,
        attribute_advantage.__doc__,
        min_false_negative_rate.__doc__,
        hypothesis_testing_region.__doc__,
        balanced_error_rate.__doc__,
        risk_table.__doc__,
    ):
        assert "k records" in doc and "k·ε" in doc


def test_sentences_keep_membership_and_attributes_apart():
    s = risk_sentences(1.0, 0.5)
    for key in ("odds_ratio_bound", "membership_advantage", "posterior_bound"):
        assert "in the data" in s[key] or "in or out of the data" in s[key]
    assert (
        "odds that a given person is in the data (rather than out of it)" in s["odds_ratio_bound"]
    )
    assert "by at most 2.72" in s["odds_ratio_bound"]
    assert "be at most 73.1% sure that she is in it" in s["posterior_bound"]
    attribute = s["attribute_posterior_bound"]
    assert attribute == explain_attribute_posterior(0.5, 1.0)
    assert "known to be in the data" in attribute and "be at most 88.1% sure" in attribute
    assert "two steps of ε" in attribute and "e^(2ε) = 7.39" in attribute
    assert "73.1%" not in attribute
    assert "63.2 percentage points" in s["attribute_advantage"]
    assert s["attribute_advantage"] == explain_attribute_advantage(1.0)
    # a prior of 10%: membership 23.2%, attribute 45.1%
    assert "45.1%" in explain_attribute_posterior(0.1, 1.0)
    assert "100%" not in explain_attribute_posterior(0.5, 5.0)


def test_no_risk_text_overclaims():
    """The old texts applied e^ε to 'anyone's odds about a person' and to 'any sensitive
    fact the record would reveal': wrong for attributes of a person known to be in the
    data (two neighbour steps, e^(2ε)). No sentence or docstring of dpviz.privacy.risk says it."""
    parts = (risk_formulas, risk_sentences_module, risk_epsilon_choice)
    texts = [dpviz.privacy.risk.__doc__, *(part.__doc__ for part in parts)]
    own = [
        v
        for part in parts
        for v in vars(part).values()
        if getattr(v, "__module__", "") == part.__name__
    ]
    assert len(own) > 20
    texts += [v.__doc__ or "" for v in own]
    for eps in (0.1, 1.0, LN3, 5.0, 1000.0):
        for prior in (0.01, 0.5, 0.9):
            texts += risk_sentences(eps, prior).values()
    joined = "\n".join(texts).lower()
    for phrase in OVERCLAIMS:
        assert phrase not in joined, phrase
    # the membership docstrings name the attribute bound instead of claiming it
    for f in (odds_ratio_bound, posterior_bound):
        assert "2ε" in f.__doc__ and "attribute" in f.__doc__


# --- choosing ε -------------------------------------------------------------------------


def summary_frame(rows_dp, reference=0.90, mechanism="permute_flip", private=True, **extra):
    rows = [
        {
            "series": "dp_forest",
            "algorithm": "fletcher_islam",
            "mechanism": mechanism,
            "epsilon": eps,
            "n_estimators": 10,
            "depth_rule": "theorem2",
            "data_split": "disjoint",
            "accuracy_mean": mean,
            "accuracy_std": std,
            "auc_mean": mean,
            "auc_std": std,
            "f1_mean": mean,
            "f1_std": std,
            "private": private,
            **extra,
        }
        for eps, mean, std in rows_dp
    ]
    rows.append(
        {
            "series": "nonprivate_forest",
            "algorithm": "fletcher_islam",
            "mechanism": "none",
            "epsilon": math.inf,
            "n_estimators": 10,
            "depth_rule": "theorem2",
            "data_split": "shared",
            "accuracy_mean": reference,
            "accuracy_std": 0.01,
            "auc_mean": reference,
            "auc_std": 0.01,
            "f1_mean": reference,
            "f1_std": 0.01,
            "private": False,
        }
    )
    rows.append({**rows[-1], "series": "sklearn_random_forest", "accuracy_mean": 0.95})
    return pd.DataFrame(rows)


CURVE = [(0.1, 0.70, 0.05), (0.5, 0.885, 0.02), (1.0, 0.89, 0.005), (2.0, 0.895, 0.004)]


def test_smallest_epsilon_uses_the_lower_band():
    """Target 0.90 − 0.02 = 0.88: ε = 0.5 has mean 0.885 but lower band 0.865, so the
    answer is ε = 1 (lower band 0.885)."""
    choice = smallest_epsilon(summary_frame(CURVE), "accuracy", 2.0)
    assert choice.epsilon == 1.0
    assert choice.target == pytest.approx(0.88)
    assert choice.reference_mean == pytest.approx(0.90)
    assert list(choice.curve["meets"]) == [False, False, True, True]
    np.testing.assert_allclose(choice.curve["lower"], [0.65, 0.865, 0.885, 0.891])
    assert "ε = 1 is the smallest" in choice.reason
    assert choice.private and choice.config["mechanism"] == "permute_flip"


def test_larger_loss_gives_smaller_epsilon_and_loss_zero_can_fail():
    summary = summary_frame(CURVE)
    assert smallest_epsilon(summary, "accuracy", 4.0).epsilon == 0.5
    none = smallest_epsilon(summary, "accuracy", 0.0)
    assert none.epsilon is None
    assert "No swept ε meets it" in none.reason and "89.1%" in none.reason


def test_other_reference_and_metric():
    summary = summary_frame(CURVE)
    choice = smallest_epsilon(summary, "accuracy", 5.0, reference="sklearn_random_forest")
    assert choice.reference_mean == pytest.approx(0.95)
    assert choice.epsilon is None  # target 0.90: best lower band is 0.891 at ε = 2
    choice = smallest_epsilon(summary, "accuracy", 6.0, reference="sklearn_random_forest")
    assert choice.epsilon == 2.0
    summary.loc[summary["series"] == "dp_forest", "f1_mean"] -= 0.1
    assert smallest_epsilon(summary, "f1", 2.0).epsilon is None
    assert smallest_epsilon(summary, "f1", 12.0).epsilon == 1.0


def test_noisy_curve_is_flagged():
    curve = [(0.1, 0.95, 0.0), (0.5, 0.80, 0.0), (1.0, 0.95, 0.0)]
    choice = smallest_epsilon(summary_frame(curve), "accuracy", 2.0)
    assert choice.epsilon == 0.1
    assert "0.5 did not meet it" in choice.reason


def test_not_private_mechanism_is_said():
    choice = smallest_epsilon(
        summary_frame(CURVE, mechanism="smooth_em", private=False), "accuracy", 2.0
    )
    assert not choice.private
    assert "NOT differentially private" in choice.reason


def test_several_configurations_must_be_chosen():
    two = pd.concat(
        [summary_frame(CURVE), summary_frame(CURVE, mechanism="count_em").iloc[:-2]],
        ignore_index=True,
    )
    with pytest.raises(ValueError, match="several configurations.*mechanism"):
        smallest_epsilon(two)
    assert smallest_epsilon(two, mechanism="count_em").config["mechanism"] == "count_em"
    with pytest.raises(ValueError, match="no DP curve matches mechanism=global_em"):
        select_curve(two, mechanism="global_em")


def test_empty_and_malformed_sweeps_are_refused():
    with pytest.raises(ValueError, match="sweep is empty"):
        smallest_epsilon(pd.DataFrame())
    with pytest.raises(ValueError, match="not a sweep summary"):
        smallest_epsilon(pd.DataFrame({"a": [1]}))
    with pytest.raises(ValueError, match="no nonprivate_forest reference"):
        smallest_epsilon(summary_frame(CURVE).iloc[:-2])
    with pytest.raises(ValueError, match="metric"):
        smallest_epsilon(summary_frame(CURVE), "precision")
    with pytest.raises(ValueError, match="points ≥ 0"):
        smallest_epsilon(summary_frame(CURVE), "accuracy", -1)


def test_candidate_table_joins_utility_and_blanks_risk_without_proof():
    table = candidate_table([0.5, 1.0, 3.0], 0.2, summary_frame(CURVE))
    assert list(table["accuracy_mean"][:2]) == [0.885, 0.89]
    assert math.isnan(table["accuracy_mean"][2])  # not swept
    assert table["membership_advantage"][1] == pytest.approx(membership_advantage(1.0))
    assert table["attribute_posterior_bound"][1] == pytest.approx(
        attribute_posterior_bound(0.2, 1.0)
    )
    unproven = candidate_table(
        [1.0], 0.2, summary_frame(CURVE, mechanism="smooth_em", private=False)
    )
    assert math.isnan(unproven["odds_ratio_bound"][0]) and not unproven["private"][0]
    assert unproven[list(RISK_COLUMNS)].isna().all(axis=None)


def test_works_on_a_real_sweep_summary():
    from dpviz.evaluation.sweep import SweepGrid, run_sweep
    from dpviz.evaluation.synthetic import make_synth
    from dpviz.tabular.encode import encode

    frame, schema = make_synth("SynthA", 600, seed=0)
    grid = SweepGrid(epsilons=[0.05, 1.0, 20.0], n_estimators=[5])
    summary = run_sweep(encode(frame, schema), schema, grid, folds=2, seed=0).summary
    choice = smallest_epsilon(summary, "accuracy", 100.0)
    assert choice.epsilon == 0.05  # any ε meets a 100-point loss
    assert set(choice.curve["epsilon"]) == {0.05, 1.0, 20.0}
    table = candidate_table([1.0], 0.5, summary)
    assert 0 < table["accuracy_mean"][0] <= 1
