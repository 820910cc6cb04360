"""DPBoost trees: real-valued leaves on a diverging colour scale, as nodes and links or, for
deep trees, an icicle.

The released view shows the noisy leaf values (what an outsider sees); diagnostics show
the true (clipped) leaf values and records per leaf, which are NOT private.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import TEMPLATE, note_annotation
from dpviz.figures.trees.labels import (
    fit_labels,
    layout_positions,
    split_text,
    with_rules,
)
from dpviz.figures.trees.node_link import (
    links_trace,
    node_link_layout,
    split_trace,
)
from dpviz.figures.trees.style import (
    EMPTY_COLOR,
    LABEL_CHARS,
    NOTE_CHARS,
    shorten,
    title_layout,
    top_margin,
    tree_title,
    wrap,
)

VALUE_SCALE = "RdBu"  # diverging, readable in colour-blind vision; red < 0 < blue
BOOST_NODE_LINK_MAX_LEAVES = 64
BOOST_RELEASED_TITLE = "Released model: splits and noisy leaf values (what an outsider sees)"
BOOST_DIAGNOSTICS_TITLE = "Data-owner diagnostics: records and true leaf values (NOT private)"


def boost_hover(nodes: pd.DataFrame, *, diagnostics: bool) -> list[str]:
    """Hover text of every node of a DPBoost tree (``treeviz.boost_nodes``)."""
    out = []
    for _, row in nodes.iterrows():
        lines = [f"<b>{row['edge'] or 'root'}</b> (depth {row['depth']})"]
        if row["split"]:
            lines.append(f"splits on {row['split']}")
        if row["hidden_children"]:
            lines.append("deeper nodes not drawn (display depth)")
        if row["is_leaf"]:
            lines.append(f"released value: <b>{row['released_value']:+.3f}</b>")
        else:
            lines.append(f"mean released value of the leaves below: {row['released_value']:+.3f}")
        if diagnostics:
            lines.append(f"records: {int(row['records']):,}")
            if row["is_leaf"] and row["records"] > 0:
                lines.append(
                    f"true value (clipped) {row['true_value']:+.3f} · noise {row['noise']:+.3f}"
                )
                lines.append("<b>sign flipped</b>" if row["sign_flipped"] else "sign kept")
            elif row["is_leaf"]:
                lines.append("empty leaf: its released value is pure noise")
        out.append("<br>".join(lines))
    return out


def _value_range(values: np.ndarray) -> float:
    """The colour scale's half-range: the 90th percentile of |value|, so that one large
    noise draw does not wash every other leaf out to white (larger values saturate)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(max(1e-9, np.quantile(finite, 0.9))) if len(finite) else 1.0


