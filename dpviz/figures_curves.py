"""Privacy–utility curves from a sweep summary (Curves page): a metric against ε, the
number of trees or the depth rule, one series per mechanism, the non-private references
as lines.

Every function takes the ``SweepResult.summary`` frame and only filters it, so changing
the metric, the series or the highlighted ε never recomputes a sweep. Metrics come from
the test folds (NOT private); series without a DP proof are dashed and say NOT DP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .figures import (
    METRIC_NAMES,
    TEMPLATE,
    _note,
    series_color,
    series_dash,
    series_label,
)
from .sweep import SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN

X_AXES = {
    "epsilon": "ε (privacy budget, log scale)",
    "n_estimators": "number of trees",
    "depth_rule": "depth rule (resulting depth)",
}
STRUCTURE_KEYS = ("n_estimators", "depth_rule", "data_split")


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


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


def _hover(series: str, mechanism: str, metric_name: str) -> str:
    return (
        f"{series_label(series, mechanism)}<br>%{{x}}<br>{metric_name}: "
        "%{y:.1f}% ± %{customdata:.1f}<extra></extra>"
    )


def curve_figure(
    summary: pd.DataFrame,
    *,
    metric: str = "accuracy",
    x: str = "epsilon",
    fixed: Mapping[str, object] | None = None,
    mechanisms: Sequence[str] | None = None,
    references: Sequence[str] = (SERIES_NONPRIVATE, SERIES_SKLEARN),
    highlight_epsilon: float | None = None,
    folds: int | None = None,
) -> go.Figure:
    """A metric (mean ± 1 std over folds, in %) against ``x`` for each mechanism.

    ``fixed`` pins the grid dimensions that are not on the x axis (n_estimators,
    depth_rule, data_split and, unless x is ε, epsilon). ``references`` lists the
    reference series to draw as lines; ``highlight_epsilon`` marks the ε under
    discussion. Raises ``ValueError`` for an unknown metric or axis.
    """
    if metric not in METRIC_NAMES:
        raise ValueError(f"unknown metric {metric!r}")
    if x not in X_AXES:
        raise ValueError(f"unknown x axis {x!r}; use one of {', '.join(X_AXES)}")
    fixed = {k: v for k, v in (fixed or {}).items() if k != x}
    name = METRIC_NAMES[metric]
    mean, std = f"{metric}_mean", f"{metric}_std"
    dp = select(summary[summary["series"] == SERIES_DP], fixed)
    if mechanisms is not None:
        dp = dp[dp["mechanism"].isin(list(mechanisms))]
    fig = go.Figure()
    categories = None
    if x == "depth_rule":
        order = list(dict.fromkeys(summary.loc[summary["series"] == SERIES_DP, "depth_rule"]))
        depth_of = summary[summary["series"] == SERIES_DP].groupby("depth_rule")["depth"].first()
        categories = {r: depth_label(r, depth_of.get(r, np.nan)) for r in order}
    for mech, rows in dp.groupby("mechanism", sort=False):
        rows = rows.sort_values(x, key=_sort_key(x, categories))
        xs = _xs(rows, x, categories)
        m = 100 * rows[mean].to_numpy(dtype=float)
        s = 100 * np.nan_to_num(rows[std].to_numpy(dtype=float))
        color = series_color(SERIES_DP, mech)
        label = series_label(SERIES_DP, mech)
        if x != "depth_rule" and len(rows) > 1:
            fig.add_trace(
                go.Scatter(
                    x=np.concatenate([xs, xs[::-1]]),
                    y=np.concatenate([m + s, (m - s)[::-1]]),
                    fill="toself",
                    fillcolor=_rgba(color, 0.15),
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
                line={"color": color, "width": 2.5, "dash": series_dash(SERIES_DP, mech)},
                marker={"size": 6, "color": color},
                error_y={"type": "data", "array": s, "visible": x == "depth_rule"},
                customdata=s,
                hovertemplate=_hover(SERIES_DP, mech, name),
            )
        )
    span = _x_span(summary, x, fixed, categories)
    for series in references:
        _reference_trace(fig, summary, series, x, fixed, span, categories, mean, std, name)
    if highlight_epsilon is not None and x == "epsilon":
        fig.add_vline(
            x=float(highlight_epsilon),
            line={"color": "#444444", "width": 1, "dash": "dot"},
            annotation_text=f"ε = {float(highlight_epsilon):g}",
            annotation_position="top",
        )
    cv = f"{folds}-fold CV" if folds else "cross-validation"
    pinned = ", ".join(
        f"{_dim_name(k)} {v:g}" if isinstance(v, float) else f"{_dim_name(k)} {v}"
        for k, v in fixed.items()
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"{name} against {_dim_name(x)}"},
        height=520,
        margin={"t": 100, "b": 40, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        hovermode="closest",
        annotations=[
            _note(
                f"Mean over the held-out folds of {cv}"
                + ("" if x == "depth_rule" else "; band: ± 1 standard deviation")
                + f". Dashed or dotted: NOT DP.<br>{pinned}"
            )
        ],
    )
    fig.update_yaxes(title_text=f"{name} on held-out folds (%)", ticksuffix="%")
    if x == "epsilon":
        fig.update_xaxes(title_text=X_AXES[x], type="log")
    elif x == "n_estimators":
        values = summary.loc[summary["series"] == SERIES_DP, "n_estimators"].astype(float)
        wide = len(values) and values.max() / max(values.min(), 1) >= 10
        fig.update_xaxes(title_text=X_AXES[x], type="log" if wide else "linear")
    else:
        fig.update_xaxes(title_text=X_AXES[x], type="category")
    return fig


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


def _x_span(summary, x, fixed, categories):
    dp = select(summary[summary["series"] == SERIES_DP], fixed)
    if x == "depth_rule":
        return list(categories.values()) if categories else []
    values = dp[x].to_numpy(dtype=float)
    if len(values) == 0:
        return []
    return [float(values.min()), float(values.max())]


def _reference_trace(fig, summary, series, x, fixed, span, categories, mean, std, name):
    rows = summary[summary["series"] == series]
    if rows.empty or not span:
        return
    mech = str(rows["mechanism"].iloc[0])
    color, dash, label = (
        series_color(series, mech),
        series_dash(series, mech),
        series_label(series, mech),
    )
    if series == SERIES_NONPRIVATE:
        # The non-private forest depends on the trees and the depth, not on ε or split.
        pins = {k: v for k, v in fixed.items() if k in ("n_estimators", "depth_rule")}
        rows = select(rows, pins)
        if rows.empty:
            return
    if x == "epsilon" or series == SERIES_SKLEARN or len(rows) == 1:
        row = rows.iloc[0]
        m, s = 100 * float(row[mean]), 100 * _zero(row[std])
        xs = span if x != "depth_rule" else list(span)
        fig.add_trace(
            go.Scatter(
                x=xs if x != "depth_rule" else [xs[0], xs[-1]],
                y=[m] * (len(xs) if x != "depth_rule" else 2),
                mode="lines",
                name=label,
                line={"color": color, "width": 2, "dash": dash},
                customdata=[s] * (len(xs) if x != "depth_rule" else 2),
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
            hovertemplate=_hover(series, mech, name),
        )
    )


def _zero(value) -> float:
    value = float(value)
    return 0.0 if math.isnan(value) else value
