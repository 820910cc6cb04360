"""The Train page's results: the run's caption and privacy, the score cards beside the
references and the trivial baseline, the scores chart and the downloads."""

from __future__ import annotations

import streamlit as st

from dpviz.app import odometer
from dpviz.app import train as app_train
from dpviz.app.session import AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from pages.ui.odometer import release_button


def floor_notice(floor) -> None:
    """The released model's floor decision (a ``FloorOutcome`` or None): a caption when
    the trees passed, a warning when the model answers its fall-back. Public: the test
    reads only the release, so it may be shown and exported."""
    if floor is None:
        return
    text = "**Floor of the released model.** " + floor.describe()
    if floor.trusted:
        st.caption(text)
    else:
        st.warning(text, icon=":material/vertical_align_bottom:")


def show(run: app_train.TrainRun) -> None:
    """Everything the page shows of a finished run."""
    st.header(f"Results · {run.dataset}")
    st.caption(app_train.run_caption(run))
    if run.sample_note:
        st.info(run.sample_note, icon=":material/info:")
    (st.success if run.private else st.error)(
        "**Privacy of the released model.** " + run.privacy_summary
    )
    floor_notice(run.floor)
    if run.decision:
        st.caption(run.decision)
    st.markdown(
        f"**Scores on held-out folds** (mean ± 1 std) — {NOT_PRIVATE_DIAGNOSTICS}: publishing "
        "them is not covered by ε."
    )
    warning = run.one_class_warning()
    if warning:
        st.warning(warning, icon=":material/warning:")
    floor_note = run.floor_folds_note()
    if floor_note:
        st.caption(floor_note)
    note = run.rare_class_note()
    if note:
        st.caption(note)
    metrics = run.card_metrics()
    for col, (metric, label) in zip(st.columns(len(metrics)), metrics):
        card = run.metric_card(metric)
        col.metric(
            f"{label} · {run.model_label}",
            card.value,
            card.delta,
            delta_color=card.color,
            delta_description=card.description,
            border=True,
        )
        for series in run.series[1:]:
            col.metric(f"{label} · {run.series_name(series)}", run.metric_text(series, metric)[0])
        baseline = run.majority_card(metric)
        if baseline is None:
            continue
        col.metric(
            f"{label} · {app_train.MAJORITY_NAME}",
            baseline.value,
            baseline.delta,
            delta_color=baseline.color,
            help="Always answering the training folds' majority class, scored on the same "
            "held-out folds. A model must beat it to have learnt anything; the change is "
            "how far the model is above it.",
        )
    st.plotly_chart(run.scores_figure(), key="train.scores", theme=None)

    st.subheader("Downloads")
    st.caption(
        "Each download is a release, counted in the sidebar's ε odometer. " + odometer.NOT_RELEASES
    )
    state = AppState(st.session_state)
    model_col, metrics_col = st.columns(2)
    with model_col:
        if run.export_problem:
            st.warning(run.export_problem)
        else:
            release_button(
                odometer.run_release(run, state.lineage),
                "Download the released model (JSON)",
                lambda: run.model_json,
                file_name=f"dpviz_{run.settings.algorithm}.json",
                mime="application/json",
                key="train.model_download",
                help="The tree structure, the released (noisy) leaf outputs and the public "
                "schema you declared (class names, feature ranges, discrete values): no "
                "records, no true counts. `python -m dpviz predict --model` reads it.",
            )
    with metrics_col:
        release_button(
            odometer.not_private_table(
                "Metrics of the folds", "dpviz_metrics.csv", odometer.HELD_OUT
            ),
            "Download the metrics (CSV)",
            run.metrics_csv(),
            file_name="dpviz_metrics.csv",
            mime="text/csv",
            key="train.metrics_download",
            help="Scores on held-out folds, computed from the records without noise: NOT "
            "private, so the odometer books it as a release no ε covers.",
        )
    if not run.export_problem and odometer.can_relabel(run.model):
        relabel_section(state, run)
    for message in run.encoding_messages:
        st.caption(f"Data preparation: {message}")


def relabel_section(state: AppState, run: app_train.TrainRun) -> None:
    """Release the model's leaves again at another ε with fresh noise, and download it."""
    with st.expander("Relabel: release the leaves again at another ε (fresh noise)"):
        st.caption(
            "Keeps the trees and draws every leaf's output again with fresh noise. The "
            "first release is not taken back: the relabelled file's ledger adds both, and "
            "so does the odometer once both are downloaded."
        )
        eps = st.number_input(
            "Model ε of the new release",
            min_value=app_train.EPSILON_MIN,
            max_value=app_train.EPSILON_MAX,
            value=float(run.settings.epsilon),
            format="%.3f",
            key="train.relabel_eps",
            help="As for a fresh training at this ε: its leaves get this ε less what the "
            "trees' structure already spent (the noisy count and split tables, not spent "
            "again). The file's ledger shows the total.",
        )
        if st.button("Relabel with fresh noise", key="train.relabel"):
            latest = state.relabels[-1].model if state.relabels else run.model
            try:
                done = odometer.relabel(
                    latest, run.settings.algorithm, eps, state.lineage, len(state.relabels) + 1
                )
            except ValueError as exc:
                st.error(str(exc))
            else:
                state.add_relabel(done)
        if not state.relabels:
            return
        latest = state.relabels[-1]
        (st.success if latest.model.ledger_.private else st.error)(latest.summary)
        release_button(
            latest.release,
            f"Download relabel {latest.number} (JSON)",
            lambda: latest.model_json,
            file_name=latest.file_name,
            mime="application/json",
            key=f"train.relabel_download.{latest.number}",
        )
