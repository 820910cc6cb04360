"""How a greedy DP tree splits ε, and the ledger that books it.

Privacy role: bookkeeping from public numbers only. The split depends on ε, the depth
D and d (``steps``). With ``split_points="quantile"``, ε ≥ 1 and a continuous feature,
ε_q = 0.05·ε first buys the noisy histograms that place the bins' edges
(:func:`edge_epsilon`) and everything below splits ε − ε_q in its place. With
``max_depth="auto"`` and no ``declared_n`` the root's noisy
class histogram gets ε_root = 0.1·ε; then each of the ⌈D/d⌉ step levels and the
leaves get ε' = (ε − ε_root) / (⌈D/d⌉ + 1). Below the root a level spends ρ·ε'
(ρ = ``COUNT_SHARE`` = 0.2) on its nodes' noisy class histograms (the stopping rule)
and the rest on the exponential-mechanism step; a leaf closed before full depth gets,
on its final counts, the ε' of every level its records did not reach as well, so every
record spends exactly ε. If the "auto" depth is 0 (few records for the ε) the tree has
no split and no leaf counts: ε − ε_root buys a report-noisy-max choice of its class
(``Budget.pick``). The nodes of a level hold disjoint records, so the ledger books
each level's parts in parallel. Steps of three or more layers (d > 2) sample by MCMC
and carry no proven ε: such a model is "approximate", and its ledger says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral

from dpviz.models.greedy.score import CRITERIA
from dpviz.models.trees.edges import EDGE_CELLS, EDGE_SHARE
from dpviz.models.trees.prior import decimal_times, prior_epsilon
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_inferred_schema, book_noise_mode
from dpviz.privacy.mechanisms import valid_epsilon
from dpviz.privacy.noise import NoiseSource
from dpviz.tabular.inputs import check_whole_numbers

AUTO = "auto"
# The depth "auto" never exceeds: Friedman & Schuster's (and the registry's old) depth 5.
MAX_AUTO_DEPTH = 5
# ρ: the share of a step level's ε' (levels below the root) that buys the noisy node
# histograms of the stopping rule; the exponential mechanism keeps 1 − ρ.
COUNT_SHARE = 0.2
# With max_depth="auto" and no declared record count: the share of ε that buys the
# root's noisy class histogram (its sum is the record count of the depth rule), with
# the forest's floor (see root_count_epsilon).
ROOT_COUNT_SHARE = 0.1
# Below ε = 0.8, a tree with splits also picks the root's class by report-noisy-max with
# what the root histogram's old floor (0.08) held beyond 0.1·ε, at most this share of ε
# (0.02 at ε = 0.1): the prior the noise-dominated leaves fall back on (see class_epsilon).
CLASS_SHARE = 0.2


def root_count_epsilon(epsilon: float) -> float:
    """ε of the root's noisy class histogram: ``ROOT_COUNT_SHARE`` of ε (0.1·ε).

    Its sum is the record count n̂ of the depth rule; the histogram is also the root's
    stopping test and the prior that noise-dominated leaves fall back on. Until issue 28
    it had the forest's floor of 0.08 (80% of ε at ε = 0.1, whatever n̂): now the depth
    rule keeps that share off the tree only when n̂ is small (:func:`reserved_epsilon`),
    and a tree that then has no split spends it on its class
    (:func:`~dpviz.models.greedy.prior.noisy_max_class`). From ε = 0.8 up both rules
    give 0.1·ε."""
    return decimal_times(ROOT_COUNT_SHARE, float(epsilon))


def reserved_epsilon(epsilon: float, n_records: float) -> float:
    """The ε the "auto" depth rule keeps off the tree for the class prior: the forest's
    prior ε (:func:`~dpviz.models.trees.prior.prior_epsilon` with ``ROOT_COUNT_SHARE``,
    at least 0.1·ε, at most 0.8·ε; its floor 0.08 lowered towards 150/n̂ for n̂ above
    ~1,900 records), ``n_records`` the root histogram's sum n̂ (booked already).

    Small data at small ε is where a wrong prior costs most (the floor named the right
    majority on 348 records with a lead of 78; README "The forest"). If the tree still
    gets a split, the reserve goes to the tree; if it gets none, to the choice of its
    class. Public: ε and a released count."""
    n = float(n_records) if n_records and n_records >= 1 else None
    return prior_epsilon(float(epsilon), ROOT_COUNT_SHARE, n_records=n)


def class_epsilon(epsilon: float) -> float:
    """ε of the report-noisy-max root class of a tree WITH splits (``max_depth="auto"``,
    no declared count, the hierarchical fallback): min(``CLASS_SHARE``·ε, 0.08 − 0.1·ε),
    i.e. 0.02 at ε = 0.1, 0.03 at ε = 0.5 and 0 from ε = 0.8 up (there the budget is
    what it was before issue 28's change). The leaves' noisy sums alone named the wrong
    majority in many folds of a label-permuted wall_robot at ε = 0.1 (two classes 87
    records apart; bench/README); at 0.02 the class swaps with probability
    ½e^(−0.02·87) ≈ 9%. Public: ε only."""
    eps = float(epsilon)
    held = prior_epsilon(eps, ROOT_COUNT_SHARE) - root_count_epsilon(eps)
    return max(0.0, min(decimal_times(CLASS_SHARE, eps), held))


STOPPING_RULES = ("noisy_count", "none")
FALLBACKS = ("hierarchical", "none")
# Where a continuous feature is cut: at equal widths of its public domain (the papers';
# the default) or, with "quantile", at the quantiles of a booked noisy histogram of it
# (EDGE_SHARE·ε, from QUANTILE_FROM up). Measured on the shared sets first and the
# validation sets once (bench/README.md, "The greedy trees' bins at noisy quantiles"): at
# ε = 1 and 10 accuracy rose on both groups (wall_robot +14 to +17, diamonds +18 to +20,
# adult and MAGIC +0.5 to +1.5), but the validation group's mean binary AUC fell by
# 0.8–1.0 (breast_cancer, hmda, caravan), so it is not the default. Below ε = 1 the
# histograms' noise (s/(0.05·ε) records per cell) places the edges at random: pendigits
# lost 10 points (DPEA, ε = 0.3) on the shared sets.
SPLIT_POINTS = ("uniform", "quantile")
QUANTILE_FROM = 1.0


def edge_epsilon(epsilon: float, split_points: str, n_continuous: int) -> float:
    """ε_q of the noisy feature histograms that place the bin edges: ``EDGE_SHARE``·ε with
    ``split_points="quantile"``, ε ≥ :data:`QUANTILE_FROM` and a continuous feature;
    else 0 (equal-width public bins, nothing spent). Public: settings and the schema."""
    eps = float(epsilon)
    if split_points != "quantile" or n_continuous == 0 or eps < QUANTILE_FROM:
        return 0.0
    return decimal_times(EDGE_SHARE, eps)


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


@dataclass(frozen=True)
class Budget:
    """How a fit splits ε (every number public: it depends on the depth only).

    ``root`` buys the root's class histogram (``max_depth="auto"`` without a declared
    record count, else 0); the rest is ``(n_levels + 1) · level``: each of the
    ⌈D/d⌉ step levels and the leaves get ε' = ``level``. Below the root a step level
    spends ``count`` (ρ·ε', 0 without the stopping rule) on node histograms and
    ``level − count`` on the exponential mechanism. A tree of depth 0 after a root
    histogram (``pick`` > 0) has no leaf counts: ``pick`` = ε − ``root`` buys the
    report-noisy-max choice of its class, and ``level`` is 0."""

    epsilon: float
    depth: int
    steps: int
    root: float
    level: float
    count: float
    pick: float = 0.0

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


def check_params(model) -> None:
    """Refuse the parameters of a :class:`~dpviz.models.greedy.estimator.DPDecisionTreeClassifier`
    that no budget fits, with a message a person can act on (ValueError)."""
    valid_epsilon(model.epsilon)
    check_max_depth(model.max_depth)
    check_whole_numbers(model, {"steps": 1, "n_bins": 2, "mcmc_steps": 1, "declared_n": 0})
    if model.stopping not in STOPPING_RULES:
        raise ValueError(
            f"stopping must be one of {', '.join(STOPPING_RULES)}, got {model.stopping!r}"
        )
    if model.criterion not in CRITERIA:
        raise ValueError(
            f"criterion must be one of {', '.join(CRITERIA)}, got {model.criterion!r}"
        )
    if model.fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {', '.join(FALLBACKS)}, got {model.fallback!r}")
    if model.split_points not in SPLIT_POINTS:
        raise ValueError(
            f"split_points must be one of {', '.join(SPLIT_POINTS)}, got {model.split_points!r}"
        )
    if model.noise_seed is not None:
        NoiseSource.replayable(model.noise_seed)
    auto = isinstance(model.max_depth, str) and model.max_depth == AUTO
    if not auto and model.steps > model.max_depth:
        raise ValueError(
            f"steps d = {model.steps} exceeds the depth D = {model.max_depth}; use d ≤ D"
        )


def make_budget(
    epsilon: float,
    depth: int,
    steps: int,
    root_count: bool,
    node_counts: bool,
    root_class: bool = False,
) -> Budget:
    """The :class:`Budget` of a tree of depth ``depth`` grown in steps of ``steps`` layers:
    ``root_count`` whether the root's class histogram is bought (``max_depth="auto"``
    without a declared record count), ``node_counts`` whether the stopping rule buys
    node histograms (they are bought only when there are two step levels or more).
    With the root histogram and depth 0 the rest of ε picks the tree's class
    (``Budget.pick``) instead of buying leaf counts; with splits and ``root_class`` (the
    hierarchical fallback) :func:`class_epsilon` picks the root's class first."""
    eps = float(epsilon)
    root = root_count_epsilon(eps) if root_count else 0.0
    if root_count and depth == 0:
        return Budget(eps, 0, int(steps), root, 0.0, 0.0, eps - root)
    pick = class_epsilon(eps) if root_count and root_class else 0.0
    n_levels = math.ceil(depth / steps) if depth > 0 else 0
    level = (eps - root - pick) / (n_levels + 1)
    count = COUNT_SHARE * level if node_counts and n_levels > 1 else 0.0
    return Budget(eps, depth, int(steps), root, level, count, pick)


