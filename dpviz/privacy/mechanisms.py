"""Leaf mechanisms: how one leaf's class counts become a released output (SPEC §3).

Every function is vectorised over leaves: ``counts`` has shape (n_leaves, n_classes)
and the budget ``epsilon`` is what one leaf may spend. Randomness comes in as a leaf
noise object (``dpviz.privacy.noise``: secret keyed noise per leaf, or a stream) that gives
uniforms or exact discrete Laplace draws for those leaves, so a leaf's release is a
pure function of its counts, its budget and its noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpviz.privacy.noise import epsilon_fraction

# exp(700) is near the float64 limit; smooth_em's 1/Δ = e^(jε) is clipped there, which
# changes probabilities only below e^-(10^300).
_MAX_EXPONENT = 700.0
_CHUNK_ELEMENTS = 4_000_000


def gap(counts: np.ndarray) -> np.ndarray:
    """j = f(1) - f(2): the most frequent count minus the second (0 on ties)."""
    counts = np.asarray(counts)
    top2 = -np.partition(-counts, 1, axis=-1)[..., :2]
    return top2[..., 0] - top2[..., 1]


def smooth_sensitivity(counts: np.ndarray, epsilon: float) -> np.ndarray:
    """Fletcher & Islam's smooth sensitivity e^(-jε) of the majority-label score."""
    return np.exp(-gap(counts) * epsilon)


