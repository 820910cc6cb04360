"""The Audit page's results: the attack's verdict, ROC chart and table, the whole-release
audit's verdict, and the progress bar a click can stop. Every number shown is labelled
NOT private (diagnostics, not releases)."""

from __future__ import annotations

from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import RerunException

from dpviz.app import audit as app_audit
from dpviz.evaluation.attack import AttackResult
from dpviz.evaluation.release_audit import ReleaseAuditResult
from dpviz.figures.attack import roc_figure

_SAY = {"ok": st.success, "warning": st.warning, "error": st.error}


def show_attack(result: AttackResult) -> None:
    """The attack's verdict, its ROC chart against the ε-DP region and its numbers."""
    level, text = app_audit.attack_verdict(result)
    _SAY[level](text)
    st.plotly_chart(roc_figure(result), key="audit.roc", theme=None)
    st.dataframe(app_audit.attack_table(result), hide_index=True)
    st.caption(
        f"{app_audit.NOT_PRIVATE} {result.n_records:,} records, {result.n_members:,} members "
        f"(public seed {result.random_state}); held-out test on "
        f"{result.dp.heldout_members:,} members and {result.dp.heldout_nonmembers:,} "
        f"non-members. The attack reads {result.dp.reads}. {result.seconds:.1f} s."
    )


def show_audit(result: ReleaseAuditResult, asked: int | None = None) -> None:
    """The whole-release audit's verdict (of ``asked`` fits per dataset, when it was
    stopped) and what it read."""
    level, text = app_audit.audit_verdict(result, asked)
    _SAY[level](text)
    best = (
        "no event separated D from D′"
        if result.event == "none"
        else f"the best event was {result.event} ({result.hits_d} of {result.n_runs} fits "
        f"on D, {result.hits_d_prime} on D′)"
    )
    st.caption(f"It read {result.reads}; {best}. {result.seconds:.1f} s.")


class StoppableProgress:
    """A progress bar for a long run that a click (Stop, or any other widget) ends at the
    next step, keeping what was done.

    Streamlit delivers a click made while the script runs as a rerun request, which the
    running script sees as a ``RerunException`` at its next ``st.*`` call: here, the bar's
    update. ``update`` keeps that exception instead of letting it end the run, so
    ``stopped`` answers True and the engine polling it returns its result over the steps
    made; ``keep`` stores that result, and ``resume`` raises the kept exception again so
    that the click's rerun proceeds (with the widget states the browser sent) and draws
    the kept result.
    """

    def __init__(self, text: str) -> None:
        self._bar = st.progress(0.0, text=text)
        self._interrupt: RerunException | None = None

    def update(self, fraction: float, text: str) -> None:
        """Move the bar; a click since the last update stops the run."""
        if self._interrupt is not None:
            return
        try:
            self._bar.progress(min(1.0, fraction), text=text)
        except RerunException as exc:
            self._interrupt = exc

    def stopped(self) -> bool:
        """True once a click asked to stop (the engine's ``cancel``)."""
        return self._interrupt is not None

    def keep(self, key: str, value: Any) -> None:
        """``st.session_state[key] = value``, even when a click arrives just now."""
        try:
            st.session_state[key] = value
        except RerunException as exc:
            # Raised before the write; the request is now taken, so this write goes through.
            self._interrupt = exc
            st.session_state[key] = value

    def resume(self) -> None:
        """Clear the bar, then let a click that stopped the run rerun the page."""
        try:
            self._bar.empty()
        except RerunException as exc:
            self._interrupt = exc
        if self._interrupt is not None:
            raise self._interrupt
