"""DPBoost: differentially private gradient-boosted trees (Li et al., AAAI 2020).

Square loss on labels mapped to {-1, +1}. Trees are grown inside an *ensemble of
ensembles*: T_e trees per ensemble read disjoint subsets of the records (parallel
composition), ⌈T/T_e⌉ ensembles read the same records (sequential). Each tree draws its
splits by the exponential mechanism over public candidates and releases its leaf values,
clipped geometrically to g*(1−η)^(t−1), with Laplace noise of sensitivity
min(g*/(1+λ), 2g*(1−η)^(t−1)). More than two classes: one-vs-rest parts, which by
default share each tree (its splits; one released value per part and leaf; each
record's gradients bounded in L1 over the parts), in the paper each with its own trees
and an even share of the budget.

Two presets (``preset``):

- ``"default"`` — what works while keeping the proof: λ = 50, depth 3, η = 0.1, one
  ensemble of 10 trees with equal subsets, gradients clipped to [−g*, g*], ¾ of each
  tree's ε on splits and ¼ on its leaves, one-hot split candidates for discrete features,
  splits scored by the absolute gradient sums Σ_sides |Σg| (sensitivity g*) on
  gradients centred by the class prior, and for k > 2 classes one tree shared by the k
  one-vs-rest parts, boosted from the prior, each record's k gradients bounded in L1
  by 4·g*; and a graceful fallback: a noisy class prior (10% of ε, at least 0.095, at
  most 95% of ε) and a held-out check of the trees against it, so that noise-only trees
  leave the prior's (majority) class in place. **Capacity that grows with ε:** when
  ε ≥ 5 and the released prior counts at least 6,000 records (and no size was set by
  hand), the fit grows the model to
  :data:`~dpviz.models.boosting.presets.LARGE_EPSILON`: two ensembles of 10 trees,
  depth 5, η = 0.3, λ = 20, 32 bins and a flat leaf clip g* (``grown_``; the sizes it
  used are ``n_estimators_``, ``max_depth_``, … and ``fitted_parameters_``), whose
  continuous features split at bin edges from noisy quantiles: a booked release of 5%
  of ε (``bin_edges_``, :mod:`~dpviz.models.trees.edges`). Since issue 28's third
  pass the grown model boosts the log-loss (``loss_``: log-odds, softmax for k
  classes) with clipped Newton leaves from the released prior's log-shares, at depth
  4, η = 0.5, λ = 10, ½ of each tree's ε on splits growing 1.5× per level, its splits
  drawn by report-noisy-max (:mod:`~dpviz.models.boosting.newton`).
  **macro_f1 with little to learn from** (issue 28): with ``objective="macro_f1"`` on
  two classes and every size left alone, below ε = 1, or from ε = 1 on when the released
  prior counts fewer than 6,000 records (``small_``), the fit is
  :data:`~dpviz.models.boosting.budget.SMALL_MACRO_F1`: the prior at 10% of ε (no
  floor), one tree of depth 2 on every record with λ = 1000 (its leaves' Laplace
  scale 1/(1001·ε_leaf)), no held-out check, and the threshold's noisy score histogram
  over that tree's four leaves at 25% of what the prior leaves
  (:mod:`~dpviz.models.boosting.threshold`). Its floor is the threshold: where the
  leaves' noisy class counts show no cut better than the majority's answer it answers
  the majority.
- ``"paper"`` — Li et al.'s settings: depth 6, λ = 0.1, η = 0.01, T = T_e = 50 with
  geometric subsets, gradient-based data *filtering*, ½ of each tree's ε on splits and ½
  on leaves, bin-threshold candidates for every feature, splits scored by the gain
  Σ_sides (Σg)²/(n + λ) (sensitivity 3g*²), one set of trees per one-vs-rest part, no
  prior (score 0 to start).

The privacy argument of every choice is below (**Privacy**).

A fitted model's score for one-vs-rest part k is ``init_score_[k] + tree_weight_[k] ·
η · Σ_t value_t[leaf_t(x)]`` (``init_score_`` 0 and ``tree_weight_`` 1 in the paper
preset); :func:`route` gives ``leaf_t(x)``, where a level's ``equal`` flag marks a one-hot
split ("code == value" goes right). Each record is dealt to a tree of its ensemble by its
own independent draw (never by cutting a shuffle: the cut points depend on n, so one
record would move others), and every random choice (the class prior, that draw, the
splits, the leaf noise, the check) comes from a :class:`~dpviz.privacy.noise.SecureGenerator`
keyed by a fresh OS secret per fit.

**Privacy.** ``epsilon``-DP under add/remove-one neighbours with a public schema. The
ledger (``ledger_``) books, in sequence: the noisy class histogram (ε_p, see
:func:`prior_epsilon`; none in the paper preset), then for each model its N_e =
⌈T/T_e⌉ ensembles, ε_t = (ε − ε_p)/N_e each: one model for two classes or when the k
one-vs-rest parts share each tree (default), k models of (ε − ε_p)/k each otherwise
(paper), ε_t = (ε − ε_p)/(k·N_e). Inside an ensemble the trees read disjoint records
(each record is dealt to one cell by its own independent draw, the same deal for
every one-vs-rest model), so every tree spends the ensemble's whole ε_t (parallel
composition). Within a tree, ``split_share``·ε_t goes to the splits (split equally
over the depth's levels; the nodes of a level read disjoint records) and the rest to
the leaves (each leaf reads its own records). With a prior, the last ensemble has
one more cell that no tree reads: the held-out check (below) spends ε_t on it, in
parallel with that ensemble's trees. The ledger's total is ε.

Why each default choice keeps that proof:

- **Growing at large ε.** Whether to grow reads ε, the parameters and the released
  prior's total (clipped noisy counts): post-processing of a booked release, decided
  before any tree reads a record; the grown model is the same mechanism with other
  public sizes, booked the same way (its ledger has two ensembles of ε_t = (ε − ε_p)/2).
  Its flat clip g* leaves the leaves' sensitivity at Lemma 2's g*/(1+λ) (B/(1+λ) in L1
  for shared trees): clipping to a constant bound is 1-Lipschitz and data-independent.
- **Log-loss with clipped Newton leaves** (the grown model). Gradients g = p − y and
  hessians h = p(1 − p) read the record and the released trees only; |g| ≤ 1,
  ‖g‖₁ ≤ 2 over k softmax classes, h ≤ 1/4. A leaf's value −Σg/(Σh + λ) clipped to ±c
  moves by at most (|g| + c·h)/λ when one record is added or removed, whatever the
  other records' hessians (the proof is :mod:`~dpviz.models.boosting.newton`'s
  docstring): L1 sensitivity (1 + c)²/(4cλ) for one log-odds value (h = |g|(1 − |g|)),
  (2 + c(1 − 1/k))/λ for k softmax values; the leaves' Laplace scale is that over
  ε_leaf and the ledger states it. The split score Σ|Σg| keeps sensitivity ‖g‖₁ (1, or
  2 for softmax). The start score (the prior's log-shares) is post-processing.
- **Report-noisy-max splits and a level-growing split budget** (the grown model). Each
  level's split is the argmax of ε_level·u/(2Δ) plus Exp(1) noise: report-noisy-max
  with exponential noise, i.e. permute-and-flip, ε_level-DP for a utility of
  sensitivity Δ. Level d spends a share ∝ 1.5^d of the tree's split budget (public
  weights; the levels compose sequentially, the nodes of a level are disjoint).
- **Bin edges from noisy quantiles** (the grown model). Each continuous feature's
  counts over 128 public equal-width cells get exact discrete Laplace noise at ε_q/s
  (s continuous features; one record changes one count per feature: L1 sensitivity
  s), so the histograms are ε_q-DP, booked before the trees (sequential). The edges
  (where the clipped, accumulated noisy counts cross b/n_bins) and so the split
  candidates are post-processing of that release; the candidates stay a fixed list
  given the release, so Lemma 1's and the absolute score's bounds hold unchanged.
- **λ = 50.** Lemma 2 (ΔV ≤ g*/(1+λ)) holds for every λ > 0: adding a record with
  |g_s| ≤ g* to a leaf of n records with |Σg| ≤ n·g* moves −Σg/(n+λ) by at most
  (2n+λ)g*/((n+λ)(n+1+λ)) ≤ g*/(1+λ), since (n+λ)(n+1+λ) − (2n+λ)(1+λ) = n² − n ≥ 0.
  λ = 50 divides the leaf noise by 51/1.1 ≈ 46 against the paper's λ = 0.1.
  Lemma 1 (ΔG ≤ 3g*²) holds for every λ ≥ 0 as well.
- **Clipped gradients.** Each record's gradient g = F − y is clipped to [−g*, g*]
  (g* = 1) before use: a function of that record and of the released trees so far
  only, with |g| ≤ g* for every record used, which is all Lemmas 1 and 2 assume (the
  paper's filtering is another way to get |g| ≤ g*). So the gain sensitivity stays
  3g*² and the leaf sensitivity min(g*/(1+λ), 2g*(1−η)^(t−1)): the geometric leaf
  clip (1-Lipschitz) keeps every released value in [−g*(1−η)^(t−1), g*(1−η)^(t−1)].
- **Equal subsets.** Each tree of an ensemble gets the records whose own uniform falls
  in its 1/T_e slice; disjoint and data-independent as before, so every tree still
  spends the full ε_t (parallel composition; a tree's gradients read the released
  earlier trees only, which adaptive composition allows).
- **¾ / ¼.** The split and leaf budgets add up to ε_t (sequential within a tree);
  the ledger's text states both.
- **One-hot candidates.** The candidate list comes from the schema alone; a record
  lands on one side of any candidate, so ΔG ≤ 3g*² holds unchanged.
- **Absolute split score.** A level's splits are drawn by the exponential mechanism on
  u = |Σ_left g| + |Σ_right g| instead of the gain. A record added or removed lies on
  one side of every candidate of its node and moves that side's sum by its own
  |g| ≤ g*; |·| is 1-Lipschitz, so Δu ≤ g* (the nodes of a level hold disjoint
  records). Weights exp(ε_level·u/(2g*)) make each level ε_level-DP. (Why: a side of
  n records with mean gradient m scores n·m² against noise 3g*² with the gain, n·|m|
  against g* here; on car at ε = 10 the gain's splits were noise.)
- **Prior-centred split gradients** (two classes). The splits of tree t are scored on
  g' = clip(F − y + (1 − κ_(t−1))·p̂, −g*, g*), κ_(t−1) the share of E[y|x] that
  the first t − 1 trees reach (:meth:`DPBoostClassifier._reach`: from η, λ, the
  depth and the released prior's total n̂) and p̂ the released prior score: a function
  of the record and of released values only, clipped to |g'| ≤ g*, so the bound above
  holds (the leaves still use g = clip(F − y)). Without it the first trees of a part
  whose class is rare or common see gradients of one sign, where Σ|Σg| cannot tell a
  split from none.
- **Shared multiclass trees.** With k > 2 classes the k parts' tree at one position
  is one tree, boosted from the released prior (F = p̂ to start, p̂ = 2·noisy share
  − 1 per part, a released value) instead of 0. A record's k gradients F − y are then
  2·share_c for the other classes and 2·share_y − 2 for its own, an L1 norm of
  4(1 − share_y) ≤ 4·g* whatever k; each record's k gradients are scaled to an L1 norm
  ≤ B = 4·g* (a function of the record and of released values; no part is clipped on
  its own, so a rare class keeps its gradient near −2g*). One set of splits is scored
  by the sum of the k parts' absolute side sums: a record moves them by at most its
  L1 norm, so Δu ≤ B (weights exp(ε_level·Σu/(2B))). Each leaf releases its k values
  with Laplace noise of scale s_t/ε_leaf, s_t = min(B/(1+λ), 2k·g*(1−η)^(t−1)) the
  L1 sensitivity of a leaf's k values: Lemma 2 in L1, adding a record of ‖g‖₁ ≤ B to
  a leaf of n records (‖Σg‖₁ ≤ nB) moves −Σg/(n+λ) by ≤ B(2n+λ)/((n+λ)(n+1+λ)) ≤
  B/(1+λ) (the same algebra as above), and the clip keeps each of the k values in
  ±g*(1−η)^(t−1). The tree spends ε_t once, so the parts neither divide ε by k nor
  multiply the noise by k: on abalone's 28 classes the leaf noise is 7 times smaller
  than with k one-vs-rest parts clipped one by one (L1 sensitivity k·g*/(1+λ)).
- **Class prior.** A histogram of the classes changes by one count when a record is
  added or removed (L1 sensitivity 1): exact discrete Laplace noise at ε_p makes it
  ε_p-DP. For two classes the trees are boosted from F = 0 as above and the released
  score mixes them with the prior, (1 − w)·κ·p̂ + w·(trees' score) (p̂ = 2·noisy share
  − 1, κ = :attr:`~DPBoostClassifier.reach_`, from public parameters and the released
  counts); shared multiclass trees, boosted from p̂, estimate a correction to it and
  the score is κ·p̂ + w·(trees' score): post-processing of released values
  (see :func:`~dpviz.models.boosting.check.check_weights`).
- **The small macro_f1 model.** Whether it applies reads the public objective,
  schema, parameters and ε, and from ε = 1 on the released prior's total
  (post-processing, decided before any tree reads a record; the prior's ε is 10% of ε
  under either rule from ε = 0.95 on, so the draw is the same). It is the same
  mechanism with other public sizes: one tree of one ensemble reads every record
  (ε_t = ε − ε_p − ε_th), λ = 1000 keeps Lemma 2's bound g*/(1+λ), and without a
  check no cell is held out. The histogram's cells are the released tree's leaves.
- **Random splits** (k > 2 classes, ε < 5, a released prior total ≥ 2,500;
  ``random_``, :mod:`~dpviz.models.boosting.randomsplit`). Whether it applies reads
  public parameters and the released prior's total (post-processing). The splits are
  drawn from the fit's generator without reading a record (thresholds among the codes
  of the booked noisy-quantile edges), so every tree reads every record not held out
  (each record's own draw): T sequential releases of each leaf's k gradient sums with
  Laplace noise of scale 2/ε_t (‖p − y‖₁ ≤ 2, one leaf per record), ε_t = (ε − ε_p −
  ε_q)/T; the values divide by the public κ·n̂/2^D + λ. The held-out records answer one
  noisy count at T·ε_t (parallel to the trees: disjoint records).
- **Held-out check.** One noisy count on the last ensemble's held-out cell: how many
  more of its records the trees-trusting mix classifies correctly than the prior's.
  Its sensitivity is 1 and it is released with discrete Laplace noise at ε_t; only
  if it exceeds ln(1000)/ε_t are the trees trusted. Noise-only trees (tiny ε or
  data) therefore leave the model answering the prior's class: it does not fall
  below the majority rate (unless the noisy prior misnames the majority).

All randomness reads the data (there is no public randomness), so every draw comes
from a cryptographically secure generator keyed by a fresh operating-system secret
for each fit; the key is never stored. ``noise_seed`` replaces that secret by a
replayable one: the model is then NOT private, and its ledger says so.

The estimator lives here; each seam of the method is a private module next to it, its
docstring stating its privacy role: :mod:`~dpviz.models.boosting.presets` (the presets and
the parameter checks), :mod:`~dpviz.models.boosting.budget` (the split of ε and the
ledger), :mod:`~dpviz.models.boosting.ensemble` (dealing records to trees, boosting),
:mod:`~dpviz.models.boosting.tree` (one DP regression tree, routing),
:mod:`~dpviz.models.boosting.check` (the class prior and the held-out check) and
:mod:`~dpviz.models.boosting.predict` (prediction; the NOT private diagnostics).
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dpviz.models.boosting import budget, randomsplit
from dpviz.models.boosting import predict as fitted
from dpviz.models.boosting.budget import G_STAR, subset_shares
from dpviz.models.boosting.check import (
    CHECK_THRESHOLD,
    check_outcome,
    check_weights,
    held_out_check,
    newton_floor,
    noisy_prior,
)
from dpviz.models.boosting.ensemble import assign_trees, boost_ensembles, boost_newton
from dpviz.models.boosting.newton import start_scores
from dpviz.models.boosting.presets import (
    CAPACITY_EPSILON,
    CAPACITY_RECORDS,
    LARGE_EPSILON,
    PRESET_PARAMETERS,
    PRESETS,
    Preset,
    apply_preset,
    check_params,
    grown_note,
    grows,
)
from dpviz.models.boosting.randomsplit import boost_random, random_note
from dpviz.models.boosting.threshold import fit_threshold, histogram_cells, threshold_epsilon
from dpviz.models.boosting.tree import grow_tree, route, split_candidates, tree_scores
from dpviz.models.objective import ACCURACY, check_objective
from dpviz.models.trees.edges import edge_cells, edge_codes, noisy_edges
from dpviz.models.trees.features import bin_codes
from dpviz.models.trees.prior import prior_epsilon
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData
from dpviz.tabular.inputs import training_data

# The names other modules, the app and the tests import from here (the seams above).
__all__ = [
    "CAPACITY_EPSILON",
    "CAPACITY_RECORDS",
    "CHECK_THRESHOLD",
    "G_STAR",
    "LARGE_EPSILON",
    "PRESETS",
    "PRESET_PARAMETERS",
    "DPBoostClassifier",
    "Preset",
    "assign_trees",
    "grown_note",
    "grows",
    "prior_epsilon",
    "random_note",
    "route",
    "split_candidates",
    "subset_shares",
]


class DPBoostClassifier(ClassifierMixin, BaseEstimator):
    """DPBoost (Li et al. 2020), by default with settings that keep the proof and learn.

    Privacy: ``epsilon``-DP under add/remove-one neighbours with a public schema; the
    ledger (``ledger_``) books the class prior, every ensemble of the model (of every
    one-vs-rest model in the paper preset) and the held-out check, and totals ε. The
    argument, choice by choice (λ, clipped gradients, subsets, the ¾/¼ split, one-hot
    candidates, the absolute split score, the prior-centred split gradients, shared
    multiclass trees, the prior and the check), is the module docstring of
    :mod:`dpviz.models.boosting.estimator`. ``noise_seed`` makes the noise replayable: the model
    is then NOT private, and its ledger says so.

    Parameters
    ----------
    epsilon : float, default=1.0
    n_estimators : int, default=10
        Total trees T per class (paper preset: 50).
    trees_per_ensemble : int, default=10
        T_e (paper: 50).
    max_depth : int, default=3
        (paper: 6).
    learning_rate : float, default=0.1
        Shrinkage η, also the geometric clipping rate (paper: 0.01; it also sets the
        paper's geometric subset sizes).
    reg_lambda : float, default=50.0
        λ > 0 in the leaf value −Σg / (n + λ) (λ = 0 would make empty leaves 0/0;
        paper: 0.1).
    n_bins : int, default=16
        Public equal-width bins of each continuous feature: the split candidates.
    preset : {"default", "paper"}, default="default"
        The method's choices (see :class:`Preset` and :data:`PRESETS`) and the values of
        the parameters above that are left at the default preset's value: ``"paper"``
        alone gives all of Li et al.'s settings, ``preset="paper", max_depth=4`` the
        paper's at depth 4. A parameter set to exactly the default preset's value counts
        as left alone (the registry and the CLI always pass every parameter), so
        ``preset="paper", max_depth=3`` is depth 6; use ``set_params(max_depth=3)``
        after construction for that.
    schema : Schema or None
    random_state : int, numpy generator or None
        Kept for scikit-learn's API only. This algorithm has no public randomness, so
        it seeds nothing: in particular it does NOT seed the noise (two fits with the
        same ``random_state`` differ).
    noise_seed : int or None, default=None
        None (the default): secret noise from a fresh OS key, never stored. An integer
        makes every random choice replayable (same seed, same model) for tests,
        teaching and figures: NOT private (the noise can be replayed and subtracted).
    objective : {"accuracy", "balanced_accuracy", "macro_f1"}, default="accuracy"
        What ``predict`` optimises: the argmax, or the scores over κ weighed against
        :attr:`decision_prior_` (:mod:`dpviz.models.objective`,
        :func:`~dpviz.models.boosting.predict.decision_scores`). Post-processing: the
        privacy guarantee does not change; ``predict_proba`` neither.

    Attributes
    ----------
    models_ : list of lists of dict
        Per one-vs-rest part, its trees (by default the parts' trees at one position
        share their splits and differ in their values): ``feature``, ``threshold`` and
        ``equal`` (one array per level, see :func:`route`) and ``value`` (the 2^depth
        released leaf values, Laplace noise included).
    init_score_, tree_weight_ : ndarray
        Per part, the score is ``init_score_ + tree_weight_ · η · Σ value[leaf]``
        (0 and 1 in the paper preset; see :meth:`_fallback`).
    prior_counts_ : ndarray or None
        The released noisy class counts (None in the paper preset).
    check_gain_ : int or None
        The released noisy count of the held-out check; ``check_passed_`` whether it
        cleared ln(1000)/ε_t (None without a check).
    leaf_records_ : list of (counts, clipped values, released values)
        Per tree, part by part: NOT private diagnostics (true counts and values).
    ledger_ : PrivacyLedger
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_estimators: int = 10,
        trees_per_ensemble: int = 10,
        max_depth: int = 3,
        learning_rate: float = 0.1,
        reg_lambda: float = 50.0,
        n_bins: int = 16,
        preset: str = "default",
        schema=None,
        random_state=None,
        noise_seed: int | None = None,
        objective: str = ACCURACY,
    ):
        self.epsilon = epsilon
        self.n_estimators = n_estimators
        self.trees_per_ensemble = trees_per_ensemble
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.n_bins = n_bins
        self.preset = preset
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.objective = objective
        apply_preset(self)

    def set_params(self, **params):
        super().set_params(**params)
        if "preset" in params:
            apply_preset(self, params)
        return self

    @property
    def preset_(self) -> Preset:
        """The method's choices: :data:`LARGE_EPSILON` when the fit grew the model
        (:attr:`grown_`), else those of ``preset``."""
        return budget.preset_of(self)

    def _validate_params(self) -> None:
        check_params(self)
        check_objective(self.objective)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.noise_seed is None
        return tags

    def fit(self, X, y):
        self._validate_params()
        encoded, schema, classes = training_data(self, X, y)
        return self.fit_encoded(encoded, schema, classes=classes)

    def fit_encoded(self, encoded: EncodedData, schema: Schema, classes=None):
        """Train on encoded records (the evaluation engine's entry point)."""
        self._validate_params()
        start = time.perf_counter()
        self.schema_ = schema
        self.n_features_in_ = len(schema.features)
        self.classes_ = np.asarray(schema.classes, dtype=object) if classes is None else classes
        k = len(schema.classes)
        self.grown_ = False  # until the released prior says the records are enough
        self.small_ = False  # from ε = 1 on, until the released prior says they are few
        self.random_ = False  # until the released prior says the records are many
        # Secret (or, opt-in, replayable) noise for this fit only: never kept on self.
        rng = NoiseSource.for_release(self.noise_seed).generator()
        targets = [1] if k == 2 else list(range(k))
        self.prior_counts_, self.prior_score_ = noisy_prior(
            encoded.y, k, targets, self.prior_epsilon_, rng
        )
        # Capacity that grows with ε, from ε and the released prior's total only.
        if self.prior_counts_ is not None:
            n_hat = float(np.clip(self.prior_counts_, 0, None).sum())
            self.grown_ = grows(self, n_hat)
            # macro_f1 on few records: one small tree (budget.SMALL_MACRO_F1).
            self.small_ = budget.small_by_records(self, n_hat)
            # k > 2 classes below large ε on many records: random splits (randomsplit).
            self.random_ = not self.grown_ and randomsplit.applies(self, n_hat, k)
        # The grown model's bin edges: a booked release of noisy feature histograms.
        self.bin_edges_ = None
        if self.edge_epsilon_ > 0:
            cells = edge_cells(encoded, schema)
            self.edge_counts_, self.bin_edges_ = noisy_edges(
                cells, self.n_bins_, self.edge_epsilon_, rng
            )
            codes, n_values = edge_codes(encoded, schema, self.bin_edges_)
        else:
            codes, n_values = bin_codes(encoded, schema, self.n_bins_)
        self.n_values_ = n_values
        self.candidates_ = split_candidates(schema, n_values, self.preset_.candidates)
        if self.random_:  # every tree on every record but a held-out cell for the check
            self.models_, self.leaf_records_ = boost_random(
                self, codes, encoded.y, self.bin_edges_, rng
            )
            trust, floor = self._check_weights()
            self.tree_weight_ = np.full(k, trust if self.check_passed_ else floor)
            self.init_score_ = self.start_score_
        elif self.loss_ == "logistic":  # the grown model: log-loss, Newton leaves
            self.start_score_ = start_scores(self.prior_counts_, k)
            self.models_, self.leaf_records_, last_deal = boost_newton(self, codes, encoded.y, rng)
        else:
            signed = [np.where(encoded.y == target, 1.0, -1.0) for target in targets]
            self.models_, self.leaf_records_, last_deal = boost_ensembles(self, codes, signed, rng)
        if not self.random_:
            self._fallback(codes, encoded.y, last_deal, rng)
        # macro_f1 on two classes: a booked histogram of the training scores (else nothing).
        fit_threshold(self, codes, encoded.y, rng)
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    @property
    def reach_(self) -> float:
        """κ, the share of E[y|x] that the trees' score η·Σ_t r_t reaches after all T
        trees (see :meth:`_reach`)."""
        return self._reach(self.n_estimators_)

    def _reach(self, trees: int) -> float:
        """κ after ``trees`` trees: c = 1 − (1−η)^trees without a prior; with one,
        c·s, s = n̂_leaf/(n̂_leaf + λ) how much λ shrinks a leaf of the expected size
        n̂_leaf = n̂·(a tree's share)/2^depth, n̂ the released prior's total. A function
        of public parameters and released counts only (post-processing)."""
        c = 1 - (1 - float(self.learning_rate_)) ** trees
        if self.prior_counts_ is None:
            return c
        n_hat = float(np.clip(self.prior_counts_, 0, None).sum())
        share = float(self.ensemble_shares(self.trees_per_ensemble_, self.checks_trees_)[0])
        leaf = n_hat * share / 2**self.max_depth_
        return c * leaf / (leaf + float(self.reg_lambda_))

    @property
    def _prior_in_score(self) -> np.ndarray:
        """The prior's score per part on the trees' scale, κ·p̂ (κ = :attr:`reach_`):
        the trees, boosted from 0, estimate about κ·E[y|x]; boosted from the prior
        (shared multiclass trees), about κ·(E[y|x] − p̂)."""
        return self.reach_ * self.prior_score_

    def _check_weights(self) -> tuple[float, float]:
        """(w_trust, w_floor): the trees' weight when the check passes, and when it fails
        (:func:`~dpviz.models.boosting.check.check_weights`; trees boosted on the
        log-loss from the prior: 1 and :func:`~dpviz.models.boosting.check.newton_floor`)."""
        if self.random_:  # the random-split mode: the trees or the prior's class
            return randomsplit.CHECK_WEIGHTS
        if self.loss_ == "logistic":
            return 1.0, newton_floor(self.start_score_, self.score_noise_variance_)
        return check_weights(self.reach_, self.score_noise_variance_, self._prior_in_score)

    def _fallback(self, codes, y, last_deal, rng) -> None:
        """Set ``tree_weight_`` and ``init_score_`` (the score is init + weight·η·Σ trees).

        Without a prior (paper preset): weight 1, init 0. With one: a record's score is
        (1 − w)·κ·p̂ + w·(trees' score), p̂ = 2·(noisy class share) − 1, κ =
        :attr:`reach_` (the trees, boosted from 0, estimate about κ·E[y|x]); w is
        w_trust if the held-out records of the last ensemble (a cell no tree of that
        ensemble reads) pass the noisy check
        (:func:`~dpviz.models.boosting.check.held_out_check`, at that ensemble's ε_t),
        else w_floor, the prior's answer."""
        n_targets = len(self.models_)
        if not self.checks_trees_:
            self.tree_weight_ = np.ones(n_targets)
            self.init_score_ = np.zeros(n_targets)
            self.check_gain_ = None
            self.check_passed_ = None
            return
        trust, floor = self._check_weights()
        prior = self._prior_in_score
        keep_prior = self.shares_trees_
        if self.loss_ == "logistic":  # boosted from the prior's log-odds / log-shares
            prior, keep_prior = self.start_score_, True
        held = np.flatnonzero(last_deal == self._ensemble_size(self.n_ensembles_ - 1))
        raw = tree_scores(self.models_, codes[held], float(self.learning_rate_))
        self.check_gain_, self.check_passed_ = held_out_check(
            raw, prior, y[held], (trust, floor), self.tree_epsilon_, rng, keep_prior
        )
        w = trust if self.check_passed_ else floor
        self.tree_weight_ = np.full(n_targets, w)
        self.init_score_ = prior if keep_prior else (1 - w) * prior

    def _tree(self, codes, gradient, iteration, eps_tree, rng, split_gradient=None, hessian=None):
        """One DP regression tree of iteration ``iteration`` (1-based) on these records,
        and its leaf record (NOT private); see :func:`~dpviz.models.boosting.tree.grow_tree`."""
        share = self.preset_.split_share
        return grow_tree(
            codes,
            gradient,
            self.candidates_,
            int(self.n_values_.max()),
            self.max_depth_,
            float(self.reg_lambda_),
            budget.level_epsilons(self, eps_tree),
            (1 - share) * eps_tree,
            self.leaf_bound(iteration),
            self.leaf_l1_sensitivity(iteration),
            rng,
            self.preset_.split_score,
            split_gradient,
            self.gradient_l1_bound_,
            hessian,
            self.preset_.selection,
        )

    # --- how ε is split, and the ledger (budget.py): public numbers only ------------

    @property
    def loss_(self) -> str:
        """The loss the fit boosts: "square" (±1 targets; Li et al.) or "logistic"
        (log-odds / softmax with Newton leaves: the grown model)."""
        return self.preset_.loss

    @property
    def n_estimators_(self) -> int:
        """T, the trees per part the fit grows (:func:`~.budget.size`)."""
        return budget.size(self, "n_estimators")

    @property
    def trees_per_ensemble_(self) -> int:
        """T_e (:func:`~.budget.size`)."""
        return budget.size(self, "trees_per_ensemble")

    @property
    def max_depth_(self) -> int:
        """The trees' depth (:func:`~.budget.size`)."""
        return budget.size(self, "max_depth")

    @property
    def learning_rate_(self) -> float:
        """η (:func:`~.budget.size`)."""
        return budget.size(self, "learning_rate")

    @property
    def reg_lambda_(self) -> float:
        """λ (:func:`~.budget.size`)."""
        return budget.size(self, "reg_lambda")

    @property
    def n_bins_(self) -> int:
        """The public bins per continuous feature (:func:`~.budget.size`)."""
        return budget.size(self, "n_bins")

    @property
    def fitted_parameters_(self) -> dict:
        """The parameters the fit used, by name (those of the grown model, else the
        parameters themselves)."""
        return budget.fitted_parameters(self)

    @property
    def n_ensembles_(self) -> int:
        """N_e = ⌈T/T_e⌉: how many ensembles read the same records."""
        return budget.n_ensembles(self)

    def _n_targets(self) -> int:
        """How many one-vs-rest models split ε sequentially: 1 for two classes or
        when the parts share their trees (``multiclass="shared"``), else k."""
        return budget.n_targets(self)

    @property
    def n_outputs_(self) -> int:
        """How many one-vs-rest parts the model has: 1 for two classes, else k."""
        return budget.n_outputs(self)

    @property
    def shares_trees_(self) -> bool:
        """Whether each tree serves every part, boosted from the released prior (k > 2
        and ``multiclass="shared"``)."""
        return budget.shares_trees(self)

    @property
    def gradient_l1_bound_(self) -> float:
        """B, the bound on the L1 norm of one record's gradients over the parts a tree
        serves: g* for one part (clipped to [−g*, g*]), 4·g* for k shared parts
        (scaled to it: :func:`~dpviz.models.boosting.ensemble.bound_l1`)."""
        return budget.gradient_l1_bound(self)

    def leaf_l1_sensitivity(self, iteration: int) -> float:
        """The L1 sensitivity of a leaf's released values in tree ``iteration``:
        min(B/(1+λ), 2·parts·g*(1−η)^(t−1)), B = :attr:`gradient_l1_bound_` (Lemma 2
        in L1: adding a record of ‖g‖₁ ≤ B to a leaf of n records moves −Σg/(n+λ) by
        ≤ B(2n+λ)/((n+λ)(n+1+λ)) ≤ B/(1+λ); the clip keeps each of the parts' values
        in ±g*(1−η)^(t−1)). For one part, :meth:`leaf_sensitivity`."""
        return budget.leaf_l1_sensitivity(self, iteration)

    def leaf_scale(self, iteration: int) -> float:
        """The Laplace scale of each released leaf value of tree ``iteration``: the
        L1 sensitivity of a leaf's values (:meth:`leaf_l1_sensitivity`) over ε_leaf."""
        return budget.leaf_scale(self, iteration)

    @property
    def prior_epsilon_(self) -> float:
        """ε of the noisy class histogram (0 in the paper preset)."""
        return budget.prior_epsilon_of(self)

    @property
    def edge_epsilon_(self) -> float:
        """ε of the noisy feature histograms that place the grown model's bin edges
        (0 for every other model; :func:`~.budget.edge_epsilon`)."""
        return budget.edge_epsilon(self)

    @property
    def threshold_epsilon_(self) -> float:
        """ε_th of the macro_f1 threshold's score histogram (0 unless
        ``objective="macro_f1"`` on two classes; :mod:`~dpviz.models.boosting.threshold`)."""
        return threshold_epsilon(self)

    @property
    def threshold_bins_(self) -> int:
        """The public cells of that histogram per class: :data:`~.threshold.BINS`, or
        the one tree's leaves (:func:`~.threshold.histogram_cells`)."""
        return histogram_cells(self)

    @property
    def class_epsilon_(self) -> float:
        """ε of each one-vs-rest model: (ε − ε_prior) / k (k = 1 for two classes)."""
        return budget.class_epsilon(self)

    @property
    def tree_epsilon_(self) -> float:
        """ε_t of every tree: its ensemble's budget, class_epsilon_ / N_e."""
        return budget.tree_epsilon(self)

    @property
    def split_epsilon_(self) -> float:
        """ε of each level of splits of a tree: split_share · ε_t / depth."""
        return budget.split_epsilon(self)

    @property
    def leaf_epsilon_(self) -> float:
        """ε of a tree's leaf values: (1 − split_share) · ε_t."""
        return budget.leaf_epsilon(self)

    def leaf_bound(self, iteration: int) -> float:
        """Geometric leaf clip of tree ``iteration`` (1-based): g*(1−η)^(t−1)."""
        return budget.leaf_bound(self, iteration)

    def leaf_sensitivity(self, iteration: int) -> float:
        """Laplace sensitivity of tree ``iteration``'s leaves: min(g*/(1+λ), 2g*(1−η)^(t−1))."""
        return budget.leaf_sensitivity(self, iteration)

    def ensemble_shares(self, n_trees: int, holdout: bool = False) -> np.ndarray:
        """The expected share of the records of each of an ensemble's ``n_trees`` trees,
        and with ``holdout`` of one more cell that no tree reads (equal to a tree's)."""
        return budget.ensemble_shares(self, n_trees, holdout)

    @property
    def checks_trees_(self) -> bool:
        """Whether the fit holds out records to check the trees against the class prior
        (with a prior, i.e. the default preset)."""
        return budget.checks_trees(self)

    def _ensemble_size(self, ensemble: int) -> int:
        """How many trees ensemble ``ensemble`` (0-based) holds: T_e, or fewer in the last."""
        return budget.ensemble_size(self, ensemble)

    @property
    def score_noise_variance_(self) -> float:
        """The variance the leaf noise adds to a record's trees' score η·Σ_t r_t: one
        Laplace(b_t) per tree, b_t = leaf sensitivity / ε_leaf (public)."""
        return budget.score_noise_variance(self)

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        return budget.boost_ledger(self, schema_inferred)

    # --- the fitted model at work (predict.py): post-processing; diagnostics NOT private

    def _scores(self, encoded: EncodedData) -> np.ndarray:
        """Per part, ``init_score_ + tree_weight_ · η · Σ_t value_t[leaf_t(x)]``."""
        return fitted.scores(self, encoded)

    def _proba(self, encoded: EncodedData) -> np.ndarray:
        return fitted.proba(self, encoded)

    def predict_proba(self, X) -> np.ndarray:
        return fitted.predict_proba(self, X)

    @property
    def decision_prior_(self) -> np.ndarray:
        """The class prior the ``objective`` weighs by: the released noisy class
        histogram, one added per class (:func:`~dpviz.models.objective.prior_from_counts`),
        or uniform and public without one (paper preset). Post-processing."""
        return fitted.decision_prior(self)

    def _decision(self, encoded: EncodedData) -> np.ndarray:
        """Each record's class index under the ``objective`` (accuracy: the argmax of
        :meth:`_proba`; otherwise
        :func:`~dpviz.models.boosting.predict.decision_scores` weighed against
        :attr:`decision_prior_`)."""
        return fitted.decision(self, encoded)

    def predict(self, X) -> np.ndarray:
        """The most likely class, weighed by the ``objective`` (post-processing)."""
        return fitted.predict(self, X)

    def floor_outcome(self):
        """What the held-out check decided (a
        :class:`~dpviz.models.trees.floor.FloorOutcome`), or None where no check ran (no
        prior: the paper preset). Public: released values."""
        check_is_fitted(self, "models_")
        if self.check_passed_ is None:
            return None
        if self.random_:
            return randomsplit.check_outcome(self)
        weights = self._check_weights()
        return check_outcome(self.check_gain_, self.check_passed_, self.tree_epsilon_, weights)

    @property
    def diagnostics_(self) -> dict:
        """Leaf diagnostics from the raw data (NOT private): sign flips of leaf values."""
        return fitted.leaf_diagnostics(self.leaf_records_)