def boost_tree_figure(
    nodes: pd.DataFrame,
    *,
    diagnostics: bool,
    name: str,
    positive: str,
    height: int = 620,
) -> go.Figure:
    """A DPBoost tree: split rules on the inner nodes, leaves coloured by their value on
    a diverging scale (blue pushes towards ``positive``, red away from it).

    Released view: the noisy leaf values (what an outsider sees). Diagnostics (NOT
    private): the true (clipped) leaf values, leaf size ∝ records, empty leaves white,
    sign flips outlined. Node-link up to 64 leaves, else an icicle.
    """
    if int(nodes["is_leaf"].sum()) > BOOST_NODE_LINK_MAX_LEAVES or nodes["hidden_children"].any():
        return _boost_icicle(nodes, diagnostics=diagnostics, name=name, positive=positive)
    x = layout_positions(nodes)
    y = -nodes["depth"].to_numpy(dtype=float)
    hover = with_rules(
        np.asarray(boost_hover(nodes, diagnostics=diagnostics), dtype=object), nodes
    )
    fig = go.Figure(links_trace(nodes, x, y, "#BBBBBB"))
    inner = ~nodes["is_leaf"].to_numpy()
    depth = nodes["depth"].to_numpy()
    per_level = np.bincount(depth[inner], minlength=int(depth.max()) + 1)
    labelled = inner & (per_level[depth] <= 16)
    text = np.where(labelled, np.asarray(split_text(nodes), dtype=object), "")
    text, position = fit_labels(nodes, x, text)
    fig.add_trace(
        split_trace(
            x,
            y,
            inner,
            text,
            position,
            hover,
            size=9,
            name="split (rule: left branch; hover deeper ones)",
        )
    )
    leaf = ~inner
    column = "true_value" if diagnostics else "released_value"
    values = nodes[column].to_numpy(dtype=float)
    records = nodes["records"].to_numpy()
    # Diagnostics: the scale follows the leaves that hold records (empty ones are 0).
    top = _value_range(values[leaf & (records > 0)] if diagnostics else values[leaf])
    # Leaves sit about 700 px / leaves apart: keep the squares from overlapping.
    widest = float(np.clip(620 / max(1, int(leaf.sum())), 8, 26))
    if diagnostics:
        biggest = max(1, int(records[leaf].max()))
        size = np.where(records > 0, 6 + (widest - 6) * np.sqrt(records / biggest), 6)
        empty = nodes["empty"].to_numpy()
        flipped = nodes["sign_flipped"].to_numpy()
        colors = np.where(empty, np.nan, values)
        line_width = np.where(flipped, 2.5, 0.5)
    else:
        size = np.full(len(nodes), widest)
        colors = values
        line_width = np.full(len(nodes), 0.5)
    shown = leaf & np.isfinite(colors) if diagnostics else leaf
    fig.add_trace(
        go.Scatter(
            x=x[shown],
            y=y[shown],
            mode="markers",
            marker={
                "symbol": "square",
                "size": size[shown],
                "color": colors[shown],
                "colorscale": VALUE_SCALE,
                "cmin": -top,
                "cmax": top,
                "line": {"color": "#000000", "width": line_width[shown]},
                "colorbar": {
                    "title": {
                        "text": ("true value" if diagnostics else "released value")
                        + f"<br>blue: {shorten(positive, 12)}<br>red: not {shorten(positive, 12)}"
                    },
                    "ticks": "outside",
                    "thickness": 14,
                    "len": 0.6,
                },
            },
            customdata=hover[shown],
            hovertemplate="%{customdata}<extra></extra>",
            name="leaf (colour: value)",
        )
    )
    if diagnostics and (leaf & nodes["empty"].to_numpy()).any():
        gone = leaf & nodes["empty"].to_numpy()
        fig.add_trace(
            go.Scatter(
                x=x[gone],
                y=y[gone],
                mode="markers",
                marker={
                    "symbol": "square",
                    "size": 6,
                    "color": EMPTY_COLOR,
                    "line": {"color": "#888888", "width": 1},
                },
                customdata=hover[gone],
                hovertemplate="%{customdata}<extra></extra>",
                name="empty leaf (no record)",
            )
        )
    if diagnostics:
        note = (
            f"Leaf colour: true leaf value before noise (clipped); blue pushes towards "
            f"{positive}, red away. Size ∝ records; thick outline: the noise flipped the "
            "sign.<br>Records are the tree's own subset after gradient filtering."
        )
        title = BOOST_DIAGNOSTICS_TITLE
    else:
        note = (
            f"Leaf colour: the released value (clipped, plus Laplace noise); blue pushes "
            f"towards {positive}, red away; the scale ends at the 90th percentile of |value|."
            "<br>Every leaf releases a value, empty or not. Split rules on the upper levels; "
            "hover a node for the rest."
        )
        title = BOOST_RELEASED_TITLE
    node_link_layout(fig, nodes, x, title=tree_title(name, title), note=note, height=height)
    return fig


def _boost_icicle(nodes: pd.DataFrame, *, diagnostics: bool, name: str, positive: str):
    """A deep DPBoost tree as an icicle, every box coloured by its (mean) value."""
    column = "true_value" if diagnostics else "released_value"
    values = nodes[column].to_numpy(dtype=float)
    labels = np.where(nodes["parent"] >= 0, nodes["edge"], name)
    labels = np.asarray([shorten(t, LABEL_CHARS) for t in labels], dtype=object)
    labels = np.where(nodes["hidden_children"], labels + " …", labels)
    records = nodes["records"].to_numpy()
    keep = records > 0 if diagnostics else np.ones(len(nodes), dtype=bool)
    top = _value_range(values[keep])
    fig = go.Figure(
        go.Icicle(
            ids=nodes["node"].astype(str).to_numpy()[keep],
            parents=np.where(nodes["parent"] >= 0, nodes["parent"].astype(str), "")[keep],
            labels=labels[keep],
            values=records[keep] if diagnostics else None,
            branchvalues="total" if diagnostics else "remainder",
            marker={
                "colors": values[keep],
                "colorscale": VALUE_SCALE,
                "cmin": -top,
                "cmax": top,
                "showscale": True,
                "colorbar": {
                    "title": {
                        "text": ("mean true value" if diagnostics else "mean released value")
                        + f"<br>blue: {shorten(positive, 12)}<br>red: not {shorten(positive, 12)}"
                    }
                },
                "line": {"color": "#FFFFFF", "width": 0.5},
            },
            leaf={"opacity": 1.0},
            customdata=np.asarray(boost_hover(nodes, diagnostics=diagnostics))[keep],
            hovertemplate="%{customdata}<extra></extra>",
            tiling={"orientation": "v"},
            textfont={"size": 11},
            sort=False,
        )
    )
    shown = int(nodes["depth"].max())
    note = (
        f"Drawn to depth {shown} (“…”: deeper nodes summed in). Colour: mean "
        + ("true value, width ∝ records (NOT private)" if diagnostics else "released value")
        + f"; blue pushes towards {positive}, red away."
    )
    title = tree_title(name, BOOST_DIAGNOSTICS_TITLE if diagnostics else BOOST_RELEASED_TITLE)
    note = wrap(note, NOTE_CHARS)
    fig.update_layout(
        template=TEMPLATE,
        title=title_layout(title),
        height=620,
        margin={"t": top_margin(title, note), "b": 10, "l": 10, "r": 10},
        annotations=[note_annotation(note)],
        uniformtext={"minsize": 9, "mode": "hide"},
    )
    return fig
