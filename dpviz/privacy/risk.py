"""What an ε means for a person in the data: risk translations of pure ε-DP.

Every function here is a formula of ε (and of a prior), not a statistic of anybody's
data, so its outputs can be shown and shared freely. Each holds for any mechanism that
is proven ε-differentially private under add/remove-one neighbours (SPEC §1); for a
mechanism without a proof (``smooth_em``, ``none``) none of them holds, whatever ε the
configuration was given. Callers must pass the model's *total* ε, as computed by its
privacy ledger, not a per-tree budget.

The guarantee is per RECORD. Every translation below assumes one record per person; a
person with k records in the data is protected only at k·ε (group privacy,
:func:`group_epsilon`), so the translations must then be read at k·ε.

Two attackers are translated, each knowing everything except one thing and seeing the
released model:

* Membership (:func:`odds_ratio_bound`, :func:`membership_advantage`,
  :func:`posterior_bound`, :func:`hypothesis_testing_region`): is a given person's
  record in or out of the data? "In" and "out" are neighbouring datasets, one step of ε,
  so the attacker's odds move by at most a factor e^ε.
* Attribute (:func:`attribute_odds_ratio_bound`, :func:`attribute_advantage`,
  :func:`attribute_posterior_bound`): the person is known to be in the data; which of
  two values does her record hold (e.g. a diagnosis)? The two datasets differ by a
  substitution, which is removing her record and adding the other one: two neighbour
  steps, so the odds move by up to e^(2ε), not e^ε. (At ε = 1 and a prior of 50%, the
  attacker can reach 88.1% about her attribute, against 73.1% about her membership.)

References
----------
Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015.
Dong, Roth & Su, "Gaussian differential privacy", JRSS B 2022 (trade-off functions,
group privacy).
Wasserman & Zhou, "A statistical framework for differential privacy", JASA 2010.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

ArrayLike = float | Sequence[float] | np.ndarray

SERIES_DP = "dp_forest"
REFERENCE_SERIES = ("nonprivate_forest", "sklearn_random_forest")
# macro F1: the mean of every class's F1 (dpviz.evaluation.metrics.score), so that a rare
# class counts as much as a common one.
METRIC_NAMES = {"accuracy": "accuracy", "auc": "ROC AUC", "f1": "F1", "macro_f1": "macro F1"}
# Columns that pick one DP curve out of a sweep summary.
CONFIG_KEYS = ("algorithm", "mechanism", "n_estimators", "depth_rule", "data_split")
# A DP row's mean minus one std is compared with the target at this slack, so that a
# value printed as exactly the target (e.g. 0.95 - 0.02 in floating point) meets it.
_SLACK = 1e-12
# The risk columns of :func:`risk_table`: blanked (NaN) for a configuration without a proof.
RISK_COLUMNS = (
    "odds_ratio_bound",
    "membership_advantage",
    "posterior_bound",
    "balanced_error_rate",
    "attribute_odds_ratio_bound",
    "attribute_advantage",
    "attribute_posterior_bound",
)


# --- validation -----------------------------------------------------------------------


def _check_epsilon(epsilon: ArrayLike) -> np.ndarray:
    try:
        value = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number, got {epsilon!r}") from None
    if value.size == 0:
        raise ValueError("epsilon is empty: give at least one ε value")
    if np.isnan(value).any():
        raise ValueError("epsilon is NaN: give a positive number such as 1.0")
    if (value <= 0).any():
        raise ValueError(
            f"epsilon must be greater than 0, got {epsilon!r}: ε = 0 would mean releasing "
            "nothing about the data; pick a positive value such as 0.1, 1 or 5"
        )
    if np.isinf(value).any():
        raise ValueError(
            "epsilon is infinite: an unbounded ε has no risk translation (there is no "
            "privacy guarantee at all); use a finite value"
        )
    return value


def _check_prior(prior: ArrayLike) -> np.ndarray:
    try:
        value = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"the prior must be a probability, got {prior!r}") from None
    if np.isnan(value).any() or (value < 0).any() or (value > 1).any():
        raise ValueError(
            f"the prior must be a probability between 0 and 1, got {prior!r}: it is the "
            "attacker's belief, before seeing the model, that the person is in the data, or "
            "that her record holds a given value (e.g. 0.01 for 1 in 100)"
        )
    return value


def _out(value: np.ndarray, *inputs: ArrayLike) -> float | np.ndarray:
    """A Python float for scalar inputs, an array otherwise."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(value)
    return value


# --- the formulas ---------------------------------------------------------------------


