"""The Audit page's results: the attack's verdict, ROC chart and table, the whole-release
audit's verdict, and the progress bar a click can stop. Every number shown is labelled
NOT private (diagnostics, not releases)."""

from __future__ import annotations

import threading
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import RerunException, StopException

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
    parts = app_audit.audit_parts_table(result)
    if len(parts):
        st.dataframe(parts, hide_index=True)
    st.caption(f"It read {result.reads}; {best}. {result.seconds:.1f} s.")


class StoppableRun:
    """A long run with a progress bar that a click (Stop, or any other widget) ends at
    its next step, keeping the result over the steps made in ``st.session_state[key]``.

    Streamlit turns a click made while the script runs into a new run. By default
    (``runner.fastReruns``) it starts that run at once in a new thread and asks the old
    one to stop: the old script sees a ``StopException`` at its next ``st.*`` call, and
    from then on at every one, session-state writes included. Without fast reruns (and
    in AppTest) the old script sees a ``RerunException`` instead and the new run follows
    it. Either way the exception surfaces at the bar's update: ``update`` keeps it, so
    ``stopped`` (the engine's ``cancel``) answers True and the engine returns its
    result over the steps made; ``keep`` stores that result in this object, which is
    already in the session state (a plain attribute: no ``st.*`` call that would raise
    again), and leaving the block re-raises the exception. The click's run reads the
    result with :func:`kept_result`, waiting for the old run to keep it.

    Use as ``with StoppableRun(key, text) as run: run.keep(engine(progress=run.update,
    cancel=run.stopped))``. A ``ValueError`` from the block is shown as a one-line error.
    """

    def __init__(self, key: str, text: str) -> None:
        # Until this run keeps its own, the last run's result stays (also on a ValueError).
        self.result: Any = kept_result(key)
        self.done = threading.Event()  # set once the run kept its result, or failed
        self._interrupt: BaseException | None = None
        self._bar = st.progress(0.0, text=text)
        st.session_state[key] = self  # last: raises (a click) before writing, or not at all

    def __enter__(self) -> StoppableRun:
        return self

    def update(self, fraction: float, text: str) -> None:
        """Move the bar; a click since the last update stops the run."""
        if self._interrupt is not None:
            return
        try:
            self._bar.progress(min(1.0, fraction), text=text)
        except (RerunException, StopException) as exc:
            self._interrupt = exc

    def stopped(self) -> bool:
        """True once a click asked to stop (the engine's ``cancel``)."""
        return self._interrupt is not None

    def keep(self, result: Any) -> None:
        """The run's result, shown by :func:`kept_result` (on this run and the next)."""
        self.result = result

    def __exit__(self, kind, error, trace) -> bool:
        self.done.set()
        if self._interrupt is not None:
            raise self._interrupt  # let the click's run proceed: it shows the result
        self._bar.empty()
        if isinstance(error, ValueError):
            st.error(str(error))
            return True
        return False


def kept_result(key: str) -> Any:
    """The result the last :class:`StoppableRun` of ``key`` kept (None if none); when a
    click stopped that run and started this one, wait for it to keep its result (it
    stops at its next step)."""
    run = st.session_state.get(key)
    if not isinstance(run, StoppableRun):
        return None
    if not run.done.is_set():
        slot = st.empty()
        # Each call below lets another click interrupt this wait (as any st.* call).
        while not run.done.wait(0.2):
            slot.info("Stopping at the next fit…", icon=":material/hourglass_top:")
        slot.empty()
    return run.result
