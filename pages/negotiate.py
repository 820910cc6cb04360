"""Negotiate page: for a privacy officer and a data owner at the same screen. From the
session's sweep (or one run here): the smallest ε within an acceptable loss, candidate ε
values side by side with what each means for a person in the data, the ledger of the
chosen configuration, and a downloadable decision report.
Logic: dpviz.app.negotiate (dpviz.privacy.risk, dpviz.app.report), figures: dpviz.figures.teach."""

from __future__ import annotations

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dpviz.app import negotiate as negotiate
from dpviz.app.curves import SweepRun
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import EpsilonChoice
from pages.ui import candidates as candidates_ui
from pages.ui import negotiate as negotiate_ui
from pages.ui.frame import frame_first

K = {
    n: f"{KEEP_PREFIX}negotiate.{n}"
    for n in ("metric", "loss", "candidates", "prior", "chosen", "trees", "folds")
}
K.update({n: f"{KEEP_PREFIX}negotiate.{n}" for n in ("rationale", "approvers", "disclose")})
K.update({n: f"{KEEP_PREFIX}negotiate.pin.{n}" for n in negotiate.CURVE_KEYS})
# Plain session value: the suggestion the chosen ε last followed (see decision_section).
FOLLOWED = "negotiate.followed"


frame_first("pages/negotiate.py")


def target_section(sweep: SweepRun) -> tuple[dict, str, EpsilonChoice] | None:
    """Curve, metric and acceptable loss → dpviz's smallest ε; returns (config, metric,
    choice)."""
    st.header("1 · How much utility may privacy cost?")
    config = negotiate_ui.pick_curve(sweep, K)
    if not MECHANISMS[config["mechanism"]].private:
        st.badge(f"{config['mechanism']}: NOT DP", color="red", icon=":material/gpp_bad:")
    names = negotiate.metric_choices(sweep)
    if st.session_state.get(K["metric"]) not in names:
        st.session_state[K["metric"]] = "accuracy"
    st.session_state.setdefault(K["loss"], 2.0)
    a, b = st.columns([2, 1])
    metric = a.radio(
        "Metric",
        list(names),
        format_func=names.get,
        key=K["metric"],
        horizontal=True,
        help="Accuracy: share of test records classified right. ROC AUC: chance that a random "
        "positive is scored above a random negative. F1: balance of precision and recall. "
        "Macro F1: the mean of every class's F1, so a rare class counts as much as a common "
        "one.",
    )
    loss = b.number_input(
        "Acceptable loss (points)",
        min_value=0.0,
        max_value=50.0,
        step=0.5,
        key=K["loss"],
        help="How many percentage points below the same forest without privacy you accept; "
        "e.g. 2 means 90% → 88%.",
    )
    try:
        choice = negotiate.suggest(sweep, metric, float(loss), config)
    except ValueError as exc:
        st.error(str(exc))
        return None
    # Green only for a real answer: not beside a model that predicts a single class.
    view = negotiate.suggestion_view(sweep, choice, config)
    (st.success if view.state == "met" else st.warning)(view.text)
    if view.caveat:
        st.warning(view.caveat, icon=":material/warning:")
    st.caption(
        "dpviz takes the **lower** edge of each point's ±1 standard-deviation band (how much "
        "the score varied between folds), so that an unlucky model, not only the average "
        f"one, stays within the loss. Scores are {NOT_PRIVATE_DIAGNOSTICS}: for the people "
        "deciding, not for publication."
    )
    return config, metric, choice


def decision_section(
    state: AppState,
    sweep: SweepRun,
    config: dict,
    choice: EpsilonChoice,
    candidates: list[float],
    prior: float,
    chart: DeltaGenerator,
) -> None:
    """The chosen ε (drawn on the curve in ``chart``), its ledger and the report."""
    st.header("3 · The decision")
    options = negotiate.chosen_options(negotiate.swept_epsilons(sweep, config))
    suggestion = negotiate.preselected(choice)
    # The chosen ε follows dpviz's suggestion (none when no ε meets the target) until the
    # people deciding move it.
    current, followed = st.session_state.get(K["chosen"]), st.session_state.get(FOLLOWED)
    if negotiate.follow_suggestion(current, followed, options, suggestion):
        st.session_state[K["chosen"]] = suggestion
        st.session_state[FOLLOWED] = suggestion
    picked = st.select_slider(
        "Chosen ε (total privacy budget of the released model)",
        options,
        key=K["chosen"],
        format_func=negotiate.epsilon_option,
    )
    with chart:
        st.plotly_chart(
            negotiate.choice_figure(sweep, choice, picked), key="negotiate.curve", theme=None
        )
    if picked is None:
        st.info(negotiate.NO_CHOICE)
        return
    chosen = float(picked)
    ledger = negotiate.ledger_for(sweep, config, chosen)
    st.markdown("**Privacy ledger of the chosen configuration** (what the model spends, where):")
    (st.success if ledger.private else st.error)(ledger.describe())
    st.caption(
        "Parallel composition: trees trained on disjoint records each spend ε, and the model "
        "spends ε in total. Sequential composition: queries on the same records add up."
    )

    negotiate_ui.report_download(state.data, sweep, config, choice, chosen, candidates, prior, K)


def main() -> None:
    state = AppState(st.session_state)
    data = state.data
    st.title("Negotiate ε")
    st.markdown(
        "For a privacy officer and a data owner looking at the same screen. **ε** (epsilon) "
        "is the privacy budget of the released model: the smaller it is, the less the model "
        "can reveal about any one person, and the more noise costs in accuracy."
    )
    if data is None:
        st.info("Choose a dataset first, on the Data page.")
        return
    st.markdown(f"Dataset: **{data.name}**")
    if not data.schema_public:
        st.warning(data.schema_note, icon="⚠️")

    sweep = state.sweep
    if sweep is None:
        notice = st.empty()  # said only until the sweep below has run
        notice.info("There is no sweep in this session yet: run a small one here.")
        negotiate_ui.sweep_here(state, data, K, first=True)
        sweep = state.sweep
        if sweep is None:
            return
        notice.caption(f"Using the sweep just run: {sweep.describe()}.")
    else:
        st.caption(
            f"Using this session's sweep: {sweep.describe()}. Scores are from held-out folds, "
            f"{NOT_PRIVATE_DIAGNOSTICS}."
        )
        with st.expander("Run another sweep here"):
            negotiate_ui.sweep_here(state, data, K, first=False)
            sweep = state.sweep

    negotiation(state, sweep)


@st.fragment
def negotiation(state: AppState, sweep: SweepRun) -> None:
    """Target, candidates and decision on a finished sweep. A fragment: changing the
    curve, the target or the chosen ε reruns this function only, not the page."""
    picked = target_section(sweep)
    if picked is None:
        return
    config, metric, choice = picked
    chart = st.container()  # filled once the chosen ε is known (section 3)
    candidates, prior = candidates_ui.section(sweep, config, metric, choice, K)
    decision_section(state, sweep, config, choice, candidates, prior, chart)


main()
