"""How DPBoost splits ε, and the ledger that books it.

Privacy role: bookkeeping from public numbers only (the parameters, the preset and the
schema's class count; never the data). In sequence: the noisy class prior (ε_p, see
:func:`~dpviz.models.forest.estimator.prior_epsilon`; none in the paper preset), the
grown model's noisy feature histograms that place its bin edges (ε_q = 5% of ε when
the schema has a continuous feature, :mod:`~dpviz.models.trees.edges`; 0 otherwise),
then per model ((ε − ε_p − ε_q)/k each for k one-vs-rest models in the paper preset;
one model of ε − ε_p − ε_q for two classes or when the k parts share each tree) its
N_e = ⌈T/T_e⌉ ensembles, ε_t = (ε − ε_p − ε_q)/(k·N_e) each (k = 1 for one model).
The trees of an ensemble read disjoint records, so each spends the ensemble's whole
ε_t (parallel composition): ``split_share``·ε_t on its splits (equally over the
depth's levels) and the rest on its leaves, whose Laplace noise has sensitivity
min(g*/(1+λ), 2g*(1−η)^(t−1)) per part (:func:`leaf_sensitivity`; when k parts share
the tree, the L1 sensitivity of a leaf's k values, min(4g*/(1+λ), 2k·g*(1−η)^(t−1)):
:func:`leaf_l1_sensitivity`; the grown model's clipped Newton leaves of the log-loss:
:func:`~dpviz.models.boosting.newton.newton_sensitivity`, and its levels' split budgets
grow 1.5× per level: :func:`level_epsilons`).
With a prior, the last ensemble has one more cell that no tree reads: the held-out check
spends ε_t on it. The ledger's total is ε.
The sizes are the parameters', or those of the grown model (ε ≥ 5 and a released prior
total ≥ 6,000: :func:`~dpviz.models.boosting.presets.grows`) once the fit has decided.

Functions of a :class:`~dpviz.models.boosting.estimator.DPBoostClassifier` (``model``),
which calls them from its members of the same names (``n_ensembles_``, ``tree_epsilon_``,
``leaf_scale``, ``privacy_ledger``, …): they read its ``epsilon``, ``n_estimators``,
``trees_per_ensemble``, ``max_depth``, ``learning_rate``, ``reg_lambda``, ``preset_``,
``noise_seed`` and, once fitted, ``schema_``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from sklearn.base import BaseEstimator

from dpviz.models.boosting import newton, randomsplit
from dpviz.models.boosting.presets import (
    CAPACITY_RECORDS,
    LARGE_EPSILON,
    PRESET_PARAMETERS,
    PRESETS,
    PRIOR_MAX_SHARE,
    Preset,
    default_sizes,
)
from dpviz.models.objective import MACRO_F1
from dpviz.models.trees.edges import EDGE_CELLS, EDGE_SHARE
from dpviz.models.trees.prior import decimal_times, prior_epsilon
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_inferred_schema, book_noise_mode

G_STAR = 1.0  # the largest |gradient| of the square loss at F = 0 for labels in [-1, 1]
# Boosted from the prior, a record's k one-vs-rest gradients F − y (labels ±1) are
# 2·share_c for the other classes and 2·share_y − 2 for its own: an L1 norm of
# 4(1 − share_y) ≤ 4·g*, whatever k. Shared trees scale each record's to that bound.
SHARED_L1_BOUND = 4 * G_STAR
# macro_f1 with little to learn from (issue 28): with ``objective="macro_f1"`` on two
# classes and every size left at the default preset's, the fit is SMALL_MACRO_F1 below
# this ε (decided from the parameters), and from it on when the released prior counts
# fewer than MACRO_F1_RECORDS records (decided after the prior, as the grown model is;
# the prior's ε is the same 10% of ε either way from ε = 0.95 on).
MACRO_F1_EPSILON = 1.0
MACRO_F1_RECORDS = CAPACITY_RECORDS
# Its prior's share of ε (no floor: the threshold histogram, not the prior, names what a
# record is predicted) and whether it holds out records for the check.
MACRO_F1_PRIOR_SHARE = 0.1
MACRO_F1_CHECK = False
SMALL_MACRO_F1 = replace(
    PRESETS["default"],
    n_estimators=1,
    trees_per_ensemble=1,
    max_depth=2,
    reg_lambda=1000.0,
    prior_share=MACRO_F1_PRIOR_SHARE,
)


def _macro_f1_default(model: BaseEstimator) -> bool:
    """``objective="macro_f1"``, two classes (the schema's, when set) and the default
    preset with every size of :data:`~dpviz.models.boosting.presets.PRESET_PARAMETERS`
    at its value (public parameters and the public schema only)."""
    if getattr(model, "objective", None) != MACRO_F1 or model.preset != "default":
        return False
    if hasattr(model, "schema_") and len(model.schema_.classes) != 2:
        return False
    return default_sizes(model)


def small_macro_f1(model: BaseEstimator) -> bool:
    """Whether the fit is :data:`SMALL_MACRO_F1`: :func:`_macro_f1_default` and ε
    below :data:`MACRO_F1_EPSILON`, or the fit found the released prior's total below
    :data:`MACRO_F1_RECORDS` (``small_``, :func:`small_by_records`)."""
    if not _macro_f1_default(model):
        return False
    if getattr(model, "small_", False):
        return True
    try:
        return float(model.epsilon) < MACRO_F1_EPSILON
    except (TypeError, ValueError):
        return False


def small_by_records(model: BaseEstimator, n_hat: float) -> bool:
    """Whether the released prior's total ``n_hat`` (clipped noisy counts: a booked
    release, so this is post-processing) makes the fit :data:`SMALL_MACRO_F1` from
    ε = :data:`MACRO_F1_EPSILON` on: :func:`_macro_f1_default` and ``n_hat`` below
    :data:`MACRO_F1_RECORDS`. (Below that ε the parameters alone decide.)"""
    return _macro_f1_default(model) and n_hat < MACRO_F1_RECORDS


def preset_of(model: BaseEstimator) -> Preset:
    """The method's choices of the fit: the grown model's (``grown_``), the small
    macro_f1 model's (:func:`small_macro_f1`) or those of ``preset``."""
    if getattr(model, "grown_", False):
        return LARGE_EPSILON
    if getattr(model, "random_", False):
        return randomsplit.RANDOM_SPLITS
    if small_macro_f1(model):
        return SMALL_MACRO_F1
    return PRESETS[model.preset]


