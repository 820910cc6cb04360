"""Trees page: one tree of the trained model — a forest's tree, the greedy tree, or a
DPBoost tree picked by class, ensemble and position — as released (what an outsider
sees) or with the data owner's diagnostics (not private); an overview of every tree.
Logic: dpviz.app.models (dpviz.figures.tree_layout, dpviz.figures.trees)."""

from __future__ import annotations

import streamlit as st

from dpviz.app import models as app_models
from dpviz.app.session import KEEP_PREFIX, AppState
from pages.ui.frame import frame_first
from pages.ui.train import floor_notice

RELEASED = "Released model (what an outsider sees)"
DIAGNOSTICS = "Data-owner diagnostics (not private)"
VIEWS = {RELEASED: app_models.RELEASED, DIAGNOSTICS: app_models.DIAGNOSTICS}
K_VIEW, K_TREE, K_DEPTH, K_PART, K_ENSEMBLE, K_MEMBER = (
    f"{KEEP_PREFIX}trees.{k}" for k in ("view", "tree", "depth", "part", "ensemble", "member")
)


frame_first("pages/trees.py")


def clamp(key: str, low: int, high: int, default: int) -> None:
    """Keep a kept widget value inside the current model's range."""
    value = st.session_state.get(key, default)
    st.session_state[key] = min(max(int(value), low), high)


def pick_tree(shape: app_models.TreeShape, column) -> dict:
    """The widgets that pick one tree of the model; returns ``draw_tree``'s arguments."""
    if shape.kind == app_models.FOREST:
        clamp(K_TREE, 1, shape.n_trees, 1)
        return {"tree": int(column.number_input("Tree", 1, shape.n_trees, key=K_TREE))}
    if shape.kind == app_models.BOOST:
        picked = {}
        if len(shape.parts) > 1:
            st.session_state.setdefault(K_PART, 0)
            if st.session_state[K_PART] >= len(shape.parts):
                st.session_state[K_PART] = 0
            picked["part"] = column.selectbox(
                "Class model (one vs rest)",
                range(len(shape.parts)),
                format_func=lambda i: f"{shape.parts[i]} vs rest",
                key=K_PART,
            )
        clamp(K_ENSEMBLE, 1, shape.n_ensembles, 1)
        ensemble = int(
            column.number_input("Ensemble", 1, shape.n_ensembles, key=K_ENSEMBLE)
            if shape.n_ensembles > 1
            else 1
        )
        size = shape.ensemble_size(ensemble)
        clamp(K_MEMBER, 1, size, 1)
        member = int(
            column.number_input(f"Tree of the ensemble (1–{size})", 1, size, key=K_MEMBER)
        )
        return {**picked, "ensemble": ensemble, "member": member}
    return {}


def main() -> None:
    state = AppState(st.session_state)
    run = state.run
    st.title("Trees")
    if run is None:
        st.info("Train a model first: this page shows the trees of the trained model.")
        st.page_link(
            "pages/train.py", label="Go to the Train page", icon=":material/model_training:"
        )
        return

    st.caption(app_models.summary_caption(run))
    floor_notice(run.floor)
    tree_view(run)


@st.fragment
def tree_view(run) -> None:
    """The tree views of a trained model. A fragment: changing the view, the tree or the
    depth limit reruns this function only, not the page."""
    st.session_state.setdefault(K_VIEW, RELEASED)
    view_col, pick_col, depth_col = st.columns([2, 1, 2])
    view = view_col.radio("View", (RELEASED, DIAGNOSTICS), key=K_VIEW)
    shape = app_models.tree_shape(run.model, st.session_state.get(K_TREE, 1))
    picked = pick_tree(shape, pick_col)
    if "tree" in picked:
        shape = app_models.tree_shape(run.model, picked["tree"])
    limit = None
    if not shape.shallow and shape.depth > 1:  # (one level of many branches: nothing to limit)
        # A forest keeps one limit; the other trees start each view at its own depth.
        released = VIEWS[view] == app_models.RELEASED
        depth_key = K_DEPTH if shape.kind == app_models.FOREST else f"{K_DEPTH}.{VIEWS[view]}"
        default = shape.default_depth if released else shape.diagnostics_depth
        st.session_state.setdefault(depth_key, default)
        clamp(depth_key, 1, shape.depth, default)
        limit = depth_col.slider(
            "Display depth limit",
            1,
            shape.depth,
            key=depth_key,
            help="Deep trees are drawn down to this depth; deeper nodes are summed into the "
            "boxes at the limit.",
        )

    try:
        drawing = app_models.draw_tree(run, VIEWS[view], limit=limit, **picked)
    except ValueError as exc:
        st.error(str(exc))
        return
    if view == RELEASED:
        st.info(drawing.intro)
    else:
        st.warning(drawing.intro, icon="🔒")
    if drawing.figure is not None:
        st.plotly_chart(drawing.figure, key="trees.figure", theme=None)
    for caption in drawing.captions:
        st.caption(caption)

    if drawing.overview is not None:
        st.subheader(drawing.overview_title)
        overview = drawing.overview
        config = {
            name: st.column_config.ProgressColumn(name, min_value=0, max_value=100, format=fmt)
            if kind == "progress"
            else st.column_config.NumberColumn(format=fmt)
            for name, (kind, fmt) in app_models.overview_columns(overview).items()
        }
        st.dataframe(
            overview,
            hide_index=True,
            height=min(400, 38 + 35 * len(overview)),
            column_config=config,
        )


main()
