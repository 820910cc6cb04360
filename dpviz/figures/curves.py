"""Privacy–utility curves from a sweep summary (Curves page): a metric against ε, the
number of trees or the depth rule, one series per algorithm (per mechanism for Fletcher &
Islam's forest), the non-private references as lines.

Every function takes the ``SweepResult.summary`` frame and only filters it, so changing
the metric, the series, the highlighted algorithm or ε never recomputes a sweep. Metrics
come from the test folds (NOT private); series without a DP proof are dashed and say
NOT DP, approximate ones (an MCMC stand-in for the exponential mechanism) are dash-dotted
and say "approximate — NOT DP".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.evaluation.sweep import (
    FLETCHER_ISLAM,
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
)
from dpviz.figures.common import (
    ALL_METRIC_NAMES,
    MAJORITY_COLOR,
    MAJORITY_LABEL,
    TEMPLATE,
    majority_mean,
    note_annotation,
    series_color,
    series_dash,
    series_label,
)
from dpviz.models.registry import ALGORITHMS, get_algorithm

# A series' privacy status, from the registry for the parameters it ran with.
EPS_DP, APPROXIMATE, NOT_DP = "ε-DP", "approximate", "NOT DP"
# A proven mechanism whose released models' ledgers still say NO guarantee (an inferred
# schema, replayed noise): the label follows the ledger, never the mechanism alone.
NO_GUARANTEE = "no guarantee"
STATUS_BADGES = {
    EPS_DP: "ε-DP",
    APPROXIMATE: "approximate — NOT DP",
    NOT_DP: "NOT DP",
    NO_GUARANTEE: "NOT DP — see ledger",
}
STATUS_DASHES = {EPS_DP: "solid", APPROXIMATE: "dashdot", NOT_DP: "dash", NO_GUARANTEE: "dash"}
# Colour and marker of each algorithm's line. Fletcher & Islam's forest keeps the
# mechanism colours of every other page (Okabe–Ito); the others take Paul Tol's
# colour-blind-safe colours, which none of those use, and a marker of their own so the
# lines stay apart in greyscale. A new registry entry takes the next spare style.
ALGORITHM_STYLES = {
    FLETCHER_ISLAM: (None, "circle"),
    "jpw": ("#882255", "square"),
    "friedman_schuster": ("#332288", "diamond"),
    "dpea": ("#CC6677", "triangle-up"),
    "dpboost": ("#999933", "x"),
}
SPARE_STYLES = (
    ("#117733", "star"),
    ("#661100", "hexagon"),
    ("#6699CC", "pentagon"),
    ("#888888", "cross"),
)
# HistGradientBoosting, DPBoost's non-private reference: the Train page's colour (Okabe–Ito
# yellow), long dashes (dash-dot means "approximate" here).
HGB_STYLE = ("scikit-learn HistGradientBoosting", "#F0E442", "longdash")
DEFAULT_REFERENCES = (SERIES_NONPRIVATE, SERIES_SKLEARN, SERIES_HGB)

X_AXES = {
    "epsilon": "ε (privacy budget, log scale)",
    "n_estimators": "number of trees",
    "depth_rule": "depth rule (resulting depth)",
}
STRUCTURE_KEYS = ("n_estimators", "depth_rule", "data_split")


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def privacy_status(algorithm: str, params: Mapping[str, object] | None = None) -> str:
    """``EPS_DP``, ``APPROXIMATE`` or ``NOT_DP``: the registry's verdict for ``algorithm``
    run with ``params`` over its defaults (a NOT DP leaf mechanism makes it NOT DP;
    DPEA's MCMC steps, d > 2, make it approximate)."""
    entry = get_algorithm(algorithm)
    values = {**entry.defaults(), **dict(params or {})}
    status = getattr(entry, "status", None)
    if status is not None:
        verdict = status(values)
    elif entry.private(values):  # a registry without per-parameter status
        verdict = "ε-DP"
    else:
        verdict = "approximate" if entry.privacy == "approximate" else "not DP"
    return {"ε-DP": EPS_DP, "approximate": APPROXIMATE}.get(verdict, NOT_DP)


def algorithm_style(algorithm: str) -> tuple[str | None, str]:
    """(colour, marker symbol) of an algorithm's lines; None colour: by mechanism."""
    if algorithm in ALGORITHM_STYLES:
        return ALGORITHM_STYLES[algorithm]
    spare = [a for a in ALGORITHMS if a not in ALGORITHM_STYLES]
    index = spare.index(algorithm) if algorithm in spare else len(spare)
    return SPARE_STYLES[index % len(SPARE_STYLES)]


def series_id(algorithm: str, mechanism: str) -> str:
    """The id of one DP line: the algorithm, with the mechanism for Fletcher & Islam's
    forest (``fletcher_islam/permute_flip``), whose mechanisms are swept."""
    return f"{algorithm}/{mechanism}" if algorithm == FLETCHER_ISLAM else str(algorithm)


def series_status(
    algorithm: str,
    mechanism: str,
    statuses: Mapping[str, str] | None = None,
    private: bool | None = None,
) -> str:
    """The privacy status of one DP line: the forest's by its mechanism, another
    algorithm's from ``statuses`` (computed with the parameters it ran with) or its
    registry defaults; ``NO_GUARANTEE`` when that says ε-DP but the line's models'
    ledgers do not (``private`` False: the summary's ``private`` column)."""
    if algorithm == FLETCHER_ISLAM:
        status = privacy_status(algorithm, {"mechanism": mechanism})
    elif statuses and algorithm in statuses:
        status = statuses[algorithm]
    else:
        status = privacy_status(algorithm)
    return NO_GUARANTEE if status == EPS_DP and private is False else status


def line_private(rows: pd.DataFrame) -> bool | None:
    """Whether every model of some summary rows had a private ledger (None: unknown)."""
    if "private" not in rows.columns or rows.empty:
        return None
    return bool(rows["private"].astype(bool).all())


def dp_label(algorithm: str, mechanism: str, status: str, multi: bool) -> str:
    """Legend text of a DP line with its badge: ``permute_flip (ε-DP)`` when the sweep ran
    the forest alone, ``fletcher_islam · smooth_em (NOT DP)`` or ``dpea (approximate — NOT
    DP)`` beside other algorithms."""
    badge = STATUS_BADGES[status]
    if algorithm == FLETCHER_ISLAM:
        return f"{algorithm} · {mechanism} ({badge})" if multi else f"{mechanism} ({badge})"
    return f"{algorithm} ({badge})"


def select(summary: pd.DataFrame, fixed: Mapping[str, object]) -> pd.DataFrame:
    """Rows of ``summary`` matching every ``fixed`` value (keys missing from the frame
    are ignored)."""
    keep = np.ones(len(summary), dtype=bool)
    for key, value in fixed.items():
        if key in summary.columns and value is not None:
            column = summary[key]
            if key == "epsilon":
                keep &= np.isclose(column.to_numpy(dtype=float), float(value))
            else:
                keep &= (column.astype(str) == str(value)).to_numpy()
    return summary[keep]


def depth_label(rule: str, depth: float) -> str:
    """Category text of a depth rule, with the depth it gave."""
    if pd.isna(depth):
        return str(rule)
    return f"{rule} (depth {int(round(depth))})" if not str(rule).isdigit() else f"fixed {rule}"


def _hover(label: str, metric_name: str, x: str) -> str:
    where = "ε = %{x:g}" if x == "epsilon" else "%{x}"
    return f"{label}<br>{where}<br>{metric_name}: %{{y:.1f}}% ± %{{customdata:.1f}}<extra></extra>"


def dp_lines(
    summary: pd.DataFrame,
    *,
    x: str = "epsilon",
    fixed: Mapping[str, object] | None = None,
    mechanisms: Sequence[str] | None = None,
    series: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The DP rows a curve figure draws, with a ``series_id`` column: Fletcher & Islam's
    forest at the pinned trees, depth rule and split (``fixed``), every other algorithm
    at its own settings and only against ε (it has no trees or depth grid).
    ``mechanisms`` filters the forest's lines, ``series`` every line (by id)."""
    fixed = {k: v for k, v in (fixed or {}).items() if k != x}
    dp = summary[summary["series"] == SERIES_DP]
    if "algorithm" not in dp.columns:
        dp = dp.assign(algorithm=FLETCHER_ISLAM)
    forest = select(dp[dp["algorithm"] == FLETCHER_ISLAM], fixed)
    if mechanisms is not None:
        forest = forest[forest["mechanism"].isin(list(mechanisms))]
    others = dp[dp["algorithm"] != FLETCHER_ISLAM]
    if x == "epsilon":
        others = select(others, {k: v for k, v in fixed.items() if k not in STRUCTURE_KEYS})
    else:
        others = others.iloc[0:0]
    rows = pd.concat([forest, others])
    rows = rows.assign(
        series_id=[series_id(a, m) for a, m in zip(rows["algorithm"], rows["mechanism"])]
    )
    if series is not None:
        rows = rows[rows["series_id"].isin(list(series))]
    order = {a: i for i, a in enumerate(ALGORITHMS)}
    rank = rows["algorithm"].map(lambda a: order.get(a, len(order)))
    return rows.iloc[np.argsort(rank.to_numpy(), kind="stable")]


def is_multi(summary: pd.DataFrame) -> bool:
    """Whether the sweep ran several algorithms (legends then name the algorithm)."""
    dp = summary[summary["series"] == SERIES_DP]
    return "algorithm" in dp.columns and dp["algorithm"].nunique() > 1


def curve_figure(
    summary: pd.DataFrame,
    *,
    metric: str = "accuracy",
    x: str = "epsilon",
    fixed: Mapping[str, object] | None = None,
    mechanisms: Sequence[str] | None = None,
    references: Sequence[str] = DEFAULT_REFERENCES,
    highlight_epsilon: float | None = None,
    folds: int | None = None,
    series: Sequence[str] | None = None,
    statuses: Mapping[str, str] | None = None,
    highlight: str | None = None,
) -> go.Figure:
    """A metric (mean ± 1 std over folds, in %) against ``x``: one line per algorithm,
    one per mechanism for Fletcher & Islam's forest, every one on the same folds.

    ``fixed`` pins the forest's grid dimensions that are not on the x axis (n_estimators,
    depth_rule, data_split and, unless x is ε, epsilon); the other algorithms are drawn
    against ε only. ``series`` (ids from :func:`series_id`) and ``mechanisms`` choose the
    lines; ``statuses`` maps an algorithm to its privacy status with the parameters it
    ran with (default: its registry defaults); ``highlight`` names an algorithm to draw
    bold while the others fade. ``references`` lists the reference series to draw as
    lines (a forest's non-private version only beside its own lines);
    ``highlight_epsilon`` marks the ε under discussion. Raises ``ValueError`` for an
    unknown metric or axis.
    """
    if metric not in ALL_METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}")
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; use one of {', '.join(X_AXES)}")
    fixed = {k: v for k, v in (fixed or {}).items() if k != x}
    name = ALL_METRIC_NAMES[metric]
    mean, std = f"{metric}_mean", f"{metric}_std"
    multi = is_multi(summary)
    dp = dp_lines(summary, x=x, fixed=fixed, mechanisms=mechanisms, series=series)
    fig = go.Figure()
    categories = None
    if x == "depth_rule":
        forest = summary[
            (summary["series"] == SERIES_DP)
            & (summary.get("algorithm", FLETCHER_ISLAM) == FLETCHER_ISLAM)
        ]
        order = list(dict.fromkeys(forest["depth_rule"]))
        depth_of = forest.groupby("depth_rule")["depth"].first()
        categories = {r: depth_label(r, depth_of.get(r, np.nan)) for r in order}
    statuses_seen = set()
    for (algorithm, mech), rows in dp.groupby(["algorithm", "mechanism"], sort=False):
        rows = rows.sort_values(x, key=_sort_key(x, categories))
        xs = _xs(rows, x, categories)
        m = 100 * rows[mean].to_numpy(dtype=float)
        s = 100 * np.nan_to_num(rows[std].to_numpy(dtype=float))
        status = series_status(algorithm, mech, statuses, line_private(rows))
        statuses_seen.add(status)
        colour, symbol = algorithm_style(algorithm)
        color = colour or series_color(SERIES_DP, mech)
        label = dp_label(algorithm, mech, status, multi)
        faded = highlight is not None and algorithm != highlight
        bold = highlight is not None and algorithm == highlight
        if x != "depth_rule" and len(rows) > 1:
            fig.add_trace(
                go.Scatter(
                    x=np.concatenate([xs, xs[::-1]]),
                    y=np.concatenate([m + s, (m - s)[::-1]]),
                    fill="toself",
                    fillcolor=_rgba(color, 0.05 if faded else (0.22 if bold else 0.13)),
                    line={"width": 0},
                    hoverinfo="skip",
                    legendgroup=label,
                    showlegend=False,
                    name=f"{label} ± 1 std",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=m,
                mode="lines+markers",
                name=label,
                legendgroup=label,
                opacity=0.35 if faded else 1.0,
                line={
                    "color": color,
                    "width": 4 if bold else 2.5,
                    "dash": STATUS_DASHES[status],
                },
                marker={"size": 9 if bold else 7, "color": color, "symbol": symbol},
                error_y={"type": "data", "array": s, "visible": x == "depth_rule"},
                customdata=s,
                hovertemplate=_hover(label, name, x),
            )
        )
    span = _x_span(dp, summary, x, categories)
    shown = set(dp["algorithm"])
    for reference in references:
        _reference_traces(
            fig, summary, reference, x, fixed, span, categories, mean, std, name, shown, multi
        )
    baseline = majority_mean(summary, metric)
    if baseline is not None and span:
        add_majority_line(fig, baseline, span if x != "depth_rule" else [span[0], span[-1]], name)
    # The line styles get a line of their own when there are several algorithms, or
    # when the long "see ledger" explanation would run past the figure's right edge.
    three_lines = multi or NO_GUARANTEE in statuses_seen
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{name} against {_dim_name(x)}"
            + (f" — {len(shown)} algorithms on the same folds" if len(shown) > 1 else "")
        },
        height=560 if three_lines else 520,
        margin={"t": 130 if three_lines else 110, "b": 40, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        hovermode="closest",
        annotations=[note_annotation(_note_text(fixed, folds, x, multi, summary, statuses_seen))],
    )
    if highlight_epsilon is not None and x == "epsilon":
        eps = float(highlight_epsilon)
        fig.add_vline(x=eps, line={"color": "#444444", "width": 1, "dash": "dot"})
        # Its label by hand: add_vline's own would land at 10^ε on a log axis, and
        # update_layout(annotations=...) above would have dropped it anyway.
        fig.add_annotation(
            x=math.log10(eps),
            y=0,
            xref="x",
            yref="paper",
            text=f"ε = {eps:g}",
            showarrow=False,
            xanchor="left",
            yanchor="bottom",
            xshift=4,
            font={"size": 12, "color": "#444444"},
        )
    fig.update_yaxes(title_text=f"{name} on held-out folds (%)", ticksuffix="%")
    if x == "epsilon":
        fig.update_xaxes(title_text=X_AXES[x], type="log")
    elif x == "n_estimators":
        values = dp["n_estimators"].astype(float)
        wide = len(values) and values.max() / max(values.min(), 1) >= 10
        fig.update_xaxes(title_text=X_AXES[x], type="log" if wide else "linear")
    else:
        fig.update_xaxes(title_text=X_AXES[x], type="category")
    return fig


