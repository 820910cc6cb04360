"""Variants of the whole-release audit for DPBoost's newer releases and the default
forest's macro_f1 score histogram (issue 28).

The defaults audit (:mod:`dpviz.evaluation.release_audit`) reads DPBoost's class prior
only, on a pair of 41 records at ε = 1: too small for the model to grow, and without
the ``macro_f1`` objective. These variants fit DPBoost with its registry defaults (the
release a user gets; ``objective="macro_f1"`` is the only parameter the second sets) on
pairs where the newer releases are made and x can show in them:

- ``"grown"`` (:data:`GROWN_BACKGROUND`): 6,400 red records of evenly spread sizes, all
  ``no``; x is a blue ``yes`` of size 5. At ε ≥ 5 the released prior counts ≥ 6,000
  records, so the fit grows (two ensembles of ten depth-4 trees on the log-loss,
  report-noisy-max splits, noisy-quantile bin edges, clipped Newton leaves). Read: the
  prior's ``yes`` count, the noisy histogram count of x's cell of ``size`` (the bin
  edges' release), and in every tree the released value of the leaf x reaches. D's
  records start at the prior's log-odds (about −8) and stay confident, so their
  gradients (about 5·10⁻⁴) barely move a leaf: D's centre of x's leaf is −G/(H + λ)
  of D's records in that leaf's region, weighted by the tree's public share of the
  records (the deal of D's records into trees is secret; a leaf of all 6,400 records
  sits near −0.03, and the deal moves it by about 10⁻³, against a noise scale of
  0.053 at ε = 10: the centre is a function of the release and D, so an imprecise one
  costs power, never validity). x, of gradient
  ≈ −1 at its released score, moves the leaf of the one tree it is dealt to per
  ensemble by about 0.1 (the booked sensitivity is 0.1125). Which tree is secret, so
  each ensemble's leaves follow a claimed *mixture* under D': x in tree t with its
  public share (ensemble 2 also holds out a cell no tree reads). The split choices
  hardly depend on x here (every candidate's utility Σ|Σg| is the same under D; x moves
  it by at most 2·Σ|g| of D's records in the tree, about 0.6), so what is read is,
  up to that, the leaves' law given the released structure. With
  ``params={"objective": "macro_f1"}`` the grown model's score histogram is read too
  (as below).
- ``"macro_f1"`` (:data:`MACRO_BACKGROUND`): 600 red records of spread sizes, ``yes``
  above size 6 (every tenth label flipped); x is a blue ``yes`` of size 5. With fewer
  than 6,000 records (by the released prior) ``macro_f1`` fits the small model: one
  depth-2 tree on every record, whose 4 leaves are the histogram's cells, always drawn.
  Read: the histogram's class-``yes`` count of the cell x falls in (the cells are a
  function of the released model, :func:`~dpviz.models.boosting.threshold.score_cells`;
  D's count there is the centre). The 64-bin histogram of the larger models is read by
  the ``grown`` variant with ``params={"objective": "macro_f1"}``. The same pair audits
  the default forest (``fletcher_islam``) with ``objective="macro_f1"``: from ε = 1 its
  releases book a noisy histogram of the checked records' out-of-bag scores
  (:mod:`dpviz.models.forest.score_histogram`). Read: the count of the cell x's
  out-of-bag score falls in (x scored by every tree but its own, named by the public
  record hash); D's centre is D's checked records in that cell under the same release.

- ``"random"`` (:data:`RANDOM_BACKGROUND`): 3,000 red records of evenly spread sizes,
  all of class ``a`` of three; x is a blue ``c`` of size 5. With k = 3 classes and a
  released prior of 2,500 to 6,000 records the fit uses the random-split mode
  (:mod:`~dpviz.models.boosting.randomsplit`): T trees whose splits read no record, on
  every record but a held-out tenth. Read: the prior's ``c`` count, the histogram count
  of x's cell of ``size`` (the bin edges) and, in every tree, the noisy gradient sums
  of x's leaf (−value·(κ·n̂/2^D + λ): the denominator is public given the prior). D's
  records stay confident in ``a`` (gradients near 0), so D's centre of a sum is
  (1 − h)·Σg of D's records in the leaf (h the held-out share; which of D's records
  are held out is secret); x, of gradient ≈ (1, 0, −1), shifts the sums of its leaf in
  every tree at once unless it is held out: a claimed mixture, all trees shifted with
  probability 1 − h, none with h. Each tree spends ε_t = (ε − ε_p − ε_q)/T, so the
  leaves' claimed loss is the sum over T small releases: a few hundred fits cannot
  refute a 4×-ε mutant of them (the leaf-noise test of
  ``tests/models/test_dpboost_random.py`` does). The held-out check is not read.

Each reading is split into **parts**, one per booked entry it reads (``prior``,
``edges``, ``leaves of ensemble e``, ``score histogram``), with the exact claimed
log-likelihood ratio Λ of each part (discrete Laplace counts shifted by one record;
the leaves a Laplace mixture over x's tree) and its claimed loss, the largest |Λ| the
claimed law allows. The events are chosen from the claimed law of the probe fits
before any audited release is looked at: on the total Λ as in
:func:`dpviz.evaluation.audit_readings.choose_events` (signs and simulated quantiles),
on each part's Λ its sign, and for the leaves the largest
move towards x's side, M = max_t (v_t − c_t)/s_t in units of the claimed shift s_t,
at ½, ¾ and 1 (a leaf that moved most of x's shift: the natural membership test, and
the event a too-small noise scale shows first). A part's Clopper–Pearson bound above
its claimed loss refutes that entry's claimed law; the total above the ledger's ε
refutes the ledger.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from dpviz.evaluation.audit_readings import Event
from dpviz.models.boosting import randomsplit
from dpviz.models.boosting.newton import NEWTON_CLIP
from dpviz.models.boosting.newton import gradients as newton_gradients
from dpviz.models.boosting.predict import model_codes
from dpviz.models.boosting.threshold import score_cells
from dpviz.models.boosting.tree import route
from dpviz.models.forest.assign import hash_trees
from dpviz.models.forest.floor import CheckRecords, checked_trees, out_of_bag_records
from dpviz.models.forest.records import normalise_votes
from dpviz.models.trees.edges import edge_cells
from dpviz.privacy.noise import epsilon_fraction
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import EncodedData

__all__ = [
    "GROWN_BACKGROUND",
    "MACRO_BACKGROUND",
    "RANDOM_BACKGROUND",
    "RANDOM_EPSILON",
    "RANDOM_MIN_EPSILON",
    "VARIANTS",
    "VARIANT_EPSILON",
    "VARIANT_RUNS",
    "VARIANT_SCHEMA",
    "Part",
    "variant_epsilon",
    "variant_events",
    "variant_pair",
    "variant_parts",
]

VARIANT_SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("colour", "discrete", values=("blue", "red")),
        Feature("size", "continuous", low=0.0, high=10.0),
    ),
)
_GROWN_N = 6400  # above the 6,000 records the released prior must count to grow
GROWN_BACKGROUND = pd.DataFrame(
    {
        "colour": ["red"] * _GROWN_N,
        "size": np.linspace(0.05, 9.95, _GROWN_N),
        "label": ["no"] * _GROWN_N,
    }
)


def _size_pair_background(n: int) -> pd.DataFrame:
    """``n`` red records spread over size, "yes" above size 8, every tenth flipped."""
    sizes = np.linspace(0.05, 9.95, n)
    yes = (sizes > 8) ^ (np.arange(n) % 10 == 0)
    return pd.DataFrame(
        {"colour": ["red"] * n, "size": sizes, "label": np.where(yes, "yes", "no")}
    )


MACRO_BACKGROUND = _size_pair_background(600)
# The forest's accuracy cut is booked only where the checked records times its ε reach
# score_histogram.CUT_RECORDS (350): 8,000 records do from ε = 1 (400), 600 would not
# below ε ≈ 12. The macro_f1 pair's law, scaled up.
ACCURACY_BACKGROUND = _size_pair_background(8000)
_EXTRA = pd.DataFrame({"colour": ["blue"], "size": [5.0], "label": ["yes"]})
RANDOM_SCHEMA = Schema(
    "label",
    ("a", "b", "c"),
    (
        Feature("colour", "discrete", values=("blue", "red")),
        Feature("size", "continuous", low=0.0, high=10.0),
    ),
)
_RANDOM_N = 3000  # above the 2,500 records the released prior must count (randomsplit)
RANDOM_BACKGROUND = pd.DataFrame(
    {
        "colour": ["red"] * _RANDOM_N,
        "size": np.linspace(0.05, 9.95, _RANDOM_N),
        "label": ["a"] * _RANDOM_N,
    }
)
_RANDOM_EXTRA = pd.DataFrame({"colour": ["blue"], "size": [5.0], "label": ["c"]})
_C = 2  # x's class in the random pair

VARIANTS: dict[str, dict] = {
    "grown": {},
    "macro_f1": {"objective": "macro_f1"},
    "random": {},
    "accuracy": {},
}
# The variants of the default forest (the others are DPBoost's; macro_f1 is both's).
FOREST_VARIANTS = ("macro_f1", "accuracy")
# The ε each variant is audited at unless told: the grown model needs ε ≥ 5; at 10 its
# leaves and the histogram carry a loss a few hundred fits can see.
VARIANT_EPSILON = 10.0
# The ε the random-split mode is audited at unless told: at 4 (depth 5, 30 trees) each
# tree's leaves carry a loss a hundred fits can see, and the audit stays as fast as below.
RANDOM_EPSILON = 4.0
# The least ε the Audit page audits the mode at: below it the pair's trees get too little
# ε for the mode (0.3 − 0.095 − 0.015 = 0.19 to share: n̂·0.19/3 ≥ 20 on 3,000 records).
RANDOM_MIN_EPSILON = 0.3
# Fits per dataset: enough to refute a 4×-ε mutant of the entry each reads (the grown
# leaves need about 200, the histogram 80: tests/evaluation/test_release_audit_variants.py).
# A grown fit on 6,401 records costs 30–45 ms of CPU with its reading, a macro_f1 fit on
# 601 about 35 ms (most of it the model's own deconvolution of the histogram), the
# forest's accuracy fit on 8,001 about 11 ms (150 fits refute its 4×-ε mutant).
VARIANT_RUNS = {"grown": 200, "macro_f1": 100, "random": 100, "accuracy": 150}
_YES = 1
_SIMULATED = 20_000
_QUANTILES = (0.5, 0.8, 0.95)
_MOVES = (0.5, 0.75, 1.0)
_TOLERANCE = 1e-9


def variant_epsilon(variant: str) -> float:
    """The ε ``variant`` is audited at unless told."""
    return RANDOM_EPSILON if variant == "random" else VARIANT_EPSILON


def variant_pair(variant: str) -> tuple[Schema, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(schema, D, D' = D ∪ {x}, x) of ``variant``."""
    if variant == "random":
        d_prime = pd.concat([RANDOM_BACKGROUND, _RANDOM_EXTRA], ignore_index=True)
        return RANDOM_SCHEMA, RANDOM_BACKGROUND.copy(), d_prime, _RANDOM_EXTRA.copy()
    background = {"grown": GROWN_BACKGROUND, "accuracy": ACCURACY_BACKGROUND}.get(
        variant, MACRO_BACKGROUND
    )
    d_prime = pd.concat([background, _EXTRA], ignore_index=True)
    return VARIANT_SCHEMA, background.copy(), d_prime, _EXTRA.copy()


