"""The issues' must-hold checks on what was run: PASS / FAIL / N/A with what was measured."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bench.utility.methods import LABELS
from bench.utility.tables import _binary_auc, _fmt, summarise, versus_diffprivlib
from dpviz.evaluation.defaults import ALGORITHM as DEFAULT_FOREST
from dpviz.models.registry import ALGORITHMS

LARGE_ROWS = 10_000  # issue 28: DPBoost at ε = 10 within 3 points of HistGB from here on


def checks(results: pd.DataFrame) -> list[dict]:
    """The issue's must-hold checks on what was run: name, PASS/FAIL/N/A and detail."""
    s = summarise(results)
    s = s[s.failed < s.folds]
    out = []

    def get(dataset, method, eps):
        row = s[(s.dataset == dataset) & (s.method == method) & (s.epsilon == eps)]
        return None if row.empty else row.iloc[0]

    for algorithm in ALGORITHMS:
        part = s[(s.method == algorithm) & np.isfinite(s.epsilon)]
        if part.empty:
            continue
        gaps = part.accuracy - part.majority
        worst = part.loc[gaps.idxmin()]
        ok = bool((gaps >= -0.5).all())
        out.append(
            {
                "check": f"{algorithm}: never more than 0.5 points below the majority",
                "result": "PASS" if ok else "FAIL",
                "detail": f"worst gap {gaps.min():+.2f} points ({worst.dataset}, "
                f"ε={worst.epsilon:g}: {worst.accuracy:.1f} vs {worst.majority:.1f}); "
                f"{int((gaps < -0.5).sum())} of {len(gaps)} cells below −0.5",
            }
        )
    row = get("adult", "dpboost", 1.0)
    out.append(
        {
            "check": "dpboost at ε=1 on adult ≥ 80%",
            "result": "N/A" if row is None else ("PASS" if row.accuracy >= 80 else "FAIL"),
            "detail": "not run" if row is None else f"{row.accuracy:.1f} ± {row.accuracy_sd:.1f}%",
        }
    )
    details, ok = [], True
    for name in s.dataset.unique():
        private, twin = get(name, "dpboost", 10.0), get(name, "dpboost_twin", math.inf)
        if private is None or twin is None:
            continue
        gap = twin.accuracy - private.accuracy
        ok &= gap <= 5
        details.append(f"{name} {private.accuracy:.1f} vs {twin.accuracy:.1f} ({gap:+.1f})")
    out.append(
        {
            "check": "dpboost at ε=10 within 5 points of its twin (ε=10⁶) on every dataset",
            "result": "N/A" if not details else ("PASS" if ok else "FAIL"),
            "detail": "; ".join(details) or "not run",
        }
    )
    for algorithm in ("friedman_schuster", "dpea"):
        row = get("car", algorithm, 1.0)
        out.append(
            {
                "check": f"{algorithm} on car at ε=1 ≥ majority + 2",
                "result": "N/A"
                if row is None
                else ("PASS" if row.accuracy >= row.majority + 2 else "FAIL"),
                "detail": "not run"
                if row is None
                else f"{row.accuracy:.2f} vs majority {row.majority:.2f} "
                f"({row.accuracy - row.majority:+.2f})",
            }
        )
    part = s[(s.method == "fletcher_islam") & (s.epsilon == 1.0) & (s.n_classes == 2)]
    mean = part.auc.mean() if not part.empty else math.nan
    out.append(
        {
            "check": "fletcher_islam mean AUC over the binary datasets at ε=1 ≥ 87",
            "result": "N/A" if part.empty else ("PASS" if mean >= 87 else "FAIL"),
            "detail": "not run"
            if part.empty
            else f"{mean:.1f} over "
            + ", ".join(f"{d} {a:.1f}" for d, a in zip(part.dataset, part.auc, strict=True)),
        }
    )
    return out


def checks_markdown(results: pd.DataFrame) -> str:
    lines = ["| must hold | result | measured |", "|---|---|---|"]
    for c in checks(results):
        lines.append(f"| {c['check']} | **{c['result']}** | {c['detail']} |")
    return "\n".join(lines)


