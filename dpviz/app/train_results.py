"""A training run's results, as two small parts that ``dpviz.app.train.TrainRun`` builds
from its fields and answers through (the parts never import the run):

- :class:`ScoreCards`: what the score cards show — each series' mean ± std over the
  held-out folds, the change from the model's non-private reference (the cost of
  privacy) and from the trivial baseline (whether it learnt anything), and which metrics
  the cards show;
- :class:`ScoreReport`: the score cards and what is said and drawn around them — the
  one-class and rare-class warnings, the scores chart and the metrics CSV;
- :class:`ReleasedModel`: the model fitted on all records — its guarantee from its
  ledger, its export as JSON, and its leaf diagnostics (NOT private).

Scores come from the test folds and are NOT private.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.app import models as app_models
from dpviz.evaluation.sweep import (
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepResult,
)
from dpviz.figures.common import (
    MACRO_F1,
    METRICS,
    NOT_DP_PATTERN,
    RARE_CLASS_SHARE,
    majority_mean,
    scores_bar_figure,
)
from dpviz.figures.tree_layout import leaf_totals
from dpviz.models.files.load import MAX_EXPORT_NODES, Released, check_public_schema, release
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.objective import describe_cut
from dpviz.models.registry import Algorithm, get_algorithm
from dpviz.models.trees.floor import FloorOutcome
from dpviz.privacy.signing import signing_key
from dpviz.tabular.outputs import csv_text

REFERENCE_NAMES = {
    SERIES_NONPRIVATE: "non-private forest (NOT DP)",
    SERIES_SKLEARN: "scikit-learn random forest (NOT DP)",
    SERIES_HGB: "scikit-learn HistGradientBoosting (NOT DP)",
}
REFERENCE_SHORT = {
    SERIES_NONPRIVATE: "non-private forest",
    SERIES_SKLEARN: "scikit-learn random forest",
    SERIES_HGB: "HistGradientBoosting",
}
HGB_COLOR = "#F0E442"  # Okabe–Ito yellow: no mechanism or other reference uses it


def short_name(algorithm: Algorithm) -> str:
    """What the cards call the model: "DP forest" for the forest family, else the head
    of the registry name ("DPBoost", "Greedy DP decision tree")."""
    if algorithm.forest_family:
        return "DP forest"
    return algorithm.name.split(":")[0].split(" (")[0].strip()


@dataclass(frozen=True)
class MetricCard:
    """What one score card shows: ``value``, ``delta`` (its arrow and colour follow the
    sign), a ``description`` under it and the delta's ``color`` ("normal" or "red")."""

    value: str
    delta: str | None = None
    description: str | None = None
    color: str = "normal"


