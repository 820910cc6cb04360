"""What the Curves page does: run a cross-validated sweep once — any algorithms of the
registry, all on the same folds — then answer every view of it (metric, axis, series,
highlighted algorithm, the ε under discussion) from its summary frame.

Metrics come from the test folds and are NOT private. The guarantee of each candidate
ε is computed from a ledger (``dpviz.models.forest.build_ledger`` for Fletcher & Islam's
forest, each fold model's own ledger for the others), never typed by hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dpviz.app.support import PreparedData
from dpviz.app.sweep import LADDERS, Progress, epsilon_ladder, sweep_jobs
from dpviz.evaluation.sweep import (
    FLETCHER_ISLAM,
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepGrid,
    SweepResult,
    run_sweep,
)
from dpviz.figures.common import (
    ALL_METRIC_NAMES,
    MACRO_F1,
    MAJORITY_LABEL,
    METRICS,
    RARE_CLASS_SHARE,
    majority_mean,
)
from dpviz.figures.curves import (
    APPROXIMATE,
    EPS_DP,
    HGB_STYLE,
    STATUS_BADGES,
    dp_label,
    dp_lines,
    privacy_status,
    select,
    series_id,
    series_status,
)
from dpviz.models.data import encode
from dpviz.models.forest import build_ledger
from dpviz.models.outputs import csv_text
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import risk_sentences

DEFAULT_MECHANISMS = ("permute_flip", "count_em", "smooth_em")
# The forest alone by default: it sweeps a 19-point ε curve in about one fit. The greedy
# trees and DPBoost read the data to grow, so they are refitted for every ε and fold.
DEFAULT_ALGORITHMS = (FLETCHER_ISLAM,)
REFERENCE_NAMES = {
    SERIES_NONPRIVATE: "non-private forest",
    SERIES_SKLEARN: "scikit-learn random forest",
    SERIES_HGB: HGB_STYLE[0],
}
TREE_CHOICES = (1, 5, 10, 25, 50, 100, 200, 500)
PER_DECADE = tuple(LADDERS)


@dataclass(frozen=True)
class SweepSettings:
    """A sweep as the Curves page asks for it."""

    eps_low: float = 0.01
    eps_high: float = 10.0
    per_decade: int = 6
    mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    n_estimators: tuple[int, ...] = (100,)
    depths: tuple[str | int, ...] = ("theorem2",)
    data_splits: tuple[str, ...] = ("disjoint",)
    folds: int = 5
    seed: int = 0
    sklearn_reference: bool = False
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    # None: every model's noise is fresh and secret. A seed replays it (tests, exact
    # reproduction): the sweep's models are then NOT private, and its rows say so.
    noise_seed: int | None = None
    # Parameters of the algorithms other than the forest (over their registry defaults);
    # the forest's come from the grid above.
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def epsilons(self) -> list[float]:
        return epsilon_ladder(self.eps_low, self.eps_high, self.per_decade)

    @property
    def forest(self) -> bool:
        """Whether Fletcher & Islam's forest (and so the grid of mechanisms, trees, depth
        rules and splits) is in the sweep."""
        return FLETCHER_ISLAM in self.algorithms

    @property
    def others(self) -> list[str]:
        """The algorithms other than the forest, in the order chosen."""
        return [a for a in self.algorithms if a != FLETCHER_ISLAM]

    @property
    def n_configurations(self) -> int:
        forest = (
            len(self.mechanisms)
            * len(self.n_estimators)
            * len(self.depths)
            * len(self.data_splits)
            if self.forest
            else 0
        )
        return len(self.epsilons) * (forest + len(self.others))

    def params(self, algorithm: str) -> dict[str, Any]:
        """The parameters ``algorithm`` runs with in this sweep (over its defaults)."""
        return {**get_algorithm(algorithm).defaults(), **dict(self.presets.get(algorithm, {}))}


@dataclass
class SweepRun:
    """A finished sweep with its settings; every view of it reads ``summary``."""

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

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    @property
    def rare_class(self) -> tuple[str, float] | None:
        """The smallest class and its share of the records when it is under
        ``RARE_CLASS_SHARE`` (NOT private), else None."""
        total = sum(self.class_counts)
        if not total:
            return None
        i = int(np.argmin(self.class_counts))
        share = self.class_counts[i] / total
        if share >= RARE_CLASS_SHARE:
            return None
        return (self.classes[i] if i < len(self.classes) else str(i)), share

    def metric_options(self) -> dict[str, str]:
        """The metrics a view can show, id → name: macro F1 joins beside accuracy when
        the labels are binary and a class is rare (with more classes F1 already is the
        macro average)."""
        options = dict(METRICS)
        if self.rare_class is not None and len(self.class_counts) == 2:
            options = {"accuracy": options.pop("accuracy"), MACRO_F1[0]: MACRO_F1[1], **options}
        return options

    def rare_class_note(self) -> str | None:
        """Why macro F1 is offered, in a sentence, or None."""
        rare = self.rare_class
        if rare is None:
            return None
        baseline = majority_mean(self.summary, "accuracy")
        text = (
            f"The smallest class, '{rare[0]}', is {100 * rare[1]:.1f}% of the records (a count "
            "from the raw data: not private): accuracy alone flatters a model that ignores it"
        )
        if baseline is not None:
            text += f" (always answering the majority class scores {100 * baseline:.1f}%)"
        if len(self.class_counts) == 2:
            return text + ". Macro F1 is offered beside it."
        return text + ". F1 here is the macro average over the classes."

    def one_class_warning(
        self, epsilon: float, fixed: dict, mechanisms=None, series=None
    ) -> str | None:
        """A plain warning naming the lines that, at ``epsilon``, predicted one class only
        in some fold (no better than always answering the majority class), or None."""
        pins = {k: v for k, v in fixed.items() if k != "epsilon"}
        rows = dp_lines(
            self.summary, x="epsilon", fixed=pins, mechanisms=mechanisms, series=series
        )
        rows = select(rows, {"epsilon": epsilon})
        if "one_class_share" not in rows.columns:
            return None
        found = []
        for row in rows.to_dict(orient="records"):
            folds = _one_class_folds(row)
            if folds:
                status = self.line_status(row["algorithm"], row["mechanism"])
                label = dp_label(row["algorithm"], row["mechanism"], status, self.multi)
                found.append(f"{label} in {folds}")
        if not found:
            return None
        return (
            f"At ε = {epsilon:g} a model predicts a single class — {'; '.join(found)}: no "
            "better than always answering the majority class. Accuracy there only repeats "
            "the class shares; look at F1, ROC AUC or macro F1."
        )

    @property
    def multi(self) -> bool:
        """Whether the sweep compares several algorithms."""
        return len(self.settings.algorithms) > 1

    @cached_property
    def _ledger_private(self) -> dict[tuple[str, str], bool]:
        """(algorithm, mechanism) → whether every model of that line had a private
        ledger (the summary's ``private`` column)."""
        dp = self.summary[self.summary["series"] == SERIES_DP]
        if "private" not in dp.columns:
            return {}
        flags = dp.groupby(["algorithm", "mechanism"], sort=False)["private"].all()
        return {key: bool(v) for key, v in flags.items()}

    def line_status(self, algorithm: str, mechanism: str) -> str:
        """The privacy status of one DP line as its models' ledgers state it: the
        registry's verdict, or ``NO_GUARANTEE`` where the ledgers give none (inferred
        schema, replayed noise)."""
        private = self._ledger_private.get((algorithm, mechanism))
        if private is None and self.schema_inferred:
            private = False
        return series_status(algorithm, mechanism, self.statuses, private)

    @cached_property
    def statuses(self) -> dict[str, str]:
        """The privacy status (ε-DP, approximate, NOT DP) of every algorithm other than
        the forest, with the parameters it ran with (the forest's is per mechanism)."""
        s = self.settings
        return {a: privacy_status(a, s.presets.get(a)) for a in s.others}

    def describe(self) -> str:
        s = self.settings
        forest = f"{len(s.mechanisms)} mechanisms" + (
            f" × {len(s.n_estimators)} tree counts" if len(s.n_estimators) > 1 else ""
        )
        forest += f" × {len(s.depths)} depth rules" if len(s.depths) > 1 else ""
        if not self.multi and s.forest:
            grid = f"{len(s.epsilons)} ε values × {forest}"
        else:
            names = [
                f"fletcher_islam ({forest})" if a == FLETCHER_ISLAM else a for a in s.algorithms
            ]
            grid = f"{len(s.epsilons)} ε values × {len(names)} algorithm" + (
                "s" if len(names) > 1 else ""
            )
            grid += f": {', '.join(names)}, on the same folds"
        return f"{grid}, {s.folds}-fold CV, {self.seconds:.1f} s"

    def axes(self) -> list[str]:
        """The x axes worth drawing: ε always, trees and depth when several were swept
        (for the forest: the other algorithms have no such grid)."""
        out = ["epsilon"]
        if self.settings.forest and len(self.settings.n_estimators) > 1:
            out.append("n_estimators")
        if self.settings.forest and len(self.settings.depths) > 1:
            out.append("depth_rule")
        return out

    def values(self, key: str) -> list:
        """The swept values of one grid dimension, as they appear in the summary: ε over
        every algorithm, the others (mechanism, trees, depth rule, split) over the forest."""
        dp = self.summary[self.summary["series"] == SERIES_DP]
        if key != "epsilon":
            dp = dp[dp["algorithm"] == FLETCHER_ISLAM]
        return list(dict.fromkeys(dp[key].tolist()))

    def series(self) -> dict[str, str]:
        """Every DP line of the sweep, id → legend label with its privacy badge, in the
        figure's order (the forest's mechanisms, then the algorithms in registry order)."""
        rows = dp_lines(self.summary, x="epsilon", fixed={})
        out = {}
        for algorithm, mechanism in zip(rows["algorithm"], rows["mechanism"]):
            status = self.line_status(algorithm, mechanism)
            out.setdefault(
                series_id(algorithm, mechanism), dp_label(algorithm, mechanism, status, self.multi)
            )
        return out

    def series_status(self, sid: str) -> str:
        """The privacy status of a line (an id of :meth:`series`)."""
        algorithm, _, mechanism = sid.partition("/")
        if not mechanism:  # another algorithm's line: its one mechanism in the summary
            mechanism = next((m for a, m in self._ledger_private if a == algorithm), "")
        return self.line_status(algorithm, mechanism)

    def algorithm_table(self) -> pd.DataFrame:
        """One row per algorithm of the sweep: its name, the settings it ran with and its
        privacy status with them."""
        s = self.settings
        rows = []
        for a in s.algorithms:
            entry = get_algorithm(a)
            if a == FLETCHER_ISLAM:
                privacy = forest_privacy(
                    s.mechanisms, [self.line_status(a, m) for m in s.mechanisms]
                )
                settings = "; ".join(
                    f"{what} {', '.join(map(str, values))}"
                    for what, values in (
                        ("mechanisms", s.mechanisms),
                        ("trees", s.n_estimators),
                        ("depth", s.depths),
                        ("data per tree", s.data_splits),
                    )
                )
            else:
                mechanism = next((m for b, m in self._ledger_private if b == a), "")
                privacy = STATUS_BADGES[self.line_status(a, mechanism)]
                settings = ", ".join(f"{k} {v}" for k, v in s.params(a).items())
            rows.append(
                {"algorithm": a, "name": entry.name, "privacy": privacy, "settings": settings}
            )
        return pd.DataFrame(rows)

    @cached_property
    def results_csv(self) -> str:
        """Every fold of every grid point and reference: a tidy CSV."""
        return csv_text(self.result.results)

    @cached_property
    def summary_csv(self) -> str:
        """Mean and std per grid point and reference: a CSV."""
        return csv_text(self.summary)

    def candidate(
        self, epsilon: float, metric: str, fixed: dict, mechanisms=None, series=None
    ) -> pd.DataFrame:
        """The table for one candidate ε: per line (mechanism of the forest, or algorithm)
        the metric (mean ± std), the change from its non-private reference, the expected
        flip share and the guarantee of a model released with these settings (the
        forest's from its ledger; another algorithm's from its fold models' ledgers)."""
        pins = {k: v for k, v in fixed.items() if k != "epsilon"}
        rows = dp_lines(
            self.summary, x="epsilon", fixed=pins, mechanisms=mechanisms, series=series
        )
        rows = select(rows, {"epsilon": epsilon})
        baseline = majority_mean(self.summary, metric)
        out = []
        for row in rows.to_dict(orient="records"):
            algorithm, mechanism = row["algorithm"], row["mechanism"]
            status = self.line_status(algorithm, mechanism)
            mean, std = row[f"{metric}_mean"], _zero(row[f"{metric}_std"])
            reference, ref_name = self.own_reference(algorithm, fixed)
            change = "—"
            if reference is not None:
                change = f"{100 * (mean - reference[f'{metric}_mean']):+.1f} pts"
                change += f" vs {ref_name}" if self.multi else ""
            flips = row["expected_flip_pct"]
            line = {
                ("algorithm" if self.multi else "mechanism"): dp_label(
                    algorithm, mechanism, status, self.multi
                ),
                ALL_METRIC_NAMES[metric]: f"{100 * mean:.1f}% ± {100 * std:.1f}",
                "vs non-private": change,
            }
            if baseline is not None:
                line["vs majority"] = f"{_points(100 * (mean - baseline))} pts"
                line["one class only"] = _one_class_folds(row) or "—"
            line["expected flipped leaves"] = "—" if pd.isna(flips) else f"{flips:.1f}%"
            line["guarantee"] = self._guarantee(row, status, float(epsilon))
            if baseline is not None:
                line[MAJORITY_LABEL] = f"{100 * baseline:.1f}%"
            out.append(line)
        return pd.DataFrame(out)

    def _guarantee(self, row: dict, status: str, epsilon: float) -> str:
        if row["algorithm"] == FLETCHER_ISLAM:
            ledger = build_ledger(
                row["mechanism"],
                epsilon,
                int(row["n_estimators"]),
                row["data_split"],
                schema_inferred=self.schema_inferred,
                depth_rule=row["depth_rule"],
            )
            return f"{ledger.epsilon_total:g}-DP" if ledger.private else "NONE (not DP)"
        if status == EPS_DP and bool(row["private"]):
            return f"{epsilon:g}-DP"
        if status == APPROXIMATE:
            return "NONE (approximate: MCMC)"
        return "NONE (not DP)"

    def reference(
        self, series: str, fixed: dict, algorithm: str = FLETCHER_ISLAM
    ) -> pd.Series | None:
        """The summary row of a reference series; the non-private forest of
        ``algorithm`` (the forest's for the pinned trees and depth)."""
        rows = self.summary[self.summary["series"] == series]
        if series == SERIES_NONPRIVATE:
            rows = rows[rows["algorithm"] == algorithm]
            if algorithm == FLETCHER_ISLAM:
                pins = {k: v for k, v in fixed.items() if k in ("n_estimators", "depth_rule")}
                rows = select(rows, pins)
        return None if rows.empty else rows.iloc[0]

    def own_reference(self, algorithm: str, fixed: dict) -> tuple[pd.Series | None, str]:
        """An algorithm's non-private reference row and name: a forest's ε = ∞ version,
        the registry's reference for the others (scikit-learn's forest for the greedy
        trees, HistGradientBoosting for DPBoost) when the sweep computed it."""
        entry = get_algorithm(algorithm)
        series = SERIES_NONPRIVATE if entry.forest_family else entry.reference
        if series not in REFERENCE_NAMES:
            return None, ""
        name = REFERENCE_NAMES[series]
        if series == SERIES_NONPRIVATE and algorithm != FLETCHER_ISLAM:
            name = f"{algorithm} trees, true majority labels"
        return self.reference(series, fixed, algorithm), name

    def ledger_text(self, mechanism: str, epsilon: float, fixed: dict) -> str:
        """The guarantee, in words, of a forest released with these settings."""
        trees = int(fixed.get("n_estimators") or self.settings.n_estimators[0])
        split = str(fixed.get("data_split") or self.settings.data_splits[0])
        depth = fixed.get("depth_rule") or self.settings.depths[0]
        return build_ledger(
            mechanism,
            float(epsilon),
            trees,
            split,
            schema_inferred=self.schema_inferred,
            depth_rule=depth,
        ).describe()


def forest_privacy(mechanisms, statuses: Sequence[str] | None = None) -> str:
    """The forest's privacy per mechanism, e.g. ``ε-DP (permute_flip) / NOT DP (smooth_em)``
    (``statuses``: one per mechanism as the ledgers state it; default the registry's)."""
    if statuses is None:
        statuses = [series_status(FLETCHER_ISLAM, m) for m in mechanisms]
    groups: dict[str, list[str]] = {}
    for m, status in zip(mechanisms, statuses):
        groups.setdefault(STATUS_BADGES[status], []).append(m)
    order = sorted(groups, key=lambda badge: badge != STATUS_BADGES[EPS_DP])
    return " / ".join(f"{badge} ({', '.join(groups[badge])})" for badge in order)


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


def _zero(value) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else value


def _points(value: float) -> str:
    """A change in points with its sign, never "-0.0"."""
    return f"{0.0 if round(value, 1) == 0 else value:+.1f}"


def _one_class_folds(row: Mapping) -> str:
    """ "3 of 5 folds" when a summary row's model predicted one class only in some fold,
    else ""."""
    share, runs = row.get("one_class_share"), row.get("n_runs")
    if share is None or pd.isna(share) or not share or not runs:
        return ""
    hit = int(round(float(share) * int(runs)))
    return "every fold" if hit == int(runs) else f"{hit} of {int(runs)} folds"


def check(settings: SweepSettings) -> None:
    """``ValueError`` with what to change when the settings cannot be swept."""
    s = settings
    if not s.algorithms:
        raise ValueError("choose at least one algorithm to sweep")
    for a in s.algorithms:
        get_algorithm(a)  # an unknown id names the known ones
    unknown = set(s.presets) - set(s.others)
    if unknown:
        raise ValueError(
            f"settings were given for {sorted(unknown)[0]}, which is not in the sweep"
            + (
                "; the forest takes its settings from the grid"
                if FLETCHER_ISLAM in unknown
                else ""
            )
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
            presets={} if a == FLETCHER_ISLAM else {a: dict(s.presets.get(a, {}))},
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
    encoded = encode(data.frame, data.schema, training=True)
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
    "SERIES_SKLEARN",
    "SweepRun",
    "SweepSettings",
    "algorithm_options",
    "grids",
    "risk_lines",
    "run",
]
