"""How DPBoost splits ε, and the ledger that books it.

Privacy role: bookkeeping from public numbers only (the parameters, the preset and the
schema's class count; never the data). In sequence: the noisy class prior (ε_p, see
:func:`~dpviz.models.forest.estimator.prior_epsilon`; none in the paper preset), then per model
((ε − ε_p)/k each for k one-vs-rest models in the paper preset; one model of ε − ε_p
for two classes or when the k parts share each tree) its N_e = ⌈T/T_e⌉ ensembles,
ε_t = (ε − ε_p)/(k·N_e) each (k = 1 for one model). The trees of an ensemble read disjoint records,
so each spends the ensemble's whole ε_t (parallel composition): ``split_share``·ε_t on
its splits (equally over the depth's levels) and the rest on its leaves, whose Laplace
noise has sensitivity min(g*/(1+λ), 2g*(1−η)^(t−1)) per part
(:meth:`_BoostBudget.leaf_sensitivity`; when k parts share the tree, the L1
sensitivity of a leaf's k values, min(4g*/(1+λ), 2k·g*(1−η)^(t−1)):
:meth:`_BoostBudget.leaf_l1_sensitivity`).
With a prior, the last ensemble has one more cell that no tree reads: the held-out check
spends ε_t on it. The ledger's total is ε.
The sizes are the parameters', or those of the grown model (ε ≥ 5 and a released prior
total ≥ 6,000: :func:`~dpviz.models.boosting.presets.grows`) once the fit has decided.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.models.boosting.presets import LARGE_EPSILON, PRESET_PARAMETERS
from dpviz.models.trees.prior import prior_epsilon
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_inferred_schema, book_noise_mode

G_STAR = 1.0  # the largest |gradient| of the square loss at F = 0 for labels in [-1, 1]
# The prior's ε is 10% of ε, at least 0.095 and at most 95% of ε (the forests': 0.08 and
# 80%). At ε = 0.1 the trees' 0.02 never passed the held-out check on any of the 11 shared
# datasets (6 runs), while the prior at 0.08 named votes' minority the majority in 0.4% of
# folds (2 of 500; one such fold puts the 5-fold mean 4.4 points below the majority) and
# swapped abalone's two largest classes (16.5% / 15.2%) in 4%; at 0.095 the exact
# discrete Laplace tails of those leads (79 and 44 records) fall from 0.39% to 0.14% and
# from 4.2% to 2.5%.
PRIOR_MAX_SHARE = 0.95
# Boosted from the prior, a record's k one-vs-rest gradients F − y (labels ±1) are
# 2·share_c for the other classes and 2·share_y − 2 for its own: an L1 norm of
# 4(1 − share_y) ≤ 4·g*, whatever k. Shared trees scale each record's to that bound.
SHARED_L1_BOUND = 4 * G_STAR


def subset_shares(learning_rate: float, trees_per_ensemble: int) -> np.ndarray:
    """The share of the records each tree t = 0..T_e−1 of an ensemble expects:
    η(1−η)^t / (1 − (1−η)^T_e) (Li et al. 2020; they sum to 1)."""
    eta = float(learning_rate)
    t_e = int(trees_per_ensemble)
    return eta * (1 - eta) ** np.arange(t_e) / (1 - (1 - eta) ** t_e)


class _BoostBudget:
    """How a :class:`~dpviz.models.boosting.estimator.DPBoostClassifier` splits ε, from its
    parameters and the public schema only (a mixin: it reads ``epsilon``,
    ``n_estimators``, ``trees_per_ensemble``, ``max_depth``, ``learning_rate``,
    ``reg_lambda``, ``preset_``, ``noise_seed`` and, once fitted, ``schema_``)."""

    def _size(self, name: str):
        """The value of parameter ``name`` the fit used: the grown model's
        (:data:`~dpviz.models.boosting.presets.LARGE_EPSILON`) when the fit grew it
        (``grown_``, from ε and the released prior's total), else the parameter."""
        if getattr(self, "grown_", False):
            return getattr(LARGE_EPSILON, name)
        return getattr(self, name)

    @property
    def n_estimators_(self) -> int:
        """T, the trees per part the fit grows (:meth:`_size`)."""
        return self._size("n_estimators")

    @property
    def trees_per_ensemble_(self) -> int:
        """T_e (:meth:`_size`)."""
        return self._size("trees_per_ensemble")

    @property
    def max_depth_(self) -> int:
        """The trees' depth (:meth:`_size`)."""
        return self._size("max_depth")

    @property
    def learning_rate_(self) -> float:
        """η (:meth:`_size`)."""
        return self._size("learning_rate")

    @property
    def reg_lambda_(self) -> float:
        """λ (:meth:`_size`)."""
        return self._size("reg_lambda")

    @property
    def n_bins_(self) -> int:
        """The public bins per continuous feature (:meth:`_size`)."""
        return self._size("n_bins")

    @property
    def fitted_parameters_(self) -> dict:
        """The parameters the fit used, by name (those of the grown model, else the
        parameters themselves)."""
        return {name: self._size(name) for name in PRESET_PARAMETERS}

    @property
    def n_ensembles_(self) -> int:
        """N_e = ⌈T/T_e⌉: how many ensembles read the same records."""
        return math.ceil(self.n_estimators_ / self.trees_per_ensemble_)

    def _n_targets(self) -> int:
        """How many one-vs-rest models split ε sequentially: 1 for two classes or
        when the parts share their trees (``multiclass="shared"``), else k."""
        return 1 if self.shares_trees_ else self.n_outputs_

    @property
    def n_outputs_(self) -> int:
        """How many one-vs-rest parts the model has: 1 for two classes, else k."""
        k = len(self.schema_.classes) if hasattr(self, "schema_") else 2
        return 1 if k == 2 else k

    @property
    def shares_trees_(self) -> bool:
        """Whether each tree serves every part, boosted from the released prior (k > 2
        and ``multiclass="shared"``)."""
        return self.n_outputs_ > 1 and self.preset_.multiclass == "shared"

    @property
    def gradient_l1_bound_(self) -> float:
        """B, the bound on the L1 norm of one record's gradients over the parts a tree
        serves: g* for one part (clipped to [−g*, g*]), 4·g* for k shared parts
        (scaled to it: :func:`~dpviz.models.boosting.ensemble.bound_l1`)."""
        return SHARED_L1_BOUND if self.shares_trees_ else G_STAR

    def leaf_l1_sensitivity(self, iteration: int) -> float:
        """The L1 sensitivity of a leaf's released values in tree ``iteration``:
        min(B/(1+λ), 2·parts·g*(1−η)^(t−1)), B = :attr:`gradient_l1_bound_` (Lemma 2
        in L1: adding a record of ‖g‖₁ ≤ B to a leaf of n records moves −Σg/(n+λ) by
        ≤ B(2n+λ)/((n+λ)(n+1+λ)) ≤ B/(1+λ); the clip keeps each of the parts' values
        in ±g*(1−η)^(t−1)). For one part, :meth:`leaf_sensitivity`."""
        parts = self.n_outputs_ if self.shares_trees_ else 1
        lam = float(self.reg_lambda_)
        return min(self.gradient_l1_bound_ / (1 + lam), 2 * parts * self.leaf_bound(iteration))

    def leaf_scale(self, iteration: int) -> float:
        """The Laplace scale of each released leaf value of tree ``iteration``: the
        L1 sensitivity of a leaf's values (:meth:`leaf_l1_sensitivity`) over ε_leaf."""
        return self.leaf_l1_sensitivity(iteration) / self.leaf_epsilon_

    @property
    def prior_epsilon_(self) -> float:
        """ε of the noisy class histogram (0 in the paper preset)."""
        return prior_epsilon(float(self.epsilon), self.preset_.prior_share, PRIOR_MAX_SHARE)

    @property
    def class_epsilon_(self) -> float:
        """ε of each one-vs-rest model: (ε − ε_prior) / k (k = 1 for two classes)."""
        return (float(self.epsilon) - self.prior_epsilon_) / self._n_targets()

    @property
    def tree_epsilon_(self) -> float:
        """ε_t of every tree: its ensemble's budget, class_epsilon_ / N_e."""
        return self.class_epsilon_ / self.n_ensembles_

    @property
    def split_epsilon_(self) -> float:
        """ε of each level of splits of a tree: split_share · ε_t / depth."""
        return self.preset_.split_share * self.tree_epsilon_ / self.max_depth_

    @property
    def leaf_epsilon_(self) -> float:
        """ε of a tree's leaf values: (1 − split_share) · ε_t."""
        return (1 - self.preset_.split_share) * self.tree_epsilon_

    def leaf_bound(self, iteration: int) -> float:
        """Leaf clip of tree ``iteration`` (1-based): g*(1−η)^(t−1) (geometric), or g*
        for every tree (the preset's ``leaf_clip`` "flat", large ε)."""
        if self.preset_.leaf_clip == "flat":
            return G_STAR
        return G_STAR * (1 - float(self.learning_rate_)) ** (iteration - 1)

    def leaf_sensitivity(self, iteration: int) -> float:
        """Laplace sensitivity of tree ``iteration``'s leaves: min(g*/(1+λ), 2g*(1−η)^(t−1))."""
        return min(G_STAR / (1 + float(self.reg_lambda_)), 2 * self.leaf_bound(iteration))

    def ensemble_shares(self, n_trees: int, holdout: bool = False) -> np.ndarray:
        """The expected share of the records of each of an ensemble's ``n_trees`` trees,
        and with ``holdout`` of one more cell that no tree reads (equal to a tree's)."""
        if self.preset_.subsets == "equal":
            return np.full(n_trees + holdout, 1.0 / (n_trees + holdout))
        shares = subset_shares(self.learning_rate_, n_trees)
        if holdout:
            shares = np.append(shares * n_trees / (n_trees + 1), 1 / (n_trees + 1))
        return shares

    @property
    def checks_trees_(self) -> bool:
        """Whether the fit holds out records to check the trees against the class prior
        (with a prior, i.e. the default preset)."""
        return self.prior_epsilon_ > 0

    def _ensemble_size(self, ensemble: int) -> int:
        """How many trees ensemble ``ensemble`` (0-based) holds: T_e, or fewer in the last."""
        return min(
            self.trees_per_ensemble_, self.n_estimators_ - ensemble * self.trees_per_ensemble_
        )

    @property
    def score_noise_variance_(self) -> float:
        """The variance the leaf noise adds to a record's trees' score η·Σ_t r_t: one
        Laplace(b_t) per tree, b_t = leaf sensitivity / ε_leaf (public)."""
        eta = float(self.learning_rate_)
        scales = [self.leaf_scale(t) for t in range(1, self.n_estimators_ + 1)]
        return eta**2 * sum(2 * b**2 for b in scales)

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        ledger = PrivacyLedger()
        k = len(self.schema_.classes) if hasattr(self, "schema_") else 2
        n_ens = self.n_ensembles_
        eps_tree = self.tree_epsilon_
        share = self.preset_.split_share
        book_inferred_schema(ledger, schema_inferred)
        book_noise_mode(ledger, self.noise_seed is not None)
        if self.prior_epsilon_ > 0:
            ledger.add_sequential(
                LedgerEntry(
                    "noisy class histogram, the prior the trees fall back on (discrete Laplace)",
                    "all records",
                    self.prior_epsilon_,
                )
            )
        if k == 2:
            models = ["the model"]
        elif self.shares_trees_:
            models = [f"the model (each tree serves all {k} one-vs-rest parts)"]
        else:
            models = [f"the one-vs-rest model of class {c + 1}" for c in range(k)]
        split_text = (
            f"{_fraction(share)} (ε = {share * eps_tree:g}) for splits over "
            f"{self.max_depth_} level{'s' * (self.max_depth_ > 1)} "
            f"(ε = {self.split_epsilon_:g} each), {_fraction(1 - share)} "
            f"(ε = {self.leaf_epsilon_:g}) for the leaves"
            + (f" ({k} values each)" if self.shares_trees_ else "")
        )
        for index, model in enumerate(models):
            for e in range(n_ens):
                trees = min(
                    self.trees_per_ensemble_, self.n_estimators_ - e * self.trees_per_ensemble_
                )
                entries = [
                    LedgerEntry(
                        f"tree {t + 1} of ensemble {e + 1} ({model})",
                        f"disjoint subset {t + 1}",
                        eps_tree,
                    )
                    for t in range(trees)
                ]
                summary = (
                    f"Ensemble {e + 1} of {model}: {trees} trees on disjoint subsets, "
                    f"each ε = {eps_tree:g}: {split_text}"
                )
                if self.checks_trees_ and e == n_ens - 1 and index == len(models) - 1:
                    entries.append(
                        LedgerEntry(
                            "check of the trees against the class prior on held-out records "
                            "(noisy count, discrete Laplace)",
                            f"disjoint subset {trees + 1} (held out from every tree of "
                            f"ensemble {e + 1})",
                            eps_tree,
                        )
                    )
                    summary += (
                        f"; a held-out disjoint subset answers one noisy count, ε = "
                        f"{eps_tree:g}: do the trees beat the class prior?"
                    )
                ledger.add_parallel(entries, summary=summary)
        return ledger


def _fraction(share: float) -> str:
    names = {0.25: "¼", 0.5: "½", 0.75: "¾"}
    return names.get(round(share, 12), f"{100 * share:g}%")