@dataclass(frozen=True, eq=False)
class ScoreCards:
    """What the score cards of a run show, from its cross-validation summary.

    ``algorithm_id`` is the registry id of the run's algorithm, ``folds`` its number of
    folds; ``classes`` and ``class_counts`` are the public class names and how many
    records hold each (a count from the raw data: NOT private).
    """

    algorithm_id: str
    folds: int
    sweep: SweepResult
    classes: tuple[str, ...] = ()
    class_counts: tuple[int, ...] = ()

    @property
    def algorithm(self) -> Algorithm:
        return get_algorithm(self.algorithm_id)

    @property
    def model_label(self) -> str:
        """What the cards call the model: "DP forest", "DPBoost", ..."""
        return short_name(self.algorithm)

    def row(self, series: str) -> pd.Series | None:
        """The summary row of a series (dp_forest, nonprivate_forest, sklearn_...)."""
        rows = self.sweep.summary[self.sweep.summary["series"] == series]
        return None if rows.empty else rows.iloc[0]

    @property
    def reference_series(self) -> str | None:
        """The algorithm's own non-private reference, if this run evaluated it."""
        reference = self.algorithm.reference
        return reference if self.row(reference) is not None else None

    def metric_text(self, series: str, metric: str) -> tuple[str, str | None]:
        """Card texts (value, delta) of a metric: mean ± std over the folds in %, and
        for the DP model the change from its non-private reference in points."""
        row = self.row(series)
        if row is None:
            return "—", None
        mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
        std = 0.0 if pd.isna(std) else std
        value = "—" if pd.isna(mean) else f"{100 * mean:.1f}% ± {100 * std:.1f}"
        reference = self.reference_series
        if series != SERIES_DP or reference is None or pd.isna(mean):
            return value, None
        delta = 100 * (mean - self.row(reference)[f"{metric}_mean"])
        return value, f"{delta:+.1f} pts vs {REFERENCE_SHORT.get(reference, reference)}"

    def majority_text(self, metric: str) -> str:
        """Card text of the trivial baseline (always the training majority class): mean ±
        std over the same folds in %, "—" when the run has no baseline."""
        row = self.row(SERIES_DP)
        column = f"majority_{metric}_mean"
        if row is None or column not in row.index or pd.isna(row[column]):
            return "—"
        std = row.get(f"majority_{metric}_std", 0.0)
        std = 0.0 if pd.isna(std) else std
        return f"{100 * row[column]:.1f}% ± {100 * std:.1f}"

    def versus_majority(self, metric: str) -> tuple[float, bool] | None:
        """(the DP model's lead over the trivial baseline in points, whether that lead
        counts as none), or None when the run has no baseline for ``metric``. No lead:
        not above it at one decimal, or a single class predicted in every fold."""
        row = self.row(SERIES_DP)
        if row is None:
            return None
        baseline = majority_mean(row.to_frame().T, metric)
        mean = row[f"{metric}_mean"]
        if baseline is None or pd.isna(mean):
            return None
        versus = 100 * (float(mean) - baseline)
        always_one = float(row.get("one_class_share", 0.0) or 0.0) >= 1.0
        return versus, round(versus, 1) <= 0 or always_one

    def metric_card(self, metric: str) -> MetricCard:
        """The DP model's card of a metric: its value, the change from its non-private
        reference (the cost of privacy) and from the trivial baseline (whether it learnt
        anything). The delta is red whenever the model does not beat always answering the
        majority class, or predicts a single class in every fold: such a model must
        never look good, whatever it loses to its reference."""
        value, delta = self.metric_text(SERIES_DP, metric)
        versus = self.versus_majority(metric)
        if versus is None:
            return MetricCard(value, delta)
        majority = f"{_points(versus[0])} pts vs majority class"
        color = "red" if versus[1] else "normal"
        if delta is None:
            return MetricCard(value, majority, None, color)
        return MetricCard(value, delta, majority, color)

    def majority_card(self, metric: str) -> MetricCard | None:
        """The trivial baseline's card of a metric: its value and, as its delta, how far
        the DP model is above it (red when it is not). None without a baseline."""
        versus = self.versus_majority(metric)
        if versus is None:
            return None
        delta = f"{_points(versus[0])} pts for the {self.model_label}"
        return MetricCard(
            self.majority_text(metric), delta, None, "red" if versus[1] else "normal"
        )

    @property
    def smallest_class(self) -> tuple[str, float] | None:
        """The rarest class and its share of the records (from the raw data: NOT
        private), or None when the run does not know the counts."""
        if not self.class_counts or sum(self.class_counts) == 0:
            return None
        i = int(np.argmin(self.class_counts))
        name = self.classes[i] if i < len(self.classes) else str(i)
        return name, self.class_counts[i] / sum(self.class_counts)

    @property
    def rare_class(self) -> bool:
        """Whether the smallest class is under ``RARE_CLASS_SHARE`` of the records."""
        smallest = self.smallest_class
        return smallest is not None and smallest[1] < RARE_CLASS_SHARE

    def card_metrics(self) -> list[tuple[str, str]]:
        """The metrics the cards show, in order: macro F1 joins beside accuracy when the
        labels are binary and the smallest class is rare (with more classes, F1 already
        is the macro average)."""
        metrics = list(METRICS)
        if self.rare_class and len(self.class_counts) == 2:
            metrics.insert(1, MACRO_F1)
        return metrics

    @property
    def series(self) -> list[str]:
        """The series this run evaluated, the DP model first."""
        present = set(self.sweep.summary["series"])
        order = (SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN, SERIES_HGB)
        return [s for s in order if s in present]

    def series_name(self, series: str) -> str:
        if series == SERIES_DP:
            return self.model_label
        return REFERENCE_NAMES.get(series, series)


