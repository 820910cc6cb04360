"""DPBoost: differentially private gradient-boosted trees (Li et al., AAAI 2020).

Square loss on labels mapped to {-1, +1}. Trees are grown inside an *ensemble of
ensembles*: T_e trees per ensemble read disjoint subsets of the records (parallel
composition), ⌈T/T_e⌉ ensembles read the same records (sequential). Each tree draws its
splits by the exponential mechanism over public candidates (gain sensitivity 3g*²) and
releases its leaf values, clipped geometrically to g*(1−η)^(t−1), with Laplace noise of
sensitivity min(g*/(1+λ), 2g*(1−η)^(t−1)). More than two classes: one-vs-rest with the
trees' budget split evenly across the classes.

Two presets (``preset``):

- ``"default"`` — what works while keeping the proof: λ = 50, depth 3, η = 0.1, one
  ensemble of 10 trees with equal subsets, gradients clipped to [−g*, g*], ¾ of each
  tree's ε on splits and ¼ on its leaves, one-hot split candidates for discrete features;
  and a graceful fallback: a noisy class prior (10% of ε) and a held-out check of the
  trees against it, so that noise-only trees leave the prior's (majority) class in place.
- ``"paper"`` — Li et al.'s settings: depth 6, λ = 0.1, η = 0.01, T = T_e = 50 with
  geometric subsets, gradient-based data *filtering*, ½ of each tree's ε on splits and ½
  on leaves, bin-threshold candidates for every feature, no prior (score 0 to start).

:class:`DPBoostClassifier` documents the privacy argument of every choice.

A fitted model's score for one-vs-rest part k is ``init_score_[k] + tree_weight_[k] ·
η · Σ_t value_t[leaf_t(x)]`` (``init_score_`` 0 and ``tree_weight_`` 1 in the paper
preset); :func:`route` gives ``leaf_t(x)``, where a level's ``equal`` flag marks a one-hot
split ("code == value" goes right). Each record is dealt to a tree of its ensemble by its
own independent draw (never by cutting a shuffle: the cut points depend on n, so one
record would move others), and every random choice (the class prior, that draw, the
splits, the leaf noise, the check) comes from a :class:`~dpviz.privacy.noise.SecureGenerator`
keyed by a fresh OS secret per fit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dpviz.models.data import EncodedData
from dpviz.models.forest import prior_epsilon
from dpviz.models.greedy import Rng, bin_codes
from dpviz.models.inputs import check_whole_numbers, prediction_data, training_data
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_noise_mode
from dpviz.privacy.mechanisms import _check_epsilon
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Schema

G_STAR = 1.0  # the largest |gradient| of the square loss at F = 0 for labels in [-1, 1]
# The trees are trusted over the class prior only when their noisy held-out gain exceeds
# CHECK_THRESHOLD / ε: discrete Laplace noise passes it with probability < e^-6.9 = 0.1%.
CHECK_THRESHOLD = math.log(1000)


@dataclass(frozen=True)
class Preset:
    """One named configuration of DPBoost.

    The first six fields are estimator parameters (a value set by hand overrides them);
    the others are the method's choices, set only through the preset:

    ``gradients`` — "clip" (each gradient clipped to [−g*, g*]) or "filter" (the paper's
    gradient-based data filtering: a tree skips the records with |g| > g*).
    ``split_share`` — the share of a tree's ε spent on its splits (the rest on leaves).
    ``candidates`` — "one_hot" (a discrete feature splits as "value == v" against the
    rest) or "bins" (every feature splits at a threshold on its codes).
    ``subsets`` — "equal" (each tree of an ensemble gets 1/T_e of the records in
    expectation; 1/(T_e + 1) when the ensemble also holds out a cell for the check) or
    "geometric" (the paper's η(1−η)^t / (1 − (1−η)^T_e)).
    ``prior_share`` — the share of ε (see :func:`prior_epsilon`) spent on a noisy class
    histogram, the prior the model falls back on unless a held-out check trusts the
    trees; 0: no prior and no check, the score is the trees' alone (the paper).
    """

    n_estimators: int
    trees_per_ensemble: int
    max_depth: int
    learning_rate: float
    reg_lambda: float
    n_bins: int
    gradients: str
    split_share: float
    candidates: str
    subsets: str
    prior_share: float


PRESETS: dict[str, Preset] = {
    "default": Preset(
        n_estimators=10,
        trees_per_ensemble=10,
        max_depth=3,
        learning_rate=0.1,
        reg_lambda=50.0,
        n_bins=16,
        gradients="clip",
        split_share=0.75,
        candidates="one_hot",
        subsets="equal",
        prior_share=0.1,
    ),
    "paper": Preset(
        n_estimators=50,
        trees_per_ensemble=50,
        max_depth=6,
        learning_rate=0.01,
        reg_lambda=0.1,
        n_bins=16,
        gradients="filter",
        split_share=0.5,
        candidates="bins",
        subsets="geometric",
        prior_share=0.0,
    ),
}
# The estimator parameters a preset sets (the rest of a Preset is the method's choices).
PRESET_PARAMETERS = (
    "n_estimators",
    "trees_per_ensemble",
    "max_depth",
    "learning_rate",
    "reg_lambda",
    "n_bins",
)


def _same(a, b) -> bool:
    try:
        return type(a) is not bool and bool(a == b)
    except (TypeError, ValueError):
        return False


def subset_shares(learning_rate: float, trees_per_ensemble: int) -> np.ndarray:
    """The share of the records each tree t = 0..T_e−1 of an ensemble expects:
    η(1−η)^t / (1 − (1−η)^T_e) (Li et al. 2020; they sum to 1)."""
    eta = float(learning_rate)
    t_e = int(trees_per_ensemble)
    return eta * (1 - eta) ** np.arange(t_e) / (1 - (1 - eta) ** t_e)


def assign_trees(n: int, shares: np.ndarray, rng: Rng) -> np.ndarray:
    """Each of ``n`` records' tree in one ensemble, drawn independently per record.

    Record i gets position t with probability ``shares[t]`` by inverting the
    cumulative shares at its own uniform ``rng.random(n)[i]``; a position
    ≥ ``len(shares)`` means no tree (the leftover probability when the shares sum to
    less than 1). A record's tree depends on its own draw alone, so adding or removing a
    record never moves another one: the trees read disjoint records whose split is
    independent of the data (parallel composition).
    """
    return np.searchsorted(np.cumsum(shares), rng.random(n)).astype(np.int64)


def split_candidates(schema: Schema, n_values: np.ndarray, kind: str) -> tuple[np.ndarray, ...]:
    """The public split candidates (feature, value, equal) of a schema.

    ``equal`` False: a record goes right when its code is > value (a threshold between
    public bins, or between discrete codes for ``kind="bins"``). ``equal`` True (discrete
    features with ``kind="one_hot"`` and at least three values): right when its code is
    == value, "feature == v" against the rest. A two-valued feature has one candidate,
    the threshold at 0, which is the same partition as either one-hot test. The list
    depends on the schema only, never on the data.
    """
    n_continuous = len(schema.continuous)
    features, values, equal = [], [], []
    for f, width in enumerate(int(w) for w in n_values):
        if kind == "one_hot" and f >= n_continuous and width > 2:
            features += [f] * width
            values += list(range(width))
            equal += [True] * width
        else:
            features += [f] * (width - 1)
            values += list(range(width - 1))
            equal += [False] * (width - 1)
    if not features:  # every feature single-valued: one split that sends all left
        features, values, equal = [0], [int(n_values[0]) - 1], [False]
    return (
        np.asarray(features, dtype=np.int64),
        np.asarray(values, dtype=np.int64),
        np.asarray(equal, dtype=bool),
    )


class DPBoostClassifier(ClassifierMixin, BaseEstimator):
    """DPBoost (Li et al. 2020), by default with settings that keep the proof and learn.

    Privacy: ``epsilon``-DP under add/remove-one neighbours with a public schema. The
    ledger (``ledger_``) books, in sequence: the noisy class histogram (ε_p, see
    :func:`prior_epsilon`; none in the paper preset), then for each one-vs-rest model
    (one for two classes, k for k > 2: (ε − ε_p)/k each) its N_e = ⌈T/T_e⌉ ensembles,
    ε_t = (ε − ε_p)/(k·N_e) each. Inside an ensemble the trees read disjoint records
    (each record is dealt to one cell by its own independent draw, the same deal for
    every one-vs-rest model), so every tree spends the ensemble's whole ε_t (parallel
    composition). Within a tree, ``split_share``·ε_t goes to the splits (split equally
    over the depth's levels; the nodes of a level read disjoint records) and the rest to
    the leaves (each leaf reads its own records). With a prior, the last ensemble has
    one more cell that no tree reads: the held-out check (below) spends ε_t on it, in
    parallel with that ensemble's trees. The ledger's total is ε.

    Why each default choice keeps that proof:

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
    - **Class prior.** A histogram of the classes changes by one count when a record is
      added or removed (L1 sensitivity 1): exact discrete Laplace noise at ε_p makes it
      ε_p-DP. The trees are boosted from F = 0 as above; the released score mixes them
      with the prior, (1 − w)·c·p̂ + w·(trees' score) (p̂ = 2·noisy share − 1, c =
      1 − (1−η)^T), a post-processing of released values (see :meth:`_weights`).
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

    Attributes
    ----------
    models_ : list of lists of dict
        Per one-vs-rest part, its trees: ``feature``, ``threshold`` and ``equal`` (one
        array per level, see :func:`route`) and ``value`` (the 2^depth released leaf
        values, Laplace noise included).
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
        self._apply_preset(())

    def _apply_preset(self, given) -> None:
        """Set the parameters left at the default preset's value (and not in ``given``)
        to ``preset``'s values. Only values that differ are replaced, so a clone (which
        passes the resolved values back) keeps every parameter object as it is."""
        if not isinstance(self.preset, str) or self.preset not in PRESETS:
            return  # refused with a message in fit
        base, chosen = PRESETS["default"], PRESETS[self.preset]
        for name in PRESET_PARAMETERS:
            value, target = getattr(self, name), getattr(chosen, name)
            if name not in given and _same(value, getattr(base, name)) and target != value:
                setattr(self, name, target)

    def set_params(self, **params):
        super().set_params(**params)
        if "preset" in params:
            self._apply_preset(params)
        return self

    @property
    def preset_(self) -> Preset:
        """The method's choices of ``preset``."""
        return PRESETS[self.preset]

    def _validate_params(self) -> None:
        _check_epsilon(self.epsilon)
        if not isinstance(self.preset, str) or self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        check_whole_numbers(
            self, {"n_estimators": 1, "trees_per_ensemble": 1, "max_depth": 1, "n_bins": 2}
        )
        if not 0 < float(self.learning_rate) < 1:
            raise ValueError(f"learning_rate must be in (0, 1), got {self.learning_rate!r}")
        try:
            lam = float(self.reg_lambda)
        except (TypeError, ValueError):
            lam = float("nan")
        if not (math.isfinite(lam) and lam > 0):
            raise ValueError(
                f"reg_lambda must be a positive finite number such as 50 (the paper's "
                f"0.1), got {self.reg_lambda!r}: with λ = 0 an empty leaf's value is "
                "0/0 = NaN, which reveals that no record reached it (ε = ∞)"
            )
        if self.noise_seed is not None:
            NoiseSource.replayable(self.noise_seed)
        if self.prior_epsilon_ > 0 and min(self.prior_epsilon_, self.tree_epsilon_) < 2**-20:
            raise ValueError(
                f"epsilon = {self.epsilon!r} is too small for the default preset: its class "
                "prior and held-out check draw exact discrete Laplace noise, which needs "
                "each of their budgets to be at least 2^-20; use a larger epsilon or "
                "preset='paper'"
            )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.noise_seed is None
        return tags

    @property
    def n_ensembles_(self) -> int:
        return math.ceil(self.n_estimators / self.trees_per_ensemble)

    # --- the budget (from public values only) -------------------------------------------

    def _n_targets(self) -> int:
        k = len(self.schema_.classes) if hasattr(self, "schema_") else 2
        return 1 if k == 2 else k

    @property
    def prior_epsilon_(self) -> float:
        """ε of the noisy class histogram (0 in the paper preset)."""
        return prior_epsilon(float(self.epsilon), self.preset_.prior_share)

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
        return self.preset_.split_share * self.tree_epsilon_ / self.max_depth

    @property
    def leaf_epsilon_(self) -> float:
        """ε of a tree's leaf values: (1 − split_share) · ε_t."""
        return (1 - self.preset_.split_share) * self.tree_epsilon_

    def leaf_bound(self, iteration: int) -> float:
        """Geometric leaf clip of tree ``iteration`` (1-based): g*(1−η)^(t−1)."""
        return G_STAR * (1 - float(self.learning_rate)) ** (iteration - 1)

    def leaf_sensitivity(self, iteration: int) -> float:
        """Laplace sensitivity of tree ``iteration``'s leaves: min(g*/(1+λ), 2g*(1−η)^(t−1))."""
        return min(G_STAR / (1 + float(self.reg_lambda)), 2 * self.leaf_bound(iteration))

    def ensemble_shares(self, n_trees: int, holdout: bool = False) -> np.ndarray:
        """The expected share of the records of each of an ensemble's ``n_trees`` trees,
        and with ``holdout`` of one more cell that no tree reads (equal to a tree's)."""
        if self.preset_.subsets == "equal":
            return np.full(n_trees + holdout, 1.0 / (n_trees + holdout))
        shares = subset_shares(self.learning_rate, n_trees)
        if holdout:
            shares = np.append(shares * n_trees / (n_trees + 1), 1 / (n_trees + 1))
        return shares

    # --- fitting ------------------------------------------------------------------------

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
        codes, n_values = bin_codes(encoded, schema, self.n_bins)
        self.n_values_ = n_values
        self.candidates_ = split_candidates(schema, n_values, self.preset_.candidates)
        # Secret (or, opt-in, replayable) noise for this fit only: never kept on self.
        rng = NoiseSource.for_release(self.noise_seed).generator()
        targets = [1] if k == 2 else list(range(k))
        self.prior_counts_ = None
        self.prior_score_ = np.zeros(len(targets))
        if self.prior_epsilon_ > 0:
            counts = np.bincount(encoded.y, minlength=k).astype(np.int64)
            self.prior_counts_ = counts + rng.discrete_laplace(self.prior_epsilon_, k)
            noisy = np.clip(self.prior_counts_, 0, None).astype(np.float64)
            shares = noisy / noisy.sum() if noisy.sum() > 0 else np.full(k, 1.0 / k)
            self.prior_score_ = 2 * shares[targets] - 1
        signed = [np.where(encoded.y == target, 1.0, -1.0) for target in targets]
        last_deal = self._boost(codes, signed, rng)
        self._fallback(codes, encoded.y, last_deal, rng)
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    @property
    def checks_trees_(self) -> bool:
        """Whether the fit holds out records to check the trees against the class prior
        (with a prior, i.e. the default preset)."""
        return self.prior_epsilon_ > 0

    def _ensemble_size(self, ensemble: int) -> int:
        """How many trees ensemble ``ensemble`` (0-based) holds: T_e, or fewer in the last."""
        return min(self.trees_per_ensemble, self.n_estimators - ensemble * self.trees_per_ensemble)

    def _boost(self, codes, signed: list[np.ndarray], rng) -> np.ndarray:
        """Grow every one-vs-rest model's trees, each boosted from the score F = 0; set
        ``models_`` and ``leaf_records_`` (ordered by model, then tree) and return the last
        ensemble's deal.

        Each ensemble deals every record to a cell by one independent draw per record
        (:func:`assign_trees`), shared by the one-vs-rest models: tree position
        0..size−1, or ``size`` for the held-out cell of the last ensemble when
        :attr:`checks_trees_`, which no tree reads."""
        eta = float(self.learning_rate)
        eps_tree = self.tree_epsilon_
        clip = self.preset_.gradients == "clip"
        n = len(signed[0])
        predictions = [np.zeros(n) for _ in signed]
        models: list[list[dict]] = [[] for _ in signed]
        self.leaf_records_ = []  # _tree appends one entry per tree, in the order grown
        grown = []
        deal = np.zeros(n, dtype=np.int64)
        for ensemble in range(self.n_ensembles_):
            size = self._ensemble_size(ensemble)
            holdout = self.checks_trees_ and ensemble == self.n_ensembles_ - 1
            deal = assign_trees(n, self.ensemble_shares(size, holdout), rng)
            cells = [np.flatnonzero(deal == position) for position in range(size)]
            for part, (target, prediction) in enumerate(zip(signed, predictions)):
                for position, rows in enumerate(cells):
                    iteration = ensemble * self.trees_per_ensemble + position + 1
                    gradient = prediction[rows] - target[rows]
                    if clip:  # every record used, its gradient clipped to [−g*, g*]
                        gradient = np.clip(gradient, -G_STAR, G_STAR)
                    else:  # gradient-based data filtering (Li et al.)
                        keep = np.abs(gradient) <= G_STAR
                        rows, gradient = rows[keep], gradient[keep]
                    tree = self._tree(codes[rows], gradient, iteration, eps_tree, rng)
                    models[part].append(tree)
                    grown.append((part, iteration))
                    prediction += eta * tree["value"][route(tree, codes)]
        self.models_ = models
        order = sorted(range(len(grown)), key=grown.__getitem__)
        self.leaf_records_ = [self.leaf_records_[i] for i in order]
        return deal

    @property
    def converged_share_(self) -> float:
        """c = 1 − (1−η)^T: the share of its target that T trees of shrinkage η reach."""
        return 1 - (1 - float(self.learning_rate)) ** self.n_estimators

    @property
    def score_noise_variance_(self) -> float:
        """The variance the leaf noise adds to a record's trees' score η·Σ_t r_t: one
        Laplace(b_t) per tree, b_t = leaf sensitivity / ε_leaf (public)."""
        eta = float(self.learning_rate)
        scales = [
            self.leaf_sensitivity(t) / self.leaf_epsilon_ for t in range(1, self.n_estimators + 1)
        ]
        return eta**2 * sum(2 * b**2 for b in scales)

    def _weights(self) -> tuple[float, float]:
        """(w_trust, w_floor): the trees' weight when the check passes, and when it fails.

        w_trust = τ²/(τ² + σ²): σ² the exact variance the leaf noise adds to a record's
        trees' score (:attr:`score_noise_variance_`), τ = c/2 a generous spread of the
        signal c·E[y|x] (a Gaussian posterior mean between the prior and the trees).
        w_floor = min(w_trust, m/(10·√2·σ)), m = c·(the prior's lead: |p̂| for two
        classes, the gap between the two largest p̂ otherwise): the trees' noise then
        moves the difference of two scores by a tenth of the prior's lead (one standard
        deviation), too little to overturn the prior's class, while the trees still rank
        the records (AUC). Both come from public constants and the released prior."""
        c = self.converged_share_
        noise = self.score_noise_variance_
        tau2 = (c / 2) ** 2
        trust = tau2 / (tau2 + noise)
        prior = np.sort(self.prior_score_)
        lead = abs(prior[0]) if len(prior) == 1 else prior[-1] - prior[-2]
        if noise <= 0:
            return trust, trust
        return trust, min(trust, c * lead / (10 * math.sqrt(2 * noise)))

    def _fallback(self, codes, y, last_deal, rng) -> None:
        """Set ``tree_weight_`` and ``init_score_`` (the score is init + weight·η·Σ trees).

        Without a prior (paper preset): weight 1, init 0. With one: a record's score is
        (1 − w)·c·p̂ + w·(trees' score), p̂ = 2·(noisy class share) − 1, c =
        :attr:`converged_share_` (the trees, boosted from 0, estimate c·E[y|x]). The
        held-out records of the last ensemble (a cell no tree of that ensemble reads)
        answer one noisy question: how many more of them the model with w = w_trust
        classifies correctly than the one with w = w_floor (the prior's answer). That
        count changes by at most 1 when a record is added or removed; it is released
        with discrete Laplace noise at the last ensemble's ε_t (parallel composition:
        the cell is disjoint from that ensemble's trees). The trees are trusted (w_trust)
        only if the noisy gain exceeds ln(1000)/ε_t, so trees no better than the prior pass
        with probability < 0.1%; otherwise the model answers the prior's class (w_floor).
        Everything else here is post-processing of released values."""
        n_targets = len(self.models_)
        if not self.checks_trees_:
            self.tree_weight_ = np.ones(n_targets)
            self.init_score_ = np.zeros(n_targets)
            self.check_gain_ = None
            self.check_passed_ = None
            return
        trust, floor = self._weights()
        held = np.flatnonzero(last_deal == self._ensemble_size(self.n_ensembles_ - 1))
        eta = float(self.learning_rate)
        c = self.converged_share_
        raw = np.stack(
            [
                sum(eta * t["value"][route(t, codes[held])] for t in trees)
                for trees in self.models_
            ],
            axis=1,
        )
        prior = c * self.prior_score_

        def correct(w: float) -> np.ndarray:
            return _classify((1 - w) * prior + w * raw) == y[held]

        gain = int(np.sum(correct(trust)) - np.sum(correct(floor)))
        eps = self.tree_epsilon_
        self.check_gain_ = gain + int(rng.discrete_laplace(eps, 1)[0])
        self.check_passed_ = bool(self.check_gain_ > CHECK_THRESHOLD / eps)
        w = trust if self.check_passed_ else floor
        self.tree_weight_ = np.full(n_targets, w)
        self.init_score_ = (1 - w) * prior

    def _tree(self, codes, gradient, iteration, eps_tree, rng) -> dict:
        """One DP regression tree: exponential-mechanism splits, clipped noisy leaves."""
        lam = float(self.reg_lambda)
        depth = self.max_depth
        share = self.preset_.split_share
        eps_level = share * eps_tree / depth
        eps_leaf = (1 - share) * eps_tree
        delta_gain = 3 * G_STAR**2
        cand_f, cand_v, cand_eq = self.candidates_
        m = codes.shape[1]
        width = int(self.n_values_.max())
        flat = codes + np.arange(m, dtype=np.int64) * width  # (record, feature) cells
        weights = np.repeat(gradient, m)
        n_nodes_level = 1
        node = np.zeros(len(gradient), dtype=np.int64)
        features, thresholds, equal = [], [], []
        rows = np.arange(len(node))
        for _ in range(depth):
            cells = n_nodes_level * m * width
            index = (node[:, None] * (m * width) + flat).ravel()
            g_hist = np.bincount(index, weights=weights, minlength=cells)
            n_hist = np.bincount(index, minlength=cells).astype(np.float64)
            g_hist = g_hist.reshape(n_nodes_level, m, width)
            n_hist = n_hist.reshape(n_nodes_level, m, width)
            g_cum, n_cum = np.cumsum(g_hist, axis=2), np.cumsum(n_hist, axis=2)
            g_total, n_total = g_cum[:, cand_f, -1], n_cum[:, cand_f, -1]
            # Right side of candidate c: code == v (one-hot) or code > v (threshold).
            g_right = np.where(
                cand_eq, g_hist[:, cand_f, cand_v], g_total - g_cum[:, cand_f, cand_v]
            )
            n_right = np.where(
                cand_eq, n_hist[:, cand_f, cand_v], n_total - n_cum[:, cand_f, cand_v]
            )
            g_left, n_left = g_total - g_right, n_total - n_right
            gain = g_left**2 / (n_left + lam) + g_right**2 / (n_right + lam)
            logits = eps_level * gain / (2 * delta_gain)
            gumbel = -np.log(-np.log(rng.random(logits.shape)))
            choice = np.argmax(logits + gumbel, axis=1)
            f_chosen, v_chosen, eq_chosen = cand_f[choice], cand_v[choice], cand_eq[choice]
            features.append(f_chosen)
            thresholds.append(v_chosen)
            equal.append(eq_chosen)
            code = codes[rows, f_chosen[node]]
            v, eq = v_chosen[node], eq_chosen[node]
            node = 2 * node + np.where(eq, code == v, code > v)
            n_nodes_level *= 2
        sums = np.bincount(node, weights=gradient, minlength=n_nodes_level)
        counts = np.bincount(node, minlength=n_nodes_level).astype(np.float64)
        value = -sums / (counts + lam)
        bound = self.leaf_bound(iteration)
        clipped = np.clip(value, -bound, bound)  # geometric leaf clipping
        sensitivity = self.leaf_sensitivity(iteration)
        released = clipped + rng.laplace(0.0, sensitivity / eps_leaf, size=n_nodes_level)
        self.leaf_records_.append((counts, clipped, released))
        return {"feature": features, "threshold": thresholds, "equal": equal, "value": released}

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        ledger = PrivacyLedger()
        k = len(self.schema_.classes) if hasattr(self, "schema_") else 2
        n_ens = self.n_ensembles_
        eps_tree = self.tree_epsilon_
        share = self.preset_.split_share
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
        if self.prior_epsilon_ > 0:
            ledger.add_sequential(
                LedgerEntry(
                    "noisy class histogram, the prior the trees fall back on (discrete Laplace)",
                    "all records",
                    self.prior_epsilon_,
                )
            )
        models = (
            ["the model"]
            if k == 2
            else [f"the one-vs-rest model of class {c + 1}" for c in range(k)]
        )
        split_text = (
            f"{_fraction(share)} (ε = {share * eps_tree:g}) for splits over "
            f"{self.max_depth} level{'s' * (self.max_depth > 1)} "
            f"(ε = {self.split_epsilon_:g} each), {_fraction(1 - share)} "
            f"(ε = {self.leaf_epsilon_:g}) for the leaves"
        )
        for index, model in enumerate(models):
            for e in range(n_ens):
                trees = min(
                    self.trees_per_ensemble, self.n_estimators - e * self.trees_per_ensemble
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

    # --- prediction ---------------------------------------------------------------------

    def _scores(self, encoded: EncodedData) -> np.ndarray:
        codes, _ = bin_codes(encoded, self.schema_, self.n_bins)
        eta = float(self.learning_rate)
        return np.stack(
            [
                start + weight * sum(eta * t["value"][route(t, codes)] for t in trees)
                for start, weight, trees in zip(self.init_score_, self.tree_weight_, self.models_)
            ],
            axis=1,
        )

    def _proba(self, encoded: EncodedData) -> np.ndarray:
        scores = self._scores(encoded)
        if scores.shape[1] == 1:
            positive = (np.clip(scores[:, 0], -1, 1) + 1) / 2
            return np.stack([1 - positive, positive], axis=1)
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "models_")
        return self._proba(prediction_data(self, X))

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "models_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @property
    def diagnostics_(self) -> dict:
        """Leaf diagnostics from the raw data (NOT private): sign flips of leaf values."""
        counts = np.concatenate([c for c, _, _ in self.leaf_records_])
        true = np.concatenate([v for _, v, _ in self.leaf_records_])
        released = np.concatenate([r for _, _, r in self.leaf_records_])
        nonempty = counts > 0
        flipped = np.sign(true) != np.sign(released)
        return {
            "n_leaves_total": float(len(counts)),
            "n_leaves_total_exact": True,
            "n_leaves_nonempty": int(nonempty.sum()),
            "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
            "flipped_leaf_pct": 100.0 * float(flipped[nonempty].mean()) if nonempty.any() else 0.0,
            "expected_flip_pct": float("nan"),
            "mean_smooth_sensitivity": float("nan"),
        }


def _classify(scores: np.ndarray) -> np.ndarray:
    """The class index a score matrix predicts (as ``predict`` does: one column is the
    positive class's score, positive above 0)."""
    if scores.shape[1] == 1:
        return (scores[:, 0] > 0).astype(np.int64)
    return np.argmax(scores, axis=1)


def _fraction(share: float) -> str:
    names = {0.25: "¼", 0.5: "½", 0.75: "¾"}
    return names.get(round(share, 12), f"{100 * share:g}%")


def route(tree: dict, codes: np.ndarray) -> np.ndarray:
    """The leaf (0..2^depth−1) of every record: at each level a record goes right when
    its code is > the node's threshold, or == it where the node's ``equal`` flag is set
    (a one-hot split; a tree without ``equal`` has threshold splits only). An unknown
    discrete value (code −1) goes left either way."""
    node = np.zeros(len(codes), dtype=np.int64)
    rows = np.arange(len(codes))
    equal = tree.get("equal") or [None] * len(tree["feature"])
    for f, t, eq in zip(tree["feature"], tree["threshold"], equal):
        code, cut = codes[rows, f[node]], t[node]
        right = code > cut if eq is None else np.where(eq[node], code == cut, code > cut)
        node = 2 * node + right
    return node


def _leaf_index(tree: dict, codes: np.ndarray, n_values: np.ndarray | None = None) -> np.ndarray:
    """:func:`route` (``n_values`` is not needed; kept for callers that pass it)."""
    return route(tree, codes)
