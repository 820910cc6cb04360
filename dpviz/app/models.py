"""What the Trees and Leaves pages can show of a trained model, for every algorithm.

Three families: the random forests (fletcher_islam, jpw), the greedy trees
(friedman_schuster, dpea: one tree, multiway splits on binned features, noisy leaf
counts) and DPBoost (binary trees with noisy real-valued leaves). Each gets the same
views where they exist — released structure, data-owner diagnostics, per-leaf table,
flips, empty leaves — and a plain sentence where one does not.

Released views show what the model releases; everything marked diagnostic reads the
raw data and is NOT private.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.figures import tree_layout as treeviz
from dpviz.figures import trees as figures_trees
from dpviz.figures.common import flip_probability_figure
from dpviz.figures.leaves import (
    boost_leaf_values_figure,
    gap_histogram_figure,
    sensitivity_histogram_figure,
)
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.privacy.mechanisms import gap, is_majority

FOREST, GREEDY, BOOST, OTHER = "forest", "greedy", "boost", "other"
DIAGNOSTICS_WARNING = (
    f"Data-owner diagnostics — {NOT_PRIVATE_DIAGNOSTICS}. {{what}} are facts about the "
    "records: do not publish them."
)


def model_kind(model) -> str:
    """Which family a fitted model belongs to (forest, greedy, boost or other)."""
    if isinstance(model, DPRandomForestClassifier):
        return FOREST
    if isinstance(model, DPDecisionTreeClassifier):
        return GREEDY
    if isinstance(model, DPBoostClassifier):
        return BOOST
    return OTHER


def _percent(value: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    # e.g. 99.9987% at depth 22: never round a few non-empty leaves up to 100%
    return f"{value:.{1 if value < 99.9 else 4}f}%"


# --- leaves ------------------------------------------------------------------------------


def leaf_table(model) -> pd.DataFrame:
    """The per-leaf table of any model: NOT private (true counts / values).

    Forests: one row per non-empty leaf (``model.leaf_table()``). Greedy trees: every
    leaf, empty ones included, with its path, gap j and released noisy counts. DPBoost:
    every leaf of every tree (``treeviz.boost_leaf_table``).
    """
    kind = model_kind(model)
    if kind == FOREST:
        return model.leaf_table()
    if kind == GREEDY:
        return _greedy_leaf_table(model)
    if kind == BOOST:
        return treeviz.boost_leaf_table(model)
    return pd.DataFrame()


def _greedy_leaf_table(model) -> pd.DataFrame:
    """The greedy tree's leaves as ``model.leaf_table()`` lists them, with each leaf's
    node id, path, gap j and released noisy counts; flip probabilities are computed for
    the non-empty leaves only (an empty leaf cannot flip). NOT private."""
    counts = model.leaf_counts_
    leaves = np.asarray(model.leaf_nodes_)
    names = [str(c) for c in model.schema_.classes]
    labels = np.asarray(names, dtype=object)
    records = counts.sum(axis=1)
    nonempty = records > 0
    flipped = ~is_majority(counts)[np.arange(len(counts)), model.leaf_labels_] & nonempty
    flip = np.zeros(len(counts))
    if nonempty.any():
        # Each leaf at its own ε (a leaf closed early by the stopping rule has more than ε').
        flip[nonempty] = model.flip_probability(counts[nonempty], model.leaf_epsilon_[nonempty])
    nodes = treeviz.greedy_nodes(model).set_index("node")
    return pd.DataFrame(
        {
            "tree": 1,
            "leaf": leaves,
            "path": _greedy_paths(nodes, leaves),
            "depth": model.node_depth_[leaves],
            "n_records": records,
            **{f"count[{c}]": counts[:, i] for i, c in enumerate(names)},
            "gap_j": gap(counts),
            **{
                f"released[{c}]": model.leaf_noisy_counts_[:, i].round(2)
                for i, c in enumerate(names)
            },
            "released_label": labels[model.leaf_labels_],
            "true_majority": labels[np.argmax(counts, axis=1)],
            "flipped": flipped,
            "flip_probability": flip,
            "empty": ~nonempty,
        }
    )


def _greedy_paths(nodes: pd.DataFrame, leaves: np.ndarray) -> list[str]:
    """Each leaf's path as the rules on its branches ("x1 < -4.5 ∧ x4 ≥ 2")."""
    nodes = nodes.sort_index()  # node ids: the index
    edge = nodes["edge"].to_numpy(dtype=object)
    parent = nodes["parent"].to_numpy()
    depth = nodes["depth"].to_numpy()
    text = edge.copy()
    text[depth == 0] = "(root)"
    for d in range(2, int(depth.max(initial=0)) + 1):
        at = np.flatnonzero(depth == d)
        text[at] = text[parent[at]] + " ∧ " + edge[at]
    return text[leaves].tolist()