def _scale(epsilon: float) -> float:
    """Scale 1/ε' of the discrete Laplace sampler's exact rate ε'."""
    s, t = epsilon_fraction(epsilon)
    return t / s


@dataclass
class Part:
    """The values one booked entry released that the audit reads, with their claimed law:
    (discrete) Laplace around ``centres`` under D and ``centres + shifts`` under D'.
    With ``mixture`` (one probability per value, summing to at most 1) only one value
    shifts under D', value i with probability ``mixture[i]`` (none with the rest):
    x is dealt to one tree of an ensemble by a secret draw. With ``together`` (a
    probability) every value shifts at once with that probability, none otherwise: x
    held out from every tree of the random-split mode by a secret draw."""

    name: str
    values: np.ndarray
    centres: np.ndarray
    shifts: np.ndarray
    scales: np.ndarray
    discrete: bool = True
    mixture: np.ndarray | None = None
    together: float | None = None

    def terms(self, values: np.ndarray) -> np.ndarray:
        """Per value, ln P(v | D', x's item) − ln P(v | D) (rows of ``values``)."""
        c, s = self.centres, self.shifts
        return (np.abs(values - c) - np.abs(values - c - s)) / self.scales

    def loss(self, values: np.ndarray) -> np.ndarray:
        """Claimed Λ = ln P(v | D') − ln P(v | D) of each row of ``values``."""
        terms = self.terms(values)
        if self.together is not None:
            return _mixture_log(terms.sum(axis=1, keepdims=True), np.array([self.together]))
        if self.mixture is None:
            return terms.sum(axis=1)
        return _mixture_log(terms, self.mixture)

    def move(self, values: np.ndarray) -> np.ndarray:
        """M: the largest move towards x's side, max_i (v_i − c_i)/s_i (a value x
        cannot shift, s_i = 0, does not count)."""
        shifts = np.where(self.shifts == 0, np.inf, self.shifts)
        moves = np.where(self.shifts == 0, -np.inf, (values - self.centres) / shifts)
        return moves.max(axis=1)

    def claimed_loss(self) -> float:
        """The largest |Λ| the claimed law allows (the part's exact pair loss)."""
        top = np.abs(self.shifts) / self.scales
        if self.together is not None:
            top, mixture = np.array([top.sum()]), np.array([self.together])
        elif self.mixture is None:
            return float(top.sum())
        else:
            mixture = self.mixture
        high = _mixture_log(top[None, :], mixture)[0]
        low = _mixture_log(-top[None, :], mixture)[0]
        return float(max(high, -low))

    def simulate(self, rng: np.random.Generator, n: int, neighbour: bool) -> np.ndarray:
        """``n`` draws of the values from the claimed law (a seeded generator)."""
        k = len(self.centres)
        if self.discrete:
            p = -np.expm1(-1.0 / self.scales)
            z = (rng.geometric(p, (n, k)) - rng.geometric(p, (n, k))).astype(float)
        else:
            z = rng.laplace(0.0, self.scales, (n, k))
        out = self.centres + z
        if neighbour:
            if self.together is not None:
                out += np.outer(rng.random(n) < self.together, self.shifts)
            elif self.mixture is None:
                out += self.shifts
            else:
                weights = np.append(self.mixture, max(0.0, 1.0 - self.mixture.sum()))
                which = rng.choice(k + 1, size=n, p=weights / weights.sum())
                rows = np.flatnonzero(which < k)
                out[rows, which[rows]] += self.shifts[which[rows]]
        return out