def placeholder_figure(eps_low: float, eps_high: float) -> go.Figure:
    """The Curves chart before any sweep: its axes (accuracy against ε over the range
    chosen) and where the curves will be, with no data at all (nothing private)."""
    low, high = math.log10(eps_low), math.log10(eps_high)
    pad = max(0.1, (high - low) * 0.05)
    return go.Figure(
        layout={
            "template": TEMPLATE,
            "height": 520,
            "margin": {"t": 110, "b": 40, "l": 70, "r": 20},
            "title": {"text": f"{ALL_METRIC_NAMES['accuracy']} against {_dim_name('epsilon')}"},
            "xaxis": {"title": {"text": X_AXES["epsilon"]}, "type": "log"},
            "yaxis": {
                "title": {"text": f"{ALL_METRIC_NAMES['accuracy']} on held-out folds (%)"},
                "ticksuffix": "%",
                "range": [0, 100],
            },
            "annotations": [
                note_annotation("No sweep yet: press Run sweep, and its curves are drawn here."),
            ],
        }
    ).update_xaxes(range=[low - pad, high + pad])


def _note_text(fixed, folds, x, multi, summary, statuses) -> str:
    cv = f"{folds}-fold CV" if folds else "cross-validation"
    same = " (the same folds for every algorithm)" if multi else ""
    band = "" if x == "depth_rule" else "; band: ± 1 standard deviation"
    styles = ["Dashed: NOT DP"]
    if NO_GUARANTEE in statuses:
        styles.append(
            "“see ledger”: an ε-DP mechanism whose models' ledgers give NO guarantee "
            "(inferred schema or replayed noise)"
        )
    if APPROXIMATE in statuses:
        styles.append("dash-dot: approximate (MCMC, NOT DP)")
    pinned = ", ".join(
        f"{_dim_name(k)} {v:g}" if isinstance(v, float) else f"{_dim_name(k)} {v}"
        for k, v in fixed.items()
    )
    if multi:
        pinned = f"fletcher_islam: {pinned}" if pinned else ""
        if x == "epsilon":
            pinned += ("; " if pinned else "") + "other algorithms: their own settings"
        else:
            pinned += " (only fletcher_islam has a trees/depth grid)"
        if not _has_forest(summary):
            pinned = "each algorithm at its own settings"
    if multi or NO_GUARANTEE in statuses:  # three lines: folds, line styles, settings
        return (
            f"Mean over the held-out folds of {cv}{same}{band}.<br>{'; '.join(styles)}."
            f"<br>{pinned}"
        )
    return f"Mean over the held-out folds of {cv}{same}{band}. {'; '.join(styles)}.<br>{pinned}"


