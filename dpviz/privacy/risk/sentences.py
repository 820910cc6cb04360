"""The risk translations of ε in plain sentences, one per formula of
:mod:`dpviz.privacy.risk.formulas`.

Each sentence is a formula of ε (and of a prior) put into words: public. Like the
formulas, it holds only for a mechanism proven ε-DP, at the model's total ε, per record.
"""

from __future__ import annotations

import math

from dpviz.privacy.risk.formulas import (
    attribute_advantage,
    attribute_odds_ratio_bound,
    attribute_posterior_bound,
    balanced_error_rate,
    group_epsilon,
    membership_advantage,
    odds_ratio_bound,
    posterior_bound,
)

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
