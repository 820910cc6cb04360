"""The markdown tables: per-dataset scores, the overview, and the default forest against the
best diffprivlib model."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bench.utility.methods import DIFFPRIVLIB, LABELS, PEERS, all_methods
from dpviz.evaluation.defaults import ALGORITHM as DEFAULT_FOREST

# Two accuracies closer than this are a tie in the wins/ties/losses count: the folds' own
# standard deviation is larger on every set, and it is the majority floor's tolerance.
TIE_POINTS = 0.5


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and sd over folds per (dataset, method, ε), in points (×100); ``error`` is the
    first error seen, ``failed`` how many folds failed."""
    r = results.copy()
    r["error"] = r["error"].fillna("").astype(str)
    for col in (
        "accuracy",
        "macro_f1",
        "auc",
        "majority_accuracy",
        "majority_macro_f1",
        "majority_auc",
    ):
        r[col] = 100.0 * r[col].astype(float)
    keys = ["dataset", "method", "epsilon"]
    grouped = r.groupby(keys, sort=False)
    out = grouped.agg(
        accuracy=("accuracy", "mean"),
        accuracy_sd=("accuracy", "std"),
        macro_f1=("macro_f1", "mean"),
        auc=("auc", "mean"),
        majority=("majority_accuracy", "mean"),
        folds=("fold", "nunique"),
        fit_seconds=("fit_seconds", "mean"),
        n_classes=("n_classes", "first"),
        n_rows=("n_rows", "first"),
    ).reset_index()
    errors = grouped["error"].agg(lambda e: next((x for x in e if x), ""))
    failed = grouped["error"].agg(lambda e: int(sum(bool(x) for x in e)))
    out["error"] = errors.to_numpy()
    out["failed"] = failed.to_numpy()
    return out