def _has_forest(summary: pd.DataFrame) -> bool:
    dp = summary[summary["series"] == SERIES_DP]
    return "algorithm" not in dp.columns or (dp["algorithm"] == FLETCHER_ISLAM).any()


def _dim_name(key: str) -> str:
    return {
        "epsilon": "ε",
        "n_estimators": "trees",
        "depth_rule": "depth rule",
        "data_split": "data split",
    }.get(key, key)


def _sort_key(x: str, categories):
    if x == "depth_rule" and categories:
        order = {r: i for i, r in enumerate(categories)}
        return lambda col: col.map(order)
    return None


def _xs(rows: pd.DataFrame, x: str, categories) -> np.ndarray:
    if x == "depth_rule":
        return np.asarray([categories.get(r, r) for r in rows["depth_rule"]], dtype=object)
    return rows[x].to_numpy(dtype=float)


def _x_span(dp, summary, x, categories):
    """Where reference lines run: across the drawn lines (every swept ε if none)."""
    if x == "depth_rule":
        return list(categories.values()) if categories else []
    values = dp[x].to_numpy(dtype=float)
    if len(values) == 0:
        values = summary.loc[summary["series"] == SERIES_DP, x].to_numpy(dtype=float)
    if len(values) == 0:
        return []
    return [float(values.min()), float(values.max())]


