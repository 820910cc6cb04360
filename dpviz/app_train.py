"""What the Train page does: the choices it offers, one training run, and its results.

A run cross-validates the DP forest beside the non-private references (metrics from the
test folds: NOT private), then fits one forest on all records: that is the released
model (downloadable as JSON), and its ``ledger_`` states the privacy guarantee in words.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .algorithms import ALGORITHMS, get_algorithm
from .app_support import PreparedData
from .app_sweep import Progress, epsilon_ladder, run_with_references, sweep_jobs
from .data import encode
from .depth import DEPTH_RULES, resolve_depth
from .figures import METRICS, mechanism_label, scores_bar_figure
from .forest import DPRandomForestClassifier
from .mechanisms import MECHANISMS
from .model_io import MAX_EXPORT_NODES, ReleasedForest
from .schema import PrivacyLeakWarning, Schema
from .sweep import SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN, SweepResult
from .treeviz import leaf_totals

EPSILON_MIN, EPSILON_MAX = 0.01, 10.0
FIXED_DEPTH = "fixed"
DEPTH_CHOICES = (*DEPTH_RULES, FIXED_DEPTH)
DATA_SPLIT_HELP = {
    "disjoint": "each tree reads its own disjoint part of the records and spends all of ε "
    "(parallel composition)",
    "shared": "every tree reads all records and spends ε / trees (sequential composition)",
}


@dataclass(frozen=True)
class AlgorithmChoice:
    """An algorithm the Train page offers: id, name, a one-line description, its default
    trees and depth rule, and the settings it fixes (which the page then shows, not asks)."""

    id: str
    name: str
    description: str
    defaults: dict
    fixed: dict


# What the Train page can set; an algorithm that lacks one of these parameters fixes it.
_PAGE_SETTINGS = ("mechanism", "data_split")


def algorithm_choices() -> dict[str, AlgorithmChoice]:
    """The algorithms the app offers, read from the registry: the forest family, whose
    models the Trees and Leaves pages can draw (greedy trees and DPBoost are available
    in the CLI and the Python API)."""
    choices = {}
    for algorithm in ALGORITHMS.values():
        if not algorithm.forest_family:
            continue
        model = algorithm.make(1.0)
        own = {p.name for p in algorithm.parameters}
        choices[algorithm.id] = AlgorithmChoice(
            algorithm.id,
            algorithm.name,
            algorithm.description,
            algorithm.defaults(),
            {name: getattr(model, name) for name in _PAGE_SETTINGS if name not in own},
        )
    return choices


def mechanism_option(mechanism: str) -> str:
    """A mechanism as a select option, with its privacy badge."""
    return f"{mechanism} — {MECHANISMS[mechanism].name}  [{MECHANISMS[mechanism].badge}]"


def epsilon_grid() -> list[float]:
    """Slider stops from 0.01 to 10, evenly spaced on a log scale (1–1.5–2–3–5–7)."""
    return epsilon_ladder(EPSILON_MIN, EPSILON_MAX, 6)


def nearest_epsilon(value: float) -> float:
    """The slider stop nearest to ``value`` on a log scale."""
    grid = np.asarray(epsilon_grid())
    clipped = min(max(float(value), EPSILON_MIN), EPSILON_MAX)
    return float(grid[np.argmin(np.abs(np.log(grid) - math.log(clipped)))])


def branching(schema: Schema) -> list[int]:
    return [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]


@dataclass(frozen=True)
class DepthPreview:
    """The depth a rule gives for a dataset, and a sentence explaining it."""

    depth: int
    text: str
    private_note: str | None = None


def depth_preview(
    schema: Schema, rule: str | int, n_records: int, n_estimators: int, data_split: str
) -> DepthPreview:
    """Resolve the depth rule and say what it means for the leaves (``ValueError`` for a
    bad rule). The record count used here is the data owner's view, not released."""
    s, r = len(schema.continuous), len(schema.discrete)
    depth = resolve_depth(rule, s, r, n_records=n_records, branching=branching(schema))
    per_tree = n_records // max(1, n_estimators) if data_split == "disjoint" else n_records
    parts = [f"Depth {depth} ({rule}: {s} continuous, {r} discrete features)."]
    if r == 0:
        leaves = 2.0**depth
        parts.append(
            f"Each tree has {leaves:,.0f} leaves for about {per_tree:,} records"
            + (", so most leaves will be empty." if leaves > per_tree else ".")
        )
    else:
        parts.append(f"Each tree sees about {per_tree:,} records.")
    note = None
    if rule == "jpw":
        note = (
            "The jpw rule reads the number of records, which is itself private: the ledger "
            "notes that this depth is not covered by ε."
        )
    return DepthPreview(depth, " ".join(parts), note)


