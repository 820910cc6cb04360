"""Every ledger entry kind that an algorithm books at its registry defaults: its released
values follow the booked noise law at the booked ε, and a mutant that spends 4× that ε
(the record count: 50× as well) is refuted by the same check.

**The check.** Each entry's released value minus its true value (a NOT-private
diagnostic of the fit) is turned into a randomised probability integral transform u
under the law the ledger books: for discrete Laplace noise at ε,
u = F(z − 1) + V·P(z) with F the exact distribution function of P(z) ∝ exp(−ε'|z|)
(ε' the sampler's exact rate, :func:`~dpviz.privacy.noise.epsilon_fraction`) and V a
seeded uniform; for continuous Laplace u = F(z); for an exponential-mechanism choice,
u = F(c − 1) + V·P(c) over the candidates ordered by their claimed probability. Under
the booked law u is exactly Uniform(0, 1) and the first ``n`` values are independent
(each draw is fresh given everything before it). Their counts in 10 equal bins are
then Binomial(n, 1/10) each; the check fails when some bin's exact two-sided binomial
p-value, times 10 (Bonferroni), is below ``ALPHA`` = 10⁻³. So for correct code the
check fails with probability ≤ 10⁻³ over the choice of noise seeds (exact tests,
conservative); with the fixed seeds below it is deterministic.

**The mutants** change what is released, not the ledger: each wraps the one sampler
call of its entry (found by the calling function, :func:`spend_more`) or the one
exponential-mechanism call, and passes 4× the ε (or a quarter of the Laplace scale).
The released noise is then 4× narrower than booked: the transform piles up in the
middle bins (a 4ε exponential mechanism: on the likeliest candidates), and with the
sample sizes below the check fails by a wide margin (each mutant's outer bins expect
≥ 20 values under the booked law and about 0–2 under the mutant).

**Entry kinds at the registry defaults** (data with a continuous and a discrete
feature, three classes): forest (fletcher_islam) and Private-RDT (jpw): the noisy
record count, the split tables (fletcher_islam's ``quantile`` split points), the class
prior, the leaves, and the forest's floor check (its noisy out-of-bag wins and losses); greedy
trees (friedman_schuster, dpea): the root's noisy class counts (record count of the
auto depth, the root's stopping test and the fallback's prior), the
exponential-mechanism split choices, the stopping rule's node counts, the leaves (the
hierarchical fallback is post-processing of these: it releases nothing of its own);
DPBoost (default preset): the class prior, the split choices, the leaves and the
held-out check's count.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, replace

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import binomtest

from dpviz.models.boosting import estimator as boosting
from dpviz.models.boosting import tree as boost_tree
from dpviz.models.forest import release as _forest_release
from dpviz.models.forest import splits as _forest_splits
from dpviz.models.forest.estimator import split_tables
from dpviz.models.greedy import estimator as _greedy_estimator
from dpviz.models.greedy import grow as _greedy_grow
from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import smooth_shares
from dpviz.models.greedy.predict import model_codes
from dpviz.models.greedy.score import gini_weight, score_sensitivity
from dpviz.models.greedy.select import enumerate_subtrees
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.noise import KeyedLeafNoise, SecureGenerator, epsilon_fraction
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

ALPHA = 1e-3  # false-alarm rate of one check on correct code (over the noise seeds)
BINS = 10
CLASSES = ("hi", "lo", "mid")
SCHEMA = Schema(
    "label",
    CLASSES,
    (
        Feature("x", "continuous", low=0.0, high=10.0),
        Feature("col", "discrete", values=("a", "b", "c")),
    ),
)
# A third feature gives DPEA's two-layer step subtrees of different scores (with two
# features both of its subtrees hold the same leaves).
SCHEMA3 = Schema(
    "label", CLASSES, (*SCHEMA.features, Feature("shape", "discrete", values=("o", "s")))
)


def _frame(n: int, seed: int, signal: float, schema: Schema) -> pd.DataFrame:
    """``n`` records: random classes, a share ``signal`` of them following x (or shape)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "col": rng.choice(["a", "b", "c"], n),
            "shape": rng.choice(["o", "s"], n),
        }
    )
    names = [f.name for f in schema.features]
    driver = frame["shape"] == "o" if "shape" in names else frame["x"] > 5
    label = rng.choice(CLASSES, n)
    follows = rng.random(n) < signal
    frame["label"] = np.where(follows, np.where(driver, "hi", "lo"), label)
    return frame[[*names, "label"]]