def group_epsilon(epsilon: ArrayLike, records: int = 1) -> float | np.ndarray:
    """The ε that protects a person with ``records`` records in the data: records · ε.

    ε-DP under add/remove-one neighbours protects one *record*. A person with k records
    (several visits, several rows) differs between "in" and "out" by k neighbour steps,
    and group privacy gives only k·ε (Dong, Roth & Su 2022, §2.4): every translation of
    this module then holds at k·ε, not ε. For an attribute of such a person (k
    substitutions) it is 2·k·ε in the odds.

    Parameters
    ----------
    epsilon : float or array of float
        Total privacy budget of the released model, > 0.
    records : int, default=1
        Records the person has in the data, ≥ 1.

    Returns
    -------
    float or ndarray
        records · ε.

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP.
    """
    if isinstance(records, bool) or not isinstance(records, int | np.integer) or records < 1:
        raise ValueError(
            f"records must be a whole number ≥ 1 (the records one person has), got {records!r}"
        )
    eps = _check_epsilon(epsilon)
    return _out(int(records) * eps, epsilon)


def odds_ratio_bound(epsilon: ArrayLike) -> float | np.ndarray:
    """Largest factor by which the model can change an attacker's odds that a person is
    in the data (rather than out of it).

    For ε-DP, for every set S of outputs and neighbouring datasets D (without the
    person's record) and D' (with it)::

        e^(−ε) · P(M(D) ∈ S) ≤ P(M(D') ∈ S) ≤ e^ε · P(M(D) ∈ S),

    so an attacker's odds that the person is in the data move by a factor between
    e^(−ε) and e^ε after seeing the model. This is about membership only: the odds of
    what the record of a person known to be in the data says move by up to e^(2ε)
    (:func:`attribute_odds_ratio_bound`).

    Parameters
    ----------
    epsilon : float or array of float
        Total privacy budget of the released model, > 0.

    Returns
    -------
    float or ndarray
        e^ε (``inf`` past about ε = 709, where float64 overflows).

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    eps = _check_epsilon(epsilon)
    with np.errstate(over="ignore"):
        return _out(np.exp(eps), epsilon)


def membership_advantage(epsilon: ArrayLike) -> float | np.ndarray:
    """Best membership-inference advantage: max over attackers of TPR − FPR.

    An attacker answers "the person is in the data" with true-positive rate TPR (when
    the person is in) and false-positive rate FPR (when they are out). Under ε-DP::

        TPR − FPR ≤ (e^ε − 1) / (e^ε + 1) = tanh(ε / 2),

    reached at FPR = 1/(1 + e^ε), TPR = e^ε/(1 + e^ε) (see
    :func:`hypothesis_testing_region`). 0 means the attacker can do no better than a
    coin flip; 1 means certainty. Example: ε = ln 3 gives 0.5. For an attribute of a
    person known to be in the data see :func:`attribute_advantage`.

    Parameters
    ----------
    epsilon : float or array of float
        Total privacy budget, > 0.

    Returns
    -------
    float or ndarray in [0, 1)

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    eps = _check_epsilon(epsilon)
    # tanh(ε/2) is the same quantity without overflow for large ε.
    return _out(np.tanh(eps / 2.0), epsilon)


def _posterior(p: np.ndarray, log_factor: np.ndarray) -> np.ndarray:
    """p·F / (1 − p + p·F) with F = e^log_factor, in a form that cannot overflow."""
    # The e^(−x) form cannot overflow and is exact at p = 1; p = 0 stays 0 even where
    # e^(−x) underflows to 0 (0/0).
    with np.errstate(invalid="ignore"):
        return np.where(p > 0, p / (p + (1.0 - p) * np.exp(-log_factor)), 0.0)


def posterior_bound(prior: ArrayLike, epsilon: ArrayLike) -> float | np.ndarray:
    """Largest belief an attacker can reach that the person is in the data.

    With prior belief p (before seeing the model) that the person is in the data and
    an ε-DP model, Bayes' rule and :func:`odds_ratio_bound` give a posterior of at most::

        p · e^ε / (1 − p + p · e^ε)  =  p / (p + (1 − p) · e^(−ε)).

    Example: p = 0.5, ε = ln 3 gives 0.75; ε = 1 gives 0.731. This is about membership
    (in or out of the data) only. For a fact about the record of a person known to be
    in the data the bound is that of 2ε (:func:`attribute_posterior_bound`: 0.881 at
    p = 0.5, ε = 1).

    Parameters
    ----------
    prior : float or array of float in [0, 1]
        The attacker's belief, before seeing the model, that the person is in the data.
    epsilon : float or array of float
        Total privacy budget, > 0.

    Returns
    -------
    float or ndarray in [p, 1]

    Notes
    -----
    A formula of ε and p: public, no data read. Holds only for a mechanism proven ε-DP,
    and per record: a person with k records in the data is protected at k·ε.
    """
    p = _check_prior(prior)
    eps = _check_epsilon(epsilon)
    return _out(_posterior(p, eps), prior, epsilon)


