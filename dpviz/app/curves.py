"""What the Curves page does: run a cross-validated sweep once — any algorithms of the
registry, all on the same folds — then answer every view of it (metric, axis, series,
highlighted algorithm, the ε under discussion) from its summary frame.

Metrics come from the test folds and are NOT private. The guarantee of each candidate
ε is computed from a ledger (``dpviz.models.forest.estimator.build_ledger`` for Fletcher & Islam's
forest, each fold model's own ledger for the others), never typed by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpviz.app.support import PreparedData
from dpviz.app.sweep import LADDERS, Progress, sklearn_default, sweep_jobs
from dpviz.app.sweep_settings import (
    DEFAULT_ALGORITHMS,
    DEFAULT_MECHANISMS,
    SweepSettings,
)
from dpviz.app.sweep_views import (
    REFERENCE_NAMES,
    SweepTables,
    forest_privacy,
    ledger_mechanism,
)
from dpviz.evaluation import defaults
from dpviz.evaluation.sweep import (
    FLETCHER_ISLAM,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepGrid,
    SweepResult,
    fold_threads,
    run_sweep,
)
from dpviz.figures.curves import (
    STATUS_BADGES,
    privacy_status,
)
from dpviz.models.forest.estimator import AUTO_TREES
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import risk_sentences

_FOREST = defaults.forest_parameters()
_FOREST_DEPTH = _FOREST["depth"]
# "auto": each fold's trees sized from its record count, declared public for the
# evaluation (the released model reads a declared or noisy count instead).
TREE_CHOICES = (AUTO_TREES, 1, 5, 10, 25, 50, 100, 200, 500)
# The forest's data splits, as its registry entry offers them ("auto": shared from ε = 5).
SPLIT_CHOICES = next(
    p.choices for p in get_algorithm(FLETCHER_ISLAM).parameters if p.name == "data_split"
)
PER_DECADE = tuple(LADDERS)
# Views of a sweep kept for switching back (a figure is ~20 kB, a table less).
VIEWS_KEPT = 64


def form_defaults(n_rows: int) -> dict[str, Any]:
    """The Curves page's first values, widget name → value, from
    :mod:`dpviz.evaluation.defaults`: the forest alone at its registry defaults (trees
    "auto", the records depth rule), ε from 0.01 to 10 at 6 values per decade, three
    mechanisms, 5 folds, and scikit-learn's forest only where it stays quick
    (``sklearn_default``)."""
    return {
        "algorithms": list(DEFAULT_ALGORITHMS),
        "low": defaults.SWEEP_EPSILON_LOW,
        "high": defaults.SWEEP_EPSILON_HIGH,
        "per_decade": defaults.SWEEP_PER_DECADE,
        "mechs": list(DEFAULT_MECHANISMS),
        "trees": [_FOREST["n_estimators"]],
        "depths": [_FOREST_DEPTH],
        "splits": [_FOREST["data_split"]],
        "folds": defaults.SWEEP_FOLDS,
        "seed": defaults.SEED,
        "sklearn": sklearn_default(n_rows),
        "metric": "accuracy",
        "x": "epsilon",
    }


@dataclass
class SweepRun(SweepTables):
    """A finished sweep with its settings; every view of it reads ``summary``. Its lines
    and their privacy, and the tables of one ε: ``dpviz.app.sweep_views``."""

    dataset: str
    fingerprint: tuple
    settings: SweepSettings
    result: SweepResult
    seconds: float
    n_records: int
    schema_inferred: bool
    # The public class names and the records of each (counts from the raw data: NOT
    # private, they decide whether macro F1 is offered beside accuracy).
    classes: tuple[str, ...] = ()
    class_counts: tuple[int, ...] = ()
    # What views of it were computed (figures, tables): a view is a function of the
    # summary and the view's controls only, so switching back to one costs nothing.
    _views: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def view(self, what: str, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()`` once for ``(what, key)`` (``key``: the view controls it depends
        on), then the kept result. At most ``VIEWS_KEPT`` are kept (the oldest go)."""
        slot = (what, key)
        if slot not in self._views:
            if len(self._views) >= VIEWS_KEPT:
                self._views.pop(next(iter(self._views)))
            self._views[slot] = compute()
        return self._views[slot]


def status_notes(algorithm: str) -> list[str]:
    """Where an algorithm's privacy status changes with a parameter, in words, e.g.
    ``NOT DP with mechanism smooth_em`` or ``approximate — NOT DP with steps 3, 4``: read
    from the registry (choices, and whole numbers with a small range), not typed here."""
    entry = get_algorithm(algorithm)
    base = privacy_status(algorithm)
    notes = []
    for p in entry.parameters:
        if p.choices:
            candidates = list(p.choices)
        elif (
            isinstance(p.default, int)
            and not isinstance(p.default, bool)
            and p.low is not None
            and p.high is not None
            and p.high - p.low <= 16
        ):
            candidates = list(range(int(p.low), int(p.high) + 1))
        else:
            continue
        differ: dict[str, list] = {}
        for value in candidates:
            try:
                status = privacy_status(algorithm, {p.name: value})
            except (ValueError, TypeError, KeyError):
                continue
            if status != base:
                differ.setdefault(status, []).append(value)
        for status, values in differ.items():
            notes.append(f"{STATUS_BADGES[status]} with {p.name} {', '.join(map(str, values))}")
    return notes


