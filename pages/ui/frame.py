"""The frame every page needs first: app.py's navigation and sidebar."""

from __future__ import annotations

import streamlit as st

from dpviz.app.session import DATA_PARAM, AppState


def frame_first(page: str) -> None:
    """Opened before app.py ran in this session (a fresh server's first deep link, as
    after a restart): let app.py draw its frame first; it comes back to ``page``. The
    address's data mark goes along, since switching pages clears the address."""
    if AppState(st.session_state).needs_frame(page, st.query_params.get(DATA_PARAM)):
        st.switch_page("app.py")
