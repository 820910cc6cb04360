"""The risk translations of pure ε-DP as formulas: bounds on what an attacker who sees the
released model can learn about one record, as functions of ε (and of a prior).

Formulas of ε only, never a statistic of anybody's data: public. They hold for a
mechanism proven ε-DP under add/remove-one neighbours (SPEC §1), read at the model's
total ε from its ledger, per record (a person with k records is protected at k·ε); see
:mod:`dpviz.privacy.risk` for the two attackers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

ArrayLike = float | Sequence[float] | np.ndarray

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
