"""Trees page: one tree of the trained forest, as released (what an outsider sees) or with
the data owner's diagnostics (not private); a per-tree overview. Logic: dpviz.treeviz,
figures: dpviz.figures_trees."""

from __future__ import annotations

import streamlit as st

from dpviz import figures_trees, treeviz
from dpviz.app_session import KEEP_PREFIX, AppState
from dpviz.app_support import NOT_PRIVATE_DIAGNOSTICS

RELEASED = "Released model (what an outsider sees)"
DIAGNOSTICS = "Data-owner diagnostics (not private)"
K_VIEW, K_TREE, K_DEPTH = (f"{KEEP_PREFIX}trees.{k}" for k in ("view", "tree", "depth"))


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/trees.py"):
    st.switch_page("app.py")


def main() -> None:
    state = AppState(st.session_state)
    run = state.run
    st.title("Trees")
    if run is None:
        st.info("Train a model first: this page shows the trees of the trained forest.")
        st.page_link(
            "pages/train.py", label="Go to the Train page", icon=":material/model_training:"
        )
        return

    model = run.model
    classes = [str(c) for c in model.schema_.classes]
    st.caption(
        f"The forest trained on {run.dataset}: {model.n_estimators} trees of depth "
        f"{model.depth_}, mechanism {run.settings.mechanism}, ε = {run.settings.epsilon:g}."
    )
    st.session_state.setdefault(K_VIEW, RELEASED)
    st.session_state.setdefault(K_TREE, 1)
    if st.session_state[K_TREE] > model.n_estimators:
        st.session_state[K_TREE] = 1
    st.session_state.setdefault(K_DEPTH, model.depth_)
    st.session_state[K_DEPTH] = min(st.session_state[K_DEPTH], model.depth_)

    view_col, tree_col, depth_col = st.columns([2, 1, 2])
    view = view_col.radio("View", (RELEASED, DIAGNOSTICS), key=K_VIEW)
    tree = int(tree_col.number_input("Tree", 1, model.n_estimators, key=K_TREE))
    shallow = treeviz.is_shallow(model, tree - 1)
    limit = model.depth_
    if not shallow and model.depth_ > 1:  # (one level of many branches: nothing to limit)
        limit = depth_col.slider(
            "Display depth limit",
            1,
            model.depth_,
            key=K_DEPTH,
            help="Deep trees are drawn down to this depth; deeper nodes are summed into the "
            "boxes at the limit.",
        )

    try:
        if view == RELEASED:
            st.info(
                "What an outsider sees: the structure, drawn from the public seed without the "
                "data, and the label every leaf releases, empty or not. The downloaded model "
                "JSON holds exactly this."
            )
            nodes = treeviz.structure_nodes(
                model, tree - 1, max_depth=limit, max_nodes=treeviz.MAX_RELEASED_NODES
            )
            if shallow:
                fig = figures_trees.node_link_figure(nodes, classes, diagnostics=False, tree=tree)
            else:
                fig = figures_trees.icicle_figure(nodes, classes, diagnostics=False, tree=tree)
        else:
            st.warning(
                f"Data-owner diagnostics — {NOT_PRIVATE_DIAGNOSTICS}. True class counts, the "
                "gap j, flips and even which leaves hold records are facts about the records: "
                "do not publish them.",
                icon="🔒",
            )
            if shallow:
                nodes = treeviz.with_counts(model, treeviz.structure_nodes(model, tree - 1))
                fig = figures_trees.node_link_figure(nodes, classes, diagnostics=True, tree=tree)
            else:
                visited = treeviz.visited_nodes(model, tree - 1)
                shown = treeviz.fit_depth(visited, limit)
                if shown < limit:
                    st.caption(
                        f"Drawn to depth {shown} instead of {limit}: deeper levels would exceed "
                        f"{treeviz.MAX_DRAWN_NODES:,} boxes."
                    )
                totals, _ = run.leaf_totals
                fig = figures_trees.icicle_figure(
                    treeviz.cut_depth(visited, shown),
                    classes,
                    diagnostics=True,
                    tree=tree,
                    total_leaves=float(totals[tree - 1]),
                )
    except ValueError as exc:
        st.error(str(exc))
        return
    st.plotly_chart(fig, key="trees.figure", theme=None)

    if view == DIAGNOSTICS:
        st.subheader(f"Forest overview — {NOT_PRIVATE_DIAGNOSTICS}")
        overview = treeviz.forest_overview(model, run.leaf_table, run.leaf_totals)
        st.dataframe(
            overview,
            hide_index=True,
            height=min(400, 38 + 35 * len(overview)),
            column_config={
                "leaves": st.column_config.NumberColumn(format="%d"),
                "empty %": st.column_config.NumberColumn(format="%.2f"),
                "flipped %": st.column_config.ProgressColumn(
                    "flipped %", min_value=0, max_value=100, format="%.1f"
                ),
                "expected flip %": st.column_config.NumberColumn(format="%.1f"),
                "mean gap j": st.column_config.NumberColumn(format="%.2f"),
            },
        )


main()