def group_checks(results: pd.DataFrame, group: str) -> list[dict]:
    """Issue 28's must-hold checks on one group and one seed: name, PASS/FAIL/N/A, detail.

    * at ε = 0.1 the default forest's accuracy ≥ the best diffprivlib model's on at least
      8 of the 11 shared sets, or on 6 of 8 (so 75%) of the validation sets;
    * at ε = 0.1 its mean binary AUC ≥ diffprivlib RF's and ≥ DP-EBM's; at ε = 1 ≥ DP-EBM's;
    * DPBoost at ε = 10 within 3 points of HistGradientBoosting on every set with ≥ 10,000
      rows."""
    out = []
    table = versus_diffprivlib(results, 0.1)
    if table.empty:
        out.append(
            {"check": "forest ≥ best diffprivlib at ε=0.1", "result": "N/A", "detail": "not run"}
        )
    else:
        n = len(table)
        need = min(8, n) if group == "shared" else math.ceil(0.75 * n)
        at_least = int((table.delta >= 0).sum())
        behind = ", ".join(
            f"{r.dataset} {r.delta:+.1f}" for r in table.itertuples() if r.delta < 0
        )
        out.append(
            {
                "check": f"{DEFAULT_FOREST} at ε=0.1: accuracy ≥ best diffprivlib on ≥ {need} "
                f"of {n} {group} sets",
                "result": "PASS" if at_least >= need else "FAIL",
                "detail": f"≥ on {at_least} of {n}; behind: {behind or 'none'}",
            }
        )
    for eps, peers in ((0.1, ("diffprivlib_rf", "dp_ebm")), (1.0, ("dp_ebm",))):
        forest, n_forest = _binary_auc(results, DEFAULT_FOREST, eps)
        for peer in peers:
            other, n_other = _binary_auc(results, peer, eps)
            decided = np.isfinite(forest) and np.isfinite(other) and n_forest == n_other
            out.append(
                {
                    "check": f"{DEFAULT_FOREST} at ε={eps:g}: mean binary AUC ≥ {LABELS[peer]}",
                    "result": "N/A" if not decided else ("PASS" if forest >= other else "FAIL"),
                    "detail": f"{_fmt(forest)} (n={n_forest}) vs {_fmt(other)} (n={n_other})",
                }
            )
    s = summarise(results)
    s = s[s.failed < s.folds]
    large = sorted(s[s.n_rows >= LARGE_ROWS].dataset.unique())
    details, ok = [], True
    for name in large:
        boost = s[(s.dataset == name) & (s.method == "dpboost") & (s.epsilon == 10.0)]
        hgb = s[(s.dataset == name) & (s.method == "hist_gradient_boosting")]
        if boost.empty or hgb.empty:
            continue
        gap = hgb.accuracy.iloc[0] - boost.accuracy.iloc[0]
        ok &= gap <= 3
        details.append(
            f"{name} {boost.accuracy.iloc[0]:.1f} vs {hgb.accuracy.iloc[0]:.1f} ({-gap:+.1f})"
        )
    out.append(
        {
            "check": "dpboost at ε=10 within 3 points of HistGB on every set "
            f"≥ {LARGE_ROWS:,} rows",
            "result": "N/A" if not details else ("PASS" if ok else "FAIL"),
            "detail": "; ".join(details) or "not run",
        }
    )
    return out


# Issue 28's must-hold: "macro-F1 objective: above the majority's macro-F1 on every binary
# set with < 15% positives".
MACRO_F1 = "macro_f1"
MINORITY_BELOW = 0.15


def imbalanced_sets(results: pd.DataFrame) -> dict[str, float]:
    """Binary sets of ``results`` whose minority share is below :data:`MINORITY_BELOW`,
    with that share: 1 − the majority's mean test accuracy over the folds (stratified
    folds: the whole set's share to within a record per fold)."""
    majority = results[(results.method == "majority") & (results.n_classes == 2)]
    share = 1.0 - majority.groupby("dataset", sort=False).majority_accuracy.mean()
    return {str(name): float(v) for name, v in share.items() if v < MINORITY_BELOW}


def objective_checks(results: pd.DataFrame) -> list[dict]:
    """Issue 28's macro-F1 check, per dpviz algorithm: on every binary set with a minority
    below 15% and at every ε run, the mean macro-F1 over the folds with
    ``objective=macro_f1`` above the majority's mean macro-F1 on the same folds (failed
    folds left out of both). Only rows run with ``--objective macro_f1`` count: nothing
    is returned for other objectives (the peers keep their argmax and are not checked)."""
    if "objective" not in results.columns:
        return []
    rows = results[(results.objective == MACRO_F1) & (results.error.fillna("") == "")]
    if rows.empty:
        return []
    sets = imbalanced_sets(rows)
    out = []
    for algorithm in [a for a in ALGORITHMS if a in set(rows.method)]:
        part = rows[(rows.method == algorithm) & rows.dataset.isin(list(sets))]
        name = f"{algorithm} with objective macro_f1: macro-F1 > the majority's on every "
        name += f"binary set with < {MINORITY_BELOW:.0%} minority, every ε"
        if part.empty:
            out.append({"check": name, "result": "N/A", "detail": "no such set in this run"})
            continue
        cells = part.groupby(["dataset", "epsilon"], sort=False)[["macro_f1", "majority_macro_f1"]]
        means = 100.0 * cells.mean()
        below = means[means.macro_f1 <= means.majority_macro_f1]
        said = "; ".join(
            f"{d} ε={e:g} {r.macro_f1:.1f} vs {r.majority_macro_f1:.1f}"
            for (d, e), r in below.iterrows()
        )
        shares = ", ".join(f"{d} {100 * sets[d]:.1f}%" for d in part.dataset.unique())
        out.append(
            {
                "check": name,
                "result": "FAIL" if len(below) else "PASS",
                "detail": f"above in {len(means) - len(below)} of {len(means)} (set, ε); "
                f"not above: {said or 'none'} (minority: {shares})",
            }
        )
    return out
