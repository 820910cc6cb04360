"""What the Curves page does: run a cross-validated sweep once, then answer every view
of it (metric, axis, series, the ε under discussion) from its summary frame.

Metrics come from the test folds and are NOT private. The guarantee of each candidate
ε is computed from a ledger (``dpviz.forest.build_ledger``), never typed by hand.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import cached_property

import pandas as pd

from .app_support import PreparedData
from .app_sweep import LADDERS, Progress, epsilon_ladder, run_with_references, sweep_jobs
from .data import encode
from .figures import METRIC_NAMES, mechanism_label
from .figures_curves import select
from .forest import build_ledger
from .mechanisms import MECHANISMS
from .risk import risk_sentences
from .sweep import SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN, SweepResult

DEFAULT_MECHANISMS = ("permute_flip", "count_em", "smooth_em")
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

    @property
    def epsilons(self) -> list[float]:
        return epsilon_ladder(self.eps_low, self.eps_high, self.per_decade)

    @property
    def n_configurations(self) -> int:
        return (
            len(self.epsilons)
            * len(self.mechanisms)
            * len(self.n_estimators)
            * len(self.depths)
            * len(self.data_splits)
        )


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

    @property
    def summary(self) -> pd.DataFrame:
        return self.result.summary

    def describe(self) -> str:
        s = self.settings
        return (
            f"{len(s.epsilons)} ε values × {len(s.mechanisms)} mechanisms"
            + (f" × {len(s.n_estimators)} tree counts" if len(s.n_estimators) > 1 else "")
            + (f" × {len(s.depths)} depth rules" if len(s.depths) > 1 else "")
            + f", {s.folds}-fold CV, {self.seconds:.1f} s"
        )

    def axes(self) -> list[str]:
        """The x axes worth drawing: ε always, trees and depth when several were swept."""
        out = ["epsilon"]
        if len(self.settings.n_estimators) > 1:
            out.append("n_estimators")
        if len(self.settings.depths) > 1:
            out.append("depth_rule")
        return out

    def values(self, key: str) -> list:
        """The swept values of one grid dimension, as they appear in the summary."""
        dp = self.summary[self.summary["series"] == SERIES_DP]
        return list(dict.fromkeys(dp[key].tolist()))

    @cached_property
    def results_csv(self) -> str:
        """Every fold of every grid point and reference: a tidy CSV."""
        return self.result.results.to_csv(index=False)

    @cached_property
    def summary_csv(self) -> str:
        """Mean and std per grid point and reference: a CSV."""
        return self.summary.to_csv(index=False)

    def candidate(self, epsilon: float, metric: str, fixed: dict, mechanisms=None) -> pd.DataFrame:
        """The table for one candidate ε: per mechanism the metric (mean ± std), the
        change from the non-private forest, the expected flip share and the guarantee
        of a model released with these settings (from its ledger)."""
        rows = select(
            self.summary[self.summary["series"] == SERIES_DP], {**fixed, "epsilon": epsilon}
        )
        if mechanisms is not None:
            rows = rows[rows["mechanism"].isin(list(mechanisms))]
        reference = self.reference(SERIES_NONPRIVATE, fixed)
        out = []
        for row in rows.itertuples(index=False):
            row = row._asdict()
            mean, std = row[f"{metric}_mean"], _zero(row[f"{metric}_std"])
            ledger = build_ledger(
                row["mechanism"],
                float(epsilon),
                int(row["n_estimators"]),
                row["data_split"],
                schema_inferred=self.schema_inferred,
                depth_rule=row["depth_rule"],
            )
            out.append(
                {
                    "mechanism": mechanism_label(row["mechanism"]),
                    METRIC_NAMES[metric]: f"{100 * mean:.1f}% ± {100 * std:.1f}",
                    "vs non-private": f"{100 * (mean - reference[f'{metric}_mean']):+.1f} pts"
                    if reference is not None
                    else "—",
                    "expected flipped leaves": f"{row['expected_flip_pct']:.1f}%",
                    "guarantee": f"{ledger.epsilon_total:g}-DP"
                    if ledger.private
                    else "NONE (not DP)",
                }
            )
        return pd.DataFrame(out)

    def reference(self, series: str, fixed: dict) -> pd.Series | None:
        """The summary row of a reference series for the pinned trees and depth."""
        rows = self.summary[self.summary["series"] == series]
        if series == SERIES_NONPRIVATE:
            pins = {k: v for k, v in fixed.items() if k in ("n_estimators", "depth_rule")}
            rows = select(rows, pins)
        return None if rows.empty else rows.iloc[0]

    def ledger_text(self, mechanism: str, epsilon: float, fixed: dict) -> str:
        """The guarantee, in words, of a model released with these settings."""
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


def risk_lines(epsilon: float, prior: float = 0.5) -> list[str]:
    """What a total ε promises a person in the data, in plain sentences (from
    ``dpviz.risk``: formulas of ε only, public). They hold only for a model that is
    proven ε-DP with a public schema."""
    sentences = risk_sentences(epsilon, prior)
    return [
        sentences[key] for key in ("odds_ratio_bound", "posterior_bound", "membership_advantage")
    ]


def _zero(value) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else value


def run(data: PreparedData, settings: SweepSettings, progress: Progress | None = None) -> SweepRun:
    """Run the sweep of ``settings`` on ``data`` (``ValueError`` with a message)."""
    if not settings.mechanisms:
        raise ValueError("choose at least one mechanism to sweep")
    for m in settings.mechanisms:
        if m not in MECHANISMS:
            raise ValueError(f"unknown mechanism {m!r}")
    start = time.perf_counter()
    encoded = encode(data.frame, data.schema, training=True)
    result = run_with_references(
        encoded,
        data.schema,
        epsilons=settings.epsilons,
        n_estimators=settings.n_estimators,
        depths=settings.depths,
        mechanisms=settings.mechanisms,
        data_splits=settings.data_splits,
        sklearn=settings.sklearn_reference,
        folds=settings.folds,
        seed=settings.seed,
        n_jobs=sweep_jobs(encoded.n_records, settings.folds),
        progress=progress,
    )
    return SweepRun(
        dataset=data.name,
        fingerprint=data.fingerprint,
        settings=settings,
        result=result,
        seconds=time.perf_counter() - start,
        n_records=encoded.n_records,
        schema_inferred=data.schema.inferred,
    )


__all__ = [
    "DEFAULT_MECHANISMS",
    "SERIES_SKLEARN",
    "SweepRun",
    "SweepSettings",
    "risk_lines",
    "run",
]
