"""Audit page: a membership attack on the Train page's configuration over the user's
records (ROC against the ε-DP region, advantage against its bound, beside the
non-private reference) and the whole-release audit of that configuration on a pair
built from the schema, with a progress bar and a Stop button that keeps the bound
over the fits made. Logic: dpviz.app.audit."""

from __future__ import annotations

import streamlit as st

from dpviz.app import audit as app_audit
from dpviz.app.session import AppState
from pages.ui import audit as results
from pages.ui.frame import frame_first

ATTACK_KEY, AUDIT_KEY = "audit.attack_result", "audit.release_result"

frame_first("pages/audit.py")


def settings(data, state: AppState) -> app_audit.AuditConfig:
    """The configuration attacked: the Train page's run on this data, else the defaults;
    ε may be changed here."""
    config = app_audit.configuration(data, state.run)
    if config.source == "the defaults":
        st.info(
            "No model trained on this dataset yet: the attack uses the defaults users get. "
            "Train one on the Train page to attack its settings.",
            icon=":material/info:",
        )
    epsilon = st.number_input(
        "ε to attack",
        min_value=0.001,
        max_value=100.0,
        value=float(config.epsilon),
        step=0.1,
        format="%.3f",
        key="audit.epsilon",
        help="The budget the attacked model is fitted with (from Train by default).",
    )
    config = config.with_epsilon(epsilon)
    st.caption(f"Configuration: {config.label}")
    return config


def attack(data, config: app_audit.AuditConfig) -> None:
    st.subheader("Membership attack on your data")
    if st.button("Run the attack", type="primary", key="audit.attack"):
        bar = st.progress(0.0, text="splitting the records into members and non-members")
        try:
            result = app_audit.run_attack(
                data, config, progress=lambda f, m: bar.progress(min(1.0, f), text=m)
            )
        except ValueError as exc:
            st.error(str(exc))
        else:
            st.session_state[ATTACK_KEY] = (data.fingerprint, config, result)
        bar.empty()
    kept = st.session_state.get(ATTACK_KEY)
    if kept is not None and kept[0] == data.fingerprint:
        if kept[1] != config:
            st.caption("These results are for another configuration: run the attack again.")
        results.show_attack(kept[2])
    else:
        st.caption(app_audit.NOT_PRIVATE)


def release_audit(data, config: app_audit.AuditConfig) -> None:
    st.subheader("Whole-release audit of this configuration")
    subjects = app_audit.audit_subjects(config)
    variant = None
    if len(subjects) > 1:
        variant = st.radio(
            "What the audit fits",
            list(subjects),
            format_func=subjects.get,
            key="audit.subject",
            help="The pair from your schema is too small for DPBoost to grow and has no "
            "macro_f1 threshold (DPBoost's or the forest's): each of those releases has its "
            "own public pair, fitted with the registry defaults (your other parameters do "
            "not apply).",
        )
    st.markdown(app_audit.audit_text(variant, config.algorithm))
    if variant is not None:
        st.caption(
            f"Audited at ε = {app_audit.variant_epsilon(config, variant):g}, registry "
            "defaults, one bound per booked entry it reads."
        )
    runs = int(
        st.number_input(
            "Fits per dataset",
            min_value=20,
            max_value=20_000,
            value=app_audit.default_runs(config, variant),
            step=50,
            key="audit.runs" if variant is None else f"audit.runs.{variant}",
            help="More fits give a sharper bound and take longer (each fit is a whole "
            "release of this configuration).",
        )
    )
    if st.button("Run the audit", key="audit.release"):
        # A click while it runs (Stop or any other) ends the audit at the next fit; the
        # bound over the fits made is kept and shown, marked stopped (see StoppableRun).
        stop = st.empty()
        stop.button("Stop", key="audit.stop", icon=":material/stop_circle:")
        with results.StoppableRun(AUDIT_KEY, "fitting on D and D′") as run:
            found = app_audit.run_release_audit(
                data,
                config,
                runs,
                progress=lambda done, total: run.update(
                    done / total, f"{done:,} of {total:,} fits on each of D and D′"
                ),
                cancel=run.stopped,
                variant=variant,
            )
            run.keep((data.fingerprint, (config, variant), found, runs))
        stop.empty()  # the run is over: nothing left to stop
    kept = results.kept_result(AUDIT_KEY)
    if kept is not None and kept[0] == data.fingerprint:
        if kept[1] != (config, variant):
            st.caption("This audit is of another configuration: run it again.")
        results.show_audit(kept[2], kept[3])


def main() -> None:
    state = AppState(st.session_state)
    data = state.data
    st.title("Audit")
    st.caption(
        "Does the guarantee hold on your data? An attack and an audit that can refute a "
        "privacy claim, never prove it. NOT private: for the data owner's eyes only."
    )
    if data is None:
        st.info("Choose a dataset first.")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/table:")
        return
    config = settings(data, state)
    with st.expander("What the attack can and cannot show", expanded=False):
        st.markdown(app_audit.WHAT_IT_SHOWS)
    attack(data, config)
    release_audit(data, config)


main()
