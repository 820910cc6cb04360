"""Plotly figures of the Teach and Negotiate material (dpviz.evaluation.teach, dpviz.privacy.risk).

Same style as :mod:`dpviz.figures.common`: its Okabe–Ito colours, template and NOT-DP
hatching are imported, not redefined. Mechanisms without a DP proof are hatched (bars)
or dashed (lines) and say "NOT DP" wherever they are named; every axis says its unit
and every mark has hover text with its numbers. No streamlit here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpviz.evaluation.teach import LossGrid, Playground, TreeWalkthrough
from dpviz.figures.common import MECHANISM_COLORS, NOT_DP_PATTERN, REFERENCE_STYLES, TEMPLATE
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import (
    METRIC_NAMES,
    EpsilonChoice,
    balanced_error_rate,
    hypothesis_testing_region,
)

# A sequence of the palette's colours for things that are not mechanisms (candidate ε
# values, classes): the mechanism colours in a fixed order, black left out.
SERIES_COLORS = tuple(
    MECHANISM_COLORS[m] for m in ("permute_flip", "global_em", "count_em", "laplace_counts")
) + (MECHANISM_COLORS["smooth_em"],)
EMPIRICAL_COLOR = MECHANISM_COLORS["none"]  # black: data points over coloured bars
ABOVE_EPSILON_COLOR = MECHANISM_COLORS["smooth_em"]  # vermillion: a broken promise
WITHIN_EPSILON_COLOR = MECHANISM_COLORS["permute_flip"]  # blue
WARN_COLOR = MECHANISM_COLORS["global_em"]  # orange
# Neutral grey for structure (tree edges, the random-guess line) and the target line.
NEUTRAL_COLOR = "#BBBBBB"
TARGET_COLOR = "#444444"
# The loss heatmap's colour scale ends at this multiple of ε (larger losses are drawn in
# the darkest colour; their exact value is written in the cell and the hover).
LOSS_CAP_FACTOR = 3.0
MAX_CELL_TEXT = 15  # write the loss in each cell up to this max count


def _label(mechanism: str) -> str:
    return f"{mechanism} ({MECHANISMS[mechanism].badge})"


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _note(text: str, y: float = 1.0) -> dict:
    """A grey explanatory line just above the plot area, under the title."""
    return {
        "text": text,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": y,
        "yanchor": "bottom",
        "xanchor": "left",
        "showarrow": False,
        "align": "left",
        "font": {"size": 12, "color": "#444444"},
    }


def _loss_text(value: float) -> str:
    if np.isnan(value):
        return "—"
    if math.isinf(value):
        return "∞"
    return f"{value:.3g}"


def _short_loss(value: float) -> str:
    """At most 4 characters, to fit a heatmap cell: 2.13, 347, 19k, 3e+09."""
    if np.isnan(value) or math.isinf(value) or value < 1000:
        return _loss_text(value)
    if value < 1e6:
        return f"{value / 1e3:.2g}k".replace("e+0", "e")
    return f"{value:.0e}".replace("e+0", "e").replace("e+", "e")


# --- mechanism playground -----------------------------------------------------------------


def playground_figure(play: Playground, empirical: pd.DataFrame | None = None) -> go.Figure:
    """Exact output probabilities of each mechanism as bars, one panel per mechanism,
    with empirical frequencies of seeded draws (``dpviz.evaluation.teach.empirical_frequencies``)
    overlaid as black diamonds when given.

    Bars of mechanisms without a DP proof are hatched and their panel says NOT DP.
    """
    probs = play.probabilities
    mechanisms = list(dict.fromkeys(probs["mechanism"]))
    n = len(mechanisms)
    cols = min(3, n)
    rows = math.ceil(n / cols)
    titles = [
        _label(m) + (": noisy argmax" if MECHANISMS[m].releases == "counts" else "")
        for m in mechanisms
    ]
    fig = make_subplots(
        rows=rows,
        cols=cols,
        subplot_titles=titles,
        shared_yaxes=True,
        horizontal_spacing=0.05,
        vertical_spacing=0.22 if rows > 1 else 0.1,
    )
    ticks = [f"{c}<br>({f} rec.)" for c, f in zip(play.class_names, play.counts)]
    draws = None
    for i, m in enumerate(mechanisms):
        row, col = divmod(i, cols)
        mech = MECHANISMS[m]
        part = probs[probs["mechanism"] == m]
        fig.add_trace(
            go.Bar(
                x=ticks,
                y=part["probability"],
                name="exact probability (bars; hatched = NOT DP)",
                legendgroup="exact",
                showlegend=i == 0,
                marker={
                    "color": MECHANISM_COLORS.get(m, "#000000"),
                    "line": {"color": "#000000", "width": 1},
                    "pattern": {
                        "shape": "" if mech.private else NOT_DP_PATTERN,
                        "fgcolor": "#000000",
                        "solidity": 0.15,
                    },
                },
                text=[f"{p:.1%}" for p in part["probability"]],
                textposition="outside",
                cliponaxis=False,
                customdata=np.stack([part["class"], part["is_majority"]], axis=1),
                hovertemplate=f"{_label(m)}<br>class %{{customdata[0]}}"
                "<br>exact P(release) = %{y:.4f}<extra></extra>",
            ),
            row=row + 1,
            col=col + 1,
        )
        if empirical is not None:
            emp = empirical[empirical["mechanism"] == m]
            if len(emp):
                draws = int(emp["draws"].iloc[0])
                fig.add_trace(
                    go.Scatter(
                        x=ticks,
                        y=emp["frequency"],
                        mode="markers",
                        name=f"drawn {draws:,} times: share of draws",
                        legendgroup="empirical",
                        showlegend=draws is not None and i == 0,
                        marker={
                            "symbol": "diamond",
                            "size": 11,
                            "color": EMPIRICAL_COLOR,
                            "line": {"color": "#FFFFFF", "width": 1.5},
                        },
                        customdata=np.stack([emp["class"], emp["hits"]], axis=1),
                        hovertemplate=f"{_label(m)}<br>class %{{customdata[0]}}<br>"
                        f"drawn {draws:,} times: %{{customdata[1]:,}} (%{{y:.1%}})"
                        "<extra></extra>",
                    ),
                    row=row + 1,
                    col=col + 1,
                )
    fig.update_yaxes(range=[0, 1.15], tickformat=".0%", dtick=0.25)
    for r in range(1, rows + 1):
        fig.update_yaxes(title_text="P(release class)", row=r, col=1)
    for c in range(1, cols + 1):
        fig.update_xaxes(title_text="class (records in the leaf)", row=rows, col=c)
    counts = ", ".join(f"{c} = {f}" for c, f in zip(play.class_names, play.counts))
    notes = [
        f"One leaf with {counts}; ε = {play.epsilon:g}. Bars: exact probability of each "
        "released label."
    ]
    if draws is not None:
        notes.append(f"Diamonds: share of {draws:,} seeded random draws.")
    fig.update_layout(
        template=TEMPLATE,
        # The note rides in the title: the panels' own titles take the usual note spot.
        title={
            "text": "What each mechanism releases for this leaf<br>"
            f"<span style='font-size:12px;color:#444444'>{'<br>'.join(notes)}</span>"
        },
        height=330 * rows + 170,
        margin={"t": 150, "b": 60, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
        bargap=0.3,
    )
    return fig


# --- privacy-loss heatmap -----------------------------------------------------------------


def privacy_loss_heatmap(grid: LossGrid) -> go.Figure:
    """Worst-case privacy loss of each 2-class leaf (count A, count B) against its
    neighbours one record away, with the cells above ε marked by a vermillion ✕.

    Colours: white (0) to blue at ε, then orange to vermillion above ε, capped at
    3ε (the exact value is written in the cell and in the hover).
    """
    eps = grid.epsilon
    cells = grid.cells
    size = grid.max_count + 1
    cap = LOSS_CAP_FACTOR * eps
    z = np.full((size, size), np.nan)
    z[cells["count_b"], cells["count_a"]] = np.minimum(cells["loss"], cap)
    text = np.full((size, size), "", dtype=object)
    text[cells["count_b"], cells["count_a"]] = [_short_loss(v) for v in cells["loss"]]
    custom = np.empty((size, size, 7), dtype=object)
    columns = ["loss_add_a", "loss_remove_a", "loss_add_b", "loss_remove_b"]
    for row in cells.itertuples(index=False):
        custom[row.count_b, row.count_a] = [
            _loss_text(row.loss),
            row.worst_neighbour,
            row.gap_j,
            *(_loss_text(getattr(row, c)) for c in columns),
        ]
    at = 1.0 / LOSS_CAP_FACTOR
    scale = [
        [0.0, "#FFFFFF"],
        [at, WITHIN_EPSILON_COLOR],
        [at + 1e-6, WARN_COLOR],
        [1.0, ABOVE_EPSILON_COLOR],
    ]
    fig = go.Figure(
        go.Heatmap(
            x=np.arange(size),
            y=np.arange(size),
            z=z,
            zmin=0.0,
            zmax=cap,
            colorscale=scale,
            text=text,
            texttemplate="%{text}" if size <= MAX_CELL_TEXT + 1 else None,
            textfont={"size": 10},
            customdata=custom,
            xgap=1,
            ygap=1,
            colorbar={
                "title": {"text": "privacy loss<br>(ln of a<br>probability ratio)"},
                "tickvals": [0, eps, 2 * eps, cap],
                "ticktext": ["0", f"ε = {eps:g}", f"{2 * eps:g}", f"≥ {cap:g}"],
            },
            hovertemplate="A = %{x}, B = %{y} records (gap j = %{customdata[2]})<br>"
            "worst loss %{customdata[0]} (%{customdata[1]})<br>"
            "vs A+1: %{customdata[3]} · vs A−1: %{customdata[4]}<br>"
            "vs B+1: %{customdata[5]} · vs B−1: %{customdata[6]}<extra></extra>",
            name="privacy loss",
        )
    )
    above = cells[cells["above"]]
    marker_size = max(4, min(9, int(120 / size)))
    fig.add_trace(
        go.Scatter(
            x=above["count_a"] + 0.32,
            y=above["count_b"] + 0.3,
            mode="markers",
            name=f"✕ loss above ε = {eps:g}: the DP promise is broken",
            # A black cross in the cell's corner: visible on every colour of the scale.
            marker={
                "symbol": "x-thin-open",
                "size": marker_size,
                "color": "#000000",
                "line": {"color": "#000000", "width": 2},
            },
            customdata=np.stack(
                [above["count_a"], above["count_b"], [_loss_text(v) for v in above["loss"]]],
                axis=1,
            )
            if len(above)
            else None,
            hovertemplate="A = %{customdata[0]}, B = %{customdata[1]}: loss %{customdata[2]} "
            f"> ε = {eps:g}<extra></extra>",
            showlegend=True,
        )
    )
    verdict = (
        f"{grid.n_above:,} of {len(cells):,} leaves exceed ε"
        if grid.n_above
        else f"no leaf exceeds ε = {eps:g}"
    )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"Worst-case privacy loss of {_label(grid.mechanism)}, ε = {eps:g}"},
        height=640,
        margin={"t": 110, "b": 40, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.12, "x": 0},
        annotations=[
            _note(
                f"Each cell: a leaf with those class counts; worst loss against a leaf one "
                f"record away. {verdict}.<br>Exact, from the output law: no data read."
            )
        ],
    )
    dtick = 1 if size <= 21 else 5
    fig.update_xaxes(
        title_text="count of class A in the leaf (records)",
        dtick=dtick,
        range=[-0.5, size - 0.5],
        constrain="domain",
    )
    fig.update_yaxes(
        title_text="count of class B in the leaf (records)",
        dtick=dtick,
        range=[-0.5, size - 0.5],
        scaleanchor="x",
        constrain="domain",
    )
    return fig


# --- hypothesis-testing region -------------------------------------------------------------


def hypothesis_testing_figure(epsilons: Sequence[float], n_points: int = 201) -> go.Figure:
    """The (false-positive, false-negative) error rates no membership attacker can reach,
    one boundary per candidate ε, above the random-guessing line (ε = 0).

    Every attack lands on or above its ε's boundary; the shaded area under it is out of
    reach. A formula of ε only (public); holds for mechanisms proven ε-DP.
    """
    eps_list = [float(e) for e in epsilons]
    if not eps_list:
        raise ValueError("give at least one ε to plot")
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[1, 0],
            mode="lines",
            name="random guessing (ε = 0, perfect privacy)",
            line={"color": NEUTRAL_COLOR, "dash": "dot", "width": 2},
            hovertemplate="random guessing: FPR %{x:.0%}, FNR %{y:.0%}<extra></extra>",
        )
    )
    # Largest ε first, so the larger unreachable areas of smaller ε are drawn on top.
    for i, eps in sorted(enumerate(eps_list), key=lambda t: -t[1]):
        color = SERIES_COLORS[i % len(SERIES_COLORS)]
        region = hypothesis_testing_region(eps, n_points)
        fig.add_trace(
            go.Scatter(
                x=region["fpr"],
                y=region["fnr_min"],
                mode="lines",
                fill="tozeroy",
                fillcolor=_rgba(color, 0.12),
                name=f"ε = {eps:g}: out of reach below this line",
                line={"color": color, "width": 3},
                hovertemplate=f"ε = {eps:g}<br>false-positive rate %{{x:.1%}}<br>"
                "lowest possible false-negative rate %{y:.1%}<extra></extra>",
            )
        )
        corner = balanced_error_rate(eps)
        fig.add_trace(
            go.Scatter(
                x=[corner],
                y=[corner],
                mode="markers",
                name=f"ε = {eps:g}: best balanced attacker",
                showlegend=False,
                marker={"color": color, "size": 10, "line": {"color": "#000000", "width": 1}},
                hovertemplate=f"ε = {eps:g}: an attacker erring equally both ways is wrong "
                f"at least {corner:.1%} of the time each way<extra></extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "What an attacker cannot do: error rates of guessing membership"},
        height=600,
        margin={"t": 110, "b": 40, "l": 80, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
        annotations=[
            _note(
                "An attacker guesses whether one person is in the data. Any attack lands on "
                "or above<br>its ε's line (dots: equal error both ways); 100% − FNR is the "
                "share of members caught.",
                # Above the "100%" tick label, which sticks out over the square plot's top.
                y=1.04,
            )
        ],
    )
    fig.update_xaxes(
        title_text="false-positive rate: says 'in' about a non-member (%)",
        range=[0, 1],
        tickformat=".0%",
        dtick=0.2,
        constrain="domain",
    )
    fig.update_yaxes(
        title_text="false-negative rate: says 'out' about a member (%)",
        range=[0, 1],
        tickformat=".0%",
        dtick=0.2,
        scaleanchor="x",
        constrain="domain",
    )
    return fig


# --- ε choice curve ---------------------------------------------------------------------


def epsilon_choice_figure(choice: EpsilonChoice, chosen: float | None = None) -> go.Figure:
    """The DP forest's score against ε with its ±1-std band, the non-private reference,
    the acceptable-loss target, and the smallest ε whose lower band meets it.

    ``chosen`` marks the ε finally agreed on when it differs from the suggestion. Scores
    are from held-out data: NOT private (for the people deciding, not for publication).
    """
    curve = choice.curve
    mech = str(choice.config.get("mechanism", "permute_flip"))
    color = MECHANISM_COLORS.get(mech, "#0072B2")
    dash = "solid" if choice.private else "dash"
    name = METRIC_NAMES[choice.metric]
    x = curve["epsilon"].to_numpy()
    pct = 100.0
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=x,
            y=pct * curve["upper"],
            mode="lines",
            line={"width": 0},
            showlegend=False,
            hoverinfo="skip",
            name="mean + 1 std",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=pct * curve["lower"],
            mode="lines",
            fill="tonexty",
            fillcolor=_rgba(color, 0.2),
            line={"color": color, "width": 1.5, "dash": "dot"},
            name="mean − 1 std (the lower band that must meet the target)",
            legendrank=2,
            customdata=np.stack([curve["meets"].map({True: "meets", False: "misses"})], axis=1),
            hovertemplate="ε = %{x:g}<br>lower band %{y:.2f}% (%{customdata[0]} the target)"
            "<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=pct * curve["mean"],
            mode="lines+markers",
            name=f"{mech} forest ({'ε-DP' if choice.private else 'NOT DP'}): mean {name}",
            legendrank=1,
            line={"color": color, "width": 3, "dash": dash},
            marker={
                "size": 9,
                "color": [color if m else "#FFFFFF" for m in curve["meets"]],
                "line": {"color": color, "width": 2},
            },
            customdata=np.stack([pct * curve["std"], pct * curve["lower"]], axis=1),
            hovertemplate=f"ε = %{{x:g}}<br>{name} %{{y:.2f}}% ± %{{customdata[0]:.2f}}"
            "<br>lower band %{customdata[1]:.2f}%<extra></extra>",
        )
    )
    ref_name, ref_color, ref_dash = REFERENCE_STYLES.get(
        choice.reference, (choice.reference, "#000000", "dash")
    )
    span = [float(x.min()), float(x.max())] if len(x) else [0.01, 10.0]
    for rank, (y, label, line) in enumerate(
        (
            (
                pct * choice.reference_mean,
                f"{ref_name} (NOT private): {pct * choice.reference_mean:.1f}%",
                {"color": ref_color, "width": 2.5, "dash": ref_dash},
            ),
            (
                pct * choice.target,
                f"target: at most {choice.acceptable_loss:g} points less = "
                f"{pct * choice.target:.1f}%",
                {"color": TARGET_COLOR, "width": 1.5, "dash": "dashdot"},
            ),
        ),
        start=3,
    ):
        fig.add_trace(
            go.Scatter(
                x=span,
                y=[y, y],
                mode="lines",
                name=label,
                legendrank=rank,
                line=line,
                hovertemplate=f"{label}<extra></extra>",
            )
        )
    suggested = choice.epsilon
    marks = []
    if chosen is not None and suggested is not None and math.isclose(chosen, suggested):
        marks.append((suggested, f"chosen ε = {suggested:g}, the smallest meeting it", "solid"))
    else:
        if suggested is not None:
            marks.append((suggested, f"smallest ε meeting the target: {suggested:g}", "dot"))
        if chosen is not None:
            marks.append((float(chosen), f"chosen ε = {float(chosen):g}", "solid"))
    for value, label, line_dash in marks:
        fig.add_trace(
            go.Scatter(
                x=[value, value],
                y=[0, 100],
                mode="lines",
                name=label,
                legendrank=5,
                line={"color": "#000000", "width": 2, "dash": line_dash},
                hovertemplate=f"{label}<extra></extra>",
            )
        )
    log_x = len(x) > 1 and x.min() > 0 and x.max() / x.min() >= 20
    lows = [pct * curve["lower"].min(), pct * choice.target] if len(curve) else [0.0]
    highs = [pct * curve["upper"].max(), pct * choice.reference_mean] if len(curve) else [100.0]
    bottom, top = max(0.0, min(lows) - 3), min(100.0, max(highs) + 3)
    fig.update_layout(
        template=TEMPLATE,
        title={"text": f"How much {name} does each ε cost?"},
        height=560,
        margin={"t": 110, "b": 40, "l": 70, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        hovermode="closest",
        annotations=[
            _note(
                "Cross-validated on held-out folds: mean ± 1 standard deviation (NOT private: "
                "for the people deciding).<br>"
                + ("Filled dots: lower band meets the target. " if len(curve) else "")
                + ("" if choice.private else f"{mech} is NOT DP: its ε promises nothing.")
            )
        ],
    )
    fig.update_xaxes(
        title_text="ε, total privacy budget" + (" (log scale)" if log_x else ""),
        type="log" if log_x else "linear",
    )
    if log_x:
        ticks = _ticks_125(float(x.min()), float(x.max()))
        fig.update_xaxes(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    fig.update_yaxes(title_text=f"{name} on held-out data (%)", range=[bottom, top])
    return fig


def _ticks_125(low: float, high: float) -> list[float]:
    """1-2-5 ticks covering [low, high] (a log axis without minor-tick clutter)."""
    ticks = []
    for decade in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in (1, 2, 5):
            t = float(f"{m * 10.0**decade:.12g}")
            if low / 1.5 <= t <= high * 1.5:
                ticks.append(t)
    return ticks


# --- a tree grows ---------------------------------------------------------------------------


def tree_figure(walk: TreeWalkthrough, step: int) -> go.Figure:
    """Draw the walk-through's tree as it stands after ``step`` (1–4).

    Step 1 shows the data-free structure; step 2 sizes leaves by their records and
    writes their counts (NOT private); step 3 colours each leaf by its released label;
    step 4 highlights the test record's path.
    """
    if step not in (1, 2, 3, 4):
        raise ValueError(f"step must be 1, 2, 3 or 4, got {step!r}")
    nodes = walk.nodes
    fig = go.Figure()
    path = set(walk.steps[3].highlight) if step == 4 else set()
    xs, ys, xs_hot, ys_hot = [], [], [], []
    by_id = nodes.set_index("node")
    for row in nodes.itertuples(index=False):
        if row.parent < 0:
            continue
        parent = by_id.loc[row.parent]
        hot = row.node in path and row.parent in path
        (xs_hot if hot else xs).extend([parent["x"], row.x, None])
        (ys_hot if hot else ys).extend([parent["y"], row.y, None])
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": NEUTRAL_COLOR, "width": 2},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    if xs_hot:
        fig.add_trace(
            go.Scatter(
                x=xs_hot,
                y=ys_hot,
                mode="lines",
                line={"color": "#000000", "width": 5},
                name="the test record's path",
                hoverinfo="skip",
            )
        )
    inner = nodes[~nodes["is_leaf"]]
    fig.add_trace(
        go.Scatter(
            x=inner["x"],
            y=inner["y"],
            mode="markers+text",
            text=inner["split"],
            textposition="top center",
            marker={"size": 14, "color": "#FFFFFF", "line": {"color": "#000000", "width": 2}},
            name="test (drawn from the public schema only)",
            customdata=np.stack([inner["node"], inner["edge"]], axis=1),
            hovertemplate="node %{customdata[0]}: %{text}<br>reached by %{customdata[1]}"
            "<extra></extra>",
        )
    )
    leaves = nodes[nodes["is_leaf"]]
    count_cols = [f"count[{c}]" for c in walk.classes]
    if step == 1:
        label = ["leaf"] * len(leaves)
        sizes = np.full(len(leaves), 18.0)
    else:
        label = [
            "<br>".join(f"{c}: {row[col]}" for c, col in zip(walk.classes, count_cols))
            for _, row in leaves.iterrows()
        ]
        n = leaves["n_records"].astype(float).to_numpy()
        sizes = 14 + 26 * np.sqrt(n / max(1.0, n.max()))
    if step >= 3:
        label = [f"releases {r}<br>" + lab for r, lab in zip(leaves["released_label"], label)]
        palette = {c: SERIES_COLORS[i % len(SERIES_COLORS)] for i, c in enumerate(walk.classes)}
        groups = [
            (
                leaves["released_label"].to_numpy() == c,
                palette[c],
                f"leaf releasing {c!r}",
            )
            for c in walk.classes
        ]
    else:
        groups = [(np.ones(len(leaves), dtype=bool), "#DDDDDD", "leaf")]
    hover = "leaf %{customdata[0]}<br>reached by %{customdata[1]}"
    if step > 1:
        hover += "<br>%{text}<br>(true counts: NOT private)"
    label = np.asarray(label, dtype=object)
    on_path = leaves["node"].isin(path).to_numpy()
    for mask, color, name in groups:
        if not mask.any():
            continue
        part = leaves[mask]
        fig.add_trace(
            go.Scatter(
                x=part["x"],
                y=part["y"],
                mode="markers+text",
                text=label[mask],
                textposition="bottom center",
                marker={
                    "size": sizes[mask],
                    "color": color,
                    "opacity": 1.0,
                    "symbol": "square",
                    "line": {
                        "color": np.where(on_path[mask], "#000000", "#555555"),
                        "width": np.where(on_path[mask], 4, 1),
                    },
                },
                name=name,
                customdata=np.stack([part["node"], part["edge"]], axis=1),
                hovertemplate=hover + "<extra></extra>",
            )
        )
    titles = {
        1: "1. The structure is drawn without the data",
        2: "2. Training records fall into the leaves (counts: NOT private)",
        3: "3. Each leaf releases a noisy label",
        4: f"4. A test record collects the tree's vote: {walk.prediction}",
    }
    depth = int(walk.nodes["depth"].max())
    fig.update_layout(
        template=TEMPLATE,
        title={
            "text": f"{titles[step]}<br><span style='font-size:12px;color:#444444'>"
            "At each test, records for which it holds go left, the others right.</span>"
        },
        height=240 + 130 * depth,
        margin={"t": 90, "b": 30, "l": 20, "r": 20},
        legend={"orientation": "h", "yanchor": "top", "y": -0.02, "x": 0},
    )
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, range=[-depth - 0.8, 0.5])
    return fig
