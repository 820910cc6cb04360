"""Greedy differentially private decision trees: Friedman & Schuster 2010 and DPEA.

DPEA ("Embedding DP in decision tree algorithm with different depths", 2017) grows a
tree in steps; each step picks a whole (d+1)-layer subtree by the exponential
mechanism on a score summed over the subtree's leaves. Friedman–Schuster is the d = 1
case. The papers' score is the max operator (each leaf's largest class count;
sensitivity 1), ``criterion="max"``; the default ``criterion="max_gini"`` adds
Friedman & Schuster's Gini score to it (Σ τ²/n − n per leaf, sensitivity 2; together
Δ = 3, and the mechanism draws with exp(ε'·s/(2Δ))), because the max operator ties
wherever no split changes a child's majority class — on UCI car every root split — and
then draws the split uniformly (see :mod:`~dpviz.models.greedy.score`). Leaves
release class counts plus exact discrete Laplace noise (integers: no floating-point side
channel).

**Privacy.** For d ≤ 2, ``epsilon``-DP under add/remove-one neighbours (public
schema). Each record meets: with ``split_points="quantile"``, ε ≥ 1 and a continuous
feature, first one count in each continuous feature's noisy histogram (ε_q = 0.05·ε in
all; :mod:`~dpviz.models.trees.edges`), and what follows splits ε − ε_q in place of ε;
with ``max_depth="auto"`` and no ``declared_n``, the
root's noisy class histogram (ε_root = 0.1·ε); then at most ⌈D/d⌉ step levels of
ε' = (ε − ε_root) / (⌈D/d⌉ + 1) each — below the root a level spends ρ·ε' (ρ = 0.2)
on its node's noisy class histogram (the stopping rule) and the rest on the
exponential-mechanism step — and one noisy leaf count: ε' for a leaf at full depth,
and for a leaf closed earlier the ε' of every level its records did not reach as
well (so every record spends exactly ε). A tree whose "auto" depth is 0 has no
split: the root histogram and, at ε − ε_root, a report-noisy-max choice of its class
(exponential noise; :mod:`~dpviz.models.greedy.prior`). A step is ε'-DP (or (1 − ρ)·ε') whatever
the criterion: its exponential mechanism divides the score by its sensitivity Δ (1 for
the max operator, 3 for max + Gini). The ledger books each level's parts in
parallel over its disjoint nodes. For d > 2 the steps of three or more layers
sample their subtree with the paper's Metropolis MCMC (``mcmc_steps`` proposals),
which only approximates the exponential mechanism: such a model is "approximate" —
NO ε is proven, and its ledger says so. Counts carry exact discrete Laplace noise,
P(z) ∝ exp(−ε|z|).

Four things keep the trees useful on small data, at small ε (issue 13) or without
signal (issue 28):

- **Noise-aware stopping** (Friedman & Schuster 2010, KDD, §4, their differentially
  private ID3: a node becomes a leaf when N_T / (t·|C|) < √2/ε, N_T its noisy record count,
  t = max_{A∈A} |A| over the attributes still available, |C| the number of classes and
  √2/ε the standard deviation of the Laplace noise of its class counts). At each step
  level below the root a booked share ρ of the level's ε' buys every frontier node a
  noisy class histogram (discrete Laplace; one record changes one count by one, so the
  histogram costs no more than the total); its sum is N_T. DPEA's per-step equivalent
  compares against the cells an ℓ-layer step would create (see :func:`stopping_rule`).
  Nodes of a level hold disjoint records, so their counts compose in parallel.
- **A depth chosen from public information** (``max_depth="auto"``): see
  :func:`auto_depth`.
- **Graceful degradation**: every released noisy count (leaves, node histograms) is
  combined into a per-node estimate, and each node's class shares are shrunk towards
  its parent's by empirical Bayes, as far as its deviation does not stand out of its
  noise and, under ``objective="accuracy"``, of its records' sampling (see
  :func:`~dpviz.models.greedy.leaves.node_shares`): a noise-dominated leaf, or a chance
  imbalance, predicts what its parent (ultimately the root: the class prior) predicts.
  Pure post-processing of released values: no ε.
- **A floor on data without signal** (:mod:`~dpviz.models.greedy.floor`,
  ``objective="accuracy"`` with the hierarchical fallback): where the leaves' released
  counts, or the groups of any shallower depth, spread no more around their pooled
  shares than noise and sampling explain (with an allowance for the splits having been
  chosen where the records looked most unlike), the tree answers its root's class for
  every record, with scores that keep its ranking. Post-processing: no ε.

Every random choice here reads the data, so all of it (exponential-mechanism draws, MCMC
proposals and acceptances, node and leaf noise) comes from a
:class:`~dpviz.privacy.noise.SecureGenerator` keyed by a fresh OS secret per fit, never from
``random_state``.

The score of a subtree is a sum over its leaves, so the exponential
mechanism's distribution over all subtrees factorises: P(root feature a) ∝
Π_children Σ_f exp(ε'·s(child, f)/2), and given a, each child's feature is drawn
independently. Sampling that way is exactly the exhaustive exponential mechanism
(d ≤ 2) without listing its m·(m−1)^b candidates.

Steps of three or more layers follow the paper's Algorithm 3: a Metropolis chain
over subtrees whose stationary law is the exponential mechanism. A chain of finite
length only approximates that law, so such steps carry NO proven ε ("approximate").

The estimator lives here; each seam of the method is a private module next to it, its
docstring stating its privacy role:

- :mod:`~dpviz.models.greedy.budget` — how ε is split (:class:`Budget`), the privacy
  status and the ledger (public numbers only);
- :mod:`~dpviz.models.greedy.stopping` — the noise-aware stopping rule and the "auto"
  depth (the root's noisy histogram);
- :mod:`~dpviz.models.greedy.grow` — the growth loop, step level by step level;
- :mod:`~dpviz.models.greedy.score` — the split score (max operator, + Gini) and its
  sensitivity;
- :mod:`~dpviz.models.greedy.select` — the exact exponential-mechanism step (d ≤ 2);
- :mod:`~dpviz.models.greedy.mcmc` — the Metropolis sampler for d > 2 (approximate);
- :mod:`~dpviz.models.greedy.leaves` — the noisy leaf counts and the fallback;
- :mod:`~dpviz.models.greedy.floor` — the no-signal floor (a test on the released
  counts, and fall-back scores that keep the ranking);
- :mod:`~dpviz.models.greedy.predict` — routing, prediction and the (NOT private)
  leaf reports.
"""

