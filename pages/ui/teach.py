"""The Teach page's parts: the privacy badge and ε slider its sections share, the
mechanism playground (one toy leaf, every mechanism) and the papers' tables recomputed."""

from __future__ import annotations

import streamlit as st

from dpviz.app import teach as app_teach
from dpviz.app.session import KEEP_PREFIX
from dpviz.app.train import epsilon_grid
from dpviz.evaluation import teach as teach
from dpviz.figures.teach import playground_figure
from dpviz.privacy.mechanisms import MECHANISMS

K_COUNT = [f"{KEEP_PREFIX}teach.count{i}" for i in range(teach.MAX_CLASSES)]
DRAW = "teach.draw"  # a plain session value (not a widget): the last draw
DEFAULT_COUNTS = (5, 10, 3, 1, 0)  # (5, 10) is the first leaf of the addendum's Table 6
N_DRAWS = 1000
EPSILONS = epsilon_grid()


def badge(mechanism: str) -> None:
    """The mechanism's privacy badge: red NOT DP, green ε-DP."""
    mech = MECHANISMS[mechanism]
    if mech.private:
        st.badge(f"{mechanism}: ε-DP", color="green", icon=":material/verified_user:")
    else:
        st.badge(f"{mechanism}: NOT DP", color="red", icon=":material/gpp_bad:")


def eps_slider(label: str, key: str, help: str) -> float:
    """An ε select slider on the app's ε grid."""
    return float(
        st.select_slider(label, EPSILONS, format_func=lambda v: f"{v:g}", key=key, help=help)
    )


def playground_section(K: dict) -> None:
    """One toy leaf through every mechanism: exact output laws, seeded draws (``K``:
    the page's session keys)."""
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
    """The papers' Tables 2 and 6, recomputed beside the printed values."""
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
