"""What a sweep evaluates and what it returns: the grid of configurations, the rows'
columns, the folds, and the summary per grid point (SPEC §5).

Privacy role: none of its own. The rows hold test-fold metrics and leaf diagnostics read
from the raw data: NOT private (only the models are); :func:`summarise` averages them.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from sklearn.model_selection import RepeatedStratifiedKFold

from dpviz.evaluation.metrics import BASELINE_METRICS
from dpviz.models.forest.estimator import (
    AUTO_TREES,
)
from dpviz.models.forest.ledger import build_ledger
from dpviz.models.forest.sizing import SPLIT_CHOICES, resolve_split
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import check_rule
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import get_mechanism, valid_epsilon
from dpviz.tabular.encode import EncodedData

METRICS = ("accuracy", "auc", "f1", "macro_f1")
# Each fold's trivial baseline (always the training majority, metrics.majority_score),
# one column per metric on every row: ``majority_accuracy``, ``majority_f1``, ...
BASELINE_COLUMNS = tuple(f"majority_{m}" for m in BASELINE_METRICS)
DIAGNOSTICS = (
    "empty_leaf_pct",
    "flipped_leaf_pct",
    "expected_flip_pct",
    "mean_smooth_sensitivity",
    "fit_seconds",
)
# How a forest point's ε is split before its leaves (its ledger's other entries): a noisy
# record count, the split histograms and the class prior, as its fold model spent them.
BUDGET_COLUMNS = (
    "count_epsilon",
    "split_epsilon",
    "prior_epsilon",
    "check_epsilon",
    "threshold_epsilon",
)
GRID_KEYS = (
    "series",
    "algorithm",
    "mechanism",
    "epsilon",
    "n_estimators",
    "depth_rule",
    "data_split",
)
MIN_FOLDS, MAX_FOLDS = 2, 20
FLETCHER_ISLAM = "fletcher_islam"
SERIES_DP = "dp_forest"
SERIES_NONPRIVATE = "nonprivate_forest"
SERIES_SKLEARN = "sklearn_random_forest"
SERIES_HGB = "sklearn_hist_gradient_boosting"
# The non-private references a sweep can add, each computed once per fold (not per ε):
# the ε = ∞ forest of each forest-family structure, scikit-learn's random forest, and
# HistGradientBoosting (only when an algorithm whose registry reference it is runs).
REFERENCE_SERIES = (SERIES_NONPRIVATE, SERIES_SKLEARN, SERIES_HGB)


# A grid's structure and mechanism lists default to the registry's forest.
_FOREST_DEFAULTS = get_algorithm("fletcher_islam").defaults()


class SweepCancelled(Exception):
    """The user stopped the sweep; no partial result is returned."""


# A curve needs a few ε per decade; thousands only multiply the work and the output.
MAX_EPSILONS = 200

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class SweepGrid:
    """The configurations a sweep evaluates, every combination of the lists."""

    epsilons: Sequence[float]
    n_estimators: Sequence[int] = (_FOREST_DEFAULTS["n_estimators"],)
    depths: Sequence[str | int] = (_FOREST_DEFAULTS["depth"],)
    mechanisms: Sequence[str] = (_FOREST_DEFAULTS["mechanism"],)
    data_splits: Sequence[str] = ("disjoint",)
    references: bool | Collection[str] = True
    algorithms: Sequence[str] = ("fletcher_islam",)
    presets: Mapping[str, Mapping] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """The structure lists apply to fletcher_islam; every other algorithm runs its
        registry defaults, overridden by ``presets[algorithm]``. ``references`` is True
        (every reference that applies), False (none) or a collection of
        ``REFERENCE_SERIES``; it is stored as a frozenset."""
        if len(self.algorithms) == 0:
            raise ValueError("the sweep's algorithms list is empty")
        object.__setattr__(self, "algorithms", tuple(dict.fromkeys(self.algorithms)))
        object.__setattr__(self, "references", _reference_set(self.references))
        for name in self.algorithms:
            algorithm = get_algorithm(name)
            preset = dict(self.presets.get(name, {}))
            algorithm.make(1.0, **preset)
        for name in ("epsilons", "n_estimators", "depths", "mechanisms", "data_splits"):
            values = getattr(self, name)
            if len(values) == 0:
                raise ValueError(f"the sweep's {name.replace('_', ' ')} list is empty")
            object.__setattr__(self, name, tuple(values))
        if len(self.epsilons) > MAX_EPSILONS:
            raise ValueError(
                f"the sweep has {len(self.epsilons):,} ε values; at most {MAX_EPSILONS} "
                "are swept at once (a curve needs a few per decade)"
            )
        for eps in self.epsilons:
            valid_epsilon(eps)
        for trees in self.n_estimators:
            if trees == AUTO_TREES:
                continue
            if isinstance(trees, bool) or not isinstance(trees, int | np.integer) or trees < 1:
                raise ValueError(f"tree counts must be whole numbers ≥ 1 or 'auto', got {trees!r}")
        for depth in self.depths:
            check_rule(depth)
        for mech in self.mechanisms:
            get_mechanism(mech)
        for split in self.data_splits:
            if split not in SPLIT_CHOICES:
                raise ValueError(
                    f"data split must be one of {', '.join(SPLIT_CHOICES)}, got {split!r}"
                )

    def wants(self, series: str) -> bool:
        """Whether the sweep adds the reference ``series`` (one of REFERENCE_SERIES)."""
        if series == SERIES_HGB:
            return series in self.references and any(
                get_algorithm(a).reference == SERIES_HGB for a in self.algorithms
            )
        return series in self.references

    @property
    def structures(self) -> list[tuple[int, str | int, str]]:
        return list(itertools.product(self.n_estimators, self.depths, self.data_splits))

    @property
    def n_points(self) -> int:
        others = len(self.algorithms) - (FLETCHER_ISLAM in self.algorithms)
        per_eps = len(self.structures) * len(self.mechanisms) * (FLETCHER_ISLAM in self.algorithms)
        return (per_eps + others) * len(self.epsilons)


def _reference_set(references) -> frozenset[str]:
    if isinstance(references, bool | np.bool_):
        return frozenset(REFERENCE_SERIES) if references else frozenset()
    if isinstance(references, str):
        references = (references,)
    chosen = frozenset(references)
    unknown = chosen - set(REFERENCE_SERIES)
    if unknown:
        raise ValueError(
            f"unknown reference {sorted(unknown)[0]!r}; choose from {', '.join(REFERENCE_SERIES)}"
        )
    return chosen


@dataclass
class SweepResult:
    """One row per grid point × repeat × fold, and mean/std per grid point."""

    results: pd.DataFrame
    summary: pd.DataFrame = field(init=False)

    def __post_init__(self) -> None:
        self.summary = summarise(self.results)


def reference_costs(results: pd.DataFrame) -> dict[str, str]:
    """What each non-private reference of a sweep's rows was and what it cost, one line
    per series: e.g. ``"10 trees, bootstrap of 2,500, 0.38 s over 5 fits"``."""
    out = {}
    for series, rows in results[results["series"].isin(REFERENCE_SERIES)].groupby("series"):
        trees = sorted({int(t) for t in rows["n_estimators"]})
        splits = ", ".join(sorted({str(s) for s in rows["data_split"]}))
        out[str(series)] = (
            f"{'/'.join(map(str, trees))} trees, {splits}, "
            f"{rows['fit_seconds'].sum():.2f} s over {len(rows)} fits"
        )
    return out


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation of each metric per grid point; means of diagnostics.

    With the trivial baseline's columns (``majority_<metric>``) their mean and std too
    (``majority_<metric>_mean``, ``majority_<metric>_std``), and with the ``one_class``
    flag the share of runs in which the model predicted a single class
    (``one_class_share``); with the ``floored`` flag the share of the runs whose floor
    test ran (``floor_runs``) in which it fell back (``floor_share``). Columns a results
    frame lacks are left out.
    """
    keys = [k for k in GRID_KEYS if k in results.columns]
    grouped = results.groupby(keys, dropna=False, sort=False)
    scored = [c for c in (*METRICS, *BASELINE_COLUMNS) if c in results.columns]
    summary = grouped[scored].agg(["mean", "std"])
    summary.columns = [f"{m}_{stat}" for m, stat in summary.columns]
    if "one_class" in results.columns:
        # As floats: rows from an older results frame (concatenated) may lack the flag.
        flags = results[keys].assign(one_class=results["one_class"].astype(float))
        summary["one_class_share"] = flags.groupby(keys, dropna=False, sort=False)[
            "one_class"
        ].mean()
    if "floored" in results.columns:
        # Over the runs whose floor test ran (NaN: none ran in any).
        flags = results[keys].assign(floored=results["floored"].astype(float))
        by_point = flags.groupby(keys, dropna=False, sort=False)["floored"]
        summary["floor_share"] = by_point.mean()
        summary["floor_runs"] = by_point.count()
    budget = [c for c in BUDGET_COLUMNS if c in results.columns]
    extra = grouped[[*DIAGNOSTICS, "depth", *budget]].mean()
    if "records_split" in results.columns:
        # How the point's trees read the records ("auto" resolved at its ε): its ledger.
        extra["records_split"] = grouped["records_split"].first()
    extra["private"] = grouped["private"].all()
    extra["n_runs"] = grouped.size()
    return summary.join(extra).reset_index()