def _mixture_log(terms: np.ndarray, mixture: np.ndarray) -> np.ndarray:
    """ln((1 − Σp) + Σ_i p_i·e^(terms_i)) per row."""
    rest = max(0.0, 1.0 - float(mixture.sum()))
    stacked = np.hstack([terms, np.zeros((len(terms), 1))])
    weights = np.append(mixture, rest)
    with np.errstate(divide="ignore"):
        return logsumexp(stacked, axis=1, b=weights[None, :])


# --- what each variant reads from one fit ----------------------------------------------


def _prior_part(model, d: EncodedData, target: int = _YES) -> Part:
    name = model.schema_.classes[target]
    return Part(
        f"class prior ('{name}' count)",
        np.array([float(model.prior_counts_[target])]),
        np.array([float(np.sum(d.y == target))]),
        np.ones(1),
        np.array([_scale(model.prior_epsilon_)]),
    )


def _edge_part(model, d: EncodedData, x: EncodedData) -> Part:
    """x's cell of every continuous feature in the noisy histograms of the bin edges."""
    schema = model.schema_
    x_cells = edge_cells(x, schema)[0]
    d_cells = edge_cells(d, schema)
    s = len(x_cells)
    centres = np.array([np.sum(d_cells[:, j] == x_cells[j]) for j in range(s)], dtype=float)
    return Part(
        "bin edges (noisy histogram count of x's cell)",
        model.edge_counts_[np.arange(s), x_cells].astype(float),
        centres,
        np.ones(s),
        np.full(s, _scale(model.edge_epsilon_ / s)),
    )