@dataclass(frozen=True, eq=False)
class ScoreReport(ScoreCards):
    """A run's score cards and the warnings, chart and CSV around them."""

    def one_class_folds(self, series: str = SERIES_DP) -> tuple[int, int, list[str]]:
        """(folds in which ``series`` predicted one class only, its folds, the classes it
        then predicted) from the per-fold results."""
        results = self.sweep.results
        rows = results[results["series"] == series]
        if "one_class" not in rows.columns or rows.empty:
            return 0, len(rows), []
        hit = rows[rows["one_class"].astype(bool)]
        found = sorted({int(c) for c in hit.get("only_class", ()) if c >= 0})
        names = [self.classes[c] if c < len(self.classes) else str(c) for c in found]
        return len(hit), len(rows), names

    def one_class_warning(self) -> str | None:
        """A plain warning when the DP model predicted a single class in some fold, or
        None: such a model is no better than always answering the majority class."""
        hit, total, names = self.one_class_folds()
        if hit == 0:
            return None
        text = (
            f"The {self.model_label} predicts only class {_which(names)} {_where(hit, total)}: "
            "no better than always answering the majority class"
        )
        baseline = self.majority_text("accuracy")
        if baseline != "—":
            text += f" ({baseline.split(' ±')[0]} accuracy"
            if len(self.classes) == 2:
                text += f", F1 {self.majority_text('f1').split(' ±')[0]}"
            text += ")"
        text += (
            ". Its accuracy there only repeats the class shares: judge it by F1, ROC AUC or "
            "macro F1."
        )
        for series in self.series[1:]:
            ref_hit, ref_total, ref_names = self.one_class_folds(series)
            if ref_hit:
                text += (
                    f" The {REFERENCE_SHORT.get(series, series)} also predicts only class "
                    f"{_which(ref_names)} {_where(ref_hit, ref_total)}, so matching it "
                    "proves nothing."
                )
        return text

    def floor_folds_note(self) -> str | None:
        """Where the DP model's floor test fell back in some fold (its ``floored`` flag),
        what that means; None when it never did or never ran."""
        rows = self.sweep.results
        rows = rows[rows["series"] == SERIES_DP]
        if "floored" not in rows.columns:
            return None
        ran = rows["floored"].dropna()
        hit = int((ran > 0).sum())
        if hit == 0:
            return None
        return (
            f"In {hit} of {len(ran)} folds the {self.model_label}'s trees did not pass its "
            "floor test: there it answered its fall-back (the released class prior) instead "
            "of trees it could not tell from noise, so its accuracy there is the prior's, "
            "while ROC AUC still ranks by the trees."
        )

    def rare_class_note(self) -> str | None:
        """Why macro F1 is shown, or None when no class is rare."""
        if not self.rare_class:
            return None
        name, share = self.smallest_class
        text = (
            f"The smallest class, '{name}', is {100 * share:.1f}% of the records (a count "
            "from the raw data: not private). Accuracy alone flatters a model that ignores "
            "it: always answering the majority class scores "
            f"{self.majority_text('accuracy').split(' ±')[0]}."
        )
        if len(self.class_counts) == 2:
            return text + " Macro F1, the mean of both classes' F1, is shown beside accuracy."
        return text + " F1 here is the macro average over the classes."

    def scores_figure(self) -> go.Figure:
        order = {s: i for i, s in enumerate(self.series)}
        rows = self.sweep.summary[self.sweep.summary["series"].isin(order)]
        rows = rows.sort_values("series", key=lambda s: s.map(order)).reset_index(drop=True)
        fig = scores_bar_figure(rows, folds=self.folds, metrics=self.card_metrics())
        for trace, row in zip(fig.data, rows.itertuples(index=False)):
            if row.series == SERIES_DP and not self.algorithm.forest_family:
                name = f"{self.model_label} ({self.algorithm.id}), ε = {row.epsilon:g}"
                _rename(trace, name)
                if not bool(row.private):
                    trace.marker.pattern.shape = NOT_DP_PATTERN
            elif row.series == SERIES_HGB:
                _rename(trace, REFERENCE_NAMES[SERIES_HGB])
                trace.marker.color = HGB_COLOR
                trace.marker.pattern.shape = NOT_DP_PATTERN
                trace.marker.pattern.fgcolor = "#000000"
                trace.textfont.color = "#000000"
        return fig

    def metrics_csv(self) -> str:
        """Mean and std per series and metric, with the settings: a CSV text."""
        columns = ["series", "algorithm", "mechanism", "epsilon", "n_estimators"]
        columns += ["depth_rule", "depth"]
        metrics = [m for m, _ in METRICS] + [MACRO_F1[0]]
        columns += [f"{m}_{stat}" for m in metrics for stat in ("mean", "std")]
        columns += [f"majority_{m}_{stat}" for m in metrics for stat in ("mean", "std")]
        columns += ["one_class_share", "data_split", "private", "n_runs"]
        summary = self.sweep.summary
        order = {s: i for i, s in enumerate(self.series)}
        summary = summary.sort_values("series", key=lambda s: s.map(order), kind="stable")
        return csv_text(summary[[c for c in columns if c in summary.columns]])