def reference_style(series: str, algorithm: str, mechanism: str, multi: bool):
    """(label, colour, dash) of a reference line. The forest's non-private version keeps
    its black dash; another forest's (JPW's) takes that algorithm's colour, dotted."""
    if series == SERIES_HGB:
        label, color, dash = HGB_STYLE
        return f"{label} (NOT DP)", color, dash
    if series == SERIES_NONPRIVATE and algorithm not in (FLETCHER_ISLAM, None):
        color = algorithm_style(algorithm)[0] or "#000000"
        return f"{algorithm} trees, true majority labels (NOT DP)", color, "dot"
    return (
        series_label(series, mechanism),
        series_color(series, mechanism),
        (series_dash(series, mechanism)),
    )


def _reference_traces(
    fig, summary, series, x, fixed, span, categories, mean, std, name, shown, multi
):
    rows = summary[summary["series"] == series]
    if rows.empty or not span:
        return
    if series != SERIES_NONPRIVATE:
        _reference_trace(fig, rows, series, None, x, span, categories, mean, std, name, multi)
        return
    if "algorithm" not in rows.columns:
        rows = rows.assign(algorithm=FLETCHER_ISLAM)
    for algorithm, own in rows.groupby("algorithm", sort=False):
        if multi and algorithm not in shown:
            continue  # a forest's non-private version stands beside its own lines only
        if algorithm == FLETCHER_ISLAM:
            # It depends on the trees and the depth, not on ε or the split.
            pins = {k: v for k, v in fixed.items() if k in ("n_estimators", "depth_rule")}
            own = select(own, pins)
        elif x != "epsilon":
            continue
        if not own.empty:
            _reference_trace(
                fig, own, series, algorithm, x, span, categories, mean, std, name, multi
            )


