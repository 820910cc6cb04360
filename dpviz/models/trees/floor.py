"""Fall-back scores that answer a class prior's first class and keep the trees' ranking,
and the signal test on released leaf counts that decides when to fall back.

Shared by the forest's floors (:mod:`dpviz.models.forest.floor`, a booked out-of-bag
check; :mod:`dpviz.models.forest.signal`, Private-RDT's test on every leaf's released
counts) and the greedy trees' floor (:mod:`dpviz.models.greedy.floor`, a test on the
released leaf counts): when a model's trees carry no usable signal it answers the prior's
class for every record, with scores (1 − w)·π̂ + w·p̂(x) that still rank the records as
the trees do (every class's one-vs-rest AUC is that of p̂).

:func:`partition_terms` is the test's statistic for a partition of the records into
groups of released noisy counts c̃_g (k classes, n̂_g = Σ c̃_g, not clipped) around their
pooled shares p (their counts summed, clipped at 0 per class):

    X = Σ_g (‖c̃_g − n̂_g·p‖² − c·(v_g·(1 − 2·w_g) + w_g²·Σ_h v_h)),  c = k − 2 + k·Σp²,

v_g the noise variance of each of group g's counts and w_g = max(n̂_g, 0)/Σ max(n̂_h, 0):
the deviation's noise e_g − p·Σe_g has mean c·v_g, and shares pooled from the groups hold
a group's noise in proportion to its weight, taking 2·w_g of it off and adding w_g² of
everyone's; without signal that is the noise's mean to first order. (Clipping n̂_g at 0,
as the greedy floor first did, adds about a whole noise vector for a group of noise only:
a bias towards trusting the trees; bench/README "the greedy floor's statistic without the
clip" and "Private-RDT's floor".) Without signal, sampling gives X the mean s = Σ_g
n̂_g·(1 − n̂_g/N̂)·(1 − Σp²) (N̂ = Σ n̂_g) and the spread σ² = 5·Σ(v_g·c)² +
S²·2·Σ(n̂_g·(1 − n̂_g/N̂)·(1 − Σp²))²/(k − 1), S a selection allowance (how much more than
sampling the groups of a tree whose splits were chosen on the data spread; 1 for random
trees).

Privacy role: post-processing of released values only (a released prior π̂, the
model's released scores p̂, released noisy counts and their public ε): no ε.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FloorOutcome:
    """What a fitted model's floor test decided, for the person who reads the model.

    ``test`` names the test, ``reads`` the released values it reads, ``statistic`` and
    ``bar`` its number and the number it had to reach, ``trusted`` whether the trees
    passed (else the model answers ``fallback``). Every field is public: the test is
    post-processing of released values (or, for a booked check, is itself released)."""

    test: str
    reads: str
    statistic: float
    bar: float
    trusted: bool
    fallback: str

    def describe(self) -> str:
        """The outcome in one or two sentences."""
        sign = "≥" if self.trusted else "<"
        numbers = f"{self.statistic:.3g} {sign} {self.bar:.3g}"
        if self.trusted:
            return (
                f"The trees passed their floor test, the {self.test} ({numbers}, from "
                f"{self.reads}): the model answers with the trees."
            )
        return (
            f"The trees did not pass their floor test, the {self.test} ({numbers}, from "
            f"{self.reads}): they carry no signal the test can tell from noise, so the "
            f"model answers {self.fallback}. No ε was spent on this decision beyond what "
            "the ledger books."
        )


def partition_terms(
    counts: np.ndarray, variance, selection: float = 1.0
) -> tuple[float, float, float]:
    """(X, S·s, σ) of a partition of the records into groups of released noisy
    ``counts`` (one row per group) whose every count has noise of ``variance`` (one per
    group, or one for all), S = ``selection`` (module docstring). Nothing is clipped
    before the deviations: a group's n̂ = Σ c̃ may be negative (a group of pure noise), and
    the shares p pool the groups' counts as released (clipped at 0 per class only once
    pooled). Post-processing."""
    counts = np.asarray(counts, dtype=np.float64)
    n_hat = counts.sum(axis=1)
    variance = np.broadcast_to(np.asarray(variance, dtype=np.float64), n_hat.shape)
    k = counts.shape[1]
    pooled = np.clip(counts.sum(axis=0), 0.0, None)
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.full(k, 1.0 / k)
    purity = float(np.sum(shares**2))
    deviation = counts - n_hat[:, None] * shares[None, :]
    factor = k - 2 + k * purity
    noise = variance * factor
    size = np.maximum(n_hat, 0.0)
    weight = size / size.sum() if size.sum() > 0 else np.zeros_like(size)
    mean = factor * (variance * (1.0 - 2.0 * weight) + weight**2 * float(variance.sum()))
    total = float(n_hat.sum())
    inside = np.clip(1.0 - n_hat / total, 0.0, None) if total > 0 else np.zeros_like(n_hat)
    sampling = n_hat * inside * (1.0 - purity)
    excess = float(np.sum((deviation**2).sum(axis=1) - mean))
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