@dataclass(frozen=True)
class TrainSettings:
    """Everything the Train page asks for."""

    mechanism: str = "permute_flip"
    epsilon: float = 1.0
    n_estimators: int = 100
    depth: str | int = "theorem2"
    data_split: str = "disjoint"
    seed: int = 0
    folds: int = 3
    sklearn_reference: bool = True
    algorithm: str = "fletcher_islam"

    def __post_init__(self) -> None:
        choices = algorithm_choices()
        if self.algorithm not in choices:
            raise ValueError(f"unknown algorithm {self.algorithm!r}")
        for name, value in choices[self.algorithm].fixed.items():
            if getattr(self, name) != value:
                raise ValueError(f"{self.algorithm} fixes {name} = {value!r}")
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r}")


@dataclass
class TrainRun:
    """One training run: CV metrics of the DP forest and the references (NOT private),
    and the forest fitted on all records (the released model, with its ledger)."""

    dataset: str
    fingerprint: tuple
    settings: TrainSettings
    sweep: SweepResult
    model: DPRandomForestClassifier
    n_records: int
    seconds: float
    encoding_messages: list[str] = field(default_factory=list)

    # --- metrics ------------------------------------------------------------------------

    def row(self, series: str) -> pd.Series | None:
        """The summary row of a series (dp_forest, nonprivate_forest, sklearn_...)."""
        rows = self.sweep.summary[self.sweep.summary["series"] == series]
        return None if rows.empty else rows.iloc[0]

    def metric_text(self, series: str, metric: str) -> tuple[str, str | None]:
        """Card texts (value, delta) of a metric: mean ± std over the folds in %, and
        for the DP forest the change from the non-private forest in points."""
        row = self.row(series)
        if row is None:
            return "—", None
        mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
        std = 0.0 if pd.isna(std) else std
        value = f"{100 * mean:.1f}% ± {100 * std:.1f}"
        reference = self.row(SERIES_NONPRIVATE)
        if series != SERIES_DP or reference is None:
            return value, None
        delta = 100 * (mean - reference[f"{metric}_mean"])
        return value, f"{delta:+.1f} pts vs non-private forest"

    @property
    def series(self) -> list[str]:
        """The series this run evaluated, DP forest first."""
        present = set(self.sweep.summary["series"])
        return [s for s in (SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN) if s in present]

    def scores_figure(self) -> go.Figure:
        order = {s: i for i, s in enumerate(self.series)}
        rows = self.sweep.summary.sort_values("series", key=lambda s: s.map(order))
        return scores_bar_figure(rows, folds=self.settings.folds)

    def metrics_csv(self) -> str:
        """Mean and std per series and metric, with the settings: a CSV text."""
        columns = ["series", "mechanism", "epsilon", "n_estimators", "depth_rule", "depth"]
        columns += [f"{m}_{stat}" for m, _ in METRICS for stat in ("mean", "std")]
        columns += ["data_split", "private", "n_runs"]
        summary = self.sweep.summary
        return summary[[c for c in columns if c in summary.columns]].to_csv(index=False)

    # --- the released model -------------------------------------------------------------

    @property
    def private(self) -> bool:
        return bool(self.model.ledger_.private)

    @property
    def privacy_summary(self) -> str:
        """The released model's guarantee in words, from its ledger."""
        return self.model.ledger_.describe()

    @cached_property
    def export_problem(self) -> str | None:
        """Why the model cannot be exported (too many leaves to list), or None."""
        leaves = float(self.model.diagnostics_["n_leaves_total"])
        if 2 * leaves <= MAX_EXPORT_NODES:
            return None  # a tree has fewer internal nodes than leaves
        if leaves <= MAX_EXPORT_NODES:
            try:
                self.__dict__["model_json"] = ReleasedForest.from_estimator(self.model).to_json()
                return None
            except ValueError as exc:
                return str(exc)
        return (
            f"cannot export: the forest has about {leaves:,.0f} leaves, more than the "
            f"{MAX_EXPORT_NODES:,} nodes an export may list. An export must list every leaf "
            "so that its shape does not depend on the data; lower the depth or the number "
            "of trees to export it."
        )

    @cached_property
    def model_json(self) -> str:
        """The released model as JSON: structure and leaf outputs only, no data."""
        return ReleasedForest.from_estimator(self.model).to_json()

    @cached_property
    def released(self) -> ReleasedForest | None:
        """The released model object (None if too large to list)."""
        if self.export_problem is not None:
            return None
        return ReleasedForest.from_estimator(self.model)

    # --- leaf diagnostics (NOT private) ------------------------------------------------

    @cached_property
    def leaf_table(self) -> pd.DataFrame:
        """``model.leaf_table()``, computed once: NOT private."""
        return self.model.leaf_table()

    @cached_property
    def leaf_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Leaves per tree and whether each count is exact (structure only, public);
        computed once, since counting discrete-heavy trees takes a moment."""
        return leaf_totals(self.model)

    def diagnostics(self) -> dict[str, str]:
        """Forest diagnostics as card texts, from one forest on all records: NOT private."""
        d = self.model.diagnostics_
        empty = d["empty_leaf_pct"]
        total = f"{d['n_leaves_total']:,.0f}" + ("" if d["n_leaves_total_exact"] else " (est.)")
        return {
            "Leaves in the forest": total,
            "Leaves with records": f"{d['n_leaves_nonempty']:,}",
            # e.g. 99.9987% at depth 22: never round a few non-empty leaves up to 100%
            "Empty leaves": f"{empty:.{1 if empty < 99.9 else 4}f}%",
            "Flipped leaves": f"{d['flipped_leaf_pct']:.1f}%",
            "Expected flips": f"{d['expected_flip_pct']:.1f}%",
            "Mean smooth sensitivity": f"{d['mean_smooth_sensitivity']:.3g}",
        }

    def describe(self) -> str:
        """One line for the sidebar."""
        s = self.settings
        acc, _ = self.metric_text(SERIES_DP, "accuracy")
        return (
            f"{mechanism_label(s.mechanism)} · ε = {s.epsilon:g} · {s.n_estimators} trees · "
            f"depth {self.model.depth_} · accuracy {acc}"
        )


def train(
    data: PreparedData, settings: TrainSettings, progress: Progress | None = None
) -> TrainRun:
    """Cross-validate the settings beside the references, then fit the released forest
    on all records. Raises ``ValueError`` with a message for the user."""
    say = progress or (lambda _f, _m: None)
    start = time.perf_counter()
    encoded = encode(data.frame, data.schema, training=True)
    s = settings
    sweep = run_with_references(
        encoded,
        data.schema,
        epsilons=[s.epsilon],
        n_estimators=[s.n_estimators],
        depths=[s.depth],
        mechanisms=[s.mechanism],
        data_splits=[s.data_split],
        sklearn=s.sklearn_reference,
        folds=s.folds,
        seed=s.seed,
        n_jobs=sweep_jobs(encoded.n_records, s.folds),
        progress=lambda f, m: say(0.9 * f, m),
    )
    say(0.9, "fitting the released forest on all records")
    with warnings.catch_warnings():
        # The inferred-schema warning is shown by the page and recorded in the ledger.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        choice = algorithm_choices()[s.algorithm]
        params = {"n_estimators": s.n_estimators, "depth": s.depth}
        params.update({k: getattr(s, k) for k in _PAGE_SETTINGS if k not in choice.fixed})
        model = (
            get_algorithm(s.algorithm)
            .make(s.epsilon, random_state=s.seed, **params)
            .fit_encoded(encoded, data.schema)
        )
    say(1.0, "done")
    return TrainRun(
        dataset=data.name,
        fingerprint=data.fingerprint,
        settings=settings,
        sweep=sweep,
        model=model,
        n_records=encoded.n_records,
        seconds=time.perf_counter() - start,
        encoding_messages=encoded.report.messages(),
    )
