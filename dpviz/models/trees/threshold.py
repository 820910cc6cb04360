"""The macro-F1 threshold a binary model computes from its own released leaf counts.

A tree's released noisy leaf counts say, noisily, how many training records of each
class reached each leaf, and the leaf's released score is what every record there gets:
so the tree's leaves are atoms (score, records of class 0, records of class 1) of its
own score-versus-class curve. :func:`best_threshold` sweeps that curve and returns the
threshold t on the class-1 score whose rule "class 1 where s(1|x) ≥ t" has the largest
estimated macro-F1: exact for one tree (the estimate is the released counts' curve).

A forest's score mixes many trees, each with its own curve. :func:`simulate_forest`
draws synthetic records class by class — for each of the forest's trees one leaf from
that class's distribution over the leaves (the released counts, pooled over the trees)
— and scores them with the forest's own scoring; the trees' draws are tied by a
Gaussian copula of public correlation :data:`TREE_CORRELATION` (the trees of a forest
read the same features, so a record that looks like class 1 to one tends to look so to
the others; 0 would make the trees' errors independent, 1 every tree rank the records
alike). The randomness is public (a fixed seed): no record is read.

Privacy: post-processing of the release only (released noisy leaf counts and their
scores, the released prior, public constants and a public seed); no ε, and no test
record's prediction depends on another record. The threshold is stored in a model file
(``decision_threshold``) so the file predicts as the estimator does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

# The copula correlation of a forest's trees (see the module docstring). Chosen on the
# shared bank_marketing only (bench/README.md, "issue 28: a threshold from the
# released leaf counts"); the validation sets were run once with it afterwards.
TREE_CORRELATION = 0.0
# Synthetic records per class in a forest's simulation (public; more costs time only).
SIMULATED_RECORDS = 4096
# Runs of leaves whose noisy counts are summed before drawing (see _groups).
GROUPS = 128
# The deconvolution in posterior_counts: EM steps and the most grid points it keeps.
EM_ITERATIONS = 200
MAX_GRID = 400
_SEED = 0x28F1  # public: the simulation's randomness is not privacy noise
# A threshold above every score: the rule then predicts class 0 everywhere (JSON has no ∞).
NEVER = 2.0


def macro_f1_curve(tp, fp, positives: float, negatives: float) -> np.ndarray:
    """Macro-F1 (the mean of both classes' F1) of predicting class 1 for ``tp`` records
    of class 1 and ``fp`` of class 0, given the class totals (arrays broadcast)."""
    tp, fp = np.asarray(tp, dtype=np.float64), np.asarray(fp, dtype=np.float64)
    fn, tn = positives - tp, negatives - fp
    with np.errstate(invalid="ignore", divide="ignore"):
        f1_pos = np.where(tp > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
        f1_neg = np.where(tn > 0, 2 * tn / (2 * tn + fn + fp), 0.0)
    return (f1_pos + f1_neg) / 2


def best_threshold(scores, weights) -> float:
    """The threshold t on class 1's score that maximises the estimated macro-F1.

    Parameters
    ----------
    scores : array of shape (m,)
        Class 1's score at each atom (a leaf, or a synthetic record).
    weights : array of shape (m, 2)
        The estimated records of class 0 and of class 1 at each atom (noisy counts may
        be negative: the curve sums them, and an unbiased count keeps its sums so).

    Returns
    -------
    float
        The rule predicts class 1 where the score is ≥ t: t is one of ``scores``, or
        :data:`NEVER` where predicting class 0 everywhere scores best (also when the
        weights hold no record of one class). Ties between equal estimates go to the
        higher threshold (fewer class-1 predictions).

    Privacy: a function of its arguments only; with released scores and counts it is
    post-processing.
    """
    scores = np.asarray(scores, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    negatives, positives = weights.sum(axis=0) if len(weights) else (0.0, 0.0)
    if positives <= 0 or negatives <= 0:
        return NEVER
    order = np.argsort(-scores, kind="stable")
    s = scores[order]
    tp = np.cumsum(weights[order, 1])
    fp = np.cumsum(weights[order, 0])
    cut = np.r_[s[1:] != s[:-1], True]  # a threshold keeps all atoms of equal score
    s, tp, fp = s[cut], tp[cut], fp[cut]
    f1 = macro_f1_curve(tp, fp, positives, negatives)
    never = float(macro_f1_curve(0.0, 0.0, positives, negatives))
    best = int(np.argmax(f1))  # first (highest threshold) of equal maxima
    return float(s[best]) if f1[best] > never else NEVER


def decide_threshold(scores, threshold: float) -> np.ndarray:
    """Each record's class index under the threshold rule: 1 where ``scores[:, 1]`` ≥
    ``threshold``, else 0 (post-processing)."""
    scores = np.asarray(scores, dtype=np.float64)
    return (scores[:, 1] >= threshold).astype(np.int64)


def simulate_forest(
    values: tuple[np.ndarray, np.ndarray],
    weights: np.ndarray,
    n_trees: int,
    score: Callable[[np.ndarray], np.ndarray],
    shares=None,
    correlation: float = TREE_CORRELATION,
    draws: int = SIMULATED_RECORDS,
) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic records' class-1 scores under a forest, and their class weights.

    Parameters
    ----------
    values : pair of arrays of shape (L, w)
        What the forest sums over its trees for a record of class 0 (first) and of
        class 1 (second) at each leaf (every leaf of every tree, pooled): the leaf's
        values with that one record taken out of its counts. A training record's own
        leaf counts it; a new record's leaves do not, and a forest of small leaves
        (about one record each) would otherwise look far more separable than it is.
    weights : array of shape (L, 2)
        The estimated training records of class 0 and 1 at each leaf: its released noisy
        counts as they are (negatives included: they are unbiased, and over many leaves
        of noise alone they cancel, where counts clipped at 0 would add up to more
        records than the data hold).
    n_trees : int
        The trees a record reaches (each synthetic record draws one leaf per tree).
    score : callable
        The forest's scoring of summed ``values`` (records, w) into class scores
        (records, 2), as its ``predict_proba`` does before normalising.
    shares : array of shape (2,), optional
        The classes' shares of the records (a released prior); default: the shares of
        the ``weights``' sums. Macro-F1 depends on the class totals only through them.
    correlation, draws
        The copula's public correlation and the synthetic records per class.

    Returns
    -------
    (scores, weights)
        Class 1's normalised score of each synthetic record and its weight per class
        (the class's estimated total over ``draws``), ready for :func:`best_threshold`.
        One tree is exact: the leaves themselves, no simulation.

    Privacy: post-processing of released values with public randomness (a fixed seed).
    """
    weights = np.asarray(weights, dtype=np.float64)
    totals = np.clip(weights.sum(axis=0), 0.0, None) / max(n_trees, 1)  # records per class
    if shares is not None:
        totals = np.asarray(shares, dtype=np.float64) / np.sum(shares) * totals.sum()
    rng = np.random.default_rng(_SEED)
    common = rng.standard_normal((draws, 1))
    own = rng.standard_normal((draws, max(n_trees, 1)))
    u = ndtr(np.sqrt(correlation) * common + np.sqrt(1.0 - correlation) * own)
    out_scores, out_weights = [], []
    for c in (0, 1):
        v = np.asarray(values[c], dtype=np.float64)
        if n_trees <= 1:  # exact: every leaf is an atom of its class's records
            out_scores.append(_normalised(score(v))[:, 1])
            w = np.zeros((len(v), 2))
            w[:, c] = weights[:, c] * (totals[c] / max(weights[:, c].sum(), 1e-12))
            out_weights.append(w)
            continue
        group_values, group_weights = _groups(v, weights[:, c], n_trees, score)
        cdf = np.cumsum(group_weights)
        if not len(cdf) or cdf[-1] <= 0:
            continue
        leaf = np.minimum(np.searchsorted(cdf / cdf[-1], u, side="right"), len(cdf) - 1)
        sums = group_values[leaf].sum(axis=1)
        out_scores.append(_normalised(score(sums))[:, 1])
        w = np.zeros((draws, 2))
        w[:, c] = totals[c] / draws
        out_weights.append(w)
    if not out_scores:
        return np.empty(0), np.zeros((0, 2))
    return np.concatenate(out_scores), np.concatenate(out_weights)


def posterior_counts(noisy, epsilon: float, iterations: int = EM_ITERATIONS) -> np.ndarray:
    """Each noisy count's posterior mean true count, under discrete Laplace noise
    P(z) ∝ e^(−ε|z|) and a prior over true counts fitted to all the counts given (per
    column: an empirical Bayes deconvolution, EM on the counts' histogram over the
    support 0 … max + 8/ε, on a grid of at most :data:`MAX_GRID` points).

    Why not the noisy counts themselves: a leaf's released score is computed from the
    same noisy counts, so the leaves that score highest for a class are those whose
    noise favoured it, and their noisy counts overstate that class there (at ε = 1 the
    default forest on bank_marketing, about one record a leaf, put the threshold above
    99% of the test scores). The posterior mean given the noisy count is what a true
    count is expected to be among leaves released alike, whatever their score.

    Privacy: a function of released noisy counts and public ε (post-processing).
    """
    noisy = np.asarray(noisy, dtype=np.float64)
    out = np.zeros(noisy.shape, dtype=np.float64)
    q = float(np.exp(-float(epsilon)))
    for c in range(noisy.shape[1]):
        column = noisy[:, c]
        # At most MAX_GRID distinct values and support points: a coarser grid where the
        # counts spread wide (small ε or large counts) keeps this to a fraction of a second.
        top = max(column.max(initial=0.0), 0.0) + 8.0 / max(float(epsilon), 1e-6)
        low = min(column.min(initial=0.0), 0.0)
        step = max(1.0, np.ceil((top - low) / MAX_GRID))
        values, inverse, counts = np.unique(
            np.round(column / step) * step, return_inverse=True, return_counts=True
        )
        support = np.arange(0.0, top + step, step)
        # likelihood[d, s] of noisy value d given true count s (the constant cancels)
        like = q ** np.abs(values[:, None] - support[None, :])
        like /= like.sum(axis=1, keepdims=True)  # keeps rows finite where q**d underflows
        like = np.where(np.isfinite(like), like, 0.0)
        prior = np.full(len(support), 1.0 / len(support))
        for _ in range(iterations):
            post = like * prior
            post /= np.clip(post.sum(axis=1, keepdims=True), 1e-300, None)
            prior = (counts[:, None] * post).sum(axis=0) / counts.sum()
        post = like * prior
        post /= np.clip(post.sum(axis=1, keepdims=True), 1e-300, None)
        out[:, c] = (post @ support)[inverse.reshape(-1)]
    return out


def _groups(values: np.ndarray, weights: np.ndarray, n_trees: int, score) -> tuple:
    """Leaves in the order of their own evidence for class 1 (so that a high copula draw
    picks a leaf that favours class 1 in every tree alike), cut into :data:`GROUPS`
    runs of equal length: each run's mean values and its summed noisy count (at least 0).
    Summing over a run lets the noise of its leaves cancel."""
    order = np.argsort(_normalised(score(values * n_trees))[:, 1], kind="stable")
    cuts = np.linspace(0, len(order), min(GROUPS, len(order)) + 1).astype(np.int64)
    starts = cuts[:-1][np.diff(cuts) > 0]
    sizes = np.diff(np.r_[starts, len(order)])
    means = np.add.reduceat(values[order], starts, axis=0) / sizes[:, None]
    totals = np.clip(np.add.reduceat(weights[order], starts), 0.0, None)
    return means, totals


def _normalised(votes: np.ndarray) -> np.ndarray:
    votes = np.clip(np.asarray(votes, dtype=np.float64), 0.0, None)
    total = votes.sum(axis=1, keepdims=True)
    k = votes.shape[1]
    return np.divide(votes, total, out=np.full_like(votes, 1.0 / k), where=total > 0)
