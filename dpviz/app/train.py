"""What the Train page does: the choices it offers, one training run, and its results.

Every algorithm of the registry (``dpviz.models.registry.ALGORITHMS``) is offered, each with
widgets built from its own :class:`~dpviz.models.registry.Parameter` list, so an algorithm
added to the registry appears here with its parameters. A run cross-validates the
chosen algorithm beside its non-private reference (metrics from the test folds: NOT
private), then fits one model on all records: that is the released model
(downloadable as JSON), and its ``ledger_`` (from the model's ``privacy_ledger``)
states the privacy guarantee in words.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.app import models as app_models
from dpviz.app.support import PreparedData
from dpviz.app.sweep import Progress, epsilon_ladder, run_with_references, sweep_jobs
from dpviz.evaluation.sweep import (
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepGrid,
    SweepResult,
    run_sweep,
    subset,
)
from dpviz.figures.common import (
    MACRO_F1,
    METRICS,
    NOT_DP_PATTERN,
    RARE_CLASS_SHARE,
    majority_mean,
    mechanism_label,
    scores_bar_figure,
)
from dpviz.figures.tree_layout import leaf_totals
from dpviz.models import greedy as greedy
from dpviz.models.boosting import DPBoostClassifier
from dpviz.models.data import EncodedData, encode, parsed_numbers
from dpviz.models.depth import COUNTED_RULES, DEPTH_RULES, resolve_depth
from dpviz.models.files import MAX_EXPORT_NODES, Released, check_public_schema, release
from dpviz.models.forest import DPRandomForestClassifier
from dpviz.models.greedy import DPDecisionTreeClassifier
from dpviz.models.outputs import csv_text
from dpviz.models.registry import ALGORITHMS, Algorithm, get_algorithm
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.noise import NOT_PRIVATE_NOTE
from dpviz.privacy.schema import PrivacyLeakWarning, Schema

EPSILON_MIN, EPSILON_MAX = 0.01, 10.0
FIXED_DEPTH = "fixed"
DEPTH_CHOICES = (*DEPTH_RULES, FIXED_DEPTH)
FIXED_NUMBER_MAX = 30  # a choice that also takes a whole number (a fixed depth): its maximum
DATA_SPLIT_HELP = {
    "disjoint": "each tree reads its own disjoint part of the records and spends all of ε "
    "(parallel composition)",
    "shared": "every tree reads all records and spends ε / trees (sequential composition)",
}
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
# Above this many records the Train page cross-validates on a stratified sample of this
# size (drawn from the public seed): an accuracy's standard error is then about 0.4
# points, and the references stay bounded. The shared-data non-private forest fits every
# record in every tree (a 66 s fit at 2.2 M training rows); scikit-learn's unpruned forest
# grows with the rows (12 s and 1.7 M nodes per fold at 67,000 training rows, 24 s and
# 3.4 M at 133,000; the 211 s and 9.2 GB on a 3.3 M-row upload). The released
# model is still fitted on every record. 100,000 took the 150 MB upload's Data page and
# Train to 56 s (under load) against 35 s at 50,000, for a DP score 2 points higher.
CV_SAMPLE_ROWS = 50_000
# The trivial baseline's name on the cards (always the training majority class). Like
# the references' cards it says NOT DP: its numbers are the data's own class shares.
MAJORITY_NAME = "majority class, trivial baseline (NOT DP)"
HGB_COLOR = "#F0E442"  # Okabe–Ito yellow: no mechanism or other reference uses it
# The registry's privacy status, as the page shows it next to the algorithm.
PRIVACY_LEVELS = {"ε-DP": "ok", "approximate": "approximate", "not DP": "none"}


# --- the choices: one per registry algorithm ---------------------------------------------


@dataclass(frozen=True)
class ParameterWidget:
    """How the page asks for one registry parameter.

    ``kind`` is "choice" (``options``; ``number_option`` is set when the parameter also
    takes a whole number, e.g. a fixed depth), "int", "float" or "bool"; ``low``/``high``
    bound the number inputs. ``option_text`` labels the options (mechanisms with their
    privacy badge); ``captions`` explain them (data splits).
    """

    name: str
    label: str
    help: str
    kind: str
    default: Any
    options: tuple = ()
    number_option: str | None = None
    number_default: int = 6
    low: float | None = None
    high: float | None = None
    step: float | None = None
    format: str | None = None
    option_text: Callable[[Any], str] = str
    captions: tuple[str, ...] | None = None

    @property
    def initial(self) -> Any:
        """The widget's first value (a number default of a choice shows as its option)."""
        if self.kind == "choice" and self.default not in self.options:
            return self.number_option
        return self.default

    def value(self, chosen: Any, number: Any = None) -> Any:
        """The parameter value from the widget's value (and the number box's)."""
        if self.kind == "choice" and chosen == self.number_option:
            return int(number if number is not None else self.number_default)
        return chosen