def is_majority(counts: np.ndarray) -> np.ndarray:
    """Boolean mask of the most frequent class(es) of each leaf."""
    counts = np.asarray(counts)
    return counts == counts.max(axis=-1, keepdims=True)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=-1, keepdims=True)
    shifted = logits - top
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _gumbel_argmax(log_probs: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    # Gumbel-max: argmax(log p + G) is an exact draw from p, and breaks ties uniformly.
    return np.argmax(log_probs - np.log(-np.log(uniforms)), axis=-1)


# --- exact output distributions -------------------------------------------------------


def _log_probs_global_em(counts, epsilon):
    return log_softmax(epsilon * is_majority(counts) / 2.0)


def _log_probs_smooth_em(counts, epsilon):
    inv_delta = np.exp(np.minimum(gap(counts) * epsilon, _MAX_EXPONENT))
    return log_softmax(0.5 * epsilon * is_majority(counts) * inv_delta[..., None])


def _log_probs_count_em(counts, epsilon):
    return log_softmax(epsilon * np.asarray(counts, dtype=np.float64))


def _log_probs_none(counts, epsilon):
    majority = is_majority(counts)
    with np.errstate(divide="ignore"):
        return np.log(majority / majority.sum(axis=-1, keepdims=True))


def _log_probs_permute_flip(counts, epsilon):
    """Exact P(argmax_c f_c + Exp(ε)) in closed form by Gauss–Legendre quadrature.

    With d_c = max f - f_c and w_c = e^(-ε d_c), substituting u = e^(-ε(x - max f))
    gives P(c) = w_c ∫_0^1 Π_{c'≠c} (1 - w_c' u) du: a polynomial of degree k - 1,
    which Gauss–Legendre with ⌈k/2⌉ + 1 nodes integrates exactly. Every factor lies in
    (0, 1], so there is no cancellation and log P(c) = -ε d_c + log(integral).
    """
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[-1]
    nodes, weights = np.polynomial.legendre.leggauss(k // 2 + 1)
    nodes, weights = 0.5 * (nodes + 1.0), 0.5 * weights
    scaled_gap = epsilon * (counts.max(axis=-1, keepdims=True) - counts)
    flat = scaled_gap.reshape(-1, k)
    out = np.empty_like(flat)
    step = max(1, _CHUNK_ELEMENTS // (len(nodes) * k))
    for start in range(0, len(flat), step):
        d = flat[start : start + step]
        log_factors = np.log1p(-np.exp(-d)[:, None, :] * nodes[None, :, None])
        total = log_factors.sum(axis=-1, keepdims=True)
        integral = np.einsum("q,lqc->lc", weights, np.exp(total - log_factors))
        out[start : start + step] = -d + np.log(integral)
    return out.reshape(counts.shape)


_MAX_WINDOW = 8193


def _log_probs_laplace_argmax(counts, epsilon):
    """P(released label = c) for ``laplace_counts``: exact for discrete Laplace noise.

    The label is argmax_c (f_c + Z_c), Z_c ~ P(z) ∝ exp(−ε'|z|) with ε' the sampler's
    exact rate (:func:`dpviz.privacy.noise.epsilon_fraction`), ties broken uniformly. With
    A_c'(v) = P(f_c' + Z < v) and B_c'(v) = P(f_c' + Z = v), a class c reaching v wins
    with probability E[1/(1 + ties)] = ∫_0^1 Π_{c'≠c} (A_c' + B_c' x) dx, a polynomial
    that Gauss–Legendre integrates exactly. The sum runs over v within 40/ε' of max f
    (the rest weighs under e^−40). For ε' < 0.01 that window is too wide and the
    continuous-Laplace quadrature (off by about ε') stands in.
    """
    s, t = epsilon_fraction(epsilon)
    rate = s / t
    half = math.ceil(40.0 / rate)
    if 2 * half + 1 > _MAX_WINDOW:
        if np.shape(counts)[-1] == 2:
            return _log_probs_continuous_two(np.asarray(counts, dtype=np.float64), rate)
        return _once_per_row(_log_probs_laplace_argmax_continuous, counts, rate)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape[-1] == 2:
        return _log_probs_laplace_argmax_two(counts, rate)
    return _laplace_argmax_window(counts, rate, half)


def _laplace_argmax_window(counts: np.ndarray, rate: float, half: int) -> np.ndarray:
    """:func:`_log_probs_laplace_argmax` by the sum over v within ``half`` of max f."""
    k = counts.shape[-1]
    flat = counts.reshape(-1, k)
    # The law depends on the counts less their largest only (every term below reads
    # v − f with v = max f + offset): each distinct pattern is computed once. Leaves of a
    # few records share a handful of patterns (a 20-ε sweep's diagnostics: 10× faster).
    patterns, where = np.unique(
        flat - flat.max(axis=1, keepdims=True), axis=0, return_inverse=True
    )
    if len(patterns) < len(flat):
        return _laplace_argmax_window(patterns, rate, half)[where.reshape(-1)].reshape(
            counts.shape
        )
    offsets = np.arange(-half, half + 1)
    nodes, weights = np.polynomial.legendre.leggauss(k // 2 + 1)
    nodes, weights = 0.5 * (nodes + 1.0), 0.5 * weights
    log_norm = math.log((1 - math.exp(-rate)) / (1 + math.exp(-rate)))
    out = np.empty(flat.shape, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // (len(offsets) * k * len(nodes)))
    for start in range(0, len(flat), step):
        f = flat[start : start + step]
        v = f.max(axis=1, keepdims=True) + offsets[None, :]  # (leaves, window)
        z = (v[:, :, None] - f[:, None, :]).astype(np.float64)  # the noise each class needs
        log_pmf = log_norm - rate * np.abs(z)
        below = np.exp(_log_cdf_discrete_laplace(z - 1.0, rate))
        # log(A + B x) at every node x, floored so that far-off values stay finite.
        log_factor = np.log(
            np.maximum(
                below[:, :, None, :] + np.exp(log_pmf)[:, :, None, :] * nodes[:, None], 1e-300
            )
        )
        others = log_factor.sum(axis=-1, keepdims=True) - log_factor
        # An explicit sum, not einsum: the same digits whatever the chunk's size.
        tie_share = (weights[:, None] * np.exp(others)).sum(axis=2)
        with np.errstate(divide="ignore"):
            out[start : start + step] = logsumexp(log_pmf + np.log(tie_share), axis=1)
    return out.reshape(counts.shape)


def _log_probs_laplace_argmax_two(counts: np.ndarray, rate: float) -> np.ndarray:
    """:func:`_log_probs_laplace_argmax` of two classes in closed form (no window).

    With q = e^−rate and c = (1 − q)/(1 + q), the difference D of the two classes'
    noises has P(D = d) = c² q^|d| (|d| + a), a = (1 + q²)/(1 − q²), so the class
    behind by g ≥ 1 wins with probability L(g) = P(D ≥ g + 1) + ½ P(D = g)
    = c² q^g [q ((g + 1 + a)/(1 − q) + q/(1 − q)²) + ½ (g + a)], the other with
    1 − L(g), and a tie (g = 0) gives each ½. The same law as the windowed sum (which
    drops terms under e^−40), in log space, at the cost of a few array passes."""
    flat = counts.reshape(-1, 2)
    g = np.abs(flat[:, 0] - flat[:, 1]).astype(np.float64)
    q = math.exp(-rate)
    one_minus_q = -math.expm1(-rate)
    a = (1.0 + q * q) / -math.expm1(-2.0 * rate)
    log_c2 = 2.0 * math.log(one_minus_q / (1.0 + q))
    bracket = q * ((g + 1.0 + a) / one_minus_q + q / one_minus_q**2) + 0.5 * (g + a)
    log_loser = log_c2 - rate * g + np.log(bracket)
    log_winner = np.log1p(-np.exp(log_loser))
    tie = g == 0
    log_loser[tie] = log_winner[tie] = math.log(0.5)
    first_wins = flat[:, 0] >= flat[:, 1]
    out = np.empty(flat.shape, dtype=np.float64)
    out[:, 0] = np.where(first_wins, log_winner, log_loser)
    out[:, 1] = np.where(first_wins, log_loser, log_winner)
    return out.reshape(counts.shape)


def _once_per_row(fn, counts, *args) -> np.ndarray:
    """``fn(counts, *args)`` computed once per distinct row of counts."""
    counts = np.asarray(counts)
    k = counts.shape[-1]
    flat = counts.reshape(-1, k)
    rows, where = np.unique(flat, axis=0, return_inverse=True)
    if len(rows) == len(flat):
        return fn(counts, *args)
    return fn(rows, *args)[where.reshape(-1)].reshape(counts.shape)


def _log_cdf_discrete_laplace(z: np.ndarray, rate: float) -> np.ndarray:
    """log P(Z ≤ z) for P(z) ∝ exp(−rate·|z|) on the integers."""
    log_tail = -rate * (np.abs(z) + (z >= 0)) - math.log1p(math.exp(-rate))
    return np.where(z >= 0, np.log1p(-np.exp(np.minimum(log_tail, 0.0))), log_tail)


def _log_probs_continuous_two(counts: np.ndarray, epsilon: float) -> np.ndarray:
    """:func:`_log_probs_laplace_argmax_continuous` of two classes in closed form: the
    difference of two Laplace(1/ε) noises exceeds x ≥ 0 with probability
    ½ e^−εx (1 + εx/2), so the class behind by g wins with that at x = g."""
    flat = counts.reshape(-1, 2)
    x = epsilon * np.abs(flat[:, 0] - flat[:, 1])
    log_loser = math.log(0.5) - x + np.log1p(0.5 * x)
    log_winner = np.log1p(-np.exp(log_loser))
    first_wins = flat[:, 0] >= flat[:, 1]
    out = np.empty(flat.shape, dtype=np.float64)
    out[:, 0] = np.where(first_wins, log_winner, log_loser)
    out[:, 1] = np.where(first_wins, log_loser, log_winner)
    return out.reshape(counts.shape)


def _log_probs_laplace_argmax_continuous(counts, epsilon):
    """P(argmax of f + Laplace(1/ε) = c) by composite Gauss–Legendre quadrature.

    In units of 1/ε the integrand is smooth between the counts; panels of width 1
    with 8 nodes each, split at every count, cover max f ± 36 (the tails beyond hold
    less than e^-36). Accurate to about 1e-12 for continuous noise.
    """
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[-1]
    g = (epsilon * counts).reshape(-1, k)
    half_width, panel = 36.0, 1.0
    nodes, weights = np.polynomial.legendre.leggauss(8)
    offsets = np.arange(-half_width, half_width + panel / 2, panel)
    out = np.empty_like(g)
    n_edges = len(offsets) + k
    step = max(1, _CHUNK_ELEMENTS // (n_edges * len(nodes) * k))
    for start in range(0, len(g), step):
        gc = g[start : start + step]
        top = gc.max(axis=1, keepdims=True)
        inside = np.clip(gc, top - half_width, top + half_width)
        edges = np.sort(np.concatenate([top + offsets, inside], axis=1), axis=1)
        lo, hi = edges[:, :-1], edges[:, 1:]
        z = (0.5 * (hi - lo))[..., None] * nodes + (0.5 * (hi + lo))[..., None]
        w = (0.5 * (hi - lo))[..., None] * weights
        z, w = z.reshape(len(gc), -1), w.reshape(len(gc), -1)
        diff = z[:, :, None] - gc[:, None, :]
        log_cdf = np.where(
            diff < 0, np.log(0.5) + np.minimum(diff, 0), np.log1p(-0.5 * np.exp(-np.abs(diff)))
        )
        log_pdf = np.log(0.5) - np.abs(diff)
        total = log_cdf.sum(axis=-1, keepdims=True)
        prob = np.einsum("lz,lzc->lc", w, np.exp(log_pdf + total - log_cdf))
        with np.errstate(divide="ignore"):
            out[start : start + step] = np.log(prob / prob.sum(axis=1, keepdims=True))
    return out.reshape(counts.shape)


# --- releases -------------------------------------------------------------------------


def _release_em(log_probs_fn):
    def release(counts, epsilon, noise):
        counts = np.asarray(counts)
        uniforms = noise.uniforms(counts.shape[-1])
        return _gumbel_argmax(log_probs_fn(counts, epsilon), uniforms), None

    return release


def _release_permute_flip(counts, epsilon, noise):
    # Report-noisy-max with one-sided exponential noise: argmax_c ε f_c + Exp(1). Only
    # the argmax is released, never the noisy values.
    counts = np.asarray(counts, dtype=np.float64)
    noisy = epsilon * counts - np.log(noise.uniforms(counts.shape[-1]))
    return np.argmax(noisy, axis=-1), None


ABSTAIN = -1  # the released "label" of a leaf that abstains


def abstain_score(n_classes: int, epsilon: float) -> float:
    """The constant score θ of the abstain option, in counts: (ln k + 2) / ε.

    An empty leaf then votes with probability about 1/(2e²) ≈ 7% whatever k and ε, and
    a leaf releases a class only when its count clears θ by the noise."""
    return (math.log(n_classes) + 2.0) / epsilon


def _with_abstain(counts, epsilon):
    counts = np.asarray(counts, dtype=np.float64)
    theta = np.full(counts.shape[:-1] + (1,), abstain_score(counts.shape[-1], epsilon))
    return np.concatenate([counts, theta], axis=-1)


def _log_probs_abstain_flip(counts, epsilon):
    """Exact law of (class 0, …, class k−1, abstain): permute-and-flip on the counts and
    the constant θ."""
    return _log_probs_permute_flip(_with_abstain(counts, epsilon), epsilon)


def _release_abstain_flip(counts, epsilon, noise):
    # Report-noisy-max over the k counts and a constant θ: the scores stay monotone
    # (one record raises one count, θ never moves), so rate ε keeps it ε-DP.
    scores = _with_abstain(counts, epsilon)
    k = scores.shape[-1] - 1
    noisy = epsilon * scores - np.log(noise.uniforms(k + 1))
    choice = np.argmax(noisy, axis=-1)
    return np.where(choice == k, ABSTAIN, choice), None


def _release_laplace(counts, epsilon, noise):
    # Integer counts plus exact discrete Laplace noise (two-sided geometric): no
    # floating-point side channel in the released numbers. The label is post-processing
    # of the released counts; its ties are broken uniformly (half a unit of uniform
    # jitter cannot reorder integers that differ).
    counts = np.asarray(counts, dtype=np.int64)
    noisy = counts + noise.discrete_laplace(counts.shape[-1], epsilon)
    return largest_count(noisy, noise), noisy


def largest_count(noisy: np.ndarray, noise) -> np.ndarray:
    """The class of the largest released count, ties broken uniformly (post-processing)."""
    return np.argmax(noisy + 0.5 * noise.uniforms(noisy.shape[-1]), axis=-1)


@dataclass(frozen=True)
class LeafMechanism:
    """A way to release one leaf's output from its class counts.

    ``private`` is True only for mechanisms with a proof of ε-DP per leaf.
    ``releases`` is ``"label"`` or ``"counts"`` (noisy count vectors). A mechanism that
    ``abstains`` may release :data:`ABSTAIN` instead of a class; its exact law then has
    one more column, the abstention, after the k classes.
    """

    id: str
    name: str
    description: str
    private: bool
    releases: str
    log_probabilities: Callable[[np.ndarray, float], np.ndarray]
    release: Callable[[np.ndarray, float, Any], tuple[np.ndarray, np.ndarray | None]]
    abstains: bool = False

    @property
    def badge(self) -> str:
        return "ε-DP" if self.private else "NOT DP"

    def probabilities(self, counts, epsilon: float) -> np.ndarray:
        """Exact probability of each released label (argmax for count mechanisms)."""
        return np.exp(self.log_probabilities(np.asarray(counts), valid_epsilon(epsilon)))

    def flip_probability(self, counts, epsilon: float) -> np.ndarray:
        """Exact probability that the released label is not a true majority class."""
        counts = np.asarray(counts)
        probs = self.probabilities(counts, epsilon)
        k = counts.shape[-1]
        majority = is_majority(counts)
        # An abstention is no vote, so not a flip either.
        kept = probs[..., k:].sum(axis=-1)
        flip = np.clip(1.0 - kept - (probs[..., :k] * majority).sum(axis=-1), 0.0, 1.0)
        # Every class a majority (e.g. an empty leaf): nothing to flip to, exactly.
        return np.where(majority.all(axis=-1), 0.0, flip)


def valid_epsilon(epsilon) -> float:
    """``epsilon`` as a float; a one-line ``ValueError`` unless it is a positive finite
    number. A check of a public setting: no data, no ε spent."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number, got {epsilon!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return value


MECHANISMS: dict[str, LeafMechanism] = {
    m.id: m
    for m in (
        LeafMechanism(
            "permute_flip",
            "Permute-and-flip (one-sided noisy max)",
            "Adds one-sided exponential noise of rate ε to each class count and releases "
            "the largest (the 2021 addendum's ROSNAM). ε-DP; the most accurate label "
            "mechanism here.",
            True,
            "label",
            _log_probs_permute_flip,
            _release_permute_flip,
        ),
        LeafMechanism(
            "abstain_flip",
            "Permute-and-flip with abstention",
            "Permute-and-flip over the class counts and one more option, abstain, whose "
            "score is a constant θ = (ln k + 2)/ε: a leaf releases a class only when its "
            "count clears θ through the noise, else it abstains and casts no vote. Empty "
            "and tiny leaves thus stay silent instead of voting at random. ε-DP.",
            True,
            "label",
            _log_probs_abstain_flip,
            _release_abstain_flip,
            abstains=True,
        ),
        LeafMechanism(
            "count_em",
            "Exponential mechanism on counts",
            "P(c) ∝ exp(ε·f_c): the addendum's Table 5 correction (monotone utility). ε-DP.",
            True,
            "label",
            _log_probs_count_em,
            _release_em(_log_probs_count_em),
        ),
        LeafMechanism(
            "global_em",
            "Exponential mechanism, global sensitivity",
            "u = 1 for the majority class, 0 otherwise, sensitivity 1: "
            "P(c) ∝ exp(ε·u/2). ε-DP but barely better than a coin on small leaves.",
            True,
            "label",
            _log_probs_global_em,
            _release_em(_log_probs_global_em),
        ),
        LeafMechanism(
            "smooth_em",
            "Smooth-sensitivity exponential mechanism (2017) — NOT DP",
            "Fletcher & Islam 2017: sensitivity e^(-jε). NOT differentially private: the "
            "2021 addendum withdrew it and the exact audit shows unbounded privacy loss. "
            "Kept to reproduce the 2017 figures and to teach why.",
            False,
            "label",
            _log_probs_smooth_em,
            _release_em(_log_probs_smooth_em),
        ),
        LeafMechanism(
            "laplace_counts",
            "Laplace noise on counts",
            "Releases every class count plus discrete Laplace noise of scale 1/ε, sampled "
            "exactly (Jagannathan et al. with integer noise). ε-DP.",
            True,
            "counts",
            _log_probs_laplace_argmax,
            _release_laplace,
        ),
        LeafMechanism(
            "none",
            "True majority (no privacy)",
            "Releases the true majority label, ties broken at random: the ε = ∞ reference. "
            "NOT private.",
            False,
            "label",
            _log_probs_none,
            _release_em(_log_probs_none),
        ),
    )
}


def get_mechanism(name: str) -> LeafMechanism:
    """Look up a leaf mechanism by id."""
    try:
        return MECHANISMS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown mechanism {name!r}; choose one of {', '.join(MECHANISMS)}"
        ) from None
