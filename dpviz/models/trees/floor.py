"""Fall-back scores that answer a class prior's first class and keep the trees' ranking,
and the signal test on released leaf counts that decides when to fall back.

Shared by the forest's floors (:mod:`dpviz.models.forest.floor`, a booked out-of-bag
check; :mod:`dpviz.models.forest.signal`, Private-RDT's test on every leaf's released
counts) and the greedy trees' floor (:mod:`dpviz.models.greedy.floor`, a test on the
released leaf counts): when a model's trees carry no usable signal it answers the prior's
class for every record, with scores (1 − w)·π̂ + w·p̂(x) that still rank the records as
the trees do (every class's one-vs-rest AUC is that of p̂).

:func:`partition_terms` is the test's statistic for a partition of the records into
groups of released noisy counts c̃_g (k classes, n̂_g = Σ c̃_g) around their pooled
shares p (their clipped counts summed; unclipped, see ``clip`` below, their counts summed
and the class totals clipped at 0):

    X = Σ_g (‖c̃_g − n̂_g·p‖² − v_g·(k − 2 + k·Σp²)),

v_g the noise variance of each of group g's counts. With n̂_g unclipped the subtracted
term is the exact noise mean of the squared deviation for a fixed p (e_c − p_c·Σe has
variance v·(1 − 2p_c + k·p_c²)), and the pooled counts are unbiased; clipping n̂_g and
the pooled counts at 0 (the greedy floor's groups, which hold records) adds about the
whole noise vector, k·v, for a group whose counts are noise only, and pulls p towards
uniform by the positive parts of such groups' noise. Without signal, sampling gives X
the mean s = Σ_g n̂_g·(1 − n̂_g/N̂)·(1 − Σp²) (n̂_g ≥ 0 there, N̂ their sum) and the
spread σ² = 5·Σ(v_g·(k − 2 + k·Σp²))² + S²·2·Σ(n̂_g·(1 − n̂_g/N̂)·(1 − Σp²))²/(k − 1),
S a selection allowance (how much more than sampling the groups of a tree whose splits
were chosen on the data spread; 1 for random trees).

Privacy role: post-processing of released values only (a released prior π̂, the
model's released scores p̂, released noisy counts and their public ε): no ε.
"""

from __future__ import annotations

import math

import numpy as np


def partition_terms(
    counts: np.ndarray, variance, selection: float = 1.0, *, clip: bool = True
) -> tuple[float, float, float]:
    """(X, S·s, σ) of a partition of the records into groups of released noisy
    ``counts`` (one row per group) whose every count has noise of ``variance`` (one per
    group, or one for all), S = ``selection`` (module docstring). ``clip``: the
    deviation is taken around n̂_g clipped at 0 and the pooled shares of the clipped
    counts (else around the unclipped n̂_g and the shares of the unclipped class totals:
    the noise mean is then exact). Post-processing."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[1]
    sums = counts.sum(axis=1)
    n_hat = np.maximum(sums, 0.0)
    pooled = np.clip(counts if clip else counts.sum(axis=0), 0.0, None)
    pooled = pooled.sum(axis=0) if clip else pooled
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.full(k, 1.0 / k)
    purity = float(np.sum(shares**2))
    deviation = counts - (n_hat if clip else sums)[:, None] * shares[None, :]
    noise = np.broadcast_to(np.asarray(variance, dtype=np.float64), n_hat.shape)
    noise = noise * (k - 2 + k * purity)
    total = float(n_hat.sum())
    inside = np.clip(1.0 - n_hat / total, 0.0, 1.0) if total > 0 else np.zeros_like(n_hat)
    sampling = n_hat * inside * (1.0 - purity)
    excess = float(np.sum((deviation**2).sum(axis=1) - noise))
    spread = math.sqrt(
        5.0 * float(np.sum(noise**2))
        + selection**2 * 2.0 * float(np.sum(sampling**2)) / max(k - 1, 1)
    )
    return excess, selection * float(sampling.sum()), spread


def floor_weight(prior) -> float:
    """w = Δ/(2(1 + Δ)): the trees' weight in the fall-back scores, Δ the lead of the
    prior's first class over its second (0 for one class). Public: the released prior."""
    shares = np.sort(np.asarray(prior, dtype=np.float64))[::-1]
    lead = float(shares[0] - shares[1]) if len(shares) > 1 else 0.0
    return lead / (2.0 * (1.0 + lead))


def floor_scores(proba: np.ndarray, prior) -> np.ndarray:
    """The fall-back scores (1 − w)·π̂ + w·p̂ (rows sum to 1 when ``proba``'s and
    ``prior``'s do), w = :func:`floor_weight`: argmax is the prior's first class for
    every row (w/(1 − w) < Δ bounds any difference of p̂), each class's ranking that of
    ``proba``."""
    w = floor_weight(prior)
    return (1.0 - w) * np.asarray(prior, dtype=np.float64)[None, :] + w * proba