def _option_text(name: str) -> Callable[[Any], str]:
    if name == "mechanism":
        return mechanism_option
    return str


def parameter_widget(parameter) -> ParameterWidget:
    """The widget of a registry :class:`~dpviz.models.registry.Parameter`, from its default,
    bounds, choices and help."""
    label = parameter.help[:1].upper() + parameter.help[1:]
    bounds = []
    if parameter.low is not None:
        bounds.append(f"≥ {parameter.low:g}")
    if parameter.high is not None:
        bounds.append(f"≤ {parameter.high:g}")
    help_text = f"`{parameter.name}` · default {parameter.default}" + (
        f" · {', '.join(bounds)}" if bounds else ""
    )
    default = parameter.default
    if parameter.choices:
        number_option = None
        try:
            parameter.check(1)  # a choice that also takes a whole number (a fixed depth)
            number_option = FIXED_DEPTH
        except (ValueError, TypeError):
            pass
        options = tuple(parameter.choices) + ((number_option,) if number_option else ())
        captions = None
        if parameter.name == "data_split":
            captions = tuple(DATA_SPLIT_HELP.get(o, "") for o in options)
        return ParameterWidget(
            parameter.name,
            label,
            help_text,
            "choice",
            default,
            options=options,
            number_option=number_option,
            number_default=default if isinstance(default, int) else 6,
            option_text=_option_text(parameter.name),
            captions=captions,
        )
    if isinstance(default, bool):
        return ParameterWidget(parameter.name, label, help_text, "bool", default)
    if isinstance(default, int):
        return ParameterWidget(
            parameter.name,
            label,
            help_text,
            "int",
            default,
            low=None if parameter.low is None else int(math.ceil(parameter.low)),
            high=None if parameter.high is None else int(math.floor(parameter.high)),
            step=1,
        )
    if isinstance(default, float):
        scale = 10.0 ** math.floor(math.log10(abs(default))) if default else 0.1
        digits = max(2, -int(math.floor(math.log10(scale / 10))))
        return ParameterWidget(
            parameter.name,
            label,
            help_text,
            "float",
            float(default),
            low=None if parameter.low is None else float(parameter.low),
            high=None if parameter.high is None else float(parameter.high),
            step=scale / 10 if default else 0.1,
            format=f"%.{digits}f",
        )
    return ParameterWidget(parameter.name, label, help_text, "text", default)


@dataclass(frozen=True)
class AlgorithmChoice:
    """An algorithm the Train page offers: id, name, a one-line description, its registry
    privacy status, its parameters' defaults and widgets, and the settings its estimator
    fixes that other algorithms let the user set (shown, not asked)."""

    id: str
    name: str
    description: str
    defaults: dict
    fixed: dict
    privacy: str = "ε-DP"
    widgets: tuple[ParameterWidget, ...] = ()
    forest_family: bool = False
    short_name: str = "DP forest"

    @property
    def option(self) -> str:
        """The algorithm as a select option, with its privacy status."""
        return f"{self.name}  [{self.privacy}]"


def short_name(algorithm: Algorithm) -> str:
    """What the cards call the model: "DP forest" for the forest family, else the head
    of the registry name ("DPBoost", "Greedy DP decision tree")."""
    if algorithm.forest_family:
        return "DP forest"
    return algorithm.name.split(":")[0].split(" (")[0].strip()