def fold_splits(y: np.ndarray, folds: int, repeats: int, seed: int):
    if not MIN_FOLDS <= folds <= MAX_FOLDS:
        raise ValueError(f"folds must be between {MIN_FOLDS} and {MAX_FOLDS}, got {folds}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    present = np.bincount(y)
    if np.count_nonzero(present) < 2:
        raise ValueError("the data holds only one class; a classifier needs at least two")
    if len(y) < 2 * folds:
        raise ValueError(f"{len(y)} records are too few for {folds} folds; lower the folds")
    splitter = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    # A class rarer than the fold count (Nursery's 2 'recommend' records) is spread over
    # as many folds as it has records; scikit-learn warns and carries on, and so do we.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="The least populated class", category=UserWarning
        )
        return list(splitter.split(np.zeros(len(y)), y))


def subset(encoded: EncodedData, rows: np.ndarray) -> EncodedData:
    return EncodedData(
        encoded.continuous[rows],
        encoded.discrete[rows],
        encoded.y[rows],
        encoded.report,
    )


def declare_fold_size(model, n_records: int) -> None:
    """Declare a training fold's record count public for a forest whose depth rule
    (``jpw``, ``records``) or tree count (``"auto"``) reads it, unless a count was
    declared already.

    A sweep grows a fold's trees once for every ε; a noisy count would be drawn at one
    ε and reused at the others, so the structure would depend on ε. An evaluated
    point's ledger therefore omits that count (5% of ε); a release without a declared
    count pays it."""
    reads = getattr(model, "reads_record_count", None)
    if reads is not None and reads() and not model.declared_n:
        model.set_params(declared_n=int(n_records))