def _leaf_parts(model, d: EncodedData, x: EncodedData) -> list[Part]:
    """Per ensemble, x's leaf's released value in each of its trees: a mixture over the
    tree x is dealt to (see the module docstring)."""
    codes, _ = model_codes(model, d)
    codes_x, _ = model_codes(model, x)
    k = len(model.schema_.classes)
    if k != 2:
        raise ValueError("the grown audit pair has two classes")
    # Records with the same codes and class share every leaf, score and gradient: route
    # each distinct row once and weigh it by its count (D's 6,400 rows are 32 distinct).
    rows = np.column_stack([codes, d.y]).astype(np.int64) + 1  # codes ≥ −1
    key = rows @ (int(rows.max()) + 1) ** np.arange(rows.shape[1], dtype=np.int64)
    _, first, weight = np.unique(key, return_index=True, return_counts=True)
    rows = rows[first] - 1
    codes_d = rows[:, :-1]
    lam, eta = float(model.reg_lambda_), float(model.learning_rate_)
    start = np.asarray(model.start_score_, dtype=np.float64)
    scores_d = np.tile(start, (len(codes_d), 1))
    scores_x = start[None, :].copy()
    onehot_d = (rows[:, -1] == _YES)[:, None].astype(np.float64)
    trees = model.models_[0]
    parts = []
    t = 0
    for ensemble in range(model.n_ensembles_):
        size = model._ensemble_size(ensemble)
        holdout = model.checks_trees_ and ensemble == model.n_ensembles_ - 1
        shares = model.ensemble_shares(size, holdout)
        values, centres, shifts, scales = [], [], [], []
        for position in range(size):
            tree = trees[t]
            t += 1
            leaf_x = int(route(tree, codes_x)[0])
            leaf_d = route(tree, codes_d)
            here = leaf_d == leaf_x
            g, h = newton_gradients(scores_d[here], onehot_d[here])
            gx, hx = newton_gradients(scores_x, np.ones((1, 1)))
            share = float(shares[position])
            big_g = share * float(weight[here] @ g[:, 0])
            big_h = share * float(weight[here] @ h[:, 0])
            centre = np.clip(-big_g / (big_h + lam), -NEWTON_CLIP, NEWTON_CLIP)
            moved = np.clip(
                -(big_g + gx[0, 0]) / (big_h + hx[0, 0] + lam), -NEWTON_CLIP, NEWTON_CLIP
            )
            values.append(float(tree["value"][leaf_x]))
            centres.append(float(centre))
            shifts.append(float(moved - centre))
            scales.append(float(model.leaf_scale(t)))
            # The next trees' gradients read the released values only.
            scores_d += eta * tree["value"][leaf_d][:, None]
            scores_x += eta * tree["value"][leaf_x]
        parts.append(
            Part(
                f"leaves of ensemble {ensemble + 1} (x's leaf per tree)",
                np.array(values),
                np.array(centres),
                np.array(shifts),
                np.array(scales),
                discrete=False,
                mixture=np.asarray(shares[:size], dtype=np.float64),
            )
        )
    return parts


