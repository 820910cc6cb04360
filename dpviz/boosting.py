"""DPBoost: differentially private gradient-boosted trees (Li et al., AAAI 2020).

Square loss on labels mapped to {-1, +1}; each tree is grown on a disjoint subset of
its ensemble's records after gradient-based data filtering (|g| ≤ g* = 1); splits are
drawn by the exponential mechanism over public (feature, bin) candidates (gain
sensitivity 3g*²); leaf values are clipped geometrically to g*(1−η)^(t−1) and released
with Laplace noise of sensitivity min(g*/(1+λ), 2g*(1−η)^(t−1)). Ensemble of
ensembles: T_e trees per ensemble on disjoint subsets (parallel composition),
⌈T/T_e⌉ ensembles on the same records (sequential). More than two classes: one-vs-rest
with the budget split evenly across the classes.

Each record is dealt to a tree of its ensemble by its own independent draw (never by
cutting a shuffle: the cut points depend on n, so one record would move others), and
every random choice (that draw, the splits, the leaf noise) comes from a
:class:`~dpviz.noise.SecureGenerator` keyed by a fresh OS secret per fit.
"""

from __future__ import annotations

import math
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .data import EncodedData
from .greedy import Rng, bin_codes, book_noise_mode
from .inputs import check_whole_numbers, prediction_data, training_data
from .ledger import LedgerEntry, PrivacyLedger
from .mechanisms import _check_epsilon
from .noise import NoiseSource
from .schema import Schema

G_STAR = 1.0  # the largest |gradient| of the square loss at F = 0 for labels in [-1, 1]


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