# Another algorithm's parameter that this model carries but never uses with its own fixed
# values: not listed among its settings (Friedman–Schuster has steps = 1, and DPEA's MCMC
# proposals only run for more than 2 layers per step).
INERT_SETTINGS = {"mcmc_steps": lambda model: int(getattr(model, "steps", 1)) <= 2}


def algorithm_choices() -> dict[str, AlgorithmChoice]:
    """Every algorithm of the registry, in registry order; ``fixed`` lists the settings
    another algorithm varies that this one pins (and uses)."""
    every = {p.name for a in ALGORITHMS.values() for p in a.parameters}
    choices = {}
    for algorithm in ALGORITHMS.values():
        model = algorithm.make(1.0)
        own = {p.name for p in algorithm.parameters}
        fixed = {
            name: getattr(model, name)
            for name in sorted(every - own)
            if isinstance(getattr(model, name, None), str | int | float)
            and not (name in INERT_SETTINGS and INERT_SETTINGS[name](model))
        }
        choices[algorithm.id] = AlgorithmChoice(
            algorithm.id,
            algorithm.name,
            algorithm.description,
            algorithm.defaults(),
            fixed,
            privacy=algorithm.privacy,
            widgets=tuple(parameter_widget(p) for p in algorithm.parameters),
            forest_family=algorithm.forest_family,
            short_name=short_name(algorithm),
        )
    return choices


def fixed_text(name: str, value: Any) -> str:
    """A setting the algorithm fixes, in words (markdown)."""
    if name == "mechanism" and value in MECHANISMS:
        return f"Leaf mechanism: {mechanism_option(value)} (fixed)"
    if name == "data_split" and value in DATA_SPLIT_HELP:
        return f"Data per tree: **{value}** (fixed) · {DATA_SPLIT_HELP[value]}"
    return f"{name.replace('_', ' ').capitalize()}: **{value}** (fixed)"


@dataclass(frozen=True)
class PrivacyStatus:
    """The privacy of an algorithm with given parameters: ``level`` is "ok",
    "approximate" or "none"; ``text`` says why in a line."""

    level: str
    text: str


def privacy_status(
    algorithm_id: str, params: Mapping[str, Any] | None = None, schema_public: bool = True
) -> PrivacyStatus:
    """The registry's verdict for these parameters: a NOT DP mechanism makes it "none",
    DPEA's MCMC steps (d > 2) "approximate"; a proven algorithm on data whose schema was
    inferred (``schema_public`` False) is "none" too, as the model's ledger will say."""
    status = _registry_status(algorithm_id, params)
    if status.level == "ok" and not schema_public:
        return PrivacyStatus(
            "none",
            "**NOT DP with this data** · the algorithm is proven ε-DP, but the schema "
            "(classes, feature domains) was inferred from the records, so the model's "
            "ledger gives NO guarantee. Declare a public schema on the Data page for one.",
        )
    return status


def _registry_status(algorithm_id: str, params: Mapping[str, Any] | None) -> PrivacyStatus:
    algorithm = get_algorithm(algorithm_id)
    values = {**algorithm.defaults(), **(params or {})}
    mechanism = values.get("mechanism")
    if mechanism in MECHANISMS and not MECHANISMS[mechanism].private:
        mech = MECHANISMS[mechanism]
        return PrivacyStatus("none", f"**{mech.badge}** · {mech.description}")
    status = algorithm.status(values) if hasattr(algorithm, "status") else algorithm.privacy
    if status == "ε-DP" and algorithm.private(values):
        text = "**ε-DP** · proven differentially private under add/remove-one neighbours"
        if mechanism in MECHANISMS:
            text = f"**{MECHANISMS[mechanism].badge}** · {MECHANISMS[mechanism].description}"
        return PrivacyStatus("ok", text)
    if PRIVACY_LEVELS.get(status) == "approximate":
        return PrivacyStatus(
            "approximate",
            "**approximate — NOT DP** · with these settings the exponential mechanism is "
            "sampled by MCMC, which only approximates it: no ε is proven",
        )
    return PrivacyStatus("none", f"**NOT DP** · {algorithm.name} carries no privacy proof")


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
    """The depth a setting gives for a dataset, and a sentence explaining it."""

    depth: int
    text: str
    private_note: str | None = None


