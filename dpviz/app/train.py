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

from dpviz.app import models as app_models
from dpviz.app.preview import AUTO_PREVIEW_NOTE as AUTO_PREVIEW_NOTE
from dpviz.app.preview import DepthPreview as DepthPreview
from dpviz.app.preview import depth_preview as depth_preview
from dpviz.app.preview import structure_preview as structure_preview
from dpviz.app.support import PreparedData
from dpviz.app.sweep import (
    Progress,
    epsilon_ladder,
    run_with_references,
    sklearn_default,
    sweep_jobs,
)
from dpviz.app.train_results import MetricCard as MetricCard  # what a run's cards return
from dpviz.app.train_results import ReleasedModel, ScoreReport, short_name
from dpviz.evaluation import defaults
from dpviz.evaluation.sweep import (
    SERIES_DP,
    SERIES_HGB,
    SweepGrid,
    SweepResult,
    run_sweep,
    subset,
)
from dpviz.figures.common import (
    mechanism_label,
)
from dpviz.models.forest.estimator import AUTO_TREES, DPRandomForestClassifier
from dpviz.models.forest.floor import records_split
from dpviz.models.forest.sizing import (
    SHARED_SMALL_TREES,
    SHARED_TREES,
    TREE_STEPS,
)
from dpviz.models.registry import ALGORITHMS, Algorithm, get_algorithm
from dpviz.models.trees.depth import DEPTH_RULES
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.noise import NOT_PRIVATE_NOTE
from dpviz.privacy.schema import PrivacyLeakWarning, Schema
from dpviz.tabular.encode import EncodedData

