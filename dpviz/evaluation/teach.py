"""Teaching material computed live: the paper's tables, a mechanism playground, the
exact privacy-loss map, the 2021 addendum in plain words, and one tree growing.

No streamlit here: every function returns plain data (DataFrames, dataclasses, text)
that a page renders and a unit test checks. Most inputs are toy class counts typed by
the user, not records; where a function reads real records (:func:`tree_walkthrough`)
its outputs say which parts are NOT private diagnostics.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.models.forest.estimator import DPRandomForestClassifier, feature_order
from dpviz.models.trees.full import build_full
from dpviz.privacy.audit import AUDIT_TOLERANCE, privacy_loss
from dpviz.privacy.mechanisms import MECHANISMS, _check_epsilon, gap, get_mechanism, is_majority
from dpviz.privacy.noise import StreamLeafNoise
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

# The paper's Table 2 (Fletcher & Islam 2017) and the addendum's Table 6 (2021).
TABLE2_GAPS = (0, 1, 5, 10, 50, 100, 500)
TABLE2_EPSILONS = (0.01, 0.1, 1.0)
TABLE6_PAIRS = ((5, 10), (105, 110), (0, 1), (0, 10), (10, 50), (10, 60))
TABLE6_EPSILON = 0.1
TABLE6_MECHANISMS = ("smooth_em", "count_em")
# Playground order: the non-private reference first, then from worst to best.
PLAYGROUND_MECHANISMS = (
    "none",
    "global_em",
    "smooth_em",
    "count_em",
    "permute_flip",
    "laplace_counts",
)
MIN_CLASSES, MAX_CLASSES = 2, 5
MAX_TOY_COUNT = 1_000_000
MAX_DRAWS = 1_000_000
MAX_GRID_COUNT = 60
# smooth_em's 1/Δ = e^(jε) is clipped at e^700 in dpviz.privacy.mechanisms; past that point the
# exact loss can no longer be computed, so the heatmap refuses such grids.
_SMOOTH_EM_MAX_EXPONENT = 700.0
CLASS_LETTERS = "ABCDE"


# --- Table 2 and Table 6 ------------------------------------------------------------------


def smooth_sensitivity_table(
    gaps: Sequence[int] = TABLE2_GAPS, epsilons: Sequence[float] = TABLE2_EPSILONS
) -> pd.DataFrame:
    """The paper's Table 2: smooth sensitivity e^(−jε) of the majority-label score.

    One row per gap j (top class count minus runner-up count), one column per ε named
    ``"ε = <value>"``. Computed with :func:`dpviz.privacy.mechanisms.smooth_sensitivity` on the
    2-class leaf (0, j).

    Notes
    -----
    A formula of toy counts: no data read. The mechanism it belongs to, ``smooth_em``,
    is NOT differentially private (withdrawn in 2021): the table shows what the 2017
    paper computed, not a safe noise level.
    """
    gaps = np.asarray(gaps, dtype=np.int64)
    if gaps.ndim != 1 or (gaps < 0).any():
        raise ValueError("gaps must be a list of whole numbers ≥ 0")
    table = pd.DataFrame({"j": gaps})
    counts = np.stack([np.zeros_like(gaps), gaps], axis=1)
    for eps in epsilons:
        eps = _check_epsilon(eps)
        # exp(−jε) directly: Table 2 reaches 7e-218, still a normal float64.
        table[f"ε = {eps:g}"] = np.exp(-gap(counts) * eps)
    return table


def majority_probability_table(
    pairs: Sequence[tuple[int, int]] = TABLE6_PAIRS,
    epsilon: float = TABLE6_EPSILON,
    mechanisms: Sequence[str] = TABLE6_MECHANISMS,
) -> pd.DataFrame:
    """The addendum's Table 6: Pr(B), in %, that a 2-class leaf releases B.

    One row per count pair (f_A, f_B); a column ``"P(B) <mechanism> (%)"`` per
    mechanism. The default compares ``smooth_em`` (2017, "original", NOT DP) with
    ``count_em`` (the addendum's corrected exponential mechanism, ε-DP); pass more
    mechanisms (e.g. ``permute_flip``) to extend it beyond the paper.

    Notes
    -----
    Exact output laws of toy counts: no data read.
    """
    epsilon = _check_epsilon(epsilon)
    counts = np.asarray(pairs, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] != 2 or (counts < 0).any():
        raise ValueError("pairs must be (f_A, f_B) pairs of whole numbers ≥ 0")
    table = pd.DataFrame({"f_A": counts[:, 0], "f_B": counts[:, 1], "gap_j": gap(counts)})
    for m in mechanisms:
        table[f"P(B) {m} (%)"] = 100.0 * get_mechanism(m).probabilities(counts, epsilon)[:, 1]
    return table


def printed_unit(text: str) -> float:
    """One unit of the last digit of a printed number: "0.99004" → 1e-5, "1.93e-22" →
    1e-24, "52.1" → 0.1."""
    match = re.fullmatch(r"\s*[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?\s*", str(text))
    if match is None or not (match.group(1) or match.group(2)):
        raise ValueError(f"{text!r} is not a printed number")
    decimals = len(match.group(2) or "")
    exponent = int(match.group(3) or 0)
    return 10.0 ** (exponent - decimals)


def compare_with_printed(reference_csv: str | Path) -> pd.DataFrame:
    """dpviz's live Table 2 and Table 6 next to the values the papers print.

    ``reference_csv`` is ``shared/reference/mechanism_tables.csv`` (columns table,
    j_or_counts, epsilon, quantity, value). Printed values are rounded or truncated,
    so a value agrees when it is within one unit of the last printed digit.

    Returns
    -------
    DataFrame
        table, j_or_counts, epsilon, quantity, printed (the text), computed, unit,
        difference_in_units, agrees.
    """
    path = Path(reference_csv)
    if not path.exists():
        raise ValueError(f"reference table {str(path)!r} does not exist")
    printed = pd.read_csv(path, dtype=str)
    computed, units = [], []
    for row in printed.itertuples(index=False):
        eps = float(row.epsilon)
        if row.table == "Table2":
            value = float(np.exp(-int(row.j_or_counts) * eps))
        elif row.table == "Table6":
            pair = dict(part.split("=") for part in row.j_or_counts.split(";"))
            counts = np.array([[int(pair["fA"]), int(pair["fB"])]])
            mech = re.fullmatch(r"P\(B\)_(\w+?)_pct", row.quantity)
            if mech is None:
                raise ValueError(f"unknown Table 6 quantity {row.quantity!r}")
            value = 100.0 * float(get_mechanism(mech.group(1)).probabilities(counts, eps)[0, 1])
        else:
            raise ValueError(f"unknown reference table {row.table!r}")
        computed.append(value)
        units.append(printed_unit(row.value))
    out = printed.rename(columns={"value": "printed"})
    out["computed"] = computed
    out["unit"] = units
    out["difference_in_units"] = (out["computed"] - out["printed"].astype(float)).abs() / out[
        "unit"
    ]
    # A hair of slack: 0.5 units can print as 1 unit after binary rounding.
    out["agrees"] = out["difference_in_units"] <= 1.0 + 1e-9
    return out


# --- mechanism playground -----------------------------------------------------------------


def _check_counts(counts: Sequence[int]) -> np.ndarray:
    try:
        values = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"class counts must be whole numbers, got {counts!r}") from None
    if values.ndim != 1 or not MIN_CLASSES <= len(values) <= MAX_CLASSES:
        raise ValueError(
            f"give between {MIN_CLASSES} and {MAX_CLASSES} class counts, one per class "
            f"(got {values.size})"
        )
    if not np.isfinite(values).all() or (values < 0).any() or (values != np.round(values)).any():
        raise ValueError(f"class counts must be whole numbers ≥ 0 (records), got {counts!r}")
    if (values > MAX_TOY_COUNT).any():
        raise ValueError(f"class counts above {MAX_TOY_COUNT:,} are not supported here")
    return values.astype(np.int64)


def _class_names(class_names: Sequence[str] | None, k: int) -> tuple[str, ...]:
    if class_names is None:
        return tuple(CLASS_LETTERS[:k])
    names = tuple(str(c) for c in class_names)
    if len(names) != k or len(set(names)) != k:
        raise ValueError(f"give {k} distinct class names, one per count")
    return names


def _mechanisms(mechanisms: Sequence[str] | None) -> tuple[str, ...]:
    chosen = PLAYGROUND_MECHANISMS if mechanisms is None else tuple(mechanisms)
    if not chosen:
        raise ValueError("choose at least one mechanism")
    for m in chosen:
        get_mechanism(m)
    return chosen


def gap_explanation(
    counts: Sequence[int], epsilon: float, class_names: Sequence[str] | None = None
) -> str:
    """What the gap j and the smooth sensitivity e^(−jε) of these counts mean, in words."""
    values = _check_counts(counts)
    epsilon = _check_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    order = np.argsort(-values, kind="stable")
    top, second = order[0], order[1]
    j = int(values[top] - values[second])
    sens = math.exp(-j * epsilon)
    if j == 0:
        lead = (
            f"The top classes are tied ({names[top]} and {names[second]}, "
            f"{values[top]} records each), so the gap is j = 0"
        )
    else:
        lead = (
            f"The top class {names[top]} ({values[top]} records) leads the runner-up "
            f"{names[second]} ({values[second]}) by j = {j} record{'s' if j != 1 else ''}"
        )
    return (
        f"{lead}. The 2017 mechanism (smooth_em) took the smooth sensitivity e^(−jε) = "
        f"e^(−{j} × {epsilon:g}) = {sens:.3g} as its noise scale: the bigger the lead, the "
        "less noise. But j is computed from the data, and removing or adding one record "
        "changes j by one, which changes the noise itself. That is why smooth_em is NOT "
        "differentially private (see the privacy-loss map)."
    )


@dataclass(frozen=True)
class Playground:
    """Exact output laws of the label mechanisms for one leaf's toy counts.

    Attributes
    ----------
    counts, epsilon, class_names
        The inputs.
    probabilities : DataFrame
        Long format, one row per (mechanism, class): ``mechanism``, ``label`` (id and
        badge, e.g. "smooth_em (NOT DP)"), ``private``, ``releases``, ``class``,
        ``class_index``, ``probability``, ``is_majority``. For ``laplace_counts`` the
        probability is that of its noisy argmax (it releases the noisy counts).
    gap : int
        j = top count − runner-up count.
    smooth_sensitivity : float
        e^(−jε).
    explanation : str
        :func:`gap_explanation`.
    """

    counts: tuple[int, ...]
    epsilon: float
    class_names: tuple[str, ...]
    probabilities: pd.DataFrame = field(repr=False)
    gap: int
    smooth_sensitivity: float
    explanation: str

    def wide(self) -> pd.DataFrame:
        """One row per mechanism, one column per class: the exact probabilities."""
        table = self.probabilities.pivot(index="label", columns="class", values="probability")
        order = list(dict.fromkeys(self.probabilities["label"]))
        return table.loc[order, list(self.class_names)]


def mechanism_label(mechanism: str) -> str:
    """Mechanism id with its privacy badge, e.g. ``"smooth_em (NOT DP)"``."""
    return f"{mechanism} ({MECHANISMS[mechanism].badge})"


def playground(
    counts: Sequence[int],
    epsilon: float,
    mechanisms: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
) -> Playground:
    """Exact probability that each mechanism releases each class, for one leaf.

    Parameters
    ----------
    counts : list of int
        2 to 5 class counts (records of each class in the leaf).
    epsilon : float
        The leaf's budget, > 0.
    mechanisms : list of str, optional
        Default: every mechanism, ``none`` first.
    class_names : list of str, optional
        Default "A", "B", ….

    Returns
    -------
    Playground

    Notes
    -----
    Exact output laws (closed form or exact quadrature) of toy counts: no data read.
    ``smooth_em`` and ``none`` are NOT differentially private and are labelled so.
    """
    values = _check_counts(counts)
    epsilon = _check_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    chosen = _mechanisms(mechanisms)
    majority = is_majority(values)
    rows = []
    for m in chosen:
        mech = MECHANISMS[m]
        probs = mech.probabilities(values[None, :], epsilon)[0]
        for c, name in enumerate(names):
            rows.append(
                {
                    "mechanism": m,
                    "label": mechanism_label(m),
                    "private": mech.private,
                    "releases": mech.releases,
                    "class": name,
                    "class_index": c,
                    "probability": float(probs[c]),
                    "is_majority": bool(majority[c]),
                }
            )
    j = int(gap(values))
    return Playground(
        counts=tuple(int(v) for v in values),
        epsilon=epsilon,
        class_names=names,
        probabilities=pd.DataFrame(rows),
        gap=j,
        smooth_sensitivity=math.exp(-j * epsilon),
        explanation=gap_explanation(values, epsilon, names),
    )


def empirical_frequencies(
    counts: Sequence[int],
    epsilon: float,
    n_draws: int = 1000,
    seed: int = 0,
    mechanisms: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Release the leaf ``n_draws`` times per mechanism and count what came out.

    Each mechanism's noise comes from its own child of ``np.random.SeedSequence(seed)``
    (keyed by its place in the registry), so a mechanism's draws do not change when
    others are added or removed; the same seed gives the same frequencies.

    Returns
    -------
    DataFrame
        One row per (mechanism, class): ``mechanism``, ``label``, ``class``,
        ``class_index``, ``draws``, ``hits``, ``frequency`` (= hits / draws).

    Notes
    -----
    Simulated releases of toy counts: no data read.
    """
    values = _check_counts(counts)
    epsilon = _check_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    chosen = _mechanisms(mechanisms)
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer):
        raise ValueError(f"n_draws must be a whole number, got {n_draws!r}")
    if not 1 <= n_draws <= MAX_DRAWS:
        raise ValueError(f"n_draws must be between 1 and {MAX_DRAWS:,}, got {n_draws}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
    registry = list(MECHANISMS)
    children = np.random.SeedSequence(int(seed)).spawn(len(registry))
    k = len(values)
    tiled = np.tile(values, (int(n_draws), 1))
    rows = []
    for m in chosen:
        rng = np.random.default_rng(children[registry.index(m)])
        labels, _ = MECHANISMS[m].release(tiled, epsilon, StreamLeafNoise(rng, len(tiled)))
        hits = np.bincount(np.asarray(labels, dtype=np.int64), minlength=k)
        for c, name in enumerate(names):
            rows.append(
                {
                    "mechanism": m,
                    "label": mechanism_label(m),
                    "class": name,
                    "class_index": c,
                    "draws": int(n_draws),
                    "hits": int(hits[c]),
                    "frequency": hits[c] / n_draws,
                }
            )
    return pd.DataFrame(rows)


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
    epsilon = _check_epsilon(epsilon)
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


ADDENDUM_STORY = (
    "In 2017 Fletcher and Islam published a differentially private random forest whose "
    "leaves chose their label with the exponential mechanism, scaled by a 'smooth "
    "sensitivity' e^(−jε) that shrinks as the majority class's lead j grows: leaves with a "
    "clear winner got almost no noise, which made the forest very accurate. In August 2021, "
    "while the method was being added to IBM's diffprivlib library, Naoise Holohan pointed "
    "out that smooth sensitivity cannot simply replace the usual worst-case sensitivity in "
    "the exponential mechanism: no proof covered it, and he could build examples that break "
    "the guarantee. Fletcher agreed in an addendum the same month, withdrew the mechanism, "
    "and replaced it with one that is proven private: score each class by its count, with "
    "sensitivity 1 (P(c) ∝ e^(ε·f_c), here count_em), or equivalently add one-sided "
    "exponential noise to each count and report the largest ('report one-sided noisy "
    "arg-max', here permute_flip). His Table 6 shows the correction is often even more "
    "accurate. The addendum guessed the true cost might be about twice the stated ε; "
    "dpviz's exact audit shows it is worse: the loss has no bound at all, growing with j "
    "(at ε = 1, 2.13 between gaps 2 and 1, 17.3 between gaps 4 and 3), because the amount "
    "of noise itself depends on the data."
)


def addendum_story() -> str:
    """The story of the 2021 addendum in one plain-words paragraph."""
    return ADDENDUM_STORY


# --- a tree grows -------------------------------------------------------------------------


def tiny_demo(n_records: int = 40, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A tiny generated dataset for the tree walk-through: hours studied and slept (each
    0–10, public ranges of a day's hours) and whether an exam was passed.

    Generated, not collected: the schema is public because a generator made the records.
    The rule is "passed" when studied + 0.5·slept > 6.5, with 10% of labels flipped.
    """
    if isinstance(n_records, bool) or not isinstance(n_records, int) or n_records < 4:
        raise ValueError(f"n_records must be a whole number ≥ 4, got {n_records!r}")
    rng = np.random.default_rng(seed)
    studied = np.round(rng.uniform(0, 10, n_records), 1)
    slept = np.round(rng.uniform(3, 10, n_records), 1)
    passed = studied + 0.5 * slept > 6.5
    passed ^= rng.random(n_records) < 0.1
    frame = pd.DataFrame(
        {
            "hours_studied": studied,
            "hours_slept": slept,
            "passed": np.where(passed, "yes", "no"),
        }
    )
    schema = Schema(
        label="passed",
        classes=("no", "yes"),
        features=(
            Feature("hours_studied", "continuous", 0.0, 10.0),
            Feature("hours_slept", "continuous", 0.0, 10.0),
        ),
    )
    return frame, schema


@dataclass(frozen=True)
class WalkStep:
    """One click of the tree walk-through.

    ``table`` is what to show; ``highlight`` the node ids to emphasise; ``not_private``
    lists the table columns that are diagnostics from the raw data (NOT private: for the
    data owner, never released); ``reads_data`` says whether this step touches records.
    """

    number: int
    title: str
    text: str
    table: pd.DataFrame
    highlight: tuple[int, ...] = ()
    not_private: tuple[str, ...] = ()
    reads_data: bool = True


@dataclass(frozen=True)
class TreeWalkthrough:
    """One small random tree, step by step (see :func:`tree_walkthrough`).

    ``nodes`` has one row per node of the full tree: ``node``, ``parent`` (-1 for the
    root), ``depth``, ``edge`` (the condition leading into the node), ``split`` (the
    node's own test, or "leaf"), ``is_leaf``, ``x``, ``y`` (a drawing layout: leaves
    evenly spaced, parents centred over their children, y = −depth), and for leaves
    ``n_records``, one ``count[<class>]`` per class, ``gap_j``, ``released_label``,
    ``true_majority``, ``flip_probability`` (NOT private), plus ``on_test_path``.
    """

    nodes: pd.DataFrame
    steps: tuple[WalkStep, ...]
    classes: tuple[str, ...]
    test_record: dict
    test_leaf: int | None
    prediction: str | None
    vote_fractions: dict[str, float]
    epsilon: float
    mechanism: str
    depth: int
    ledger: str


def _node_table(model: DPRandomForestClassifier, max_nodes: int) -> pd.DataFrame:
    try:
        full = build_full(model.space_, model.root_keys_, max_nodes)
    except ValueError:
        raise ValueError(
            f"this tree has more than {max_nodes} nodes, too many to draw step by step; "
            "lower the depth (or use fewer discrete features)"
        ) from None
    n = len(full.key)
    parent = np.full(n, -1, dtype=np.int64)
    child_index = np.full(n, -1, dtype=np.int64)
    for i in np.flatnonzero(full.n_children > 0):
        kids = np.arange(full.first_child[i], full.first_child[i] + full.n_children[i])
        parent[kids] = i
        child_index[kids] = np.arange(len(kids))
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):  # breadth first: a parent comes before its children
        if parent[i] >= 0:
            depth[i] = depth[parent[i]] + 1
    names = feature_order(model.schema_)
    s = model.space_.n_continuous
    values = [f.values for f in model.schema_.discrete]

    def split_text(f: int, t: float) -> str:
        if f < 0:
            return "leaf"
        return f"{names[f]} < {t:.3g} ?" if f < s else f"{names[f]} = ?"

    def edge_text(i: int) -> str:
        p = parent[i]
        if p < 0:
            return "(root)"
        f, t, c = int(full.feature[p]), float(full.threshold[p]), int(child_index[i])
        if f < s:
            return f"{names[f]} {'≥' if c == 1 else '<'} {t:.3g}"
        return f"{names[f]} = {values[f - s][c]}"

    # Layout: leaves left to right in depth-first order, parents over their children.
    x = np.zeros(n)
    next_leaf = 0
    stack = [0]
    order = []
    while stack:
        i = stack.pop()
        order.append(i)
        if full.n_children[i] == 0:
            x[i] = next_leaf
            next_leaf += 1
        else:
            stack.extend(
                range(full.first_child[i] + full.n_children[i] - 1, full.first_child[i] - 1, -1)
            )
    for i in reversed(order):
        if full.n_children[i] > 0:
            kids = np.arange(full.first_child[i], full.first_child[i] + full.n_children[i])
            x[i] = x[kids].mean()
    return pd.DataFrame(
        {
            "node": np.arange(n),
            "parent": parent,
            "depth": depth,
            "edge": [edge_text(i) for i in range(n)],
            "split": [split_text(int(f), float(t)) for f, t in zip(full.feature, full.threshold)],
            "is_leaf": full.n_children == 0,
            "x": x,
            "y": -depth.astype(np.float64),
            "key": full.key,
        }
    )


def _path_to_root(nodes: pd.DataFrame, leaf: int) -> tuple[int, ...]:
    parent = nodes["parent"].to_numpy()
    path = [leaf]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    return tuple(reversed(path))


def tree_walkthrough(
    frame: pd.DataFrame,
    schema: Schema,
    *,
    depth: int = 2,
    epsilon: float = 1.0,
    mechanism: str = "permute_flip",
    random_state: int = 0,
    test_row: int = -1,
    max_nodes: int = 63,
    noise_seed: int | None = None,
) -> TreeWalkthrough:
    """Grow one random tree on ``frame`` in four steps a page can show one click at a time.

    1. The structure is drawn from the public schema and the seed alone.
    2. The training records (all rows but ``test_row``) fall into the leaves.
    3. Each leaf releases a label through ``mechanism`` with budget ``epsilon``.
    4. The held-out ``test_row`` walks down the tree and collects the leaf's vote.

    Uses :class:`dpviz.models.forest.estimator.DPRandomForestClassifier` with ``n_estimators=1``.

    Parameters
    ----------
    frame : DataFrame
        Records with the schema's feature columns and label (see :func:`tiny_demo`).
    schema : Schema
        The public schema.
    depth : int, default=2
        Tree depth (small: the whole tree is listed).
    epsilon : float, default=1.0
    mechanism : str, default="permute_flip"
    random_state : int, default=0
        The public seed of the structure.
    test_row : int, default=-1
        Position of the record held out as the test record.
    max_nodes : int, default=63
        Refuse trees with more nodes than this (too many to draw).
    noise_seed : int or None, default=None
        Replay the leaf noise (NOT private); None draws fresh secret noise.

    Returns
    -------
    TreeWalkthrough

    Notes
    -----
    Privacy: the structure (step 1) and the released labels (step 3) are what the model
    publishes and are ε-DP for a proven mechanism with a public schema. The leaf counts,
    true majorities and flip probabilities (steps 2–3) are diagnostics from the raw
    records: NOT private, marked in each step's ``not_private``. The test record (step 4)
    is a record of the data itself.
    """
    if not isinstance(frame, pd.DataFrame) or len(frame) < 2:
        raise ValueError("the walk-through needs a table of at least 2 records")
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 1:
        raise ValueError(f"depth must be a whole number ≥ 1, got {depth!r}")
    if not -len(frame) <= test_row < len(frame):
        raise ValueError(f"test_row {test_row} is outside the {len(frame)} records")
    position = test_row % len(frame)
    test = frame.iloc[[position]]
    train = frame.drop(index=frame.index[position])
    model = DPRandomForestClassifier(
        epsilon=epsilon,
        n_estimators=1,
        depth=int(depth),
        mechanism=mechanism,
        data_split="disjoint",
        random_state=random_state,
        noise_seed=noise_seed,
        prior_share=0.0,  # one tree's vote, as the paper's forest casts it
        split_points="uniform",  # the paper's thresholds: uniform in the public domain
    )
    model.fit_encoded(encode(train, schema), schema)
    nodes = _node_table(model, max_nodes)
    classes = tuple(str(c) for c in schema.classes)
    k = len(classes)
    leaf_rows = np.flatnonzero(nodes["is_leaf"].to_numpy())
    keys = nodes["key"].to_numpy()[leaf_rows].astype(np.uint64)
    pos = np.minimum(np.searchsorted(model.leaf_keys_, keys), max(len(model.leaf_keys_) - 1, 0))
    trained = (len(model.leaf_keys_) > 0) & (model.leaf_keys_[pos] == keys)
    counts = np.zeros((len(leaf_rows), k), dtype=np.int64)
    counts[trained] = model.leaf_counts_[pos[trained]]
    # Every leaf's released label, empty ones included (the mechanism on all-zero counts),
    # exactly as the model's predictions use them.
    released = model.released_outputs(keys).labels
    mech = get_mechanism(mechanism)
    names = np.asarray(classes, dtype=object)
    leaf_info = pd.DataFrame(
        {
            "node": leaf_rows,
            "n_records": counts.sum(axis=1),
            **{f"count[{c}]": counts[:, i] for i, c in enumerate(classes)},
            "gap_j": gap(counts),
            "released_label": names[released],
            "true_majority": np.where(
                counts.sum(axis=1) > 0, names[np.argmax(counts, axis=1)], "(empty)"
            ),
            # An empty leaf has no majority to flip: left blank rather than 0.
            "flip_probability": np.where(
                counts.sum(axis=1) > 0, mech.flip_probability(counts, model.tree_epsilon_), np.nan
            ),
        }
    )
    nodes = nodes.merge(leaf_info, on="node", how="left")
    # Inner nodes have no counts: nullable integers keep the leaves' counts whole.
    int_cols = ["n_records", *(f"count[{c}]" for c in classes), "gap_j"]
    nodes[int_cols] = nodes[int_cols].astype("Int64")

    # Step 4: the held-out record walks down.
    encoded_test = encode(test, schema, training=False)
    routed = model.route_records(encoded_test)
    test_leaf = None
    if len(routed.pair_leaf):
        leaf_key = routed.leaf_keys[routed.pair_leaf[0]]
        hit = np.flatnonzero(nodes["key"].to_numpy().astype(np.uint64) == leaf_key)
        test_leaf = int(hit[0]) if len(hit) else None
    path = _path_to_root(nodes, test_leaf) if test_leaf is not None else ()
    nodes["on_test_path"] = nodes["node"].isin(path)
    fractions = model.predict_proba(test[schema.feature_names])[0]
    prediction = classes[int(np.argmax(fractions))] if test_leaf is not None else None
    record = {c: _plain(v) for c, v in test.iloc[0].items()}
    nodes = nodes.drop(columns="key")
    steps = _walk_steps(nodes, classes, record, path, prediction, schema, model)
    return TreeWalkthrough(
        nodes=nodes,
        steps=steps,
        classes=classes,
        test_record=record,
        test_leaf=test_leaf,
        prediction=prediction,
        vote_fractions={c: float(v) for c, v in zip(classes, fractions)},
        epsilon=float(epsilon),
        mechanism=mechanism,
        depth=int(model.depth_),
        ledger=model.ledger_.describe(),
    )


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _walk_steps(nodes, classes, record, path, prediction, schema, model) -> tuple[WalkStep, ...]:
    leaves = nodes[nodes["is_leaf"]]
    count_cols = [f"count[{c}]" for c in classes]
    n_leaves, n_empty = len(leaves), int((leaves["n_records"] == 0).sum())
    mech = get_mechanism(model.mechanism)
    structure = WalkStep(
        1,
        "The structure is drawn without looking at the data",
        f"Each inner node picks a feature at random and, for a number, a split point "
        f"uniformly inside that feature's public range. Only the schema (the columns, their "
        f"ranges, the class list) and a random seed are used, never a record, so showing this "
        f"tree reveals nothing about anyone. Depth {model.depth_}: {n_leaves} leaves.",
        nodes[["node", "depth", "edge", "split", "is_leaf"]].reset_index(drop=True),
        reads_data=False,
    )
    fall = WalkStep(
        2,
        "The training records fall into the leaves",
        f"Every training record follows the tests from the root down to one leaf; each leaf "
        f"counts its records per class. {n_empty} of {n_leaves} leaves received no record. "
        "These true counts are NOT private: they never leave the data owner's machine.",
        leaves[["node", "edge", "n_records", *count_cols, "gap_j"]].reset_index(drop=True),
        not_private=("n_records", *count_cols, "gap_j"),
    )
    eps_leaf = model.tree_epsilon_
    release = WalkStep(
        3,
        "Each leaf releases a noisy label",
        f"Each leaf hands its counts to {mechanism_label(model.mechanism)} with ε = "
        f"{eps_leaf:g}, which releases one label: usually the majority, sometimes another "
        "class, at random. The released labels (with the structure) are the whole model; "
        "the true majority and the chance that the noise flipped it are shown only to teach "
        "and are NOT private. Empty leaves release a label drawn uniformly at random."
        + ("" if mech.private else f" {model.mechanism} is NOT differentially private."),
        leaves[
            ["node", "edge", *count_cols, "released_label", "true_majority", "flip_probability"]
        ].reset_index(drop=True),
        not_private=(*count_cols, "true_majority", "flip_probability"),
    )
    if path:
        leaf = nodes.loc[path[-1]]
        route = " → ".join(nodes.loc[list(path[1:]), "edge"]) or "(the root is a leaf)"
        shown = ", ".join(f"{k} = {v}" for k, v in record.items() if k != schema.label)
        label = record.get(schema.label)
        recorded = f" (its recorded label is {label!r})" if label is not None else ""
        text = (
            f"A record the tree never saw ({shown}) "
            f"follows {route} to leaf {int(leaf['node'])}, which votes "
            f"{leaf['released_label']!r}. With one tree that vote is the prediction: "
            f"{prediction!r}{recorded}. A forest asks many trees and takes the majority vote. The "
            "prediction uses only released labels, so it is as private as the model."
        )
    else:
        text = (
            "The test record has a value the schema does not list, so the tree abstains "
            "and there is no vote."
        )
    test_table = nodes.loc[list(path), ["node", "depth", "edge", "split"]].reset_index(drop=True)
    vote = WalkStep(4, "A test record collects votes", text, test_table, highlight=tuple(path))
    return (structure, fall, release, vote)
