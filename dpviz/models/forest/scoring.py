"""How a forest's released values become votes: the class prior's ε and weight, and the
scoring of released noisy leaf counts.

Privacy role: functions of public numbers (ε, τ, the number of classes) and of released
values (noisy leaf counts, the noisy class prior): post-processing, no ε. (The fixed-seed
sample in :func:`noise_margin` integrates a public function of ε; it reads no data and
is not privacy noise.)
:func:`prior_epsilon` only sets the ε the prior's release gets (the release itself is in
:mod:`~dpviz.models.forest.release`). :func:`flipped_labels` reads TRUE counts: it
serves the data owner's diagnostics and is NOT private.
"""

from __future__ import annotations

import functools
import math
import statistics

import numpy as np

from dpviz.models.trees.prior import (  # noqa: F401 (the forest's names for them)
    PRIOR_FLOOR,
    PRIOR_MAX_SHARE,
    PRIOR_RECORDS,
    decimal_times,
    prior_epsilon,
)
from dpviz.privacy.mechanisms import ABSTAIN, get_mechanism, is_majority

# Below this lead of the prior's first class over its second, a wrong flip costs so
# little that the prior's weight stops growing (see prior_weight).
PRIOR_LEAD_FLOOR = 0.2
# Below ε = 1 a disjoint forest sized for its signal records (sizing.signal_records) has
# few, shallow trees whose leaves carry the evidence: the prior gets at most this share of
# ε, the leaves the rest. At ε = 0.1 the floor (trees.prior) gave the prior 0.08 of 0.1 on any
# set under ~2,000 records and left the leaves 0.015 (votes, 348 training records: the
# majority, 61.4%; with 0.025 for the prior, 79.3%; bench/README "Small ε").
SMALL_EPSILON_PRIOR_SHARE = 0.25
# Count mechanisms: a leaf's counts are shrunk to the prior by this many noise scales
# (2/ε: with ½/ε, Private-RDT's ten leaves of pure noise per record at ε = 0.1 put votes
# 3.2 points below the majority; 2/ε keeps it and tic-tac-toe at it, and costs 1.6
# points on votes at ε = 1), and by at least this many records (at large ε a leaf of 3
# records is sampling noise).
SHRINK_NOISE_SCALES = 2.0
SHRINK_MIN_RECORDS = 2.0
# ... and, at a tiny leaf ε, by this share of the noise variance (scale²): two scales
# bound a pure-noise leaf's evidence only to ~0.5 whatever ε, and with the 10 trees the
# auto size gives 348 records that noise outvoted a noisy prior (votes at ε = 0.1,
# leaves at 0.015: 0.7 points below the majority over 60 folds; 0.0 with this term, while
# mushroom at ε = 0.1 keeps +11 of its +20 points over the majority). It only acts
# below a leaf ε of 1/16.
SHRINK_NOISE_VARIANCE = 0.125
# ... and towards a target between the released prior and uniform (leaf_target): a leaf
# whose noisy total stands this many noise sds above its clipped noise keeps half the
# prior's pull. At a leaf ε of 0.06 a 6–12% class's count is clipped to 0 in many
# leaves; measured against the prior that scores far below the rest (noise, not signal),
# against uniform for every leaf it costs adult:pos=0.12's ranking 7 AUC points and
# adult's accuracy 5. Chosen on the shared sets and their stand-ins at ε = 0.1
# (bench/README "Issue 28: the leaf shrinkage target" and "the leaf target, weighed and
# two classes", paired, 20 folds a set: bank +0.9, magic_gamma:pos=0.06 +6.3 AUC points,
# accuracy within 0.2; 0.5 / 1 / 2 sds add 0.5 / 1.3 / 2.4 more on that stand-in and
# cost votes 0.6 / 1.0 / 1.2 and magic 0.1 / 0.4 / 0.7 accuracy points); 0 is the prior
# everywhere. Two classes only (target_weight).
LEAF_TARGET_NOISE_SCALES = 0.25
EVIDENCE_GAIN = 4.0  # see evidence_gain
# Below a leaf ε of 1/16 a disjoint count forest moves a record off the prior's first
# class c₀ only when its score gain over c₀ clears NOISE_MARGIN_Z·(1 − 16ε) spreads of
# what noise-only leaves give (Bonferroni-stretched over the k − 1 other classes, see
# family_z), the prior's own lead over the class counting towards it (see noise_margin).
# Nursery at ε = 0.1 (leaf ε 0.015; its two largest classes 33.3% / 32.9%), 160 five-fold
# runs of fresh noise each, runs more than 0.5 points below the majority: 10 without a
# margin, 1 with z = 2 (z = 1: 4; z = 3: 0). Records in the same leaves move together,
# so a fold's accuracy swings more than the per-record rate suggests: with z = 2 (and
# the stretch) 10 runs of 8 datasets at ε = 0.1 had one 5-fold mean 0.55 points below
# the majority (pendigits) and another batch one at −3.2 (wall_robot, a fold at 23.8%
# against 40.4%); with z = 3 the same 10 runs' worst was −0.26 (abalone, whose noisy
# prior swaps its two largest classes, 16.5% / 15.2%, in ~5% of folds), at the cost of
# mushroom's gain over the majority at ε = 0.1 (+8.1 → +2.8 points).
NOISE_MARGIN_Z = 3.0
NOISE_MARGIN_EPSILON = 1.0 / 16.0
# A smaller hurdle for the few, shallow trees a forest sized for its signal grows below
# ε = 1 (sizing.signal_records): z = 0.5 ramping to 0 at a leaf ε of 1/4. Without it the
# shared sets at ε = 0.1 (seed 0) had tic-tac-toe 2.2-2.7 and car 1.1-2.6 points below the
# majority (all-discrete, little signal at depth 2-3); with it none below −0.5, at the cost
# of about one set on which the forest is at least the best diffprivlib model (z = 1 cost
# votes 19 points: the hurdle outweighed three trees' evidence).
SMALL_MARGIN_Z = 0.5
SMALL_MARGIN_EPSILON = 0.25
# The margin over a class counts in full only where the released prior's lead of its first
# class over it stands this many noise spreads of that lead above 0 (prior_lead_weights):
# within the prior's own noise the first class is about as likely the second, so holding
# records on it protects a coin flip. Chosen on the shared sets and stand-ins at ε = 0.1
# (bench/README "Issue 28: the default forest's decision below ε = 1", paired, 20 folds a
# set): nursery +2.7, pendigits +2.2, wall_robot +2.4, abalone +0.4 accuracy points, the
# binary sets within ±0.2 (1 spread: about half of that).
PRIOR_LEAD_Z = 2.0
# Draws of the numerical integration in noise_margin (public: no data, a fixed seed).
_MARGIN_DRAWS = 4096
# ... and of null_evidence: its standard error is about 0.002–0.003 log units (12 other
# samples at ε 0.06–1, priors 0.9/0.1 and 0.6/0.4).
_NULL_DRAWS = 32768
_TINY = 1e-12  # keeps the log finite where the prior gives a class no share