def attribute_odds_ratio_bound(epsilon: ArrayLike) -> float | np.ndarray:
    """Largest factor by which the model can change an attacker's odds about what the
    record of a person known to be in the data says: e^(2ε).

    The attacker knows the person is in the data and everything else, and weighs two
    values of her record (e.g. "diagnosis" against "no diagnosis"): datasets D_a and
    D_b that differ by a *substitution*. Under add/remove-one neighbours a substitution
    is two steps, D_a → D (her record removed) → D_b (the other record added), so for
    every set S of outputs::

        P(M(D_a) ∈ S) ≤ e^ε · P(M(D) ∈ S) ≤ e^(2ε) · P(M(D_b) ∈ S),

    and the odds of "her record says a" move by a factor between e^(−2ε) and e^(2ε).
    The bound is reached (an output that D_a makes e^ε times likelier than D, and D_b
    e^ε times less likely).

    Parameters
    ----------
    epsilon : float or array of float
        Total privacy budget of the released model, > 0.

    Returns
    -------
    float or ndarray
        e^(2ε) (``inf`` past about ε = 354, where float64 overflows).

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    eps = _check_epsilon(epsilon)
    with np.errstate(over="ignore"):
        return _out(np.exp(2.0 * eps), epsilon)


def attribute_posterior_bound(prior: ArrayLike, epsilon: ArrayLike) -> float | np.ndarray:
    """Largest belief an attacker can reach about what the record of a person known to
    be in the data says.

    With prior belief p that her record holds a given value (before seeing the model)
    and an ε-DP model, Bayes' rule and :func:`attribute_odds_ratio_bound` (two neighbour
    steps, see there) give a posterior of at most::

        p · e^(2ε) / (1 − p + p · e^(2ε))  =  p / (p + (1 − p) · e^(−2ε)).

    Example: p = 0.5, ε = 1 gives e²/(e² + 1) = 0.881, where the membership bound
    :func:`posterior_bound` is 0.731.

    Parameters
    ----------
    prior : float or array of float in [0, 1]
        The attacker's belief, before seeing the model, that her record holds the value.
    epsilon : float or array of float
        Total privacy budget, > 0.

    Returns
    -------
    float or ndarray in [p, 1]

    Notes
    -----
    A formula of ε and p: public, no data read. Holds only for a mechanism proven ε-DP,
    and per record: a person with k records in the data is protected at k·ε.
    """
    p = _check_prior(prior)
    eps = _check_epsilon(epsilon)
    return _out(_posterior(p, 2.0 * eps), prior, epsilon)


def attribute_advantage(epsilon: ArrayLike) -> float | np.ndarray:
    """Best attribute-inference advantage against a person known to be in the data:
    max over attackers of TPR − FPR, which is 1 − e^(−ε).

    The attacker tells two values a, b of her record apart (datasets D_a, D_b, both
    neighbours of D, the data without her record). For any rejection set S, with
    q = P(M(D) ∈ S), ε-DP between D_b and D and between D_a and D gives::

        TPR = P(M(D_b) ∈ S) ≤ 1 − e^(−ε) · (1 − q),    FPR = P(M(D_a) ∈ S) ≥ e^(−ε) · q,

    so TPR − FPR ≤ 1 − e^(−ε), whatever q. It is reached: with two outputs and
    P(M(D) ∈ S) = 1/2, P(M(D_b) ∈ S) = 1 − e^(−ε)/2 and P(M(D_a) ∈ S) = e^(−ε)/2 every
    pair of neighbours is within e^ε. It lies between :func:`membership_advantage` at ε,
    tanh(ε/2), and at 2ε, tanh(ε): treating the substitution as one 2ε step gives the
    looser tanh(ε), because it ignores that both datasets are neighbours of the same D.
    Example: ε = 1 gives 0.632 (membership: 0.462; tanh(1) = 0.762).

    Parameters
    ----------
    epsilon : float or array of float
        Total privacy budget, > 0.

    Returns
    -------
    float or ndarray in [0, 1)

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    eps = _check_epsilon(epsilon)
    return _out(-np.expm1(-eps), epsilon)


