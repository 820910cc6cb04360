"""Exact privacy audit of the leaf mechanisms (SPEC §3).

For a label mechanism M the audit computes its exact output distribution
P(o | f) on every count vector f of a grid and the worst privacy loss
|ln P(o | f) - ln P(o | f + e_c)| between add/remove-one neighbours. A mechanism
is ε-DP on the grid exactly when that worst loss is at most ε.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.privacy.mechanisms import get_mechanism, valid_epsilon

AUDIT_TOLERANCE = 1e-9
_MAX_GRID = 2_000_000


@dataclass(frozen=True)
class AuditResult:
    """Worst privacy loss found and the neighbouring counts that reach it."""

    mechanism: str
    epsilon: float
    max_privacy_loss: float
    worst_counts: tuple[tuple[int, ...], tuple[int, ...]]
    private: bool

    def to_dict(self) -> dict:
        loss = self.max_privacy_loss
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "max_privacy_loss": loss if np.isfinite(loss) else None,
            "unbounded": not np.isfinite(loss),
            "worst_counts": [list(c) for c in self.worst_counts],
            "private": self.private,
        }


def count_grid(n_classes: int, max_count: int) -> np.ndarray:
    """Every count vector in {0, ..., max_count}^n_classes, one per row."""
    if n_classes < 2:
        raise ValueError("the audit needs at least 2 classes")
    if max_count < 1:
        raise ValueError("the audit needs max_count of at least 1")
    if (max_count + 1) ** n_classes > _MAX_GRID:
        raise ValueError(
            f"a grid of {(max_count + 1) ** n_classes:,} count vectors is too large; "
            "lower max_count or the number of classes"
        )
    axes = np.indices((max_count + 1,) * n_classes)
    return axes.reshape(n_classes, -1).T


def privacy_loss(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """Worst |ln p(o) - ln q(o)| over outputs o, row by row (inf if supports differ)."""
    with np.errstate(invalid="ignore"):
        diff = np.abs(log_p - log_q)
    # Both -inf: the output is impossible under both, which costs no privacy.
    diff[np.isneginf(log_p) & np.isneginf(log_q)] = 0.0
    diff[np.isnan(diff)] = np.inf
    return diff.max(axis=-1)


def audit(mechanism: str, epsilon: float, n_classes: int = 2, max_count: int = 40) -> AuditResult:
    """Exact worst-case privacy loss of ``mechanism`` over all count vectors up to max_count.

    Label mechanisms are audited on their released label's exact distribution. For
    ``laplace_counts``, which releases counts, the loss is that of the Laplace density
    of the released vector, evaluated on a grid of outputs around each count vector.
    """
    epsilon = valid_epsilon(epsilon)
    mech = get_mechanism(mechanism)
    grid = count_grid(int(n_classes), int(max_count))
    index = np.ravel_multi_index(grid.T, (max_count + 1,) * n_classes)
    order = np.empty_like(index)
    order[index] = np.arange(len(index))
    if mech.releases == "counts":
        losses, pairs = _laplace_density_losses(grid, epsilon, max_count)
    else:
        log_probs = mech.log_probabilities(grid, epsilon)
        losses, pairs = [], []
        for c in range(n_classes):
            inside = np.flatnonzero(grid[:, c] < max_count)
            up = grid[inside].copy()
            up[:, c] += 1
            neighbour = order[np.ravel_multi_index(up.T, (max_count + 1,) * n_classes)]
            losses.append(privacy_loss(log_probs[inside], log_probs[neighbour]))
            pairs.append(np.stack([inside, neighbour], axis=1))
        losses, pairs = np.concatenate(losses), np.concatenate(pairs)
    worst = int(np.argmax(losses))
    a, b = pairs[worst]
    loss = float(losses[worst])
    return AuditResult(
        mechanism=mech.id,
        epsilon=epsilon,
        max_privacy_loss=loss,
        worst_counts=(tuple(int(v) for v in grid[a]), tuple(int(v) for v in grid[b])),
        private=bool(loss <= epsilon + AUDIT_TOLERANCE),
    )


def _laplace_density_losses(grid, epsilon, max_count):
    # Per coordinate the log-density ratio of Laplace(f, 1/ε) and Laplace(f + 1, 1/ε)
    # at output o is ε(|o - f - 1| - |o - f|); the other coordinates cancel.
    outputs = np.linspace(-2.0, max_count + 3.0, 4 * (max_count + 5) + 1)
    f = np.arange(max_count)
    ratio = epsilon * np.abs(
        np.abs(outputs[None, :] - f[:, None] - 1) - np.abs(outputs[None, :] - f[:, None])
    )
    per_count = ratio.max(axis=1)
    losses = per_count[np.minimum(grid[:, 0], max_count - 1)]
    inside = np.flatnonzero(grid[:, 0] < max_count)
    neighbour_rows = grid[inside].copy()
    neighbour_rows[:, 0] += 1
    index = np.ravel_multi_index(neighbour_rows.T, (max_count + 1,) * grid.shape[1])
    order = np.empty(len(grid), dtype=np.int64)
    order[np.ravel_multi_index(grid.T, (max_count + 1,) * grid.shape[1])] = np.arange(len(grid))
    pairs = np.stack([inside, order[index]], axis=1)
    return losses[inside], pairs


def pair_loss(mechanism: str, counts: list[int], neighbour: list[int], epsilon: float) -> float:
    """Exact privacy loss between two count vectors that differ by one record."""
    counts, neighbour = np.asarray([counts]), np.asarray([neighbour])
    if counts.shape != neighbour.shape or np.abs(counts - neighbour).sum() != 1:
        raise ValueError("neighbouring count vectors differ by exactly one record")
    mech = get_mechanism(mechanism)
    epsilon = valid_epsilon(epsilon)
    return float(
        privacy_loss(
            mech.log_probabilities(counts, epsilon), mech.log_probabilities(neighbour, epsilon)
        )[0]
    )