EPSILON_MIN, EPSILON_MAX = 0.01, 10.0
FIXED_DEPTH = "fixed"
FIXED_TREES = "a number"
_TREE_OPTIONS = {
    AUTO_TREES: "auto (from a declared or noisy record count)",
    FIXED_TREES: "a number I choose",
}
# Trees that all read every record (Private-RDT): "auto" follows ε alone.
_SHARED_TREE_OPTIONS = {
    AUTO_TREES: f"auto ({SHARED_TREES} trees from ε = 1 up, {SHARED_SMALL_TREES} below)",
    FIXED_TREES: "a number I choose",
}
DEPTH_CHOICES = (*DEPTH_RULES, FIXED_DEPTH)
FIXED_NUMBER_MAX = 30  # a choice that also takes a whole number (a fixed depth): its maximum
# How a trained forest's trees read the records, in the results' caption.
SPLIT_WORDS = {
    "disjoint": "disjoint data",
    "shared": "shared data",
    "halves": "data in two halves",
}
DATA_SPLIT_HELP = {
    "auto": "disjoint parts below ε = 5; from ε = 5, with automatic trees, ⌈ε/0.5⌉ trees "
    "in two halves of the records: each record trains the trees of its half, and the "
    "other half's votes check the trees against the prior (leaf noise is then far below "
    "a small tree's sampling noise)",
    "disjoint": "each tree reads its own disjoint part of the records and spends all of ε "
    "(parallel composition)",
    "shared": "every tree reads all records and spends ε / trees (sequential composition)",
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


def parameter_widget(parameter, *, shared: bool = False) -> ParameterWidget:
    """The widget of a registry :class:`~dpviz.models.registry.Parameter`, from its default,
    bounds, choices and help; ``shared``: the algorithm's trees all read every record."""
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
    if parameter.name == "n_estimators" and default == AUTO_TREES:
        # "auto" sizes the released forest from a declared or noisy (booked) record count,
        # never from the file's row count; a number is the user's public choice.
        return ParameterWidget(
            parameter.name,
            label,
            help_text,
            "choice",
            AUTO_TREES,
            options=(AUTO_TREES, FIXED_TREES),
            number_option=FIXED_TREES,
            number_default=SHARED_TREES if shared else TREE_STEPS[-1],
            high=int(parameter.high),
            option_text=(_SHARED_TREE_OPTIONS if shared else _TREE_OPTIONS).get,
        )
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
            widgets=tuple(
                parameter_widget(p, shared=fixed.get("data_split") == "shared")
                for p in algorithm.parameters
            ),
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


def form_defaults(n_rows: int) -> dict[str, Any]:
    """The Train page's first values, widget name → value, from
    :mod:`dpviz.evaluation.defaults` (the forest at ε = 1, public seed 0, 3 folds), secret
    noise, and scikit-learn's forest only where it stays quick (``sklearn_default``: a
    choice of what to compute on screen, not of what is released)."""
    return {
        "algorithm": defaults.ALGORITHM,
        "eps_slider": defaults.EPSILON,
        "eps": defaults.EPSILON,
        "seed": defaults.SEED,
        "replay": False,
        "noise_seed": 0,
        "folds": defaults.TRAIN_FOLDS,
        "sklearn": sklearn_default(n_rows),
    }


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
    epsilon: float = defaults.EPSILON
    n_estimators: int | str | None = None
    depth: str | int | None = None
    data_split: str | None = None
    seed: int = defaults.SEED
    noise_seed: int | None = None
    folds: int = defaults.TRAIN_FOLDS
    sklearn_reference: bool = True
    algorithm: str = defaults.ALGORITHM
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


@dataclass
class TrainRun:
    """One training run: CV metrics of the DP model and its references (NOT private), and
    the model fitted on all records (the released model, with its ledger). Its score
    cards, warnings and chart (``scores``) and its released model (``released_model``)
    are parts built from its fields: ``dpviz.app.train_results``; the run answers their
    names itself (``run.metric_card(...)``, ``run.model_json``)."""

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

    @cached_property
    def scores(self) -> ScoreReport:
        """The score cards, warnings, chart and metrics CSV of the run (NOT private)."""
        s = self.settings
        return ScoreReport(s.algorithm, s.folds, self.sweep, self.classes, self.class_counts)

    @cached_property
    def released_model(self) -> ReleasedModel:
        """The model fitted on all records: its guarantee, export and leaves."""
        return ReleasedModel(self.settings.algorithm, self.model)

    def __getattr__(self, name: str) -> Any:
        """A public name of a part, answered by the run: ``run.metric_card`` is
        ``run.scores.metric_card``, ``run.model_json`` is ``run.released_model.model_json``.
        Python asks here only for names the run does not have itself."""
        if not name.startswith("_"):
            for part, kind in (("scores", ScoreReport), ("released_model", ReleasedModel)):
                if hasattr(kind, name):
                    return getattr(getattr(self, part), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def diagnostics(self) -> dict[str, str]:
        """Model diagnostics as card texts, from one model on all records: NOT private."""
        return app_models.diagnostic_cards(self)

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

    def describe(self) -> str:
        """One line for the sidebar."""
        s = self.settings
        acc, _ = self.metric_text(SERIES_DP, "accuracy")
        model = self.model
        if isinstance(model, DPRandomForestClassifier):
            return (
                f"{mechanism_label(model.mechanism, self.private)} · ε = {s.epsilon:g} · "
                f"{model.n_estimators_} trees · depth {model.depth_} · accuracy {acc}"
            )
        shown = ", ".join(f"{k} {v}" for k, v in s.values.items())
        # The ledger's verdict, never the algorithm's promise alone.
        verdict = "" if self.private else " (NOT DP — see ledger)"
        return f"{self.model_label}{verdict} · ε = {s.epsilon:g} · {shown} · accuracy {acc}"


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
            f"{model.n_estimators_} trees · depth {model.depth_} ({model.depth}) · "
            f"{SPLIT_WORDS[records_split(model)]} · {tail}"
        )
    shown = ", ".join(f"{k} = {v}" for k, v in s.values.items())
    verdict = "" if run.private else " (NOT DP — see ledger)"
    return f"{run.algorithm.name}{verdict} · ε = {s.epsilon:g} · {shown} · {tail}"


def train(
    data: PreparedData, settings: TrainSettings, progress: Progress | None = None
) -> TrainRun:
    """Cross-validate the settings beside the references, then fit the released model
    on all records. Raises ``ValueError`` with a message for the user."""
    say = progress or (lambda _f, _m: None)
    start = time.perf_counter()
    encoded = data.training_records()
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
    model = fit_release(encoded, data.schema, s)
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


def fit_release(encoded: EncodedData, schema: Schema, settings: TrainSettings):
    """The released model: ``settings`` fitted on every record with fresh secret noise
    (or the replayable noise the user opted into).

    Its size and shape come from the settings and the schema alone, or from releases
    booked in its ledger (a forest's ``"auto"`` tree count and ``records`` depth read a
    declared or noisy record count), never from ``encoded.n_records``."""
    s = settings
    with warnings.catch_warnings():
        # The inferred-schema warning is shown by the page and recorded in the ledger.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return (
            get_algorithm(s.algorithm)
            .make(s.epsilon, random_state=s.seed, noise_seed=s.noise_seed, **s.values)
            .fit_encoded(encoded, schema)
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
