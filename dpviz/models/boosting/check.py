"""DPBoost's graceful fallback: a noisy class prior, and a held-out check of the trees.

Privacy role: two releases, each of L1 sensitivity 1 and exact discrete Laplace noise.
:func:`noisy_prior` releases the class histogram (one record changes one count by one)
at ε_p. :func:`held_out_check` releases one count on the last ensemble's held-out cell
— how many more of its records the trees-trusting mix classifies correctly than the
prior's answer — at that ensemble's ε_t (parallel composition: no tree of that ensemble
reads the cell); only if it exceeds ln(1000)/ε_t are the trees trusted, so trees no
better than the prior pass with probability < 0.1%. :func:`check_weights` and the mix
(1 − w)·κ·p̂ + w·(trees' score) are post-processing of released values.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.models.trees.draws import Rng
from dpviz.models.trees.floor import FloorOutcome

# The trees are trusted over the class prior only when their noisy held-out gain exceeds
# CHECK_THRESHOLD / ε: discrete Laplace noise passes it with probability < e^-6.9 = 0.1%.
CHECK_THRESHOLD = math.log(1000)


def noisy_prior(
    y: np.ndarray, k: int, targets: list[int], epsilon: float, rng: Rng
) -> tuple[np.ndarray | None, np.ndarray]:
    """The released class histogram (None when ``epsilon`` is 0: no prior) and each
    one-vs-rest part's prior score p̂ = 2·(noisy share of its class) − 1 (0 without a
    prior); the shares clip the noisy counts at 0 (uniform when none is positive)."""
    if epsilon <= 0:
        return None, np.zeros(len(targets))
    counts = np.bincount(y, minlength=k).astype(np.int64)
    released = counts + rng.discrete_laplace(epsilon, k)
    noisy = np.clip(released, 0, None).astype(np.float64)
    shares = noisy / noisy.sum() if noisy.sum() > 0 else np.full(k, 1.0 / k)
    return released, 2 * shares[targets] - 1


def check_weights(reach: float, noise_variance: float, prior: np.ndarray) -> tuple[float, float]:
    """(w_trust, w_floor): the trees' weight when the check passes, and when it fails.

    w_trust = τ²/(τ² + σ²): σ² = ``noise_variance`` the exact variance the leaf noise
    adds to a record's trees' score, τ = κ/2 (κ = ``reach``, the share of E[y|x] the
    trees' score reaches) a generous spread of the signal κ·E[y|x] (a Gaussian
    posterior mean between the prior and the trees). w_floor = min(w_trust,
    m/(10·√2·σ)), m = the lead of ``prior``, the prior's score κ·p̂ on the trees' scale
    (|κ·p̂| for two classes, the gap between the two largest otherwise): the trees'
    noise then moves the difference of two scores by a tenth of the prior's lead (one
    standard deviation), too little to overturn the prior's class, while the trees still
    rank the records (AUC). Both come from public constants and released values.

    (τ = c/2, c = 1 − (1−η)^T, overstated the signal by 1/s when λ shrinks small
    leaves by s: on tic-tac-toe at ε = 1 the trusted trees then fell below the majority
    rate in 2 of 40 five-fold runs; 0 of 90 with κ/2.)"""
    tau2 = (reach / 2) ** 2
    trust = tau2 / (tau2 + noise_variance)
    ranked = np.sort(prior)
    lead = abs(ranked[0]) if len(ranked) == 1 else ranked[-1] - ranked[-2]
    if noise_variance <= 0:
        return trust, trust
    return trust, min(trust, lead / (10 * math.sqrt(2 * noise_variance)))


def held_out_check(
    raw: np.ndarray,
    prior: np.ndarray,
    y: np.ndarray,
    weights: tuple[float, float],
    epsilon: float,
    rng: Rng,
    keep_prior: bool = False,
) -> tuple[int, bool]:
    """The released gain of the held-out check and whether it passed.

    ``raw`` holds the held-out records' trees' scores (one column per part), ``prior``
    the prior's score κ·p̂ per part, ``y`` their classes and ``weights`` (w_trust,
    w_floor). The gain, how many more records the mix (1 − w)·prior + w·raw with
    w_trust classifies correctly than the one with w_floor (with ``keep_prior``, trees
    boosted from the prior: prior + w·raw), changes by at most 1 when a
    record is added or removed; it is released with discrete Laplace noise at
    ``epsilon`` and passes when it exceeds ``CHECK_THRESHOLD``/``epsilon``."""
    trust, floor = weights

    def correct(w: float) -> np.ndarray:
        return classify((1 if keep_prior else 1 - w) * prior + w * raw) == y

    gain = int(np.sum(correct(trust)) - np.sum(correct(floor)))
    released = gain + int(rng.discrete_laplace(epsilon, 1)[0])
    return released, bool(released > CHECK_THRESHOLD / epsilon)


def classify(scores: np.ndarray) -> np.ndarray:
    """The class index a score matrix predicts (as ``predict`` does: one column is the
    positive class's score, positive above 0)."""
    if scores.shape[1] == 1:
        return (scores[:, 0] > 0).astype(np.int64)
    return np.argmax(scores, axis=1)


def newton_floor(start: np.ndarray, noise_variance: float) -> float:
    """The trees' weight when the held-out check fails, for trees boosted on the
    log-loss from the released prior's log-odds ``start`` (one per part): m/(10·√2·σ),
    at most 1, m the prior's lead (|start| for two classes, the gap between the two
    largest log-shares otherwise) and σ² = ``noise_variance`` (the leaf noise's variance
    in a record's score), as :func:`check_weights`' w_floor: the trees' noise then
    cannot overturn the prior's class, yet they still rank the records. Public
    constants and released values only."""
    ranked = np.sort(np.asarray(start, dtype=np.float64))
    lead = abs(ranked[0]) if len(ranked) == 1 else ranked[-1] - ranked[-2]
    if noise_variance <= 0:
        return 1.0
    return float(min(1.0, lead / (10 * math.sqrt(2 * noise_variance))))


def check_outcome(
    gain: int, passed: bool, epsilon: float, weights: tuple[float, float]
) -> FloorOutcome:
    """The held-out check's decision (:func:`held_out_check`'s released ``gain`` at
    ``epsilon``, whether it ``passed``), ``weights`` the trees' weight (w_trust, w_floor)
    when it passes and when it fails. Public: released values and ε."""
    trust, floor = (float(w) for w in weights)
    if floor < trust:
        fallback = (
            "mostly the released class prior: the trees' weight in each score is cut from "
            f"{trust:.3g} to {floor:.3g}, so their noise cannot overturn the prior's class "
            "while they still rank the records"
        )
    else:
        fallback = (
            f"with the trees all the same: at this ε their noise is too small to overturn "
            f"the prior's class, so they keep their weight ({trust:.3g}) either way"
        )
    return FloorOutcome(
        test="held-out check",
        reads=(
            "a noisy count booked in the ledger: how many more of the last ensemble's "
            "held-out records (no tree of it read them) the trees classify correctly than "
            "the prior's answer does, against ln(1000)/ε"
        ),
        statistic=float(gain),
        bar=CHECK_THRESHOLD / float(epsilon),
        trusted=bool(passed),
        fallback=fallback,
    )
