"""Greedy differentially private decision trees: Friedman & Schuster 2010 and DPEA.

DPEA ("Embedding DP in decision tree algorithm with different depths", 2017) grows a
tree in steps; each step picks a whole (d+1)-layer subtree by the exponential
mechanism on the max-operator score (Σ over the subtree's leaves of the leaf's
largest class count; sensitivity 1). Friedman–Schuster is the d = 1 case. Leaves
release class counts plus exact discrete Laplace noise (integers: no floating-point side
channel). Budget: ε' = ε / (⌈D/d⌉ + 1) per step level and for the leaves (less a small
root count with ``max_depth="auto"``); nodes of a level hold disjoint records (parallel
composition).

Three things keep the trees useful on small data or at small ε (issue 13):

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
  noise (see :meth:`DPDecisionTreeClassifier._smooth`): a noise-dominated leaf
  predicts what its parent (ultimately the root: the class prior) predicts. Pure
  post-processing of released values: no ε.

Every random choice here reads the data, so all of it (exponential-mechanism draws, MCMC
proposals and acceptances, node and leaf noise) comes from a
:class:`~dpviz.privacy.noise.SecureGenerator` keyed by a fresh OS secret per fit, never from
``random_state``.

The max-operator score of a subtree is a sum over its leaves, so the exponential
mechanism's distribution over all subtrees factorises: P(root feature a) ∝
Π_children Σ_f exp(ε'·s(child, f)/2), and given a, each child's feature is drawn
independently. Sampling that way is exactly the exhaustive exponential mechanism
(d ≤ 2) without listing its m·(m−1)^b candidates.

Steps of three or more layers follow the paper's Algorithm 3: a Metropolis chain
over subtrees whose stationary law is the exponential mechanism. A chain of finite
length only approximates that law, so such steps carry NO proven ε ("approximate").
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from functools import lru_cache
from numbers import Integral

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dpviz.models.data import EncodedData
from dpviz.models.inputs import check_whole_numbers, prediction_data, training_data
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_noise_mode
from dpviz.privacy.mechanisms import _check_epsilon, get_mechanism, is_majority
from dpviz.privacy.noise import NoiseSource, SecureGenerator
from dpviz.privacy.schema import Schema

MAX_NODES = 2_000_000
MAX_MCMC_CELLS = 20_000_000  # frontier nodes × padded subtree positions
# What draws the data-dependent randomness: a SecureGenerator when fitting; the samplers
# also take a seeded numpy Generator (tests of their law only: replayable).
Rng = SecureGenerator | np.random.Generator

AUTO = "auto"
# The depth "auto" never exceeds: Friedman & Schuster's (and the registry's old) depth 5.
MAX_AUTO_DEPTH = 5
# ρ: the share of a step level's ε' (levels below the root) that buys the noisy node
# histograms of the stopping rule; the exponential mechanism keeps 1 − ρ.
COUNT_SHARE = 0.2
# With max_depth="auto" and no declared record count: the share of ε that buys the
# root's noisy class histogram (its sum is the record count of the depth rule).
ROOT_COUNT_SHARE = 0.1
STOPPING_RULES = ("noisy_count", "none")
FALLBACKS = ("hierarchical", "none")
# The fallback keeps a depth's deviations from the parents only beyond this many standard
# deviations of the noise in their moment estimate (see DPDecisionTreeClassifier._smooth).
SHRINK_MARGIN = 1.0


def check_max_depth(value) -> None:
    """``max_depth`` must be "auto" or a whole number ≥ 1 (ValueError otherwise)."""
    if isinstance(value, str) and value == AUTO:
        return
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f'max_depth must be "auto" or a whole number ≥ 1, got {value!r}')


def privacy_status(steps, max_depth) -> str:
    """ "ε-DP", or "approximate" when some step may sample d > 2 layers by MCMC (with
    ``max_depth="auto"`` the depth, up to 5, is only known after fitting, so d > 2 is
    "approximate")."""
    depth = MAX_AUTO_DEPTH if max_depth == AUTO else int(max_depth)
    return "approximate" if min(int(steps), depth) > 2 else "ε-DP"


def auto_depth(
    n_records: float,
    branching,
    n_classes: int,
    epsilon: float,
    steps: int = 1,
    cap: int = MAX_AUTO_DEPTH,
) -> int:
    """The depth of ``max_depth="auto"``: the largest D ≤ 5 whose leaves would still hold
    more records per class than the noise of their counts, 0 when even D = 1 fails.

    With n̂ the record count (declared by the user, or the root's noisy count), b the
    mean number of children per split (``n_bins`` for a continuous feature, the value
    count for a discrete one) and ε'(D) = ``epsilon`` / (⌈D/d⌉ + 1) the budget of a
    leaf's counts at depth D (``epsilon`` is what is left for the splits and the
    leaves), D must satisfy

        n̂ / (k · b^D) ≥ √2 / ε'(D),

    i.e. an average leaf of a full tree of depth D holds more records per class than
    the standard deviation √2/ε' of its Laplace noise — Friedman & Schuster's stopping
    rule (N_T/(t·|C|) < √2/ε) applied to the whole tree with the mean branching. D is
    capped at ``cap``: 5, Friedman & Schuster's depth (the estimator also caps it at
    the number of features when all are discrete). It reads only public numbers and
    n̂, so it is DP whenever n̂ is: a declared n̂ costs nothing, a noisy one its count's
    ε."""
    b = float(np.mean(branching))
    if b <= 1:
        return 0
    best = 0
    for depth in range(1, cap + 1):
        eps_leaf = epsilon / (math.ceil(depth / steps) + 1)
        if n_records / (n_classes * b**depth) >= math.sqrt(2) / eps_leaf:
            best = depth
    return best


def stopping_rule(
    noisy_counts: np.ndarray, used: np.ndarray, n_values: np.ndarray, layers: int, epsilon: float
) -> np.ndarray:
    """Which nodes Friedman & Schuster's rule makes leaves (True = stop).

    Friedman & Schuster 2010 (KDD, §4: their differentially private ID3) stop at a node when
    N_T / (t·|C|) < √2/ε: N_T its noisy record count, t = max_{A∈A}|A| the largest
    number of values among the attributes still available, |C| the number of classes
    and √2/ε the standard deviation of the Laplace noise on a class count — the children
    would hold fewer records per class than their counts' noise. Here N_T is the sum of
    the node's noisy class histogram (``noisy_counts``, one row per node), ε = ``epsilon``
    is ε', the budget of a leaf's counts, and for a DPEA step of ℓ = ``layers`` > 1
    layers the t children become the t·b̄^(ℓ−1) cells the step creates (b̄ the mean
    number of values of the available features): N_T / (t·b̄^(ℓ−1)·k) < √2/ε'. At
    ℓ = 1 this is their rule exactly. Continuous features count as ``n_bins`` values."""
    widths = np.where(used, 0, n_values[None, :]).astype(np.float64)
    t = widths.max(axis=1)
    mean = widths.sum(axis=1) / np.maximum((~used).sum(axis=1), 1)
    cells = np.maximum(t * mean ** (layers - 1), 1.0)
    k = noisy_counts.shape[1]
    return (noisy_counts.sum(axis=1) / (cells * k) < math.sqrt(2) / epsilon) | (t == 0)


def discrete_laplace_variance(epsilon) -> np.ndarray:
    """Variance of the discrete Laplace law P(z) ∝ exp(−ε|z|): 2q / (1 − q)², q = e^−ε."""
    q = np.exp(-np.asarray(epsilon, dtype=np.float64))
    return 2.0 * q / (1.0 - q) ** 2


@dataclass(frozen=True)
class Budget:
    """How a fit splits ε (every number public: it depends on the depth only).

    ``root`` buys the root's class histogram (``max_depth="auto"`` without a declared
    record count, else 0); the rest is ``(n_levels + 1) · level``: each of the
    ⌈D/d⌉ step levels and the leaves get ε' = ``level``. Below the root a step level
    spends ``count`` (ρ·ε', 0 without the stopping rule) on node histograms and
    ``level − count`` on the exponential mechanism."""

    epsilon: float
    depth: int
    steps: int
    root: float
    level: float
    count: float

    @property
    def n_levels(self) -> int:
        return math.ceil(self.depth / self.steps) if self.depth > 0 else 0

    def split(self, level: int) -> float:
        """ε of the exponential-mechanism step at step level ``level`` (0 = the root)."""
        return self.level if level == 0 else self.level - self.count

    def leaf(self, level: int, counted: bool) -> float:
        """ε of the final counts of a leaf closed at step level ``level``: what its records
        have not spent, i.e. the later levels' ε' and the leaves' ε', less this level's
        node count when it was taken (``counted``). A leaf of full depth gets ε'."""
        return (self.n_levels - level + 1) * self.level - (self.count if counted else 0.0)


def bin_codes(encoded: EncodedData, schema: Schema, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Every feature as codes: continuous ones cut at ``n_bins`` equal-width public bins."""
    lows = np.array([f.low for f in schema.continuous])
    highs = np.array([f.high for f in schema.continuous])
    width = np.where(highs > lows, highs - lows, 1.0)
    binned = np.floor((encoded.continuous - lows) / width * n_bins).astype(np.int64)
    binned = np.clip(binned, 0, n_bins - 1)
    codes = np.hstack([binned, encoded.discrete.astype(np.int64)])
    n_values = np.array(
        [n_bins] * len(schema.continuous) + [len(f.values) for f in schema.discrete]
    )
    return codes, n_values


def max_operator(counts: np.ndarray) -> np.ndarray:
    """Σ over the last-but-one axis of the largest class count (the FS score)."""
    return counts.max(axis=-1).sum(axis=-1)


def split_scores(
    node: np.ndarray, codes: np.ndarray, y: np.ndarray, n_nodes: int, n_values: np.ndarray, k: int
) -> np.ndarray:
    """Score (n_nodes, n_features) of splitting each node on each feature."""
    scores = np.zeros((n_nodes, codes.shape[1]))
    for f, width in enumerate(n_values):
        flat = (node * width + codes[:, f]) * k + y
        counts = np.bincount(flat, minlength=n_nodes * width * k).reshape(n_nodes, width, k)
        scores[:, f] = max_operator(counts)
    return scores


class DPDecisionTreeClassifier(ClassifierMixin, BaseEstimator):
    """DP greedy decision tree: DPEA with ``steps`` = d, Friedman–Schuster at d = 1.

    Privacy: for d ≤ 2, ``epsilon``-DP under add/remove-one neighbours (public
    schema). Each record meets: with ``max_depth="auto"`` and no ``declared_n``, the
    root's noisy class histogram (ε_root = 0.1·ε); then at most ⌈D/d⌉ step levels of
    ε' = (ε − ε_root) / (⌈D/d⌉ + 1) each — below the root a level spends ρ·ε' (ρ = 0.2)
    on its node's noisy class histogram (the stopping rule) and the rest on the
    exponential-mechanism step — and one noisy leaf count: ε' for a leaf at full depth,
    and for a leaf closed earlier the ε' of every level its records did not reach as
    well (so every record spends exactly ε). The ledger books each level's parts in
    parallel over its disjoint nodes. For d > 2 the steps of three or more layers
    sample their subtree with the paper's Metropolis MCMC (``mcmc_steps`` proposals),
    which only approximates the exponential mechanism: such a model is "approximate" —
    NO ε is proven, and its ledger says so. Counts carry exact discrete Laplace noise,
    P(z) ∝ exp(−ε|z|).

    **Stopping rule** (``stopping="noisy_count"``; Friedman & Schuster 2010, KDD, §4):
    a frontier node below the root becomes a leaf when its noisy record count N̂ (the
    sum of its noisy class histogram) satisfies N̂ / (t·k) < √2/ε', with t the largest
    number of children among the features it may still split on and k the number of
    classes; before a DPEA step of ℓ layers t becomes t·b̄^(ℓ−1), b̄ the mean number of
    children of those features (see :func:`stopping_rule`). With ``max_depth="auto"``
    the root is tested too, on the root histogram; with an explicit depth the root
    always splits (the depth asks for a tree). The tree's shape thus depends on the
    data through the exponential mechanism and these noisy counts only: both are part
    of the DP release.

    **Depth**: ``max_depth="auto"`` picks D by :func:`auto_depth` from the record count
    — ``declared_n`` when given (public, no ε), else the root histogram's sum — capped
    at 5. An integer is the maximal depth D as before (the stopping rule may stop
    earlier).

    **Graceful degradation** (``fallback="hierarchical"``): the prediction of a leaf is
    built only from released values, so it is post-processing and costs no ε. Each node
    gets an estimate of its class counts: a leaf its noisy counts, an inner node the sum
    of its children's estimates, and a node with its own noisy histogram (root, stopping
    rule) the inverse-variance mean of that and the rest. From the root down, a node
    keeps the part of its deviation from its parent's shares that stands out of its
    noise (empirical Bayes shrinkage, one heterogeneity estimate per depth; see
    :meth:`_smooth`): a leaf with a clear signal keeps its own shares, a noise-dominated
    leaf (empty, or small against its noise) falls back to its parent's and ultimately
    to the root's noisy class prior, so when noise dominates the model predicts the
    majority class rather than noise. ``fallback="none"`` predicts from the leaf's own
    clipped noisy counts (the papers' rule).

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
        Equal-width bins of each continuous feature's public domain.
    mcmc_steps : int, default=1000
        Metropolis proposals per subtree choice when a step has three or more
        layers (the paper's ``stepLimit``; it gives no number, so 1000). Unused for
        d ≤ 2.
    declared_n : int, default=0
        A public record count for ``max_depth="auto"`` (0: none; then 10% of ε buys a
        noisy count of the root's classes). Unused with an explicit depth.
    stopping : {"noisy_count", "none"}, default="noisy_count"
        Friedman & Schuster's noise-aware stopping rule, or none (grow to depth D).
    fallback : {"hierarchical", "none"}, default="hierarchical"
        How leaves predict: shrunk towards their parents' noisy class shares, or from
        their own noisy counts only.
    schema : Schema or None
    random_state : int, numpy generator or None
        Kept for scikit-learn's API only. This algorithm has no public randomness, so
        it seeds nothing: in particular it does NOT seed the noise (two fits with the
        same ``random_state`` differ).
    noise_seed : int or None, default=None
        None (the default): secret noise from a fresh OS key, never stored. An integer
        makes every random choice replayable (same seed, same model) for tests,
        teaching and figures: NOT private (the noise can be replayed and subtracted).

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
        The released integer counts of every leaf (discrete Laplace at ``leaf_epsilon_``).
    leaf_epsilon_ : ndarray of float
        The ε of each leaf's counts (ε' at full depth, more for a leaf closed earlier).
    counted_nodes_, counted_noisy_counts_, counted_epsilon_ : ndarray
        The nodes with a released noisy class histogram (the root with "auto"; the
        stopping rule's frontier nodes), those histograms and their ε.
    leaf_proba_ : ndarray, shape (n_leaves, k)
        The class shares each leaf predicts (post-processing of the released counts).
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
    check_max_depth = staticmethod(check_max_depth)
    privacy_status = staticmethod(privacy_status)

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int | str = AUTO,
        steps: int = 1,
        n_bins: int = 8,
        mcmc_steps: int = 1000,
        declared_n: int = 0,
        stopping: str = "noisy_count",
        fallback: str = "hierarchical",
        schema=None,
        random_state=None,
        noise_seed: int | None = None,
    ):
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.steps = steps
        self.n_bins = n_bins
        self.mcmc_steps = mcmc_steps
        self.declared_n = declared_n
        self.stopping = stopping
        self.fallback = fallback
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed

    def _validate_params(self) -> None:
        _check_epsilon(self.epsilon)
        check_max_depth(self.max_depth)
        check_whole_numbers(self, {"steps": 1, "n_bins": 2, "mcmc_steps": 1, "declared_n": 0})
        if self.stopping not in STOPPING_RULES:
            raise ValueError(
                f"stopping must be one of {', '.join(STOPPING_RULES)}, got {self.stopping!r}"
            )
        if self.fallback not in FALLBACKS:
            raise ValueError(
                f"fallback must be one of {', '.join(FALLBACKS)}, got {self.fallback!r}"
            )
        if self.noise_seed is not None:
            NoiseSource.replayable(self.noise_seed)
        if not self._auto and self.steps > self.max_depth:
            raise ValueError(
                f"steps d = {self.steps} exceeds the depth D = {self.max_depth}; use d ≤ D"
            )

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

    def _budget(self, depth: int) -> Budget:
        eps = float(self.epsilon)
        root = ROOT_COUNT_SHARE * eps if self._auto and not self.declared_n else 0.0
        n_levels = math.ceil(depth / self.steps) if depth > 0 else 0
        level = (eps - root) / (n_levels + 1)
        count = COUNT_SHARE * level if self.stopping == "noisy_count" and n_levels > 1 else 0.0
        return Budget(eps, depth, int(self.steps), root, level, count)

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
        codes, n_values = bin_codes(encoded, schema, self.n_bins)
        self.n_values_ = n_values
        k = len(schema.classes)
        y = encoded.y
        root_counts = None
        self.n_records_estimate_ = None
        if self._auto:
            if self.declared_n:
                n_hat = float(self.declared_n)
            else:
                # The root's noisy class histogram: the depth rule's record count, the
                # root's stopping test and the class prior of the fallback.
                root_eps = ROOT_COUNT_SHARE * float(self.epsilon)
                root_counts = np.bincount(y, minlength=k) + rng.discrete_laplace(root_eps, k)
                n_hat = float(root_counts.sum())
            self.n_records_estimate_ = n_hat
            rest = float(self.epsilon) - (0.0 if root_counts is None else root_eps)
            cap = MAX_AUTO_DEPTH
            if not schema.continuous:
                cap = min(cap, len(schema.features))
            depth = auto_depth(n_hat, n_values, k, rest, int(self.steps), cap)
        else:
            depth = int(self.max_depth)
        self.depth_ = depth
        self.budget_ = self._budget(depth)
        self._grow(codes, y, n_values, k, rng, self.budget_, root_counts)
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    # --- growing ----------------------------------------------------------------------

    def _grow(self, codes, y, n_values, k, rng, budget: Budget, root_counts) -> None:
        D, d = budget.depth, int(self.steps)
        tree = _NodeTable()
        state = _Frontier(
            ids=np.array([0]),
            used=np.zeros((1, codes.shape[1]), dtype=bool),
            record_node=np.zeros(len(y), dtype=np.int64),
            codes=codes,
            y=y,
        )
        counted = ([], [], [])  # node ids, noisy histograms, their ε
        if root_counts is not None:
            counted[0].append(np.array([0]))
            counted[1].append(root_counts[None, :])
            counted[2].append(np.array([budget.root]))
        self.candidates_ = 0
        self._mcmc_counts = [0, 0]  # proposals, accepted
        depth = level = 0
        while len(state.ids):
            left = D - depth
            closing = state.used.all(axis=1) | (left <= 0)
            state = state.close(closing, tree, k, budget.leaf(level, counted=False))
            if not len(state.ids):
                break
            layers = min(d, left)
            noisy = None
            if level == 0 and root_counts is not None:
                noisy, stop_eps = root_counts[None, :], budget.leaf(0, counted=False)
            elif level > 0 and budget.count > 0:
                true = _node_counts(state.record_node, state.y, len(state.ids), k)
                noise = rng.discrete_laplace(budget.count, size=true.size)
                noisy = true + noise.reshape(true.shape)
                counted[0].append(state.ids.copy())
                counted[1].append(noisy)
                counted[2].append(np.full(len(state.ids), budget.count))
                stop_eps = budget.leaf(level, counted=True)
            if noisy is not None and self.stopping == "noisy_count":
                stop = stopping_rule(noisy, state.used, n_values, layers, budget.level)
                state = state.close(stop, tree, k, stop_eps)
                if not len(state.ids):
                    break
            feat = self._choose(state, n_values, k, layers, budget.split(level), rng)
            state = _expand_subtrees(
                state, feat, n_values, tree, depth, k, layers, budget.leaf(level + 1, False)
            )
            depth += layers
            level += 1
        self.feature_ = np.asarray(tree.feature)
        self.first_child_ = np.asarray(tree.first_child)
        self.node_depth_ = np.asarray(tree.depth)
        self.parent_ = np.asarray(tree.parent)
        order = np.argsort(tree.leaf_ids)
        self.leaf_nodes_ = np.asarray(tree.leaf_ids)[order]
        self.leaf_counts_ = np.concatenate(tree.leaf_counts)[order]
        self.leaf_epsilon_ = np.asarray(tree.leaf_eps, dtype=np.float64)[order]
        # Exact discrete Laplace, P(z) ∝ exp(−ε|z|) at each leaf's ε: integer counts. One
        # draw per group of leaves sharing an ε (ε' first), leaves in node order.
        noisy = self.leaf_counts_.copy()
        for eps in sorted(set(self.leaf_epsilon_.tolist()), reverse=True):
            rows = np.flatnonzero(self.leaf_epsilon_ == eps)
            noise = rng.discrete_laplace(eps, size=len(rows) * k)
            noisy[rows] += noise.reshape(len(rows), k)
        self.leaf_noisy_counts_ = noisy
        if counted[0]:
            self.counted_nodes_ = np.concatenate(counted[0])
            self.counted_noisy_counts_ = np.concatenate(counted[1]).astype(np.int64)
            self.counted_epsilon_ = np.concatenate(counted[2])
        else:
            self.counted_nodes_ = np.zeros(0, dtype=np.int64)
            self.counted_noisy_counts_ = np.zeros((0, k), dtype=np.int64)
            self.counted_epsilon_ = np.zeros(0)
        if self.fallback == "hierarchical":
            self.leaf_proba_ = self._smooth(k)
        else:
            clipped = np.clip(self.leaf_noisy_counts_, 0, None).astype(np.float64)
            total = clipped.sum(axis=1, keepdims=True)
            self.leaf_proba_ = np.divide(
                clipped, total, out=np.full_like(clipped, 1.0 / k), where=total > 0
            )
        # The label is a class of largest predicted share; ties (frequent with integer
        # counts) are broken uniformly at random (post-processing).
        released = self.leaf_proba_ if self.fallback == "hierarchical" else noisy
        top = released.max(axis=1, keepdims=True)
        jitter = rng.random(released.shape)
        self.leaf_labels_ = np.argmax(np.where(released >= top, jitter, -1.0), axis=1)
        proposed, accepted = self._mcmc_counts
        self.mcmc_acceptance_ = accepted / proposed if proposed else float("nan")

    def _smooth(self, k: int) -> np.ndarray:
        """Each leaf's predicted class shares, from released values only.

        **Estimates, bottom-up.** Every node gets an estimate ĉ of its class counts and
        a per-class noise variance v: a leaf its noisy counts (v = 2q/(1 − q)², q =
        e^−ε, of the discrete Laplace at its ε); an inner node the sum of its children's
        estimates (variances add); a node with its own noisy histogram (the root with
        "auto", the stopping rule's nodes) the inverse-variance mean of that and the rest.

        **Shares, top-down** (empirical Bayes shrinkage towards the parent). The root's
        shares p are max(ĉ, 0) normalised (uniform if all ≤ 0). At each depth, a node
        of estimated size n̂ = max(Σ ĉ, 0) and parent shares p_P has deviation r = ĉ −
        n̂·p_P, whose noise contributes v·(k − 2 + k·Σp_P²) to ‖r‖² (the noise of ĉ
        projected off n̂). The true deviation is modelled as n̂·d with E‖d‖² = δ², one
        δ² per depth estimated by moments over its nodes, conservatively: δ² =
        max(0, Σ(‖r‖² − noise) − z·√(5·Σ noise²)) / Σn̂², z = ``SHRINK_MARGIN`` = 1, where
        √(5·Σ noise²) bounds the standard deviation of that sum when there is no true
        deviation (Laplace noise has kurtosis 6, so Var(e²) = 5·Var(e)²); pure noise thus
        rarely passes for a signal. The node keeps the share w = n̂²δ² / (n̂²δ² + noise)
        of its deviation: p =
        normalise(max(n̂·p_P + w·r, 0)). With little noise w → 1 (its own counts); a
        node whose counts are noise-dominated (empty, or small against √v), or a depth
        whose deviations do not stand out of the noise, gets w → 0 and predicts its
        parent's shares — ultimately the root's noisy class prior, the majority class.

        **Privacy.** Every input is released already (the noisy leaf and node counts,
        the tree) or public (the ε of each count), so this is post-processing: it costs
        no ε and needs no ledger entry."""
        n_nodes = len(self.feature_)
        est = np.zeros((n_nodes, k))
        var = np.zeros(n_nodes)
        est[self.leaf_nodes_] = self.leaf_noisy_counts_
        var[self.leaf_nodes_] = discrete_laplace_variance(self.leaf_epsilon_)
        own = np.full(n_nodes, -1)
        own[self.counted_nodes_] = np.arange(len(self.counted_nodes_))
        own_var = discrete_laplace_variance(self.counted_epsilon_)
        max_depth = int(self.node_depth_.max())
        for depth in range(max_depth, -1, -1):
            nodes = np.flatnonzero(self.node_depth_ == depth)
            mine = nodes[own[nodes] >= 0]
            if len(mine):
                row = own[mine]
                w_rest, w_own = 1.0 / var[mine], 1.0 / own_var[row]
                own_counts = self.counted_noisy_counts_[row] * w_own[:, None]
                est[mine] = (est[mine] * w_rest[:, None] + own_counts) / (w_rest + w_own)[:, None]
                var[mine] = 1.0 / (w_rest + w_own)
            if depth > 0:
                np.add.at(est, self.parent_[nodes], est[nodes])
                np.add.at(var, self.parent_[nodes], var[nodes])
        proba = np.full((n_nodes, k), 1.0 / k)
        root = np.clip(est[0], 0.0, None)
        if root.sum() > 0:
            proba[0] = root / root.sum()
        for depth in range(1, max_depth + 1):
            nodes = np.flatnonzero(self.node_depth_ == depth)
            prior = proba[self.parent_[nodes]]
            n_hat = np.maximum(est[nodes].sum(axis=1), 0.0)
            dev = est[nodes] - n_hat[:, None] * prior
            noise = var[nodes] * (k - 2 + k * (prior**2).sum(axis=1))
            spread = float(np.sum(n_hat**2))
            excess = float(np.sum((dev**2).sum(axis=1) - noise))
            excess -= SHRINK_MARGIN * math.sqrt(5.0 * float(np.sum(noise**2)))
            delta2 = max(0.0, excess) / spread if spread > 0 else 0.0
            signal = n_hat**2 * delta2
            keep = np.divide(signal, signal + noise, out=np.zeros_like(signal), where=signal > 0)
            fit = np.clip(n_hat[:, None] * prior + keep[:, None] * dev, 0.0, None)
            total = fit.sum(axis=1, keepdims=True)
            proba[nodes] = np.where(total > 0, fit / np.where(total > 0, total, 1.0), prior)
        return proba[self.leaf_nodes_]

    def _choose(self, state, n_values, k, layers, eps, rng):
        """Exponential-mechanism choice of each frontier node's next ``layers`` layers.

        Returns the chosen subtrees as a padded feature array (see :func:`_layout`):
        one row per frontier node, -1 where a node has no feature left (a leaf).
        One or two layers: the exact mechanism. Three or more: Metropolis MCMC (only
        approximately the mechanism; not proven DP)."""
        scale = eps / 2.0  # exp(ε'·score / (2Δ)) with Δ = 1
        n_nodes, m = state.used.shape
        allowed = ~state.used
        if layers > 2:
            feat, proposed, accepted = mcmc_subtrees(
                state.record_node,
                state.codes,
                state.y,
                state.used,
                n_values,
                k,
                layers,
                scale,
                self.mcmc_steps,
                rng,
            )
            self._mcmc_counts[0] += proposed
            self._mcmc_counts[1] += accepted
            widths = [tuple(sorted(n_values[row].tolist())) for row in allowed]
            self.candidates_ += sum(_n_subtrees(w, layers) for w in widths)
            return feat
        s1 = split_scores(state.record_node, state.codes, state.y, n_nodes, n_values, k)
        if layers == 1:
            self.candidates_ += int(allowed.sum())
            root = _gumbel_argmax(np.where(allowed, scale * s1, -np.inf), rng)
            return root[:, None]
        width = int(n_values.max())
        pair = np.full((n_nodes, m, width, m), -np.inf)
        leaf_term = np.zeros((n_nodes, m, width))
        for a in range(m):
            wa = int(n_values[a])
            child = state.record_node * wa + state.codes[:, a]
            counts = _node_counts(child, state.y, n_nodes * wa, k).reshape(n_nodes, wa, k)
            leaf_term[:, a, :wa] = scale * counts.max(axis=-1)
            sub = split_scores(child, state.codes, state.y, n_nodes * wa, n_values, k)
            pair[:, a, :wa, :] = scale * sub.reshape(n_nodes, wa, m)
        # A child of a may split on any feature its path has not used, a excluded.
        not_a = ~np.eye(m, dtype=bool)
        child_allowed = allowed[:, None, :] & not_a[None, :, :]  # (node, a, f)
        pair = np.where(child_allowed[:, :, None, :], pair, -np.inf)
        has_feature = child_allowed.any(axis=-1)  # (node, a)
        valid = np.arange(width)[None, :] < n_values[:, None]  # (a, v)
        with np.errstate(divide="ignore"):
            split_logz = logsumexp(pair, axis=-1)
        child_logz = np.where(has_feature[:, :, None], split_logz, leaf_term)
        child_logz = np.where(valid[None], child_logz, 0.0)
        root = _gumbel_argmax(np.where(allowed, child_logz.sum(axis=-1), -np.inf), rng)
        rows = np.arange(n_nodes)
        child = _gumbel_argmax(pair[rows, root], rng)
        child = np.where(has_feature[rows, root][:, None] & valid[root], child, -1)
        n_allowed = allowed.sum(axis=1)
        for i in range(n_nodes):
            for a in np.flatnonzero(allowed[i]):
                self.candidates_ += max(1, int(n_allowed[i]) - 1) ** int(n_values[a])
        return np.concatenate([root[:, None], child], axis=1)

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data beyond
        the depth, which "auto" reads from a noisy or declared count; before such a fit
        the split of ε − ε_root over the levels is booked as one part).

        Steps of three or more layers (d > 2) sample by MCMC: their entries are marked
        unproven, so the ledger claims no total ε. So is replayable noise (a
        ``noise_seed``): NOT private."""
        ledger = PrivacyLedger()
        if schema_inferred:
            ledger.add_sequential(
                LedgerEntry(
                    "class list and feature domains (inferred from the data)",
                    "all records, without noise",
                    float("inf"),
                    private=False,
                )
            )
        book_noise_mode(ledger, self.noise_seed is not None)
        depth = self._depth()
        budget = self._budget(MAX_AUTO_DEPTH if depth is None else depth)
        if budget.root:
            ledger.add_sequential(
                LedgerEntry(
                    "noisy class counts of all records (discrete Laplace: the record count "
                    "of the depth rule, the root's stopping test and class prior)",
                    "all records",
                    budget.root,
                )
            )
        if depth is None:
            rest = budget.epsilon - budget.root
            exact = int(self.steps) <= 2
            ledger.add_sequential(
                LedgerEntry(
                    "split steps, node counts and leaf counts of the tree (the depth D is "
                    f"chosen when fitting; then ⌈D/{self.steps}⌉ steps and the leaves share "
                    f"ε = {rest:g} equally)"
                    + ("" if exact else " — steps of d > 2 layers sample by MCMC: NOT proven"),
                    "all records, each level's nodes disjoint",
                    rest if exact else float("inf"),
                    private=exact,
                )
            )
            self._approximate_note(ledger)
            return ledger
        eps = budget.level
        early = "the leaves closed at an earlier step (disjoint records): part of their counts"
        for level in range(budget.n_levels):
            layers = min(self.steps, depth - level * self.steps)
            if level > 0 and budget.count:
                ledger.add_parallel(
                    [
                        LedgerEntry(
                            f"noisy class counts of the step-{level + 1} nodes (stopping rule)",
                            "the nodes of that step (disjoint records)",
                            budget.count,
                        ),
                        LedgerEntry(early, "those leaves", budget.count),
                    ],
                    summary=(
                        f"Before split step {level + 1}, each node released its noisy class "
                        f"counts (stopping rule) with ε = {budget.count:g} (leaves closed "
                        "earlier spent the same on their counts)"
                    ),
                )
            split_eps = budget.split(level)
            if layers > 2:
                query = (
                    f"split step {level + 1} (approximate exponential mechanism: Metropolis "
                    f"MCMC, {self.mcmc_steps} proposals; its nominal ε' = {split_eps:g} is NOT "
                    "a proven bound)"
                )
                summary = (
                    f"Split step {level + 1} sampled {layers}-layer subtrees by MCMC on "
                    f"disjoint nodes: approximate EM, nominal ε' = {split_eps:g}, not proven"
                )
            else:
                query = f"exponential-mechanism split step {level + 1}"
                summary = (
                    f"Split step {level + 1} chose subtrees on disjoint nodes, ε = {split_eps:g}"
                )
            # An unproven step is booked like any query without a proof: unbounded ε.
            entries = [
                LedgerEntry(
                    query,
                    "the nodes of that step (disjoint records)",
                    split_eps if layers <= 2 else float("inf"),
                    private=layers <= 2,
                )
            ]
            if level > 0 or budget.root:
                entries.append(LedgerEntry(early + " or at this step", "those leaves", split_eps))
                summary += " (nodes that became leaves spent it on their counts instead)"
            ledger.add_parallel(entries, summary=summary)
        ledger.add_parallel(
            [LedgerEntry("discrete Laplace leaf counts", "the leaves (disjoint records)", eps)],
            summary=(
                f"The leaves released discrete-Laplace-noised counts with ε' = {eps:g}"
                + (
                    " (a leaf closed before full depth adds the ε of the steps its records "
                    "did not reach)"
                    if budget.n_levels > 0
                    else ""
                )
            ),
        )
        self._approximate_note(ledger)
        return ledger

    def _approximate_note(self, ledger: PrivacyLedger) -> None:
        if self.approximate:
            ledger.notes.append(
                f"With d = {self.steps} > 2 the subtree choices are approximate EM: a Metropolis "
                "chain of finite length only approximates the exponential mechanism, so no "
                "ε is proven for this model (choose d ≤ 2 for a proven ε)."
            )

    # --- prediction ---------------------------------------------------------------------

    def _leaf_of(self, encoded: EncodedData) -> np.ndarray:
        """The leaf node of each record; -1 where an unknown discrete value stops it."""
        codes, _ = bin_codes(encoded, self.schema_, self.n_bins)
        node = np.zeros(len(codes), dtype=np.int64)
        active = np.arange(len(codes))
        for _ in range(int(self.node_depth_.max()) + 1):
            f = self.feature_[node[active]]
            active = active[f >= 0]
            if len(active) == 0:
                break
            value = codes[active, self.feature_[node[active]]]
            unknown = value < 0
            node[active[unknown]] = -1
            active, value = active[~unknown], value[~unknown]
            node[active] = self.first_child_[node[active]] + value
        return node

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "feature_")
        return self._proba(prediction_data(self, X))

    def _proba(self, encoded: EncodedData) -> np.ndarray:
        """The leaf's predicted class shares (``leaf_proba_``); a record stopped by an
        unknown value abstains (uniform), as in an exported model. The shares are
        normalised again here exactly as a released model normalises its leaf outputs
        (clip at 0, divide by the sum), so both give the same floats."""
        node = self._leaf_of(encoded)
        leaf = np.minimum(np.searchsorted(self.leaf_nodes_, node), len(self.leaf_nodes_) - 1)
        output = np.clip(self.leaf_proba_[leaf], 0.0, None)
        output[node < 0] = 0.0
        total = output.sum(axis=1, keepdims=True)
        k = output.shape[1]
        return np.divide(output, total, out=np.full_like(output, 1.0 / k), where=total > 0)

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "feature_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def flip_probability(self, counts: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Exact Laplace flip probability of each row of ``counts`` at its own ε (a leaf
        closed early has a larger ε than ε'); equal rows share one computation."""
        mech = get_mechanism("laplace_counts")
        out = np.zeros(len(counts))
        for value in np.unique(eps):
            rows = np.flatnonzero(eps == value)
            unique, inverse = np.unique(counts[rows], axis=0, return_inverse=True)
            flip = mech.flip_probability(unique, float(value))
            out[rows] = flip[inverse.reshape(-1)]
        return out

    @property
    def diagnostics_(self) -> dict:
        """Leaf diagnostics from the raw data (NOT private), as the forest reports them."""
        counts = self.leaf_counts_
        nonempty = counts.sum(axis=1) > 0
        flipped = ~is_majority(counts)[np.arange(len(counts)), self.leaf_labels_]
        flip = np.zeros(len(counts))
        flip[nonempty] = self.flip_probability(counts[nonempty], self.leaf_epsilon_[nonempty])
        return {
            "n_leaves_total": float(len(counts)),
            "n_leaves_total_exact": True,
            "n_leaves_nonempty": int(nonempty.sum()),
            "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
            "flipped_leaf_pct": 100.0 * float(flipped[nonempty].mean()) if nonempty.any() else 0.0,
            "expected_flip_pct": 100.0 * float(flip[nonempty].mean()) if nonempty.any() else 0.0,
            "mean_smooth_sensitivity": float("nan"),
        }

    def leaf_table(self) -> pd.DataFrame:
        """One row per leaf, from the raw data: NOT private, for the data owner."""
        counts = self.leaf_counts_
        names = [str(c) for c in self.schema_.classes]
        flipped = ~is_majority(counts)[np.arange(len(counts)), self.leaf_labels_]
        return pd.DataFrame(
            {
                "tree": 1,
                "depth": self.node_depth_[self.leaf_nodes_],
                "n_records": counts.sum(axis=1),
                **{f"count[{c}]": counts[:, i] for i, c in enumerate(names)},
                "released_label": np.asarray(names, dtype=object)[self.leaf_labels_],
                "true_majority": np.asarray(names, dtype=object)[np.argmax(counts, axis=1)],
                "flipped": flipped & (counts.sum(axis=1) > 0),
                "flip_probability": self.flip_probability(counts, self.leaf_epsilon_),
                "empty": counts.sum(axis=1) == 0,
            }
        )


def enumerate_subtrees(
    codes: np.ndarray, y: np.ndarray, n_values: np.ndarray, k: int, layers: int
) -> tuple[list[tuple], np.ndarray]:
    """Every (layers+1)-layer subtree at a root holding these records, with its score.

    Brute force, for audits and tests on tiny data: a candidate is (a,) for one layer;
    for more, (a, (c_0, …, c_{b-1})) where c_v is child v's own subtree in the same
    nested form — a bare feature at the last layer — or -1 when child v has no feature
    left (a leaf). Two layers thus read (a, (f_0, …, f_{b-1})).
    """
    options = _subtree_options(codes, y, n_values, k, layers, frozenset(range(codes.shape[1])))
    candidates = [(c,) if layers == 1 else c for c, _ in options]
    return candidates, np.asarray([score for _, score in options], dtype=np.float64)


def _subtree_options(codes, y, n_values, k, layers, allowed) -> list[tuple]:
    if not allowed:
        return [(-1, float(np.bincount(y, minlength=k).max()))]
    options = []
    for a in sorted(allowed):
        wa = int(n_values[a])
        if layers == 1:
            counts = _node_counts(codes[:, a], y, wa, k)
            options.append((a, float(counts.max(axis=1).sum())))
            continue
        per_child = []
        for v in range(wa):
            rows = codes[:, a] == v
            per_child.append(
                _subtree_options(codes[rows], y[rows], n_values, k, layers - 1, allowed - {a})
            )
        for combo in itertools.product(*per_child):
            options.append(((a, tuple(c for c, _ in combo)), sum(score for _, score in combo)))
    return options


# --- padded subtrees and the Metropolis sampler ----------------------------------------


def _layout(width: int, layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded positions of the internal nodes of a (layers+1)-layer subtree.

    Every node gets ``width`` = the widest feature's child slots; level l holds
    width**l positions, numbered level after level, and a position's ``path`` (its
    index within its level) spells its child values in base ``width``. A padded
    feature array holds per position a feature, -1 (a leaf: no feature left) or -2
    (no such node). Returns (offsets of the levels, level and path per position)."""
    sizes = width ** np.arange(layers, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    level = np.repeat(np.arange(layers), sizes)
    return offsets, level, np.arange(offsets[-1]) - offsets[level]


def _expand_subtrees(
    state, feat, n_values, tree, depth: int, k: int, layers: int, leaf_eps: float = 0.0
):
    """Add each frontier node's chosen subtree (padded ``feat`` rows) to the tree; a node
    inside it left without a feature becomes a leaf whose counts get ``leaf_eps``."""
    width = int(n_values.max())
    offsets, _, _ = _layout(width, layers)
    chain = np.arange(len(state.ids))
    pos = np.zeros(len(chain), dtype=np.int64)
    for level in range(layers):
        f = feat[chain, pos]
        if level:
            stop = f < 0
            state = state.close(stop, tree, k, leaf_eps)
            chain, pos, f = chain[~stop], pos[~stop], f[~stop]
            if not len(chain):
                break
        state, parent, value = state.expand(f, n_values, tree, depth + level)
        chain = chain[parent]
        pos = offsets[level + 1] + (pos[parent] - offsets[level]) * width + value
    return state


def mcmc_subtrees(
    record_node: np.ndarray,
    codes: np.ndarray,
    y: np.ndarray,
    used: np.ndarray,
    n_values: np.ndarray,
    k: int,
    layers: int,
    scale: float,
    n_steps: int,
    rng: Rng,
) -> tuple[np.ndarray, int, int]:
    """Metropolis chains (DPEA's Algorithm 3), one per frontier node, run side by side.

    The target is the exponential mechanism over the node's (layers+1)-layer subtrees,
    P(s) ∝ exp(``scale`` · score(s)) with scale = ε'/(2Δ), Δ = 1 — the candidate space
    of :func:`enumerate_subtrees`. A chain starts from a random subtree; a proposal
    picks one internal node uniformly and gives it a uniformly drawn other allowed
    feature g in place of f; below it, f and g swap wherever they occur, so each path
    stays valid and the move is its own inverse. When f and g have the same number of
    values (e.g. continuous features, all cut into ``n_bins``) that proposal is
    symmetric and the acceptance is min(1, exp(scale·Δscore)). Otherwise, at the node
    and wherever f and g swapped, children vanish or appear (drawn uniformly, top
    down), and the acceptance carries the Hastings factor of the internal-node counts
    and of those draws, so the stationary law is still exactly the mechanism.

    Unlike the paper, which also stops once a buffer of recent scores varies little,
    every chain runs exactly ``n_steps`` proposals (a stopping rule read from the
    scores would depend on the data). The output after ``n_steps`` proposals is only
    approximately the mechanism's law: NOT proven DP ("approximate").

    Scores are recomputed only for the records below the changed node, from each
    record's leaf slot (its path to the subtree's bottom), in numpy.

    Returns
    -------
    feat : ndarray of shape (n_nodes, n_positions)
        The padded subtrees (see :func:`_layout`).
    proposed, accepted : int
        Proposals made (chains with an alternative) and accepted.
    """
    n_chains, m = used.shape
    width = int(n_values.max())
    offsets, level, path = _layout(width, layers)
    n_pos, span = int(offsets[-1]), width**layers
    if n_chains * max(n_pos, m) > MAX_MCMC_CELLS:
        raise ValueError(
            f"the MCMC over {layers}-layer subtrees of {n_chains:,} nodes needs too much "
            "memory; lower steps, n_bins or max_depth"
        )
    free = m - used.sum(axis=1)
    # ancestor[j, q]: the path of position q's ancestor on level j (-1 below q's level)
    depth_up = level[None, :] - np.arange(layers + 1)[:, None]
    ancestor = np.where(depth_up >= 0, path[None, :] // width ** np.maximum(depth_up, 0), -1)
    feat = np.full((n_chains, n_pos), -2, dtype=np.int64)
    n_internal = _settle(
        feat, np.ones(feat.shape, dtype=bool), used, free, n_values, offsets, rng
    )[2]
    key = record_node * span + _leaf_slots(feat, record_node, codes, offsets, width)
    rows = np.arange(n_chains)
    proposed = accepted = 0
    for _ in range(n_steps):
        node = _uniform_true(feat >= 0, rng)
        lv, pth = level[node], path[node]
        old = feat[rows, node]
        allowed = ~used
        for j in range(layers - 1):
            above = lv > j
            anc = feat[rows, offsets[j] + ancestor[j, node]]
            allowed[rows[above], anc[above]] = False
        allowed[rows, old] = False
        new = _uniform_true(allowed, rng)
        live = np.flatnonzero(new >= 0)
        if not len(live):
            continue
        n_live = len(live)
        lv, pth, old, new = lv[live], pth[live], old[live], new[live]
        cand = feat[live]
        cand[np.arange(n_live), node[live]] = new
        desc = (ancestor[lv] == pth[:, None]) & (level[None, :] > lv[:, None])
        cand = np.where(
            desc & (cand == old[:, None]),
            new[:, None],
            np.where(desc & (cand == new[:, None]), old[:, None], cand),
        )
        log_ratio = np.zeros(n_live)
        n_after = n_internal[live]
        if (n_values[old] != n_values[new]).any():
            # Widths changed (at the node and wherever f, g swapped): children vanish
            # or appear. Hastings factor: node counts and the draws of either side.
            log_new, log_removed, n_new, n_removed = _settle(
                cand, desc, used[live], free[live], n_values, offsets, rng
            )
            n_after = n_after - n_removed + n_new
            log_ratio += np.log(n_internal[live]) - np.log(n_after) + log_removed - log_new
        # Records below the changed node: a contiguous range of leaf-slot keys.
        reach = width ** (layers - lv)
        low = np.zeros(n_chains, dtype=np.int64)
        high = np.zeros(n_chains, dtype=np.int64)
        low[live] = live * span + pth * reach
        high[live] = low[live] + reach
        idx = np.flatnonzero((key >= low[record_node]) & (key < high[record_node]))
        which = np.zeros(n_chains, dtype=np.int64)
        which[live] = np.arange(n_live)
        owner = which[record_node[idx]]
        new_slots = _leaf_slots(cand, owner, codes[idx], offsets, width)
        old_slots = key[idx] - record_node[idx] * span
        log_ratio += scale * _score_change(owner, old_slots, new_slots, y[idx], n_live, k, span)
        take = rng.random(n_live) < np.exp(np.minimum(log_ratio, 0.0))
        feat[live[take]] = cand[take]
        n_internal[live[take]] = n_after[take]
        moved = take[owner]
        key[idx[moved]] = record_node[idx[moved]] * span + new_slots[moved]
        proposed += n_live
        accepted += int(take.sum())
    return np.where(feat < -1, -1, feat), proposed, accepted


def _settle(feat, region, used, free, n_values, offsets, rng) -> tuple[np.ndarray, ...]:
    """Make the positions in ``region`` consistent, top down, in place: a position
    exists iff it is the root or its parent splits on a feature with that many values.
    Positions that stop existing are removed (-2); new ones get a uniformly drawn
    allowed feature (-1 where none is left). Returns per row the log-probabilities of
    drawing the new and the removed internal nodes that way, and their numbers."""
    n_rows = len(feat)
    width = int(n_values.max())
    log_new, log_removed = np.zeros(n_rows), np.zeros(n_rows)
    n_new, n_removed = np.zeros(n_rows, dtype=np.int64), np.zeros(n_rows, dtype=np.int64)
    for lv in range(len(offsets) - 1):
        block = feat[:, offsets[lv] : offsets[lv + 1]]  # a view: edits reach feat
        inside = region[:, offsets[lv] : offsets[lv + 1]]
        if lv:
            local = np.arange(width**lv)
            parent = feat[:, offsets[lv - 1] + local // width]
            should = (parent >= 0) & (local % width < n_values[np.maximum(parent, 0)])
        else:
            should = np.ones(block.shape, dtype=bool)
        log_options = np.log(np.maximum(free - lv, 1))
        removed = inside & ~should & (block >= 0)
        log_removed -= log_options * removed.sum(axis=1)
        n_removed += removed.sum(axis=1)
        block[inside & ~should] = -2
        rows, cols = np.nonzero(inside & should & (block == -2))
        if not len(rows):
            continue
        allowed = ~used[rows]
        for j in range(lv):
            anc = feat[rows, offsets[j] + cols // width ** (lv - j)]
            allowed[np.arange(len(rows)), anc] = False
        drawn = _uniform_true(allowed, rng)
        block[rows, cols] = drawn
        log_new -= np.bincount(rows[drawn >= 0], minlength=n_rows) * log_options
        n_new += np.bincount(rows[drawn >= 0], minlength=n_rows)
    return log_new, log_removed, n_new, n_removed


def _leaf_slots(feat, owner, codes, offsets, width) -> np.ndarray:
    """Each record's leaf slot at the bottom of its owner's padded subtree (a record
    stopped early by a leaf takes the slot of that leaf's first descendant)."""
    slot = np.zeros(len(owner), dtype=np.int64)
    rows = np.arange(len(owner))
    for lv in range(len(offsets) - 1):
        f = feat[owner, offsets[lv] + slot]
        value = codes[rows, np.maximum(f, 0)]
        slot = slot * width + np.where(f >= 0, value, 0)
    return slot


def _score_change(owner, old_slot, new_slot, y, n_owners, k, span) -> np.ndarray:
    """Per owner, the max-operator score of these records grouped by ``new_slot``
    minus grouped by ``old_slot``."""
    key = np.concatenate([owner * span + old_slot, (owner + n_owners) * span + new_slot])
    labels = np.tile(y, 2)
    if 2 * n_owners * span * k <= 8 * len(key) + 1024:  # few slots: count them directly
        counts = np.bincount(key * k + labels, minlength=2 * n_owners * span * k)
        counts = counts.reshape(2 * n_owners * span, k)
        best = counts[:, 0]
        for c in range(1, k):  # max over the few classes: cheaper than a reduction
            best = np.maximum(best, counts[:, c])
        per = best.reshape(2 * n_owners, span).astype(np.float64) @ np.ones(span)
        return per[n_owners:] - per[:n_owners]
    groups, inverse = np.unique(key, return_inverse=True)
    counts = np.bincount(inverse * k + labels, minlength=len(groups) * k)
    best = counts.reshape(-1, k).max(axis=1)
    sign = np.where(groups < n_owners * span, -1.0, 1.0)
    per = np.bincount(groups // span, weights=sign * best, minlength=2 * n_owners)
    return per[:n_owners] + per[n_owners:]


def _uniform_true(mask: np.ndarray, rng: Rng) -> np.ndarray:
    """Per row, the column of a uniformly drawn True entry (-1 for a row with none)."""
    count = mask.sum(axis=1)
    r = np.floor(rng.random(len(mask)) * count).astype(np.int64)
    pick = np.argmax(np.cumsum(mask, axis=1) > r[:, None], axis=1)
    return np.where(count > 0, pick, -1)


@lru_cache(maxsize=4096)
def _n_subtrees(widths: tuple[int, ...], layers: int) -> int:
    """How many (layers+1)-layer subtrees a node has whose allowed features have these
    numbers of values (sorted)."""
    if layers == 0 or not widths:
        return 1
    return sum(
        _n_subtrees(widths[:i] + widths[i + 1 :], layers - 1) ** w for i, w in enumerate(widths)
    )


class _NodeTable:
    """The tree as flat lists: split feature and first child per node, and leaves."""

    def __init__(self) -> None:
        self.feature, self.first_child, self.depth, self.parent = [-1], [-1], [0], [-1]
        self.leaf_ids: list[int] = []
        self.leaf_counts: list[np.ndarray] = []
        self.leaf_eps: list[float] = []

    def add_children(
        self, nodes: np.ndarray, features: np.ndarray, widths: np.ndarray, depth: int
    ) -> np.ndarray:
        base = len(self.feature)
        if base + int(widths.sum()) > MAX_NODES:
            raise ValueError(
                f"the tree would exceed {MAX_NODES:,} nodes; lower max_depth or n_bins"
            )
        starts = base + np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
        for node, f, start in zip(nodes.tolist(), features.tolist(), starts.tolist()):
            self.feature[node], self.first_child[node] = f, start
        n_new = int(widths.sum())
        self.feature.extend([-1] * n_new)
        self.first_child.extend([-1] * n_new)
        self.depth.extend([depth + 1] * n_new)
        self.parent.extend(np.repeat(nodes, widths).tolist())
        return starts


class _Frontier:
    """Nodes still to split, their used features, and the records that reached them."""

    def __init__(self, ids, used, record_node, codes, y):
        self.ids, self.used, self.record_node, self.codes, self.y = (
            ids,
            used,
            record_node,
            codes,
            y,
        )

    def close(self, stop: np.ndarray, tree: _NodeTable, k: int, eps: float = 0.0) -> _Frontier:
        """Turn the ``stop`` nodes into leaves whose counts get ``eps``; keep the rest."""
        if not stop.any():
            return self
        counts = _node_counts(self.record_node, self.y, len(self.ids), k)
        tree.leaf_ids.extend(self.ids[stop].tolist())
        tree.leaf_counts.append(counts[stop])
        tree.leaf_eps.extend([float(eps)] * int(stop.sum()))
        keep = ~stop
        remap = np.cumsum(keep) - 1
        on = keep[self.record_node]
        return _Frontier(
            self.ids[keep],
            self.used[keep],
            remap[self.record_node[on]],
            self.codes[on],
            self.y[on],
        )

    def expand(self, features: np.ndarray, n_values: np.ndarray, tree: _NodeTable, depth: int):
        """Split every node on its feature; returns the children and their (parent, value)."""
        widths = n_values[features]
        starts = tree.add_children(self.ids, features, widths, depth)
        parent = np.repeat(np.arange(len(self.ids)), widths)
        value = np.arange(len(parent)) - np.repeat(np.cumsum(widths) - widths, widths)
        used = self.used[parent].copy()
        used[np.arange(len(parent)), features[parent]] = True
        offset = np.cumsum(widths) - widths
        record_child = (
            offset[self.record_node]
            + self.codes[np.arange(len(self.record_node)), features[self.record_node]]
        )
        ids = np.concatenate([s + np.arange(w) for s, w in zip(starts, widths)])
        return _Frontier(ids, used, record_child, self.codes, self.y), parent, value


def _node_counts(node: np.ndarray, y: np.ndarray, n_nodes: int, k: int) -> np.ndarray:
    return np.bincount(node * k + y, minlength=n_nodes * k).reshape(n_nodes, k)


def _gumbel_argmax(logits: np.ndarray, rng: Rng) -> np.ndarray:
    """Per row, a draw with P(i) ∝ exp(logits_i): argmax of logits plus Gumbel noise."""
    gumbel = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + gumbel, axis=-1)
