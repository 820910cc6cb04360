"""Greedy differentially private decision trees: Friedman & Schuster 2010 and DPEA.

DPEA ("Embedding DP in decision tree algorithm with different depths", 2017) grows a
tree in steps; each step picks a whole (d+1)-layer subtree by the exponential
mechanism on the max-operator score (Σ over the subtree's leaves of the leaf's
largest class count; sensitivity 1). Friedman–Schuster is the d = 1 case. Leaves
release Laplace-noised class counts. Budget: ε' = ε / (⌈D/d⌉ + 1) per step level
and for the leaves; nodes of a level hold disjoint records (parallel composition).

The max-operator score of a subtree is a sum over its leaves, so the exponential
mechanism's distribution over all subtrees factorises: P(root feature a) ∝
Π_children Σ_f exp(ε'·s(child, f)/2), and given a, each child's feature is drawn
independently. Sampling that way is exactly the exhaustive exponential mechanism
(d ≤ 2) without listing its m·(m−1)^b candidates.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from .data import EncodedData
from .inputs import check_whole_numbers, prediction_data, training_data
from .ledger import LedgerEntry, PrivacyLedger
from .mechanisms import _check_epsilon, get_mechanism, is_majority
from .schema import Schema

MAX_NODES = 2_000_000


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

    Privacy: ``epsilon``-DP under add/remove-one neighbours (public schema): each
    record meets at most ⌈D/d⌉ exponential-mechanism steps and one noisy leaf count,
    each with ε' = ε / (⌈D/d⌉ + 1). Steps with d > 2 would need the MCMC sampler of
    the paper (only approximately the exponential mechanism) and are not offered.

    Parameters
    ----------
    epsilon : float, default=1.0
    max_depth : int, default=5
        D, the depth of the tree.
    steps : int, default=1
        d, the layers chosen per exponential-mechanism step (1 = Friedman–Schuster).
    n_bins : int, default=8
        Equal-width bins of each continuous feature's public domain.
    schema : Schema or None
    random_state : int or None
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int = 5,
        steps: int = 1,
        n_bins: int = 8,
        schema=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.steps = steps
        self.n_bins = n_bins
        self.schema = schema
        self.random_state = random_state

    def _validate_params(self) -> None:
        _check_epsilon(self.epsilon)
        check_whole_numbers(self, {"max_depth": 1, "steps": 1, "n_bins": 2})
        if self.steps > self.max_depth:
            raise ValueError(
                f"steps d = {self.steps} exceeds the depth D = {self.max_depth}; use d ≤ D"
            )
        if self.steps > 2:
            raise ValueError(
                "steps d > 2 needs the paper's MCMC sampler (only approximately the "
                "exponential mechanism), which dpviz does not offer; use d = 1 or 2"
            )

    @property
    def step_epsilon_(self) -> float:
        return float(self.epsilon) / (math.ceil(self.max_depth / self.steps) + 1)

    def fit(self, X, y):
        self._validate_params()
        encoded, schema, classes = training_data(self, X, y)
        return self.fit_encoded(encoded, schema, classes=classes)

    def fit_encoded(self, encoded: EncodedData, schema: Schema, classes=None):
        """Grow the tree on encoded records (the evaluation engine's entry point)."""
        self._validate_params()
        start = time.perf_counter()
        self.schema_ = schema
        self.n_features_in_ = len(schema.features)
        if classes is None:
            classes = np.asarray(schema.classes, dtype=object)
        self.classes_ = classes
        rng = np.random.default_rng(self.random_state)
        codes, n_values = bin_codes(encoded, schema, self.n_bins)
        self.n_values_ = n_values
        self._grow(codes, encoded.y, n_values, len(schema.classes), rng)
        self.ledger_ = self.privacy_ledger(schema.inferred)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    # --- growing ----------------------------------------------------------------------

    def _grow(self, codes, y, n_values, k, rng) -> None:
        D, d, eps = self.max_depth, self.steps, self.step_epsilon_
        tree = _NodeTable()
        state = _Frontier(
            ids=np.array([0]),
            used=np.zeros((1, codes.shape[1]), dtype=bool),
            record_node=np.zeros(len(y), dtype=np.int64),
            codes=codes,
            y=y,
        )
        self.candidates_ = 0
        depth = 0
        while len(state.ids):
            left = D - depth
            state = state.close(state.used.all(axis=1) | (left <= 0), tree, k)
            if not len(state.ids):
                break
            layers = min(d, left)
            root, child = self._choose(state, n_values, k, layers, eps, rng)
            state, parent, value = state.expand(root, n_values, tree, depth)
            if layers == 2:
                second = child[parent, value]
                state = state.close(second < 0, tree, k)
                second = second[second >= 0]
                state, _, _ = state.expand(second, n_values, tree, depth + 1)
            depth += layers
        self.feature_ = np.asarray(tree.feature)
        self.first_child_ = np.asarray(tree.first_child)
        self.node_depth_ = np.asarray(tree.depth)
        order = np.argsort(tree.leaf_ids)
        self.leaf_nodes_ = np.asarray(tree.leaf_ids)[order]
        self.leaf_counts_ = np.concatenate(tree.leaf_counts)[order]
        noise = rng.laplace(0.0, 1.0 / eps, size=self.leaf_counts_.shape)
        self.leaf_noisy_counts_ = self.leaf_counts_ + noise
        self.leaf_labels_ = np.argmax(self.leaf_noisy_counts_, axis=1)

    def _choose(self, state, n_values, k, layers, eps, rng):
        """Exponential-mechanism choice of each frontier node's next ``layers`` layers.

        Returns the root feature of each node and, for two layers, the feature of each
        (node, child value) — -1 where that child has no feature left (a leaf)."""
        scale = eps / 2.0  # exp(ε'·score / (2Δ)) with Δ = 1
        n_nodes, m = state.used.shape
        allowed = ~state.used
        s1 = split_scores(state.record_node, state.codes, state.y, n_nodes, n_values, k)
        if layers == 1:
            self.candidates_ += int(allowed.sum())
            return _gumbel_argmax(np.where(allowed, scale * s1, -np.inf), rng), None
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
        return root, child

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        ledger = PrivacyLedger()
        eps = self.step_epsilon_
        n_levels = math.ceil(self.max_depth / self.steps)
        if schema_inferred:
            ledger.add_sequential(
                LedgerEntry(
                    "class list and feature domains (inferred from the data)",
                    "all records, without noise",
                    float("inf"),
                    private=False,
                )
            )
        for level in range(n_levels):
            ledger.add_parallel(
                [
                    LedgerEntry(
                        f"exponential-mechanism split step {level + 1}",
                        "the nodes of that step (disjoint records)",
                        eps,
                    )
                ],
                summary=f"Split step {level + 1} chose subtrees on disjoint nodes, ε' = {eps:g}",
            )
        ledger.add_parallel(
            [LedgerEntry("Laplace leaf counts", "the leaves (disjoint records)", eps)],
            summary=f"The leaves released Laplace-noised counts with ε' = {eps:g}",
        )
        return ledger

    # --- prediction ---------------------------------------------------------------------

    def _leaf_of(self, encoded: EncodedData) -> np.ndarray:
        codes, _ = bin_codes(encoded, self.schema_, self.n_bins)
        node = np.zeros(len(codes), dtype=np.int64)
        rows = np.arange(len(codes))
        for _ in range(self.max_depth + 1):
            f = self.feature_[node]
            inner = f >= 0
            if not inner.any():
                break
            value = codes[rows[inner], f[inner]]
            node[inner] = np.where(value >= 0, self.first_child_[node[inner]] + value, node[inner])
            if (value < 0).any():
                break
        return node

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self, "feature_")
        return self._proba(prediction_data(self, X))

    def _proba(self, encoded: EncodedData) -> np.ndarray:
        leaf = np.searchsorted(self.leaf_nodes_, self._leaf_of(encoded))
        leaf = np.minimum(leaf, len(self.leaf_nodes_) - 1)
        noisy = np.clip(self.leaf_noisy_counts_[leaf], 0.0, None)
        total = noisy.sum(axis=1, keepdims=True)
        k = noisy.shape[1]
        return np.divide(noisy, total, out=np.full_like(noisy, 1.0 / k), where=total > 0)

    def predict(self, X) -> np.ndarray:
        check_is_fitted(self, "feature_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    @property
    def diagnostics_(self) -> dict:
        """Leaf diagnostics from the raw data (NOT private), as the forest reports them."""
        counts = self.leaf_counts_
        nonempty = counts.sum(axis=1) > 0
        flipped = ~is_majority(counts)[np.arange(len(counts)), self.leaf_labels_]
        flip = get_mechanism("laplace_counts").flip_probability(counts, self.step_epsilon_)
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
        mech = get_mechanism("laplace_counts")
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
                "flip_probability": mech.flip_probability(counts, self.step_epsilon_),
                "empty": counts.sum(axis=1) == 0,
            }
        )


