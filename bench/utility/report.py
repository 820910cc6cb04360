"""The whole report: every group and every seed separately, from one or more result CSVs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.utility.checks import checks, group_checks, objective_checks
from bench.utility.data import GROUPS, group_of
from bench.utility.methods import LABELS
from bench.utility.tables import (
    _binary_auc,
    _fmt,
    accuracy_markdown,
    overview_markdown,
    to_markdown,
    versus_diffprivlib,
    versus_markdown,
)
from dpviz.evaluation.defaults import ALGORITHM as DEFAULT_FOREST
from dpviz.models.objective import ACCURACY, OBJECTIVES


def normalise(results: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Results with ``group``, ``seed`` and ``objective`` columns: CSVs written before
    issue 28 lack the first two (their group follows from the dataset name, their seed is
    ``seed``), CSVs written before ``--objective`` the last (they ran at accuracy)."""
    results = results.copy()
    if "group" not in results.columns or results["group"].isna().any():
        groups = results["dataset"].map(group_of)
        results["group"] = results.get("group", groups).fillna(groups)
    if "seed" not in results.columns:
        results["seed"] = seed
    if "objective" not in results.columns:
        results["objective"] = ACCURACY
    results["objective"] = results["objective"].fillna(ACCURACY)
    return results


def _runs(results: pd.DataFrame):
    """(group, seed, objective, rows) of every run in ``results``, groups in
    :data:`GROUPS` order, then seeds, then objectives in their public order."""
    for group in [g for g in GROUPS if g in set(results.group)]:
        in_group = results[results.group == group]
        for seed in sorted(in_group.seed.unique()):
            in_seed = in_group[in_group.seed == seed]
            for objective in [o for o in OBJECTIVES if o in set(in_seed.objective)]:
                yield group, seed, objective, in_seed[in_seed.objective == objective]


def _named(group: str, objective: str) -> str:
    """The run's label: the group, and the objective unless it is accuracy (the default,
    so that a report of accuracy runs reads as it always did)."""
    return group if objective == ACCURACY else f"{group}, objective {objective}"


def summary_markdown(results: pd.DataFrame) -> str:
    """One line per (group, seed, ε): the default forest's wins / ties / losses against the
    best diffprivlib model, on how many sets it is at least as accurate, and the mean binary
    AUC of the forest, diffprivlib RF and DP-EBM."""
    results = normalise(results)
    label = LABELS[DEFAULT_FOREST]
    lines = [
        f"| group | seed | ε | {label}: W / T / L vs best diffprivlib | ≥ best | "
        f"AUC {label} | AUC diffprivlib RF | AUC DP-EBM |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for group, seed, objective, part in _runs(results):
        for e in sorted(x for x in part.epsilon.unique() if np.isfinite(x)):
            table = versus_diffprivlib(part, e)
            count = table.verdict.value_counts()
            aucs = []
            for m in (DEFAULT_FOREST, "diffprivlib_rf", "dp_ebm"):
                mean, n = _binary_auc(part, m, e)
                aucs.append(f"{_fmt(mean)} (n={n})" if n else "–")
            lines.append(
                f"| {_named(group, objective)} | {int(seed)} | {e:g} | {count.get('win', 0)} / "
                f"{count.get('tie', 0)} / {count.get('loss', 0)} | "
                f"{int((table.delta >= 0).sum())} of {len(table)} | " + " | ".join(aucs) + " |"
            )
    return "\n".join(lines)


def report_markdown(results: pd.DataFrame) -> str:
    """Every group, seed and objective separately: the forest against diffprivlib, the
    overview, the must-hold checks (issue 28's, then the per-algorithm ones; with
    ``macro_f1``, the macro-F1 objective's too) and the per-dataset tables."""
    results = normalise(results)
    parts = [summary_markdown(results)]
    for group, seed, objective, part in _runs(results):
        n = part.dataset.nunique()
        lines = ["| must hold | result | measured |", "|---|---|---|"]
        for c in [*group_checks(part, group), *checks(part), *objective_checks(part)]:
            lines.append(f"| {c['check']} | **{c['result']}** | {c['detail']} |")
        suffix = "" if objective == ACCURACY else f", objective {objective}"
        parts += [
            f"## {group} group ({n} datasets), seed {int(seed)}{suffix}",
            accuracy_markdown(part),
            versus_markdown(part),
            overview_markdown(part),
            "\n".join(lines),
            to_markdown(part),
        ]
    return "\n\n".join(parts)
