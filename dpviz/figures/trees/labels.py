"""What a tree figure writes on its nodes and links: hover texts, split rules, branch
values, the x layout of the nodes, and labels fitted so that none overprints another.

Works on a node table from :mod:`dpviz.figures.tree_layout`; with ``diagnostics=True``
the hover texts carry true counts, flips and the gap j, which are NOT private.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpviz.figures.trees.style import (
    CHAR_PX,
    PLOT_PX,
    shorten,
)


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


def layout_positions(nodes: pd.DataFrame) -> np.ndarray:
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


def split_text(nodes: pd.DataFrame) -> list[str]:
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


def fit_labels(
    nodes: pd.DataFrame, x: np.ndarray, text: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The split labels of a node-link tree cut to the room between their neighbours on
    the same level and band (labels alternate above and below on crowded levels), so
    that none overprints another at any depth; the full rule stays in the hover."""
    text, position = _crowded_labels(nodes, text)
    if not len(x):
        return text, position
    # The x axis spans the nodes ± 0.8 (``node_link_layout``): a label centred on the
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


def with_rules(hover: np.ndarray, nodes: pd.DataFrame) -> np.ndarray:
    """Hover texts with each inner node's full split rule and, for a split into one
    branch per value, the values in branch order (labels on the links may be cut)."""
    rules = np.asarray(split_text(nodes), dtype=object)
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


def edge_levels(nodes: pd.DataFrame, x: np.ndarray) -> list[dict]:
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


def vertical_px(levels: list[dict]) -> float:
    """The room between two depths that the vertical labels need (0 when all lie flat)."""
    longest = [max(len(t) for t in level["texts"]) for level in levels if not level["flat"]]
    if not longest:
        return 0.0
    return min(max(longest), VERTICAL_CHARS) * CHAR_PX + 2 * LABEL_CLEAR_PX


def edge_annotations(levels: list[dict], x: np.ndarray, y: np.ndarray, level_px: float):
    """The branch labels as annotations that never overprint each other (see
    :func:`edge_levels`): flat ones at the middle of their link; vertical ones rising
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
