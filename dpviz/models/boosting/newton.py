"""DPBoost's logistic / softmax loss with clipped Newton leaves (the grown model).

Privacy role: none of this releases anything by itself; it gives the trees' gradients,
hessians, start score and the leaf sensitivity the tree's Laplace noise uses.

The grown model (ε ≥ 5 and a released prior total ≥ 6,000:
:func:`~dpviz.models.boosting.presets.grows`) boosts the log-odds (two classes) or the k
classes' logits (softmax) from the released prior's log-shares (:func:`start_scores`,
post-processing of the booked class histogram). A record's gradients g = p − y and
hessians h = p(1 − p) (:func:`gradients`, p its predicted probabilities from the
released trees so far) are bounded by the loss itself: |g_c| ≤ 1, ‖g‖₁ = 2(1 − p_y) ≤ 2
over k softmax classes, 0 ≤ h_c ≤ 1/4 and Σ_c h_c = 1 − Σ_c p_c² ≤ 1 − 1/k. Each leaf
releases its Newton value V = −Σg/(Σh + λ) clipped to ±c (:data:`NEWTON_CLIP`).

**Sensitivity** (:func:`newton_sensitivity`; the argument of Li et al. 2020's Lemma 2
with a hessian in the denominator). Let a leaf hold records of sums G and H (any
H ≥ 0, D = H + λ ≥ λ) and add one record of gradient g and hessian h. Then
V' − V = (−g − h·V)/(D + h). If |V| ≤ c, |V' − V| ≤ (|g| + h·c)/λ. If V > c (clipped
to c), V' ≥ (c·D − |g|)/(D + h), so c − V' ≤ (|g| + h·c)/(D + h) and the clipped V'
lies within (|g| + h·c)/λ of c (V < −c alike); the clip is 1-Lipschitz and the bound
is symmetric in the pair, so removing a record is the same. Summed over the k values of
a softmax leaf: ‖ΔV‖₁ ≤ (‖g‖₁ + c·Σh)/λ ≤ (2 + c(1 − 1/k))/λ; for one log-odds value,
where h = |g|(1 − |g|), (|g| + c·h)/λ ≤ (1 + c)²/(4c·λ) for c ≥ 1
(:func:`record_bound`). Both are also ≤ 2·(parts)·c (each clipped value moves by at
most 2c). The
bound does not shrink with the leaf's records (H can be 0: a leaf of confident
records), unlike the square loss's 1/(1 + λ).

The split score is the absolute sums Σ_sides |Σg|
(:func:`~dpviz.models.boosting.tree.split_utility`), sensitivity ‖g‖₁: 1 for two
classes, 2 for a softmax tree.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.objective import prior_from_counts

# The largest |value| a Newton leaf releases (in log-odds). Measured at ε = 10 on the
# shared sets (bench/README.md, "DPBoost's logistic loss at large ε").
NEWTON_CLIP = 2.0
HESSIAN_BOUND = 0.25  # p(1 − p) ≤ 1/4


def start_scores(prior_counts: np.ndarray | None, k: int) -> np.ndarray:
    """The score the trees are boosted from, per part: the log-odds of the released
    prior's positive share (two classes) or each class's log-share (k classes; softmax
    is unchanged by a shift). Shares from the noisy counts, one added per class
    (:func:`~dpviz.models.objective.prior_from_counts`): post-processing."""
    shares = prior_from_counts(prior_counts, k)
    if k == 2:
        return np.array([np.log(shares[1] / shares[0])])
    return np.log(shares)


def probabilities(scores: np.ndarray) -> np.ndarray:
    """Per record, each part's probability: the sigmoid of one log-odds column, the
    softmax over k logit columns."""
    if scores.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-scores))
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def gradients(scores: np.ndarray, onehot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(g, h) of the log-loss at ``scores`` (n, parts) for the 0/1 targets ``onehot``
    (n, parts): g = p − y in [−1, 1], h = p(1 − p) in [0, 1/4]. A softmax record's
    ‖g‖₁ = 2(1 − p_y) ≤ 2 and Σh ≤ 1 − 1/k by the algebra; the clips only guard the
    last bit of floating point."""
    p = probabilities(scores)
    g = np.clip(p - onehot, -1.0, 1.0)
    if g.shape[1] == 1:
        # h = p(1 − p) = |g|(1 − |g|) for y ∈ {0, 1}: computed from g, so the joint
        # bound of :func:`newton_sensitivity` holds in floating point too.
        return g, np.abs(g) * (1.0 - np.abs(g))
    norm = np.abs(g).sum(axis=1, keepdims=True)
    g = g * (2.0 / np.maximum(norm, 2.0))
    h = np.clip(p * (1.0 - p), 0.0, HESSIAN_BOUND)
    return g, h


def gradient_l1_bound(parts: int) -> float:
    """‖g‖₁ of one record over the parts a tree serves: 1 (log-odds), 2 (softmax)."""
    return 1.0 if parts == 1 else 2.0


def hessian_sum_bound(parts: int) -> float:
    """Σh of one record over the parts: 1/4 (log-odds), 1 − 1/k (softmax over k)."""
    return HESSIAN_BOUND if parts == 1 else 1.0 - 1.0 / parts


def record_bound(parts: int, clip: float = NEWTON_CLIP) -> float:
    """The largest ‖g‖₁ + c·Σh of one record (c = ``clip``). Softmax over k parts:
    2 + c(1 − 1/k) (each term at its own bound). One log-odds part: h = |g|(1 − |g|),
    so |g| + c·h = x + c·x(1 − x) for x = |g| ∈ [0, 1], at most (1 + c)²/(4c) (its
    peak at x = (1 + c)/(2c)) when c ≥ 1, else 1 (at x = 1): 9/8 at c = 2 where the
    separate bounds give 1 + c/4 = 3/2."""
    if parts > 1:
        return gradient_l1_bound(parts) + clip * hessian_sum_bound(parts)
    return (1.0 + clip) ** 2 / (4.0 * clip) if clip >= 1 else 1.0


def newton_sensitivity(parts: int, lam: float, clip: float = NEWTON_CLIP) -> float:
    """The L1 sensitivity of a leaf's clipped Newton values (see the module docstring):
    min(:func:`record_bound`/λ, 2·parts·c)."""
    return min(record_bound(parts, clip) / float(lam), 2.0 * parts * clip)
