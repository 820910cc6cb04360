"""Greedy differentially private decision trees: Friedman & Schuster (2010) and DPEA.

Public face: :class:`DPDecisionTreeClassifier` (``max_operator`` picks the split rule;
``privacy_status`` says when DPEA's MCMC steps only approximate the exponential mechanism).

Modules, one stage each: ``estimator`` (the estimator, calling the others), ``budget`` (the
split of ε and the ledger), ``stopping`` (depth and stopping rules), ``score`` (split
scores and their sensitivity), ``select`` (choosing splits), ``mcmc`` (DPEA's sampler),
``grow`` (growing the tree), ``leaves`` (the leaves' noisy counts), ``predict``
(prediction).

Privacy: ε-DP under add/remove-one neighbours for Friedman–Schuster and for DPEA with
depth ≤ 2 (approximate beyond); every query is booked in the ledger.

Imports dpviz.privacy, dpviz.compiled, dpviz.tabular, the shared tree machinery
(dpviz.models.trees) and dpviz.models.objective; never another model family.
"""

from dpviz.models.greedy.estimator import DPDecisionTreeClassifier

__all__ = ["DPDecisionTreeClassifier"]
