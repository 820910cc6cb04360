"""The ε odometer in Streamlit: download buttons that book their release, the budget's
confirmation, and the sidebar (logic: dpviz.app.odometer, dpviz.privacy.session_ledger)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from dpviz.app import odometer
from dpviz.app.session import AppState
from dpviz.app.support import PreparedData
from dpviz.privacy.session_ledger import Release

BOOKED_KEY = "odometer.booked"


def _book(release: Release, confirm_key: str) -> None:
    """on_click of a release's download button: book it, and ask again next time."""
    state = AppState(st.session_state)
    state.book(release)
    if confirm_key in st.session_state:
        st.session_state[confirm_key] = False  # unticked on screen too
    st.session_state[BOOKED_KEY] = True
    total = state.odometer.epsilon
    st.toast(
        f"Released {release.file}: session ε = {float(total):g}."
        if total is not None
        else f"Released {release.file}: the session has NO guarantee now.",
        icon=":material/speed:",
    )


def _refresh_sidebar() -> None:
    """A click inside a fragment reruns the fragment alone, not the sidebar that app.py
    draws: rerun the whole app once so that the odometer shows the new total."""
    if not st.session_state.pop(BOOKED_KEY, False):
        return
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:  # a fragment-only run
        st.rerun(scope="app")


def release_button(release: Release, label: str, data: Any, *, key: str, **kwargs) -> None:
    """``st.download_button`` whose click books ``release`` in the dataset's odometer.
    When a budget is set and the release would pass it, the button stays disabled until
    the data owner ticks a confirmation."""
    _refresh_sidebar()
    ledger = AppState(st.session_state).odometer
    confirm_key = f"{key}.confirm"
    allowed = True
    if ledger.passes_budget(release):
        st.warning(odometer.confirm_text(ledger, release), icon=":material/speed:")
        allowed = st.checkbox("Release it anyway", key=confirm_key)
    st.download_button(
        label,
        data,
        key=key,
        disabled=not allowed,
        on_click=_book,
        args=(release, confirm_key),
        **kwargs,
    )


def schema_button(data: PreparedData) -> None:
    """The Data page's schema download: public input when declared (ε = 0), a NOT
    private release when the schema was inferred from the records."""
    file = f"{data.name.split()[0].removesuffix('.csv')}.schema.json"
    release_button(
        odometer.schema_release(data.schema, file),
        "Download the schema JSON",
        data.schema.to_json(),
        file_name=file,
        mime="application/json",
        key="data.schema_download",
    )


def _set_budget(key: str) -> None:
    value = st.session_state.get(key)
    AppState(st.session_state).odometer.set_budget(None if not value else float(value))


def sidebar(state: AppState) -> None:
    """The ε odometer: the total against the budget, the releases, the session ledger."""
    st.session_state.pop(BOOKED_KEY, None)  # a full run: this sidebar is up to date
    ledger = state.odometer
    st.markdown("### ε odometer")
    st.caption(f"Files released from **{ledger.dataset or 'no dataset'}** in this session.")
    total = ledger.epsilon
    if ledger.releases and total is None:
        st.error(ledger.total_text(), icon=":material/no_encryption:")
    else:
        st.markdown(ledger.total_text())
    key = f"odometer.budget.{state.odometer_index()}"
    st.number_input(
        "Budget ε for this dataset",
        min_value=0.01,
        value=ledger.budget,
        step=0.5,
        format="%g",
        key=key,
        help=odometer.BUDGET_HELP,
        placeholder="no budget",
        on_change=_set_budget,
        args=(key,),
    )
    fraction = odometer.budget_fraction(ledger)
    if fraction is not None:
        st.progress(fraction)
    st.caption(odometer.budget_text(ledger))
    with st.expander(f"Releases ({len(ledger.releases)})"):
        for line in odometer.release_lines(ledger) or ["None yet."]:
            st.caption(line)
        st.download_button(
            "Download the session ledger (JSON)",
            ledger.to_json(),
            file_name="dpviz_session_ledger.json",
            mime="application/json",
            key="odometer.ledger_download",
            on_click="ignore",
            help="Every release above with its ledger and the exact total. It holds only "
            "the ledgers' words and public names, so it releases nothing itself.",
        )
    st.caption(odometer.NOT_RELEASES)
