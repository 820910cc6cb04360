"""A deep tree as an icicle, root on top: the released structure down to the display depth,
or (diagnostics, NOT private) the non-empty part with boxes as wide as their records.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import TEMPLATE, note_annotation
from dpviz.figures.trees.labels import (
    node_hover,
)
from dpviz.figures.trees.style import (
    EMPTY_COLOR,
    FLIPPED_COLOR,
    LABEL_CHARS,
    NOTE_CHARS,
    STRUCTURE_COLOR,
    class_color,
    class_index,
    leaf_legend,
    legend_entry,
    released_title,
    shorten,
    title_layout,
    top_margin,
    tree_title,
    wrap,
)


def icicle_figure(
    nodes: pd.DataFrame,
    classes,
    *,
    diagnostics: bool,
    tree: int,
    total_leaves: float | None = None,
    height: int = 620,
    name: str | None = None,
    note: str | None = None,
    releases_counts: bool = False,
) -> go.Figure:
    """A deep tree as an icicle, root on top.

    Diagnostics (NOT private): the non-empty part, each box as wide as its records,
    coloured by the true majority; flipped leaves black; branches no record reached
    are aggregated into their parent's hover. Released view: the structure down to the
    display depth, boxes sized by the number of branches drawn below them, leaves (if
    drawn) coloured by the released label (``releases_counts``: the largest noisy count).
    """
    classes = [str(c) for c in classes]
    index = class_index(classes)
    hover = node_hover(nodes, classes, diagnostics=diagnostics)
    ids = nodes["node"].astype(str).to_numpy()
    parents = np.where(nodes["parent"] >= 0, nodes["parent"].astype(str), "")
    labels = np.where(nodes["parent"] >= 0, nodes["edge"], name or f"tree {tree}")
    labels = np.asarray([shorten(t, LABEL_CHARS) for t in labels], dtype=object)
    labels = np.where(nodes["hidden_children"], labels + " …", labels)
    if diagnostics:
        colors = [
            FLIPPED_COLOR if flipped else class_color(index[m]) if m in index else EMPTY_COLOR
            for m, flipped in zip(nodes["true_majority"], nodes["flipped"])
        ]
        values = nodes["records"].to_numpy()
        branchvalues = "total"
    else:
        colors = [
            class_color(index[lab]) if lab in index else STRUCTURE_COLOR
            for lab in nodes["released_label"]
        ]
        values, branchvalues = None, "remainder"
    fig = go.Figure(
        go.Icicle(
            ids=ids,
            parents=parents,
            labels=labels,
            values=values,
            branchvalues=branchvalues,
            marker={"colors": colors, "line": {"color": "#FFFFFF", "width": 0.5}},
            leaf={"opacity": 1.0},  # plotly fades leaves by default: keep class colours true
            customdata=hover,
            hovertemplate="%{customdata}<extra></extra>",
            tiling={"orientation": "v"},
            textfont={"size": 11},
            insidetextfont={"color": "#000000"},
            sort=False,
        )
    )
    shown = int(nodes["depth"].max())
    if diagnostics:
        root = nodes[nodes["parent"] < 0].iloc[0]
        nonempty = int(root["leaves_below"]) if "leaves_below" in nodes else 0
        of_total = f" of its {total_leaves:,.0f}" if total_leaves else ""
        note = (
            f"Width ∝ records; drawn to depth {shown} (“…”: deeper nodes summed in). "
            f"{nonempty:,}{of_total} leaves hold records;<br>empty branches are left out "
            "and counted in each parent's hover. Colours: the legend below."
        )
    else:
        note = note or (
            f"Structure from the public seed, drawn to depth {shown} (“…”: deeper branches "
            "not drawn).<br>Box width: the branches drawn below it, not records. Nothing "
            "here depends on the data."
        )
    title = released_title(diagnostics, releases_counts)
    for i, c in enumerate(classes):
        legend_entry(
            fig, leaf_legend(c, diagnostics=diagnostics, counts=releases_counts), class_color(i)
        )
    if FLIPPED_COLOR in colors and diagnostics:
        legend_entry(fig, "flipped: released ≠ majority", FLIPPED_COLOR)
    if EMPTY_COLOR in colors:
        legend_entry(fig, "no record", EMPTY_COLOR, outline="#999999")
    if STRUCTURE_COLOR in colors:
        legend_entry(fig, "no label drawn (deeper)", STRUCTURE_COLOR, outline="#999999")
    _icicle_layout(fig, tree_title(name or f"Tree {tree}", title), note, height)
    return fig


def _icicle_layout(fig: go.Figure, title: str, note: str, height: int) -> None:
    """Title, note, the colour legend below, and labels that are hidden (hover shows
    them) rather than shrunk to unreadable size in thin boxes."""
    note = wrap(note, NOTE_CHARS)
    fig.update_layout(
        template=TEMPLATE,
        title=title_layout(title),
        height=height,
        margin={"t": top_margin(title, note), "b": 10, "l": 10, "r": 10},
        annotations=[note_annotation(note)],
        uniformtext={"minsize": 9, "mode": "hide"},
        legend={"orientation": "h", "yanchor": "top", "y": -0.01, "x": 0},
        showlegend=True,
    )
    # The legend entries live on (hidden) cartesian axes behind the icicle.
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