# MAIN: 600 records, enough for the auto depth 2 of friedman_schuster (stopping counts).
# SMALL: 100 records, auto depth 1: the root's split choice is far from certain (P of the
# likelier feature 0.68 at the booked ε, 0.95 at 4ε). THREE: DPEA's two-layer subtrees.
DATA = {
    "main": (_frame(600, 1, 0.04, SCHEMA), SCHEMA),
    "small": (_frame(100, 1, 0.1, SCHEMA), SCHEMA),
    "three": (_frame(300, 1, 0.0, SCHEMA3), SCHEMA3),
}
ENCODED = {key: (encode(frame, schema), schema) for key, (frame, schema) in DATA.items()}


# --- the law check ----------------------------------------------------------------------


def law_holds(u: np.ndarray, n: int) -> bool:
    """Whether the first ``n`` transforms pass the uniformity check (see the module
    docstring: false alarm ≤ ``ALPHA`` under the booked law)."""
    assert len(u) >= n, f"only {len(u)} draws of the entry, the check needs {n}"
    counts = np.bincount(np.minimum((u[:n] * BINS).astype(int), BINS - 1), minlength=BINS)
    worst = min(binomtest(int(c), n, 1 / BINS).pvalue for c in counts)
    return worst * BINS >= ALPHA


def pit_discrete_laplace(z, epsilon, rng: np.random.Generator) -> np.ndarray:
    """Randomised transform of integer noise ``z`` under P(z) ∝ exp(−ε'|z|), ε' the
    sampler's exact rate for each ``epsilon`` (one per value or one for all)."""
    z = np.asarray(z, dtype=np.float64).ravel()
    rate = np.vectorize(lambda e: (lambda s, t: s / t)(*epsilon_fraction(e)))(
        np.broadcast_to(np.asarray(epsilon, dtype=np.float64).ravel(), z.shape)
    )
    q = np.exp(-rate)

    def cdf(v):
        # P(Z ≤ v) = q^-v/(1+q) below 0, 1 − q^(v+1)/(1+q) from 0 on.
        return np.where(v < 0, q ** np.abs(v) / (1 + q), 1 - q ** (np.abs(v) + 1) / (1 + q))

    pmf = (1 - q) / (1 + q) * q ** np.abs(z)
    return cdf(z - 1) + rng.random(z.shape) * pmf


def pit_laplace(z, scale) -> np.ndarray:
    """Transform of continuous Laplace noise of the given scale(s)."""
    z = np.asarray(z, dtype=np.float64).ravel()
    w = z / np.broadcast_to(np.asarray(scale, dtype=np.float64).ravel(), z.shape)
    return np.where(w < 0, 0.5 * np.exp(np.minimum(w, 0)), 1 - 0.5 * np.exp(-np.maximum(w, 0)))


def pit_choice(choice: int, log_p: np.ndarray, rng: np.random.Generator) -> float:
    """Transform of one categorical draw under ``log_p``, candidates in order of
    increasing claimed probability."""
    p = np.exp(log_p - logsumexp(log_p))
    order = np.argsort(p, kind="stable")
    rank = int(np.flatnonzero(order == choice)[0])
    below = p[order[:rank]].sum()
    return float(below + rng.random() * p[choice])


def booked(model, query: str) -> float:
    """The ε the model's ledger books for the (single) entry whose query starts with
    ``query``; several entries of that kind must agree."""
    values = {e.epsilon for e in model.ledger_.entries if e.query.startswith(query)}
    assert len(values) == 1, (query, values)
    return values.pop()


# --- fits, with the recorders an entry reads --------------------------------------------


@dataclass
class Fit:
    model: object
    encoded: object
    schema: Schema
    tables: list  # fletcher_islam: (true tables, released noisy tables)
    utilities: list  # dpboost: (utility, sensitivity) per level, in the order grown
    checks: list  # dpboost: the held-out check's true gain; forest: the floor's


