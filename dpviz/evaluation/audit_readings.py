"""What the whole-release audit (:mod:`dpviz.evaluation.release_audit`) reads from each
fit, the noise law the code claims for it, and the events it counts.

Each reading takes two probe fits, on D and on D' = D ∪ {x}, and uses their NOT-private
diagnostics (true leaf counts and values of the audit's own public pair, never released)
to find which released numbers or labels differ in law between D and D' and the exact
claimed log-likelihood ratio Λ of what is read. The events on Λ are chosen from that
claimed law alone (simulated with a seeded generator), before any audited release is
looked at, so that the audit's Clopper–Pearson bound stays valid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpviz.models.boosting.estimator import G_STAR
from dpviz.models.boosting.tree import route
from dpviz.models.greedy.estimator import bin_codes
from dpviz.models.trees.edges import edge_cells
from dpviz.privacy.mechanisms import get_mechanism
from dpviz.privacy.noise import epsilon_fraction
from dpviz.tabular.encode import EncodedData

# Draws of the claimed law that place the event thresholds; the quantiles of Λ used.
_SIMULATED = 20_000
_QUANTILES = (0.5, 0.8, 0.95)
_TOLERANCE = 1e-9


# --- what the audit reads ----------------------------------------------------------------


@dataclass
class Reading:
    """What the audit reads from a released model and the law the code claims for it.

    Either labels (one categorical draw per item, log-probabilities under D and D') or
    numbers (one (discrete) Laplace draw per item around a centre under D and D')."""

    reads: str
    read: Callable[[Any], np.ndarray]
    log_p: tuple[np.ndarray, np.ndarray] | None = None
    centres: tuple[np.ndarray, np.ndarray] | None = None
    scale: np.ndarray | None = None
    discrete: bool = True

    @property
    def n_items(self) -> int:
        return len(self.log_p[0]) if self.log_p is not None else len(self.centres[0])

    def loss(self, values: np.ndarray) -> np.ndarray:
        """Claimed log-likelihood ratio ln P(v | D') − ln P(v | D) per row of ``values``."""
        if self.log_p is not None:
            items = np.arange(self.n_items)
            # A negative label (an abstention) indexes the law's last column, where a
            # mechanism with an abstain option keeps it.
            with np.errstate(invalid="ignore"):
                terms = self.log_p[1][items, values] - self.log_p[0][items, values]
            return np.nan_to_num(terms, nan=0.0).sum(axis=1)
        c_d, c_d2 = self.centres
        return ((np.abs(values - c_d) - np.abs(values - c_d2)) / self.scale).sum(axis=1)

    def claimed_pair_loss(self) -> float:
        """The largest |Λ| the claimed law allows: the exact loss of what is read."""
        if self.log_p is not None:
            with np.errstate(invalid="ignore"):
                diff = np.abs(self.log_p[1] - self.log_p[0])
            return float(np.nan_to_num(diff, nan=0.0).max(axis=1).sum())
        return float((np.abs(self.centres[1] - self.centres[0]) / self.scale).sum())

    def simulate(self, rng: np.random.Generator, n: int, neighbour: bool) -> np.ndarray:
        """``n`` draws of what is read, from the claimed law (a seeded generator)."""
        which = int(neighbour)
        if self.log_p is not None:
            cumulative = np.cumsum(np.exp(self.log_p[which]), axis=1)
            u = rng.random((n, self.n_items))
            k = cumulative.shape[1]
            return np.minimum((u[:, :, None] > cumulative[None]).sum(axis=2), k - 1)
        centre = self.centres[which]
        if self.discrete:
            p = -np.expm1(-1.0 / self.scale)
            z = rng.geometric(p, (n, self.n_items)) - rng.geometric(p, (n, self.n_items))
        else:
            z = rng.laplace(0.0, self.scale, (n, self.n_items))
        return centre + z

    def cells(self, values: np.ndarray) -> np.ndarray | None:
        """For one released number: its step index (v − c_D) / (c_D' − c_D), rounded
        down. Noise reused between D and D' moves it by exactly one step."""
        if self.log_p is not None or self.n_items != 1:
            return None
        c_d, c_d2 = self.centres[0][0], self.centres[1][0]
        return np.floor((values[:, 0] - c_d) / (c_d2 - c_d)).astype(np.int64)


def _forest_reading(model_d, model_d2, x: EncodedData) -> Reading:
    """The released outputs of every leaf whose true counts differ between D and D'."""
    keys = np.union1d(model_d.leaf_keys_, model_d2.leaf_keys_)
    k = model_d.leaf_counts_.shape[1]

    def counts_at(model) -> np.ndarray:
        out = np.zeros((len(keys), k), dtype=np.int64)
        out[np.searchsorted(keys, model.leaf_keys_)] = model.leaf_counts_
        return out

    c_d, c_d2 = counts_at(model_d), counts_at(model_d2)
    changed = (c_d != c_d2).any(axis=1)
    keys, c_d, c_d2 = keys[changed], c_d[changed], c_d2[changed]
    mech = get_mechanism(model_d.mechanism)
    eps = model_d.tree_epsilon_
    where = f"{len(keys)} leaf{'' if len(keys) == 1 else 's'} whose true counts differ"
    where += " between D and D'"
    if mech.releases == "counts":
        rows, cols = np.nonzero(c_d != c_d2)
        s, t = epsilon_fraction(eps)
        return Reading(
            reads=f"released noisy counts ({mech.id}) of the {where}",
            read=lambda m: m.released_outputs(keys).noisy_counts[rows, cols].astype(float),
            centres=(c_d[rows, cols].astype(float), c_d2[rows, cols].astype(float)),
            scale=np.full(len(rows), t / s),
            discrete=True,
        )
    return Reading(
        reads=f"released labels ({mech.id}) of the {where}",
        read=lambda m: m.released_outputs(keys).labels,
        log_p=(mech.log_probabilities(c_d, eps), mech.log_probabilities(c_d2, eps)),
    )


def _greedy_reading(model_d, model_d2, x: EncodedData) -> Reading:
    """x's leaf's released noisy counts (the classes whose true count differs)."""
    if not np.array_equal(model_d.feature_, model_d2.feature_):
        raise RuntimeError("the audit pair needs a forced tree structure, and it varied")

    def leaf_row(model) -> int:
        node = model._leaf_of(x)[0]
        return int(np.searchsorted(model.leaf_nodes_, node))

    c_d = model_d.leaf_counts_[leaf_row(model_d)]
    c_d2 = model_d2.leaf_counts_[leaf_row(model_d2)]
    cols = np.flatnonzero(c_d != c_d2)
    s, t = epsilon_fraction(model_d.step_epsilon_)
    return Reading(
        reads="released noisy counts (discrete Laplace) of x's leaf, the classes whose "
        "true count differs",
        read=lambda m: m.leaf_noisy_counts_[leaf_row(m), cols].astype(float),
        centres=(c_d[cols].astype(float), c_d2[cols].astype(float)),
        scale=np.full(len(cols), t / s),
        discrete=True,
    )


def _boost_reading(model_d, model_d2, x: EncodedData) -> Reading:
    """x's leaf's released value in the first tree (Laplace around the clipped value)."""
    if int(model_d.trees_per_ensemble_) != 1:
        raise ValueError(
            "the dpboost release audit needs trees_per_ensemble=1: with more, x joins one "
            "of the ensemble's trees at random and no single leaf's law is fixed"
        )
    codes, _ = bin_codes(x, model_d.schema_, model_d.n_bins_)

    def leaf(model) -> int:
        return int(route(model.models_[0][0], codes)[0])

    c_d = model_d.leaf_records_[0][1][leaf(model_d)]
    c_d2 = model_d2.leaf_records_[0][1][leaf(model_d2)]
    # The claimed law of the first tree's leaves (SPEC §4): Laplace with sensitivity
    # min(g*/(1+λ), 2g*) at ε_leaf = ε_t / 2, ε_t = ε / N_e (two classes).
    lam = float(model_d.reg_lambda_)
    sensitivity = min(G_STAR / (1 + lam), 2 * G_STAR)
    eps_leaf = float(model_d.class_epsilon_) / model_d.n_ensembles_ / 2
    return Reading(
        reads="released value (Laplace) of x's leaf in the first tree",
        read=lambda m: np.array([m.models_[0][0]["value"][leaf(m)]], dtype=float),
        centres=(np.array([c_d]), np.array([c_d2])),
        scale=np.array([sensitivity / eps_leaf]),
        discrete=False,
    )


# What the sharpened audit reads, per algorithm: a Reading of two probe fits and x.
SHARPENED_READINGS: dict[str, Callable[[Any, Any, EncodedData], Reading]] = {
    "fletcher_islam": _forest_reading,
    "jpw": _forest_reading,
    "friedman_schuster": _greedy_reading,
    "dpea": _greedy_reading,
    "dpboost": _boost_reading,
}


# --- events -----------------------------------------------------------------------------


@dataclass
class Event:
    name: str
    test: Callable[[np.ndarray, np.ndarray | None], np.ndarray]


def choose_events(reading: Reading, rng: np.random.Generator, parity: bool = True) -> list[Event]:
    """The events, from the claimed law only (simulated with ``rng``), before any
    release is read; duplicates (same outcome on every simulated draw) are dropped.
    ``parity``: add the step-parity event when a single number is read."""
    sims = [reading.simulate(rng, _SIMULATED, neighbour) for neighbour in (False, True)]
    loss_d, loss_d2 = (reading.loss(s) for s in sims)
    events = [
        Event("Λ > 0", lambda lam, cell: lam > _TOLERANCE),
        Event("Λ < 0", lambda lam, cell: lam < -_TOLERANCE),
    ]
    for t in np.quantile(loss_d2, _QUANTILES, method="nearest"):
        if np.isfinite(t):
            events.append(Event(f"Λ ≥ {t:.4g}", lambda lam, cell, t=t: lam >= t - _TOLERANCE))
    for t in np.quantile(loss_d, [1 - q for q in _QUANTILES], method="nearest"):
        if np.isfinite(t):
            events.append(Event(f"Λ ≤ {t:.4g}", lambda lam, cell, t=t: lam <= t + _TOLERANCE))
    if parity and reading.cells(sims[0]) is not None:
        events.append(Event("step index even", lambda lam, cell: cell % 2 == 0))
    loss = np.concatenate([loss_d, loss_d2])
    cells = [reading.cells(s) for s in sims]
    cell = None if cells[0] is None or not parity else np.concatenate(cells)
    kept, seen = [], set()
    for event in events:
        outcome = event.test(loss, cell)
        pattern = np.packbits(outcome).tobytes()
        # An event the claimed law never or always meets, or one that meets exactly the
        # same simulated draws as an earlier one, only costs Bonferroni share.
        if outcome.any() and not outcome.all() and pattern not in seen:
            seen.add(pattern)
            kept.append(event)
    return kept


# --- what the defaults audit reads ---------------------------------------------------------

_YES = 1  # x's class; D' adds one to every "yes" count x reaches and to the record count


def _scale(epsilon: float) -> float:
    """Scale 1/ε' of the discrete Laplace sampler's exact rate ε' (noise.epsilon_fraction)."""
    s, t = epsilon_fraction(epsilon)
    return t / s


@dataclass
class Items:
    """Released values of one fit, their centres under D (D' adds one to each) and their
    discrete-Laplace scales."""

    values: list[float] = field(default_factory=list)
    centres: list[float] = field(default_factory=list)
    scales: list[float] = field(default_factory=list)

    def add(self, value, centre, epsilon) -> None:
        self.values.append(float(value))
        self.centres.append(float(centre))
        self.scales.append(_scale(epsilon))

    def loss(self) -> float:
        """Claimed ln P(v | D') − ln P(v | D), summed over the values."""
        v, c, b = (np.asarray(a) for a in (self.values, self.centres, self.scales))
        return float(((np.abs(v - c) - np.abs(v - c - 1)) / b).sum())


def _forest_items(model, data: EncodedData, x: EncodedData, on_prime: int) -> Items:
    """The noisy record count, the prior's "yes" count and every leaf x reaches."""
    items = Items()
    n_d = data.n_records - on_prime
    yes_d = int(np.sum(data.y == _YES)) - on_prime
    if model.depth_count_epsilon_ > 0:
        items.add(model.depth_n_, n_d, model.depth_count_epsilon_)
    if model.prior_counts_ is not None:
        items.add(model.prior_counts_[_YES], yes_d, model.prior_epsilon_)
    keys = model.leaf_counts_of(x, model._split_seed, keep_nodes=False).keys
    pos = np.minimum(np.searchsorted(model.leaf_keys_, keys), len(model.leaf_keys_) - 1)
    trained = model.leaf_keys_[pos] == keys
    # x's leaves (of its own tree, or of the trees of its half) count it in D'.
    true_yes = np.where(trained, model.leaf_counts_[pos, _YES], 0) - on_prime
    released = model.released_outputs(keys).noisy_counts[:, _YES]
    for value, centre in zip(released, true_yes, strict=True):
        items.add(value, centre, model.tree_epsilon_)
    return items


def _greedy_items(model, data: EncodedData, x: EncodedData, on_prime: int) -> Items:
    """x's cell in the bin edges' noisy histograms (``split_points="quantile"`` from
    ε = 1), the root's noisy "yes" count, the stopping rule's on x's path, x's leaf's."""
    items = Items()
    if model.edge_epsilon_ > 0:
        x_cells = edge_cells(x, model.schema_)[0]
        d_cells = edge_cells(data, model.schema_)
        s = len(x_cells)
        for j, cell in enumerate(x_cells):
            centre = int(np.sum(d_cells[:, j] == cell)) - on_prime
            items.add(model.edge_counts_[j, cell], centre, model.edge_epsilon_ / s)
    parent, depth = np.asarray(model.parent_), np.asarray(model.node_depth_)
    leaf = int(model._leaf_of(x)[0])
    record_leaf = model._leaf_of(data)
    path, node = [], leaf
    while node >= 0:
        path.append(node)
        node = int(parent[node])
    counted = {int(n): r for r, n in enumerate(model.counted_nodes_)}
    for node in reversed(path):
        row = counted.get(node)
        if row is None:
            continue
        # Records through `node`: their leaf's ancestor at node's depth is `node`.
        ancestor = record_leaf.copy()
        for _ in range(int(depth.max())):
            ancestor = np.where(depth[ancestor] > depth[node], parent[ancestor], ancestor)
        yes = int(np.sum((ancestor == node) & (data.y == _YES))) - on_prime
        items.add(model.counted_noisy_counts_[row, _YES], yes, model.counted_epsilon_[row])
    row = int(np.searchsorted(model.leaf_nodes_, leaf))
    items.add(
        model.leaf_noisy_counts_[row, _YES],
        model.leaf_counts_[row, _YES] - on_prime,
        model.leaf_epsilon_[row],
    )
    return items


def _boost_items(model, data: EncodedData, x: EncodedData, on_prime: int) -> Items:
    """The class prior's "yes" count (the rest: the per-entry tests, see the docstring)."""
    items = Items()
    yes_d = int(np.sum(data.y == _YES)) - on_prime
    items.add(model.prior_counts_[_YES], yes_d, model.prior_epsilon_)
    return items


# What the defaults audit reads, per algorithm: in words, and the Items of one fit.
DEFAULT_READINGS: dict[str, tuple[str, Callable[[Any, EncodedData, EncodedData, int], Items]]] = {
    "fletcher_islam": (
        "the noisy record count, the class prior's and x's leaf's noisy 'yes' counts",
        _forest_items,
    ),
    "jpw": (
        "the noisy record count, the class prior's and x's leaves' (one per tree) noisy "
        "'yes' counts",
        _forest_items,
    ),
    "friedman_schuster": (
        "the noisy counts of x's cells in the bin edges' histograms, and the noisy 'yes' "
        "counts of the root, of the stopping rule on x's path and of x's leaf",
        _greedy_items,
    ),
    "dpea": (
        "the noisy counts of x's cells in the bin edges' histograms, and the noisy 'yes' "
        "counts of the root, of the stopping rule on x's path and of x's leaf",
        _greedy_items,
    ),
    "dpboost": ("the class prior's noisy 'yes' count", _boost_items),
}