def _random_leaf_part(model, d: EncodedData, x: EncodedData) -> Part:
    """Every tree's noisy gradient sums of the leaf x reaches (k per tree), recovered
    from the released values times −(κ·n̂/2^D + λ) (public given the prior); all shift
    with x's gradients unless x is held out (see the module docstring)."""
    codes, _ = model_codes(model, d)
    codes_x, _ = model_codes(model, x)
    k = len(model.schema_.classes)
    # D's records with the same codes share every leaf and gradient: route each once.
    rows, weight = np.unique(codes, axis=0, return_counts=True)
    onehot_d = np.eye(k)[np.full(len(rows), int(np.bincount(d.y).argmax()))]
    if len(np.unique(d.y)) != 1:
        raise ValueError("the random audit pair's D has one class")
    den = randomsplit.denominator(model)
    eta, keep = float(model.learning_rate_), 1.0 - randomsplit.HOLDOUT
    start = np.asarray(model.start_score_, dtype=np.float64)
    scores_d, scores_x = np.tile(start, (len(rows), 1)), start[None, :].copy()
    onehot_x = np.eye(k)[x.y]
    values, centres, shifts = [], [], []
    for t in range(model.n_estimators_):
        tree = {key: model.models_[0][t][key] for key in ("feature", "threshold")}
        value = np.stack([model.models_[j][t]["value"] for j in range(k)], axis=1)
        leaf_x = int(randomsplit.route(tree, codes_x)[0])
        leaf_d = randomsplit.route(tree, rows)
        here = leaf_d == leaf_x
        g_d, _ = newton_gradients(scores_d[here], onehot_d[here])
        g_x, _ = newton_gradients(scores_x, onehot_x)
        values.append(-value[leaf_x] * den)
        centres.append(keep * (weight[here] @ g_d))
        shifts.append(g_x[0])
        # The next trees' gradients read the released values only.
        scores_d += eta * value[leaf_d]
        scores_x += eta * value[leaf_x]
    n = model.n_estimators_ * k
    return Part(
        "leaves (x's leaf's noisy gradient sums, every tree)",
        np.concatenate(values),
        np.concatenate(centres),
        np.concatenate(shifts),
        np.full(n, model.leaf_scale(1)),
        discrete=False,
        together=keep,
    )