def _reference_trace(fig, rows, series, algorithm, x, span, categories, mean, std, name, multi):
    mech = str(rows["mechanism"].iloc[0])
    label, color, dash = reference_style(series, algorithm, mech, multi)
    if x == "epsilon" or series != SERIES_NONPRIVATE or len(rows) == 1:
        row = rows.iloc[0]
        m, s = 100 * float(row[mean]), 100 * _zero(row[std])
        xs = list(span) if x != "depth_rule" else [span[0], span[-1]]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[m] * len(xs),
                mode="lines",
                name=label,
                line={"color": color, "width": 3 if series == SERIES_HGB else 2, "dash": dash},
                customdata=[s] * len(xs),
                hovertemplate=f"{label}<br>{name}: %{{y:.1f}}% ± %{{customdata:.1f}}"
                "<extra></extra>",
            )
        )
        return
    rows = rows.sort_values(x, key=_sort_key(x, categories))
    fig.add_trace(
        go.Scatter(
            x=_xs(rows, x, categories),
            y=100 * rows[mean].to_numpy(dtype=float),
            mode="lines+markers",
            name=label,
            line={"color": color, "width": 2, "dash": dash},
            customdata=100 * np.nan_to_num(rows[std].to_numpy(dtype=float)),
            hovertemplate=_hover(label, name, x),
        )
    )


def add_majority_line(fig: go.Figure, value: float, span, metric_name: str) -> go.Figure:
    """Draw the trivial baseline (always the training majority class; ``value`` is its
    score as a fraction) as a labelled grey horizontal line across ``span`` (two x
    values), and widen a fixed y range to show it. A model at or under this line has
    learnt nothing the class shares do not already say. Returns ``fig``."""
    y = 100 * float(value)
    label = f"{MAJORITY_LABEL}: {y:.1f}%"
    fig.add_trace(
        go.Scatter(
            x=list(span),
            y=[y] * len(span),
            mode="lines",
            name=label,
            line={"color": MAJORITY_COLOR, "width": 2.5, "dash": "longdashdot"},
            hovertemplate=f"always answering the majority class<br>{metric_name}: {y:.1f}%"
            "<extra>trivial baseline</extra>",
        )
    )
    current = fig.layout.yaxis.range
    if current is not None and len(current) == 2:
        bottom, top = current
        fig.update_yaxes(range=[min(bottom, max(0.0, y - 3)), max(top, min(100.0, y + 3))])
    return fig


def _zero(value) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else value
