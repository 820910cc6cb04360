"""Negotiate page: for a privacy officer and a data owner at the same screen. From the
session's sweep (or one run here): the smallest ε within an acceptable loss, candidate ε
values side by side with what each means for a person in the data, the ledger of the
chosen configuration, and a downloadable decision report.
Logic: dpviz.app.negotiate (dpviz.privacy.risk, dpviz.app.report), figures: dpviz.figures.teach."""

from __future__ import annotations

import dataclasses

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as negotiate
from dpviz.app.curves import SweepRun
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS, PreparedData
from dpviz.figures.common import METRICS, mechanism_label
from dpviz.figures.teach import hypothesis_testing_figure
from dpviz.models.sizing import SIZE_NOTE, suggest_trees
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import EpsilonChoice

K = {
    n: f"{KEEP_PREFIX}negotiate.{n}"
    for n in ("metric", "loss", "candidates", "prior", "chosen", "trees", "folds")
}
K.update({n: f"{KEEP_PREFIX}negotiate.{n}" for n in ("rationale", "approvers", "disclose")})
K.update({n: f"{KEEP_PREFIX}negotiate.pin.{n}" for n in negotiate.CURVE_KEYS})
# Plain session value: the suggestion the chosen ε last followed (see decision_section).
FOLLOWED = "negotiate.followed"
PRIORS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9)
PIN_LABELS = {
    "mechanism": "Mechanism",
    "n_estimators": "Trees",
    "depth_rule": "Depth rule",
    "data_split": "Data per tree",
}


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/negotiate.py"):
    st.switch_page("app.py")


def sweep_here(state: AppState, data: PreparedData, *, first: bool) -> None:
    """A small default sweep (``negotiate.DEFAULT_SWEEP``) with two knobs."""
    d = negotiate.DEFAULT_SWEEP
    # The same tree count the Train page suggests for this data, so that the ε agreed on
    # here is for the model trained there.
    suggestion = suggest_trees(len(data.frame))
    st.session_state.setdefault(K["trees"], suggestion.n_estimators)
    st.session_state.setdefault(K["folds"], d.folds)
    with st.form("negotiate.sweep"):
        st.markdown(
            f"**{'Run a sweep' if first else 'Run another sweep'}**: the DP forest "
            f"({mechanism_label(d.mechanisms[0], data.schema_public)}) at ε from {d.eps_low:g} "
            f"to {d.eps_high:g}, "
            "and the same forest without privacy as the reference, cross-validated on the "
            "same folds (the Curves page offers every option)."
        )
        a, b = st.columns(2)
        trees = a.selectbox("Trees", app_curves.TREE_CHOICES, key=K["trees"])
        folds = b.number_input("Cross-validation folds", 2, 10, key=K["folds"])
        st.caption(
            f"Suggested: {suggestion.n_estimators} trees ({suggestion.reason}). {SIZE_NOTE}"
        )
        pressed = st.form_submit_button("Run the sweep", type="primary" if first else "secondary")
    if not pressed:
        return
    settings = dataclasses.replace(d, n_estimators=(int(trees),), folds=int(folds))
    bar = st.progress(0.0, text=f"sweeping {settings.n_configurations:,} configurations")
    try:
        sweep = app_curves.run(data, settings, progress=lambda x, m: bar.progress(min(1.0, x), m))
    except ValueError as exc:
        st.error(str(exc))
        return
    bar.progress(1.0, text=f"done in {sweep.seconds:.1f} s")
    state.set_sweep(sweep)


def pick_curve(sweep: SweepRun) -> dict:
    """One DP curve of the sweep: a choice for every dimension with several values."""
    choices = negotiate.curve_choices(sweep)
    config = {}
    shown = [k for k in negotiate.CURVE_KEYS if k == "mechanism" or len(choices[k]) > 1]
    for col, key in zip(st.columns(len(shown)), shown):
        if st.session_state.get(K[key]) not in choices[key]:
            st.session_state[K[key]] = choices[key][0]
        config[key] = col.selectbox(
            PIN_LABELS[key],
            choices[key],
            key=K[key],
            format_func=(lambda m: negotiate.mechanism_option(sweep, m))
            if key == "mechanism"
            else str,
        )
    for key in negotiate.CURVE_KEYS:
        config.setdefault(key, choices[key][0])
    return config