def _histogram_part(model, d: EncodedData, x: EncodedData) -> Part:
    """The class-'yes' count of the score bin x falls in (none when not drawn)."""
    if model.threshold_counts_ is None:
        empty = np.zeros(0)
        return Part("score histogram (x's bin, class 'yes')", empty, empty, empty, empty)

    def cells(encoded: EncodedData) -> np.ndarray:
        # The model's own cells: a bin of its score, or the small model's leaf.
        return score_cells(model, model_codes(model, encoded)[0])[0]

    cell_x = int(cells(x)[0])
    centre = float(np.sum((cells(d) == cell_x) & (d.y == _YES)))
    return Part(
        "score histogram (x's bin, class 'yes')",
        np.array([float(model.threshold_counts_[cell_x, _YES])]),
        np.array([centre]),
        np.ones(1),
        np.array([_scale(model.threshold_epsilon_)]),
    )


def _forest_histogram_part(model, d: EncodedData, x: EncodedData) -> Part:
    """The default forest's score histogram: the noisy count of the cell x's out-of-bag
    score falls in (x scored by every tree but its own, which the public record hash
    names), in x's class's row where the histogram counts each class apart (the
    ``accuracy`` objective). D's centre: D's checked records in that cell (and class)
    under the same release (their out-of-bag scores read released leaves only); x adds
    one where it is checked (the public hash and the released record count say
    whether)."""
    by_class = np.ndim(model.threshold_counts_) == 2
    name = "score histogram (x's cell, x's class)" if by_class else "score histogram (x's cell)"

    def cells(records) -> tuple[np.ndarray, np.ndarray]:
        routed, y = records.routes(model)
        scores = normalise_votes(model.votes(routed))[:, 1]
        return np.searchsorted(model.threshold_edges_, scores, side="right"), np.asarray(y)

    own_x = hash_trees(x, model.n_estimators_, model._split_seed)
    cell_x = int(cells(CheckRecords(x, own_x))[0][0])
    cell_d, y_d = cells(out_of_bag_records(model, d))
    here = cell_d == cell_x
    if by_class:
        here &= y_d == int(x.y[0])
    value = (
        model.threshold_counts_[int(x.y[0]), cell_x]
        if by_class
        else model.threshold_counts_[cell_x]
    )
    first = checked_trees(model.n_estimators_, getattr(model, "depth_n_", None))
    return Part(
        name,
        np.array([float(value)]),
        np.array([float(np.sum(here))]),
        np.array([1.0 if own_x[0] < first else 0.0]),
        np.array([_scale(model.threshold_epsilon_)]),
    )