def enumerate_subtrees(
    codes: np.ndarray, y: np.ndarray, n_values: np.ndarray, k: int, layers: int
) -> tuple[list[tuple], np.ndarray]:
    """Every (layers+1)-layer subtree at a root holding these records, with its score.

    Brute force, for audits and tests on tiny data: a candidate is (a,) for one layer
    or (a, (f_0, …, f_{b-1})) for two, f_v = -1 when child v has no feature left.
    """
    m = codes.shape[1]
    root = np.zeros(len(y), dtype=np.int64)
    candidates, scores = [], []
    for a in range(m):
        wa = int(n_values[a])
        child_counts = _node_counts(codes[:, a], y, wa, k)
        if layers == 1:
            candidates.append((a,))
            scores.append(max_operator(child_counts[None])[0])
            continue
        options = []
        for v in range(wa):
            rows = codes[:, a] == v
            choices = [f for f in range(m) if f != a]
            if not choices:
                options.append([(-1, child_counts[v].max())])
                continue
            sub = split_scores(root[rows], codes[rows], y[rows], 1, n_values, k)[0]
            options.append([(f, sub[f]) for f in choices])
        for combo in itertools.product(*options):
            candidates.append((a, tuple(f for f, _ in combo)))
            scores.append(sum(score for _, score in combo))
    return candidates, np.asarray(scores, dtype=np.float64)


class _NodeTable:
    """The tree as flat lists: split feature and first child per node, and leaves."""

    def __init__(self) -> None:
        self.feature, self.first_child, self.depth = [-1], [-1], [0]
        self.leaf_ids: list[int] = []
        self.leaf_counts: list[np.ndarray] = []

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

    def close(self, stop: np.ndarray, tree: _NodeTable, k: int) -> _Frontier:
        """Turn the ``stop`` nodes into leaves and keep the rest."""
        if not stop.any():
            return self
        counts = _node_counts(self.record_node, self.y, len(self.ids), k)
        tree.leaf_ids.extend(self.ids[stop].tolist())
        tree.leaf_counts.append(counts[stop])
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


def _gumbel_argmax(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    gumbel = -np.log(-np.log(rng.random(logits.shape)))
    return np.argmax(logits + gumbel, axis=-1)
