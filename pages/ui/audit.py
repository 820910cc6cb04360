"""The Audit page's results: the attack's verdict, ROC chart and table, the whole-release
audit's verdict. Every number shown is labelled NOT private (diagnostics, not releases)."""

from __future__ import annotations

import streamlit as st

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


def show_audit(result: ReleaseAuditResult) -> None:
    """The whole-release audit's verdict and what it read."""
    level, text = app_audit.audit_verdict(result)
    _SAY[level](text)
    best = (
        "no event separated D from D′"
        if result.event == "none"
        else f"the best event was {result.event} ({result.hits_d} of {result.n_runs} fits "
        f"on D, {result.hits_d_prime} on D′)"
    )
    st.caption(f"It read {result.reads}; {best}. {result.seconds:.1f} s.")