def variant_parts(variant: str, model, d: EncodedData, x: EncodedData) -> list[Part]:
    """What ``variant`` reads from one fitted ``model``: functions of the released model
    and of the audit's public pair (D and x) only."""
    if hasattr(model, "leaf_keys_"):  # the default forest: its score histogram only
        return [_forest_histogram_part(model, d, x)]
    if variant == "random":
        return [_prior_part(model, d, _C), _edge_part(model, d, x)] + [
            _random_leaf_part(model, d, x)
        ]
    if variant == "grown":
        parts = [_prior_part(model, d)]
        if model.edge_epsilon_ > 0:
            parts.append(_edge_part(model, d, x))
        parts += _leaf_parts(model, d, x)
        if model.threshold_epsilon_ > 0:  # params={"objective": "macro_f1"}
            parts.append(_histogram_part(model, d, x))
        return parts
    # The prior's law is read by the defaults audit; here all the power is on the bin.
    return [_histogram_part(model, d, x)]


# --- events -----------------------------------------------------------------------------


@dataclass
class VariantEvents:
    """The events of a variant, the statistics they read and the parts' claimed losses."""

    events: list[Event]
    parts: list[str]  # per event, the part it reads ("all parts" for the total Λ)
    claimed: dict[str, float] = field(default_factory=dict)
    statistics: Callable[[list[Part]], np.ndarray] | None = None


def variant_events(probe: list[Part], rng: np.random.Generator) -> VariantEvents:
    """Events on the total Λ, on each part's Λ and on each mixture part's move M, from
    the claimed law of the probe fit's ``probe`` parts (simulated with ``rng``) before
    any audited release is read. Duplicates and events the law never or always meets
    are dropped (they only cost Bonferroni share)."""
    sims = [[p.simulate(rng, _SIMULATED, nb) for p in probe] for nb in (False, True)]
    columns: list[tuple[str, str]] = [("all parts", "Λ")]
    for p in probe:
        columns.append((p.name, "Λ"))
        if p.mixture is not None or p.together is not None:
            columns.append((p.name, "M"))

    def statistics_of(parts: list[Part], values: list[np.ndarray]) -> np.ndarray:
        rows = len(values[0]) if values else 1
        out = [np.zeros(rows)]
        for p, v in zip(parts, values, strict=True):
            lam = p.loss(v) if len(p.centres) else np.zeros(rows)
            out[0] = out[0] + lam
            out.append(lam)
            if p.mixture is not None or p.together is not None:
                out.append(p.move(v))
        return np.stack(out, axis=1)

    stats = [statistics_of(probe, s) for s in sims]
    both = np.concatenate(stats)
    events, names = [], []
    seen: set[tuple[str, bytes]] = set()

    def keep(event: Event, part: str, column: int) -> None:
        outcome = event.test(both, None)
        pattern = np.packbits(outcome).tobytes()
        if outcome.any() and not outcome.all() and (part, pattern) not in seen:
            seen.add((part, pattern))
            events.append(event)
            names.append(part)

    for j, (part, kind) in enumerate(columns):
        label = "Λ" if part == "all parts" else f"{kind}[{part}]"
        if kind == "M":
            for m in _MOVES:
                keep(Event(f"{label} ≥ {m:g}", lambda s, c, j=j, m=m: s[:, j] >= m), part, j)
            continue
        keep(Event(f"{label} > 0", lambda s, c, j=j: s[:, j] > _TOLERANCE), part, j)
        keep(Event(f"{label} < 0", lambda s, c, j=j: s[:, j] < -_TOLERANCE), part, j)
        if part != "all parts":
            continue  # a part's sign events and moves; the quantiles on the total only
        for t in np.quantile(stats[1][:, j], _QUANTILES, method="nearest"):
            ev = Event(f"{label} ≥ {t:.4g}", lambda s, c, j=j, t=t: s[:, j] >= t - _TOLERANCE)
            keep(ev, part, j)
        for t in np.quantile(stats[0][:, j], [1 - q for q in _QUANTILES], method="nearest"):
            ev = Event(f"{label} ≤ {t:.4g}", lambda s, c, j=j, t=t: s[:, j] <= t + _TOLERANCE)
            keep(ev, part, j)
    claimed = {p.name: p.claimed_loss() for p in probe}
    claimed["all parts"] = float(sum(claimed.values()))

    def statistics(parts: list[Part]) -> np.ndarray:
        if [p.name for p in parts] != [p.name for p in probe]:
            raise RuntimeError("a fit released other parts than the probe fit")
        return statistics_of(parts, [p.values[None, :] for p in parts])[0]

    return VariantEvents(events, names, claimed, statistics)