def small_epsilon_prior_cap(epsilon: float, prior_eps: float) -> float:
    """The prior's ε of a disjoint forest: ``prior_eps`` (:func:`prior_epsilon`), at most
    :data:`SMALL_EPSILON_PRIOR_SHARE`·ε below ε = 1, where the leaves need the budget
    more than the prior does. Public: ε and a public number."""
    if float(epsilon) >= 1.0:
        return prior_eps
    return min(prior_eps, decimal_times(SMALL_EPSILON_PRIOR_SHARE, epsilon))


def prior_weight(
    mechanism: str, n_classes: int, epsilon: float, n_trees: int, prior_counts=None
) -> float:
    """How many votes the prior is worth: 1 + z·√(2τv)/max(Δ, 0.05).

    v is the variance of one class's vote from a tree whose leaf holds no evidence (a
    uniform label: about 1/k, or 1/k of the trees that do not abstain; released counts:
    the clipped discrete Laplace noise), so √(2τv) is the spread of the margin between
    two classes that noise alone leaves. Δ is the prior's lead of its first class over
    its second: the prior adds w·Δ to that margin, so dividing by Δ makes noise-only
    votes overturn it with probability Φ(−z) whatever the class balance (below Δ = 0.2
    a wrong flip costs less than Δ, and the floor keeps such a prior from silencing the
    trees). z = 1 + 2.5e^(−ε): the smaller the leaves' ε, the more of the votes are
    noise (at ε = 0.1 the prior stands 3.3 noise spreads; at ε = 10, one).
    Public: k, ε, τ and the released prior only.
    """
    mech = get_mechanism(mechanism)
    if mech.releases == "counts":
        # Var(max(Z, 0)) for P(z) ∝ q^|z|: E[Z⁺²] − E[Z⁺]² in closed form.
        q = math.exp(-epsilon)
        mean = q / ((1 + q) * (1 - q))
        var = q / (1 - q) ** 2 - mean**2
    else:
        var = 1.0 / n_classes
        if mech.abstains:
            var *= 1.0 - mech.probabilities(np.zeros((1, n_classes)), epsilon)[0, -1]
    z = 1.0 + 2.5 * math.exp(-epsilon)
    lead = 1.0
    if prior_counts is not None and n_classes > 1:
        top = np.sort(prior_shares(prior_counts))[::-1]
        lead = max(float(top[0] - top[1]), PRIOR_LEAD_FLOOR)
    return 1.0 + z * math.sqrt(2.0 * n_trees * var) / lead


