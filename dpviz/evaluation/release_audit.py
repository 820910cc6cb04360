"""Empirical privacy audit of a whole release: the real fitting code, fresh secret noise.

The exact audit (:mod:`dpviz.privacy.audit`) checks one leaf mechanism's formula. This module
checks what an algorithm actually releases, end to end: it fits the algorithm many
times on each of two neighbouring datasets D and D' = D ∪ {x}, every fit with fresh
secret noise from :class:`dpviz.privacy.noise.NoiseSource` exactly as a user's fit gets it (no
``noise_seed``), reads each released model, and turns the frequencies of a few events
into a Clopper–Pearson lower bound on ε. What each fit is read for, and the events
counted, live in :mod:`dpviz.evaluation.audit_readings`.

**What the check proves and what it cannot.** If the released model is ε-DP, then for
every event E, P[E | D] ≤ e^ε · P[E | D'] and the other way round. The audit counts
how often each event happened in ``n_runs`` fits on D and ``n_runs`` fits on D' and
bounds the two probabilities by exact (conservative) Clopper–Pearson intervals, with a
Bonferroni correction over every (event, direction) pair it tries. With probability at
least ``confidence``, every interval holds at once, so the reported lower bound is at
most the true privacy loss between D and D'. A lower bound ABOVE the ledger's ε
therefore refutes the ledger's claim (up to the 1 − ``confidence`` chance of a false
alarm). A lower bound at or below the ledger's ε proves nothing: an empirical audit
sees one pair of datasets, a few events and finitely many runs, so it can only ever
refute a claim, never confirm one. It is a test with teeth against real bugs (too little
noise, noise reused across releases, a record moving other records between trees), as
the test suite shows with such mutants, not a proof of privacy.

**Two variants.** By default (``sharpened=False``) every fit is the release users get:
the registry defaults (:func:`dpviz.evaluation.defaults.parameters`; the CLI's ``dpviz
audit --release`` runs the same), on a pair with a continuous feature, so that the
record count, the split tables, the class prior and the leaves are all released.
``sharpened=True`` runs the older, narrower configuration (:data:`SHARPENED_PARAMS`, the
pair :data:`AUDIT_SCHEMA`) that puts all of a small budget where one leaf shows it: it
has more power per fit against the leaves, none against the rest.

**The defaults pair.** :data:`DEFAULTS_SCHEMA` adds a continuous feature ``size`` in
[0, 10] to ``colour``; D holds 40 red records of evenly spread sizes, alternately ``no``
and ``yes``, and x is a blue ``yes`` of size 5. At the defaults the structure itself is
a release (a noisy record count sizes the trees, noisy class tables place their split
points, the greedy trees choose splits by the exponential mechanism), so it varies
from fit to fit. Each fit is read where x can show, with the true counts of D and of
D' in the released structure (NOT-private diagnostics and the known pair) as the two
claimed centres, every value shifted by exactly one record between D and D':

- ``fletcher_islam``, ``jpw``: the noisy record count (5% of ε), the class prior's
  ``yes`` count, and the noisy ``yes`` count of every leaf x reaches (one leaf with
  disjoint data; one per tree for ``jpw``, whose trees share the records);
- ``friedman_schuster``, ``dpea``: the noisy count of x's cell in the histogram of
  ``size`` that places the bins' edges (``split_points="quantile"``, 5% of ε), the root's
  noisy ``yes`` count (the record count, stopping test and prior of the auto depth), the
  stopping rule's noisy ``yes`` count of every node on x's path, and x's leaf's noisy
  ``yes`` count;
- ``dpboost``: the class prior's ``yes`` count.

Λ is the sum over these values of the claimed discrete-Laplace log-likelihood ratio;
the event thresholds are simulated from the scales of two probe fits. Any fixed event
gives a valid bound, so the structure varying between fits costs power, never validity.

*Where the defaults audit lacks power, the per-entry tests guard the entry*
(``tests/privacy/test_ledger_entries.py``: each entry's released noise against its
booked law, and a 4ε mutant of it refuted): the forest's split tables (their release
is read only through the split points they place: noisy CDFs and feature weights, a
weak, diluted signal); the greedy trees' and DPBoost's split choices (x moves a split
score by at most one record's share); DPBoost's leaves and held-out check (the defaults
deal x to one of 10 trees or the held-out cell with a secret draw, so no single leaf's
law is fixed — the sharpened variant reads the leaf with one tree, and the ``grown``
variant below every tree's leaf x reaches, a mixture over x's secret tree); the forest's
floor check from ε = 1 up (two noisy out-of-bag counts, read only through whether the forest
falls back on its prior) and its accuracy objective's score histogram from ε = 1 up (read
only through the cut it sets; the ``accuracy`` variant below reads its counts). The audit
reads the rest; ``claimed_pair_loss`` is the most its readings can show.

**The sharpened pair.** A public schema with one discrete feature ``colour`` (``blue``, ``red``)
and two classes (``no``, ``yes``); D holds 20 red records, ten of each class; x is a
blue ``yes``. Every algorithm here must split on ``colour`` (it is the only feature and
it is binary), so x's leaf is the blue leaf, which no record of D reaches: D gives it
counts (0, 0) and D' gives (0, 1). That is the tightest pair for the leaf mechanisms
(``permute_flip`` releases label ``no`` with probability 1/2 on (0, 0) and e^-ε/2 on
(0, 1): ratio exactly e^ε). The 20 red records do not touch x's leaf under the real
code; they are there so that an assignment of records to trees that depends on n (a
shuffle cut into parts) visibly moves them when x arrives.

**The events** are chosen before any release is looked at, from the noise law the
code claims: the audit computes, from a fit's NOT-private diagnostics (true leaf counts
or leaf values of D and of D'), which released numbers or labels differ in law between
D and D' and the exact claimed log-likelihood ratio Λ of what it reads. The events are
{Λ > 0}, {Λ < 0} and {Λ ≥ t}, {Λ ≤ t} for a few quantiles t of Λ simulated from the
claimed law with a seeded generator (never from the audited releases), plus, when a
single released number is read, the parity of its position in steps of the claimed
shift (a release that reuses its noise moves by exactly one step, so the parity always
flips). Each event is tried in both directions.

**Per algorithm, sharpened** (registry defaults except where a parameter makes the audit
sharper; the parameters used are in the result):

- ``fletcher_islam``: registry defaults (100 trees, ``theorem2`` depth, ``permute_flip``,
  disjoint data) but ``prior_share=0`` (here and for ``jpw``), so that no share of ε goes
  on the class prior, a plain discrete-Laplace histogram. Reads the released label of
  every leaf whose true counts differ between D and D' (x's leaf only, with the real
  per-record hash) through the model's
  public ``released_outputs``, which is the path prediction and export use (untrained
  leaves are drawn from the release's fresh noise at fit time, or on first use beyond an
  export's size).
- ``jpw``: ``n_estimators=1`` (the registry default is 10). Every Private-RDT tree
  sees every record and spends ε/τ, so one tree puts the whole leaf budget (0.95ε after
  the 5% noisy record count of the ``jpw`` depth rule, which this schema's depth does
  not depend on) on one released count. Reads x's leaf's noisy count of class ``yes``.
- ``friedman_schuster``: ``max_depth=1``; ``dpea``: ``max_depth=2`` (with its default
  d = 2). The budget is split evenly over ⌈D/d⌉ split steps and the leaves; the split
  on the only feature is forced, so only the leaves' ε' = ε/2 is visible, the most any
  depth allows. Reads x's leaf's noisy count of class ``yes``.
- ``dpboost``: ``n_estimators=1, trees_per_ensemble=1`` (the defaults deal x to one of
  50 trees at random, which dilutes what one leaf shows 50-fold). All splits are forced;
  the leaf half of the tree's ε is visible. Reads x's leaf's released value (Laplace).

Every run is a complete ``fit_encoded`` (the estimator's own fit, after the one-off
encoding of the two small frames), never a shortcut such as ``relabel``.

``claimed_pair_loss`` in the result is the exact privacy loss between D and D' of what
the audit reads, under the claimed noise law: the most any audit of these readings
could show (ε for ``fletcher_islam``, 0.95ε for ``jpw``, ε/2 for the greedy trees and
DPBoost). Where it is below the ledger's ε, the rest of the budget goes on choices this
pair cannot see, and a mutant must more than double the visible part to exceed the
ledger.

**Blind spots of the sharpened variant.** The split choices of the greedy trees and
DPBoost and the noisy record count of the ``jpw`` depth rule are not exercised by this
pair. Noise reused across
releases (a fixed key) makes each release deterministic; it is caught with certainty
where the read number moves by one step between D and D' (``jpw``, the greedy trees),
but a released label separates D from D' only when the fixed noise lies in the band the
extra count crosses (for ``permute_flip`` a share (1 − e^-ε)/2 of keys), and DPBoost's
stream shifts by one draw when x is dealt to a tree, so its two fixed outputs are
separated by these events for most keys, not all. The pair has no continuous feature,
so the forest's split release (``quantile`` split points: noisy class tables of every
feature) is not exercised; ``tests/models/test_forest_splits.py`` audits its noise law
the same way, with a half-noise mutant. The pair has two classes, so
DPBoost's shared multiclass trees (k > 2: each record's k gradients bounded in L1, the
leaf noise scaled to that bound) are not exercised either; ``tests/models/test_dpboost.py``
checks that bound exhaustively (Lemma 2 in L1) and on the gradients of a real fit. The
pair is too small for DPBoost to grow (ε ≥ 5 and a released prior of ≥ 6,000 records),
and neither pair fits the ``macro_f1`` objective: the variants below read those releases.

**DPBoost variants** (``variant=``, ``dpviz audit --release dpboost --variant …``;
:mod:`dpviz.evaluation.audit_variants`). Registry defaults at ε = 10 (unless told) on
their own pairs, each fit read per booked entry, with a Clopper–Pearson bound per entry
(``parts`` in the result) against that entry's claimed loss, besides the total against
the ledger:

- ``grown``: 6,400 ``no`` records and x a ``yes`` of another colour, so the fit grows
  (log-loss, noisy-quantile bin edges, report-noisy-max splits, clipped Newton leaves).
  Read: the prior's ``yes`` count, x's cell in the bin edges' noisy histogram, and per
  ensemble the released value of the leaf x reaches in each tree, as a Laplace mixture
  over the tree x is secretly dealt to (claimed loss ≈ 1.8–1.9 per ensemble at ε = 10);
  with ``params={"objective": "macro_f1"}`` the score histogram too.
- ``macro_f1``: 600 records, a quarter ``yes``, ``objective="macro_f1"``: the trees keep a
  weight ≥ 0.5, so the 64-bin score histogram is drawn; read: its class-``yes`` count in
  the bin x's score falls in (claimed loss ε_th = 0.45 at ε = 10). The same pair audits
  the default forest's macro_f1 score histogram (``--release fletcher_islam``; from
  ε = 1, :mod:`dpviz.models.forest.score_histogram`): read, the noisy count of the cell
  x's out-of-bag score falls in (x scored by every tree but its own, public by its
  record hash; D's centre the checked records of D in that cell under the same release;
  claimed loss 0.05·ε = 0.5 at ε = 10).
- ``accuracy`` (``--release fletcher_islam`` only): the macro_f1 pair's law on 8,000
  records, with the forest's default objective, whose releases from ε = 1 book the
  histogram one row per class where the records suffice (the accuracy cut,
  :mod:`dpviz.models.forest.score_histogram`); read, the count of x's class in the cell of
  x's out-of-bag score (claimed loss 0.5 at ε = 10; a 4×-ε mutant reaches 1.22 at 150
  fits).

Measured (``tests/evaluation/test_release_audit_variants.py``): 200 fits per dataset
refute a 4×-ε mutant of the grown leaves (bound 2.1–2.3 against a claimed 1.8–1.9, for
either ensemble), 80 refute a 4×-ε histogram (0.7–0.94 against 0.45); the real code
stays within every claim. **Blind spots of the variants.** The grown model's split
choices (report-noisy-max) and its held-out check are not read (the pair keeps the
splits nearly independent of x; ``tests/models/test_dpboost_newton.py`` checks the
draw's exact law and refutes its 4×-ε mutant); the grown softmax model (k > 2 classes)
is not exercised (``test_dpboost_newton.py`` bounds its leaves' L1 sensitivity on the
real tree code); one secret tree per ensemble dilutes what the leaves show, so the
leaves' claim is refutable only at a 4×-ε scale and a few hundred fits; and the
``macro_f1`` pair is imbalanced on purpose: on a balanced pair at ε = 10 the held-out
check fails in about 3 of 4 fits (the trees-trusting and fallback mixes classify
alike), the weight falls below 0.5 and no histogram is drawn.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import beta

from dpviz.evaluation.audit_readings import (
    DEFAULT_READINGS,
    SHARPENED_READINGS,
    Reading,
    choose_events,
)
from dpviz.evaluation.audit_variants import (
    FOREST_VARIANTS,
    VARIANT_RUNS,
    VARIANTS,
    variant_epsilon,
    variant_events,
    variant_pair,
    variant_parts,
)
from dpviz.models.registry import get_algorithm
from dpviz.privacy.mechanisms import valid_epsilon
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

AUDIT_SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (Feature("colour", "discrete", values=("blue", "red")),),
)
# D: 20 red records, ten of each class. x: a blue "yes", alone in its leaf.
BACKGROUND = pd.DataFrame({"colour": ["red"] * 20, "label": ["no", "yes"] * 10})
EXTRA_RECORD = pd.DataFrame({"colour": ["blue"], "label": ["yes"]})

# The defaults pair: a continuous feature too, so that every release of the defaults is
# made (see the module docstring). D: 40 red records; x: a blue "yes" of size 5.
DEFAULTS_SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("colour", "discrete", values=("blue", "red")),
        Feature("size", "continuous", low=0.0, high=10.0),
    ),
)
DEFAULTS_BACKGROUND = pd.DataFrame(
    {
        "colour": ["red"] * 40,
        "size": np.linspace(0.1, 9.9, 40),
        "label": ["no", "yes"] * 20,
    }
)
DEFAULTS_EXTRA = pd.DataFrame({"colour": ["blue"], "size": [5.0], "label": ["yes"]})

# Parameters over the registry defaults of the sharpened variant (see the module docstring).
SHARPENED_PARAMS: dict[str, dict[str, Any]] = {
    # The class prior is off so that all of ε is on the leaves this audit reads (the
    # prior is a discrete-Laplace histogram, the sampler jpw's reading audits).
    # The forest is audited with the paper's label mechanism, whose release is subtler
    # than counts; its default count release is jpw's discrete Laplace reading, audited
    # there. A declared n keeps the records depth rule from spending ε on a noisy count,
    # so that D and D' grow the same trees.
    "fletcher_islam": {"prior_share": 0.0, "declared_n": 20, "mechanism": "permute_flip"},
    "jpw": {"n_estimators": 1, "prior_share": 0.0},
    "friedman_schuster": {"max_depth": 1},
    "dpea": {"max_depth": 2},
    "dpboost": {"n_estimators": 1, "trees_per_ensemble": 1, "preset": "paper"},
}
# Fits per dataset at the registry defaults (a fit of the defaults on 41 records costs
# about 2–3 ms for jpw and the greedy trees, 7–10 ms for the forest and DPBoost).
DEFAULT_RUNS: dict[str, int] = {
    "fletcher_islam": 300,
    "jpw": 600,
    "friedman_schuster": 1000,
    "dpea": 1000,
    "dpboost": 150,
}
# Fits per dataset for the sharpened check (a jpw fit costs about 1.7 ms, a greedy tree
# 0.7 ms, the others 0.3–0.4 ms, each a whole fit).
SHARPENED_RUNS: dict[str, int] = {
    "fletcher_islam": 3000,
    "jpw": 1500,
    "friedman_schuster": 2500,
    "dpea": 2500,
    "dpboost": 3000,
}


@dataclass
class EventCount:
    """One event's frequencies and its two Clopper–Pearson bounds on ε.

    Attributes
    ----------
    event : str
        The event, on Λ (the claimed log-likelihood ratio of what is read) or on the
        step index of a single released number.
    hits_d, hits_d_prime : int
        How many of the fits on D and on D' released a model in the event.
    bound_d_over_d_prime, bound_d_prime_over_d : float
        ln(lower_CP(P[E|D]) / upper_CP(P[E|D'])) and the reverse (-inf when a lower
        bound is 0).
    """

    event: str
    hits_d: int
    hits_d_prime: int
    bound_d_over_d_prime: float
    bound_d_prime_over_d: float
    part: str = ""


@dataclass
class PartBound:
    """One booked entry a variant reads (:mod:`dpviz.evaluation.audit_variants`): the
    largest |Λ| its claimed law allows and the best bound of the events on it alone.

    A ``lower_bound`` above ``claimed_loss`` refutes that entry's claimed noise law
    (false alarm probability ≤ 1 − confidence, jointly with every other bound; for the
    grown leaves, their law given the released splits, which the pair keeps nearly
    independent of x: see :mod:`dpviz.evaluation.audit_variants`)."""

    name: str
    claimed_loss: float
    lower_bound: float
    event: str

    @property
    def refuted(self) -> bool:
        return self.lower_bound > self.claimed_loss


@dataclass
class ReleaseAuditResult:
    """Outcome of :func:`audit_release`.

    Attributes
    ----------
    algorithm : str
        Registry id of the audited algorithm.
    epsilon : float
        The ε the algorithm was asked for.
    params : dict
        Parameters given over the registry defaults (the sharpened ones included).
    ledger_epsilon : float or None
        ``ledger_.epsilon_total`` of a fitted model: the claim under test (None when the
        ledger proves no ε; then there is no claim to refute).
    lower_bound : float
        Clopper–Pearson lower bound on the privacy loss between D and D', valid with
        probability ≥ ``confidence`` (0 when no event separates them).
    consistent : bool or None
        ``lower_bound <= ledger_epsilon``; None without a ledger ε. True does NOT prove
        privacy; False refutes the ledger (false alarm probability ≤ 1 − confidence).
    event : str
        The event and direction that gave ``lower_bound``.
    hits_d, hits_d_prime : int
        How often that event happened in the fits on D and on D'.
    n_runs : int
        Fits on each dataset.
    confidence : float
        Joint confidence of all Clopper–Pearson bounds (Bonferroni-corrected).
    claimed_pair_loss : float
        Exact privacy loss between D and D' of what the audit reads, under the noise
        law the code claims: the most a perfect audit of these readings could show.
    reads : str
        What the audit reads from each released model.
    events : list of EventCount
        Every event tried.
    seconds : float
        Wall time of the audit.
    sharpened : bool
        Whether the sharpened configuration was audited (False: the registry defaults).
    stopped : bool
        True when ``cancel`` stopped the audit early: ``n_runs`` fits per dataset were
        made, fewer than asked (the bound is valid for them, with less power).
    variant : str or None
        The variant audited (:data:`~dpviz.evaluation.audit_variants.VARIANTS`),
        None for the defaults or sharpened audit.
    parts : list of PartBound
        A variant's per-entry bounds (empty otherwise).
    """

    algorithm: str
    epsilon: float
    params: dict
    ledger_epsilon: float | None
    lower_bound: float
    consistent: bool | None
    event: str
    hits_d: int
    hits_d_prime: int
    n_runs: int
    confidence: float
    claimed_pair_loss: float
    reads: str
    events: list[EventCount] = field(default_factory=list)
    seconds: float = 0.0
    sharpened: bool = False
    stopped: bool = False
    variant: str | None = None
    parts: list[PartBound] = field(default_factory=list)

    @property
    def refuted_parts(self) -> list[str]:
        """The entries whose claimed law a variant's bounds refute."""
        return [p.name for p in self.parts if p.refuted]

    def to_dict(self) -> dict:
        """A JSON-ready dictionary (infinite values become None)."""
        out = asdict(self)
        for item in out["events"]:
            for key in ("bound_d_over_d_prime", "bound_d_prime_over_d"):
                if not np.isfinite(item[key]):
                    item[key] = None
        if not np.isfinite(out["claimed_pair_loss"]):
            out["claimed_pair_loss"] = None
        return out


# --- Clopper–Pearson -------------------------------------------------------------------


def clopper_pearson(hits, n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided exact Clopper–Pearson bounds on a binomial probability.

    Parameters
    ----------
    hits : int or array of int
        Successes out of ``n`` independent trials.
    n : int
        Trials.
    alpha : float
        Each bound fails with probability at most ``alpha`` (exactly: CP is
        conservative, it holds for every true probability).

    Returns
    -------
    lower, upper : ndarray
        P[p ≥ lower] ≥ 1 − alpha and P[p ≤ upper] ≥ 1 − alpha.
    """
    hits = np.asarray(hits, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lower = np.where(hits > 0, beta.ppf(alpha, hits, n - hits + 1), 0.0)
        upper = np.where(hits < n, beta.ppf(1.0 - alpha, hits + 1, n - hits), 1.0)
    return lower, upper


def _log_ratio(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(lower) - np.log(upper)


def neighbouring_datasets(
    sharpened: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The audit's pair of neighbouring datasets.

    Parameters
    ----------
    sharpened : bool, default=True
        The sharpened pair over :data:`AUDIT_SCHEMA` (D: 20 red records, ten of each
        class; x a blue ``yes``), or (False) the defaults pair over
        :data:`DEFAULTS_SCHEMA` (D: 40 red records of spread sizes; x a blue ``yes`` of
        size 5).

    Returns
    -------
    d, d_prime, x : DataFrame
        D, D' = D ∪ {x} with x appended last, and x, label column included.
    """
    background, extra = (
        (BACKGROUND, EXTRA_RECORD) if sharpened else (DEFAULTS_BACKGROUND, DEFAULTS_EXTRA)
    )
    d_prime = pd.concat([background, extra], ignore_index=True)
    return background.copy(), d_prime, extra.copy()


# --- the audit ---------------------------------------------------------------------------


def audit_release(
    algorithm_id: str,
    *,
    epsilon: float | None = None,
    n_runs: int | None = None,
    params: dict | None = None,
    confidence: float = 0.95,
    random_state: int = 0,
    sharpened: bool = False,
    pair: tuple[Schema, pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    variant: str | None = None,
) -> ReleaseAuditResult:
    """Empirical lower bound on the privacy loss of an algorithm's whole release.

    Fits ``algorithm_id`` ``n_runs`` times on D and ``n_runs`` times on D' = D ∪ {x}
    (see the module docstring for the pairs and what is read), each fit with fresh
    secret noise through the algorithm's real ``fit_encoded``, counts a few events
    chosen in advance from the claimed noise law, and returns

        max over events E and both directions of ln(lower_CP(P[E|D1]) / upper_CP(P[E|D2]))

    with every Clopper–Pearson bound at level (1 − confidence) / (2 · number of
    (event, direction) pairs) (Bonferroni), clipped below at 0.

    What it proves: with probability ≥ ``confidence`` the true privacy loss between D
    and D' is at least ``lower_bound``, so a bound above the ledger's ε refutes the
    ledger. What it cannot: a bound at or below the ledger's ε does not show the model
    is private (one pair, a few events, finite runs); and the audit sees only the part
    of the budget its readings exercise (``claimed_pair_loss``; the module docstring
    names the per-entry tests that guard the rest).

    Parameters
    ----------
    algorithm_id : str
        Registry id (``dpviz.models.registry.ALGORITHMS``).
    epsilon : float or None, default=None
        Budget the algorithm is asked for; None: 1, or
        :func:`~dpviz.evaluation.audit_variants.variant_epsilon` (10; 4 for ``"random"``)
        for a ``variant``.
    n_runs : int or None, default=None
        Fits per dataset; None uses :data:`DEFAULT_RUNS` (:data:`SHARPENED_RUNS`,
        :data:`~dpviz.evaluation.audit_variants.VARIANT_RUNS`).
    params : dict or None, default=None
        Parameters over the registry defaults (over :data:`SHARPENED_PARAMS` when
        ``sharpened``, over the variant's ``objective`` for a ``variant``).
    confidence : float, default=0.95
        Joint confidence of the bounds; 1 − confidence bounds the false-alarm rate.
    random_state : int, default=0
        Public randomness only: the tree structure, the record→tree hash and the
        simulation that places the event thresholds. Never the noise.
    sharpened : bool, default=False
        False: the release users get (registry defaults, the defaults pair). True: the
        sharpened configuration and pair, more power on one leaf, blind to the rest.
    pair : (schema, D, D', x) or None, default=None
        Another neighbouring pair for the defaults audit (e.g. built from a user's
        schema, :func:`dpviz.evaluation.audit_pair.schema_pair`): x must be the last
        record of D' and of the schema's second class, as in :data:`DEFAULTS_EXTRA`.
    progress : callable or None, default=None
        ``progress(done, total)`` after each pair of fits (one on D, one on D').
    cancel : callable or None, default=None
        Checked after each pair of fits; True stops the audit, which then bounds ε
        from the fits made so far (``stopped`` in the result).
    variant : {"grown", "macro_f1", "random"} or None, default=None
        ``dpboost``: audit the grown model (ε ≥ 5, a pair of 6,400 records), the
        ``macro_f1`` objective's score histogram or the random-split mode (ε < 5, 3,000
        records of three classes; default ε 4); ``fletcher_islam``: ``macro_f1`` only
        (its score histogram from ε = 1), on their own pairs
        (:mod:`dpviz.evaluation.audit_variants`), with a bound per booked entry read
        (``parts`` in the result).

    Returns
    -------
    ReleaseAuditResult
    """
    start = time.perf_counter()
    algorithm = get_algorithm(algorithm_id)
    if variant is not None:
        _check_variant(algorithm.id, variant, sharpened, pair)
    if epsilon is None:
        epsilon = 1.0 if variant is None else variant_epsilon(variant)
    epsilon = valid_epsilon(epsilon)
    if n_runs is None and variant is not None:
        n_runs = VARIANT_RUNS[variant]
    elif n_runs is None:
        n_runs = (SHARPENED_RUNS if sharpened else DEFAULT_RUNS)[algorithm.id]
    if isinstance(n_runs, bool) or not isinstance(n_runs, int | np.integer) or n_runs < 1:
        raise ValueError(f"n_runs must be a whole number ≥ 1, got {n_runs!r}")
    n_runs = int(n_runs)
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    base = SHARPENED_PARAMS[algorithm.id] if sharpened else VARIANTS.get(variant, {})
    used = {**base, **(params or {})}
    if pair is not None and sharpened:
        raise ValueError("a custom pair is audited at the defaults, not sharpened")
    if variant is not None:
        schema, d, d_prime, x = variant_pair(variant)
    elif pair is not None:
        schema, d, d_prime, x = pair
    else:
        schema = AUDIT_SCHEMA if sharpened else DEFAULTS_SCHEMA
        d, d_prime, x = neighbouring_datasets(sharpened)
    data = [encode(d, schema), encode(d_prime, schema)]
    x_encoded = encode(x, schema)

    def fit(which: int):
        model = algorithm.make(epsilon, random_state=random_state, schema=schema, **used)
        return model.fit_encoded(data[which], schema)

    # Probe fits: their NOT-private diagnostics (true counts) fix what is read and its
    # claimed law; their releases are not counted.
    probe = [fit(0), fit(1)]
    ledger_epsilon = probe[0].ledger_.epsilon_total
    rng = np.random.default_rng(random_state)
    tags: list[str] = []
    claims: dict[str, float] = {}
    if variant is not None:
        _check_variant_probe(variant, probe[0], epsilon)
        parts = variant_parts(variant, probe[0], data[0], x_encoded)
        found = variant_events(parts, rng)
        events, tags, claims = found.events, found.parts, found.claimed
        claimed = claims["all parts"]
        reads = "; ".join(p.name for p in parts)

        def observe(model, which: int) -> tuple[np.ndarray, int]:
            # Every fit is read against D's centres (functions of its release and D).
            return found.statistics(variant_parts(variant, model, data[0], x_encoded)), 0

    elif sharpened:
        reading = SHARPENED_READINGS[algorithm.id](probe[0], probe[1], x_encoded)
        if reading.n_items == 0:
            raise RuntimeError("D and D' give the same claimed law for everything read")
        events = choose_events(reading, rng)

        def observe(model, which: int) -> tuple[float, int]:
            values = reading.read(model)[None, :]
            cells = reading.cells(values)
            return float(reading.loss(values)[0]), 0 if cells is None else int(cells[0])

        reads, claimed = reading.reads, reading.claimed_pair_loss()
    else:
        reads, items_of = DEFAULT_READINGS[algorithm.id]
        scales = np.asarray(items_of(probe[0], data[0], x_encoded, 0).scales)
        # The thresholds: Λ's law for the probe's scales (the structure, and with it the
        # number and scales of the values, varies between fits; any event is valid).
        law = Reading(
            reads=reads,
            read=lambda m: None,
            centres=(np.zeros(len(scales)), np.ones(len(scales))),
            scale=scales,
        )
        events = choose_events(law, rng, parity=False)
        claimed = law.claimed_pair_loss()

        def observe(model, which: int) -> tuple[float, int]:
            return items_of(model, data[which], x_encoded, which).loss(), 0

    # Fits on D and D' alternate, so that a stop leaves as many of each.
    observed: list[list[tuple[float, int]]] = [[], []]
    stopped = False
    for done in range(1, n_runs + 1):
        for which in (0, 1):
            observed[which].append(observe(fit(which), which))
        if progress is not None:
            progress(done, n_runs)
        if cancel is not None and done < n_runs and cancel():
            stopped, n_runs = True, done
            break
    hits = []
    for which in (0, 1):
        loss, cell = (np.asarray(a) for a in zip(*observed[which], strict=True))
        hits.append(np.array([int(e.test(loss, cell).sum()) for e in events]))

    alpha = (1.0 - float(confidence)) / (2 * 2 * len(events))
    (low_d, up_d), (low_d2, up_d2) = (clopper_pearson(h, n_runs, alpha) for h in hits)
    d_over = _log_ratio(low_d, up_d2)  # ln P[E|D] / P[E|D']
    d2_over = _log_ratio(low_d2, up_d)  # ln P[E|D'] / P[E|D]
    table = [
        EventCount(
            e.name,
            int(hits[0][i]),
            int(hits[1][i]),
            float(d_over[i]),
            float(d2_over[i]),
            tags[i] if tags else "",
        )
        for i, e in enumerate(events)
    ]
    part_bounds = [_part_bound(name, loss, table) for name, loss in claims.items()]
    both = np.concatenate([d_over, d2_over])
    best = int(np.argmax(both))
    i = best % len(events)
    direction = "P[E|D] / P[E|D']" if best < len(events) else "P[E|D'] / P[E|D]"
    lower_bound = max(0.0, float(both[best]))
    return ReleaseAuditResult(
        algorithm=algorithm.id,
        epsilon=epsilon,
        params=used,
        ledger_epsilon=ledger_epsilon,
        lower_bound=lower_bound,
        consistent=None if ledger_epsilon is None else bool(lower_bound <= ledger_epsilon),
        event=f"{events[i].name}, {direction}" if lower_bound > 0 else "none",
        hits_d=int(hits[0][i]),
        hits_d_prime=int(hits[1][i]),
        n_runs=n_runs,
        confidence=float(confidence),
        claimed_pair_loss=claimed,
        reads=reads,
        events=table,
        seconds=time.perf_counter() - start,
        sharpened=sharpened,
        stopped=stopped,
        variant=variant,
        parts=part_bounds,
    )


def _part_bound(name: str, claimed: float, table: list[EventCount]) -> PartBound:
    """The best bound of the events on one part (both directions), clipped at 0."""
    best, where = 0.0, "none"
    for e in table:
        if e.part != name:
            continue
        for bound, direction in (
            (e.bound_d_over_d_prime, "P[E|D] / P[E|D']"),
            (e.bound_d_prime_over_d, "P[E|D'] / P[E|D]"),
        ):
            if bound > best:
                best, where = float(bound), f"{e.event}, {direction}"
    return PartBound(name, claimed, best, where)


def _check_variant(algorithm: str, variant: str, sharpened: bool, pair) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    audited = {"macro_f1": ("dpboost", "fletcher_islam"), "accuracy": ("fletcher_islam",)}.get(
        variant, ("dpboost",)
    )
    if algorithm not in audited:
        raise ValueError(
            f"the {variant!r} variant audits {' and '.join(audited)}, not {algorithm}"
        )
    if sharpened or pair is not None:
        raise ValueError("a variant is audited on its own pair, neither sharpened nor custom")


def _check_variant_probe(variant: str, model, epsilon: float) -> None:
    """Refuse a variant whose probe fit does not make the release it is for."""
    if variant == "grown" and not model.grown_:
        raise ValueError(
            f"DPBoost did not grow at epsilon = {epsilon:g} (it grows from epsilon = 5 "
            "with the registry defaults): use --epsilon 5 or more for the grown variant"
        )
    if variant == "random" and not model.random_:
        raise ValueError(
            f"DPBoost did not split at random at epsilon = {epsilon:g} on the random pair "
            "(the mode needs epsilon below 5 and, on 3,000 records of 3 classes, at least "
            "0.3): use --epsilon 0.3 to 4.99 for the random variant"
        )
    if (
        variant in FOREST_VARIANTS
        and hasattr(model, "leaf_keys_")
        and model.threshold_counts_ is None
    ):
        raise ValueError(
            f"at epsilon = {epsilon:g} the forest books no {variant} score histogram (it "
            "does from epsilon = 1, where its floor's check runs): use epsilon 1 or more"
        )
    if variant == "macro_f1" and model.threshold_counts_ is None:
        raise ValueError(
            f"at epsilon = {epsilon:g} the macro_f1 pair's trees carry a weight below 0.5, "
            "so no score histogram is drawn: use a larger epsilon (the default is 10)"
        )