from __future__ import annotations

import time
from dataclasses import fields

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dpviz.models.greedy import predict as fitted
from dpviz.models.greedy.budget import (
    AUTO,
    COUNT_SHARE,
    FALLBACKS,
    MAX_AUTO_DEPTH,
    ROOT_COUNT_SHARE,
    SPLIT_POINTS,
    STOPPING_RULES,
    Budget,
    check_max_depth,
    check_params,
    edge_epsilon,
    greedy_ledger,
    make_budget,
    privacy_status,
    root_count_epsilon,
)
from dpviz.models.greedy.floor import apply_floor, floor_applies, floor_outcome
from dpviz.models.greedy.grow import MAX_NODES, grow_tree
from dpviz.models.greedy.leaves import (
    SHRINK_MARGIN,
    discrete_laplace_variance,
    order_ties,
    release_leaves,
)
from dpviz.models.greedy.mcmc import MAX_MCMC_CELLS, mcmc_subtrees
from dpviz.models.greedy.prior import constant_leaf, noisy_max_class
from dpviz.models.greedy.score import CRITERIA, GINI_WEIGHT, gini_weight, leaf_score
from dpviz.models.greedy.select import (
    choose_subtrees,
    enumerate_subtrees,
    max_operator,
    split_scores,
)
from dpviz.models.greedy.stopping import (
    auto_depth,
    choose_depth,
    forced_split,
    macro_f1_depth,
    stopping_rule,
)
from dpviz.models.objective import ACCURACY, check_objective
from dpviz.models.trees.draws import Rng
from dpviz.models.trees.edges import edge_cells, noisy_edges
from dpviz.models.trees.features import bin_codes
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData
from dpviz.tabular.inputs import training_data