def subset_shares(learning_rate: float, trees_per_ensemble: int) -> np.ndarray:
    """The share of the records each tree t = 0..T_e−1 of an ensemble expects:
    η(1−η)^t / (1 − (1−η)^T_e) (Li et al. 2020; they sum to 1)."""
    eta = float(learning_rate)
    t_e = int(trees_per_ensemble)
    return eta * (1 - eta) ** np.arange(t_e) / (1 - (1 - eta) ** t_e)


def size(model: BaseEstimator, name: str):
    """The value of parameter ``name`` the fit used: the grown model's
    (:data:`~dpviz.models.boosting.presets.LARGE_EPSILON`) when the fit grew it
    (``grown_``, from ε and the released prior's total), else the parameter."""
    if getattr(model, "grown_", False):
        return getattr(LARGE_EPSILON, name)
    if getattr(model, "random_", False):
        return randomsplit.settings(float(model.epsilon))[name]
    if small_macro_f1(model):
        return getattr(SMALL_MACRO_F1, name)
    return getattr(model, name)


def fitted_parameters(model: BaseEstimator) -> dict:
    """The parameters the fit used, by name (those of the grown model, else the
    parameters themselves)."""
    return {name: size(model, name) for name in PRESET_PARAMETERS}


def n_ensembles(model: BaseEstimator) -> int:
    """N_e = ⌈T/T_e⌉: how many ensembles read the same records."""
    return math.ceil(model.n_estimators_ / model.trees_per_ensemble_)


def n_targets(model: BaseEstimator) -> int:
    """How many one-vs-rest models split ε sequentially: 1 for two classes or
    when the parts share their trees (``multiclass="shared"``), else k."""
    return 1 if model.shares_trees_ else model.n_outputs_