def prior_shares(prior_counts) -> np.ndarray:
    """Class shares from released noisy class counts (negatives as 0; uniform if none)."""
    counts = np.clip(np.asarray(prior_counts, dtype=np.float64), 0.0, None)
    total = counts.sum()
    return counts / total if total > 0 else np.full(len(counts), 1.0 / len(counts))


def shrunk_log_shares(
    noisy_counts, prior, epsilon: float, alpha: float | None = None
) -> np.ndarray:
    """Log class shares of leaves from their released noisy counts, shrunk to ``prior``:
    log((c⁺ + α·π) / (Σc⁺ + α)) with α = ``alpha``, by default :func:`shrink_records`
    (two noise scales, an eighth of the noise variance at tiny ε, and at least two
    records' worth; Private-RDT's releases pass
    :func:`~dpviz.models.forest.signal.pooled_shrink_records`).

    A leaf whose counts stand well above the noise and a few records keeps its own
    shares; a leaf of noise (or of none) answers about the prior. Post-processing of
    released values only."""
    counts = np.clip(np.asarray(noisy_counts, dtype=np.float64), 0.0, None)
    alpha = shrink_records(epsilon) if alpha is None else float(alpha)
    prior = np.asarray(prior, dtype=np.float64)
    shares = (counts + alpha * prior) / (_row_sum(counts) + alpha)
    return np.log(shares + _TINY)


def clipped_noise_mean(epsilon: float) -> float:
    """E[max(Z, 0)] for discrete Laplace noise Z with P(z) ∝ e^(−ε|z|)."""
    q = math.exp(-float(epsilon))
    return q / ((1 + q) * (1 - q))


def count_prior(prior_counts, n_classes: int) -> np.ndarray:
    """The shares a count forest shrinks its leaves to: the released prior with one more
    count per class, or uniform.

    The extra count keeps every share and its log finite: a class the noisy prior gave
    nothing would otherwise score log 0 whatever its leaves say, and a leaf's evidence
    for it would be measured against a share of 0. (With an earlier form of the scoring,
    such a class put data of 3% positives without signal 33 points below the majority.)"""
    if prior_counts is None:
        return np.full(n_classes, 1.0 / n_classes)
    counts = np.clip(np.asarray(prior_counts, dtype=np.float64), 0.0, None) + 1.0
    return counts / counts.sum()


