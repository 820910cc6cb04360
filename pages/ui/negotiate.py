"""The Negotiate page's parts: a sweep run on the page, the choice of one curve of the
sweep, and the decision report with its rationale (the candidates: ``pages.ui.candidates``)."""

from __future__ import annotations

import streamlit as st

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as negotiate
from dpviz.app import odometer
from dpviz.app.curves import SweepRun
from dpviz.app.session import AppState
from dpviz.app.support import PreparedData
from dpviz.figures.common import mechanism_label
from dpviz.privacy.risk import EpsilonChoice
from pages.ui.odometer import release_button


def sweep_here(state: AppState, data: PreparedData, K: dict, *, first: bool) -> None:
    """A small default sweep (``negotiate.DEFAULT_SWEEP``) with two knobs (``K``: the
    page's session keys)."""
    d = negotiate.DEFAULT_SWEEP
    st.session_state.setdefault(K["trees"], d.n_estimators[0])
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
        st.caption(negotiate.TREES_NOTE)
        pressed = st.form_submit_button("Run the sweep", type="primary" if first else "secondary")
    if not pressed:
        return
    settings = negotiate.sweep_settings(trees, folds)
    bar = st.progress(0.0, text=f"sweeping {settings.n_configurations:,} configurations")
    try:
        sweep = app_curves.run(data, settings, progress=lambda x, m: bar.progress(min(1.0, x), m))
    except ValueError as exc:
        st.error(str(exc))
        return
    bar.progress(1.0, text=f"done in {sweep.seconds:.1f} s")
    state.set_sweep(sweep)


def pick_curve(sweep: SweepRun, K: dict) -> dict:
    """One DP curve of the sweep: a choice for every dimension with several values
    (``K``: the page's session keys)."""
    choices = negotiate.curve_choices(sweep)
    config = {}
    shown = negotiate.offered_keys(choices)
    for col, key in zip(st.columns(len(shown)), shown):
        if st.session_state.get(K[key]) not in choices[key]:
            st.session_state[K[key]] = choices[key][0]
        config[key] = col.selectbox(
            negotiate.CURVE_LABELS[key],
            choices[key],
            key=K[key],
            format_func=(lambda m: negotiate.mechanism_option(sweep, m))
            if key == "mechanism"
            else str,
        )
    for key in negotiate.CURVE_KEYS:
        config.setdefault(key, choices[key][0])
    return config


def report_download(
    data: PreparedData,
    sweep: SweepRun,
    config: dict,
    choice: EpsilonChoice,
    chosen: float,
    candidates: list[float],
    prior: float,
    K: dict,
) -> None:
    """The rationale, the approvers and the record-count switch (``K``: the page's
    session keys), and the decision report built from them when downloaded."""
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
    file = f"dpviz_decision_epsilon_{chosen:g}.html"
    this_report = odometer.report_release(file, chosen)
    # The releases before this click (the click books the report after this run).
    releases = odometer.report_rows(AppState(st.session_state).odometer, this_report)

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
            releases=releases,
        )

    release_button(
        this_report,
        "Download the decision report (HTML)",
        build,
        file_name=file,
        mime="text/html",
        key="negotiate.report",
        type="primary",
        icon=":material/download:",
        help="One self-contained file that opens without internet: the schema, parameters, "
        "seeds, curves, candidates with their risks, the chosen ε, your rationale and "
        "approvers, the ledger, the session's releases, dpviz's version and the date.",
    )
