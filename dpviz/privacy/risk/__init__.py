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

The package's parts: :mod:`~dpviz.privacy.risk.formulas` (the bounds and the table of
them), :mod:`~dpviz.privacy.risk.sentences` (the same in words) and
:mod:`~dpviz.privacy.risk.epsilon_choice` (choosing ε from a sweep). This face re-exports
their public names.

References
----------
Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015.
Dong, Roth & Su, "Gaussian differential privacy", JRSS B 2022 (trade-off functions,
group privacy).
Wasserman & Zhou, "A statistical framework for differential privacy", JASA 2010.
"""

from dpviz.privacy.risk.epsilon_choice import (
    CONFIG_KEYS,
    METRIC_NAMES,
    REFERENCE_SERIES,
    SERIES_DP,
    EpsilonChoice,
    candidate_table,
    select_curve,
    smallest_epsilon,
)
from dpviz.privacy.risk.formulas import (
    RISK_COLUMNS,
    ArrayLike,
    attribute_advantage,
    attribute_odds_ratio_bound,
    attribute_posterior_bound,
    balanced_error_rate,
    group_epsilon,
    hypothesis_testing_region,
    membership_advantage,
    min_false_negative_rate,
    odds_ratio_bound,
    posterior_bound,
    risk_table,
)
from dpviz.privacy.risk.sentences import (
    explain_attribute_advantage,
    explain_attribute_posterior,
    explain_hypothesis_testing,
    explain_membership_advantage,
    explain_odds_ratio,
    explain_per_record,
    explain_posterior,
    risk_sentences,
)

__all__ = [
    "ArrayLike",
    "CONFIG_KEYS",
    "EpsilonChoice",
    "METRIC_NAMES",
    "REFERENCE_SERIES",
    "RISK_COLUMNS",
    "SERIES_DP",
    "attribute_advantage",
    "attribute_odds_ratio_bound",
    "attribute_posterior_bound",
    "balanced_error_rate",
    "candidate_table",
    "explain_attribute_advantage",
    "explain_attribute_posterior",
    "explain_hypothesis_testing",
    "explain_membership_advantage",
    "explain_odds_ratio",
    "explain_per_record",
    "explain_posterior",
    "group_epsilon",
    "hypothesis_testing_region",
    "membership_advantage",
    "min_false_negative_rate",
    "odds_ratio_bound",
    "posterior_bound",
    "risk_sentences",
    "risk_table",
    "select_curve",
    "smallest_epsilon",
]