def leaf_target(counts, prior, epsilon: float) -> np.ndarray:
    """Per leaf, the shares its clipped counts are shrunk to and measured against:
    w·π + (1 − w)/k with w = :func:`target_weight` (the prior where it is None).

    A leaf of noise alone (t ≈ 0) is measured against uniform: its clipped counts say
    nothing about the classes, and against the prior a rare class's count clipped to 0
    scores far below the rest. A leaf whose records stand above the noise is measured
    against the prior, as the shrinkage always was. Post-processing of released values
    and public ε."""
    prior = np.asarray(prior, dtype=np.float64)
    w = target_weight(counts, epsilon)
    if w is None:
        return prior
    return w * prior + (1.0 - w) / prior.shape[-1]


def target_weight(counts, epsilon: float) -> np.ndarray | None:
    """Per leaf (a column), how far its records stand above the noise: w = t/(t + s·σ),
    t the leaf's clipped total less the clipped noise's mean per class, σ the noise sd
    at ``epsilon`` and s = :data:`LEAF_TARGET_NOISE_SCALES`; None where s or σ is 0 and
    for more than two classes.

    Two classes only: with more it cost accuracy at ε = 0.1 (paired, 20 folds: abalone
    −1.1, nursery −0.5 points; bench/README "the leaf target, weighed and two
    classes"). Post-processing of released values and public ε."""
    counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    k = counts.shape[1]
    q = math.exp(-float(epsilon))
    sigma = LEAF_TARGET_NOISE_SCALES * math.sqrt(2.0 * q) / (1.0 - q)
    if not sigma > 0 or k != 2:
        return None
    total = np.clip(_row_sum(counts) - k * clipped_noise_mean(epsilon), 0.0, None)
    return total / (total + sigma)


def count_values(
    noisy_counts, prior, epsilon: float, alpha: float | None = None, *, squares: bool = False
) -> np.ndarray:
    """Per leaf, what a count forest sums over the trees: each class's evidence, the
    leaf's shrunk log share (:func:`shrunk_log_shares`) less the one it would show if its
    records followed the prior, and a last column of ones that counts the trees a record
    reached (records abstain where a split reads a value the schema does not know).

    "Followed the prior" keeps the leaf's total (the noisy total less the clipped
    noise's mean per class) and adds that clipped-noise mean to each class, so that a
    rare class is not favoured by the noise that clipping at 0 leaves in every count.
    The target each leaf is shrunk to and measured against is :func:`leaf_target`: the
    prior for leaves above the noise, uniform for leaves of noise. Each leaf then gives
    up (1 − w)·:func:`null_evidence`, w its :func:`target_weight`: noise adds no
    evidence for any class on average, and a leaf whose records stand above the noise
    (w ≈ 1) keeps its evidence. ``alpha``: the leaves' pseudo-count (None:
    :func:`shrink_records`); the noise's share stays :func:`null_evidence`'s, at the
    default. ``squares``: k more columns before the last, each class's evidence squared,
    whose sums :func:`count_votes` reads for the spread of the trees' evidence (trees
    that all read every record). Post-processing of released values."""
    evidence, w = _evidence(noisy_counts, prior, epsilon, alpha)
    if w is not None:
        prior = np.asarray(prior, dtype=np.float64)
        null = null_evidence(tuple(prior.tolist()), float(epsilon), LEAF_TARGET_NOISE_SCALES)
        evidence -= (1.0 - w) * null
    ones = np.ones((len(evidence), 1))
    return np.hstack([evidence, evidence * evidence, ones] if squares else [evidence, ones])


def _evidence(
    noisy_counts, prior, epsilon: float, alpha: float | None = None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each class's evidence of leaves (:func:`count_values` before the noise's share)
    and the leaves' :func:`target_weight`; ``alpha`` as in :func:`shrunk_log_shares`."""
    counts = np.clip(np.asarray(noisy_counts, dtype=np.float64), 0.0, None)
    w = target_weight(counts, epsilon)
    prior = np.asarray(prior, dtype=np.float64)
    if w is not None:
        prior = w * prior + (1.0 - w) / prior.shape[-1]
    k = counts.shape[1]
    mu = clipped_noise_mean(epsilon)
    alpha = shrink_records(epsilon) if alpha is None else float(alpha)
    total = np.clip(_row_sum(counts) - k * mu, 0.0, None)
    expected = (total * prior + mu + alpha * prior) / (total + k * mu + alpha)
    return shrunk_log_shares(counts, prior, epsilon, alpha) - np.log(expected + _TINY), w