class DPBoostClassifier(ClassifierMixin, BaseEstimator):
    """DPBoost (Li et al. 2020) with the paper's defaults.

    Privacy: ``epsilon``-DP under add/remove-one neighbours with a public schema: each
    ensemble spends ε/N_e (its trees read disjoint records: each record is dealt to one
    tree by its own independent draw), N_e ensembles compose sequentially; with k > 2
    classes each one-vs-rest model gets ε/k.

    All randomness reads the data (there is no public randomness), so every draw comes
    from a cryptographically secure generator keyed by a fresh operating-system secret
    for each fit; the key is never stored. ``noise_seed`` replaces that secret by a
    replayable one: the model is then NOT private, and its ledger says so.

    Parameters
    ----------
    epsilon : float, default=1.0
    n_estimators : int, default=50
        Total trees T per class.
    trees_per_ensemble : int, default=50
        T_e.
    max_depth : int, default=6
    learning_rate : float, default=0.01
        Shrinkage η (also the geometric clipping and subset-size rate).
    reg_lambda : float, default=0.1
        λ > 0 in the leaf value −Σg / (n + λ) (λ = 0 would make empty leaves 0/0).
    n_bins : int, default=16
        Public equal-width bins of each continuous feature: the split candidates.
    schema : Schema or None
    random_state : int, numpy generator or None
        Kept for scikit-learn's API only. This algorithm has no public randomness, so
        it seeds nothing: in particular it does NOT seed the noise (two fits with the
        same ``random_state`` differ).
    noise_seed : int or None, default=None
        None (the default): secret noise from a fresh OS key, never stored. An integer
        makes every random choice replayable (same seed, same model) for tests,
        teaching and figures: NOT private (the noise can be replayed and subtracted).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_estimators: int = 50,
        trees_per_ensemble: int = 50,
        max_depth: int = 6,
        learning_rate: float = 0.01,
        reg_lambda: float = 0.1,
        n_bins: int = 16,
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
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed

    def _validate_params(self) -> None:
        _check_epsilon(self.epsilon)
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
                f"reg_lambda must be a positive finite number such as the paper's 0.1, got "
                f"{self.reg_lambda!r}: with λ = 0 an empty leaf's value is 0/0 = NaN, which "
                "reveals that no record reached it (ε = ∞)"
            )
        if self.noise_seed is not None:
            NoiseSource.replayable(self.noise_seed)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.noise_seed is None
        return tags

    @property
    def n_ensembles_(self) -> int:
        return math.ceil(self.n_estimators / self.trees_per_ensemble)

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
        # Secret (or, opt-in, replayable) noise for this fit only: never kept on self.
        rng = NoiseSource.for_release(self.noise_seed).generator()
        targets = [1] if k == 2 else list(range(k))
        self.class_epsilon_ = float(self.epsilon) / len(targets)
        self.models_ = []
        self.leaf_records_ = []
        for target in targets:
            signed = np.where(encoded.y == target, 1.0, -1.0)
            self.models_.append(self._boost(codes, signed, rng))
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _boost(self, codes, signed, rng) -> list[dict]:
        eta = float(self.learning_rate)
        t_e, n = self.trees_per_ensemble, len(signed)
        eps_tree = self.class_epsilon_ / self.n_ensembles_
        shares = subset_shares(eta, t_e)
        prediction = np.zeros(n)
        trees = []
        for t in range(self.n_estimators):
            position = t % t_e
            if position == 0:  # a new ensemble: deal every record to one of its trees
                tree_of = assign_trees(n, shares, rng)
                order = np.argsort(tree_of, kind="stable")
                bounds = np.searchsorted(tree_of[order], np.arange(t_e + 1))
            rows = order[bounds[position] : bounds[position + 1]]
            gradient = prediction[rows] - signed[rows]
            keep = np.abs(gradient) <= G_STAR  # gradient-based data filtering
            tree = self._tree(codes[rows[keep]], gradient[keep], t + 1, eps_tree, rng)
            trees.append(tree)
            prediction += eta * tree["value"][_leaf_index(tree, codes, self.n_values_)]
        return trees

    def _tree(self, codes, gradient, iteration, eps_tree, rng) -> dict:
        """One DP regression tree: exponential-mechanism splits, clipped noisy leaves."""
        eta, lam = float(self.learning_rate), float(self.reg_lambda)
        depth = self.max_depth
        eps_level = eps_tree / (2 * depth)
        eps_leaf = eps_tree / 2
        delta_gain = 3 * G_STAR**2
        n_nodes_level = 1
        node = np.zeros(len(gradient), dtype=np.int64)
        features, thresholds = [], []
        m = codes.shape[1]
        width = int(self.n_values_.max())
        for _ in range(depth):
            g_hist = np.zeros((n_nodes_level, m, width))
            n_hist = np.zeros((n_nodes_level, m, width))
            for f in range(m):
                np.add.at(g_hist[:, f], (node, codes[:, f]), gradient)
                np.add.at(n_hist[:, f], (node, codes[:, f]), 1.0)
            g_left = np.cumsum(g_hist, axis=2)[:, :, :-1]
            n_left = np.cumsum(n_hist, axis=2)[:, :, :-1]
            g_total = g_hist.sum(axis=2, keepdims=True)
            n_total = n_hist.sum(axis=2, keepdims=True)
            gain = g_left**2 / (n_left + lam) + (g_total - g_left) ** 2 / (n_total - n_left + lam)
            # Candidate (f, t): left holds codes < t + 1; only thresholds inside f's bins.
            valid = np.arange(width - 1)[None, :] < (self.n_values_ - 1)[:, None]
            logits = np.where(valid[None], eps_level * gain / (2 * delta_gain), -np.inf)
            flat = logits.reshape(n_nodes_level, -1)
            choice = np.argmax(flat - np.log(-np.log(rng.random(flat.shape))), axis=1)
            f_chosen, t_chosen = np.divmod(choice, width - 1)
            features.append(f_chosen)
            thresholds.append(t_chosen)
            go_right = codes[np.arange(len(node)), f_chosen[node]] > t_chosen[node]
            node = 2 * node + go_right
            n_nodes_level *= 2
        sums = np.bincount(node, weights=gradient, minlength=n_nodes_level)
        counts = np.bincount(node, minlength=n_nodes_level).astype(np.float64)
        value = -sums / (counts + lam)
        bound = G_STAR * (1 - eta) ** (iteration - 1)
        clipped = np.clip(value, -bound, bound)  # geometric leaf clipping
        sensitivity = min(G_STAR / (1 + lam), 2 * G_STAR * (1 - eta) ** (iteration - 1))
        released = clipped + rng.laplace(0.0, sensitivity / eps_leaf, size=n_nodes_level)
        self.leaf_records_.append((counts, clipped, released))
        return {"feature": features, "threshold": thresholds, "value": released}

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        ledger = PrivacyLedger()
        k = len(self.schema_.classes) if hasattr(self, "schema_") else 2
        per_class = float(self.epsilon) / (1 if k == 2 else k)
        n_ens = self.n_ensembles_
        if schema_inferred:
            ledger.add_sequential(
                LedgerEntry(
                    "class list and feature domains (inferred from the data)",
                    "all records, without noise",
                    float("inf"),
                    private=False,
                )
            )
        book_noise_mode(ledger, self.noise_seed)
        models = (
            ["the model"]
            if k == 2
            else [f"the one-vs-rest model of class {c + 1}" for c in range(k)]
        )
        for model in models:
            for e in range(n_ens):
                trees = min(
                    self.trees_per_ensemble, self.n_estimators - e * self.trees_per_ensemble
                )
                ledger.add_parallel(
                    [
                        LedgerEntry(
                            f"tree {t + 1} of ensemble {e + 1} ({model})",
                            f"disjoint subset {t + 1}",
                            per_class / n_ens,
                        )
                        for t in range(trees)
                    ],
                    summary=(
                        f"Ensemble {e + 1} of {model}: {trees} trees on disjoint subsets, "
                        f"each ε = {per_class / n_ens:g} (half for splits over "
                        f"{self.max_depth} levels, half for the leaves)"
                    ),
                )
        return ledger

    # --- prediction ---------------------------------------------------------------------

    def _scores(self, encoded: EncodedData) -> np.ndarray:
        codes, _ = bin_codes(encoded, self.schema_, self.n_bins)
        eta = float(self.learning_rate)
        return np.stack(
            [
                sum(eta * t["value"][_leaf_index(t, codes, self.n_values_)] for t in trees)
                for trees in self.models_
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


def _leaf_index(tree: dict, codes: np.ndarray, n_values: np.ndarray) -> np.ndarray:
    node = np.zeros(len(codes), dtype=np.int64)
    rows = np.arange(len(codes))
    for f, t in zip(tree["feature"], tree["threshold"]):
        node = 2 * node + (codes[rows, f[node]] > t[node])
    return node
