"""The exact privacy-loss map: the worst-case loss of every 2-class leaf (count A, count B)
on a grid against its add/remove-one neighbours, and what it shows in words.

Exact output laws of toy counts (no records read): public. A mechanism is ε-DP exactly
when no cell exceeds ε; ``smooth_em``'s loss grows without bound with the gap j.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpviz.evaluation.teach.mechanism_playground import mechanism_label
from dpviz.privacy.audit import AUDIT_TOLERANCE, privacy_loss
from dpviz.privacy.mechanisms import gap, get_mechanism, valid_epsilon

MAX_GRID_COUNT = 60
# smooth_em's 1/Δ = e^(jε) is clipped at e^700 in dpviz.privacy.mechanisms; past that point the
# exact loss can no longer be computed, so the heatmap refuses such grids.
_SMOOTH_EM_MAX_EXPONENT = 700.0


# --- privacy-loss heatmap -----------------------------------------------------------------

_NEIGHBOURS = (
    ("add_a", 0, +1, "add one A record"),
    ("remove_a", 0, -1, "remove one A record"),
    ("add_b", 1, +1, "add one B record"),
    ("remove_b", 1, -1, "remove one B record"),
)


@dataclass(frozen=True)
class LossGrid:
    """Exact worst-case privacy loss of a 2-class leaf over a grid of counts.

    Attributes
    ----------
    mechanism, epsilon, max_count
        The inputs.
    cells : DataFrame
        One row per (count_a, count_b) in {0..max_count}²: ``gap_j``; ``loss_add_a``,
        ``loss_remove_a``, ``loss_add_b``, ``loss_remove_b`` (loss against that
        neighbour, NaN where a count of 0 cannot lose a record); ``loss`` (the worst of
        the four); ``worst_neighbour`` (which one, in words); ``above`` (loss > ε).
    private : bool
        Whether the mechanism has a proof of ε-DP.
    explanation : str
        What the map shows, in words.
    """

    mechanism: str
    epsilon: float
    max_count: int
    cells: pd.DataFrame = field(repr=False)
    private: bool
    explanation: str

    @property
    def matrix(self) -> pd.DataFrame:
        """The ``loss`` column as a matrix: rows count_b, columns count_a."""
        return self.cells.pivot(index="count_b", columns="count_a", values="loss")

    @property
    def max_loss(self) -> float:
        return float(self.cells["loss"].max())

    @property
    def n_above(self) -> int:
        return int(self.cells["above"].sum())

    def loss_between(self, counts: tuple[int, int], neighbour: tuple[int, int]) -> float:
        """The loss of one cell against one of its neighbours, read from the grid."""
        diff = (neighbour[0] - counts[0], neighbour[1] - counts[1])
        for name, axis, step, _ in _NEIGHBOURS:
            want = (step, 0) if axis == 0 else (0, step)
            if diff == want:
                row = self.cells[
                    (self.cells["count_a"] == counts[0]) & (self.cells["count_b"] == counts[1])
                ]
                if row.empty:
                    raise ValueError(f"{counts} is outside the grid")
                return float(row[f"loss_{name}"].iloc[0])
        raise ValueError("neighbouring count pairs differ by exactly one record")


def privacy_loss_grid(mechanism: str, epsilon: float, max_count: int = 10) -> LossGrid:
    """Exact worst-case privacy loss of every 2-class leaf (count A, count B) on a grid.

    For each cell f = (a, b) and each add/remove-one neighbour f' (a ± 1, b) or
    (a, b ± 1), the loss is the largest |ln P(o | f) − ln P(o | f')| over released
    labels o, from the exact output law (:func:`dpviz.privacy.audit.privacy_loss`); the cell
    shows the worst of its neighbours. A mechanism is ε-DP exactly when no cell
    exceeds ε. ``laplace_counts`` releases the noisy count vector, whose density ratio
    between neighbours is at most e^ε and reaches it, so its loss is exactly ε
    everywhere.

    For ``smooth_em`` at ε = 1 the loss between gaps j = 2 and j = 1 is 2.13 and
    between j = 4 and j = 3 it is 17.3: it grows without bound with j.

    Parameters
    ----------
    mechanism : str
        Mechanism id.
    epsilon : float
        Leaf budget, > 0.
    max_count : int, default=10
        The grid is {0, …, max_count}² (at most 60).

    Returns
    -------
    LossGrid

    Notes
    -----
    Exact output laws of toy counts: no data read.
    """
    mech = get_mechanism(mechanism)
    epsilon = valid_epsilon(epsilon)
    if isinstance(max_count, bool) or not isinstance(max_count, int | np.integer):
        raise ValueError(f"max_count must be a whole number, got {max_count!r}")
    if not 1 <= max_count <= MAX_GRID_COUNT:
        raise ValueError(f"max_count must be between 1 and {MAX_GRID_COUNT}, got {max_count}")
    if mech.id == "smooth_em" and (max_count + 1) * epsilon > _SMOOTH_EM_MAX_EXPONENT:
        raise ValueError(
            f"smooth_em's probabilities underflow past j·ε = {_SMOOTH_EM_MAX_EXPONENT:g}; "
            f"lower max_count below {int(_SMOOTH_EM_MAX_EXPONENT / epsilon) - 1} or ε"
        )
    a, b = np.meshgrid(np.arange(max_count + 1), np.arange(max_count + 1), indexing="ij")
    cells = np.stack([a.ravel(), b.ravel()], axis=1)
    frame = pd.DataFrame({"count_a": cells[:, 0], "count_b": cells[:, 1]})
    frame["gap_j"] = gap(cells)
    losses = []
    for name, axis, step, _ in _NEIGHBOURS:
        other = cells.copy()
        other[:, axis] += step
        valid = other[:, axis] >= 0
        loss = np.full(len(cells), np.nan)
        if mech.releases == "counts":
            loss[valid] = epsilon
        else:
            log_p = mech.log_probabilities(cells[valid], epsilon)
            log_q = mech.log_probabilities(other[valid], epsilon)
            loss[valid] = privacy_loss(log_p, log_q)
        frame[f"loss_{name}"] = loss
        losses.append(loss)
    stacked = np.stack(losses, axis=1)
    filled = np.where(np.isnan(stacked), -np.inf, stacked)
    worst = np.argmax(filled, axis=1)
    frame["loss"] = filled[np.arange(len(cells)), worst]
    frame["worst_neighbour"] = np.asarray([n[3] for n in _NEIGHBOURS], dtype=object)[worst]
    frame["above"] = frame["loss"] > epsilon + AUDIT_TOLERANCE
    grid = LossGrid(
        mechanism=mech.id,
        epsilon=epsilon,
        max_count=int(max_count),
        cells=frame,
        private=mech.private,
        explanation="",
    )
    object.__setattr__(grid, "explanation", _loss_explanation(grid))
    return grid


def _loss_explanation(grid: LossGrid) -> str:
    cells = grid.cells
    worst = cells.loc[cells["loss"].idxmax()]
    where = f"(A = {int(worst['count_a'])}, B = {int(worst['count_b'])})"
    loss = "unbounded (∞)" if math.isinf(worst["loss"]) else f"{worst['loss']:.3g}"
    text = (
        f"Each cell is a leaf with those class counts; its number is the largest privacy loss "
        f"against a neighbouring leaf one record away (ln of how much more likely one of them "
        f"makes some released label). ε-DP promises at most ε = {grid.epsilon:g}. "
    )
    if grid.n_above == 0:
        text += (
            f"{mechanism_label(grid.mechanism)} keeps every cell within it (worst {loss} at "
            f"{where})."
        )
        if grid.mechanism == "laplace_counts":
            text += (
                " laplace_counts releases the noisy counts themselves, whose loss is exactly "
                "ε for every pair of neighbours."
            )
    else:
        text += (
            f"{mechanism_label(grid.mechanism)} breaks it in {grid.n_above:,} of "
            f"{len(cells):,} cells; the worst is {loss} at {where}, {worst['worst_neighbour']}."
        )
        if grid.mechanism == "smooth_em":
            text += (
                " The loss grows with the gap j: the noise scale e^(−jε) is itself computed "
                "from the data, so one record more or less changes how much noise is added."
            )
        elif grid.mechanism == "none":
            text += " Releasing the true majority is not private at all: ε = ∞."
    return text