@functools.lru_cache(maxsize=64)
def null_evidence(prior: tuple[float, ...], epsilon: float, scales: float) -> np.ndarray:
    """Per class, the evidence (:func:`_evidence`) that leaves of noise alone (true
    counts 0, discrete Laplace noise at ``epsilon``) give per unit of their noise share
    1 − w: E[evidence] / E[1 − w], integrated numerically from a fixed-seed sample; 0
    where there is no target weight (``scales`` = :data:`LEAF_TARGET_NOISE_SCALES` 0, or
    no noise).

    Against the prior, noise-only leaves gave a 4% class −0.9 log units each at a leaf
    ε of 1 (its count clipped to 0 in most); with the leaf target they give it +0.09.
    Taken off every leaf in proportion to its noise share, it leaves noise-only leaves
    no evidence on average and the leaves whose records stand above the noise
    untouched: taken off evenly, it cost adult 0.8 and magic_gamma 0.7 accuracy points
    at ε = 1 (bench/README, the leaf shrinkage target). Public: ε, the prior and a
    constant (post-processing, not privacy noise)."""
    k = len(prior)
    no_target = target_weight(np.zeros((1, k)), epsilon) is None
    if not scales > 0 or math.exp(-epsilon) == 0.0 or no_target:
        return np.zeros(k)  # the prior is every leaf's target
    # The sample at ε to 3 significant digits: a sweep's folds release at tree ε that
    # differ in the fourth (their declared sizes differ by a record), and one sample
    # then serves them all; ε moves the noise's scale by less than 0.05%.
    leaves, draws = _null_leaves(k, float(f"{epsilon:.3g}"))
    evidence, w = _evidence(leaves, np.asarray(prior), epsilon)
    mean = (draws @ evidence) / float(draws @ (1.0 - w[:, 0]))
    mean.flags.writeable = False  # cached: shared by every caller
    return mean