def _fmt(mean: float, sd: float | None = None, digits: int = 1) -> str:
    if mean is None or not np.isfinite(mean):
        return "–"
    if sd is None or not np.isfinite(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def to_markdown(results: pd.DataFrame) -> str:
    """One table per dataset: a row per method, accuracy ± sd / macro-F1 / AUC per ε (in
    %); references and the majority class once (they do not depend on ε)."""
    summary = summarise(results)
    lines = []
    methods = [m for m in [*all_methods(), "majority"] if m in set(summary.method)]
    for name, part in summary.groupby("dataset", sort=False):
        first = part.iloc[0]
        epsilons = sorted(e for e in part.epsilon.unique() if np.isfinite(e))
        folds = int(part.folds.max())
        lines.append(
            f"**{name}** ({int(first.n_rows):,} rows, {int(first.n_classes)} classes, "
            f"{folds} folds; majority {_fmt(part.majority.iloc[0])}%)\n"
        )
        head = ["method"]
        for e in epsilons:
            head += [f"acc ε={e:g}", f"F1 ε={e:g}", f"AUC ε={e:g}"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" + "---:|" * (len(head) - 1))
        for method in methods:
            rows = part[part.method == method].set_index("epsilon")
            cells = [LABELS.get(method, method)]
            for e in epsilons:
                key = e if e in rows.index else (math.inf if math.inf in rows.index else None)
                if key is None:
                    cells += ["", "", ""]
                    continue
                row = rows.loc[key]
                if row.failed == row.folds:
                    said = f"error: {_short(row.error)}"
                    cells += ["same error" if said in cells else said, "", ""]
                    continue
                acc = _fmt(row.accuracy, row.accuracy_sd)
                if row.failed:
                    acc += f" ({int(row.failed)} folds failed)"
                cells += [acc, _fmt(row.macro_f1), _fmt(row.auc)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def overview_markdown(results: pd.DataFrame) -> str:
    """Per method and ε, over the datasets run: the mean and the worst accuracy gap to the
    majority rate (points) and the mean AUC over the binary datasets (%)."""
    s = summarise(results)
    s = s[s.failed < s.folds]
    epsilons = sorted(e for e in s.epsilon.unique() if np.isfinite(e))
    binary = sorted(s[s.n_classes == 2].dataset.unique())
    head = ["method"]
    for e in epsilons:
        head += [f"Δacc ε={e:g}: mean (worst)", f"AUC ε={e:g}"]
    lines = [
        f"Over {s.dataset.nunique()} datasets (AUC: the {len(binary)} binary ones: "
        f"{', '.join(binary)}); Δacc = accuracy − majority rate, in points.\n",
        "| " + " | ".join(head) + " |",
        "|" + "---|" + "---:|" * (len(head) - 1),
    ]
    for method in [m for m in all_methods() if m in set(s.method)]:
        cells = [LABELS.get(method, method)]
        for e in epsilons:
            part = s[(s.method == method) & (s.epsilon.isin([e, math.inf]))]
            gap = part.accuracy - part.majority
            if part.empty:
                cells += ["", ""]
                continue
            worst = part.loc[gap.idxmin()]
            fewer = "" if part.dataset.nunique() == s.dataset.nunique() else "*"
            cells.append(f"{gap.mean():+.1f} ({gap.min():+.1f} {worst.dataset}){fewer}")
            auc = part[part.n_classes == 2]
            cells.append(_fmt(auc.auc.mean()) + ("" if len(auc) == len(binary) else "*"))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("\\* over fewer datasets: the method failed on the others (tables below).")
    return "\n".join(lines)


def _short(error: str) -> str:
    return error.split(" (")[0].replace("|", "/")[:90]


def versus_diffprivlib(results: pd.DataFrame, epsilon: float) -> pd.DataFrame:
    """Per dataset: the default forest's mean accuracy at ``epsilon`` against the best
    diffprivlib model's on that dataset (the highest mean accuracy of the four, chosen
    after the fact: the strictest yardstick), the difference in points and the verdict
    ``win`` / ``tie`` (|Δ| ≤ TIE_POINTS) / ``loss``. One seed's results."""
    s = summarise(results)
    s = s[(s.failed < s.folds) & (s.epsilon == epsilon)]
    rows = []
    for name in s.dataset.unique():
        part = s[s.dataset == name].set_index("method")
        peers = part.loc[[m for m in DIFFPRIVLIB if m in part.index]]
        if DEFAULT_FOREST not in part.index or peers.empty:
            continue
        best = peers.accuracy.idxmax()
        delta = part.loc[DEFAULT_FOREST, "accuracy"] - peers.loc[best, "accuracy"]
        verdict = "tie" if abs(delta) <= TIE_POINTS else ("win" if delta > 0 else "loss")
        rows.append(
            {
                "dataset": name,
                "forest": part.loc[DEFAULT_FOREST, "accuracy"],
                "best_peer": best,
                "peer": peers.loc[best, "accuracy"],
                "delta": delta,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(
        rows, columns=["dataset", "forest", "best_peer", "peer", "delta", "verdict"]
    )


def accuracy_markdown(results: pd.DataFrame) -> str:
    """One row per dataset of one group and seed: rows, classes, the majority rate and
    HistGB (not private), then per ε the default forest's accuracy, the best diffprivlib
    model's (which one: RF, DT, LR, GNB) and DP-EBM's; means over the folds, in %."""
    s = summarise(results)
    s = s[s.failed < s.folds]
    epsilons = sorted(e for e in s.epsilon.unique() if np.isfinite(e))
    short = {"diffprivlib_rf": "RF", "diffprivlib_dt": "DT", "diffprivlib_lr": "LR"}
    short["diffprivlib_gnb"] = "GNB"
    head = ["dataset", "rows", "classes", "majority", "HistGB"]
    for e in epsilons:
        head += [f"forest ε={e:g}", f"best diffprivlib ε={e:g}", f"DP-EBM ε={e:g}"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, part in s.groupby("dataset", sort=False):
        first = part.iloc[0]
        by = part.set_index(["method", "epsilon"]).accuracy
        hgb = by.get(("hist_gradient_boosting", math.inf), math.nan)
        cells = [
            name,
            f"{int(first.n_rows):,}",
            str(int(first.n_classes)),
            _fmt(first.majority),
            _fmt(hgb),
        ]
        versus = {e: versus_diffprivlib(results[results.dataset == name], e) for e in epsilons}
        for e in epsilons:
            cells.append(_fmt(by.get((DEFAULT_FOREST, e), math.nan)))
            table = versus[e]
            cells.append(
                f"{table.peer.iloc[0]:.1f} ({short[table.best_peer.iloc[0]]})"
                if not table.empty
                else "–"
            )
            cells.append(_fmt(by.get(("dp_ebm", e), math.nan)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _binary_auc(results: pd.DataFrame, method: str, epsilon: float) -> tuple[float, int]:
    """Mean AUC (%) of ``method`` over the binary datasets where it ran, and how many."""
    s = summarise(results)
    part = s[
        (s.method == method)
        & (s.epsilon.isin([epsilon, math.inf]))
        & (s.n_classes == 2)
        & (s.failed < s.folds)
    ]
    return (part.auc.mean() if not part.empty else math.nan), len(part)


def versus_markdown(results: pd.DataFrame) -> str:
    """The default forest against the best diffprivlib model, per ε: wins / ties / losses
    and each dataset's Δ; then the mean binary AUC of the forest and its peers."""
    epsilons = sorted(e for e in results.epsilon.unique() if np.isfinite(e))
    tables = {e: versus_diffprivlib(results, e) for e in epsilons}
    names = list(dict.fromkeys(n for t in tables.values() for n in t.dataset))
    label = LABELS[DEFAULT_FOREST]
    lines = [
        f"{label} (the default) against the best of diffprivlib RF / DT / LR / GNB on each "
        f"dataset (highest mean accuracy): Δ = forest − best, in points; tie = |Δ| ≤ "
        f"{TIE_POINTS:g}.\n",
        "| ε | wins / ties / losses | " + " | ".join(names) + " |",
        "|---|---|" + "---:|" * len(names),
    ]
    for e, table in tables.items():
        count = table.verdict.value_counts()
        cells = [
            f"{e:g}",
            f"{count.get('win', 0)} / {count.get('tie', 0)} / {count.get('loss', 0)}",
        ]
        by_name = table.set_index("dataset")
        for n in names:
            cells.append(f"{by_name.loc[n, 'delta']:+.1f}" if n in by_name.index else "")
        lines.append("| " + " | ".join(cells) + " |")
    methods = [DEFAULT_FOREST, *PEERS, "hist_gradient_boosting"]
    methods = [m for m in methods if m in set(results.method)]
    lines += [
        "",
        "Mean AUC over the binary datasets (%; n = how many binary sets the method ran on):\n",
        "| ε | " + " | ".join(LABELS[m] for m in methods) + " |",
        "|---|" + "---:|" * len(methods),
    ]
    for e in epsilons:
        cells = [f"{e:g}"]
        for m in methods:
            mean, n = _binary_auc(results, m, e)
            cells.append(f"{_fmt(mean)} (n={n})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
