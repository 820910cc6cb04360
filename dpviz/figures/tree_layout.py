"""Node tables of one tree of a fitted forest, for drawing it.

Two views, with different privacy status:

* :func:`structure_nodes` — **what an outsider sees**: the tree's structure, drawn
  from its public seed and the released split tables (``quantile`` split points; none
  with ``uniform``), down to a display depth, and the released
  output of every leaf drawn (empty leaves included, exactly as an export lists them).
  Nothing in it depends on the records beyond the released leaf outputs.
* :func:`visited_nodes` and :func:`with_counts` — **data-owner diagnostics, NOT
  private**: the part of the tree that training records reached, with true class
  counts, the gap j, smooth sensitivity and flips. Which nodes are non-empty is itself
  a fact about the data.

Every table has one row per node, parents before children, with the columns
``node, parent, depth, key, edge, split, is_leaf, hidden_children, n_children``
(``edge``: the rule on the branch into the node; ``split``: the feature the node
splits on; ``hidden_children``: it has children that are not in the table).

Uses the public ``released_outputs(keys)`` of
:class:`~dpviz.models.forest.estimator.DPRandomForestClassifier` (the function the exporter
uses), its public fitted attributes — ``node_tables_`` (the node tables that training records
reached) among them — and ``dpviz.models.trees.space``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpviz.models.forest.estimator import DPRandomForestClassifier, feature_order, label_names
from dpviz.models.trees.edges import edge_values
from dpviz.models.trees.full import estimate_leaves
from dpviz.models.trees.space import Frontier, choose_splits, expand, is_leaf
from dpviz.privacy.mechanisms import gap, get_mechanism, is_majority
from dpviz.privacy.randomness import child_keys

NODE_LINK_MAX_LEAVES = 32  # a tree with at most this many leaves is drawn node by node
MAX_DRAWN_NODES = 4_000  # more nodes than this make an unreadable, slow figure
# The released view sizes boxes by branches, not records, so deep levels get thin fast.
MAX_RELEASED_NODES = 1_023
BASE_COLUMNS = (
    "node",
    "parent",
    "depth",
    "key",
    "edge",
    "split",
    "is_leaf",
    "hidden_children",
    "n_children",
)


def threshold_text(value: float) -> str:
    """A split threshold as people read amounts: 4 significant digits, never scientific
    notation for large numbers (2,500,000 → "2.5M", 25,001.5 → "25,000", 0.5213 →
    "0.5213")."""
    value = float(value)
    if not np.isfinite(value) or value == 0:
        return f"{value:g}"
    size = abs(value)
    if size >= 1e4:
        rounded = float(f"{value:.4g}")  # 4 significant digits, as for small numbers
        for unit, scale in (("B", 1e9), ("M", 1e6)):
            if size >= scale:
                return f"{rounded / scale:.4g}{unit}"
        return f"{rounded:,.0f}"
    if size < 1e-3:
        return f"{value:.3g}"
    return f"{value:.4g}"


def _check_tree(model: DPRandomForestClassifier, tree: int) -> int:
    model._check_fitted()
    tree = int(tree)
    if not 0 <= tree < model.n_estimators_:
        raise ValueError(f"tree must be between 1 and {model.n_estimators_}, got {tree + 1}")
    return tree


def _edge_texts(model, feature: np.ndarray, threshold: np.ndarray, child: np.ndarray) -> list:
    """The rule on the branch into each node ("" for a root)."""
    names = feature_order(model.schema_)
    s = model.space_.n_continuous
    values = [f.values for f in model.schema_.discrete]
    out = []
    for f, t, c in zip(feature.tolist(), threshold.tolist(), child.tolist()):
        if f < 0:
            out.append("")
        elif f < s:
            out.append(f"{names[f]} {'≥' if c == 1 else '<'} {threshold_text(t)}")
        else:
            out.append(f"{names[f]} = {values[f - s][c]}")
    return out


def _n_children(model, feature: np.ndarray) -> np.ndarray:
    s = model.space_.n_continuous
    widths = np.concatenate([[2] * s, model.space_.n_values]).astype(np.int64)
    return np.where(feature >= 0, widths[np.maximum(feature, 0)], 0)


def leaf_totals(model: DPRandomForestClassifier) -> tuple[np.ndarray, np.ndarray]:
    """Leaves per tree (structure only, public) and whether each count is exact."""
    return estimate_leaves(model.space_, model.root_keys_)


def is_shallow(model: DPRandomForestClassifier, tree: int) -> bool:
    """Whether the whole tree fits a node-link diagram (at most NODE_LINK_MAX_LEAVES)."""
    tree = _check_tree(model, tree)
    totals, _ = estimate_leaves(model.space_, model.root_keys_[tree : tree + 1])
    return bool(totals[0] <= NODE_LINK_MAX_LEAVES)


# --- what an outsider sees ---------------------------------------------------------------


def structure_nodes(
    model: DPRandomForestClassifier,
    tree: int,
    max_depth: int | None = None,
    max_nodes: int = MAX_DRAWN_NODES,
) -> pd.DataFrame:
    """The released structure of tree ``tree`` (0-based) down to ``max_depth``.

    Data-independent except for the ``released_label`` (and, for count mechanisms,
    ``released_counts``) of the leaves drawn: what an outsider sees. Levels are added
    while the table stays within ``max_nodes``; nodes whose children were left out
    have ``hidden_children``.
    """
    tree = _check_tree(model, tree)
    space = model.space_
    limit = space.max_depth if max_depth is None else max(0, min(int(max_depth), space.max_depth))
    frontier = Frontier.roots(space, model.root_keys_[tree : tree + 1], np.asarray([tree]), 0)
    parent = np.asarray([-1])
    edge_feature, edge_threshold, edge_child = np.asarray([-1]), np.asarray([np.nan]), [-1]
    levels, next_id = [], 0
    for depth in range(limit + 1):
        n = len(frontier)
        ids = np.arange(next_id, next_id + n)
        leaf = is_leaf(space, frontier, depth)
        split = np.full(n, -1, dtype=np.int64)
        hidden = np.zeros(n, dtype=bool)
        level = {
            "node": ids,
            "parent": parent,
            "depth": np.full(n, depth),
            "key": frontier.keys,
            "edge": _edge_texts(model, edge_feature, edge_threshold, np.asarray(edge_child)),
            "is_leaf": leaf,
        }
        levels.append((level, split, hidden))
        next_id += n
        inner = np.flatnonzero(~leaf)
        if len(inner) == 0:
            break
        sub = frontier.take(inner)
        splits = choose_splits(space, sub)
        split[inner] = splits.feature
        if depth == limit or next_id + splits.n_children.sum() > max_nodes:
            hidden[inner] = True
            break
        which = np.repeat(np.arange(len(inner)), splits.n_children)
        child = np.arange(len(which)) - np.repeat(
            np.cumsum(splits.n_children) - splits.n_children, splits.n_children
        )
        parent = ids[inner][which]
        edge_feature, edge_threshold, edge_child = (
            splits.feature[which],
            splits.threshold[which],
            child,
        )
        frontier = expand(space, sub, splits, which, child, None, depth)
    parts = []
    names = feature_order(model.schema_)
    for level, split, hidden in levels:
        frame = pd.DataFrame(level)
        frame["split"] = [names[f] if f >= 0 else "" for f in split]
        frame["hidden_children"] = hidden
        frame["n_children"] = _n_children(model, split)
        parts.append(frame)
    nodes = pd.concat(parts, ignore_index=True)[list(BASE_COLUMNS)]
    return _with_released(model, nodes)


def _with_released(model: DPRandomForestClassifier, nodes: pd.DataFrame) -> pd.DataFrame:
    """Add the released output of each leaf (empty leaves included)."""
    classes = np.asarray([str(c) for c in model.schema_.classes], dtype=object)
    labels = np.full(len(nodes), "", dtype=object)
    counts = np.full(len(nodes), "", dtype=object)
    leaf = nodes["is_leaf"].to_numpy()
    if leaf.any():
        outputs = model.released_outputs(nodes.loc[leaf, "key"].to_numpy(dtype=np.uint64))
        labels[leaf] = label_names(classes, outputs.labels)
        if outputs.noisy_counts is not None:
            counts[leaf] = [
                ", ".join(f"{c}: {v:.1f}" for c, v in zip(classes, row))
                for row in outputs.noisy_counts
            ]
    return nodes.assign(released_label=labels, released_counts=counts)


# --- data-owner diagnostics (NOT private) ------------------------------------------------


def with_counts(model: DPRandomForestClassifier, nodes: pd.DataFrame) -> pd.DataFrame:
    """Add true class counts and leaf diagnostics to a node table: NOT private.

    Leaves take their training counts (zero when no record reached them); an inner
    node sums the leaves below it that are in the table. Adds ``records``,
    ``count[<class>]``, ``true_majority``, ``empty`` and, for non-empty leaves,
    ``gap_j``, ``smooth_sensitivity``, ``flip_probability`` and ``flipped``.
    """
    k = len(model.schema_.classes)
    classes = [str(c) for c in model.schema_.classes]
    keys = nodes["key"].to_numpy(dtype=np.uint64)
    leaf = nodes["is_leaf"].to_numpy()
    counts = np.zeros((len(nodes), k), dtype=np.int64)
    label = np.full(len(nodes), -1, dtype=np.int64)
    trained = model.leaf_keys_
    if len(trained):
        pos = np.minimum(np.searchsorted(trained, keys), len(trained) - 1)
        hit = leaf & (trained[pos] == keys)
        counts[hit] = model.leaf_counts_[pos[hit]]
        label[hit] = model.leaf_labels_[pos[hit]]
    parent = nodes["parent"].to_numpy()
    depth = nodes["depth"].to_numpy()
    for d in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero(depth == d)
        np.add.at(counts, parent[at], counts[at])
    records = counts.sum(axis=1)
    nonempty_leaf = leaf & (records > 0)
    eps = model.tree_epsilon_
    out = nodes.assign(records=records)
    for i, c in enumerate(classes):
        out[f"count[{c}]"] = counts[:, i]
    out["true_majority"] = np.where(
        records > 0, np.asarray(classes, dtype=object)[np.argmax(counts, axis=1)], ""
    )
    out["empty"] = records == 0
    gaps = gap(counts).astype(np.float64)
    out["gap_j"] = np.where(nonempty_leaf, gaps, np.nan)
    out["smooth_sensitivity"] = np.where(nonempty_leaf, np.exp(-gaps * eps), np.nan)
    flip = np.full(len(nodes), np.nan)
    if nonempty_leaf.any():
        flip[nonempty_leaf] = get_mechanism(model.mechanism).flip_probability(
            counts[nonempty_leaf], eps
        )
    out["flip_probability"] = flip
    flipped = np.zeros(len(nodes), dtype=bool)
    rows = np.flatnonzero(nonempty_leaf & (label >= 0))
    flipped[rows] = ~is_majority(counts[rows])[np.arange(len(rows)), label[rows]]
    out["flipped"] = flipped
    return out


def visited_nodes(model: DPRandomForestClassifier, tree: int) -> pd.DataFrame:
    """The part of tree ``tree`` (0-based) that training records reached, with true
    counts (:func:`with_counts`) and ``empty_children`` (children of a node's split that
    no record reached) and ``leaves_below`` (non-empty leaves under a node): NOT private.
    """
    tree = _check_tree(model, tree)
    own = model.leaf_keys_[model.leaf_tree_ == tree]
    parts = []
    for leaf_keys, leaf_node, table in model.node_tables_:
        hit = np.isin(leaf_keys, own)
        if not hit.any():
            continue
        parent = table["parent"].astype(np.int64)
        keep = np.zeros(len(parent), dtype=bool)
        frontier = np.unique(leaf_node[hit])
        while len(frontier):
            keep[frontier] = True
            frontier = np.unique(parent[frontier])
            frontier = frontier[(frontier >= 0) & ~keep[np.maximum(frontier, 0)]]
        ids = np.flatnonzero(keep)  # node ids grow level by level: parents come first
        key = np.zeros(len(parent), dtype=np.uint64)
        depth = table["depth"].astype(np.int64)
        roots = ids[depth[ids] == 0]
        key[roots] = model.root_keys_[tree]
        for d in range(1, int(depth[ids].max(initial=0)) + 1):
            at = ids[depth[ids] == d]
            key[at] = child_keys(key[parent[at]], table["child"][at].astype(np.int64))
        is_leaf_node = np.zeros(len(parent), dtype=bool)
        is_leaf_node[leaf_node[hit]] = True
        parts.append(
            pd.DataFrame(
                {
                    "key": key[ids],
                    "parent_key": np.where(parent[ids] >= 0, key[np.maximum(parent[ids], 0)], 0),
                    "depth": depth[ids],
                    "feature": table["feature"][ids].astype(np.int64),
                    "threshold": table["threshold"][ids],
                    "child": table["child"][ids].astype(np.int64),
                    "is_leaf": is_leaf_node[ids],
                }
            )
        )
    if not parts:
        raise ValueError(f"no training record reached tree {tree + 1}")
    # Later batches (partial_fit) route through the same nodes: one row per key.
    found = (
        pd.concat(parts, ignore_index=True)
        .drop_duplicates("key")
        .sort_values(["depth", "parent_key", "child"], kind="stable")
        .reset_index(drop=True)
    )
    index = pd.Series(np.arange(len(found)), index=found["key"].to_numpy())
    parent = np.where(
        found["depth"].to_numpy() > 0,
        index.reindex(found["parent_key"].to_numpy()).fillna(-1).to_numpy(np.int64),
        -1,
    )
    # A node's own split is the feature on the branches into its children.
    split = np.full(len(found), -1, dtype=np.int64)
    inner_child = parent >= 0
    split[parent[inner_child]] = found["feature"].to_numpy()[inner_child]
    names = feature_order(model.schema_)
    nodes = pd.DataFrame(
        {
            "node": np.arange(len(found)),
            "parent": parent,
            "depth": found["depth"].to_numpy(),
            "key": found["key"].to_numpy(dtype=np.uint64),
            "edge": _edge_texts(
                model,
                found["feature"].to_numpy(),
                found["threshold"].to_numpy(),
                found["child"].to_numpy(),
            ),
            "split": [names[f] if f >= 0 else "" for f in split],
            "is_leaf": found["is_leaf"].to_numpy(),
            "hidden_children": False,
            "n_children": _n_children(model, split),
        }
    )
    nodes = with_counts(model, nodes)
    seen = np.bincount(parent[parent >= 0], minlength=len(nodes))
    nodes["empty_children"] = np.where(nodes["is_leaf"], 0, nodes["n_children"] - seen)
    below = nodes["is_leaf"].to_numpy().astype(np.int64)
    depth = nodes["depth"].to_numpy()
    for d in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero(depth == d)
        np.add.at(below, parent[at], below[at])
    nodes["leaves_below"] = below
    return nodes


def cut_depth(nodes: pd.DataFrame, max_depth: int) -> pd.DataFrame:
    """Keep the nodes down to ``max_depth``; those with children below get
    ``hidden_children`` (their counts already include everything under them)."""
    kept = nodes[nodes["depth"] <= max_depth].copy()
    has_children = np.zeros(len(nodes), dtype=bool)
    parent = nodes["parent"].to_numpy()
    has_children[parent[parent >= 0]] = True
    kept["hidden_children"] = kept["hidden_children"].to_numpy() | (
        has_children[kept["node"].to_numpy()] & (kept["depth"].to_numpy() == max_depth)
    )
    return kept


def fit_depth(nodes: pd.DataFrame, max_depth: int, max_nodes: int = MAX_DRAWN_NODES) -> int:
    """The deepest display depth ≤ ``max_depth`` whose table has at most ``max_nodes``."""
    per_depth = nodes.groupby("depth").size().reindex(range(max_depth + 1), fill_value=0)
    within = np.flatnonzero(per_depth.cumsum().to_numpy() <= max_nodes)
    return int(within[-1]) if len(within) else 0


def forest_overview(
    model: DPRandomForestClassifier,
    leaves: pd.DataFrame,
    totals: tuple[np.ndarray, np.ndarray] | None = None,
) -> pd.DataFrame:
    """One row per tree: records, leaves, flips, mean gap j. ``leaves`` is the model's
    ``leaf_table()``; ``totals`` its :func:`leaf_totals` if already known. NOT private:
    it reads the true leaf counts."""
    totals, exact = leaf_totals(model) if totals is None else totals
    per_tree = leaves.groupby("tree").agg(
        records=("n_records", "sum"),
        nonempty=("n_records", "size"),
        flipped=("flipped", "sum"),
        expected=("flip_probability", "sum"),
        mean_gap=("gap_j", "mean"),
    )
    trees = pd.RangeIndex(1, model.n_estimators_ + 1, name="tree")
    per_tree = per_tree.reindex(trees).fillna({"records": 0, "nonempty": 0, "flipped": 0})
    nonempty = per_tree["nonempty"].to_numpy(np.int64)
    out = pd.DataFrame(
        {
            "tree": trees.to_numpy(),
            "records": per_tree["records"].to_numpy(np.int64),
            "leaves": totals,
            "leaves exact": exact,
            "non-empty leaves": nonempty,
            "empty %": 100.0 * (1.0 - nonempty / totals),
            "flipped leaves": per_tree["flipped"].to_numpy(np.int64),
            "flipped %": 100.0 * per_tree["flipped"].to_numpy() / np.maximum(nonempty, 1),
            "expected flip %": 100.0
            * per_tree["expected"].fillna(0).to_numpy()
            / np.maximum(nonempty, 1),
            "mean gap j": per_tree["mean_gap"].to_numpy(),
        }
    )
    # Say "estimated" only where a count is an estimate (trees with many discrete values).
    return out.drop(columns="leaves exact") if exact.all() else out


# --- greedy trees (friedman_schuster, dpea) ----------------------------------------------------
#
# The greedy tree's structure is chosen from the data by the exponential mechanism and is
# released (it is part of the DP output), as are the noisy counts (discrete Laplace) of
# every leaf.
# True counts, flips and which nodes hold records are diagnostics: NOT private.


def _bin_edges(model, schema) -> list[np.ndarray]:
    """The bin edges of every continuous feature: a grown DPBoost model's released
    edges (post-processing of its booked noisy histograms), else the fit's ``n_bins``
    public equal widths (``n_bins_`` where the fit may change it, as DPBoost's does)."""
    released = getattr(model, "bin_edges_", None)
    if released is not None:
        return edge_values(schema, released)
    n_bins = int(getattr(model, "n_bins_", model.n_bins))
    return [np.linspace(f.low, f.high, n_bins + 1) for f in schema.continuous]


def _greedy_edges(model, parent: np.ndarray, value: np.ndarray, feature: np.ndarray) -> list:
    """The rule on the branch into every node of a greedy tree ("" for the root)."""
    schema = model.schema_
    names = feature_order(schema)
    s = len(schema.continuous)
    edges = _bin_edges(model, schema)
    last = int(model.n_bins) - 1
    texts: dict[tuple[int, int], str] = {}
    out = []
    for p, v in zip(parent.tolist(), value.tolist()):
        if p < 0:
            out.append("")
            continue
        f = int(feature[p])
        text = texts.get((f, v))
        if text is None:
            if f >= s:
                text = f"{names[f]} = {schema.discrete[f - s].values[v]}"
            elif v == 0:
                text = f"{names[f]} < {threshold_text(edges[f][1])}"
            elif v == last:
                text = f"{names[f]} ≥ {threshold_text(edges[f][v])}"
            else:
                lo, hi = threshold_text(edges[f][v]), threshold_text(edges[f][v + 1])
                text = f"{names[f]} ∈ [{lo}, {hi})"
            texts[(f, v)] = text
        out.append(text)
    return out


def greedy_nodes(model) -> pd.DataFrame:
    """Every node of a fitted greedy tree
    (:class:`~dpviz.models.greedy.estimator.DPDecisionTreeClassifier`) with its released
    output and the data owner's counts.

    The columns of :data:`BASE_COLUMNS` and ``released_label``/``released_counts`` are
    the released model (structure and noisy leaf counts: what an outsider sees; for an
    inner node, the noisy counts of the leaves below summed, and their largest class); the
    columns ``records``, ``count[<class>]``, ``true_majority``, ``empty``, ``gap_j``,
    ``flip_probability``, ``flipped``, ``empty_children`` and ``leaves_below`` read the
    raw data: NOT private.
    """
    schema = model.schema_
    feature = np.asarray(model.feature_, dtype=np.int64)
    first = np.asarray(model.first_child_, dtype=np.int64)
    depth = np.asarray(model.node_depth_, dtype=np.int64)
    n = len(feature)
    widths = np.asarray(model.n_values_, dtype=np.int64)
    n_children = np.where(feature >= 0, widths[np.maximum(feature, 0)], 0)
    parent = np.full(n, -1, dtype=np.int64)
    value = np.full(n, -1, dtype=np.int64)
    inner = np.flatnonzero(feature >= 0)
    kids = np.repeat(inner, n_children[inner])
    offset = np.arange(len(kids)) - np.repeat(
        np.cumsum(n_children[inner]) - n_children[inner], n_children[inner]
    )
    child_ids = first[kids] + offset
    parent[child_ids] = kids
    value[child_ids] = offset
    names = feature_order(schema)
    classes = np.asarray([str(c) for c in schema.classes], dtype=object)
    k = len(classes)
    edge = _greedy_edges(model, parent, value, feature)
    leaf = feature < 0
    released_label = np.full(n, "", dtype=object)
    released_counts = np.full(n, "", dtype=object)
    counts = np.zeros((n, k), dtype=np.int64)
    label = np.full(n, -1, dtype=np.int64)
    leaves = np.asarray(model.leaf_nodes_, dtype=np.int64)
    released_label[leaves] = classes[model.leaf_labels_]
    released_counts[leaves] = [
        ", ".join(f"{c}: {v:.1f}" for c, v in zip(classes, row))
        for row in model.leaf_noisy_counts_
    ]
    counts[leaves] = model.leaf_counts_
    label[leaves] = model.leaf_labels_
    below = np.zeros(n, dtype=np.int64)
    nonempty_leaf = np.zeros(n, dtype=bool)
    nonempty_leaf[leaves] = model.leaf_counts_.sum(axis=1) > 0
    below[nonempty_leaf] = 1
    seen = np.zeros(n, dtype=np.int64)
    noisy = np.zeros((n, k))
    noisy[leaves] = model.leaf_noisy_counts_
    for d in range(int(depth.max(initial=0)), 0, -1):
        at = np.flatnonzero(depth == d)
        np.add.at(counts, parent[at], counts[at])
        np.add.at(below, parent[at], below[at])
        np.add.at(noisy, parent[at], noisy[at])
    # What an outsider can compute from the release: the noisy counts summed below each
    # inner node, and their largest class.
    inner_nodes = np.flatnonzero(~leaf)
    released_label[inner_nodes] = classes[np.argmax(noisy[inner_nodes], axis=1)]
    released_counts[inner_nodes] = [
        ", ".join(f"{c}: {v:.1f}" for c, v in zip(classes, row)) for row in noisy[inner_nodes]
    ]
    records = counts.sum(axis=1)
    has_records = np.flatnonzero((records > 0) & (parent >= 0))
    np.add.at(seen, parent[has_records], 1)
    order = np.lexsort((np.arange(n), depth))
    nodes = pd.DataFrame(
        {
            "node": np.arange(n),
            "parent": parent,
            "depth": depth,
            "key": np.arange(n, dtype=np.uint64),
            "edge": edge,
            "split": [names[f] if f >= 0 else "" for f in feature],
            "is_leaf": leaf,
            "hidden_children": False,
            "n_children": n_children,
            "released_label": released_label,
            "released_counts": released_counts,
            "records": records,
        }
    )
    for i, c in enumerate(classes):
        nodes[f"count[{c}]"] = counts[:, i]
    nodes["true_majority"] = np.where(records > 0, classes[np.argmax(counts, axis=1)], "")
    nodes["empty"] = records == 0
    gaps = gap(counts).astype(np.float64)
    nodes["gap_j"] = np.where(nonempty_leaf, gaps, np.nan)
    flip = np.full(n, np.nan)
    if nonempty_leaf.any():
        flip[nonempty_leaf] = get_mechanism("laplace_counts").flip_probability(
            counts[nonempty_leaf], model.step_epsilon_
        )
    nodes["flip_probability"] = flip
    flipped = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(nonempty_leaf)
    flipped[rows] = ~is_majority(counts[rows])[np.arange(len(rows)), label[rows]]
    nodes["flipped"] = flipped
    nodes["empty_children"] = np.where(leaf, 0, n_children - seen)
    nodes["leaves_below"] = below
    return nodes.iloc[order].reset_index(drop=True)


def renumber(nodes: pd.DataFrame) -> pd.DataFrame:
    """Number the rows' nodes 0..n-1 (parents first) after a selection; a parent left
    out makes its child a root."""
    ids = nodes["node"].to_numpy()
    index = pd.Series(np.arange(len(ids)), index=ids)
    parent = index.reindex(nodes["parent"].to_numpy()).fillna(-1).to_numpy(np.int64)
    return nodes.assign(node=np.arange(len(ids)), parent=parent).reset_index(drop=True)


def released_levels(nodes: pd.DataFrame, max_depth: int, max_nodes: int) -> pd.DataFrame:
    """The nodes down to ``max_depth``, fewer levels if more than ``max_nodes`` would be
    drawn; nodes whose children are left out get ``hidden_children``."""
    nodes = renumber(nodes)
    shown = min(int(max_depth), fit_depth(nodes, int(max_depth), max_nodes))
    return renumber(cut_depth(nodes, shown))


def nonempty_levels(nodes: pd.DataFrame, max_depth: int) -> tuple[pd.DataFrame, int]:
    """The nodes that hold records, down to the deepest depth ≤ ``max_depth`` that stays
    within :data:`MAX_DRAWN_NODES`; and that depth. NOT private."""
    visited = renumber(nodes[nodes["records"] > 0])
    shown = fit_depth(visited, int(max_depth))
    return renumber(cut_depth(visited, shown)), shown


# --- DPBoost trees ----------------------------------------------------------------------------
#
# A DPBoost tree is a full binary tree: its splits are chosen by the exponential mechanism
# and its 2^depth leaf values carry Laplace noise; both are released. Records per leaf,
# the clipped true leaf values and sign flips are diagnostics: NOT private.


def boost_parts(model) -> list[str]:
    """The one-vs-rest parts of a fitted DPBoost model, as the class each one scores
    ("positive" class for two classes)."""
    classes = [str(c) for c in model.schema_.classes]
    return [classes[1]] if len(classes) == 2 else classes


def _boost_edge(
    model, f: int, t: int, right: bool, edges: list[np.ndarray], equal: bool = False
) -> str:
    schema = model.schema_
    names = feature_order(schema)
    s = len(schema.continuous)
    if f < s:
        return f"{names[f]} {'≥' if right else '<'} {threshold_text(edges[f][t + 1])}"
    values = schema.discrete[f - s].values
    if equal:  # a one-hot split: "feature = value" goes right, the rest left
        return f"{names[f]} {'=' if right else '≠'} {values[t]}"
    chosen = values[t + 1 :] if right else values[: t + 1]
    shown = ", ".join(map(str, chosen[:4])) + (", …" if len(chosen) > 4 else "")
    return f"{names[f]} ∈ {{{shown}}}"


def boost_nodes(model, part: int, tree: int) -> pd.DataFrame:
    """Every node of tree ``tree`` (0-based) of one-vs-rest part ``part`` of a fitted
    :class:`~dpviz.models.boosting.estimator.DPBoostClassifier`.

    ``released_value`` (leaves) is what the model releases; ``records``, ``true_value``
    (the leaf value before noise, after clipping), ``noise``, ``sign_flipped`` and
    ``empty`` read the raw data: NOT private. An inner node's values are the mean of
    the leaves below it (unweighted for the released value).
    """
    if not 0 <= part < len(model.models_):
        raise ValueError(f"part must be between 1 and {len(model.models_)}, got {part + 1}")
    trees = model.models_[part]
    if not 0 <= tree < len(trees):
        raise ValueError(f"tree must be between 1 and {len(trees)}, got {tree + 1}")
    spec = trees[tree]
    counts, clipped, released = model.leaf_records_[part * len(trees) + tree]
    depth = len(spec["feature"])
    edges = _bin_edges(model, model.schema_)
    names = feature_order(model.schema_)
    rows = []
    for d in range(depth + 1):
        for j in range(2**d):
            node = 2**d - 1 + j
            parent = -1 if d == 0 else 2 ** (d - 1) - 1 + j // 2
            edge = ""
            if d > 0:
                f = int(spec["feature"][d - 1][j // 2])
                t = int(spec["threshold"][d - 1][j // 2])
                equal = bool(spec["equal"][d - 1][j // 2]) if "equal" in spec else False
                edge = _boost_edge(model, f, t, bool(j % 2), edges, equal)
            split = names[int(spec["feature"][d][j])] if d < depth else ""
            rows.append((node, parent, d, edge, split))
    nodes = pd.DataFrame(rows, columns=["node", "parent", "depth", "edge", "split"])
    leaf = nodes["depth"].to_numpy() == depth
    n = len(nodes)
    nodes["key"] = nodes["node"].astype(np.uint64)
    nodes["is_leaf"] = leaf
    nodes["hidden_children"] = False
    nodes["n_children"] = np.where(leaf, 0, 2)
    first_leaf = 2**depth - 1
    records = np.zeros(n)
    released_v = np.zeros(n)
    true_v = np.zeros(n)
    records[first_leaf:] = counts
    released_v[first_leaf:] = released
    true_v[first_leaf:] = clipped
    n_leaves = np.zeros(n)
    n_leaves[first_leaf:] = 1
    below = np.zeros(n)
    below[first_leaf:] = counts > 0
    weighted = true_v * records
    parent = nodes["parent"].to_numpy()
    for d in range(depth, 0, -1):
        at = np.flatnonzero(nodes["depth"].to_numpy() == d)
        for array in (records, released_v, n_leaves, weighted, below):
            np.add.at(array, parent[at], array[at])
    inner = ~leaf
    released_v[inner] /= n_leaves[inner]
    true_v[inner] = np.divide(
        weighted[inner], records[inner], out=np.zeros(int(inner.sum())), where=records[inner] > 0
    )
    nodes["records"] = records.astype(np.int64)
    nodes["released_value"] = released_v
    nodes["true_value"] = true_v
    nodes["noise"] = np.where(leaf, released_v - true_v, np.nan)
    nodes["empty"] = records == 0
    nodes["sign_flipped"] = leaf & (records > 0) & (np.sign(true_v) != np.sign(released_v))
    nodes["leaves_below"] = below.astype(np.int64)
    return nodes[
        [
            *BASE_COLUMNS,
            "released_value",
            "records",
            "true_value",
            "noise",
            "sign_flipped",
            "empty",
            "leaves_below",
        ]
    ]


def boost_leaf_table(model) -> pd.DataFrame:
    """One row per leaf of every DPBoost tree: records, clipped true value, released value,
    noise and sign flip. NOT private (it reads the raw data)."""
    parts = boost_parts(model)
    n_trees = len(model.models_[0])
    t_e = int(model.trees_per_ensemble)
    frames = []
    for index, (counts, clipped, released) in enumerate(model.leaf_records_):
        part, tree = divmod(index, n_trees)
        frames.append(
            pd.DataFrame(
                {
                    "class": parts[part],
                    "tree": tree + 1,
                    "ensemble": tree // t_e + 1,
                    "leaf": np.arange(len(counts)),
                    "n_records": counts.astype(np.int64),
                    "true_value": clipped,
                    "released_value": released,
                    "noise": released - clipped,
                    "sign_flipped": (counts > 0) & (np.sign(clipped) != np.sign(released)),
                    "empty": counts == 0,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def boost_overview(model, part: int) -> pd.DataFrame:
    """One row per tree of a one-vs-rest part: records, non-empty leaves, sign flips and
    the noise scale met. NOT private."""
    table = boost_leaf_table(model)
    table = table[table["class"] == boost_parts(model)[part]]
    grouped = table.groupby("tree", sort=True)
    out = pd.DataFrame(
        {
            "ensemble": grouped["ensemble"].first(),
            "records": grouped["n_records"].sum(),
            "leaves": grouped.size(),
            "non-empty leaves": grouped["empty"].apply(lambda e: int((~e).sum())),
            "sign flips": grouped["sign_flipped"].sum().astype(np.int64),
            "mean |noise|": grouped["noise"].apply(lambda v: float(np.abs(v).mean())),
        }
    ).reset_index()
    nonempty = out["non-empty leaves"].to_numpy()
    out.insert(6, "flipped %", 100.0 * out["sign flips"].to_numpy() / np.maximum(nonempty, 1))
    return out
