"""What a finished sweep shows, built up in two layers that ``dpviz.app.curves.SweepRun``
completes with its fields:

- :class:`SweepLines`: its lines (a forest mechanism, or another algorithm), each line's
  privacy status as its models' ledgers state it, the axes and values a view can pick,
  the sweep in one sentence and its table of algorithms;
- :class:`SweepTables`: what one ε shows — the rare-class note and the metrics offered,
  the one-class warning, the candidate table with each line's cost and guarantee, the
  references, the ledger in words — and the CSV files.

They read only the run's fields (``result`` and its ``summary``, ``settings``,
``schema_inferred``, ``classes``, ``class_counts``, ``seconds``). Scores come from the
test folds and are NOT private; every guarantee is computed from a ledger.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpviz.evaluation.sweep import (
    FLETCHER_ISLAM,
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepResult,
)
from dpviz.evaluation.sweep_grid import row_ledger
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
from dpviz.models.registry import get_algorithm
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.tabular.outputs import csv_text

if TYPE_CHECKING:
    from dpviz.app.sweep_settings import SweepSettings

_STRUCTURE_PINS = ("n_estimators", "depth_rule", "data_split")
REFERENCE_NAMES = {
    SERIES_NONPRIVATE: "non-private forest",
    SERIES_SKLEARN: "scikit-learn random forest",
    SERIES_HGB: HGB_STYLE[0],
}


class SweepLines:
    """The lines of a finished sweep and their privacy; the views they offer."""

    # Set by the dataclass that completes this class (``dpviz.app.curves.SweepRun``).
    settings: SweepSettings
    result: SweepResult
    seconds: float
    schema_inferred: bool

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

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
        if key not in self._values:  # read once: every view change asks again
            dp = self.summary[self.summary["series"] == SERIES_DP]
            if key != "epsilon":
                dp = dp[dp["algorithm"] == FLETCHER_ISLAM]
            self._values[key] = list(dict.fromkeys(dp[key].tolist()))
        return list(self._values[key])

    @cached_property
    def _values(self) -> dict[str, list]:
        return {}

    def series(self) -> dict[str, str]:
        """Every DP line of the sweep, id → legend label with its privacy badge, in the
        figure's order (the forest's mechanisms, then the algorithms in registry order)."""
        return dict(self._series)

    @cached_property
    def _series(self) -> dict[str, str]:
        rows = dp_lines(self.summary, x="epsilon", fixed={})
        out = {}
        for algorithm, mechanism in zip(rows["algorithm"], rows["mechanism"]):
            status = self.line_status(algorithm, mechanism)
            out.setdefault(
                series_id(algorithm, mechanism), dp_label(algorithm, mechanism, status, self.multi)
            )
        return out

    def guarantee_shown(self, shown: Sequence[str]) -> bool:
        """Whether any line of ``shown`` (ids of :meth:`series`) carries a guarantee: an
        ε-DP line with a public schema. Only then do the risk sentences of an ε apply."""
        return any(self.series_status(s) == EPS_DP for s in shown) and not self.schema_inferred

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


class SweepTables(SweepLines):
    """What one ε of a finished sweep shows, and the sweep's files."""

    classes: tuple[str, ...]
    class_counts: tuple[int, ...]

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
            line["floor fell back"] = _floor_folds(row)
            line["expected flipped leaves"] = "—" if pd.isna(flips) else f"{flips:.1f}%"
            line["guarantee"] = self._guarantee(row, status, float(epsilon))
            if baseline is not None:
                line[MAJORITY_LABEL] = f"{100 * baseline:.1f}%"
            out.append(line)
        return pd.DataFrame(out)

    def _guarantee(self, row: dict, status: str, epsilon: float) -> str:
        if row["algorithm"] == FLETCHER_ISLAM:
            ledger = self._forest_ledger(row, epsilon)
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
                pinned = select(rows, pins)
                # "auto" trees resolve per ε; the one twin of that request has the size of
                # the largest swept ε and is the reference when no count matches the pin.
                rows = select(rows, {k: v for k, v in pins.items() if k != "n_estimators"})
                rows = pinned if len(pinned) or len(rows) != 1 else rows
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

    def point_ledger(self, mechanism: str, epsilon: float, fixed: dict) -> PrivacyLedger:
        """The ledger of a forest released with these settings at ``epsilon``: the
        sweep's point at the pinned trees and split, with the ε its fold models spent
        before the leaves (record count, split histograms, class prior)."""
        row = {
            "mechanism": mechanism,
            "n_estimators": fixed.get("n_estimators") or self.settings.n_estimators[0],
            "data_split": fixed.get("data_split") or self.settings.data_splits[0],
        }
        pins = {
            k: v for k, v in fixed.items() if k in ("n_estimators", "depth_rule", "data_split")
        }
        rows = dp_lines(self.summary, fixed=pins, mechanisms=[mechanism])
        rows = rows[(rows["algorithm"] == FLETCHER_ISLAM) & np.isclose(rows["epsilon"], epsilon)]
        if not rows.empty:
            row = rows.iloc[0].to_dict()
        return self._forest_ledger(row, float(epsilon))

    def ledger_text(self, mechanism: str, epsilon: float, fixed: dict) -> str:
        """The guarantee, in words, of a forest released with these settings."""
        return self.point_ledger(mechanism, epsilon, fixed).describe()

    def _forest_ledger(self, row: Mapping, epsilon: float) -> PrivacyLedger:
        """A forest point's ledger from its summary row
        (:func:`~dpviz.evaluation.sweep_grid.row_ledger`)."""
        return row_ledger(row, epsilon, schema_inferred=self.schema_inferred)


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


def ledger_mechanism(shown: Sequence[str]) -> str | None:
    """The forest mechanism whose ledger a view states for the lines ``shown`` (ids of
    ``SweepLines.series``): the first proven one, else the first; None without a forest
    line."""
    forest = [s.partition("/")[2] for s in shown if s.startswith(FLETCHER_ISLAM + "/")]
    return next((m for m in forest if MECHANISMS[m].private), forest[0] if forest else None)


def _zero(value) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else value


def _points(value: float) -> str:
    """A change in points with its sign, never "-0.0"."""
    return f"{0.0 if round(value, 1) == 0 else value:+.1f}"


def _floor_folds(row: Mapping) -> str:
    """In how many of the folds whose floor test ran it fell back on the prior ("2 of 5
    folds", "none"), "—" where none ran."""
    share, runs = row.get("floor_share"), row.get("floor_runs")
    if share is None or runs is None or pd.isna(share) or not runs:
        return "—"
    hit = int(round(float(share) * int(runs)))
    return "none" if hit == 0 else f"{hit} of {int(runs)} folds"


def _one_class_folds(row: Mapping) -> str:
    """ "3 of 5 folds" when a summary row's model predicted one class only in some fold,
    else ""."""
    share, runs = row.get("one_class_share"), row.get("n_runs")
    if share is None or pd.isna(share) or not share or not runs:
        return ""
    hit = int(round(float(share) * int(runs)))
    return "every fold" if hit == int(runs) else f"{hit} of {int(runs)} folds"