def min_false_negative_rate(fpr: ArrayLike, epsilon: float) -> float | np.ndarray:
    """Lowest false-negative rate any membership attacker can have at a given
    false-positive rate.

    Derivation. The attacker tests H0 "the person is out" (model trained on D) against
    H1 "the person is in" (on D', D plus the record) with a rejection set S of outputs:
    FPR α = P(M(D) ∈ S), FNR β = P(M(D') ∉ S). ε-DP applied to S and to its complement,
    in both directions, gives::

        1 − β = P(M(D') ∈ S) ≤ e^ε · P(M(D) ∈ S) = e^ε · α      ⇒  β ≥ 1 − e^ε · α
        1 − α = P(M(D) ∉ S) ≤ e^ε · P(M(D') ∉ S) = e^ε · β      ⇒  β ≥ e^(−ε) · (1 − α)

    (the other two directions give the same two lines with α and β swapped, which are
    the same constraints). Hence::

        β ≥ f_ε(α) = max(0, 1 − e^ε · α, e^(−ε) · (1 − α)).

    The bound is tight: randomised response on the membership bit reaches every point
    of the boundary. It is piecewise linear with corners (0, 1), (α*, α*) and (1, 0),
    α* = 1/(1 + e^ε). The 0 term binds only at α = 1. It is the membership test (in or
    out of the data); an attacker on an attribute of a person known to be in the data
    faces two neighbour steps and can do better (:func:`attribute_advantage`).

    Parameters
    ----------
    fpr : float or array of float in [0, 1]
    epsilon : float
        Total privacy budget, > 0.

    Returns
    -------
    float or ndarray
        f_ε(fpr).

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    if np.ndim(epsilon) != 0:
        raise ValueError("min_false_negative_rate takes one ε; loop over candidate values")
    eps = float(_check_epsilon(epsilon))
    alpha = np.asarray(fpr, dtype=np.float64)
    if np.isnan(alpha).any() or (alpha < 0).any() or (alpha > 1).any():
        raise ValueError(f"false-positive rates must lie in [0, 1], got {fpr!r}")
    # e^ε is capped below float64 overflow: past it 1 − e^ε·α is hugely negative for any
    # α > 0 anyway, and the cap keeps α = 0 from producing inf · 0 = NaN.
    slope = math.exp(min(eps, 700.0))
    value = np.maximum.reduce(
        [np.zeros_like(alpha), 1.0 - slope * alpha, math.exp(-eps) * (1.0 - alpha)]
    )
    return _out(value, fpr)


def hypothesis_testing_region(epsilon: float, n_points: int = 201) -> pd.DataFrame:
    """The boundary of the (FPR, FNR) pairs a membership attacker cannot beat, for
    plotting.

    Every attacker deciding "in" / "out" of the data for one person has an (FPR, FNR)
    pair on or above the boundary ``fnr_min = f_ε(fpr)`` of
    :func:`min_false_negative_rate`; the area below it is out of reach. The random-guess
    line FNR = 1 − FPR is ε = 0.

    Parameters
    ----------
    epsilon : float
        Total privacy budget, > 0.
    n_points : int, default=201
        Evenly spaced FPR values in [0, 1]; the corner α* = 1/(1 + e^ε) is always added
        so the kink is drawn exactly.

    Returns
    -------
    DataFrame
        Columns ``fpr``, ``fnr_min`` (the boundary) and ``fnr_random_guess`` (1 − fpr),
        sorted by ``fpr``, all in [0, 1].

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    if isinstance(n_points, bool) or not isinstance(n_points, int | np.integer) or n_points < 2:
        raise ValueError(f"n_points must be a whole number ≥ 2, got {n_points!r}")
    eps = float(_check_epsilon(epsilon))
    corner = balanced_error_rate(eps)
    fpr = np.unique(np.concatenate([np.linspace(0.0, 1.0, int(n_points)), [corner]]))
    return pd.DataFrame(
        {"fpr": fpr, "fnr_min": min_false_negative_rate(fpr, eps), "fnr_random_guess": 1 - fpr}
    )


def balanced_error_rate(epsilon: ArrayLike) -> float | np.ndarray:
    """Lowest error rate of a membership attacker that errs equally often both ways:
    1/(1 + e^ε).

    The kink of the hypothesis-testing region, where FPR = FNR = α*. Equals
    (1 − :func:`membership_advantage`) / 2.

    Notes
    -----
    A formula of ε: public, no data read. Holds only for a mechanism proven ε-DP, and
    per record: a person with k records in the data is protected at k·ε.
    """
    eps = _check_epsilon(epsilon)
    # 1/(1 + e^ε) written as a logistic of −ε: no overflow for large ε.
    return _out(0.5 * (1.0 - np.tanh(eps / 2.0)), epsilon)