def depth_preview(
    schema: Schema, rule: str | int, n_records: int, n_estimators: int, data_split: str
) -> DepthPreview:
    """Resolve the depth rule and say what it means for the leaves (``ValueError`` for a
    bad rule). The record count used here is the data owner's view, not released."""
    s, r = len(schema.continuous), len(schema.discrete)
    depth = resolve_depth(
        rule,
        s,
        r,
        n_records=n_records,
        branching=branching(schema),
        n_trees=n_estimators if data_split == "disjoint" else None,
    )
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
    if rule in COUNTED_RULES:
        note = (
            f"The {rule} rule reads the number of records, which is itself private: the ledger "
            "notes that this depth is not covered by ε."
        )
    return DepthPreview(depth, " ".join(parts), note)


def structure_preview(
    schema: Schema,
    n_records: int,
    algorithm_id: str,
    params: Mapping[str, Any],
    epsilon: float = 1.0,
) -> DepthPreview | None:
    """What the settings mean for the model's shape and budget, in a sentence (None for
    an algorithm without a preview; ``ValueError`` for unusable settings)."""
    model = get_algorithm(algorithm_id).make(epsilon, **params)
    widths = [int(w) for w in branching(schema)]
    if isinstance(model, DPRandomForestClassifier):
        return depth_preview(schema, model.depth, n_records, model.n_estimators, model.data_split)
    if isinstance(model, DPDecisionTreeClassifier):
        bins = [int(model.n_bins)] * len(schema.continuous) + widths[len(schema.continuous) :]
        d = int(model.steps)
        if model.max_depth == "auto":
            # A preview for the data owner only: the fitted tree reads a noisy (or the
            # declared) count instead of n_records.
            n = int(model.declared_n) or n_records
            share = 0.0 if model.declared_n else greedy.ROOT_COUNT_SHARE
            depth = max(
                1, greedy.auto_depth(n, bins, len(schema.classes), (1 - share) * epsilon, d)
            )
        else:
            depth = int(model.max_depth)
        n_steps = math.ceil(depth / d)
        leaves = float(np.prod(sorted(bins, reverse=True)[:depth], dtype=np.float64))
        text = (
            f"One tree of depth {depth}: {n_steps} exponential-mechanism step"
            f"{'s' * (n_steps > 1)} of {d} layer{'s' * (d > 1)} and the noisy leaf counts "
            f"share ε, ε' = ε / {n_steps + 1} = {epsilon / (n_steps + 1):.3g} each. A "
            f"continuous feature splits into its {model.n_bins} public bins; up to "
            f"{leaves:,.0f} leaves for {n_records:,} records"
            + (", so most leaves will be empty." if leaves > n_records else ".")
        )
        return DepthPreview(depth, text)
    if isinstance(model, DPBoostClassifier):
        t_e = int(model.trees_per_ensemble)
        first = min(t_e, int(model.n_estimators))
        shares = model.ensemble_shares(
            first, holdout=model.checks_trees_ and model.n_ensembles_ == 1
        )
        sizes = np.round(n_records * shares).astype(int)
        k = len(schema.classes)
        per_class = "" if k == 2 else f", ε / {k} per one-vs-rest class"
        n_ens = model.n_ensembles_
        text = (
            f"{n_ens} ensemble{'s' * (n_ens > 1)} of up to {t_e} trees of depth "
            f"{model.max_depth} ({2**model.max_depth:,} leaves each); each ensemble spends "
            f"ε / {n_ens}{per_class}. Inside an ensemble every tree reads its own disjoint "
            f"subset: about {sizes[0]:,} records for the first tree down to "
            f"{sizes[min(t_e, model.n_estimators) - 1]:,} for the last."
        )
        return DepthPreview(int(model.max_depth), text)
    return None


def always_on_references(algorithm: Algorithm) -> tuple[str, ...]:
    """References run even with the checkbox off: HistGradientBoosting for DPBoost is
    fast, and a sweep engine that takes a list of references can add it alone."""
    if algorithm.reference == SERIES_HGB and hasattr(SweepGrid, "wants"):
        return (SERIES_HGB,)
    return ()


