"""dpviz: see what differential privacy costs a random forest. Run ``streamlit run app.py``.

The entry point: the Home page, the navigation to the pages in ``pages/`` and the
sidebar summary shown on every page. Thin by design: widgets → one ``dpviz`` call →
render; every computation and figure lives in ``dpviz`` and is unit-tested there.
"""

from __future__ import annotations

import streamlit as st

from dpviz.app import support as support
from dpviz.app.session import DATA_PARAM, AppState, kept_widget_keys
from dpviz.app.sweep import warm_up
from dpviz.evaluation.demos import DEFAULT_DEMO
from pages.ui import odometer as odometer_ui

st.set_page_config(page_title="dpviz — what privacy costs a random forest", layout="wide")
warm_up()  # the compiled routing kernels load in the background, once per process

# Keep the values of widgets on other pages (Streamlit drops a widget's state once a run
# does not draw it; re-assigning the key is its documented way to keep it).
for key in kept_widget_keys(st.session_state):
    st.session_state[key] = st.session_state[key]

# Demo datasets are public, so one cached copy may serve every session. Nothing built
# from a user's upload is ever cached: it lives in that session's state only.
demo = st.cache_data(show_spinner="Loading the demo dataset…")(support.prepare_demo)

state = AppState(st.session_state)
wanted = state.mark_frame()
if state.data is None:
    state.start(demo(DEFAULT_DEMO), st.query_params.get(DATA_PARAM))

DATA = st.Page("pages/data.py", title="Data", icon=":material/table:")
TRAIN = st.Page("pages/train.py", title="Train", icon=":material/model_training:")
TREES = st.Page("pages/trees.py", title="Trees", icon=":material/account_tree:")
LEAVES = st.Page("pages/leaves.py", title="Leaves", icon=":material/eco:")
CURVES = st.Page("pages/curves.py", title="Curves", icon=":material/show_chart:")
TEACH = st.Page("pages/teach.py", title="Teach", icon=":material/school:")
NEGOTIATE = st.Page("pages/negotiate.py", title="Negotiate", icon=":material/handshake:")
AUDIT = st.Page("pages/audit.py", title="Audit", icon=":material/policy:")


def home() -> None:
    st.title("What does privacy cost a random forest?")
    st.markdown(
        "dpviz trains **ε-differentially private random decision forests** (Fletcher & "
        "Islam 2017, with the 2021 correction) on a CSV of your own or on a bundled demo. "
        "It shows what an outsider can see of the released model and what only the data "
        "owner sees: the trees, each leaf's counts and how often the noise flipped its "
        "label. And it measures accuracy, AUC and F1 against ε beside the same forest "
        "without privacy, so that you can choose an ε knowing what it costs."
    )
    st.subheader("Three ways to use it")
    train, teach, negotiate = st.columns(3, border=True)
    with train:
        st.markdown("**Train on my data**")
        st.caption(
            "Upload a CSV (with a public schema), train an ε-DP forest, check its scores "
            "and download the released model."
        )
        st.page_link(DATA, label="1 · Choose the data", icon=":material/table:")
        st.page_link(TRAIN, label="2 · Train", icon=":material/model_training:")
    with teach:
        st.markdown("**Teach**")
        st.caption(
            "Show how a leaf mechanism turns class counts into a noisy label, why small "
            "gaps flip and why the 2017 mechanism is not private."
        )
        st.page_link(
            TEACH, label="Mechanisms, the audit, a tree growing", icon=":material/school:"
        )
        st.page_link(LEAVES, label="Leaves and mechanisms", icon=":material/eco:")
        st.page_link(TREES, label="Inside the trees", icon=":material/account_tree:")
    with negotiate:
        st.markdown("**Negotiate ε**")
        st.caption(
            "Put accuracy / AUC / F1 against ε on one chart, with the guarantee and the "
            "risk of each candidate ε spelled out."
        )
        st.page_link(CURVES, label="Privacy–utility curves", icon=":material/show_chart:")
        st.page_link(NEGOTIATE, label="Choose ε together", icon=":material/handshake:")
    with st.expander("The privacy model in five lines"):
        st.markdown(
            "- Neighbouring datasets differ by adding or removing one record; pure ε-DP.\n"
            "- The schema (label, classes, feature domains) must be public knowledge. "
            "Inferred from the data, it voids the guarantee, and dpviz says so.\n"
            "- The tree structure is drawn from a public seed and, by default, from noisy "
            "per-class tables of the features (booked in the ledger); each leaf releases "
            "one output through a mechanism. `smooth_em` (2017) and `none` are "
            "**NOT DP**.\n"
            "- Diagnostics (true counts, gap j, flips, test metrics) read the raw data: "
            "they are for the data owner and are not private.\n"
            "- The guarantee shown is computed from a privacy ledger, never typed by hand."
        )


page = st.navigation(
    {
        "dpviz": [st.Page(home, title="Home", icon=":material/home:", default=True)],
        "Work": [DATA, TRAIN, TREES, LEAVES, CURVES, TEACH, NEGOTIATE, AUDIT],
    }
)
if wanted:  # a page opened before this frame existed: show it now
    st.switch_page(wanted)
summary = st.sidebar.container()
if state.lost_upload:
    st.warning(state.lost_upload, icon=":material/cloud_off:")
page.run()
# The address remembers where the data came from, so that a new session can tell the
# user their upload was lost (never the file's name or content).
if state.data_param is not None and st.query_params.get(DATA_PARAM) != state.data_param:
    st.query_params[DATA_PARAM] = state.data_param
# Drawn after the page ran, so it already shows what this run trained or loaded (pages
# return early instead of calling st.stop(), so this line is always reached).
with summary:
    st.markdown("### Current session")
    for line in state.summary():
        st.caption(line)
    odometer_ui.sidebar(state)