@dataclass(eq=False)
class ReleasedModel:
    """The model a run fitted on all records: its guarantee, its export, its leaves.

    ``algorithm_id`` is the registry id the model was made from (its export names it).
    """

    algorithm_id: str
    model: Any

    @property
    def private(self) -> bool:
        return bool(self.model.ledger_.private)

    @property
    def privacy_summary(self) -> str:
        """The released model's guarantee in words, from its ledger (the model's
        ``privacy_ledger``), with the schema declaration the data owner accepted."""
        text = self.model.ledger_.describe()
        declaration = getattr(self.model.schema_, "declaration", "")
        return f"{text} Schema: {declaration}" if declaration else text

    @cached_property
    def floor(self) -> FloorOutcome | None:
        """What the released model's floor test decided (its ``floor_outcome``), or None
        where the model runs none. Public: post-processing of the release."""
        outcome = getattr(self.model, "floor_outcome", None)
        return outcome() if outcome is not None else None

    @cached_property
    def decision(self) -> str | None:
        """How the released model's two-class ``predict`` cuts class 1's score, where it
        does not take the plain argmax (:func:`~dpviz.models.objective.describe_cut`), or
        None."""
        text = describe_cut(self.model)
        return None if text is None else f"**Decision of the released model.** {text}"

    @cached_property
    def export_problem(self) -> str | None:
        """Why the model cannot be exported (a schema inferred from the data, whose
        values the file would list; too many nodes to list), or None."""
        try:
            check_public_schema(self.model.schema_)
            signing_key()  # the download is signed: a damaged key is said here, not raised
        except ValueError as exc:
            return str(exc)
        if isinstance(self.model, DPRandomForestClassifier):
            leaves = float(self.model.diagnostics_["n_leaves_total"])
            if 2 * leaves <= MAX_EXPORT_NODES:
                return None  # a tree has fewer internal nodes than leaves
            if leaves > MAX_EXPORT_NODES:
                return (
                    f"cannot export: the forest has about {leaves:,.0f} leaves, more than "
                    f"the {MAX_EXPORT_NODES:,} nodes an export may list. An export must "
                    "list every leaf so that its shape does not depend on the data; lower "
                    "the depth or the number of trees to export it."
                )
        try:
            self.__dict__["released"] = release(self.model, self.algorithm_id)
        except ValueError as exc:
            return str(exc)
        return None

    @cached_property
    def released(self) -> Released | None:
        """The released model object (None if too large to list)."""
        if self.export_problem is not None:
            return None
        return release(self.model, self.algorithm_id)

    @cached_property
    def model_json(self) -> str:
        """The released model as JSON: structure and leaf outputs only, no data."""
        released = self.released
        if released is None:
            raise ValueError(self.export_problem)
        return released.to_json()

    @cached_property
    def leaf_table(self) -> pd.DataFrame:
        """The model's per-leaf table, computed once: NOT private."""
        return app_models.leaf_table(self.model)

    @cached_property
    def leaf_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Leaves per tree and whether each count is exact (structure only, public);
        computed once, since counting discrete-heavy trees takes a moment."""
        if isinstance(self.model, DPRandomForestClassifier):
            return leaf_totals(self.model)
        return app_models.leaf_totals(self.model)


def _points(value: float) -> str:
    """A change in points with its sign, never "-0.0" (a red arrow for no change)."""
    return f"{0.0 if round(value, 1) == 0 else value:+.1f}"


def _which(names: list[str]) -> str:
    return " or ".join(f"'{n}'" for n in names) or "one class"


def _where(hit: int, total: int) -> str:
    return "in every fold" if hit == total else f"in {hit} of {total} folds"


def _rename(trace, name: str) -> None:
    """A bar trace's legend name and the name in its hover text."""
    old = trace.name
    trace.name = name
    if trace.hovertemplate and old:
        trace.hovertemplate = trace.hovertemplate.replace(old, name, 1)
