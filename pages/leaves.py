"""Leaves page: how a mechanism turns one leaf's counts into a label (public, for
teaching), then the trained model's leaves: gap j, smooth sensitivity, flips, empty
leaves and a sortable table where they exist for its algorithm (not private).
Logic: dpviz.app.leaves, dpviz.app.models; figures: dpviz.figures.common*."""

from __future__ import annotations

import streamlit as st

from dpviz.app import leaves as app_leaves
from dpviz.app import models as app_models
from dpviz.app import odometer
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.tabular.outputs import csv_text
from pages.ui.frame import frame_first
from pages.ui.odometer import release_button

K_COUNTS, K_EPS = f"{KEEP_PREFIX}leaves.counts", f"{KEEP_PREFIX}leaves.eps"
MAX_TABLE_ROWS = 20_000


frame_first("pages/leaves.py")


def main() -> None:
    state = AppState(st.session_state)
    run = state.run
    st.title("Leaves")

    leaf_calculator(run)
    if run is None:
        st.info("Train a model to see its leaves here.")
        st.page_link(
            "pages/train.py", label="Go to the Train page", icon=":material/model_training:"
        )
        return
    model_leaves(run)


@st.fragment
def leaf_calculator(run) -> None:
    """The one-leaf calculator. A fragment: typing counts or an ε reruns it alone, not
    the model's leaf table below."""
    st.subheader("One leaf, every mechanism")
    st.caption(
        "Type a leaf's class counts and a per-leaf ε: the table gives the exact chance that "
        "each mechanism releases each class. No data is read here."
    )
    st.session_state.setdefault(K_COUNTS, "5, 10")
    leaf_eps = app_models.leaf_epsilon(run.model) if run else None
    st.session_state.setdefault(K_EPS, leaf_eps or 1.0)
    counts_col, eps_col = st.columns(2)
    counts_text = counts_col.text_input("Class counts of the leaf", key=K_COUNTS)
    leaf_eps = eps_col.number_input("ε per leaf", 0.001, 100.0, format="%.3f", key=K_EPS)
    try:
        counts = app_leaves.parse_counts(counts_text)
        classes = run.model.schema_.classes if run else None
        table = app_leaves.leaf_release_table(counts, leaf_eps, classes)
    except ValueError as exc:
        st.error(str(exc))
    else:
        st.dataframe(
            table,
            hide_index=True,
            column_config={
                c: st.column_config.ProgressColumn(c, min_value=0.0, max_value=1.0, format="%.4f")
                for c in table.columns
                if c.startswith("P(")
            },
        )
        st.caption(
            "smooth_em is the 2017 mechanism: NOT DP (its privacy loss grows without bound with "
            "the gap). none releases the true majority: no privacy."
        )


def model_leaves(run) -> None:
    """The trained model's leaves (NOT private)."""
    view = app_models.leaves_view(run, max_rows=MAX_TABLE_ROWS)
    st.subheader(f"The trained model's leaves — {NOT_PRIVATE_DIAGNOSTICS}")
    st.warning(
        "Everything below reads the true leaf counts of the records: it is for the data owner "
        "and must not be published.",
        icon="🔒",
    )
    st.caption(view.caption)
    cards = list(view.cards.items())
    for row in (cards[:3], cards[3:]):
        if row:
            for col, (name, value) in zip(st.columns(3), row):
                col.metric(name, value, border=True)
    for message in view.missing:
        st.info(message)
    for row in view.charts:
        for col, (key, figure) in zip(st.columns(len(row)), row):
            col.plotly_chart(figure, key=key, theme=None)

    if view.table.empty and view.download.empty:
        return
    st.subheader("Leaf table")
    st.caption(view.table_caption)
    st.dataframe(view.table, hide_index=True, height=360)
    release_button(
        odometer.not_private_table("Leaf table", "dpviz_leaves.csv", odometer.TRUE_COUNTS),
        "Download the leaf table (CSV, not private)",
        lambda: csv_text(view.download),
        file_name="dpviz_leaves.csv",
        mime="text/csv",
        key="leaves.download",
    )


main()