# The names other modules, the app and the tests import from here (the seams above).
__all__ = [
    "AUTO",
    "COUNT_SHARE",
    "CRITERIA",
    "GINI_WEIGHT",
    "FALLBACKS",
    "MAX_AUTO_DEPTH",
    "MAX_MCMC_CELLS",
    "MAX_NODES",
    "ROOT_COUNT_SHARE",
    "root_count_epsilon",
    "SHRINK_MARGIN",
    "SPLIT_POINTS",
    "STOPPING_RULES",
    "Budget",
    "DPDecisionTreeClassifier",
    "Rng",
    "auto_depth",
    "bin_codes",
    "check_max_depth",
    "choose_subtrees",
    "discrete_laplace_variance",
    "enumerate_subtrees",
    "leaf_score",
    "max_operator",
    "mcmc_subtrees",
    "privacy_status",
    "split_scores",
    "stopping_rule",
]


class DPDecisionTreeClassifier(ClassifierMixin, BaseEstimator):
    """DP greedy decision tree: DPEA with ``steps`` = d, Friedman–Schuster at d = 1.

    Privacy: for d ≤ 2, ``epsilon``-DP under add/remove-one neighbours (public schema);
    for d > 2 the MCMC steps make the model "approximate" (NO ε is proven; its ledger
    says so). How each record's ε is spent, the noise-aware stopping rule
    (``stopping``), the "auto" depth and the fallback of noise-dominated leaves
    (``fallback``) are set out in the module docstring of :mod:`dpviz.models.greedy.estimator`.

    All randomness reads the data (there is no public randomness), so every draw comes
    from a cryptographically secure generator keyed by a fresh operating-system secret
    for each fit; the key is never stored. ``noise_seed`` replaces that secret by a
    replayable one: the model is then NOT private, and its ledger says so.

    Parameters
    ----------
    epsilon : float, default=1.0
        The total budget (proven only for d ≤ 2).
    max_depth : "auto" or int, default="auto"
        D, the maximal depth of the tree; "auto" chooses it from the record count (see
        :func:`auto_depth`), at most 5.
    steps : int, default=1
        d, the layers chosen per exponential-mechanism step (1 = Friedman–Schuster).
        d ≤ D for an explicit D; d > 2 switches those steps to the MCMC sampler (not
        proven DP).
    n_bins : int, default=8
        Bins of each continuous feature (see ``split_points``).
    split_points : {"uniform", "quantile"}, default="uniform"
        Where continuous features are cut into their ``n_bins`` bins: "uniform" — equal
        widths of the public domain (the papers'); "quantile" — from ε = 1 up, at the
        quantiles of a noisy histogram of each continuous feature (5% of ε, booked first;
        below ε = 1 its noise would place the edges at random, so the bins are equal
        widths there and nothing is spent). "quantile" helps skewed features on many
        records (diamonds +20 accuracy points at ε ≥ 1) and cost small and coded-integer
        sets some ranking (binary AUC −1 on average on the validation sets;
        bench/README.md).
    mcmc_steps : int, default=1000
        Metropolis proposals per subtree choice when a step has three or more
        layers (the paper's ``stepLimit``; it gives no number, so 1000). Unused for
        d ≤ 2.
    declared_n : int, default=0
        A public record count for ``max_depth="auto"`` (0: none; then
        :func:`root_count_epsilon` — 10% of ε — buys a noisy count of the root's
        classes, and the depth rule keeps :func:`~dpviz.models.greedy.budget.reserved_epsilon`
        off the tree). Unused with an explicit depth.
    stopping : {"noisy_count", "none"}, default="noisy_count"
        Friedman & Schuster's noise-aware stopping rule, or none (grow to depth D).
    fallback : {"hierarchical", "none"}, default="hierarchical"
        How leaves predict: shrunk towards their parents' noisy class shares, or from
        their own noisy counts only.
    criterion : {"max_gini", "max"}, default="max_gini"
        The exponential mechanism's split score: Friedman & Schuster's max operator plus
        their Gini score (sensitivity 3; Gini breaks the max operator's ties), or the
        max operator alone (sensitivity 1, the papers' choice). See
        :mod:`~dpviz.models.greedy.score`.
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
        What ``predict`` optimises: the leaf's argmax, or its shares weighed against
        :attr:`decision_prior_` (:mod:`dpviz.models.objective`). Post-processing: the
        privacy guarantee does not change. ``"macro_f1"`` on two classes with
        ``max_depth="auto"`` also chooses the model (issue 28; public values decide: the
        objective, the class count, and where noted released counts): where the "auto"
        rule gives no split (depth 0, or the root's noisy stopping test closes it) the
        tree gets one level of splits anyway, its root untested
        (:func:`~dpviz.models.greedy.stopping.forced_split`: the same releases at the
        budget of that depth, so the same ledger), and where the leaves' shares tie so
        that the threshold would answer the majority they are ordered by their own
        noisy counts (:func:`~dpviz.models.greedy.leaves.order_ties`, post-processing;
        ``predict_proba`` moves by less than 10⁻⁶). Elsewhere, and under the other
        objectives, the model is the same, bit for bit.

    Attributes
    ----------
    depth_ : int
        The maximal depth D used (``max_depth`` itself, or the "auto" choice; 0 when
        "auto" found too few records for any split).
    budget_ : Budget
        How ε was split.
    n_records_estimate_ : float or None
        The record count "auto" used (declared, or the root histogram's sum).
    leaf_noisy_counts_ : ndarray of int, shape (n_leaves, k)
        The released integer counts of every leaf (discrete Laplace at ``leaf_epsilon_``;
        a tree without splits: the root's noisy class histogram).
    leaf_epsilon_ : ndarray of float
        The ε of each leaf's counts (ε' at full depth, more for a leaf closed earlier;
        a tree without splits: the ε of its report-noisy-max class).
    counted_nodes_, counted_noisy_counts_, counted_epsilon_ : ndarray
        The nodes with a released noisy class histogram (the root with "auto"; the
        stopping rule's frontier nodes), those histograms and their ε.
    leaf_proba_ : ndarray, shape (n_leaves, k)
        The class shares each leaf predicts (post-processing of the released counts).
    floor_signal_, floor_bar_ : float or None
        The no-signal floor's statistic X and the bar it had to reach
        (:func:`~dpviz.models.greedy.floor.leaf_signal`; post-processing of the released
        counts). Below the bar ``leaf_proba_`` holds the fall-back scores around the
        root's shares. None where the floor does not apply (another objective,
        ``fallback="none"``, a single leaf).
    candidates_ : int
        How many subtrees the steps chose among, summed over the steps' nodes.
    mcmc_acceptance_ : float
        Share of the Metropolis proposals accepted (NaN when no MCMC step ran).
    ledger_ : PrivacyLedger
        The budget in words; for d > 2 it marks the MCMC steps as unproven.
    """

    # For the registry (dpviz.models.registry): valid values and the privacy status.
    STOPPING_RULES = STOPPING_RULES
    FALLBACKS = FALLBACKS
    CRITERIA = CRITERIA
    SPLIT_POINTS = SPLIT_POINTS
    check_max_depth = staticmethod(check_max_depth)
    privacy_status = staticmethod(privacy_status)

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int | str = AUTO,
        steps: int = 1,
        n_bins: int = 8,
        split_points: str = "uniform",
        mcmc_steps: int = 1000,
        declared_n: int = 0,
        stopping: str = "noisy_count",
        fallback: str = "hierarchical",
        criterion: str = "max_gini",
        schema=None,
        random_state=None,
        noise_seed: int | None = None,
        objective: str = ACCURACY,
    ):
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.steps = steps
        self.n_bins = n_bins
        self.split_points = split_points
        self.mcmc_steps = mcmc_steps
        self.declared_n = declared_n
        self.stopping = stopping
        self.fallback = fallback
        self.criterion = criterion
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.objective = objective

    def _validate_params(self) -> None:
        check_params(self)
        check_objective(self.objective)

    @property
    def _auto(self) -> bool:
        return isinstance(self.max_depth, str) and self.max_depth == AUTO

    def _depth(self) -> int | None:
        """The depth D: the fitted one, an explicit one, or None (auto, not fitted)."""
        if hasattr(self, "depth_"):
            return self.depth_
        return None if self._auto else int(self.max_depth)

    @property
    def approximate(self) -> bool:
        """True when some step samples by MCMC (d > 2): then no ε is proven. Before an
        "auto" fit the depth is unknown, so d > 2 counts as approximate."""
        depth = self._depth()
        return privacy_status(self.steps, MAX_AUTO_DEPTH if depth is None else depth) != "ε-DP"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.noise_seed is None
        return tags

    @property
    def edge_epsilon_(self) -> float:
        """ε_q of the noisy histograms that place the bin edges (0 without them;
        :func:`~dpviz.models.greedy.budget.edge_epsilon`), from the fitted schema or,
        before a fit, the ``schema`` given (none given: 0)."""
        schema = getattr(self, "schema_", None) or self.schema
        n_continuous = len(schema.continuous) if schema is not None else 0
        return edge_epsilon(self.epsilon, self.split_points, n_continuous)

    @property
    def _tree_epsilon(self) -> float:
        """What the tree's releases share: ε less the bin edges' ε_q."""
        return float(self.epsilon) - self.edge_epsilon_

    def _budget(self, depth: int) -> Budget:
        root_count = self._auto and not self.declared_n
        counts = self.stopping == "noisy_count"
        hierarchical = self.fallback == "hierarchical"
        eps = self._tree_epsilon
        return make_budget(eps, depth, self.steps, root_count, counts, hierarchical)

    @property
    def step_epsilon_(self) -> float:
        """ε' per step level and for the leaves of full depth."""
        depth = self._depth()
        if depth is None:
            raise AttributeError('step_epsilon_ is known after fitting with max_depth="auto"')
        return self._budget(depth).level

    def fit(self, X, y):
        self._validate_params()
        encoded, schema, classes = training_data(self, X, y)
        return self.fit_encoded(encoded, schema, classes=classes)

    def fit_encoded(self, encoded: EncodedData, schema: Schema, classes=None):
        """Grow the tree on encoded records (the evaluation engine's entry point)."""
        self._validate_params()
        start = time.perf_counter()
        for stale in ("depth_", "budget_"):
            self.__dict__.pop(stale, None)
        self.schema_ = schema
        self.n_features_in_ = len(schema.features)
        if classes is None:
            classes = np.asarray(schema.classes, dtype=object)
        self.classes_ = classes
        # Secret (or, opt-in, replayable) noise for this fit only: never kept on self.
        rng = NoiseSource.for_release(self.noise_seed).generator()
        self.edge_counts_ = self.bin_edges_ = None
        if self.edge_epsilon_ > 0:  # the bins' edges: a booked release, before the tree
            self.edge_counts_, self.bin_edges_ = noisy_edges(
                edge_cells(encoded, schema), self.n_bins, self.edge_epsilon_, rng
            )
        codes, n_values = fitted.model_codes(self, encoded)
        self.n_values_ = n_values
        root_counts = self.n_records_estimate_ = None
        forced = False
        floor = 0
        if self._auto:
            depth, self.n_records_estimate_, root_counts = choose_depth(
                encoded.y, n_values, schema, self._tree_epsilon, self.steps, self.declared_n, rng
            )
            # Public: under macro_f1 (two classes) at least one split where the rule
            # would give none (see forced_split).
            floor = macro_f1_depth(self.objective, len(schema.classes))
            level = self._budget(depth).level
            forced = forced_split(
                floor, depth, root_counts, n_values, level, self.steps, self.stopping
            )
            depth = max(depth, floor)
        else:
            depth = int(self.max_depth)
        self.depth_ = depth
        self.budget_ = self._budget(depth)
        grown = grow_tree(
            codes,
            encoded.y,
            n_values,
            len(schema.classes),
            rng,
            self.budget_,
            root_counts,
            stopping=self.stopping == "noisy_count",
            mcmc_steps=self.mcmc_steps,
            beta=gini_weight(self.criterion),
            test_root=not forced,
        )
        for field in fields(grown):  # feature_, leaf_counts_, candidates_, …
            setattr(self, f"{field.name}_", getattr(grown, field.name))
        self.root_class_ = -1
        if self.budget_.pick:
            # The root's class by report-noisy-max (TRUE counts in, one class out).
            true_root = np.bincount(encoded.y, minlength=len(schema.classes))
            self.root_class_ = noisy_max_class(true_root, self.budget_.pick, rng)
        if self.budget_.pick and depth == 0:
            # No split (the "auto" depth is 0): that class is the whole model.
            released = constant_leaf(root_counts, self.root_class_)
            self.leaf_epsilon_ = np.array([self.budget_.pick])
        else:
            first = self.root_class_ if self.budget_.pick else None
            # Sampling counts in the fallback's shrinkage under accuracy alone (node_shares).
            hierarchical = self.fallback == "hierarchical"
            sampling = self.objective == ACCURACY
            released = release_leaves(grown, hierarchical, rng, first, sampling)
        self.leaf_noisy_counts_, self.leaf_proba_, self.leaf_labels_ = released
        self.floor_signal_ = self.floor_bar_ = None
        if depth > 0 and floor_applies(self.objective, self.fallback, len(self.leaf_nodes_)):
            # Post-processing: leaves whose spread does not stand out of their noise and
            # of sampling answer the root's class, their scores keeping the ranking.
            proba, labels, self.floor_signal_, self.floor_bar_ = apply_floor(
                grown, self.leaf_noisy_counts_, self.leaf_proba_, first
            )
            if labels is not None:
                self.leaf_proba_, self.leaf_labels_ = proba, labels
        if forced or (floor and fitted.answers_one_class(self)):
            # Post-processing: where the leaves' shares tie so that the macro_f1
            # threshold answers the majority (class 0 or class 1), it needs them in an
            # order (order_ties).
            self.leaf_proba_ = order_ties(
                self.leaf_proba_, self.leaf_noisy_counts_, self.leaf_epsilon_
            )
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (see
        :func:`~dpviz.models.greedy.budget.greedy_ledger`): before an "auto" fit the
        split of ε − ε_root over the levels is booked as one part; steps of d > 2 layers
        and replayable noise are marked unproven / NOT private."""
        depth = self._depth()
        budget = self._budget(MAX_AUTO_DEPTH if depth is None else depth)
        replayable = self.noise_seed is not None
        schema = getattr(self, "schema_", None) or self.schema
        edges = (self.edge_epsilon_, len(schema.continuous) if schema is not None else 0)
        return greedy_ledger(
            budget,
            depth is not None,
            self.steps,
            self.mcmc_steps,
            replayable,
            schema_inferred,
            edges,
        )

    # --- the fitted tree at work (predict.py): post-processing; reports NOT private ---

    def _leaf_of(self, encoded: EncodedData) -> np.ndarray:
        """The leaf node of each record; -1 where an unknown discrete value stops it."""
        return fitted.record_leaves(self, encoded)

    def predict_proba(self, X) -> np.ndarray:
        return fitted.predict_proba(self, X)

    def _proba(self, encoded: EncodedData) -> np.ndarray:
        """The leaf's predicted class shares (``leaf_proba_``; see
        :func:`~dpviz.models.greedy.predict.leaf_proba`)."""
        return fitted.proba(self, encoded)

    @property
    def decision_prior_(self) -> np.ndarray:
        """The class prior the ``objective`` weighs the leaves' shares by: the root's
        released noisy class counts (``max_depth="auto"`` without ``declared_n``), else
        the sum of the leaves' released noisy counts (every record reaches one leaf),
        one added per class (:func:`~dpviz.models.objective.prior_from_counts`).
        Post-processing of released counts only."""
        return fitted.decision_prior(self)

    @property
    def decision_threshold_(self) -> float | None:
        """The ``macro_f1`` objective's threshold on class 1's share
        (:func:`~dpviz.models.greedy.predict.decision_threshold`); None otherwise.
        Post-processing of released counts only."""
        return fitted.decision_threshold(self)

    def _decision(self, encoded: EncodedData) -> np.ndarray:
        """Each record's class index: the leaf's shares weighed by the ``objective``
        (:func:`~dpviz.models.objective.decide`; accuracy: their argmax)."""
        return fitted.decision(self, encoded)

    def predict(self, X) -> np.ndarray:
        """The leaf's most likely class, weighed by the ``objective`` (post-processing)."""
        return fitted.predict(self, X)

    def floor_outcome(self):
        """What the floor decided (a :class:`~dpviz.models.trees.floor.FloorOutcome`),
        or None where its test did not run (:func:`~dpviz.models.greedy.floor.floor_applies`).
        Post-processing of the released leaf counts."""
        check_is_fitted(self, "leaf_labels_")
        answer = self.classes_[int(self.leaf_labels_[0])] if len(self.leaf_labels_) else None
        return floor_outcome(self.floor_signal_, self.floor_bar_, answer)

    def flip_probability(self, counts: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Exact Laplace flip probability of each row of ``counts`` at its own ε (a leaf
        closed early has a larger ε than ε'); equal rows share one computation."""
        return fitted.exact_flip_probability(counts, eps)

    @property
    def diagnostics_(self) -> dict:
        """Leaf diagnostics from the raw data (NOT private), as the forest reports them."""
        return fitted.model_diagnostics(self)

    def leaf_table(self) -> pd.DataFrame:
        """One row per leaf, from the raw data: NOT private, for the data owner."""
        return fitted.model_leaf_table(self)
