"""DPBoost: differentially private gradient-boosted trees (Li et al. 2020).

Public face: :class:`DPBoostClassifier` and its parameter presets (:data:`PRESETS`).

Modules, one stage each: ``estimator`` (the estimator, calling the others), ``presets``
(the presets and parameter checks), ``budget`` (the split of ε and the ledger),
``ensemble`` (dealing records to trees, boosting), ``tree`` (one DP regression tree,
routing), ``check`` (the class prior and the held-out check), ``predict`` (prediction; the
NOT private diagnostics), ``edges`` (the grown model's bin edges from noisy quantiles),
``newton`` (the grown model's log-loss: gradients, hessians, start score and the Newton
leaves' sensitivity).

Privacy: ε-DP under add/remove-one neighbours (the proof is the docstring of
:mod:`dpviz.models.boosting.estimator`); every release is booked in the ledger.

Imports dpviz.privacy, dpviz.compiled, dpviz.tabular, the shared tree machinery
(dpviz.models.trees) and dpviz.models.objective; never another model family.
"""

from dpviz.models.boosting.estimator import PRESETS, DPBoostClassifier

__all__ = ["PRESETS", "DPBoostClassifier"]
