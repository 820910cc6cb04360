"""Plotly figures of one tree: a node-link diagram for shallow trees, an icicle for deep
ones. Input is a node table from :mod:`dpviz.figures.tree_layout`.

``diagnostics=False`` draws the released view (structure and released labels: what an
outsider sees); ``diagnostics=True`` draws true counts and flips, which are NOT private,
and says so in the title.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import TEMPLATE, _note

# Okabe–Ito colours for classes, starting with two the mechanism curves do not use.
CLASS_COLORS = (
    "#56B4E9",  # sky blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#000000",  # black
)
STRUCTURE_COLOR = "#EEEEEE"
EMPTY_COLOR = "#FFFFFF"
FLIPPED_COLOR = "#000000"
RELEASED_TITLE = "Released model: structure and released labels (what an outsider sees)"
RELEASED_COUNTS_TITLE = (
    "Released model: structure and released noisy counts (what an outsider sees)"
)
DIAGNOSTICS_TITLE = "Data-owner diagnostics: true counts and flips (NOT private)"


def class_color(index: int) -> str:
    return CLASS_COLORS[index % len(CLASS_COLORS)]


def leaf_legend(name: str, *, diagnostics: bool, counts: bool) -> str:
    """A leaf colour's legend entry: the true majority (diagnostics), the class of the
    largest released noisy count (count mechanisms: the label is derived, not released)
    or the released label."""
    if diagnostics:
        return f"true majority {name}"
    return f"largest noisy count {name}" if counts else f"released label {name}"


def _released_title(diagnostics: bool, releases_counts: bool) -> str:
    if diagnostics:
        return DIAGNOSTICS_TITLE
    return RELEASED_COUNTS_TITLE if releases_counts else RELEASED_TITLE


def _class_index(classes) -> dict[str, int]:
    return {str(c): i for i, c in enumerate(classes)}


def _counts_text(row: pd.Series, classes) -> str:
    return ", ".join(f"{c}: {int(row[f'count[{c}]'])}" for c in classes)


def node_hover(nodes: pd.DataFrame, classes, *, diagnostics: bool) -> list[str]:
    """Hover text of every node: its branch rule, split, and (diagnostics) counts."""
    out = []
    for _, row in nodes.iterrows():
        lines = [f"<b>{row['edge'] or 'root'}</b> (depth {row['depth']})"]
        if row["split"]:
            lines.append(f"splits on {row['split']} into {row['n_children']} branches")
        if row["hidden_children"]:
            lines.append("deeper nodes not drawn (display depth)")
        if row["is_leaf"] and not diagnostics:
            if row.get("released_counts"):
                lines.append(f"released noisy counts: {row['released_counts']}")
                lines.append(f"largest: <b>{row['released_label']}</b>")
            else:
                lines.append(f"released label: <b>{row['released_label']}</b>")
        elif not diagnostics and row.get("released_counts"):
            lines.append(
                f"noisy counts of the leaves below, summed: {row['released_counts']} "
                f"(largest: <b>{row['released_label']}</b>)"
            )
        if diagnostics:
            lines.append(f"records: {int(row['records']):,} ({_counts_text(row, classes)})")
            if row["is_leaf"] and row["records"] > 0:
                sensitivity = row.get("smooth_sensitivity", np.nan)
                lines.append(
                    f"gap j = {row['gap_j']:.0f}"
                    + ("" if pd.isna(sensitivity) else f" · smooth sensitivity {sensitivity:.3g}")
                )
                lines.append(
                    f"flip probability {row['flip_probability']:.3g} · "
                    + ("<b>flipped</b>" if row["flipped"] else "not flipped")
                )
            elif row["is_leaf"]:
                lines.append("empty leaf: its released label is the mechanism on zero counts")
            if "empty_children" in row and row["empty_children"] > 0:
                lines.append(f"empty branches (aggregated, not drawn): {row['empty_children']}")
            if "leaves_below" in row and not row["is_leaf"]:
                lines.append(f"non-empty leaves below: {int(row['leaves_below']):,}")
        out.append("<br>".join(lines))
    return out


def _layout_positions(nodes: pd.DataFrame) -> np.ndarray:
    """x of every node: drawn leaves evenly spaced in depth-first order, inner nodes
    centred over their children."""
    children: dict[int, list[int]] = {}
    for node, parent in zip(nodes["node"], nodes["parent"]):
        if parent >= 0:
            children.setdefault(int(parent), []).append(int(node))
    x = np.zeros(len(nodes))
    row_of = {int(n): i for i, n in enumerate(nodes["node"])}
    next_x = 0.0
    root = int(nodes.loc[nodes["parent"] < 0, "node"].iloc[0])
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = children.get(node, [])
        if not kids:
            x[row_of[node]] = next_x
            next_x += 1.0
        elif done:
            x[row_of[node]] = np.mean([x[row_of[k]] for k in kids])
        else:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
    return x


def _split_text(nodes: pd.DataFrame) -> list[str]:
    """The question at each inner node: a two-way split's left branch rule ("x3 < 0.52",
    a one-hot "population ≠ urban"), "city = ?" for a split into one branch per value
    and "size (3 bins)" for one into bins (each branch carries its value or bin)."""
    first_child_edge = nodes[nodes["parent"] >= 0].groupby("parent")["edge"].first().to_dict()
    out = []
    for node, split, width in zip(nodes["node"], nodes["split"], nodes["n_children"]):
        edge = first_child_edge.get(int(node), "")
        if not split:
            out.append("")
        elif width == 2 and edge:
            out.append(edge)
        else:
            out.append(f"{split} ({width} bins)" if _is_threshold(edge) else f"{split} = ?")
    return out


def _is_threshold(edge: str) -> bool:
    return " < " in edge or " ≥ " in edge


def _edge_values(nodes: pd.DataFrame) -> np.ndarray:
    """The text each branch carries on its link ("" for none): the value of a split
    into one branch per value ("Boston, MA"; a bin "[1.5, 3)"), "= urban" / "≠ urban"
    for a one-hot split. Two-way threshold splits carry none (the node says it)."""
    split = dict(zip(nodes["node"].tolist(), nodes["split"].tolist()))
    width = dict(zip(nodes["node"].tolist(), nodes["n_children"].tolist()))
    out = np.full(len(nodes), "", dtype=object)
    for i, (parent, edge) in enumerate(zip(nodes["parent"].tolist(), nodes["edge"].tolist())):
        if parent < 0 or (width[parent] == 2 and _is_threshold(edge)):
            continue
        text = edge.removeprefix(f"{split[parent]} ")
        if width[parent] > 2:
            for sign in ("= ", "∈ "):
                text = text.removeprefix(sign)
        out[i] = text
    return out


CROWDED_LEVEL = 8  # more inner nodes than this on a level: compact, staggered labels


def _crowded_labels(nodes: pd.DataFrame, text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """On crowded levels drop the spaces from the rules and alternate the labels above
    and below the nodes, so that neighbours do not overprint each other."""
    text = text.copy()
    position = np.full(len(nodes), "top center", dtype=object)
    inner = ~nodes["is_leaf"].to_numpy()
    depth = nodes["depth"].to_numpy()
    for d in np.unique(depth[inner]):
        at = np.flatnonzero(inner & (depth == d))
        if len(at) > CROWDED_LEVEL:
            text[at] = [str(t).replace(" ", "") for t in text[at]]
            position[at[1::2]] = "bottom center"
    return text, position


# Labels are cut to what fits beside their neighbours (full text on hover): one character
# of the 10–11 px label font is about CHAR_PX wide on a tree drawn about PLOT_PX wide.
CHAR_PX = 6.5
PLOT_PX = 780  # a colour bar or narrow column leaves about this much
LABEL_CHARS = 24  # icicle box labels and link values: longer ones end in "…"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters ending in "…" ("" when not even 4 fit)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return "" if limit < 4 else text[: limit - 1] + "…"


TITLE_CHARS = 80  # the 17 px title: about this many characters on a 720 px figure
NOTE_CHARS = 110  # the 12 px note under it


def wrap(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (plotly never wraps a
    title or an annotation: a long one is cut at the figure's edge); ``<br>`` stays."""
    lines = []
    for line in str(text).split("<br>"):
        lines.extend(textwrap.wrap(line, width, break_on_hyphens=False) or [""])
    return "<br>".join(lines)