# --- the same in words -----------------------------------------------------------------


def _pct(value: float) -> str:
    """A percentage with 3 significant digits, more when rounding would print 100% for
    a value below 1 (an attacker "100% sure" is a different statement)."""
    for digits in (3, 4, 5, 6, 8):
        text = f"{100 * value:.{digits}g}"
        if value >= 1 or float(text) < 100:
            break
    return f"{text}%"


def _num(value: float) -> str:
    return f"{value:,.3g}" if value < 1e6 else f"{value:.3g}"


def _factor(value: float, exponent: str) -> str:
    """A bound factor, or e^(exponent) in words where it overflows float64."""
    return _num(value) if math.isfinite(value) else f"e^{exponent} (more than 10^300)"


def explain_per_record(epsilon: float) -> str:
    """One plain-English sentence for :func:`group_epsilon`: the guarantee is per record."""
    two, five = group_epsilon(epsilon, 2), group_epsilon(epsilon, 5)
    return (
        f"ε = {epsilon:g} protects one record: every statement here assumes one record per "
        f"person, and a person with k records in the data is protected only at k·ε "
        f"(ε = {two:g} for 2 records, {five:g} for 5)."
    )


def explain_odds_ratio(epsilon: float) -> str:
    """One plain-English sentence for :func:`odds_ratio_bound`."""
    factor = _factor(odds_ratio_bound(epsilon), f"{epsilon:g}")
    return (
        f"At ε = {epsilon:g}, seeing the model can multiply an attacker's odds that a given "
        f"person is in the data (rather than out of it) by at most {factor}, or divide them "
        "by at most as much."
    )


def explain_membership_advantage(epsilon: float) -> str:
    """One plain-English sentence for :func:`membership_advantage`."""
    adv = membership_advantage(epsilon)
    return (
        f"At ε = {epsilon:g}, the best possible attacker trying to tell whether a person is in "
        f"or out of the data flags people who are in it at most {100 * adv:.3g} percentage "
        "points more often than people who are not (its advantage over guessing: 0 = no "
        "better than a coin, 100 = always right)."
    )


def explain_posterior(prior: float, epsilon: float) -> str:
    """One plain-English sentence for :func:`posterior_bound`."""
    post = posterior_bound(prior, epsilon)
    return (
        f"At ε = {epsilon:g}, an attacker who thought there was a {_pct(prior)} chance that a "
        f"person is in the data can, after seeing the model, be at most {_pct(post)} sure "
        "that she is in it (rather than out)."
    )


def explain_attribute_posterior(prior: float, epsilon: float) -> str:
    """One plain-English sentence for :func:`attribute_posterior_bound`."""
    post = attribute_posterior_bound(prior, epsilon)
    factor = _factor(attribute_odds_ratio_bound(epsilon), f"{2 * epsilon:g}")
    return (
        f"At ε = {epsilon:g}, about a person known to be in the data, an attacker who thought "
        f"there was a {_pct(prior)} chance that her record holds a given value (e.g. a "
        f"diagnosis) can, after seeing the model, be at most {_pct(post)} sure of it: "
        "changing what her record says is removing it and adding another, two steps of ε, "
        f"so the odds of such a fact can move by up to e^(2ε) = {factor}."
    )


def explain_attribute_advantage(epsilon: float) -> str:
    """One plain-English sentence for :func:`attribute_advantage`."""
    adv = attribute_advantage(epsilon)
    return (
        f"At ε = {epsilon:g}, the best possible attacker trying to tell which of two values the "
        f"record of a person known to be in the data holds is right at most {100 * adv:.3g} "
        "percentage points more often when it holds one than when it holds the other (0 = no "
        "better than a coin, 100 = always right)."
    )


def explain_hypothesis_testing(epsilon: float) -> str:
    """One plain-English sentence for :func:`hypothesis_testing_region`."""
    err = balanced_error_rate(epsilon)
    return (
        f"At ε = {epsilon:g}, an attacker guessing whether people are in or out of the data, "
        "if it errs equally often both ways (wrongly accusing people who are not in the data, "
        f"wrongly clearing people who are), gets at least {_pct(err)} of each kind wrong; no "
        "attack reaches the shaded error rates of the plot."
    )


