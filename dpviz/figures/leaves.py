"""Histograms of the leaves' gap j and smooth sensitivity (Leaves page).

Input is a model's ``leaf_table()``: true counts of the non-empty leaves, so every figure
here is a data-owner diagnostic, NOT private, and its title says so.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import TEMPLATE, gap_bins, note_annotation

BAR_COLOR = "#0072B2"
NOT_PRIVATE = "not private: true counts"
SENSITIVITY_FLOOR_LOG10 = -300  # e^(-jε) underflows near 1e-308; lower values are pooled


def gap_histogram(leaves: pd.DataFrame) -> pd.DataFrame:
    """Leaves per gap bin: a bin for ties (j = 0), one per gap up to 10, then bins
    widening geometrically. Columns: label, gap_lo, gap_hi, leaves, share."""
    gaps = leaves["gap_j"].to_numpy(dtype=np.int64)
    columns = ["label", "gap_lo", "gap_hi", "leaves", "share"]
    if len(gaps) == 0:
        return pd.DataFrame(columns=columns)
    edges = np.concatenate([[0], gap_bins(max(1, int(gaps.max())))])
    his = np.append(edges[1:] - 1, max(int(gaps.max()), edges[-1]))
    which = np.searchsorted(edges, gaps, side="right") - 1
    counts = np.bincount(which, minlength=len(edges))
    labels = [
        "0 (tie)" if lo == 0 else (f"{lo}" if lo == hi else f"{lo}–{hi}")
        for lo, hi in zip(edges, his)
    ]
    out = pd.DataFrame(
        {"label": labels, "gap_lo": edges, "gap_hi": his, "leaves": counts}, columns=columns
    )
    out["share"] = out["leaves"] / len(gaps)
    return out


def gap_histogram_figure(leaves: pd.DataFrame) -> go.Figure:
    """Bar chart of the non-empty leaves' gap j (bins widen on a log scale beyond 10)."""
    hist = gap_histogram(leaves)
    fig = go.Figure(
        go.Bar(
            x=hist["label"],
            y=hist["leaves"],
            marker={"color": BAR_COLOR},
            customdata=np.stack([hist["share"] * 100], axis=1) if len(hist) else None,
            hovertemplate="gap j = %{x}: %{y:,} leaves (%{customdata[0]:.1f}%)<extra></extra>",
            name="non-empty leaves",
        )
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Gap j of the non-empty leaves<br><sup>{NOT_PRIVATE}</sup>"},
        height=420,
        margin={"t": 110, "b": 60, "l": 70, "r": 20},
        annotations=[
            note_annotation(
                "j = top class count − runner-up count; small j flips easily.<br>"
                "One bin per gap up to 10, then wider (log scale)."
            )
        ],
        bargap=0.1,
    )
    fig.update_xaxes(title_text="gap j (records)", type="category")
    fig.update_yaxes(title_text="non-empty leaves (count)")
    return fig


def sensitivity_histogram(leaves: pd.DataFrame, epsilon: float, bins: int = 30) -> pd.DataFrame:
    """Leaves per bin of log10 smooth sensitivity e^(-jε), from the gaps (exact even where
    e^(-jε) underflows). Columns: lo, hi (log10), leaves."""
    gaps = leaves["gap_j"].to_numpy(dtype=np.float64)
    if len(gaps) == 0:
        return pd.DataFrame(columns=["lo", "hi", "leaves"])
    log10 = np.maximum(-gaps * epsilon / math.log(10), SENSITIVITY_FLOOR_LOG10)
    low = min(-1.0, math.floor(log10.min()))
    edges = np.linspace(low, 0.0, bins + 1)
    counts, _ = np.histogram(log10, bins=edges)
    return pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "leaves": counts})