def n_outputs(model: BaseEstimator) -> int:
    """How many one-vs-rest parts the model has: 1 for two classes, else k."""
    k = len(model.schema_.classes) if hasattr(model, "schema_") else 2
    return 1 if k == 2 else k


def shares_trees(model: BaseEstimator) -> bool:
    """Whether each tree serves every part, boosted from the released prior (k > 2
    and ``multiclass="shared"``)."""
    return model.n_outputs_ > 1 and model.preset_.multiclass == "shared"


def gradient_l1_bound(model: BaseEstimator) -> float:
    """B, the bound on the L1 norm of one record's gradients over the parts a tree
    serves: g* for one part (clipped to [−g*, g*]), 4·g* for k shared parts
    (scaled to it: :func:`~dpviz.models.boosting.ensemble.bound_l1`); on the log-loss
    (:func:`is_logistic`) 1 for two classes and 2 over k softmax parts."""
    if is_logistic(model):
        return newton.gradient_l1_bound(model.n_outputs_)
    return SHARED_L1_BOUND if model.shares_trees_ else G_STAR


def is_logistic(model: BaseEstimator) -> bool:
    """Whether the fit boosts the log-loss with Newton leaves (the grown model)."""
    return model.preset_.loss == "logistic"


def leaf_l1_sensitivity(model: BaseEstimator, iteration: int) -> float:
    """The L1 sensitivity of a leaf's released values in tree ``iteration``:
    min(B/(1+λ), 2·parts·g*(1−η)^(t−1)), B = :attr:`gradient_l1_bound_` (Lemma 2
    in L1: adding a record of ‖g‖₁ ≤ B to a leaf of n records moves −Σg/(n+λ) by
    ≤ B(2n+λ)/((n+λ)(n+1+λ)) ≤ B/(1+λ); the clip keeps each of the parts' values
    in ±g*(1−η)^(t−1)). For one part, :meth:`leaf_sensitivity`. On the log-loss,
    the clipped Newton values' :func:`~dpviz.models.boosting.newton.newton_sensitivity`
    (every tree alike)."""
    if getattr(model, "random_", False):
        return randomsplit.GRADIENT_L1  # of a leaf's K gradient sums (randomsplit)
    if is_logistic(model):
        return newton.newton_sensitivity(model.n_outputs_, float(model.reg_lambda_))
    parts = model.n_outputs_ if model.shares_trees_ else 1
    lam = float(model.reg_lambda_)
    return min(model.gradient_l1_bound_ / (1 + lam), 2 * parts * model.leaf_bound(iteration))


def leaf_scale(model: BaseEstimator, iteration: int) -> float:
    """The Laplace scale of each released leaf value of tree ``iteration``: the
    L1 sensitivity of a leaf's values (:meth:`leaf_l1_sensitivity`) over ε_leaf."""
    return model.leaf_l1_sensitivity(iteration) / model.leaf_epsilon_


def prior_epsilon_of(model: BaseEstimator) -> float:
    """ε of the noisy class histogram (0 in the paper preset; a plain share of ε in
    :data:`SMALL_MACRO_F1`)."""
    if small_macro_f1(model):
        return decimal_times(MACRO_F1_PRIOR_SHARE, float(model.epsilon))
    return prior_epsilon(float(model.epsilon), model.preset_.prior_share, PRIOR_MAX_SHARE)


def edge_epsilon(model: BaseEstimator) -> float:
    """ε_q of the noisy feature histograms that place the bin edges: ``EDGE_SHARE``·ε
    when the fit's choices split at quantiles (the grown model) and the schema has a
    continuous feature, else 0 (equal-width public bins, nothing spent)."""
    if model.preset_.split_points != "quantile" or not hasattr(model, "schema_"):
        return 0.0
    return EDGE_SHARE * float(model.epsilon) if model.schema_.continuous else 0.0


def class_epsilon(model: BaseEstimator) -> float:
    """ε of each one-vs-rest model: (ε − ε_prior − ε_edges − ε_th) / k (k = 1 for two
    classes; ε_th the macro_f1 threshold's score histogram, :mod:`.threshold`)."""
    rest = float(model.epsilon) - model.prior_epsilon_ - edge_epsilon(model)
    rest -= model.threshold_epsilon_
    return rest / model._n_targets()


