"""Re-run the 2017 paper's experiments and set our numbers beside the printed ones.

The paper's figures used ``smooth_em``, which is NOT differentially private; every
row is run under that mechanism (to reproduce) and under ``permute_flip`` (ε-DP).
The real datasets' schemas are inferred from the data, as the paper did: those runs
are NOT private either. The synthetic generator seeds of the paper are unknown, so
SynthA–G are averaged over several seeds.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.evaluation.resources import read_dataset, reference_file
from dpviz.evaluation.sweep import SERIES_DP, SweepGrid, run_sweep, summarise
from dpviz.evaluation.synthetic import SYNTH_SPECS, make_synth
from dpviz.privacy.schema import infer_schema
from dpviz.tabular.encode import encode

FIGURES = ("4", "5", "6", "7", "8", "9", "11", "12", "13")
REAL_DATASETS = {
    "WallSensor": "wall_robot",
    "PenWritten": "pendigits",
    "GammaTele": "magic_gamma",
    "Adult": "adult",
    "Mushroom": "mushroom",
    "Nursery": "nursery",
}
# The paper's series → (mechanism, data split, depth rule) of the same experiment.
SERIES = {
    "smooth_em": ("smooth_em", "disjoint", "theorem2"),
    "global_em": ("global_em", "disjoint", "theorem2"),
    "disjoint": ("smooth_em", "disjoint", "theorem2"),
    "not_disjoint": ("smooth_em", "shared", "theorem2"),
    "depth_m": ("smooth_em", "disjoint", "full"),
    "depth_m_over_2": ("smooth_em", "disjoint", "half"),
    "depth_theorem2": ("smooth_em", "disjoint", "theorem2"),
}
METRICS = {
    "accuracy_pct": ("accuracy", 100.0),
    "auc": ("auc", 1.0),
    "f1": ("f1", 1.0),
    "mean_smooth_sensitivity_nonempty_leaves": ("mean_smooth_sensitivity", 1.0),
    "flipped_nonempty_leaves_pct": ("flipped_leaf_pct", 1.0),
}
# The paper's baselines: JPW with its registry defaults (10 trees), Friedman & Schuster
# with their own split score (the max operator alone; dpviz's default adds Gini) and
# their equal-width bins (dpviz's default cuts at noisy quantiles from ε = 1).
OTHER_ALGORITHMS = ("jpw", "friedman_schuster")
BASELINE_PRESETS = {"friedman_schuster": {"criterion": "max", "split_points": "uniform"}}
SCALING_SIZES = (3_000, 30_000, 300_000, 3_000_000)
SCALING_EPSILONS = (0.01, 0.1, 1.0)


REFERENCE_COLUMNS = ("figure", "metric", "series", "epsilon", "trees", "dataset", "value")


def reference_rows(reference_csv: Path | None, figure: str) -> pd.DataFrame:
    """The paper's printed rows of ``figure`` (``reference_csv`` None: the package's copy)."""
    if reference_csv is None:
        reference_csv = reference_file("fletcher2017_results.csv")
        if reference_csv is None:
            raise ValueError(
                "this install of dpviz lacks the paper's numbers (dpviz/reference); "
                "pass --reference fletcher2017_results.csv"
            )
    if not Path(reference_csv).is_file():
        raise ValueError(f"reference table {reference_csv} is missing; pass --reference")
    try:
        table = pd.read_csv(reference_csv)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(
            f"reference table {reference_csv} cannot be read as CSV: {first}"
        ) from None
    missing = [c for c in REFERENCE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"reference table {reference_csv} lacks the column(s) {', '.join(missing)}, as "
            "dpviz/reference/fletcher2017_results.csv has them"
        )
    table["value"] = pd.to_numeric(table["value"], errors="coerce")
    table["epsilon"] = pd.to_numeric(table["epsilon"], errors="coerce")
    prefix = f"Fig{figure}"
    chosen = table.figure.astype(str).str.fullmatch(prefix + "[ab]?")
    return table[chosen].reset_index(drop=True)


def _datasets(name: str, datasets_dir: Path | None, generator_seeds: int):
    """(encoded, schema) per generator seed for SynthA–G; one pair for a real dataset."""
    if name in SYNTH_SPECS:
        for seed in range(generator_seeds):
            frame, schema = make_synth(name, 30_000, seed=seed)
            yield encode(frame, schema), schema
        return
    frame = read_dataset(REAL_DATASETS[name], datasets_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = infer_schema(frame, "label")
    yield encode(frame, schema), schema


# The paper's forest: no class prior and uniform split points (dpviz's defaults spend a
# share of ε on each).
PAPER_FOREST = {"prior_share": 0.0, "split_points": "uniform"}


def reproduce(
    figure: str,
    *,
    reference_csv: Path | None = None,
    datasets_dir: Path | None = None,
    folds: int = 5,
    repeats: int = 1,
    generator_seeds: int = 3,
    n_jobs: int = 1,
    progress: Callable[[int, int, str], None] | None = None,
    noise_seed: int | None = None,
) -> pd.DataFrame:
    """One row per number the paper prints for ``figure``, with ours beside it.

    The noise is fresh and secret unless ``noise_seed`` replays it (exact reproduction;
    such models are NOT private, which does not matter for a table of accuracies)."""
    if figure not in FIGURES:
        raise ValueError(f"figure must be one of {', '.join(FIGURES)}, got {figure!r}")
    if generator_seeds < 1:
        raise ValueError("generator seeds must be at least 1")
    if figure == "9":
        return _scaling(folds, repeats, n_jobs, progress)
    rows = reference_rows(reference_csv, figure)
    rows = rows[rows.dataset.isin([*SYNTH_SPECS, *REAL_DATASETS])]
    out = []
    names = list(dict.fromkeys(rows.dataset))
    for i, name in enumerate(names):
        wanted = rows[rows.dataset == name]
        summary = _sweep_dataset(
            name, wanted, datasets_dir, folds, repeats, generator_seeds, n_jobs, noise_seed
        )
        for _, ref in wanted.iterrows():
            out.append(_compare(ref, summary))
        if progress is not None:
            progress(i + 1, len(names), f"{name} done")
    return pd.DataFrame(out)


def _sweep_dataset(
    name, wanted, datasets_dir, folds, repeats, generator_seeds, n_jobs, noise_seed=None
):
    known = wanted[wanted.series.isin(list(SERIES))]
    others = [a for a in OTHER_ALGORITHMS if a in set(wanted.series)]
    if known.empty and not others:
        return pd.DataFrame()
    configs = [SERIES[s] for s in known.series] or [SERIES["smooth_em"]]
    grid = SweepGrid(
        epsilons=sorted({float(e) for e in wanted.epsilon}),
        n_estimators=sorted({int(t) for t in known.trees}) or [100],
        depths=list(dict.fromkeys(c[2] for c in configs)),
        mechanisms=list(dict.fromkeys([*(c[0] for c in configs), "permute_flip"])),
        data_splits=list(dict.fromkeys(c[1] for c in configs)),
        references=False,
        algorithms=["fletcher_islam", *others],
        presets={"fletcher_islam": PAPER_FOREST, **BASELINE_PRESETS},
    )
    results = []
    for seed, (encoded, schema) in enumerate(_datasets(name, datasets_dir, generator_seeds)):
        sweep = run_sweep(
            encoded,
            schema,
            grid,
            folds=folds,
            repeats=repeats,
            seed=seed,
            n_jobs=n_jobs,
            noise_seed=noise_seed,
        )
        results.append(sweep.results.assign(generator_seed=seed))
    return summarise(pd.concat(results, ignore_index=True))


def _compare(ref: pd.Series, summary: pd.DataFrame) -> dict:
    row = {
        "figure": ref.figure,
        "dataset": ref.dataset,
        "series": ref.series,
        "epsilon": ref.epsilon,
        "trees": ref.trees,
        "metric": ref.metric,
        "paper": float(ref.value),
    }
    if ref.series in OTHER_ALGORITHMS and not summary.empty:
        column, scale = METRICS[ref.metric]
        match = summary[
            (summary.algorithm == ref.series) & np.isclose(summary.epsilon, float(ref.epsilon))
        ].iloc[0]
        row["ours"] = scale * float(match[f"{column}_mean"])
        row["ours_std"] = scale * float(match[f"{column}_std"])
        row["ours_mechanism"] = ref.series
        row["difference"] = row["ours"] - row["paper"]
        return row
    if ref.series not in SERIES or summary.empty:
        row["note"] = "algorithm not in dpviz"
        return row
    mech, split, depth = SERIES[ref.series]
    column, scale = METRICS[ref.metric]
    for label, mechanism in (("ours", mech), ("ours_permute_flip", "permute_flip")):
        match = summary[
            (summary.series == SERIES_DP)
            & (summary.algorithm == "fletcher_islam")
            & (summary.mechanism == mechanism)
            & np.isclose(summary.epsilon, float(ref.epsilon))
            & (summary.n_estimators == int(ref.trees))
            & (summary.depth_rule == depth)
            & (summary.data_split == split)
        ].iloc[0]
        if column in ("accuracy", "auc", "f1"):
            row[label] = scale * float(match[f"{column}_mean"])
            row[f"{label}_std"] = scale * float(match[f"{column}_std"])
        else:
            row[label] = float(match[column])
            row[f"{label}_std"] = math.nan
    row["ours_mechanism"] = mech
    row["difference"] = row["ours"] - row["paper"]
    return row


def _scaling(folds, repeats, n_jobs, progress) -> pd.DataFrame:
    """Fig. 9: SynthF with n = 3,000 … 3,000,000 at ε = 0.01, 0.1, 1 (no printed values)."""
    grid = SweepGrid(
        epsilons=SCALING_EPSILONS, mechanisms=("smooth_em", "permute_flip"), references=False
    )
    out = []
    for i, n in enumerate(SCALING_SIZES):
        frame, schema = make_synth("SynthF", n, seed=0)
        summary = run_sweep(
            encode(frame, schema), schema, grid, folds=folds, repeats=repeats, n_jobs=n_jobs
        ).summary
        for _, r in summary.iterrows():
            out.append(
                {
                    "figure": "Fig9",
                    "dataset": "SynthF",
                    "n_records": n,
                    "epsilon": r.epsilon,
                    "mechanism": r.mechanism,
                    "accuracy_pct": 100 * r.accuracy_mean,
                    "accuracy_std": 100 * r.accuracy_std,
                    "fit_seconds": r.fit_seconds,
                }
            )
        if progress is not None:
            progress(i + 1, len(SCALING_SIZES), f"n = {n:,} done")
    return pd.DataFrame(out)


def to_markdown(table: pd.DataFrame) -> str:
    """The comparison as a markdown table (mean ± std; NOT DP rows say so)."""
    if "n_records" in table.columns:
        lines = ["| n | ε | mechanism | accuracy % | fit s |", "|---:|---:|---|---:|---:|"]
        for _, r in table.iterrows():
            mech = r.mechanism + (" (NOT DP)" if r.mechanism == "smooth_em" else "")
            lines.append(
                f"| {r.n_records:,} | {r.epsilon:g} | {mech} | "
                f"{r.accuracy_pct:.1f} ± {r.accuracy_std:.1f} | {r.fit_seconds:.2f} |"
            )
        return "\n".join(lines)
    lines = [
        "| figure | dataset | series | ε | trees | paper | ours (mechanism) | diff | "
        "ours, permute_flip (ε-DP) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in table.iterrows():
        if "ours" not in r or pd.isna(r.get("ours")):
            lines.append(
                f"| {r.figure} | {r.dataset} | {r.series} | {r.epsilon:g} | {r.trees} "
                f"| {r.paper:g} | — ({r.get('note', '')}) | | |"
            )
            continue
        digits = 1 if r.metric.endswith("pct") else 3
        mech = r.ours_mechanism + (" NOT DP" if r.ours_mechanism == "smooth_em" else "")
        private = (
            ""
            if pd.isna(r.get("ours_permute_flip"))
            else _pm(r.ours_permute_flip, r.ours_permute_flip_std, digits)
        )
        lines.append(
            f"| {r.figure} | {r.dataset} | {r.series} | {r.epsilon:g} | {r.trees} | "
            f"{r.paper:.{digits}f} | {_pm(r.ours, r.ours_std, digits)} ({mech}) | "
            f"{r.difference:+.{digits}f} | {private} |"
        )
    return "\n".join(lines)


def _pm(mean, std, digits):
    return f"{mean:.{digits}f}" if pd.isna(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"