def target_section(sweep: SweepRun) -> tuple[dict, str, EpsilonChoice] | None:
    """Curve, metric and acceptable loss → dpviz's smallest ε; returns (config, metric,
    choice)."""
    st.header("1 · How much utility may privacy cost?")
    config = pick_curve(sweep)
    if not MECHANISMS[config["mechanism"]].private:
        st.badge(f"{config['mechanism']}: NOT DP", color="red", icon=":material/gpp_bad:")
    st.session_state.setdefault(K["metric"], "accuracy")
    st.session_state.setdefault(K["loss"], 2.0)
    names = dict(METRICS)
    a, b = st.columns([2, 1])
    metric = a.radio(
        "Metric",
        list(names),
        format_func=names.get,
        key=K["metric"],
        horizontal=True,
        help="Accuracy: share of test records classified right. ROC AUC: chance that a random "
        "positive is scored above a random negative. F1: balance of precision and recall.",
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
    if choice.epsilon is not None:
        st.success(f"**Smallest ε that meets it: {choice.epsilon:g}.** {choice.reason}")
    else:
        st.warning(choice.reason)
    trivial = negotiate.suggestion_warning(sweep, choice, config)
    if trivial:
        st.warning(trivial, icon=":material/warning:")
    st.caption(
        "dpviz takes the **lower** edge of each point's ±1 standard-deviation band (how much "
        "the score varied between folds), so that an unlucky model, not only the average "
        f"one, stays within the loss. Scores are {NOT_PRIVATE_DIAGNOSTICS}: for the people "
        "deciding, not for publication."
    )
    return config, metric, choice


def candidates_section(
    sweep: SweepRun, config: dict, metric: str, choice: EpsilonChoice
) -> tuple[list[float], float]:
    """2–3 candidate ε side by side; returns (candidates, prior)."""
    st.header("2 · What each candidate ε means for a person in the data")
    epsilons = negotiate.swept_epsilons(sweep, config)
    current = st.session_state.get(K["candidates"])
    if not current or not set(current) <= set(epsilons):
        st.session_state[K["candidates"]] = negotiate.default_candidates(epsilons, choice.epsilon)
    st.session_state.setdefault(K["prior"], 0.5)
    a, b = st.columns([3, 2])
    candidates = a.multiselect(
        "Candidate ε values (up to 3)",
        epsilons,
        key=K["candidates"],
        max_selections=negotiate.MAX_CANDIDATES,
        format_func=lambda v: f"ε = {v:g}",
    )
    prior = b.select_slider(
        "Attacker's prior belief p",
        PRIORS,
        key=K["prior"],
        format_func=lambda v: f"{100 * v:g}%",
        help="How sure an attacker is, before seeing the model, that a given person is in "
        "the data (50% = a coin flip; 1% = one in a hundred).",
    )
    if not candidates:
        st.info("Choose at least one candidate ε to compare.")
        return [], float(prior)
    note = negotiate.guarantee_note(sweep, config)
    if note:
        st.badge("NOT DP", color="red", icon=":material/gpp_bad:")
        st.error(note)
    try:
        cards = negotiate.compare(sweep, candidates, float(prior), metric, config)
    except ValueError as exc:
        st.error(str(exc))
        return list(candidates), float(prior)
    metric_name = dict(METRICS)[metric]
    for col, card in zip(st.columns(len(cards), border=True), cards):
        with col:
            st.subheader(f"ε = {card.epsilon:g}")
            st.metric(
                f"{metric_name} (NOT private)",
                card.utility,
                delta=None if card.versus_reference == "—" else card.versus_reference,
                delta_color="red" if card.no_better_than_majority else "normal",
                help="Mean ± standard deviation over the held-out folds; the change is against "
                "the same forest without privacy.",
            )
            if card.majority:
                st.markdown(
                    f"Always the majority class: **{card.majority}** "
                    f"(this ε: {card.versus_majority})",
                    help="The trivial baseline: always answering the training folds' majority "
                    "class, scored on the same held-out folds. A model must beat it to have "
                    "learnt anything.",
                )
            if card.one_class:
                st.warning(card.one_class, icon=":material/warning:")
            if not card.private:
                st.markdown(":red-badge[NOT DP] no risk bound applies.")
                continue
            for key, label in negotiate.RISK_LABELS.items():
                # Number and formula on one line, the plain sentence under it.
                st.markdown(
                    f"{label}: **{card.numbers[key]}**",
                    help=negotiate.RISK_HELP[key],
                )
                st.caption(card.sentences[key])
    if note is None:
        st.plotly_chart(
            hypothesis_testing_figure([c.epsilon for c in cards]),
            key="negotiate.region",
            theme=None,
        )
        st.caption(
            "Hypothesis-testing region: an attacker guessing whether one person is in the data "
            "makes two kinds of error (false positive: says 'in' about someone who is not; "
            "false negative: says 'out' about someone who is). No attack, however clever, "
            "gets below its ε's line."
        )
    return list(candidates), float(prior)


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
    if (
        st.session_state.get(K["chosen"]) not in options
        or st.session_state.get(FOLLOWED) != suggestion
    ):
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

    st.session_state.setdefault(K["rationale"], "")
    st.session_state.setdefault(K["approvers"], "")
    st.session_state.setdefault(K["disclose"], False)
    rationale = st.text_area(
        "Rationale",
        key=K["rationale"],
        placeholder="Why this ε: the loss accepted, who the data is about, who sees the model…",
    )
    approvers = st.text_input(
        "Approved by", key=K["approvers"], placeholder="Names and roles, e.g. privacy officer"
    )
    disclose = st.checkbox(
        "The record count may be disclosed",
        key=K["disclose"],
        help="The number of records is itself a fact about the data; unticked, the report "
        "leaves it out (and out of the dataset's name).",
    )
    data = state.data

    def build() -> str:
        # Deferred: the 4 MB report (plotly.js inlined) is built only when clicked.
        return negotiate.report_html(
            sweep,
            data.schema,
            config=config,
            choice=choice,
            chosen=chosen,
            candidates=candidates,
            prior=prior,
            rationale=rationale,
            approvers=approvers,
            disclose_record_count=disclose,
        )

    st.download_button(
        "Download the decision report (HTML)",
        build,
        file_name=f"dpviz_decision_epsilon_{chosen:g}.html",
        mime="text/html",
        key="negotiate.report",
        type="primary",
        icon=":material/download:",
        help="One self-contained file that opens without internet: the schema, parameters, "
        "seeds, curves, candidates with their risks, the chosen ε, your rationale and "
        "approvers, the ledger, dpviz's version and the date.",
    )


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
        sweep_here(state, data, first=True)
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
            sweep_here(state, data, first=False)
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
    candidates, prior = candidates_section(sweep, config, metric, choice)
    decision_section(state, sweep, config, choice, candidates, prior, chart)


main()