def tree_epsilon(model: BaseEstimator) -> float:
    """ε_t of every tree: its ensemble's budget, class_epsilon_ / N_e."""
    return model.class_epsilon_ / model.n_ensembles_


def split_epsilon(model: BaseEstimator) -> float | np.ndarray:
    """ε of each level of splits of a tree: split_share · ε_t / depth, or one per
    level (:func:`level_epsilons`)."""
    return level_epsilons(model, model.tree_epsilon_)


def level_epsilons(model: BaseEstimator, eps_tree: float) -> float | np.ndarray:
    """ε of each level d = 0..depth−1 of a tree's splits (``split_share``·``eps_tree``
    in all, sequential over the levels; the nodes of a level hold disjoint records):
    equal, ``split_share``·ε_t/depth, or ∝ r^d for the preset's ``level_growth`` r ≠ 1
    (a level-d node holds about 2^−d of the tree's records, so deeper levels get more).
    Public settings only."""
    share = model.preset_.split_share
    growth = float(model.preset_.level_growth)
    if growth == 1:
        return share * eps_tree / model.max_depth_
    weights = growth ** np.arange(model.max_depth_)
    return share * eps_tree * weights / weights.sum()


def leaf_epsilon(model: BaseEstimator) -> float:
    """ε of a tree's leaf values: (1 − split_share) · ε_t."""
    return (1 - model.preset_.split_share) * model.tree_epsilon_


def leaf_bound(model: BaseEstimator, iteration: int) -> float:
    """Leaf clip of tree ``iteration`` (1-based): g*(1−η)^(t−1) (geometric), or g*
    for every tree (the preset's ``leaf_clip`` "flat", large ε); on the log-loss
    :data:`~dpviz.models.boosting.newton.NEWTON_CLIP` (log-odds units)."""
    if is_logistic(model):
        return newton.NEWTON_CLIP
    if model.preset_.leaf_clip == "flat":
        return G_STAR
    return G_STAR * (1 - float(model.learning_rate_)) ** (iteration - 1)


def leaf_sensitivity(model: BaseEstimator, iteration: int) -> float:
    """Laplace sensitivity of tree ``iteration``'s leaves: min(g*/(1+λ), 2g*(1−η)^(t−1))."""
    return min(G_STAR / (1 + float(model.reg_lambda_)), 2 * model.leaf_bound(iteration))


def ensemble_shares(model: BaseEstimator, n_trees: int, holdout: bool = False) -> np.ndarray:
    """The expected share of the records of each of an ensemble's ``n_trees`` trees,
    and with ``holdout`` of one more cell that no tree reads (equal to a tree's)."""
    if model.preset_.subsets == "equal":
        return np.full(n_trees + holdout, 1.0 / (n_trees + holdout))
    shares = subset_shares(model.learning_rate_, n_trees)
    if holdout:
        shares = np.append(shares * n_trees / (n_trees + 1), 1 / (n_trees + 1))
    return shares


def checks_trees(model: BaseEstimator) -> bool:
    """Whether the fit holds out records to check the trees against the class prior
    (with a prior, i.e. the default preset)."""
    if small_macro_f1(model) and not MACRO_F1_CHECK:
        return False
    if getattr(model, "random_", False):
        return False  # the random-split mode holds no records out (randomsplit)
    return model.prior_epsilon_ > 0


def ensemble_size(model: BaseEstimator, ensemble: int) -> int:
    """How many trees ensemble ``ensemble`` (0-based) holds: T_e, or fewer in the last."""
    return min(
        model.trees_per_ensemble_, model.n_estimators_ - ensemble * model.trees_per_ensemble_
    )


def score_noise_variance(model: BaseEstimator) -> float:
    """The variance the leaf noise adds to a record's trees' score η·Σ_t r_t: one
    Laplace(b_t) per tree, b_t = leaf sensitivity / ε_leaf (public)."""
    eta = float(model.learning_rate_)
    scales = [model.leaf_scale(t) for t in range(1, model.n_estimators_ + 1)]
    return eta**2 * sum(2 * b**2 for b in scales)


