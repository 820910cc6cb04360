"""Whether a small-ε release's leaves carry signal: a test on the released counts, and
the evidence scale it gives the votes.

Below a leaf ε of 1/4 a count forest's leaves are mostly noise, so its votes lean on
the prior (:func:`~dpviz.models.forest.scoring.count_votes`: shrinkage, a small evidence
gain, a noise margin). That keeps data without signal at its majority, and makes data
with plenty of signal too shy: at ε = 0.1 the default forest answered the majority class
for 93% of breast cancer's test records (63% are) with an AUC of 87, for 94% of Adult's
(75%) and 90% of MAGIC's (65%).

**The test.** Over every leaf of the release (trained or not, so that the result does
not depend on which leaves records reached), the statistic

    X² = Σ_leaves Σ_c (n_c − π_c·t)² / (π_c·t + v),

n the leaf's released noisy counts, t = max(Σ_c n_c, 0), π the count prior and v the
noise variance, is compared with what leaves whose records follow the prior would give:
:data:`NULL_DRAWS` draws of multinomial(t, π) counts plus discrete Laplace noise at the
leaves' ε, from a fixed public seed, the leaves taken in a canonical order (sorted by
their counts) so that a model file computes the same number as the estimator. The
z-score z = (X² − mean)/sd of the null draws measures how far the leaves stand from the
prior beyond the noise. Where z ≥ :data:`SIGNAL_Z` the evidence gain is multiplied by
:data:`SIGNAL_SCALE`, or by SIGNAL_SCALE·τ/:data:`SIGNAL_TREES` for a forest of τ more
trees (below a leaf ε of :data:`SIGNAL_EPSILON`; 1 elsewhere).

Rows that repeat exactly go to the same tree (the record→tree hash reads the record), so
on data with many duplicate rows the leaves are over-dispersed and z can reach the
threshold without a signal a new record would share (synthetic, 20,000 rows of 3,000
distinct ones and random labels: z ≈ 4); on the benchmark sets without signal z stayed
near 0 (tic-tac-toe, car, smarket, caravan, hmda).

**Private-RDT's floor** (trees that all see every record, ``data_split="shared"``, as
a forest's do from ε = 5 with ``data_split="auto"``). On
data without signal a shared forest at large ε answers below the majority class: its
leaves' noise is small, and the chance differences of its leaves decide (a 1,250-record
set at 52 / 48% without signal, smarket's shape, lost 1.7 points at ε = 10). The test,
per tree over EVERY leaf (trained or not), is :func:`~dpviz.models.trees.floor.partition_terms`
with the deviation around the unclipped n̂ = Σ c̃ (its noise mean exact) and no
selection allowance (S = 1: the trees are drawn without the data): u_t = (X_t − s_t)/σ_t,
and the trees are trusted when the mean of u_t over the trees is at least
:data:`LEAF_FLOOR_U`. Otherwise the forest answers the released prior's class with
scores that keep its ranking (:func:`~dpviz.models.trees.floor.floor_scores`). It
applies from a leaf ε of :data:`LEAF_FLOOR_EPSILON` per tree (below it the test cannot
tell real signal from none), with a count mechanism, a released prior and
``objective="accuracy"`` (:func:`shared_floor_applies`).

**Private-RDT's shrinkage.** Where the floor's test applies, the same per-tree terms
also set how far the leaves' counts are shrunk to the count prior π
(:func:`pooled_shrink_records`): the leaves' squared deviations beyond noise and sampling,
pooled over the trees, estimate how far a leaf's true shares stray from π, δ², and the
pseudo-count m = (1 − Σπ²)/δ² − 1 is the one whose Dirichlet(m·π) spread that is (the
empirical-Bayes shrinkage of a leaf's shares). The fixed pseudo-count of
:func:`~dpviz.models.forest.scoring.shrink_records` (2 records at large ε) counts the
noise only; on weak-signal data a shared forest at ε = 10 then answers its leaves'
chance imbalances, below the majority class (bench/README "Issue 28: Private-RDT's
leaves shrunk by an empirical-Bayes pseudo-count").

**Privacy.** Post-processing: a function of the released leaf counts, the released prior,
public ε, the released tree count and a public seed. No ε, no record read.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.models.forest.scoring import shrink_records
from dpviz.models.objective import ACCURACY
from dpviz.models.trees.floor import partition_terms

# The test's threshold and the evidence gain's factor where it passes (chosen on the
# shared sets at ε = 0.1, bench/README "Small ε: an evidence scale from a signal test on
# the released leaves": paired over 50 folds, adult +2.0 and MAGIC +1.8 accuracy points,
# no set lower; applied to every release, without the test, car lost 1.4 and tic-tac-toe 0.6).
SIGNAL_Z = 4.0
SIGNAL_SCALE = 1.5
# ... for a forest of up to this many trees; a forest of τ more trees gets SIGNAL_SCALE·τ/
# SIGNAL_TREES. Why: below ε = 1 a forest's score is the MEAN of its trees' shrunk leaf
# evidence, and with disjoint records each of τ trees' leaves holds 1/τ of them, so its
# shrunk evidence (and the mean) falls about as 1/τ: doubling the trees halves the
# confidence unless the scale follows the count (h-forest3: 10 trees at scale 1.5 lost
# 1.9 / 2.4 accuracy points on adult / MAGIC at ε = 0.1, at scale 3 none).
SIGNAL_TREES = 5
# The test applies below this leaf ε (where count_votes' small-ε margin does).
SIGNAL_EPSILON = 0.25
# Null draws of the statistic (public randomness: no record is read).
NULL_DRAWS = 32
_SEED = 0x5167_4E01


def _statistic(counts: np.ndarray, prior: np.ndarray, variance: float) -> np.ndarray:
    """X² of each draw: ``counts`` (draws, leaves, k) or (leaves, k)."""
    totals = np.clip(counts.sum(axis=-1, keepdims=True), 0.0, None)
    expected = totals * prior
    return (((counts - expected) ** 2) / (expected + variance)).sum(axis=(-1, -2))


def signal_z(noisy_counts, prior, epsilon: float) -> float:
    """z-score of the leaves' X² against leaves that follow ``prior`` (see the module
    docstring). ``noisy_counts``: (leaves, k) released counts of EVERY leaf of the
    release; ``epsilon``: their ε. 0 without leaves. Post-processing only."""
    counts = np.asarray(noisy_counts, dtype=np.float64)
    if counts.ndim != 2 or not len(counts):
        return 0.0
    prior = np.asarray(prior, dtype=np.float64)
    # Canonical order: the same leaves give the same number whatever order they come in.
    counts = counts[np.lexsort(counts.T[::-1])]
    q = math.exp(-float(epsilon))
    variance = 2.0 * q / (1.0 - q) ** 2
    observed = float(_statistic(counts, prior, variance))
    rng = np.random.default_rng(_SEED)  # numerical integration, not privacy noise
    totals = np.clip(np.rint(counts.sum(axis=1)), 0, None).astype(np.int64)
    draws = rng.multinomial(totals, prior, size=(NULL_DRAWS, len(totals))).astype(np.float64)
    shape = draws.shape
    draws += rng.geometric(1.0 - q, shape) - rng.geometric(1.0 - q, shape)
    null = _statistic(draws, prior, variance)
    spread = float(np.std(null))
    return (observed - float(np.mean(null))) / spread if spread > 0 else 0.0


def passed_scale(n_trees: int) -> float:
    """The evidence scale where the signal test passes: :data:`SIGNAL_SCALE` ·
    max(1, τ / :data:`SIGNAL_TREES`). Public: the released tree count τ only."""
    return SIGNAL_SCALE * max(1.0, int(n_trees) / SIGNAL_TREES)


def evidence_scale(noisy_counts, prior, epsilon: float, n_trees: int) -> float:
    """:func:`passed_scale` (τ = ``n_trees``, the release's tree count) where the leaves'
    ε is below :data:`SIGNAL_EPSILON` and :func:`signal_z` ≥ :data:`SIGNAL_Z`, else 1.
    Public: released values, the released tree count and ε (post-processing)."""
    if float(epsilon) >= SIGNAL_EPSILON or SIGNAL_SCALE == 1.0:
        return 1.0
    passed = signal_z(noisy_counts, prior, epsilon) >= SIGNAL_Z
    return passed_scale(n_trees) if passed else 1.0


# Private-RDT's floor (module docstring). The trees are trusted when the mean over the
# trees of u_t reaches LEAF_FLOOR_U; it applies from a leaf ε (each tree's) of
# LEAF_FLOOR_EPSILON. Chosen on stand-ins made from the shared sets (bench/README "Issue
# 28: Private-RDT's (jpw) floor"): without signal u stayed within −0.9–3.3 per fit (mean
# over 10 trees; ≤ 1.8 at ε = 2 and 5); with signal ≥ 2.5 at ε = 10 (the full shared sets
# ≥ 75). At a leaf ε of 0.17 (ε = 2, 10 trees) the test left car, tic-tac-toe and the
# penguins-shaped stand-in at their majority; from 0.425 (ε = 5) it cost one fold in 15.
LEAF_FLOOR_U = 2.0
LEAF_FLOOR_EPSILON = 0.4


def shared_floor_applies(
    data_split: str,
    counts: bool,
    tree_epsilon: float,
    objective: str,
    prior: bool,
) -> bool:
    """Whether a forest runs Private-RDT's floor test: shared trees (``data_split``
    resolved, :func:`~dpviz.models.forest.floor.records_split`), released noisy
    ``counts``, a leaf ε per tree from :data:`LEAF_FLOOR_EPSILON` (or any, for trees
    sized to about it in two halves of the records, ``"halves"``: ``data_split="auto"``,
    whose leaves get 0.7–0.85 of ε each as the prior's share varies),
    ``objective="accuracy"`` (the others weigh the votes by the prior or a threshold and
    keep their rules) and a released ``prior`` to fall back on. Public: the
    configuration and released values."""
    return (
        data_split in ("shared", "halves")
        and counts
        and (data_split == "halves" or float(tree_epsilon) >= LEAF_FLOOR_EPSILON)
        and objective == ACCURACY
        and prior
    )


def tree_terms(noisy_counts, tree, epsilon: float, n_batches: int = 1) -> np.ndarray:
    """Per tree (a row, trees in order), (X_t, s_t, σ_t) of
    :func:`~dpviz.models.trees.floor.partition_terms` (S = 1) of the released
    ``noisy_counts`` (leaves, k) of EVERY leaf, ``tree`` the tree of each, their noise the
    sum of ``n_batches`` discrete Laplace draws at ``epsilon``, and Σ max(n̂, 0)² of the
    tree's leaves (n̂ a leaf's noisy total). The leaves are taken in a canonical order (by
    tree, then by their counts) so that a model file computes the same numbers as the
    estimator. (0, 4) without leaves. Post-processing only."""
    counts = np.asarray(noisy_counts, dtype=np.float64)
    tree = np.asarray(tree, dtype=np.int64)
    if counts.ndim != 2 or not len(counts):
        return np.zeros((0, 4))
    order = np.lexsort((*counts.T[::-1], tree))
    counts, tree = counts[order], tree[order]
    q = math.exp(-float(epsilon))
    variance = max(1, int(n_batches)) * 2.0 * q / (1.0 - q) ** 2
    starts = np.flatnonzero(np.r_[True, tree[1:] != tree[:-1]])
    sizes = np.maximum(counts.sum(axis=1), 0.0) ** 2
    terms = []
    for start, stop in zip(starts, np.r_[starts[1:], len(tree)]):
        part = partition_terms(counts[start:stop], variance)
        terms.append((*part, float(sizes[start:stop].sum())))
    return np.asarray(terms, dtype=np.float64)


def terms_signal(terms: np.ndarray) -> float:
    """The mean over the trees of u_t = (X_t − s_t)/σ_t (0 where σ_t is 0) of
    :func:`tree_terms`; 0 without trees. Post-processing only."""
    if not len(terms):
        return 0.0
    excess, sampling, spread = terms[:, 0], terms[:, 1], terms[:, 2]
    u = np.zeros(len(terms))
    np.divide(excess - sampling, spread, out=u, where=spread > 0)
    return float(np.mean(u))


def tree_signal(noisy_counts, tree, epsilon: float, n_batches: int = 1) -> float:
    """The mean over the trees of u_t = (X_t − s_t)/σ_t (module docstring) of the released
    ``noisy_counts`` (leaves, k) of EVERY leaf, ``tree`` the tree of each, their noise the
    sum of ``n_batches`` discrete Laplace draws at ``epsilon``
    (:func:`terms_signal` of :func:`tree_terms`: the same in any order of the leaves).
    0 without leaves. Post-processing only."""
    return terms_signal(tree_terms(noisy_counts, tree, epsilon, n_batches))


def leaves_trusted(noisy_counts, tree, epsilon: float, n_batches: int = 1) -> bool:
    """Whether Private-RDT's trees carry signal: :func:`tree_signal` ≥
    :data:`LEAF_FLOOR_U`. Post-processing of released values and public ε."""
    return tree_signal(noisy_counts, tree, epsilon, n_batches) >= LEAF_FLOOR_U


# Private-RDT's shrinkage (module docstring): the pseudo-count where the leaves deviate no
# more than noise and sampling give (δ² ≤ 0; also the most it may be): they answer the prior.
SHRINK_MAX_RECORDS = 1e6


def leaf_dispersion(terms: np.ndarray) -> float:
    """δ² = max(0, Σ_t (X_t − s_t)) / Σ_t Σ_leaves max(n̂, 0)² of :func:`tree_terms`: the
    leaves' squared deviations from their pooled shares beyond noise (X) and sampling (s),
    per squared record, pooled over the trees; 0 without records. No margin (the
    deviation's estimate, not a bound above or below it: measured best). Post-processing
    of released values."""
    if not len(terms):
        return 0.0
    excess = float(np.sum(terms[:, 0] - terms[:, 1]))
    weight = float(np.sum(terms[:, 3]))
    return max(0.0, excess) / weight if weight > 0 else 0.0


def pooled_shrink_records(terms: np.ndarray, prior, epsilon: float) -> float:
    """α of a shared count forest where its floor's test applies: max(
    :func:`~dpviz.models.forest.scoring.shrink_records` (ε), m/τ), m = (1 − Σπ²)/δ² − 1
    (at most :data:`SHRINK_MAX_RECORDS`, which it is where δ² ≤ 0), δ² =
    :func:`leaf_dispersion` of ``terms`` (:func:`tree_terms` of every leaf), π = ``prior``
    (the count prior the leaves are shrunk to) and τ the trees (rows of ``terms``).

    Leaf shares drawn from Dirichlet(m·π) stray (1 − Σπ²)/(m + 1) from π in squares on
    average, so m is the pseudo-count that leaves' own deviations call for, and
    (c + m·π)/(n + m) a leaf's posterior shares. Divided by τ: a record's score averages
    τ trees' leaves, so one leaf's sampling overstates the ensemble's (without it, on
    weak-signal stand-ins at ε = 10, MAGIC and wall_robot lost about 1 point each). The
    fixed α stays the least. Post-processing of released counts and public ε: no ε, and
    nothing a model file must store (it recomputes α from its listed leaves)."""
    alpha = shrink_records(epsilon)
    if not len(terms):
        return alpha
    prior = np.asarray(prior, dtype=np.float64)
    delta2 = leaf_dispersion(terms)
    spread = 1.0 - float(np.sum(prior**2))
    m = SHRINK_MAX_RECORDS
    if delta2 > 0:
        m = min(SHRINK_MAX_RECORDS, spread / delta2 - 1.0)
    return max(alpha, m / len(terms))