def reference_text(algorithm_id: str) -> str:
    """What the Train page's reference checkbox adds, for this algorithm."""
    algorithm = get_algorithm(algorithm_id)
    if algorithm.reference == SERIES_HGB and not always_on_references(algorithm):
        return "HistGradientBoosting and random forest"
    return "scikit-learn's random forest"


# --- settings ------------------------------------------------------------------------------

# Forest settings accepted as fields for convenience; ``params`` takes any parameter.
_FOREST_FIELDS = ("n_estimators", "depth", "mechanism", "data_split")


@dataclass(frozen=True)
class TrainSettings:
    """Everything the Train page asks for.

    ``params`` holds the algorithm's registry parameters; the fields ``n_estimators``,
    ``depth``, ``mechanism`` and ``data_split`` are shorthands for the forests. A setting
    left out takes the algorithm's registry default; setting one that the algorithm
    fixes (JPW's mechanism) to another value is a ``ValueError``.
    """

    mechanism: str | None = None
    epsilon: float = 1.0
    n_estimators: int | None = None
    depth: str | int | None = None
    data_split: str | None = None
    seed: int = 0
    noise_seed: int | None = None
    folds: int = 3
    sklearn_reference: bool = True
    algorithm: str = "fletcher_islam"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        choices = algorithm_choices()
        if self.algorithm not in choices:
            raise ValueError(
                f"unknown algorithm {self.algorithm!r}; choose one of {', '.join(choices)}"
            )
        if self.mechanism is not None and self.mechanism not in MECHANISMS:
            raise ValueError(f"unknown mechanism {self.mechanism!r}")
        choice = choices[self.algorithm]
        for name in _FOREST_FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if name in choice.fixed and value != choice.fixed[name]:
                raise ValueError(f"{self.algorithm} fixes {name} = {choice.fixed[name]!r}")
            if name not in choice.defaults and name not in choice.fixed:
                raise ValueError(f"{self.algorithm} has no setting {name!r}")
        object.__setattr__(self, "params", dict(self.params))
        get_algorithm(self.algorithm).make(self.epsilon, **self.values)

    @property
    def values(self) -> dict[str, Any]:
        """Every parameter of the algorithm: the registry defaults, then what was set."""
        choice = algorithm_choices()[self.algorithm]
        given = {
            n: getattr(self, n)
            for n in _FOREST_FIELDS
            if getattr(self, n) is not None and n in choice.defaults
        }
        return {**choice.defaults, **given, **self.params}


# --- a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricCard:
    """What one score card shows: ``value``, ``delta`` (its arrow and colour follow the
    sign), a ``description`` under it and the delta's ``color`` ("normal" or "red")."""

    value: str
    delta: str | None = None
    description: str | None = None
    color: str = "normal"


