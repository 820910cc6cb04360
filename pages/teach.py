"""Teach page: a mechanism playground (exact output laws, seeded draws), the paper's
Tables 2 and 6 recomputed live, the exact privacy-loss map that shows why the 2017
mechanism is not DP, and one tree growing step by step.
Logic: dpviz.evaluation.teach and dpviz.app.teach, figures: dpviz.figures.teach."""

from __future__ import annotations

import streamlit as st

from dpviz.app import teach as app_teach
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.evaluation import teach as teach
from dpviz.figures.teach import privacy_loss_heatmap, tree_figure
from dpviz.privacy.mechanisms import MECHANISMS
from pages.ui import teach as teach_ui
from pages.ui.frame import frame_first

K = {
    n: f"{KEEP_PREFIX}teach.{n}"
    for n in ("k", "eps", "loss_mech", "loss_eps", "loss_size", "walk_mech", "walk_eps")
}
K.update({n: f"{KEEP_PREFIX}teach.{n}" for n in ("walk_depth",)})
# Plain session values (not widgets): the walk-through's position and its tree.
WALK_STEP, WALK_SEED = "teach.walk_step", "teach.walk_seed"
WALK_CACHE = "teach.walk_cache"
LOSS_MECHANISMS = [m for m in teach.PLAYGROUND_MECHANISMS if m != "none"] + ["none"]


frame_first("pages/teach.py")


def loss_section() -> None:
    st.header("3 · Why the 2017 mechanism is not DP")
    st.caption(
        "**Privacy loss** between two leaves one record apart: the logarithm of how much more "
        "likely one of them makes some released label. ε-DP (differential privacy with "
        "budget ε) promises it never exceeds ε, for any leaf and any record added or removed."
    )
    st.session_state.setdefault(K["loss_mech"], "smooth_em")
    st.session_state.setdefault(K["loss_eps"], 1.0)
    st.session_state.setdefault(K["loss_size"], 10)
    a, b, c = st.columns([2, 2, 2])
    mechanism = a.selectbox(
        "Mechanism",
        LOSS_MECHANISMS,
        format_func=teach.mechanism_label,
        key=K["loss_mech"],
    )
    with b:
        eps = teach_ui.eps_slider(
            "ε of the leaf", K["loss_eps"], "The budget each cell is checked against."
        )
    size = c.slider(
        "Largest count on each axis",
        4,
        30,
        key=K["loss_size"],
        help="The map covers every two-class leaf with 0 to this many records of each class.",
    )
    teach_ui.badge(mechanism)
    try:
        grid = teach.privacy_loss_grid(mechanism, eps, int(size))
    except ValueError as exc:
        st.error(str(exc))
        return
    worst = grid.max_loss
    m1, m2 = st.columns(2)
    m1.metric(
        "Leaves above ε",
        f"{grid.n_above:,} of {len(grid.cells):,}",
        help="Cells marked ✕: the DP promise is broken there.",
        border=True,
    )
    m2.metric(
        "Worst privacy loss",
        "∞" if worst == float("inf") else f"{worst:.3g}",
        delta=f"ε = {eps:g} promised",
        delta_color="off",
        border=True,
    )
    st.plotly_chart(privacy_loss_heatmap(grid), key="teach.loss", theme=None)
    (st.error if grid.n_above else st.success)(grid.explanation)
    st.subheader("The 2021 addendum in plain words")
    st.markdown(teach.addendum_story())


def walk_section(state: AppState) -> None:
    st.header("4 · A tree grows")
    st.caption(
        "One random tree in four clicks: its shape is drawn first, without data; then the "
        "training records fall into its leaves; each leaf releases a noisy label; a new "
        "record walks down and collects the tree's vote."
    )
    st.session_state.setdefault(K["walk_mech"], "permute_flip")
    st.session_state.setdefault(K["walk_eps"], 1.0)
    st.session_state.setdefault(K["walk_depth"], 2)
    st.session_state.setdefault(WALK_STEP, 1)
    st.session_state.setdefault(WALK_SEED, 0)
    a, b, c = st.columns([2, 2, 1])
    mechanism = a.selectbox(
        "Mechanism",
        app_teach.WALK_MECHANISMS,
        format_func=teach.mechanism_label,
        key=K["walk_mech"],
    )
    with b:
        eps = teach_ui.eps_slider("ε", K["walk_eps"], "The tree's privacy budget.")
    depth = c.radio("Depth", (1, 2, 3), key=K["walk_depth"], horizontal=True)
    settings = dict(
        depth=int(depth), epsilon=eps, mechanism=mechanism, seed=int(st.session_state[WALK_SEED])
    )
    signature = (id(state.data), tuple(settings.items()))
    cached = st.session_state.get(WALK_CACHE)
    if cached is not None and cached[0] == signature:
        source = cached[1]
    else:
        # One release per tree: its fresh secret noise must not be redrawn on every rerun
        # (Back / Next), or the released labels would change between the steps.
        try:
            source = app_teach.walkthrough_for(state.data, **settings)
        except ValueError as exc:
            st.error(str(exc))
            return
        st.session_state[WALK_CACHE] = (signature, source)
    walk = source.walk
    (st.warning if source.on_session_data else st.info)(source.note, icon="🔒")

    def go(step: int) -> None:
        st.session_state[WALK_STEP] = step

    def regrow() -> None:
        st.session_state[WALK_SEED] += 1
        st.session_state[WALK_STEP] = 1

    step = int(st.session_state[WALK_STEP])
    with st.container(horizontal=True):
        st.button(
            "◀ Back", key="teach.walk_back", on_click=go, args=(step - 1,), disabled=step <= 1
        )
        st.button(
            "Next step ▶",
            key="teach.walk_next",
            on_click=go,
            args=(step + 1,),
            disabled=step >= len(walk.steps),
            type="primary",
        )
        st.button("Grow another tree", key="teach.walk_again", on_click=regrow)
    current = walk.steps[step - 1]
    st.progress(step / len(walk.steps), text=f"Step {step} of {len(walk.steps)}: {current.title}")
    if not MECHANISMS[mechanism].private:
        teach_ui.badge(mechanism)
    st.markdown(current.text)
    st.plotly_chart(tree_figure(walk, step), key="teach.tree", theme=None)
    table = current.table.rename(columns={c: f"{c} 🔒" for c in current.not_private})
    st.dataframe(table, hide_index=True, width="stretch")
    if current.not_private:
        st.caption("🔒 = computed from the raw records: NOT private, never released.")
    if step == len(walk.steps):
        st.caption(f"Privacy ledger of this one-tree model: {walk.ledger}")


def main() -> None:
    st.title("Teach")
    st.markdown(
        "How a differentially private forest hides each record, one piece at a time. "
        "**Differential privacy (DP)**: adding or removing any one person's record changes "
        "the chance of every possible output by at most a factor e^ε."
    )
    teach_ui.playground_section(K)
    teach_ui.tables_section()
    loss_section()
    walk_section(AppState(st.session_state))


main()
