"""Teach page: a mechanism playground (exact output laws, seeded draws), the paper's
Tables 2 and 6 recomputed live, the exact privacy-loss map that shows why the 2017
mechanism is not DP, and one tree growing step by step.
Logic: dpviz.evaluation.teach and dpviz.app.teach, figures: dpviz.figures.teach."""

from __future__ import annotations

import streamlit as st

from dpviz.app import teach as app_teach
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.train import epsilon_grid
from dpviz.evaluation import teach as teach
from dpviz.figures.teach import playground_figure, privacy_loss_heatmap, tree_figure
from dpviz.privacy.mechanisms import MECHANISMS

K = {
    n: f"{KEEP_PREFIX}teach.{n}"
    for n in ("k", "eps", "loss_mech", "loss_eps", "loss_size", "walk_mech", "walk_eps")
}
K.update({n: f"{KEEP_PREFIX}teach.{n}" for n in ("walk_depth",)})
K_COUNT = [f"{KEEP_PREFIX}teach.count{i}" for i in range(teach.MAX_CLASSES)]
# Plain session values (not widgets): the last draw and the walk-through's position.
DRAW, WALK_STEP, WALK_SEED = "teach.draw", "teach.walk_step", "teach.walk_seed"
WALK_CACHE = "teach.walk_cache"
DEFAULT_COUNTS = (5, 10, 3, 1, 0)  # (5, 10) is the first leaf of the addendum's Table 6
N_DRAWS = 1000
EPSILONS = epsilon_grid()
LOSS_MECHANISMS = [m for m in teach.PLAYGROUND_MECHANISMS if m != "none"] + ["none"]


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/teach.py"):
    st.switch_page("app.py")


def badge(mechanism: str) -> None:
    """The mechanism's privacy badge: red NOT DP, green ε-DP."""
    mech = MECHANISMS[mechanism]
    if mech.private:
        st.badge(f"{mechanism}: ε-DP", color="green", icon=":material/verified_user:")
    else:
        st.badge(f"{mechanism}: NOT DP", color="red", icon=":material/gpp_bad:")


def eps_slider(label: str, key: str, help: str) -> float:
    return float(
        st.select_slider(label, EPSILONS, format_func=lambda v: f"{v:g}", key=key, help=help)
    )


def playground_section() -> None:
    st.header("1 · One leaf, every mechanism")
    st.caption(
        "A **leaf** is the end of a branch of a tree: the training records that reach it are "
        "counted per class, and a **mechanism** (the rule that turns those counts into the "
        "one label the leaf releases) adds randomness so that no single record shows. "
        "**ε** is the privacy budget: smaller ε, more noise, stronger protection. "
        "Type toy counts below: nothing here reads any data."
    )
    st.session_state.setdefault(K["k"], 2)
    st.session_state.setdefault(K["eps"], 0.5)
    for key, value in zip(K_COUNT, DEFAULT_COUNTS):
        st.session_state.setdefault(key, value)
    left, right = st.columns([1, 2])
    k = left.radio(
        "Number of classes",
        range(teach.MIN_CLASSES, teach.MAX_CLASSES + 1),
        key=K["k"],
        horizontal=True,
    )
    with right:
        eps = eps_slider(
            "ε of the leaf", K["eps"], "The leaf's privacy budget (smaller = more noise)."
        )
    cols = st.columns(teach.MAX_CLASSES)
    counts = [
        int(
            cols[i].number_input(
                f"Records of class {teach.CLASS_LETTERS[i]}",
                min_value=0,
                max_value=teach.MAX_TOY_COUNT,
                step=1,
                key=K_COUNT[i],
            )
        )
        for i in range(k)
    ]
    try:
        play = teach.playground(counts, eps)
    except ValueError as exc:
        st.error(str(exc))
        return

    signature = (tuple(counts), eps)
    draw = st.session_state.get(DRAW)

    def new_draw() -> None:
        # A new seed per click, so each press is a fresh set of 1,000 releases.
        previous = st.session_state.get(DRAW)
        seed = previous["seed"] + 1 if previous else 0
        st.session_state[DRAW] = {"signature": signature, "seed": seed}

    st.button(
        f"Draw {N_DRAWS:,} times",
        key="teach.draw_button",
        on_click=new_draw,
        icon=":material/casino:",
        help="Release this leaf 1,000 times with each mechanism (seeded) and overlay how "
        "often each class came out on the exact probabilities.",
    )
    empirical = None
    if draw and draw["signature"] == signature:
        empirical = teach.empirical_frequencies(counts, eps, N_DRAWS, seed=draw["seed"])
    elif draw:
        st.caption("The counts or ε changed since the last draw: press the button to draw again.")
    st.plotly_chart(playground_figure(play, empirical), key="teach.playground", theme=None)
    st.caption(
        "Hatched bars and the red badges mark mechanisms that are **NOT DP**: `smooth_em` "
        "(the 2017 mechanism, withdrawn in 2021) and `none` (the true majority, no noise). "
        "`laplace_counts` releases noisy counts; its bars show how often their largest is "
        "each class."
    )
    st.markdown(
        " ".join(
            f":{'green' if MECHANISMS[m].private else 'red'}-badge[{m}: {MECHANISMS[m].badge}]"
            for m in teach.PLAYGROUND_MECHANISMS
        )
    )

    gap_col, sens_col, text_col = st.columns([2, 3, 7])
    gap_col.metric(
        "Gap j",
        play.gap,
        help="The top class's count minus the runner-up's: how clear the majority is.",
        border=True,
    )
    sens_col.metric(
        "Smooth sensitivity",
        f"{play.smooth_sensitivity:.3g}",
        help="e^(−jε): the noise scale the 2017 mechanism used; it shrinks as the gap grows.",
        border=True,
    )
    text_col.markdown(play.explanation)
    with st.expander("The exact probabilities as a table"):
        wide = play.wide()
        st.dataframe(
            wide,
            width="stretch",
            column_config={c: st.column_config.NumberColumn(format="%.4f") for c in wide.columns},
        )


def tables_section() -> None:
    st.header("2 · The papers' tables, recomputed live")
    reference = app_teach.reference_csv()
    st.caption(app_teach.agreement(reference))
    st.markdown(
        "**Table 2 (Fletcher & Islam 2017)**: the smooth sensitivity e^(−jε) for gaps j "
        "and budgets ε; dpviz's value (· dpviz) beside the paper's (· printed)."
    )
    st.table(app_teach.table2_view(reference), hide_index=True)
    st.markdown(
        "**Table 6 (2021 addendum)**: the chance Pr(B), in %, that a two-class leaf with "
        "counts (f_A, f_B) releases B at ε = 0.1: before the correction (smooth_em, NOT DP) "
        "and after (count_em, ε-DP), dpviz's value beside the addendum's; j is the gap "
        "between the counts; permute_flip is dpviz's addition."
    )
    st.table(app_teach.table6_view(reference), hide_index=True)


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
        eps = eps_slider(
            "ε of the leaf", K["loss_eps"], "The budget each cell is checked against."
        )
    size = c.slider(
        "Largest count on each axis",
        4,
        30,
        key=K["loss_size"],
        help="The map covers every two-class leaf with 0 to this many records of each class.",
    )
    badge(mechanism)
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
        eps = eps_slider("ε", K["walk_eps"], "The tree's privacy budget.")
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
        badge(mechanism)
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
    playground_section()
    tables_section()
    loss_section()
    walk_section(AppState(st.session_state))


main()