@dataclass
class TrainRun:
    """One training run: CV metrics of the DP model and its references (NOT private), and
    the model fitted on all records (the released model, with its ledger)."""

    dataset: str
    fingerprint: tuple
    settings: TrainSettings
    sweep: SweepResult
    model: Any
    n_records: int
    seconds: float
    encoding_messages: list[str] = field(default_factory=list)
    # The public class names and how many records hold each (a count from the raw data:
    # NOT private, a diagnostic for the data owner that decides whether macro F1 is shown).
    classes: tuple[str, ...] = ()
    class_counts: tuple[int, ...] = ()
    # The records the folds were drawn from: all of them, or a stratified sample.
    cv_records: int = 0

    @property
    def sampled(self) -> bool:
        """Whether the cross-validation ran on a sample of the records."""
        return 0 < self.cv_records < self.n_records

    @property
    def sample_note(self) -> str | None:
        """What the page says when the folds came from a sample (None otherwise)."""
        if not self.sampled:
            return None
        return (
            f"The data has {self.n_records:,} records, so the {self.settings.folds}-fold "
            f"cross-validation (the scores below, and the references') ran on a stratified "
            f"sample of {self.cv_records:,} of them, drawn with the public seed "
            f"{self.settings.seed}: the class shares are kept and the scores' spread over "
            "the folds stays small at this size. The released model was fitted on all "
            f"{self.n_records:,} records: its noise weighs less on larger counts, so it "
            "may score higher than these folds show."
        )

    @property
    def algorithm(self) -> Algorithm:
        return get_algorithm(self.settings.algorithm)

    @property
    def model_label(self) -> str:
        """What the cards call the model: "DP forest", "DPBoost", ..."""
        return short_name(self.algorithm)

    # --- metrics ------------------------------------------------------------------------

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

    def scores_figure(self) -> go.Figure:
        order = {s: i for i, s in enumerate(self.series)}
        rows = self.sweep.summary[self.sweep.summary["series"].isin(order)]
        rows = rows.sort_values("series", key=lambda s: s.map(order)).reset_index(drop=True)
        fig = scores_bar_figure(rows, folds=self.settings.folds, metrics=self.card_metrics())
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

    # --- the released model -------------------------------------------------------------

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
    def export_problem(self) -> str | None:
        """Why the model cannot be exported (a schema inferred from the data, whose
        values the file would list; too many nodes to list), or None."""
        try:
            check_public_schema(self.model.schema_)
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
            self.__dict__["released"] = release(self.model, self.settings.algorithm)
        except ValueError as exc:
            return str(exc)
        return None

    @cached_property
    def released(self) -> Released | None:
        """The released model object (None if too large to list)."""
        if self.export_problem is not None:
            return None
        return release(self.model, self.settings.algorithm)

    @cached_property
    def model_json(self) -> str:
        """The released model as JSON: structure and leaf outputs only, no data."""
        released = self.released
        if released is None:
            raise ValueError(self.export_problem)
        return released.to_json()

    # --- leaf diagnostics (NOT private) ------------------------------------------------

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

    def diagnostics(self) -> dict[str, str]:
        """Model diagnostics as card texts, from one model on all records: NOT private."""
        return app_models.diagnostic_cards(self)

    def describe(self) -> str:
        """One line for the sidebar."""
        s = self.settings
        acc, _ = self.metric_text(SERIES_DP, "accuracy")
        model = self.model
        if isinstance(model, DPRandomForestClassifier):
            return (
                f"{mechanism_label(model.mechanism, self.private)} · ε = {s.epsilon:g} · "
                f"{model.n_estimators} trees · depth {model.depth_} · accuracy {acc}"
            )
        shown = ", ".join(f"{k} {v}" for k, v in s.values.items())
        # The ledger's verdict, never the algorithm's promise alone.
        verdict = "" if self.private else " (NOT DP — see ledger)"
        return f"{self.model_label}{verdict} · ε = {s.epsilon:g} · {shown} · accuracy {acc}"


def _points(value: float) -> str:
    """A change in points with its sign, never "-0.0" (a red arrow for no change)."""
    return f"{0.0 if round(value, 1) == 0 else value:+.1f}"


def _which(names: list[str]) -> str:
    return " or ".join(f"'{n}'" for n in names) or "one class"


def _where(hit: int, total: int) -> str:
    return "in every fold" if hit == total else f"in {hit} of {total} folds"


def run_caption(run: TrainRun) -> str:
    """The settings of a run in one line, for under the results header."""
    s, model = run.settings, run.model
    noise = (
        "secret noise"
        if s.noise_seed is None
        else f"noise seed {s.noise_seed} ({NOT_PRIVATE_NOTE})"
    )
    on = (
        f"a stratified sample of {run.cv_records:,} of {run.n_records:,} records"
        if run.sampled
        else f"{run.n_records:,} records"
    )
    tail = (
        f"public seed {s.seed} · {noise} · {s.folds}-fold CV on {on}. "
        "Change a setting and press Train to update."
    )
    if isinstance(model, DPRandomForestClassifier):
        return (
            f"{mechanism_label(model.mechanism, run.private)} · ε = {s.epsilon:g} · "
            f"{model.n_estimators} trees · depth {model.depth_} ({model.depth}) · "
            f"{model.data_split} data · {tail}"
        )
    shown = ", ".join(f"{k} = {v}" for k, v in s.values.items())
    verdict = "" if run.private else " (NOT DP — see ledger)"
    return f"{run.algorithm.name}{verdict} · ε = {s.epsilon:g} · {shown} · {tail}"