def boost_ledger(model: BaseEstimator, schema_inferred: bool) -> PrivacyLedger:
    """The ledger this configuration produces (it does not depend on the data)."""
    ledger = PrivacyLedger()
    k = len(model.schema_.classes) if hasattr(model, "schema_") else 2
    n_ens = model.n_ensembles_
    eps_tree = model.tree_epsilon_
    share = model.preset_.split_share
    book_inferred_schema(ledger, schema_inferred)
    book_noise_mode(ledger, model.noise_seed is not None)
    if model.prior_epsilon_ > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy class histogram, the prior the trees fall back on (discrete Laplace)",
                "all records",
                model.prior_epsilon_,
            )
        )
    eps_edges = edge_epsilon(model)
    if eps_edges > 0:
        s = len(model.schema_.continuous)
        ledger.add_sequential(
            LedgerEntry(
                f"noisy histograms of the {s} continuous feature{'s' * (s > 1)} over "
                f"{EDGE_CELLS} public cells each, ε = {eps_edges / s:g} per feature: the "
                "split candidates' bin edges (discrete Laplace)",
                "all records",
                eps_edges,
            )
        )
    if getattr(model, "random_", False):
        randomsplit.book_trees(ledger, model)  # T sequential trees on every record
        return ledger
    if k == 2:
        models = ["the model"]
    elif model.shares_trees_:
        models = [f"the model (each tree serves all {k} one-vs-rest parts)"]
    else:
        models = [f"the one-vs-rest model of class {c + 1}" for c in range(k)]
    levels = model.split_epsilon_
    if np.ndim(levels):
        how = "report-noisy-max" if model.preset_.selection == "exponential" else "exp. mech."
        each = f"ε = {', '.join(f'{e:.4g}' for e in levels)} from the root down; {how}"
    else:
        each = f"ε = {levels:g} each"
    split_text = (
        f"{_fraction(share)} (ε = {share * eps_tree:g}) for splits over "
        f"{model.max_depth_} level{'s' * (model.max_depth_ > 1)} "
        f"({each}), {_fraction(1 - share)} "
        f"(ε = {model.leaf_epsilon_:g}) for the leaves"
        + (f" ({k} values each)" if model.shares_trees_ else "")
        + (
            f", clipped Newton values of the log-loss of L1 sensitivity "
            f"{model.leaf_l1_sensitivity(1):.4g} (Laplace)"
            if is_logistic(model)
            else ""
        )
    )
    for index, part in enumerate(models):
        for e in range(n_ens):
            trees = min(
                model.trees_per_ensemble_, model.n_estimators_ - e * model.trees_per_ensemble_
            )
            # One tree and no held-out records (the small macro_f1 model): it reads all.
            alone = trees == 1 and n_ens == 1 and not model.checks_trees_
            entries = [
                LedgerEntry(
                    f"tree {t + 1} of ensemble {e + 1} ({part})",
                    "every record" if alone else f"disjoint subset {t + 1}",
                    eps_tree,
                )
                for t in range(trees)
            ]
            summary = (
                f"Ensemble {e + 1} of {part}: one tree on every record, ε = {eps_tree:g}: "
                if alone
                else f"Ensemble {e + 1} of {part}: {trees} trees on disjoint subsets, "
                f"each ε = {eps_tree:g}: "
            ) + split_text
            if model.checks_trees_ and e == n_ens - 1 and index == len(models) - 1:
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
    eps_th = model.threshold_epsilon_
    if eps_th > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy histogram of the training records' scores per class over "
                + (
                    f"the {model.threshold_bins_} leaves of the model's one tree"
                    if model.n_estimators_ == 1 and model.n_outputs_ == 1
                    else f"{model.threshold_bins_} bins of the model's score range"
                )
                + ": the macro_f1 threshold (discrete Laplace)",
                "all records",
                eps_th,
            )
        )
    return ledger


def _fraction(share: float) -> str:
    names = {0.25: "¼", 0.5: "½", 0.75: "¾"}
    return names.get(round(share, 12), f"{100 * share:g}%")