def tree_title(name: str, title: str) -> str:
    """ "<name> · <title>" on one line when it fits, else the name and the title on lines
    of their own (each wrapped to :data:`TITLE_CHARS`)."""
    full = f"{name} · {title}"
    if len(full) <= TITLE_CHARS:
        return full
    return f"{wrap(name, TITLE_CHARS)}<br>{wrap(title, TITLE_CHARS)}"


def _lines(text: str) -> int:
    return str(text).count("<br>") + 1


def _top_margin(title: str, note: str) -> int:
    """Room above the plot for the title's and the note's lines."""
    return 24 + 24 * _lines(title) + 17 * _lines(note) + 12


def _title_layout(title: str) -> dict:
    """The title pinned to the top of the figure, so that its lines never run into the
    note below it."""
    return {"text": title, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 16}}


def _fit_labels(
    nodes: pd.DataFrame, x: np.ndarray, text: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The split labels of a node-link tree cut to the room between their neighbours on
    the same level and band (labels alternate above and below on crowded levels), so
    that none overprints another at any depth; the full rule stays in the hover."""
    text, position = _crowded_labels(nodes, text)
    if not len(x):
        return text, position
    # The x axis spans the nodes ± 0.8 (``_node_link_layout``): a label centred on the
    # outermost node has twice its distance to the edge.
    low, high = float(x.min()) - 0.8, float(x.max()) + 0.8
    px_per_unit = PLOT_PX / (high - low)
    inner = ~nodes["is_leaf"].to_numpy()
    depth = nodes["depth"].to_numpy()
    for d in np.unique(depth[inner]):
        for band in ("top center", "bottom center"):
            at = np.flatnonzero(inner & (depth == d) & (position == band) & (text != ""))
            if not len(at):
                continue
            at = at[np.argsort(x[at], kind="stable")]
            gaps = np.diff(x[at]) * px_per_unit
            room = np.minimum(
                np.r_[2 * (x[at[0]] - low) * px_per_unit, gaps],
                np.r_[gaps, 2 * (high - x[at[-1]]) * px_per_unit],
            )
            for i, width in zip(at, room):
                text[i] = shorten(text[i], int(width / CHAR_PX) - 1)
    return text, position


BRANCHES_LISTED = 30  # a node's hover lists at most this many branch values


def _with_rules(hover: np.ndarray, nodes: pd.DataFrame) -> np.ndarray:
    """Hover texts with each inner node's full split rule and, for a split into one
    branch per value, the values in branch order (labels on the links may be cut)."""
    rules = np.asarray(_split_text(nodes), dtype=object)
    values = _edge_values(nodes)
    parent = nodes["parent"].to_numpy()
    out = hover.copy()
    for i, (node, width) in enumerate(zip(nodes["node"], nodes["n_children"])):
        if width == 2 and rules[i]:
            out[i] = f"{out[i]}<br>left branch: {rules[i]}"
        elif width > 2:
            listed = [v for v in values[parent == node] if v]
            more = len(listed) - BRANCHES_LISTED
            if listed:
                out[i] = f"{out[i]}<br>branches: {' · '.join(listed[:BRANCHES_LISTED])}" + (
                    f" … and {more} more" if more > 0 else ""
                )
    return out


EDGE_FONT = 10  # px
MIN_FLAT_CHARS = 8  # fewer characters than this beside a neighbour: labels turn vertical
VERTICAL_CHARS = 18  # a vertical branch label is cut after this many characters
LABEL_CLEAR_PX = 28  # split labels sit within this many px above and below their node
MAX_TREE_HEIGHT = 1_100  # px: a figure grown for vertical labels stops here


def _edge_levels(nodes: pd.DataFrame, x: np.ndarray) -> list[dict]:
    """The branch labels (:func:`_edge_values`) level by level: the rows of each
    label's parent and child, its text and whole rule, the characters that fit beside
    its neighbours when it lies flat at the middle of its link, and whether the level's
    labels lie flat: they do when every label keeps :data:`MIN_FLAT_CHARS` characters
    or all of its text (a one-hot branch: at least its "=" or "≠", the node names the
    value), else they stand vertical."""
    values = _edge_values(nodes)
    child = np.flatnonzero(values != "")
    if not len(child):
        return []
    row_of = {int(n): i for i, n in enumerate(nodes["node"])}
    parent = np.asarray([row_of[int(p)] for p in nodes["parent"].to_numpy()[child]])
    low, high = float(x.min()) - 0.8, float(x.max()) + 0.8
    px_per_unit = PLOT_PX / (high - low)
    depth = nodes["depth"].to_numpy()[child]
    levels = []
    for d in np.unique(depth):
        at = np.flatnonzero(depth == d)
        mid = (x[parent[at]] + x[child[at]]) / 2
        order = np.argsort(mid, kind="stable")
        at, mid = at[order], mid[order]
        gaps = np.diff(mid) * px_per_unit
        room = np.minimum(
            np.r_[2 * (mid[0] - low) * px_per_unit, gaps],
            np.r_[gaps, 2 * (high - mid[-1]) * px_per_unit],
        )
        chars = (room / CHAR_PX - 1).astype(int)
        texts = values[child[at]]
        need = [1 if _one_hot(t) else min(len(t), MIN_FLAT_CHARS) for t in texts]
        levels.append(
            {
                "parent": parent[at],
                "child": child[at],
                "texts": texts,
                "rules": nodes["edge"].to_numpy()[child[at]],
                "chars": chars,
                "flat": bool(np.all(chars >= need)),
            }
        )
    return levels


def _one_hot(text: str) -> bool:
    return text.startswith(("= ", "≠ "))


def _flat_text(text: str, chars: int) -> str:
    """A flat branch label cut to ``chars``; a one-hot one keeps its sign at least."""
    if len(text) <= chars or not _one_hot(text):
        return shorten(text, chars)
    return text[0] if chars < 6 else shorten(text, chars)


def _vertical_px(levels: list[dict]) -> float:
    """The room between two depths that the vertical labels need (0 when all lie flat)."""
    longest = [max(len(t) for t in level["texts"]) for level in levels if not level["flat"]]
    if not longest:
        return 0.0
    return min(max(longest), VERTICAL_CHARS) * CHAR_PX + 2 * LABEL_CLEAR_PX


def _edge_annotations(levels: list[dict], x: np.ndarray, y: np.ndarray, level_px: float):
    """The branch labels as annotations that never overprint each other (see
    :func:`_edge_levels`): flat ones at the middle of their link; vertical ones rising
    from just above the child's split label towards the parent, cut to the room between
    the depths (``level_px``: pixels from one depth to the next). Each label's hover
    holds its whole rule."""
    clear = LABEL_CLEAR_PX / level_px  # in depth units
    tall = max(1, int((level_px - 2 * LABEL_CLEAR_PX) / CHAR_PX))
    out = []
    for level in levels:
        flat = level["flat"]
        along = 0.5 if flat else 1 - clear
        for p, c, text, rule, chars in zip(
            level["parent"], level["child"], level["texts"], level["rules"], level["chars"]
        ):
            out.append(
                {
                    "x": x[p] + along * (x[c] - x[p]),
                    "y": y[p] + along * (y[c] - y[p]),
                    "yanchor": "middle" if flat else "bottom",
                    "text": _flat_text(text, chars) if flat else shorten(text, tall),
                    "textangle": 0 if flat else -90,
                    "hovertext": rule,
                    "showarrow": False,
                    "font": {"size": EDGE_FONT, "color": "#555555"},
                    "bgcolor": "rgba(255,255,255,0.8)",
                }
            )
    return out


def _legend_entry(fig: go.Figure, name: str, color: str, outline: str = "#000000") -> None:
    """A legend-only square (no data drawn): explains a colour the figure uses."""
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={
                "symbol": "square",
                "size": 12,
                "color": color,
                "line": {"color": outline, "width": 1},
            },
            name=name,
            hoverinfo="skip",
        )
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
    x = _layout_positions(nodes)
    y = -nodes["depth"].to_numpy(dtype=float)
    fig = go.Figure(_links_trace(nodes, x, y, "#999999"))
    hover = np.asarray(node_hover(nodes, classes, diagnostics=diagnostics), dtype=object)
    hover = _with_rules(hover, nodes)
    inner = ~nodes["is_leaf"].to_numpy()
    text, position = _fit_labels(nodes, x, np.asarray(_split_text(nodes), dtype=object))
    fig.add_trace(
        _split_trace(x, y, inner, text, position, hover, size=10, name="split (rule: left branch)")
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
            _legend_entry(fig, legend, class_color(i))
    if diagnostics:
        flipped = leaf & nodes["flipped"].to_numpy()
        _leaf_trace(
            fig, x, y, flipped, hover, FLIPPED_COLOR, "flipped: released ≠ majority", records, top
        )
        empty = leaf & nodes["empty"].to_numpy()
        _leaf_trace(fig, x, y, empty, hover, EMPTY_COLOR, "empty leaf (no record)", None, top)
    title = _released_title(diagnostics, releases_counts)
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
    _node_link_layout(
        fig, nodes, x, title=tree_title(name or f"Tree {tree}", title), note=note, height=height
    )
    return fig


def _links_trace(nodes: pd.DataFrame, x: np.ndarray, y: np.ndarray, color: str) -> go.Scatter:
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


def _split_trace(x, y, inner, text, position, hover, *, size: int, name: str) -> go.Scatter:
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


def _node_link_layout(
    fig: go.Figure, nodes: pd.DataFrame, x: np.ndarray, *, title: str, note: str, height: int
) -> None:
    """Title, note, legend below, a depth axis and the branch labels of a node-link
    tree."""
    note = wrap(note, NOTE_CHARS)
    top = _top_margin(title, note)
    depth = int(nodes["depth"].max())
    levels = _edge_levels(nodes, x)
    # The plot area (the legend takes about 40 px) spans depth + 1.2 units of y; it
    # grows to give vertical branch labels their room.
    frame_px = top + 30 + 40
    needed = _vertical_px(levels) * (depth + 1.2) + frame_px
    height = int(min(MAX_TREE_HEIGHT, max(height, needed)))
    level_px = (height - frame_px) / (depth + 1.2)
    y = -nodes["depth"].to_numpy(dtype=float)
    fig.update_layout(
        template=TEMPLATE,
        title=_title_layout(title),
        height=height,
        margin={"t": top, "b": 30, "l": 30, "r": 30},
        legend={"orientation": "h", "yanchor": "top", "y": -0.02, "x": 0},
        annotations=[_note(note), *_edge_annotations(levels, x, y, level_px)],
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
    index = _class_index(classes)
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
    title = _released_title(diagnostics, releases_counts)
    for i, c in enumerate(classes):
        _legend_entry(
            fig, leaf_legend(c, diagnostics=diagnostics, counts=releases_counts), class_color(i)
        )
    if FLIPPED_COLOR in colors and diagnostics:
        _legend_entry(fig, "flipped: released ≠ majority", FLIPPED_COLOR)
    if EMPTY_COLOR in colors:
        _legend_entry(fig, "no record", EMPTY_COLOR, outline="#999999")
    if STRUCTURE_COLOR in colors:
        _legend_entry(fig, "no label drawn (deeper)", STRUCTURE_COLOR, outline="#999999")
    _icicle_layout(fig, tree_title(name or f"Tree {tree}", title), note, height)
    return fig


def _icicle_layout(fig: go.Figure, title: str, note: str, height: int) -> None:
    """Title, note, the colour legend below, and labels that are hidden (hover shows
    them) rather than shrunk to unreadable size in thin boxes."""
    note = wrap(note, NOTE_CHARS)
    fig.update_layout(
        template=TEMPLATE,
        title=_title_layout(title),
        height=height,
        margin={"t": _top_margin(title, note), "b": 10, "l": 10, "r": 10},
        annotations=[_note(note)],
        uniformtext={"minsize": 9, "mode": "hide"},
        legend={"orientation": "h", "yanchor": "top", "y": -0.01, "x": 0},
        showlegend=True,
    )
    # The legend entries live on (hidden) cartesian axes behind the icicle.
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)


# --- DPBoost trees: real-valued leaves ---------------------------------------------------------

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
    x = _layout_positions(nodes)
    y = -nodes["depth"].to_numpy(dtype=float)
    hover = _with_rules(
        np.asarray(boost_hover(nodes, diagnostics=diagnostics), dtype=object), nodes
    )
    fig = go.Figure(_links_trace(nodes, x, y, "#BBBBBB"))
    inner = ~nodes["is_leaf"].to_numpy()
    depth = nodes["depth"].to_numpy()
    per_level = np.bincount(depth[inner], minlength=int(depth.max()) + 1)
    labelled = inner & (per_level[depth] <= 16)
    text = np.where(labelled, np.asarray(_split_text(nodes), dtype=object), "")
    text, position = _fit_labels(nodes, x, text)
    fig.add_trace(
        _split_trace(
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
    _node_link_layout(fig, nodes, x, title=tree_title(name, title), note=note, height=height)
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
        title=_title_layout(title),
        height=620,
        margin={"t": _top_margin(title, note), "b": 10, "l": 10, "r": 10},
        annotations=[_note(note)],
        uniformtext={"minsize": 9, "mode": "hide"},
    )
    return fig