def _record(mp: pytest.MonkeyPatch, fit: Fit) -> None:
    """Wrap the functions whose inputs or outputs the law needs (not the samplers)."""
    noisy_tables = _forest_splits.noisy_tables

    def tables(true, layout, epsilon, source):
        noisy = noisy_tables(true, layout, epsilon, source)
        fit.tables.append((true.copy(), noisy.copy()))
        return noisy

    utility = boost_tree.split_utility

    def utilities(*args, **kwargs):
        out = utility(*args, **kwargs)
        fit.utilities.append(out)
        return out

    check = boosting.held_out_check

    class _NoNoise:
        def discrete_laplace(self, epsilon, size):
            return np.zeros(size, dtype=np.int64)

    def checks(raw, prior, y, weights, epsilon, rng, keep_prior=False):
        fit.checks.append(check(raw, prior, y, weights, epsilon, _NoNoise(), keep_prior)[0])
        return check(raw, prior, y, weights, epsilon, rng, keep_prior)

    floor_counts = _forest_release.check_counts

    def floor_gains(*args, **kwargs):
        out = floor_counts(*args, **kwargs)
        fit.checks.append(out)
        return out

    mp.setattr(_forest_release, "check_counts", floor_gains)
    mp.setattr(_forest_splits, "noisy_tables", tables)
    mp.setattr(boost_tree, "split_utility", utilities)
    mp.setattr(boosting, "held_out_check", checks)


def fit_once(
    algorithm: str, data: str, seed: int, mutant=None, epsilon: float = 1.0, params=()
) -> Fit:
    """One fit at the registry defaults (but ``params``, (name, value) pairs) and
    ``epsilon`` with replayable noise ``seed`` (the official opt-in; the ledger then says
    NOT private), with ``mutant(monkeypatch)`` applied."""
    encoded, schema = ENCODED[data]
    fit = Fit(None, encoded, schema, [], [], [])
    with pytest.MonkeyPatch.context() as mp:
        _record(mp, fit)
        if mutant is not None:
            mutant(mp)
        model = ALGORITHMS[algorithm].make(
            epsilon, random_state=0, schema=schema, noise_seed=seed, **dict(params)
        )
        fit.model = model.fit_encoded(encoded, schema)
    return fit


_REAL: dict[tuple[str, str, float, tuple], list[Fit]] = {}


def real_fits(
    algorithm: str, data: str, n: int, epsilon: float = 1.0, params: tuple = ()
) -> list[Fit]:
    """The first ``n`` fits of the real code (noise seeds 0, 1, …), shared by entries."""
    cached = _REAL.setdefault((algorithm, data, epsilon, params), [])
    while len(cached) < n:
        cached.append(fit_once(algorithm, data, len(cached), epsilon=epsilon, params=params))
    return cached[:n]


# --- mutants: one entry spends more than it books -----------------------------------------


def spend_more(mp, owner, method: str, module: str, caller: str, factor: float) -> None:
    """Make ``owner.method`` (a sampler) draw at ``factor``·ε — a Laplace scale divided
    by ``factor`` — when called from function ``caller`` of module ``module``: one
    entry's noise, the rest of the release and the ledger untouched."""
    real = getattr(owner, method)

    def sharper(self, *args, **kwargs):
        frame = sys._getframe(1)
        if frame.f_code.co_name == caller and frame.f_globals.get("__name__") == module:
            if method == "laplace":
                loc, scale, size = (list(args) + [0.0, 1.0, None][len(args) :])[:3]
                scale = kwargs.pop("scale", scale) / factor
                return real(self, kwargs.pop("loc", loc), scale, kwargs.pop("size", size))
            args = list(args)
            if owner is KeyedLeafNoise:  # discrete_laplace(n_classes, epsilon)
                args[1] *= factor
            else:  # discrete_laplace(epsilon, size)
                args[0] *= factor
        return real(self, *args, **kwargs)

    mp.setattr(owner, method, sharper)


