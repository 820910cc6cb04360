"""The Curves page's "Compare with other DP libraries": the control in the sweep form, the
run after the sweep (a progress bar and a stop button; DP-EBM, the slow one, on its own
bar), the lines on the figure and the table at the ε under discussion.
Logic: dpviz.app.peers; lines: dpviz.figures.peers."""

from __future__ import annotations

import dataclasses

import plotly.graph_objects as go
import streamlit as st

from dpviz.app import peers as app_peers
from dpviz.app.curves import SweepRun, SweepSettings
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS, PreparedData
from dpviz.evaluation.peers import DPEBM_DELTA, delta_text
from dpviz.figures.peers import add_peer_lines

KEY = f"{KEEP_PREFIX}curves.peers"
LABEL = "Compare with other DP libraries (same folds and ε)"
HELP = (
    "diffprivlib's random forest, logistic regression and Gaussian naive Bayes (pure ε-DP, "
    "as dpviz) and DP-EBM ((ε, δ)-DP: a weaker guarantee), each given the schema's public "
    "bounds, fitted on the sweep's folds at each of its ε values. They run after the "
    "sweep, with a stop button; DP-EBM takes about 1–3 s a fit."
)


def control() -> None:
    """The multiselect, inside the sweep form; without the libraries, one line saying how
    to add them instead."""
    note = app_peers.install_note()
    if note:
        st.multiselect(LABEL, [], disabled=True, key="curves.peers.absent", help=HELP)
        st.caption(f"Other DP libraries: {note}.")
        return
    st.session_state.setdefault(KEY, [])
    options = app_peers.options()
    st.multiselect(LABEL, list(options), format_func=options.get, key=KEY, help=HELP)


def chosen() -> tuple[str, ...]:
    """The peers the control holds (none when the libraries are missing)."""
    if app_peers.install_note():
        return ()
    return tuple(p for p in st.session_state.get(KEY, []) if p in app_peers.options())


def complete(state: AppState, data: PreparedData, settings: SweepSettings | None) -> None:
    """Below the sweep's view, so that its curves show while the peers run. On the run
    that swept ``settings``: note the peers asked for on the sweep and run them, then
    rerun to draw their lines. On any other run: offer to finish peers that were stopped."""
    sweep = state.sweep
    if sweep is None or tuple(sweep.fingerprint) != tuple(data.fingerprint):
        return
    if settings is not None and sweep.settings == settings:
        peers = chosen()
        if not peers:  # keep the sweep object: its views (figures, tables) stay cached
            return
        sweep = dataclasses.replace(
            sweep, settings=dataclasses.replace(sweep.settings, peers=peers)
        )
        state.set_sweep(sweep)
        _run(state, data, sweep, list(sweep.settings.peers))
        return
    todo = app_peers.pending(sweep, data.schema)
    if todo:
        names = ", ".join(app_peers.options()[p].split(" — ")[0] for p in todo)
        slot = st.empty()  # the note goes once they run
        with slot.container():
            st.info(f"The other libraries' lines did not finish (stopped): {names}.")
            pressed = st.button("Run them now", key="curves.peers.resume")
        if pressed:
            slot.empty()
            _run(state, data, sweep, todo)


def _run(state: AppState, data: PreparedData, sweep: SweepRun, peers: list[str]) -> None:
    """The quick peers, then the slow ones, each with a progress bar and a stop button;
    each group's lines are kept as soon as it finishes."""
    for group in app_peers.split_slow(peers):
        if not group:
            continue
        fits = len(group) * sweep.settings.folds * len(sweep.settings.epsilons)
        bar = st.progress(0.0, text=f"other libraries: {fits:,} fits on the sweep's folds")
        stop = st.empty()
        # Pressing it reruns the page, which stops this run at its next progress update;
        # the lines finished before stay.
        stop.button("Stop the other libraries", key=f"curves.peers.stop.{group[0]}")
        try:
            sweep, notes = app_peers.with_peers(
                sweep,
                data,
                group,
                progress=lambda x, m, bar=bar: bar.progress(min(1.0, x), text=m),
            )
        except (ValueError, ImportError) as exc:
            stop.empty()
            st.error(str(exc))
            return
        stop.empty()
        bar.progress(1.0, text=f"other libraries: {fits:,} fits done")
        state.set_sweep(sweep)
        for note in notes:
            st.info(note)
    if not any(p in app_peers.present(sweep) for p in peers):
        return  # nothing new to draw (DP-EBM on more than two classes)
    st.rerun()  # the figure above was drawn before their lines existed


def draw(fig: go.Figure, sweep: SweepRun, metric: str, x: str) -> go.Figure:
    """The peers' lines on the Curves figure (against ε only)."""
    return add_peer_lines(fig, sweep.summary, metric, x)


def table(sweep: SweepRun, epsilon: float, metric: str) -> None:
    """The peers at the ε under discussion, with the guarantee each library claims."""
    frame = app_peers.table(sweep, [epsilon], metric)
    if frame.empty:
        return
    st.markdown(f"**Other DP libraries at ε = {epsilon:g}** (the same folds)")
    st.dataframe(frame, hide_index=True, width="stretch")
    st.caption(
        "diffprivlib's models are pure ε-DP, as dpviz's; DP-EBM is (ε, δ)-DP with δ = "
        f"{delta_text(DPEBM_DELTA)}, a weaker guarantee, so its line is not an equal-ε "
        "comparison. Each had the schema's public bounds; their noise comes from their "
        "libraries' own generators (these fold models are never released). Scores are "
        f"{NOT_PRIVATE_DIAGNOSTICS}."
    )