def sensitivity_histogram_figure(leaves: pd.DataFrame, epsilon: float) -> go.Figure:
    """Histogram of the leaves' smooth sensitivity e^(-jε) on a log axis (Fig. 5b's
    quantity; it drives smooth_em, which is NOT DP, and is a diagnostic for the rest)."""
    hist = sensitivity_histogram(leaves, epsilon)
    centre = (hist["lo"] + hist["hi"]) / 2 if len(hist) else []
    fig = go.Figure(
        go.Bar(
            x=centre,
            y=hist["leaves"],
            width=(hist["hi"] - hist["lo"]) * 0.95 if len(hist) else None,
            marker={"color": BAR_COLOR},
            customdata=np.stack([10.0 ** hist["lo"], 10.0 ** hist["hi"]], axis=1)
            if len(hist)
            else None,
            hovertemplate="sensitivity %{customdata[0]:.2g} – %{customdata[1]:.2g}: "
            "%{y:,} leaves<extra></extra>",
            name="non-empty leaves",
        )
    )
    low = float(hist["lo"].min()) if len(hist) else -1.0
    step = max(1, math.ceil(-low / 8))
    ticks = list(range(0, math.floor(low) - 1, -step))
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Smooth sensitivity e^(−jε) of the leaves<br><sup>{NOT_PRIVATE}</sup>"},
        height=420,
        margin={"t": 110, "b": 60, "l": 70, "r": 20},
        annotations=[
            note_annotation(
                f"ε = {epsilon:g} per leaf. smooth_em (2017, NOT DP) scales its noise by "
                "this;<br>for the ε-DP mechanisms it shows how decided the leaves are."
            )
        ],
    )
    fig.update_xaxes(
        title_text="smooth sensitivity (log scale)",
        tickvals=ticks,
        ticktext=["1" if t == 0 else f"1e{t}" for t in ticks],
        range=[low - 0.2, 0.2],
    )
    fig.update_yaxes(title_text="non-empty leaves (count)")
    return fig


def boost_leaf_values_figure(leaves: pd.DataFrame, max_points: int = 5_000) -> go.Figure:
    """DPBoost leaves: the true (clipped) value of every non-empty leaf against the value
    it released. On the diagonal the noise did nothing; in the shaded quadrants it
    flipped the leaf's sign. ``leaves`` is ``treeviz.boost_leaf_table``: NOT private."""
    rows = leaves[~leaves["empty"]]
    if len(rows) > max_points:
        rows = rows.sample(max_points, random_state=0)
    true = rows["true_value"].to_numpy(dtype=float)
    released = rows["released_value"].to_numpy(dtype=float)
    # Own range per axis: true values are clipped to ±1, the noise reaches far beyond.
    top_x = float(max(1e-6, np.abs(np.append(true, 0.0)).max())) * 1.1
    top_y = float(max(1e-6, np.abs(np.append(released, 0.0)).max())) * 1.05
    top = max(top_x, top_y)
    fig = go.Figure()
    for sign in (-1, 1):  # quadrants where the released sign differs from the true one
        fig.add_shape(
            type="rect",
            x0=0,
            x1=sign * top,
            y0=0,
            y1=-sign * top,
            fillcolor="#D55E00",
            opacity=0.08,
            line={"width": 0},
            layer="below",
        )
    fig.add_trace(
        go.Scatter(
            x=[-top, top],
            y=[-top, top],
            mode="lines",
            line={"color": "#999999", "dash": "dash", "width": 1},
            name="no noise (released = true)",
            hoverinfo="skip",
        )
    )
    flipped = rows["sign_flipped"].to_numpy(bool)
    for is_flipped, color, label in (
        (False, BAR_COLOR, "sign kept"),
        (True, "#D55E00", "sign flipped"),
    ):
        part = rows[flipped == is_flipped]
        fig.add_trace(
            go.Scatter(
                x=part["true_value"],
                y=part["released_value"],
                mode="markers",
                marker={"color": color, "size": 6, "opacity": 0.7},
                name=f"{label} ({len(part):,} leaves)",
                customdata=np.stack(
                    [part["class"].astype(str), part["tree"], part["n_records"]], axis=1
                )
                if len(part)
                else None,
                hovertemplate="class %{customdata[0]} · tree %{customdata[1]} · "
                "%{customdata[2]} records<br>true %{x:+.3f} → released %{y:+.3f}"
                "<extra></extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": "DPBoost leaves: true value against released value"
            "<br><sup>not private: true leaf values</sup>"
        },
        height=480,
        margin={"t": 110, "b": 60, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
        annotations=[
            note_annotation(
                "Each point is a non-empty leaf; the axes have their own scales. Shaded: the "
                "Laplace<br>noise flipped the sign of the leaf's push (towards or away from the "
                "class)."
            )
        ],
    )
    fig.update_xaxes(title_text="true leaf value (clipped, before noise)", range=[-top_x, top_x])
    fig.update_yaxes(title_text="released leaf value", range=[-top_y, top_y])
    return fig