def algorithm_options() -> dict[str, str]:
    """Every algorithm of the registry (a new entry appears here by itself), id → option
    text with its privacy status at its defaults and where a parameter changes it."""
    out = {}
    for a, entry in ALGORITHMS.items():
        status = STATUS_BADGES[privacy_status(a)]
        notes = status_notes(a)
        out[a] = f"{a} — {entry.name.split(' (')[0]}  [{status}" + (
            f"; {'; '.join(notes)}]" if notes else "]"
        )
    return out


def risk_lines(epsilon: float, prior: float = 0.5) -> list[str]:
    """What a total ε promises a person in the data, in plain sentences (from
    ``dpviz.privacy.risk``: formulas of ε only, public). They hold only for a model that is
    proven ε-DP with a public schema."""
    sentences = risk_sentences(epsilon, prior)
    keys = ("per_record", "odds_ratio_bound", "posterior_bound", "attribute_posterior_bound")
    return [sentences[key] for key in keys]


# The forest parameters a sweep's grid sets (SweepSettings' own fields).
_FOREST_GRID = ("n_estimators", "depth", "mechanism", "data_split")


def check(settings: SweepSettings) -> None:
    """``ValueError`` with what to change when the settings cannot be swept."""
    s = settings
    if not s.algorithms:
        raise ValueError("choose at least one algorithm to sweep")
    for a in s.algorithms:
        get_algorithm(a)  # an unknown id names the known ones
    unknown = set(s.presets) - set(s.others) - ({FLETCHER_ISLAM} if s.forest else set())
    if unknown:
        raise ValueError(
            f"settings were given for {sorted(unknown)[0]}, which is not in the sweep"
        )
    gridded = set(s.presets.get(FLETCHER_ISLAM, {})) & set(_FOREST_GRID)
    if gridded:
        raise ValueError(
            f"the forest takes its {sorted(gridded)[0]} from the grid, not from its settings"
        )
    if s.forest:
        if not s.mechanisms:
            raise ValueError("choose at least one mechanism to sweep")
        for m in s.mechanisms:
            if m not in MECHANISMS:
                raise ValueError(f"unknown mechanism {m!r}")
        for values, what in (
            (s.n_estimators, "tree count"),
            (s.depths, "depth rule"),
            (s.data_splits, "data split"),
        ):
            if not values:
                raise ValueError(f"choose at least one {what} for fletcher_islam")


def grids(settings: SweepSettings) -> list[tuple[str, SweepGrid]]:
    """One grid per algorithm, in the order chosen, with the references it needs: a
    forest's non-private version, DPBoost's HistGradientBoosting, and (once, with the
    first algorithm) scikit-learn's random forest when asked for. Each reference is
    computed once per fold, not per ε."""
    check(settings)
    s = settings
    out = []
    for i, a in enumerate(s.algorithms):
        entry = get_algorithm(a)
        references = {SERIES_NONPRIVATE} if entry.forest_family else set()
        if entry.reference == SERIES_HGB:
            references.add(SERIES_HGB)
        if s.sklearn_reference and i == 0:
            references.add(SERIES_SKLEARN)
        forest = {
            "n_estimators": list(s.n_estimators),
            "depths": list(s.depths),
            "mechanisms": list(s.mechanisms),
            "data_splits": list(s.data_splits),
        }
        grid = SweepGrid(
            epsilons=s.epsilons,
            algorithms=[a],
            presets={a: dict(s.presets.get(a, {}))},
            references=references,
            **(forest if a == FLETCHER_ISLAM else {}),
        )
        out.append((a, grid))
    return out


def run(data: PreparedData, settings: SweepSettings, progress: Progress | None = None) -> SweepRun:
    """Run the sweep of ``settings`` on ``data`` (``ValueError`` with a message).

    Each algorithm runs on the same repeated stratified folds (``fold_splits`` of the
    labels and the seed) with the same per-fold seeds, one algorithm after the other so
    that ``progress(fraction, message)`` can say which one is running.
    """
    plan = grids(settings)
    say = progress or (lambda _f, _m: None)
    start = time.perf_counter()
    encoded = data.training_records()
    n_jobs = sweep_jobs(encoded.n_records, settings.folds)
    parts = []
    for i, (algorithm, grid) in enumerate(plan):

        def step(done, total, _message, i=i, algorithm=algorithm):
            what = f"{algorithm} ({i + 1} of {len(plan)})" if len(plan) > 1 else algorithm
            say((i + done / total) / len(plan), f"{what}: fold {done} of {total} done")

        say(i / len(plan), f"{algorithm}: starting")
        part = run_sweep(
            encoded,
            data.schema,
            grid,
            folds=settings.folds,
            seed=settings.seed,
            noise_seed=settings.noise_seed,
            n_jobs=n_jobs,
            progress=step,
            threads=fold_threads(settings.folds, 1, n_jobs),
        )
        parts.append(part.results)
    results = pd.concat(parts, ignore_index=True)
    k = len(data.schema.classes)
    return SweepRun(
        dataset=data.name,
        fingerprint=data.fingerprint,
        settings=settings,
        result=SweepResult(results),
        seconds=time.perf_counter() - start,
        n_records=encoded.n_records,
        schema_inferred=data.schema.inferred,
        classes=tuple(str(c) for c in data.schema.classes),
        class_counts=tuple(int(n) for n in np.bincount(encoded.y, minlength=k)[:k]),
    )


__all__ = [
    "DEFAULT_ALGORITHMS",
    "DEFAULT_MECHANISMS",
    "REFERENCE_NAMES",
    "SERIES_SKLEARN",
    "SweepRun",
    "SweepSettings",
    "algorithm_options",
    "forest_privacy",
    "form_defaults",
    "grids",
    "ledger_mechanism",
    "risk_lines",
    "run",
]