def _fractions(votes: np.ndarray) -> np.ndarray:
    """Each record's votes over their total (1/k each where a record has none)."""
    k = votes.shape[1] if votes.ndim == 2 else 0
    if 0 < k < 8 and votes.dtype == np.float64:
        # The row totals column by column, left to right: what numpy's row sum adds for
        # fewer than 8 columns (pairwise summation starts at 8), the same bits, a
        # sixth of the time on (10,000, 2) votes, paid at every sweep point.
        total = np.zeros(len(votes))  # as numpy's short sum, from +0.0
        for c in range(k):
            total += votes[:, c]
        if (total > 0).all():
            return votes / total[:, None]
        total = total[:, None]
    else:
        total = votes.sum(axis=1, keepdims=True)
    return np.divide(votes, total, out=np.full_like(votes, 1.0 / votes.shape[1]), where=total > 0)


def row_ledger(
    row: Mapping, epsilon: float, *, schema_inferred: bool, replayable: bool = False
) -> PrivacyLedger:
    """A forest point's ledger from its row (a fold's, or a summary's): its mechanism, tree
    count, how its trees read the records and what it spent before the leaves
    (:data:`BUDGET_COLUMNS`; absent or NaN: nothing, as in sweeps saved before they
    existed). Public numbers only."""
    spent = {c: _zero(row.get(c, 0.0)) for c in BUDGET_COLUMNS}
    spent["depth_count_epsilon"] = spent.pop("count_epsilon")  # build_ledger's name
    return build_ledger(
        str(row["mechanism"]),
        float(epsilon),
        int(row["n_estimators"]),
        _records_split(row, epsilon),
        schema_inferred=schema_inferred,
        replayable=replayable,
        **spent,
    )


def _records_split(row: Mapping, epsilon: float) -> str:
    """How a forest point's trees read the records: its row's ``records_split``, or
    resolved from its ``data_split`` (a point the sweep did not run; "auto" trees that
    share the records from ε = 5 come in two halves)."""
    split = row.get("records_split")
    if isinstance(split, str):
        return split
    resolved = resolve_split(str(row["data_split"]), row["n_estimators"], float(epsilon))
    return "halves" if row["data_split"] == "auto" and resolved == "shared" else resolved


def _zero(value) -> float:
    """A budget column's value, 0 where absent (NaN)."""
    value = float(value)
    return 0.0 if np.isnan(value) else value