def risk_sentences(epsilon: float, prior: float = 0.5) -> dict[str, str]:
    """All explanations for one ε, keyed like the columns of :func:`risk_table`.

    ``per_record`` (the guarantee is per record: k records → k·ε) comes first; then the
    membership sentences (in or out of the data: ``odds_ratio_bound``,
    ``membership_advantage``, ``posterior_bound``, ``balanced_error_rate``), then those
    about an attribute of a person known to be in the data (two neighbour steps:
    ``attribute_posterior_bound``, with ``prior`` as the prior of the value, and
    ``attribute_advantage``).
    """
    return {
        "per_record": explain_per_record(epsilon),
        "odds_ratio_bound": explain_odds_ratio(epsilon),
        "membership_advantage": explain_membership_advantage(epsilon),
        "posterior_bound": explain_posterior(prior, epsilon),
        "balanced_error_rate": explain_hypothesis_testing(epsilon),
        "attribute_posterior_bound": explain_attribute_posterior(prior, epsilon),
        "attribute_advantage": explain_attribute_advantage(epsilon),
    }


def risk_table(epsilons: Sequence[float], prior: float = 0.5) -> pd.DataFrame:
    """The risk translations of several candidate ε values, one row each.

    Columns: ``epsilon``; membership (in or out of the data): ``odds_ratio_bound``,
    ``membership_advantage``, ``prior``, ``posterior_bound``, ``balanced_error_rate``;
    attribute of a person known to be in the data (two neighbour steps):
    ``attribute_odds_ratio_bound``, ``attribute_advantage``,
    ``attribute_posterior_bound`` (``prior`` is then the prior of the value). Formulas
    of ε only: public. Per record: a person with k records is protected at k·ε.
    """
    eps = _check_epsilon(list(epsilons)).reshape(-1)
    _check_prior(prior)
    return pd.DataFrame(
        {
            "epsilon": eps,
            "odds_ratio_bound": odds_ratio_bound(eps),
            "membership_advantage": membership_advantage(eps),
            "prior": float(prior),
            "posterior_bound": posterior_bound(float(prior), eps),
            "balanced_error_rate": balanced_error_rate(eps),
            "attribute_odds_ratio_bound": attribute_odds_ratio_bound(eps),
            "attribute_advantage": attribute_advantage(eps),
            "attribute_posterior_bound": attribute_posterior_bound(float(prior), eps),
        }
    )


# --- choosing ε from a sweep -------------------------------------------------------------


@dataclass(frozen=True)
class EpsilonChoice:
    """The answer of :func:`smallest_epsilon`: an ε, or None and why.

    Attributes
    ----------
    epsilon : float or None
        Smallest swept ε whose lower band (mean − 1 std) meets the target.
    reason : str
        One or two plain sentences: the answer and how it was reached.
    metric : str
        ``"accuracy"``, ``"auc"``, ``"f1"`` or ``"macro_f1"``.
    acceptable_loss : float
        In points (percentage points of the metric).
    reference_mean : float
        Mean of the non-private reference, as a fraction.
    target : float
        ``reference_mean − acceptable_loss / 100``.
    curve : DataFrame
        The DP curve: ``epsilon``, ``mean``, ``std``, ``lower``, ``upper``, ``meets``.
    config : dict
        The sweep configuration of the curve (mechanism, trees, depth rule, data split).
    reference : str
        Sweep series used as the reference.
    private : bool
        Whether the curve's mechanism is proven DP (the risk translations need it).
    """

    epsilon: float | None
    reason: str
    metric: str
    acceptable_loss: float
    reference_mean: float
    target: float
    curve: pd.DataFrame = field(repr=False)
    config: dict = field(default_factory=dict)
    reference: str = "nonprivate_forest"
    private: bool = True


def _pick(summary: pd.DataFrame, rows: pd.Series, filters: dict) -> pd.DataFrame:
    for key, wanted in filters.items():
        if wanted is None or key not in summary.columns:
            continue
        column = summary[key]
        rows &= column.astype(str) == str(wanted)
    return summary[rows]


def _options(frame: pd.DataFrame) -> str:
    parts = []
    for key in CONFIG_KEYS:
        if key in frame.columns and frame[key].nunique() > 1:
            values = ", ".join(str(v) for v in pd.unique(frame[key]))
            parts.append(f"{key} ({values})")
    return "; ".join(parts)


