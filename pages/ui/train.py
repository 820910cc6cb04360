"""The Train page's results: the run's caption and privacy, the score cards beside the
references and the trivial baseline, the scores chart and the downloads."""

from __future__ import annotations

import streamlit as st

from dpviz.app import train as app_train
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS


def show(run: app_train.TrainRun) -> None:
    """Everything the page shows of a finished run."""
    st.header(f"Results · {run.dataset}")
    st.caption(app_train.run_caption(run))
    if run.sample_note:
        st.info(run.sample_note, icon=":material/info:")
    (st.success if run.private else st.error)(
        "**Privacy of the released model.** " + run.privacy_summary
    )
    st.markdown(
        f"**Scores on held-out folds** (mean ± 1 std) — {NOT_PRIVATE_DIAGNOSTICS}: publishing "
        "them is not covered by ε."
    )
    warning = run.one_class_warning()
    if warning:
        st.warning(warning, icon=":material/warning:")
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
    model_col, metrics_col = st.columns(2)
    with model_col:
        if run.export_problem:
            st.warning(run.export_problem)
        else:
            st.download_button(
                "Download the released model (JSON)",
                data=lambda: run.model_json,
                file_name=f"dpviz_{run.settings.algorithm}.json",
                mime="application/json",
                key="train.model_download",
                help="The tree structure, the released (noisy) leaf outputs and the public "
                "schema you declared (class names, feature ranges, discrete values): no "
                "records, no true counts. `python -m dpviz predict --model` reads it.",
            )
    with metrics_col:
        st.download_button(
            "Download the metrics (CSV)",
            run.metrics_csv(),
            file_name="dpviz_metrics.csv",
            mime="text/csv",
            key="train.metrics_download",
        )
    for message in run.encoding_messages:
        st.caption(f"Data preparation: {message}")
