"""A shallow tree as nodes and links: split rules on the inner nodes, leaves coloured by
the released label (the released view) or the true majority (diagnostics, NOT private).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import TEMPLATE, note_annotation
from dpviz.figures.trees.labels import (
    MAX_TREE_HEIGHT,
    edge_annotations,
    edge_levels,
    fit_labels,
    layout_positions,
    node_hover,
    split_text,
    vertical_px,
    with_rules,
)
from dpviz.figures.trees.style import (
    EMPTY_COLOR,
    FLIPPED_COLOR,
    NOTE_CHARS,
    class_color,
    leaf_legend,
    legend_entry,
    released_title,
    title_layout,
    top_margin,
    tree_title,
    wrap,
)


def _leaf_count_text(leaves: pd.DataFrame, classes) -> list[str]:
    if len(classes) == 2:
        return [
            "/".join(str(int(row[f"count[{c}]"])) for c in classes) if row["records"] else ""
            for _, row in leaves.iterrows()
        ]
    return [str(int(r)) if r else "" for r in leaves["records"]]


def node_link_figure(
    nodes: pd.DataFrame,
    classes,
    *,
    diagnostics: bool,
    tree: int,
    height: int = 560,
    name: str | None = None,
    note: str | None = None,
    releases_counts: bool = False,
) -> go.Figure:
    """A tree as nodes and links, split rules on the inner nodes, leaves coloured by the
    released label (released view) or the true majority (diagnostics, NOT private).

    ``tree`` is the 1-based tree number shown in the title (``name`` replaces "Tree N");
    ``note`` replaces the explanatory line. ``releases_counts``: the leaves release noisy
    counts, so the released view's colour is their largest class (derived, not released).
    """
    classes = [str(c) for c in classes]
    x = layout_positions(nodes)
    y = -nodes["depth"].to_numpy(dtype=float)
    fig = go.Figure(links_trace(nodes, x, y, "#999999"))
    hover = np.asarray(node_hover(nodes, classes, diagnostics=diagnostics), dtype=object)
    hover = with_rules(hover, nodes)
    inner = ~nodes["is_leaf"].to_numpy()
    text, position = fit_labels(nodes, x, np.asarray(split_text(nodes), dtype=object))
    fig.add_trace(
        split_trace(x, y, inner, text, position, hover, size=10, name="split (rule: left branch)")
    )
    leaf = ~inner
    if diagnostics:
        # Counts under each leaf ("3/1"; the total with more than two classes).
        fig.add_trace(
            go.Scatter(
                x=x[leaf],
                y=y[leaf] - 0.22,
                mode="text",
                text=_leaf_count_text(nodes[leaf], classes),
                textfont={"size": 9, "color": "#333333"},
                hoverinfo="skip",
                showlegend=False,
            )
        )
    label_col = "true_majority" if diagnostics else "released_label"
    labels = nodes[label_col].to_numpy()
    records = nodes["records"].to_numpy() if diagnostics else None
    top = max(1, int(records[leaf].max())) if diagnostics and leaf.any() else 1
    for i, c in enumerate(classes):
        sel = leaf & (labels == c)
        if diagnostics:
            sel &= ~nodes["flipped"].to_numpy()
        legend = leaf_legend(c, diagnostics=diagnostics, counts=releases_counts)
        if sel.any():
            _leaf_trace(fig, x, y, sel, hover, class_color(i), legend, records, top)
        else:  # every class keeps its colour key, drawn or not (display depth)
            legend_entry(fig, legend, class_color(i))
    if diagnostics:
        flipped = leaf & nodes["flipped"].to_numpy()
        _leaf_trace(
            fig, x, y, flipped, hover, FLIPPED_COLOR, "flipped: released ≠ majority", records, top
        )
        empty = leaf & nodes["empty"].to_numpy()
        _leaf_trace(fig, x, y, empty, hover, EMPTY_COLOR, "empty leaf (no record)", None, top)
    title = released_title(diagnostics, releases_counts)
    if note is None:
        output = "noisy class counts" if releases_counts else "a label"
        note = (
            "Leaf size ∝ records; under each leaf its class counts ("
            + "/".join(classes[:2] if len(classes) == 2 else ["records"])
            + "). Hover a node for its gap j and flip probability."
            if diagnostics
            else f"Every leaf releases {output}, empty or not, so an outsider cannot tell "
            "which leaves held records."
        )
    node_link_layout(
        fig, nodes, x, title=tree_title(name or f"Tree {tree}", title), note=note, height=height
    )
    return fig


def links_trace(nodes: pd.DataFrame, x: np.ndarray, y: np.ndarray, color: str) -> go.Scatter:
    """The links of a node-link tree: one line from every node to its parent."""
    row_of = {int(n): i for i, n in enumerate(nodes["node"])}
    ex, ey = [], []
    for node, parent in zip(nodes["node"], nodes["parent"]):
        if parent >= 0:
            a, b = row_of[int(parent)], row_of[int(node)]
            ex += [x[a], x[b], None]
            ey += [y[a], y[b], None]
    return go.Scatter(
        x=ex,
        y=ey,
        mode="lines",
        line={"color": color, "width": 1},
        hoverinfo="skip",
        showlegend=False,
    )


def split_trace(x, y, inner, text, position, hover, *, size: int, name: str) -> go.Scatter:
    """The inner nodes of a node-link tree: circles labelled with their split rule."""
    return go.Scatter(
        x=x[inner],
        y=y[inner],
        mode="markers+text",
        marker={"symbol": "circle", "size": size, "color": "#FFFFFF", "line": {"width": 1}},
        text=text[inner],
        textposition=position[inner],
        textfont={"size": 11},
        customdata=hover[inner],
        hovertemplate="%{customdata}<extra></extra>",
        name=name,
    )


def node_link_layout(
    fig: go.Figure, nodes: pd.DataFrame, x: np.ndarray, *, title: str, note: str, height: int
) -> None:
    """Title, note, legend below, a depth axis and the branch labels of a node-link
    tree."""
    note = wrap(note, NOTE_CHARS)
    top = top_margin(title, note)
    depth = int(nodes["depth"].max())
    levels = edge_levels(nodes, x)
    # The plot area (the legend takes about 40 px) spans depth + 1.2 units of y; it
    # grows to give vertical branch labels their room.
    frame_px = top + 30 + 40
    needed = vertical_px(levels) * (depth + 1.2) + frame_px
    height = int(min(MAX_TREE_HEIGHT, max(height, needed)))
    level_px = (height - frame_px) / (depth + 1.2)
    y = -nodes["depth"].to_numpy(dtype=float)
    fig.update_layout(
        template=TEMPLATE,
        title=title_layout(title),
        height=height,
        margin={"t": top, "b": 30, "l": 30, "r": 30},
        legend={"orientation": "h", "yanchor": "top", "y": -0.02, "x": 0},
        annotations=[note_annotation(note), *edge_annotations(levels, x, y, level_px)],
        hovermode="closest",
    )
    fig.update_xaxes(visible=False, range=[x.min() - 0.8, x.max() + 0.8])
    fig.update_yaxes(
        title_text="depth",
        tickvals=-np.arange(depth + 1),
        ticktext=[str(d) for d in range(depth + 1)],
        range=[-depth - 0.6, 0.6],
        zeroline=False,
    )


def _leaf_trace(fig, x, y, sel, hover, color, name, records, top) -> None:
    if not sel.any():
        return
    size = 18 if records is None else 8 + 16 * np.sqrt(records[sel] / top)
    fig.add_trace(
        go.Scatter(
            x=x[sel],
            y=y[sel],
            mode="markers",
            marker={
                "symbol": "square",
                "size": size,
                "color": color,
                "line": {"color": "#000000", "width": 1},
            },
            customdata=hover[sel],
            hovertemplate="%{customdata}<extra></extra>",
            name=name,
        )
    )