def nonempty_leaves(model, table: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``leaf_table`` that hold records."""
    if "empty" in table.columns:
        return table[~table["empty"].to_numpy(bool)]
    return table


def leaf_totals(model) -> tuple[np.ndarray, np.ndarray]:
    """Leaves per tree (structure only) and whether each count is exact."""
    kind = model_kind(model)
    if kind == FOREST:
        return treeviz.leaf_totals(model)
    if kind == GREEDY:
        return np.asarray([float(len(model.leaf_nodes_))]), np.asarray([True])
    if kind == BOOST:
        sizes = [float(len(t["value"])) for trees in model.models_ for t in trees]
        return np.asarray(sizes), np.ones(len(sizes), dtype=bool)
    return np.zeros(0), np.zeros(0, dtype=bool)


def leaf_epsilon(model) -> float | None:
    """The ε each leaf's release spends (None where it differs from tree to tree)."""
    kind = model_kind(model)
    if kind == FOREST:
        return float(model.tree_epsilon_)
    if kind == GREEDY:
        return float(model.step_epsilon_)
    return None


def model_diagnostics(run) -> dict:
    """The model's ``diagnostics_`` (NOT private), computed once per run. A greedy
    tree's are read off its leaf table, which already holds every flip probability."""
    cache = run.__dict__.setdefault("_views", {})
    if "diagnostics" not in cache:
        model = run.model
        if model_kind(model) == GREEDY:
            table = run.leaf_table
            nonempty = ~table["empty"].to_numpy(bool)
            n = len(table)
            some = bool(nonempty.any())
            cache["diagnostics"] = {
                "n_leaves_total": float(n),
                "n_leaves_total_exact": True,
                "n_leaves_nonempty": int(nonempty.sum()),
                "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()) if n else 0.0,
                "flipped_leaf_pct": 100.0 * float(table["flipped"][nonempty].mean())
                if some
                else 0.0,
                "expected_flip_pct": 100.0 * float(table["flip_probability"][nonempty].mean())
                if some
                else 0.0,
                "mean_smooth_sensitivity": float("nan"),
            }
        else:
            cache["diagnostics"] = model.diagnostics_
    return cache["diagnostics"]


def diagnostic_cards(run) -> dict[str, str]:
    """Model-level diagnostics as card texts, from one model on all records: NOT private.
    Every card is one that exists for the algorithm."""
    model = run.model
    d = model_diagnostics(run)
    kind = model_kind(model)
    total = f"{d['n_leaves_total']:,.0f}" + (
        "" if d.get("n_leaves_total_exact", True) else " (est.)"
    )
    nan = float("nan")
    if kind == BOOST:
        table = treeviz.boost_leaf_table(model)
        filled = table[~table["empty"]]
        return {
            "Leaves in all trees": total,
            "Leaves with records": f"{d['n_leaves_nonempty']:,}",
            "Empty leaves": _percent(d["empty_leaf_pct"]),
            "Sign flips": _percent(d["flipped_leaf_pct"]),
            "Mean |noise| per leaf": f"{filled['noise'].abs().mean():.3g}" if len(filled) else "—",
            "Trees": f"{len(model.models_[0]):,}"
            + (f" × {len(model.models_)} classes" if len(model.models_) > 1 else ""),
        }
    where = "Leaves in the forest" if kind == FOREST else "Leaves in the tree"
    cards = {
        where: total,
        "Leaves with records": f"{d['n_leaves_nonempty']:,}",
        "Empty leaves": _percent(d["empty_leaf_pct"]),
        "Flipped leaves": _percent(d["flipped_leaf_pct"]),
        "Expected flips": _percent(d.get("expected_flip_pct", nan)),
    }
    if kind == GREEDY:
        cards["ε' per step and for the leaves"] = f"{model.step_epsilon_:.3g}"
    else:
        sensitivity = d.get("mean_smooth_sensitivity", nan)
        cards["Mean smooth sensitivity"] = "—" if math.isnan(sensitivity) else f"{sensitivity:.3g}"
    return cards


@dataclass
class LeavesView:
    """What the Leaves page shows of a model below its teaching panel.

    ``charts`` is a list of rows, each a list of (key, figure); ``missing`` says in
    plain words which diagnostics do not exist for this algorithm and why.
    """

    caption: str
    cards: dict[str, str]
    charts: list[list[tuple[str, go.Figure]]]
    missing: list[str]
    table: pd.DataFrame
    table_caption: str
    download: pd.DataFrame


def leaves_view(run, max_rows: int = 20_000) -> LeavesView:
    """The Leaves page's model part for a training run (``app_train.TrainRun``)."""
    model = run.model
    kind = model_kind(model)
    table = run.leaf_table
    eps = run.settings.epsilon
    missing: list[str] = []
    charts: list[list[tuple[str, go.Figure]]] = []
    if kind == FOREST:
        shown = table
        leaf_eps = float(model.tree_epsilon_)
        caption = (
            f"{run.dataset} · mechanism {model.mechanism} · ε = {leaf_eps:g} per leaf · "
            f"{model.n_estimators_} trees of depth {model.depth_} · one forest on all records."
        )
        charts = [
            [
                ("leaves.gaps", gap_histogram_figure(table)),
                ("leaves.sens", sensitivity_histogram_figure(table, leaf_eps)),
            ],
            [
                (
                    "leaves.flips",
                    flip_probability_figure(table, leaf_eps, trained=model.mechanism),
                )
            ],
        ]
        what = "non-empty leaves"
    elif kind == GREEDY:
        shown = nonempty_leaves(model, table)
        leaf_eps = float(model.step_epsilon_)
        caption = (
            f"{run.dataset} · {run.settings.algorithm} · ε = {eps:g} in total, ε' = "
            f"{leaf_eps:.3g} per split step and for the discrete Laplace leaf counts · one "
            f"tree of depth {model.depth_} on all records."
        )
        charts = [
            [("leaves.gaps", gap_histogram_figure(shown))],
            [
                (
                    "leaves.flips",
                    flip_probability_figure(
                        shown, leaf_eps, mechanisms=["laplace_counts"], trained="laplace_counts"
                    ),
                )
            ],
        ]
        missing.append(
            "Smooth sensitivity does not exist for this algorithm: its leaves release "
            "discrete-Laplace-noised class counts, not a label drawn with smooth sensitivity. The "
            "label a leaf predicts is the class with the largest noisy count, so a flip is "
            "a leaf whose largest noisy count is not its true majority."
        )
        what = "non-empty leaves (the download also lists the empty ones)"
    elif kind == BOOST:
        shown = nonempty_leaves(model, table)
        n_trees = len(model.models_[0])
        caption = (
            f"{run.dataset} · DPBoost · ε = {eps:g} · {n_trees} trees of depth "
            f"{model.max_depth} per class model · one model on all records."
        )
        charts = [[("leaves.values", boost_leaf_values_figure(table))]]
        missing.append(
            "Gap j, smooth sensitivity and label flips do not exist for DPBoost: its leaves "
            "release a noisy real-valued score, not class counts or a label. Here a "
            "“sign flip” is a non-empty leaf whose released value has the opposite sign of "
            "its true (clipped) value: the noise turned its push towards a class around."
        )
        what = "non-empty leaves (the download also lists the empty ones)"
    else:
        return LeavesView(
            f"{run.dataset} · {run.settings.algorithm}",
            {},
            [],
            [
                f"No per-leaf diagnostics exist for {type(model).__name__}: dpviz does not "
                "know how to read its leaves."
            ],
            pd.DataFrame(),
            "",
            pd.DataFrame(),
        )
    view = shown.drop(columns=["leaf_key"], errors="ignore").head(max_rows)
    table_caption = f"{len(shown):,} {what}; click a column header to sort." + (
        f" The first {max_rows:,} are shown; the download has all."
        if len(shown) > max_rows
        else ""
    )
    return LeavesView(caption, diagnostic_cards(run), charts, missing, view, table_caption, table)


# --- trees -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeShape:
    """What the Trees page offers for a model: how trees are picked and how deep they go.

    ``kind``: forest (pick a tree), greedy (one tree) or boost (pick class, ensemble and
    tree within it). ``depth``: the deepest level; ``shallow``: drawn whole as a
    node-link diagram (no display-depth slider); ``default_depth``: the slider's start
    in the released view, ``diagnostics_depth`` in the data owner's (which draws only
    the nodes that hold records, so it can start deeper).
    """

    kind: str
    depth: int
    shallow: bool
    default_depth: int
    diagnostics_depth: int = 0
    n_trees: int = 1
    parts: tuple[str, ...] = ()
    n_ensembles: int = 1
    trees_per_ensemble: int = 1

    def ensemble_size(self, ensemble: int) -> int:
        """Trees in ``ensemble`` (1-based): the last one may be short."""
        return min(
            self.trees_per_ensemble, self.n_trees - (ensemble - 1) * self.trees_per_ensemble
        )


def tree_shape(model, tree: int = 1) -> TreeShape:
    """The Trees page's choices for a model (``tree``: the forest tree, 1-based)."""
    kind = model_kind(model)
    if kind == FOREST:
        tree = min(max(1, int(tree)), model.n_estimators_)
        return TreeShape(
            FOREST,
            int(model.depth_),
            treeviz.is_shallow(model, tree - 1),
            int(model.depth_),
            int(model.depth_),
            n_trees=int(model.n_estimators_),
        )
    if kind == GREEDY:
        depth = int(model.node_depth_.max(initial=0))
        shallow = len(model.leaf_nodes_) <= treeviz.NODE_LINK_MAX_LEAVES
        per_level = np.cumsum(np.bincount(model.node_depth_))
        fits = np.flatnonzero(per_level <= GREEDY_DEFAULT_NODES)
        default = int(fits[-1]) if len(fits) else 1
        return TreeShape(GREEDY, depth, shallow, max(1, min(depth, default)), depth)
    if kind == BOOST:
        depth = int(model.max_depth_)
        n_trees = len(model.models_[0])
        t_e = int(model.trees_per_ensemble_)
        shallow = 2**depth <= figures_trees.BOOST_NODE_LINK_MAX_LEAVES
        return TreeShape(
            BOOST,
            depth,
            shallow,
            depth if shallow else 6,
            depth if shallow else 6,
            n_trees=n_trees,
            parts=tuple(treeviz.boost_parts(model)),
            n_ensembles=math.ceil(n_trees / t_e),
            trees_per_ensemble=t_e,
        )
    return TreeShape(OTHER, 0, True, 0)


# A greedy tree's released view starts at the deepest level that keeps the drawing under
# this many boxes: 8-way splits make the next level 8 times wider.
GREEDY_DEFAULT_NODES = 120
RELEASED = "released"
DIAGNOSTICS = "diagnostics"


@dataclass
class TreeDrawing:
    """One tree as the Trees page shows it: an explanation, the figure, notes under it
    and (diagnostics) an overview table of every tree."""

    intro: str
    figure: go.Figure | None
    captions: list[str] = field(default_factory=list)
    overview: pd.DataFrame | None = None
    overview_title: str = ""


def summary_caption(run) -> str:
    """One line above the tree: what was trained."""
    model = run.model
    kind = model_kind(model)
    eps = run.settings.epsilon
    if kind == FOREST:
        return (
            f"The forest trained on {run.dataset}: {model.n_estimators_} trees of depth "
            f"{model.depth_}, mechanism {model.mechanism}, ε = {eps:g}."
        )
    if kind == GREEDY:
        return (
            f"The {run.settings.algorithm} tree trained on {run.dataset}: depth "
            f"{model.depth_} (max_depth {model.max_depth}), {model.steps} layer(s) per "
            "exponential-mechanism step, "
            f"{model.n_bins} bins per continuous feature, {len(model.leaf_nodes_):,} "
            f"leaves, ε = {eps:g}."
        )
    if kind == BOOST:
        parts = len(model.models_)
        return (
            f"The DPBoost model trained on {run.dataset}: {len(model.models_[0])} trees of "
            f"depth {model.max_depth_}"
            + (
                (
                    f" shared by the {parts} classes' softmax scores (one value per class "
                    "and leaf)"
                    if model.loss_ == "logistic"
                    else f" shared by {parts} one-vs-rest classes (one value per class and leaf)"
                    if model.shares_trees_
                    else f" for each of {parts} one-vs-rest classes"
                )
                if parts > 1
                else ""
            )
            + f" in ensembles of {model.trees_per_ensemble_}, ε = {eps:g}"
            + (" (grown: large ε and enough records)" if model.grown_ else "")
            + (
                " (random splits: every tree reads every record)"
                if getattr(model, "random_", False)
                else ""
            )
            + "."
        )
    return f"{type(model).__name__} trained on {run.dataset}."


def draw_tree(
    run,
    view: str,
    *,
    tree: int = 1,
    part: int = 0,
    ensemble: int = 1,
    member: int = 1,
    limit: int | None = None,
) -> TreeDrawing:
    """Draw one tree of a run's model in the ``released`` or ``diagnostics`` view.

    ``tree`` picks a forest's tree; ``part`` (0-based class model), ``ensemble`` and
    ``member`` (1-based) a DPBoost tree; ``limit`` is the display depth. Raises
    ``ValueError`` with a message for an impossible choice.
    """
    model = run.model
    kind = model_kind(model)
    diagnostics = view == DIAGNOSTICS
    if kind == FOREST:
        return _draw_forest(run, diagnostics, tree, limit)
    if kind == GREEDY:
        return _draw_greedy(run, diagnostics, limit)
    if kind == BOOST:
        return _draw_boost(run, diagnostics, part, ensemble, member, limit)
    return TreeDrawing(f"dpviz cannot draw the trees of a {type(model).__name__} model.", None, [])


def _draw_forest(run, diagnostics: bool, tree: int, limit: int | None) -> TreeDrawing:
    model = run.model
    classes = [str(c) for c in model.schema_.classes]
    shape = tree_shape(model, tree)
    limit = shape.depth if limit is None else max(1, min(int(limit), shape.depth))
    index = tree - 1
    captions: list[str] = []
    if not diagnostics:
        drawn = (
            "from the public seed and the noisy per-class tables of the split release "
            "(booked in the ledger)"
            if getattr(model, "splits_", None) is not None
            else "from the public seed without the data"
        )
        counts = model.leaf_noisy_counts_ is not None
        output = (
            "the noisy class counts every leaf releases, empty or not (a leaf's colour: "
            "its largest count)"
            if counts
            else "the label every leaf releases, empty or not"
        )
        intro = (
            f"What an outsider sees: the structure, drawn {drawn}, and {output}. The "
            "downloaded model JSON holds exactly this."
        )
        nodes = treeviz.structure_nodes(
            model, index, max_depth=limit, max_nodes=treeviz.MAX_RELEASED_NODES
        )
        draw = figures_trees.node_link_figure if shape.shallow else figures_trees.icicle_figure
        fig = draw(nodes, classes, diagnostics=False, tree=tree, releases_counts=counts)
        return TreeDrawing(intro, fig)
    intro = DIAGNOSTICS_WARNING.format(
        what="True class counts, the gap j, flips and even which leaves hold records"
    )
    if shape.shallow:
        nodes = treeviz.with_counts(model, treeviz.structure_nodes(model, index))
        fig = figures_trees.node_link_figure(nodes, classes, diagnostics=True, tree=tree)
    else:
        visited = treeviz.visited_nodes(model, index)
        shown = treeviz.fit_depth(visited, limit)
        if shown < limit:
            captions.append(
                f"Drawn to depth {shown} instead of {limit}: deeper levels would exceed "
                f"{treeviz.MAX_DRAWN_NODES:,} boxes."
            )
        totals, _ = run.leaf_totals
        fig = figures_trees.icicle_figure(
            treeviz.cut_depth(visited, shown),
            classes,
            diagnostics=True,
            tree=tree,
            total_leaves=float(totals[index]),
        )
    overview = treeviz.forest_overview(model, run.leaf_table, run.leaf_totals)
    return TreeDrawing(
        intro, fig, captions, overview, f"Forest overview — {NOT_PRIVATE_DIAGNOSTICS}"
    )


def _draw_greedy(run, diagnostics: bool, limit: int | None) -> TreeDrawing:
    model = run.model
    classes = [str(c) for c in model.schema_.classes]
    shape = tree_shape(model)
    default = shape.diagnostics_depth if diagnostics else shape.default_depth
    limit = default if limit is None else max(1, min(int(limit), shape.depth))
    nodes = _greedy_nodes_cached(run)
    name = f"{run.settings.algorithm} tree"
    captions: list[str] = []
    if not diagnostics:
        # The release is ε-DP only when the model's ledger says so (public schema, fresh noise).
        release = "part of the ε-DP release" if run.private else "part of the release"
        intro = (
            "What an outsider sees: the splits, each chosen by the exponential mechanism "
            f"({release}), and the noisy class counts (discrete Laplace) of every leaf, "
            "empty or not; a leaf predicts its largest noisy count. The downloaded model "
            "JSON holds exactly this."
        )
        if shape.shallow:
            fig = figures_trees.node_link_figure(
                nodes, classes, diagnostics=False, tree=1, name=name, releases_counts=True
            )
            return TreeDrawing(intro, fig)
        drawn = treeviz.released_levels(nodes, limit, treeviz.MAX_RELEASED_NODES)
        shown = int(drawn["depth"].max())
        if shown < limit:
            captions.append(
                f"Drawn to depth {shown} instead of {limit}: deeper levels would exceed "
                f"{treeviz.MAX_RELEASED_NODES:,} boxes."
            )
        fig = figures_trees.icicle_figure(
            drawn,
            classes,
            diagnostics=False,
            tree=1,
            name=name,
            releases_counts=True,
            note=(
                f"Splits chosen by the exponential mechanism, drawn to depth {shown} (“…”: "
                "deeper branches not drawn); box width: the branches below, not records.<br>"
                "Colour: the class with the largest noisy count, summed over the leaves "
                "below (computed from the release alone). Hover for the sums."
            ),
        )
        return TreeDrawing(intro, fig, captions)
    intro = DIAGNOSTICS_WARNING.format(
        what="True class counts, the gap j, flips and even which leaves hold records"
    )
    if shape.shallow:
        fig = figures_trees.node_link_figure(nodes, classes, diagnostics=True, tree=1, name=name)
    else:
        drawn, shown = treeviz.nonempty_levels(nodes, limit)
        if shown < limit:
            captions.append(
                f"Drawn to depth {shown} instead of {limit}: deeper levels would exceed "
                f"{treeviz.MAX_DRAWN_NODES:,} boxes."
            )
        fig = figures_trees.icicle_figure(
            drawn,
            classes,
            diagnostics=True,
            tree=1,
            name=name,
            total_leaves=float(len(model.leaf_nodes_)),
        )
    d = model_diagnostics(run)
    captions.append(
        f"{d['n_leaves_nonempty']:,} of {len(model.leaf_nodes_):,} leaves hold records "
        f"({_percent(d['empty_leaf_pct'])} empty); {_percent(d['flipped_leaf_pct'])} of the "
        "non-empty ones predict a class other than their true majority."
    )
    return TreeDrawing(intro, fig, captions)


def _greedy_nodes_cached(run) -> pd.DataFrame:
    cache = run.__dict__.setdefault("_views", {})
    if "greedy" not in cache:
        cache["greedy"] = treeviz.greedy_nodes(run.model)
    return cache["greedy"]


def _draw_boost(
    run, diagnostics: bool, part: int, ensemble: int, member: int, limit: int | None
) -> TreeDrawing:
    model = run.model
    shape = tree_shape(model)
    if not 0 <= part < len(shape.parts):
        raise ValueError(f"class model must be one of {', '.join(shape.parts)}")
    if not 1 <= ensemble <= shape.n_ensembles:
        raise ValueError(f"ensemble must be between 1 and {shape.n_ensembles}, got {ensemble}")
    size = shape.ensemble_size(ensemble)
    if not 1 <= member <= size:
        raise ValueError(f"ensemble {ensemble} has trees 1 to {size}, got {member}")
    index = (ensemble - 1) * shape.trees_per_ensemble + member - 1
    nodes = treeviz.boost_nodes(model, part, index)
    positive = shape.parts[part]
    captions: list[str] = []
    if not shape.shallow:
        limit = shape.default_depth if limit is None else max(1, min(int(limit), shape.depth))
        nodes = treeviz.cut_depth(nodes, limit)
    name = f"Tree {member} of ensemble {ensemble}" + (
        f" · class {positive} vs rest" if len(shape.parts) > 1 else ""
    )
    fig = figures_trees.boost_tree_figure(
        nodes, diagnostics=diagnostics, name=name, positive=positive
    )
    if not diagnostics:
        intro = (
            f"What an outsider sees: {_boost_release(model)}, empty or not. The model adds "
            "up learning rate × leaf value over all trees. The downloaded model JSON holds "
            "exactly this."
        )
        return TreeDrawing(intro, fig, captions)
    intro = DIAGNOSTICS_WARNING.format(
        what="Records per leaf, the true leaf values and which leaves the noise flipped"
    )
    overview = treeviz.boost_overview(model, part)
    whose = f"the {positive} vs rest model" if len(shape.parts) > 1 else "the model"
    return TreeDrawing(
        intro, fig, captions, overview, f"Every tree of {whose} — {NOT_PRIVATE_DIAGNOSTICS}"
    )


def _boost_release(model) -> str:
    """What a DPBoost tree releases, in the words of the mode the fit took (public)."""
    if getattr(model, "random_", False):
        return (
            "each split drawn without reading a record (a feature at random, a threshold at "
            "one of the noisy-quantile bin edges), and every leaf's value: its records' "
            "softmax gradient sums with Laplace noise, over a public denominator"
        )
    if getattr(model, "grown_", False):
        return (
            "each split chosen by report-noisy-max over noisy-quantile bins, and every "
            "leaf's clipped Newton value with Laplace noise"
        )
    return (
        "each split, chosen by the exponential mechanism over public bins, and every "
        "leaf's value after geometric clipping and Laplace noise"
    )


def overview_columns(table: pd.DataFrame) -> dict[str, Any]:
    """Display formats of the overview columns present (for the page's column config):
    name → (kind, format)."""
    formats = {
        "leaves": ("number", "%d"),
        "empty %": ("number", "%.2f"),
        "flipped %": ("progress", "%.1f"),
        "expected flip %": ("number", "%.1f"),
        "mean gap j": ("number", "%.2f"),
        "mean |noise|": ("number", "%.3f"),
    }
    return {c: formats[c] for c in table.columns if c in formats}