@functools.lru_cache(maxsize=64)
def _null_leaves(n_classes: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """The distinct clipped counts of :func:`null_evidence`'s fixed sample of noise-only
    leaves at ``epsilon`` and how many of its draws each stands for. The draws are
    discrete Laplace by inversion of one fixed set of uniforms (:func:`_null_uniforms`),
    drawn once; scoring the distinct leaves (1,450 of 32,768 draws at ε = 0.1) instead of
    every draw, and one sample for the folds of a sweep, took the default Curves sweep of
    the demo from 2.5× main's CPU time before the leaf target to 1.15× (bench/README)."""
    failures = np.floor(_null_uniforms(n_classes) / -float(epsilon))  # geometric, ≥ 0
    noise = np.clip(failures[0] - failures[1], 0, None).astype(np.int64)
    dims = tuple(int(v) + 1 for v in noise.max(axis=0))
    codes, draws = np.unique(np.ravel_multi_index(noise.T, dims), return_counts=True)
    leaves = np.column_stack(np.unravel_index(codes, dims))
    leaves.flags.writeable = False  # cached: shared by every caller
    return leaves, draws.astype(np.float64)


@functools.lru_cache(maxsize=8)
def _null_uniforms(n_classes: int) -> np.ndarray:
    """log(1 − U) of two fixed-seed uniforms per draw and class (2, draws, k): a
    geometric count of failures at e^(−ε) is ⌊log(1 − U)/(−ε)⌋."""
    rng = np.random.default_rng(0x4E02)  # numerical integration, not privacy noise
    logs = np.log1p(-rng.random((2, _NULL_DRAWS, n_classes)))
    logs.flags.writeable = False  # cached: shared by every caller
    return logs


def prior_lead_weights(prior_counts, prior_eps: float, n_classes: int) -> np.ndarray:
    """Per class c, how much of :func:`noise_margin` over c holds: min(1, Δ_c/(z·s)), Δ_c
    the released prior's count of its first class less c's (negatives as 0), s = √2·σ the
    spread of a difference of two of its noisy counts (σ² the discrete Laplace variance at
    ``prior_eps``) and z = :data:`PRIOR_LEAD_Z`. The margin keeps noise from moving
    records off the prior's first class; where the prior's own noise could have put either
    class first, that protects a coin flip, and the trees decide. All 1 without a released
    prior. (After batch updates the prior holds one noise draw per batch; σ is one draw's,
    so the weights lean to the full margin.) Public: the released prior and its ε."""
    if prior_counts is None or not prior_eps > 0:
        return np.ones(n_classes)
    counts = np.clip(np.asarray(prior_counts, dtype=np.float64), 0.0, None)
    q = math.exp(-float(prior_eps))
    spread = math.sqrt(2.0 * 2.0 * q / (1.0 - q) ** 2)
    if spread == 0.0:
        # Exact counts (a non-private twin, ε = ∞): the prior's order is certain.
        return np.ones(n_classes)
    return np.clip((counts.max() - counts) / (PRIOR_LEAD_Z * spread), 0.0, 1.0)


def count_votes(
    sums: np.ndarray,
    prior,
    epsilon: float,
    *,
    noise_margins: bool = True,
    scale: float = 1.0,
    margin_weights=None,
) -> np.ndarray:
    """A count forest's votes from the per-record sums of :func:`count_values`: exp of
    log π + γ·(the mean evidence of the leaves reached), γ = :func:`evidence_gain`, less
    for each class the part of γ·:func:`noise_margin`/√trees that the prior's lead over
    it does not already cover; the prior alone for a record no tree reached.
    ``noise_margins``: False for forests whose trees all read every record (``shared``,
    Private-RDT): their leaves hold all records, and a margin (z = 1) cost Private-RDT 4.7
    accuracy points on nursery at ε = 0.3. ``scale`` multiplies γ (margin included):
    :func:`~dpviz.models.forest.signal.evidence_scale` of the release. ``margin_weights``
    (per class, :func:`prior_lead_weights`) multiply the margin. Sums with the squared
    evidence too (``count_values(squares=True)``) take each record's γ from the spread of
    its trees' evidence (:func:`spread_gain`). Post-processing of released values."""
    prior = np.asarray(prior, dtype=np.float64)
    k = len(prior)
    log_prior = np.log(prior + _TINY)
    # In place on one (records, k) array: predict scores millions of records.
    reached = np.maximum(sums[:, -1:], 1.0)
    gain = evidence_gain(epsilon) * scale
    if sums.shape[1] == 2 * k + 1:
        gain = gain * spread_gain(sums[:, :k], sums[:, k : 2 * k], reached, epsilon)
    score = np.multiply(sums[:, :k], gain / reached)
    score += log_prior
    margin = noise_margin(prior, epsilon) if noise_margins else np.zeros(k)
    if margin_weights is not None:
        margin = margin * np.asarray(margin_weights, dtype=np.float64)
    if margin.any():
        # The mean of n trees' noise-only evidence spreads 1/√n as much as one leaf's;
        # the prior's own lead over a class counts towards that hurdle.
        lead = log_prior.max() - log_prior
        score -= np.maximum((gain * margin) / np.sqrt(reached) - lead, 0.0)
    score -= _row_max(score)
    return np.exp(score, out=score)


def spread_gain(evidence_sums, square_sums, reached, epsilon: float) -> np.ndarray:
    """Per record, the share of γ (:func:`evidence_gain`) its trees' evidence earns when
    every tree read every record: (1 + (γ − 1)·√d)/γ, d = Σ_c var_c / Σ_c E[e_c²] over the
    classes, the mean and variance taken over the trees the record reached.

    γ > 1 combines trees whose coarse cells each hold part of the evidence (the trees
    disagree: d near 1). Where the trees agree (d near 0) they carry one piece of
    evidence many times over, and γ counted it γ times: on adult's records at 17%
    ">50K" with four columns, Private-RDT at ε = 10 answered ">50K" for a third of the
    records, its scores of 0.5–0.7 right 35–41% of the time (−7.6 points against the
    majority). Chosen on the shared sets and their stand-ins (bench/README "Private-RDT's
    evidence gain by the spread of its trees"): √d floors that stand-in (−0.33) and
    moves the shared sets by −0.44 to +0.13 points, where d itself cost car 1.3 and
    adult 0.8. Post-processing of released values."""
    gamma = evidence_gain(epsilon)
    mean = evidence_sums / reached
    power = (square_sums / reached).sum(axis=1, keepdims=True)
    spread = np.clip(power - (mean * mean).sum(axis=1, keepdims=True), 0.0, None)
    share = np.divide(spread, power, out=np.ones_like(power), where=power > 0)
    return (1.0 + (gamma - 1.0) * np.sqrt(np.clip(share, 0.0, 1.0))) / gamma


def _row_sum(a: np.ndarray) -> np.ndarray:
    """``a.sum(axis=1, keepdims=True)`` of float rows: for fewer than 8 columns, column
    after column from the left, which is how numpy adds so short a row (its pairwise
    summation starts at 8), so the same bits at a tenth of the time."""
    if a.ndim != 2 or not 0 < a.shape[1] < 8 or a.dtype != np.float64:
        return a.sum(axis=1, keepdims=True)
    total = np.zeros(len(a))  # numpy's short sum starts at +0.0 too (−0.0 + 0.0 = +0.0)
    for c in range(a.shape[1]):
        total += a[:, c]
    return total[:, None]


def _row_max(a: np.ndarray) -> np.ndarray:
    """``a.max(axis=1, keepdims=True)``: for a few columns, column against column (a
    maximum is exact in any order; numpy's reduction over 2 columns of 10,000 rows took
    0.37 ms, this 0.01 ms, paid at every count point of a sweep)."""
    if a.ndim != 2 or not 0 < a.shape[1] <= 8:
        return a.max(axis=1, keepdims=True)
    top = a[:, 0].copy()
    for c in range(1, a.shape[1]):
        np.maximum(top, a[:, c], out=top)
    return top[:, None]


def noise_margin(prior, epsilon: float) -> np.ndarray:
    """Per class c, the spread z·sd(e_c − e_top) of one noise-only leaf's evidence for c
    over the prior's first class (true counts 0, discrete Laplace noise at ``epsilon``;
    evidence as in :func:`count_values`), z = the larger of max(0, 1 − 16ε)·:func:`family_z`
    (k, NOISE_MARGIN_Z) and max(0, 1 − 4ε)·family_z(k, SMALL_MARGIN_Z). 0 for the
    first class, and all 0 from a leaf ε of 1/4 up, where leaves hold evidence and a
    margin costs accuracy (without the ramp, z = 1 cost nursery 3.6 points at ε = 1).

    :func:`count_votes` asks a record's score gain for c over the first class to clear
    γ·margin/√trees, the prior's own lead counting towards it, and a clear prior
    (mushroom's 52 / 48) adds no hurdle. A forest's votes weigh the margin over c by the
    released prior's lead over c in its own noise spreads (:func:`prior_lead_weights`):
    where the prior's noise could as well have put c first, holding records on the first
    class protected a coin flip (nursery's 33.3 / 32.9 at ε = 0.1: 2 points below the
    trees' own answers, bench/README "Issue 28: the default forest's decision"). The spread is
    integrated numerically from a fixed-seed sample of the noise distribution: a function
    of public ε and the released prior only (post-processing, no ε)."""
    prior = np.asarray(prior, dtype=np.float64)
    ramp = max(0.0, 1.0 - float(epsilon) / NOISE_MARGIN_EPSILON)
    small = max(0.0, 1.0 - float(epsilon) / SMALL_MARGIN_EPSILON) if SMALL_MARGIN_Z > 0 else 0.0
    if (ramp <= 0 or NOISE_MARGIN_Z <= 0) and small <= 0 or len(prior) < 2:
        return np.zeros(len(prior))
    z = max(
        ramp * family_z(len(prior), NOISE_MARGIN_Z), small * family_z(len(prior), SMALL_MARGIN_Z)
    )
    return z * _null_spread(tuple(prior.tolist()), float(epsilon))


def family_z(n_classes: int, z: float) -> float:
    """The margin, in noise spreads, that one of k − 1 classes clears by noise alone
    with probability Φ(−z)/(k − 1) (Bonferroni): a record leaves the prior's first
    class if ANY of the others clears its margin, so one z for all k would let noise
    move more records the more classes there are. For z = 2: 2 for two classes, 2.53
    for 5, 2.80 for 10, 3.14 for 28; for z = 3: 3, 3.40, 3.62, 3.89. Public: k and a
    constant.

    Measured (the default forest, 6 five-fold runs of fresh noise at ε = 0.1, gaps to
    the majority): with z = 2 for every k nursery fell to −0.54, pendigits to −0.82 and
    wall_robot to −1.14 points in some runs; with this the worst was −0.21
    (pendigits), and at ε = 0.3 the five multiclass sets moved by −0.5 to +0.3 points
    (fold noise)."""
    normal = statistics.NormalDist()
    tail = normal.cdf(-z) / max(n_classes - 1, 1)
    return -normal.inv_cdf(tail) if tail > 0 else z  # z beyond float tails: as it is


@functools.lru_cache(maxsize=64)
def _null_spread(prior: tuple[float, ...], epsilon: float) -> np.ndarray:
    """sd over noise-only leaves of each class's evidence less the prior's first class's."""
    k = len(prior)
    rng = np.random.default_rng(0x4E01)  # numerical integration, not privacy noise
    q = math.exp(-epsilon)
    shape = (_MARGIN_DRAWS, k)
    noise = rng.geometric(1.0 - q, shape) - rng.geometric(1.0 - q, shape)
    evidence = count_values(noise, np.asarray(prior), epsilon)[:, :k]
    top = int(np.argmax(prior))
    spread = np.std(evidence - evidence[:, [top]], axis=0)
    spread.flags.writeable = False  # cached: shared by every caller
    return spread


def evidence_gain(epsilon: float) -> float:
    """γ = 1 + 4(1 − e^(−ε)): how far a count forest's score moves from the prior per
    unit of the trees' mean log-share evidence (see :func:`count_votes`).

    Shrunk shares understate clear leaves, which γ > 1 undoes; at small ε the evidence
    is mostly noise, which γ → 1 keeps from outvoting the prior. Measured (5 folds, the
    8 benchmark sets at ε = 0.1, 0.3, 1, 3, 10, and 3,000 records of 3% positives
    without signal): γ = 1 + 8(1 − e^(−ε)) put the no-signal data 1.4 points below the
    majority with 5 trees at ε = 10, γ = 1 + 2(1 − e^(−ε)) left Adult at the majority
    rate at ε = 1 (+0.8); this one gives Adult +4.5 and keeps every set within 0.1 of
    the majority or above it in those runs. Public: ε only."""
    return 1.0 + EVIDENCE_GAIN * (1.0 - math.exp(-float(epsilon)))


def flipped_labels(counts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Whether each leaf's released class is not a true majority (abstentions: no)."""
    voted = labels != ABSTAIN
    majority = is_majority(counts)[np.arange(len(counts)), np.where(voted, labels, 0)]
    return voted & ~majority


def label_names(classes, labels: np.ndarray) -> np.ndarray:
    """Class names of released labels, "abstain" where a leaf abstained."""
    names = np.asarray([*(str(c) for c in classes), "abstain"], dtype=object)
    return names[np.where(labels == ABSTAIN, len(classes), labels)]


def shrink_records(epsilon: float) -> float:
    """α: the pseudo-records a count forest's leaf at ``epsilon`` is shrunk by towards
    the prior, max(2/ε, 1/(8ε²), 2). Public: ε only."""
    scale = 1.0 / float(epsilon)
    return max(
        SHRINK_NOISE_SCALES * scale,
        SHRINK_NOISE_VARIANCE * scale * scale,
        SHRINK_MIN_RECORDS,
    )