def select_curve(
    summary: pd.DataFrame,
    *,
    algorithm: str | None = None,
    mechanism: str | None = None,
    n_estimators: int | None = None,
    depth_rule: str | int | None = None,
    data_split: str | None = None,
) -> pd.DataFrame:
    """The DP rows of one configuration of a sweep summary, sorted by ε.

    Raises ValueError when the summary is empty, has no DP rows, or holds several
    configurations and the filters do not pick one (the message lists the choices).
    """
    if summary is None or len(summary) == 0:
        raise ValueError("the sweep is empty: run a sweep over several ε values first")
    missing = {"series", "epsilon"} - set(summary.columns)
    if missing:
        raise ValueError(
            f"this is not a sweep summary (no {', '.join(sorted(missing))} column); pass "
            "SweepResult.summary"
        )
    filters = {
        "algorithm": algorithm,
        "mechanism": mechanism,
        "n_estimators": n_estimators,
        "depth_rule": depth_rule,
        "data_split": data_split,
    }
    dp_all = summary[summary["series"] == SERIES_DP]
    if dp_all.empty:
        raise ValueError("the sweep has no DP-forest rows; run it with at least one ε")
    dp = _pick(summary, summary["series"] == SERIES_DP, filters)
    if dp.empty:
        raise ValueError(
            "no DP curve matches "
            + ", ".join(f"{k}={v}" for k, v in filters.items() if v is not None)
            + f"; the sweep has: {_options(dp_all) or 'one configuration'}"
        )
    keys = [k for k in CONFIG_KEYS if k in dp.columns]
    if len(dp[keys].drop_duplicates()) > 1:
        raise ValueError(
            "the sweep holds several configurations; choose one of each: " + _options(dp)
        )
    return dp.sort_values("epsilon").reset_index(drop=True)


def _reference_row(summary: pd.DataFrame, dp: pd.DataFrame, reference: str) -> pd.Series:
    if reference not in REFERENCE_SERIES:
        raise ValueError(
            f"reference must be one of {', '.join(REFERENCE_SERIES)}, got {reference!r}"
        )
    rows = summary[summary["series"] == reference]
    if reference == "nonprivate_forest":
        # The non-private version of the same algorithm, trees and depth rule (its data
        # split is always "shared": every tree sees all data, as in the paper).
        for key in ("algorithm", "n_estimators", "depth_rule"):
            if key in rows.columns and key in dp.columns:
                rows = rows[rows[key].astype(str) == str(dp[key].iloc[0])]
    if rows.empty:
        raise ValueError(
            f"the sweep has no {reference} reference for this configuration; run the sweep "
            "with references=True (the non-private forest with the same trees and depth)"
        )
    return rows.iloc[0]