def _scaled_argument(mp, module, name: str, index: int, factor: float) -> None:
    """Wrap ``module.name`` so that its positional argument ``index`` (an ε) is scaled."""
    real = getattr(module, name)

    def wrapped(*args, **kwargs):
        args = list(args)
        args[index] *= factor
        return real(*args, **kwargs)

    mp.setattr(module, name, wrapped)


def _at(owner, method, module, caller):
    return lambda factor: lambda mp: spend_more(mp, owner, method, module, caller, factor)


# --- what each entry releases, minus the truth, as transforms ------------------------------


def _true_node_counts(model) -> np.ndarray:
    """True class counts of every node of a greedy tree (sums over its leaves)."""
    parent = np.asarray(model.parent_)
    counts = np.zeros((len(parent), model.leaf_counts_.shape[1]), dtype=np.int64)
    for leaf, row in zip(model.leaf_nodes_, model.leaf_counts_, strict=True):
        node = int(leaf)
        while node >= 0:
            counts[node] += row
            node = int(parent[node])
    return counts


def _record_count(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    assert m.depth_n_ > 1  # max(1, ·) never clipped (n = 600, noise scale 20)
    z = m.depth_n_ - fit.encoded.n_records
    return pit_discrete_laplace([z], booked(m, "noisy record count"), rng)


def _forest_prior(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    eps = booked(m, "noisy class histogram")
    assert eps == pytest.approx(m.prior_epsilon_)
    z = m.prior_counts_ - np.bincount(fit.encoded.y, minlength=len(CLASSES))
    return pit_discrete_laplace(z, eps, rng)


def _split_tables(fit: Fit, rng) -> np.ndarray:
    (true, noisy), *rest = fit.tables
    assert not rest and np.array_equal(true, split_tables(fit.encoded, fit.schema))
    d = len(fit.schema.features)  # one record moves one cell per feature: ε_split / d each
    return pit_discrete_laplace(noisy - true, booked(fit.model, "noisy class × value") / d, rng)


def _forest_leaves(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    assert booked(m, "laplace_counts leaf outputs") == pytest.approx(m.tree_epsilon_)
    return pit_discrete_laplace(m.leaf_noisy_counts_ - m.leaf_counts_, m.tree_epsilon_, rng)


def _forest_check(fit: Fit, rng) -> np.ndarray:
    """The floor's released out-of-bag wins and losses (from the gain W̃ − L̃ and the
    disagreements W̃ + L̃ the model keeps) against the true ones, each at the booked ε."""
    m = fit.model
    ((wins, losses),) = fit.checks
    eps = booked(m, "noisy out-of-bag gain")
    assert eps == pytest.approx(m.check_epsilon_) and eps > 0
    g, d = m.floor_check_, m.floor_disagreements_
    assert (g + d) % 2 == 0  # W̃ − L̃ and W̃ + L̃ of whole numbers
    return pit_discrete_laplace([(d + g) // 2 - wins, (d - g) // 2 - losses], eps, rng)


def _greedy_root(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    rows = np.flatnonzero(np.asarray(m.counted_nodes_) == 0)
    assert len(rows) == 1
    z = m.counted_noisy_counts_[rows[0]] - np.bincount(fit.encoded.y, minlength=len(CLASSES))
    return pit_discrete_laplace(z, booked(m, "noisy class counts of all records"), rng)


def _greedy_stopping(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    nodes = np.asarray(m.counted_nodes_)
    inner = nodes != 0
    if not inner.any():
        return np.zeros(0)
    true = _true_node_counts(m)[nodes[inner]]
    eps = booked(m, "noisy class counts of the step-")
    return pit_discrete_laplace(m.counted_noisy_counts_[inner] - true, eps, rng)


def _greedy_leaves(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    eps = np.repeat(m.leaf_epsilon_, m.leaf_counts_.shape[1])
    # The ledger's leaf ε' is what a full-depth leaf gets; a leaf closed earlier adds the
    # ε of the steps its records did not reach.
    assert m.leaf_epsilon_.min() == pytest.approx(booked(m, "discrete Laplace leaf counts"))
    return pit_discrete_laplace(m.leaf_noisy_counts_ - m.leaf_counts_, eps, rng)


def _greedy_split(fit: Fit, rng) -> np.ndarray:
    """The root's chosen subtree against the exhaustive exponential mechanism over every
    (steps+1)-layer subtree, at the booked ε of split step 1."""
    m = fit.model
    if m.feature_[0] < 0:  # the root's noisy stopping test closed it: no choice made
        return np.zeros(0)
    codes, n_values = model_codes(m, fit.encoded)  # as the tree cut them
    beta = gini_weight(m.criterion)
    layers = min(m.steps, m.depth_)
    candidates, scores = enumerate_subtrees(
        codes, fit.encoded.y, n_values, len(CLASSES), layers, beta
    )
    root = int(m.feature_[0])
    if layers == 1:
        chosen = (root,)
    else:
        first = int(m.first_child_[0])
        children = tuple(int(m.feature_[first + v]) for v in range(int(n_values[root])))
        chosen = (root, children)
    eps = booked(m, "exponential-mechanism split step 1")
    log_p = eps / (2 * score_sensitivity(beta)) * scores
    return np.array([pit_choice(candidates.index(chosen), log_p, rng)])


def noisy_max_log_p(counts: np.ndarray, epsilon: float) -> np.ndarray:
    """log P(class i is the argmax of counts + Exponential(rate ε) noise), exactly (by
    quadrature of f_i(z)·Π_j F_j(c_i + z − c_j) over z ≥ 0)."""
    from scipy.integrate import quad

    c = np.asarray(counts, dtype=np.float64)

    def win(i: int) -> float:
        def density(z):
            cdf = 1.0 - np.exp(-epsilon * np.maximum(c[i] + z - np.delete(c, i), 0.0))
            return epsilon * np.exp(-epsilon * z) * np.prod(cdf)

        starts = sorted({0.0, *np.maximum(np.delete(c, i) - c[i], 0.0)})
        edges = [*starts, np.inf]
        return sum(quad(density, a, b)[0] for a, b in zip(edges[:-1], edges[1:]) if b > a)

    p = np.array([win(i) for i in range(len(c))])
    assert p.sum() == pytest.approx(1.0, abs=1e-6)
    return np.log(np.maximum(p, 1e-300))


def _greedy_root_class(fit: Fit, rng) -> np.ndarray:
    """The root's report-noisy-max class (a tree without splits: its only class; with
    splits below ε = 0.8: the fallback's first class) against report-noisy-max with
    exponential noise over the true class counts, at the booked ε."""
    m = fit.model
    if m.depth_ == 0:
        assert len(m.leaf_labels_) == 1 and m.leaf_labels_[0] == m.root_class_
    eps = booked(m, "report-noisy-max class")
    assert eps == pytest.approx(m.budget_.pick) and m.root_class_ >= 0
    log_p = noisy_max_log_p(np.bincount(fit.encoded.y, minlength=len(CLASSES)), eps)
    return np.array([pit_choice(int(m.root_class_), log_p, rng)])


def _boost_prior(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    z = m.prior_counts_ - np.bincount(fit.encoded.y, minlength=len(CLASSES))
    return pit_discrete_laplace(z, booked(m, "noisy class histogram"), rng)


def _boost_trees_booked(m) -> float:
    """ε_t from the ledger, checked to be the split levels plus the leaves."""
    eps_tree = booked(m, "tree 1 of ensemble 1")
    assert m.split_epsilon_ * m.max_depth + m.leaf_epsilon_ == pytest.approx(eps_tree)
    return eps_tree


def _boost_splits(fit: Fit, rng) -> np.ndarray:
    """Each node's chosen candidate against exp(ε_level·u/(2Δ)) over the candidates."""
    m = fit.model
    _boost_trees_booked(m)
    trees = m.models_[0]  # k = 3: one shared tree serves every part
    assert len(fit.utilities) == len(trees) * m.max_depth
    cand_f, cand_v, cand_eq = m.candidates_
    out = []
    for t, tree in enumerate(trees):
        for level in range(m.max_depth):
            utility, delta = fit.utilities[t * m.max_depth + level]
            for node in range(utility.shape[0]):
                f, v = tree["feature"][level][node], tree["threshold"][level][node]
                eq = tree["equal"][level][node]
                c = np.flatnonzero((cand_f == f) & (cand_v == v) & (cand_eq == eq))
                log_p = m.split_epsilon_ * utility[node] / (2 * delta)
                out.append(pit_choice(int(c[0]), log_p, rng))
    return np.array(out)


def _boost_leaves(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    _boost_trees_booked(m)
    per_part = len(m.leaf_records_) // len(m.models_)
    out = []
    for i, (_, clipped, released) in enumerate(m.leaf_records_):
        iteration = i % per_part + 1
        out.append(pit_laplace(released - clipped, m.leaf_scale(iteration)))
    return np.concatenate(out)


def _boost_check(fit: Fit, rng) -> np.ndarray:
    m = fit.model
    (gain,) = fit.checks
    eps = booked(m, "check of the trees")
    assert eps == pytest.approx(m.tree_epsilon_)
    return pit_discrete_laplace([m.check_gain_ - gain], eps, rng)


# --- the entries --------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """A ledger entry kind of one algorithm: its transforms, how many the check reads,
    and its 4ε mutant (``mutant(factor)`` gives a monkeypatching function)."""

    algorithm: str
    kind: str
    data: str
    read: Callable[[Fit, np.random.Generator], np.ndarray]
    n: int
    mutant: Callable[[float], Callable]
    factors: tuple[float, ...] = (4.0,)
    epsilon: float = 1.0  # the fits' ε (the floor's check runs from ε = 2 up)
    params: tuple = ()  # (name, value) pairs over the registry defaults

    @property
    def id(self) -> str:
        at = "" if self.epsilon == 1.0 else f"-eps{self.epsilon:g}"
        return f"{self.algorithm}-{self.kind}{at}" + "".join(f"-{v}" for _, v in self.params)


_FOREST = "dpviz.models.forest.estimator"
_RELEASE = "dpviz.models.forest.release"
_SPLITS = "dpviz.models.forest.splits"
_GROW = "dpviz.models.greedy.grow"
_CHECK = "dpviz.models.boosting.check"

RECORD_COUNT = _at(SecureGenerator, "discrete_laplace", _FOREST, "_prepare")
# The noisy histograms of the bin edges (DPBoost's grown model, the greedy trees'
# split_points="quantile"): tests/models/test_dpboost_edges.py, test_greedy_edges.py.
EDGES = _at(SecureGenerator, "discrete_laplace", "dpviz.models.trees.edges", "noisy_edges")
FOREST_PRIOR = _at(SecureGenerator, "discrete_laplace", _RELEASE, "noisy_class_totals")


def _forest_leaf_mutant(factor):
    # laplace_counts calls the leaves' keyed noise from its release function.
    def apply(mp):
        real = KeyedLeafNoise.discrete_laplace
        mp.setattr(
            KeyedLeafNoise,
            "discrete_laplace",
            lambda self, k, eps: real(self, k, factor * eps),
        )

    return apply


ENTRIES = [
    *(
        e
        for alg in ("fletcher_islam", "jpw")
        for e in (
            Entry(alg, "record_count", "main", _record_count, 100, RECORD_COUNT, (4.0, 50.0)),
            Entry(alg, "prior", "main", _forest_prior, 150, FOREST_PRIOR),
            Entry(alg, "leaves", "main", _forest_leaves, 500, _forest_leaf_mutant),
        )
    ),
    # data_split="auto": from ε = 5 the trees come in two halves of the records, each
    # booked at its share, and every record is checked through the other half's trees.
    *(
        Entry(
            "fletcher_islam",
            kind,
            "main",
            read,
            n,
            mutant,
            epsilon=10.0,
            params=(("data_split", "auto"),),
        )
        for kind, read, n, mutant in (
            ("leaves", _forest_leaves, 500, _forest_leaf_mutant),
            (
                "floor_check",
                _forest_check,
                150,
                _at(
                    SecureGenerator,
                    "discrete_laplace",
                    "dpviz.models.forest.floor",
                    "release_check",
                ),
            ),
        )
    ),
    Entry(
        "fletcher_islam",
        "floor_check",
        "main",
        _forest_check,
        150,
        _at(SecureGenerator, "discrete_laplace", "dpviz.models.forest.floor", "release_check"),
        epsilon=4.0,
    ),
    Entry(
        "fletcher_islam",
        "split_tables",
        "main",
        _split_tables,
        500,
        _at(SecureGenerator, "discrete_laplace", _SPLITS, "noisy_tables"),
    ),
    *(
        e
        for alg, split_data, split_n in (
            ("friedman_schuster", "small", 400),
            ("dpea", "three", 150),
        )
        for e in (
            Entry(
                alg,
                "root_counts",
                "main",
                _greedy_root,
                150,
                _at(
                    SecureGenerator,
                    "discrete_laplace",
                    "dpviz.models.greedy.stopping",
                    "choose_depth",
                ),
            ),
            Entry(
                alg,
                "split_choice",
                split_data,
                _greedy_split,
                split_n,
                lambda f: lambda mp: _scaled_argument(mp, _greedy_grow, "choose_subtrees", 4, f),
            ),
            Entry(
                alg,
                "leaves",
                "main",
                _greedy_leaves,
                500,
                _at(
                    SecureGenerator,
                    "discrete_laplace",
                    "dpviz.models.greedy.leaves",
                    "noisy_leaf_counts",
                ),
            ),
        )
    ),
    # A tree without splits (the small data at ε = 0.1: "auto" depth 0) picks its class by
    # report-noisy-max at ε − 0.1·ε = 0.09: class counts 41/34/25 give P = 0.66/0.25/0.10,
    # at 4× (0.36) 0.96/0.04/0.002: of 300 fits the three lowest bins (expected 30 each)
    # then get about 6 in all.
    *(
        Entry(
            alg,
            "root_class",
            "small",
            _greedy_root_class,
            300,
            lambda f: lambda mp: _scaled_argument(mp, _greedy_estimator, "noisy_max_class", 1, f),
            epsilon=0.1,
        )
        for alg in ("friedman_schuster", "dpea")
    ),
    # With splits (the main data at ε = 0.5: depth 1 / 2) the root's class at
    # min(0.2·ε, 0.08 − 0.1·ε) = 0.03: counts 204/214/182 give P = 0.32/0.53/0.14, at 4×
    # 0.15/0.84/0.01: of 200 fits the two lowest bins (expected 20 each) get about 7.
    *(
        Entry(
            alg,
            "root_class_split",
            "main",
            _greedy_root_class,
            200,
            lambda f: lambda mp: _scaled_argument(mp, _greedy_estimator, "noisy_max_class", 1, f),
            epsilon=0.5,
        )
        for alg in ("friedman_schuster", "dpea")
    ),
    # DPEA at these sizes grows one two-layer step and so books no stopping counts; the
    # stopping rule's code (grow_tree) is the same for both greedy trees.
    Entry(
        "friedman_schuster",
        "stopping_counts",
        "main",
        _greedy_stopping,
        300,
        _at(SecureGenerator, "discrete_laplace", _GROW, "grow_tree"),
    ),
    Entry(
        "dpboost",
        "prior",
        "main",
        _boost_prior,
        150,
        _at(SecureGenerator, "discrete_laplace", _CHECK, "noisy_prior"),
    ),
    Entry(
        "dpboost",
        "split_choice",
        "main",
        _boost_splits,
        1500,
        lambda f: lambda mp: _scaled_argument(mp, boosting, "grow_tree", 6, f),
    ),
    Entry(
        "dpboost",
        "leaves",
        "main",
        _boost_leaves,
        300,
        _at(SecureGenerator, "laplace", "dpviz.models.boosting.tree", "grow_tree"),
    ),
    Entry(
        "dpboost",
        "held_out_check",
        "main",
        _boost_check,
        150,
        _at(SecureGenerator, "discrete_laplace", _CHECK, "held_out_check"),
    ),
]


def transforms(entry: Entry, fits) -> np.ndarray:
    """The entry's transforms over ``fits`` (a seeded V for the randomised ones)."""
    rng = np.random.default_rng(12345)
    out, total = [], 0
    for fit in fits:
        u = entry.read(fit, rng)
        out.append(u)
        total += len(u)
        if total >= entry.n:
            break
    return np.concatenate(out)


def _fits_for(entry: Entry, mutant=None):
    """Fits until the entry has ``n`` transforms: real (cached) or under ``mutant``."""
    seed = 0
    while True:
        if mutant is None:
            yield real_fits(entry.algorithm, entry.data, seed + 1, entry.epsilon, entry.params)[
                seed
            ]
        else:
            yield fit_once(entry.algorithm, entry.data, seed, mutant, entry.epsilon, entry.params)
        seed += 1


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_released_noise_follows_the_booked_law(entry):
    """The real code: released − true follows the booked law at the booked ε."""
    u = transforms(entry, _fits_for(entry))
    assert law_holds(u, entry.n), entry.id


@pytest.mark.parametrize(
    "entry, factor",
    [(e, f) for e in ENTRIES for f in e.factors],
    ids=lambda v: v.id if isinstance(v, Entry) else f"{v:g}x",
)
def test_an_entry_spending_more_than_booked_is_refuted(entry, factor):
    """The same check on a mutant whose entry spends ``factor``·ε (its release is less
    noisy; the ledger is unchanged) fails."""
    u = transforms(entry, _fits_for(entry, entry.mutant(factor)))
    assert not law_holds(u, entry.n), entry.id


def test_every_default_ledger_entry_kind_has_a_guard():
    """The entry kinds the registry defaults book on the MAIN data are the ones above
    (at ε = 1; the forest at 4 too; a new kind of entry must get its law test and mutant here)."""
    kinds = {
        "noisy record count": "record_count",
        "noisy class × value": "split_tables",
        "noisy class histogram": "prior",
        "laplace_counts leaf outputs": "leaves",
        "noisy class counts of all records": "root_counts",
        "exponential-mechanism split step": "split_choice",
        "noisy class counts of the step-": "stopping_counts",
        "discrete Laplace leaf counts": "leaves",
        "the leaves closed at an earlier step": "leaves",
        "tree ": "split_choice",  # DPBoost's trees: splits and leaves
        "check of the trees": "held_out_check",
        "noisy out-of-bag gain": "floor_check",
        "report-noisy-max class": "root_class",
    }
    guarded = {(e.algorithm, e.kind) for e in ENTRIES}
    # The forest at ε = 4 as well: its floor check is booked from ε = 2 up; and with
    # data_split="auto" at 10, where its trees come in two halves. (At ε = 4 DPEA books
    # stopping counts too; that code is Friedman–Schuster's, guarded above.)
    auto = (("data_split", "auto"),)
    forests = [("fletcher_islam", 4.0, ()), ("fletcher_islam", 10.0, auto)]
    for algorithm, epsilon, params in [*((a, 1.0, ()) for a in ALGORITHMS), *forests]:
        model = real_fits(algorithm, "main", 1, epsilon, params)[0].model
        if params:
            assert model.data_split_ == "shared" and model.check_epsilon_ > 0
        for entry in model.ledger_.entries:
            if not entry.private:  # the replayable-noise marker of these test fits
                continue
            kind = next((v for k, v in kinds.items() if entry.query.startswith(k)), None)
            assert kind is not None, (algorithm, entry.query)
            assert (algorithm, kind) in guarded, (algorithm, entry.query)
            if algorithm == "dpboost" and kind == "split_choice":
                assert (algorithm, "leaves") in guarded


def test_the_hierarchical_fallback_releases_nothing_of_its_own():
    """The greedy trees' fallback shares and their no-signal floor are post-processing of
    the released counts: recomputed with the true leaf counts replaced by garbage they are
    the same."""
    from dpviz.models.greedy.floor import apply_floor

    for algorithm in ("friedman_schuster", "dpea"):
        model = real_fits(algorithm, "main", 1)[0].model
        grown = GrownTree(**{f.name: getattr(model, f"{f.name}_") for f in fields(GrownTree)})
        grown = replace(grown, leaf_counts=np.full_like(grown.leaf_counts, 10**6))
        shares = smooth_shares(grown, model.leaf_noisy_counts_, len(CLASSES))
        shares, _, signal, bar = apply_floor(grown, model.leaf_noisy_counts_, shares, None)
        assert (signal, bar) == (model.floor_signal_, model.floor_bar_)
        np.testing.assert_array_equal(shares, model.leaf_proba_)