def greedy_ledger(
    budget: Budget,
    depth_known: bool,
    steps: int,
    mcmc_steps: int,
    replayable: bool,
    schema_inferred: bool,
    edges: tuple[float, int] = (0.0, 0),
) -> PrivacyLedger:
    """The ledger of a greedy tree with this ``budget`` (it does not depend on the data
    beyond the depth, which "auto" reads from a noisy or declared count; before such a
    fit, ``depth_known`` False, the split of ε − ε_root over the levels is booked as one
    part and ``budget`` is that of depth 5). ``edges`` is (ε_q, s): the noisy
    histograms of the s continuous features that place the bin edges, booked first
    (ε_q = 0: none; ``budget`` then splits ε − ε_q).

    Steps of three or more layers (d = ``steps`` > 2, ``mcmc_steps`` proposals) sample by
    MCMC: their entries are marked unproven, so the ledger claims no total ε. So is
    replayable noise (``replayable``: a ``noise_seed``): NOT private."""
    ledger = PrivacyLedger()
    book_inferred_schema(ledger, schema_inferred)
    book_noise_mode(ledger, replayable)
    eps_edges, s = edges
    if eps_edges > 0:
        ledger.add_sequential(
            LedgerEntry(
                f"noisy histograms of the {s} continuous feature{'s' * (s > 1)} over "
                f"{EDGE_CELLS} public cells each, ε = {eps_edges / s:g} per feature: the "
                "bin edges of the splits (discrete Laplace)",
                "all records",
                eps_edges,
            )
        )
    if budget.root:
        ledger.add_sequential(
            LedgerEntry(
                "noisy class counts of all records (discrete Laplace: the record count "
                "of the depth rule, the root's stopping test and class prior)",
                "all records",
                budget.root,
            )
        )
    if budget.pick:
        ledger.add_sequential(
            LedgerEntry(
                "report-noisy-max class of all records (exponential noise: "
                + (
                    "the class of a tree without splits)"
                    if budget.depth == 0
                    else "the class the root's fallback shares put first)"
                ),
                "all records",
                budget.pick,
            )
        )
    if budget.pick and budget.depth == 0:
        return ledger
    if not depth_known:
        rest = budget.epsilon - budget.root - budget.pick
        exact = int(steps) <= 2
        ledger.add_sequential(
            LedgerEntry(
                "split steps, node counts and leaf counts of the tree (the depth D is "
                f"chosen when fitting; then ⌈D/{steps}⌉ steps and the leaves share "
                f"ε = {rest:g} equally; a tree of depth 0 spends it on a report-noisy-max "
                "choice of its class instead)"
                + ("" if exact else " — steps of d > 2 layers sample by MCMC: NOT proven"),
                "all records, each level's nodes disjoint",
                rest if exact else float("inf"),
                private=exact,
            )
        )
        _approximate_note(ledger, steps, budget.depth)
        return ledger
    eps = budget.level
    early = "the leaves closed at an earlier step (disjoint records): part of their counts"
    for level in range(budget.n_levels):
        layers = min(steps, budget.depth - level * steps)
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
                f"MCMC, {mcmc_steps} proposals; its nominal ε' = {split_eps:g} is NOT "
                "a proven bound)"
            )
            summary = (
                f"Split step {level + 1} sampled {layers}-layer subtrees by MCMC on "
                f"disjoint nodes: approximate EM, nominal ε' = {split_eps:g}, not proven"
            )
        else:
            query = f"exponential-mechanism split step {level + 1}"
            summary = f"Split step {level + 1} chose subtrees on disjoint nodes, ε = {split_eps:g}"
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
    _approximate_note(ledger, steps, budget.depth)
    return ledger


def _approximate_note(ledger: PrivacyLedger, steps: int, depth: int) -> None:
    if privacy_status(steps, depth) != "ε-DP":
        ledger.notes.append(
            f"With d = {steps} > 2 the subtree choices are approximate EM: a Metropolis "
            "chain of finite length only approximates the exponential mechanism, so no "
            "ε is proven for this model (choose d ≤ 2 for a proven ε)."
        )