def smallest_epsilon(
    summary: pd.DataFrame,
    metric: str = "accuracy",
    acceptable_loss: float = 2.0,
    *,
    reference: str = "nonprivate_forest",
    algorithm: str | None = None,
    mechanism: str | None = None,
    n_estimators: int | None = None,
    depth_rule: str | int | None = None,
    data_split: str | None = None,
) -> EpsilonChoice:
    """Smallest swept ε whose lower ±1-std band is within an acceptable loss of the
    non-private reference.

    With R the reference's mean score and L the acceptable loss in points, the answer
    is the smallest ε of the sweep with::

        mean(ε) − std(ε) ≥ R − L / 100.

    The *lower* band is used so that a fold-to-fold bad draw, not just the average
    model, stays within the loss. The reference's own spread is not subtracted (it is
    the bar, not a model on offer).

    Parameters
    ----------
    summary : DataFrame
        ``SweepResult.summary`` of :func:`dpviz.evaluation.sweep.run_sweep`, with references.
    metric : {"accuracy", "auc", "f1", "macro_f1"}, default="accuracy"
    acceptable_loss : float, default=2.0
        Points (percentage points) the data owner accepts to lose, ≥ 0.
    reference : {"nonprivate_forest", "sklearn_random_forest"}, default="nonprivate_forest"
    algorithm, mechanism, n_estimators, depth_rule, data_split : optional
        Pick one DP curve when the sweep holds several configurations.

    Returns
    -------
    EpsilonChoice
        ``epsilon`` is None, with a ``reason``, when no swept ε meets the target.

    Notes
    -----
    The scores are computed from the raw data (held-out folds): NOT private. They are for
    the data owner and the privacy officer, not for publication. The ε found is a total
    budget of the model; its risk translations hold only when ``private`` is True.
    """
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {metric!r}")
    try:
        loss = float(acceptable_loss)
    except (TypeError, ValueError):
        raise ValueError(
            f"acceptable_loss must be a number of points, got {acceptable_loss!r}"
        ) from None
    if not math.isfinite(loss) or loss < 0:
        raise ValueError(
            f"acceptable_loss must be a number of points ≥ 0 (e.g. 2 for two accuracy points), "
            f"got {acceptable_loss!r}"
        )
    dp = select_curve(
        summary,
        algorithm=algorithm,
        mechanism=mechanism,
        n_estimators=n_estimators,
        depth_rule=depth_rule,
        data_split=data_split,
    )
    ref = _reference_row(summary, dp, reference)
    mean_col, std_col = f"{metric}_mean", f"{metric}_std"
    if mean_col not in summary.columns:
        raise ValueError(f"the sweep summary has no {mean_col} column")
    ref_mean = float(ref[mean_col])
    target = ref_mean - loss / 100.0
    std = dp[std_col].to_numpy(dtype=np.float64) if std_col in dp else np.zeros(len(dp))
    no_spread = bool(np.isnan(std).any())
    std = np.nan_to_num(std, nan=0.0)
    mean = dp[mean_col].to_numpy(dtype=np.float64)
    curve = pd.DataFrame(
        {
            "epsilon": dp["epsilon"].to_numpy(dtype=np.float64),
            "mean": mean,
            "std": std,
            "lower": mean - std,
            "upper": mean + std,
        }
    )
    curve["meets"] = curve["lower"] >= target - _SLACK
    config = {k: dp[k].iloc[0] for k in CONFIG_KEYS if k in dp.columns}
    for key, value in config.items():
        if isinstance(value, np.generic):
            config[key] = value.item()
    private = bool(dp["private"].all()) if "private" in dp.columns else True
    name = METRIC_NAMES[metric]
    ref_text = "non-private forest" if reference == "nonprivate_forest" else "scikit-learn forest"
    bar = (
        f"the {ref_text} scores {100 * ref_mean:.1f}% {name}, so the target is at least "
        f"{100 * target:.1f}% ({loss:g} points less) for mean − 1 std"
    )
    meeting = curve[curve["meets"]]
    if meeting.empty:
        best = curve.loc[curve["lower"].idxmax()]
        reason = (
            f"No swept ε meets it: {bar}; the best lower band is {100 * best['lower']:.1f}% at "
            f"ε = {best['epsilon']:g}. Accept a larger loss, sweep larger ε, or use more data "
            "per tree (fewer trees)."
        )
        chosen = None
    else:
        first = meeting.iloc[0]
        chosen = float(first["epsilon"])
        reason = (
            f"ε = {chosen:g} is the smallest swept value that meets it: {bar}, and at "
            f"ε = {chosen:g} the forest scores {100 * first['mean']:.1f}% ± "
            f"{100 * first['std']:.1f}% (lower band {100 * first['lower']:.1f}%)."
        )
        later_misses = curve[(curve["epsilon"] > chosen) & ~curve["meets"]]
        if len(later_misses):
            reason += (
                " Careful: the larger ε = "
                + ", ".join(f"{e:g}" for e in later_misses["epsilon"])
                + " did not meet it, so the curve is noisy here; more repeats would firm "
                "this up."
            )
    if no_spread:
        reason += " Some points have no standard deviation (one run): their band is the mean."
    if not private:
        reason += (
            f" The mechanism {config.get('mechanism', '')} is NOT differentially private: "
            "no risk translation of this ε holds."
        )
    return EpsilonChoice(
        epsilon=chosen,
        reason=reason,
        metric=metric,
        acceptable_loss=loss,
        reference_mean=ref_mean,
        target=target,
        curve=curve,
        config=config,
        reference=reference,
        private=private,
    )


def candidate_table(
    epsilons: Sequence[float],
    prior: float = 0.5,
    summary: pd.DataFrame | None = None,
    metric: str = "accuracy",
    **config,
) -> pd.DataFrame:
    """Candidate ε values side by side: utility from the sweep and risk translations.

    Utility columns (``<metric>_mean``, ``<metric>_std``, as fractions) come from the
    sweep row of that exact ε (NaN when the sweep did not evaluate it; NOT private,
    computed on held-out data). The risk columns are those of :func:`risk_table`, and are
    NaN for a configuration whose mechanism is not proven DP. ``config`` picks the curve
    as in :func:`select_curve`.
    """
    table = risk_table(epsilons, prior)
    if summary is None:
        return table
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {metric!r}")
    dp = select_curve(summary, **config)
    swept = dp["epsilon"].to_numpy(dtype=np.float64)
    means, stds = [], []
    for eps in table["epsilon"]:
        hit = np.flatnonzero(np.isclose(swept, eps, rtol=1e-9, atol=0))
        means.append(float(dp[f"{metric}_mean"].iloc[hit[0]]) if len(hit) else math.nan)
        stds.append(float(dp[f"{metric}_std"].iloc[hit[0]]) if len(hit) else math.nan)
    table.insert(1, f"{metric}_mean", means)
    table.insert(2, f"{metric}_std", stds)
    private = bool(dp["private"].all()) if "private" in dp.columns else True
    table["private"] = private
    if not private:
        table[list(RISK_COLUMNS)] = math.nan
    return table