def _rename(trace, name: str) -> None:
    """A bar trace's legend name and the name in its hover text."""
    old = trace.name
    trace.name = name
    if trace.hovertemplate and old:
        trace.hovertemplate = trace.hovertemplate.replace(old, name, 1)


def train(
    data: PreparedData, settings: TrainSettings, progress: Progress | None = None
) -> TrainRun:
    """Cross-validate the settings beside the references, then fit the released model
    on all records. Raises ``ValueError`` with a message for the user."""
    say = progress or (lambda _f, _m: None)
    start = time.perf_counter()
    # Continuous columns of a large upload parsed by pyarrow at once (same encoding).
    frame = parsed_numbers(data.frame, [f.name for f in data.schema.continuous])
    encoded = encode(frame, data.schema, training=True)
    del frame
    s = settings
    values = s.values
    algorithm = get_algorithm(s.algorithm)
    folds_from = cv_sample(encoded, s.seed)
    n_jobs = sweep_jobs(folds_from.n_records, s.folds)
    if algorithm.forest_family:
        # The forest engine routes once per fold and releases the leaves per ε.
        shape = algorithm.make(s.epsilon, **values)
        sweep = run_with_references(
            folds_from,
            data.schema,
            epsilons=[s.epsilon],
            n_estimators=[shape.n_estimators],
            depths=[shape.depth],
            mechanisms=[shape.mechanism],
            data_splits=[shape.data_split],
            sklearn=s.sklearn_reference,
            folds=s.folds,
            seed=s.seed,
            noise_seed=s.noise_seed,
            n_jobs=n_jobs,
            progress=lambda f, m: say(0.9 * f, m),
        )
    else:
        grid = SweepGrid(
            epsilons=[s.epsilon],
            algorithms=[s.algorithm],
            presets={s.algorithm: values},
            references=s.sklearn_reference or always_on_references(algorithm) or False,
        )
        sweep = run_sweep(
            folds_from,
            data.schema,
            grid,
            folds=s.folds,
            seed=s.seed,
            noise_seed=s.noise_seed,
            n_jobs=n_jobs,
            progress=lambda done, total, _m: say(
                0.9 * done / total, f"{short_name(algorithm)}: fold {done} of {total} done"
            ),
        )
    say(0.9, "fitting the released model on all records")
    with warnings.catch_warnings():
        # The inferred-schema warning is shown by the page and recorded in the ledger.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = algorithm.make(
            s.epsilon, random_state=s.seed, noise_seed=s.noise_seed, **values
        ).fit_encoded(encoded, data.schema)
    say(1.0, "done")
    k = len(data.schema.classes)
    return TrainRun(
        dataset=data.name,
        fingerprint=data.fingerprint,
        settings=settings,
        sweep=sweep,
        model=model,
        n_records=encoded.n_records,
        seconds=time.perf_counter() - start,
        encoding_messages=encoded.report.messages(),
        classes=tuple(str(c) for c in data.schema.classes),
        class_counts=tuple(int(n) for n in np.bincount(encoded.y, minlength=k)[:k]),
        cv_records=folds_from.n_records,
    )


def cv_sample(encoded: EncodedData, seed: int, rows: int | None = None) -> EncodedData:
    """The records to cross-validate on: all of them up to ``rows`` (default
    ``CV_SAMPLE_ROWS``), else a stratified sample of ``rows`` drawn with the public
    ``seed`` (rows kept in file order). Every class keeps its share; a class too rare
    to be drawn keeps at least one record when the data has it."""
    rows = CV_SAMPLE_ROWS if rows is None else rows
    if encoded.n_records <= rows:
        return encoded
    y = encoded.y
    rng = np.random.default_rng([seed, 17])
    counts = np.bincount(y)
    # Largest-remainder shares of ``rows``, at least one per present class.
    want = counts * rows / len(y)
    take = np.floor(want).astype(np.int64)
    short = rows - take.sum()
    take[np.argsort(want - take, kind="stable")[::-1][:short]] += 1
    take = np.minimum(np.maximum(take, counts > 0), counts)
    order = np.argsort(y, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    chosen = [
        order[start + rng.choice(count, size=n, replace=False)]
        for start, count, n in zip(starts, counts, take)
        if n
    ]
    return subset(encoded, np.sort(np.concatenate(chosen)))
