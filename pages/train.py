"""Train page: algorithm, mechanism, ε, trees, depth rule, data split, seed → Train →
cross-validated scores beside the references, the ledger in words, downloads.
Logic: dpviz.app_train."""

from __future__ import annotations

import streamlit as st

from dpviz import app_train
from dpviz.app_session import KEEP_PREFIX, AppState
from dpviz.app_support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.app_sweep import sklearn_default
from dpviz.figures import METRICS
from dpviz.mechanisms import MECHANISMS
from dpviz.sweep import SERIES_DP, SERIES_NONPRIVATE, SERIES_SKLEARN

K = {
    name: f"{KEEP_PREFIX}train.{name}"
    for name in (
        "algorithm",
        "mechanism",
        "eps_slider",
        "eps",
        "trees",
        "depth_rule",
        "fixed_depth",
        "split",
        "seed",
        "folds",
        "sklearn",
    )
}
REFERENCE_NAMES = {
    SERIES_NONPRIVATE: "non-private forest (NOT DP)",
    SERIES_SKLEARN: "scikit-learn random forest (NOT DP)",
}


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/train.py"):
    st.switch_page("app.py")


def eps_from_slider() -> None:
    st.session_state[K["eps"]] = float(st.session_state[K["eps_slider"]])


def algorithm_defaults() -> None:
    """A new algorithm starts from its own trees and depth rule (JPW: 10 trees, jpw)."""
    defaults = app_train.algorithm_choices()[st.session_state[K["algorithm"]]].defaults
    st.session_state[K["trees"]] = int(defaults["n_estimators"])
    st.session_state[K["depth_rule"]] = defaults["depth"]


def eps_from_box() -> None:
    st.session_state[K["eps_slider"]] = app_train.nearest_epsilon(st.session_state[K["eps"]])


def settings_form(data) -> app_train.TrainSettings | None:
    """The options; returns the settings when Train is pressed (None otherwise)."""
    n_rows = len(data.frame)
    for key, value in {
        "algorithm": "fletcher_islam",
        "mechanism": "permute_flip",
        "eps_slider": 1.0,
        "eps": 1.0,
        "trees": 100,
        "depth_rule": "theorem2",
        "fixed_depth": 6,
        "split": "disjoint",
        "seed": 0,
        "folds": 3,
        "sklearn": sklearn_default(n_rows),
    }.items():
        st.session_state.setdefault(K[key], value)

    st.markdown(
        f"Dataset: **{data.name}** · {n_rows:,} rows · label `{data.schema.label}` · "
        f"{len(data.schema.features)} features"
    )
    if not data.schema_public:
        st.warning(data.schema_note, icon="⚠️")

    left, right = st.columns(2, gap="large")
    with left:
        algorithms = app_train.algorithm_choices()
        algorithm = st.selectbox(
            "Algorithm",
            list(algorithms),
            format_func=lambda a: algorithms[a].name,
            key=K["algorithm"],
            on_change=algorithm_defaults,
        )
        choice = algorithms[algorithm]
        st.caption(choice.description)
        if "mechanism" in choice.fixed:
            mechanism = choice.fixed["mechanism"]
            st.markdown(f"Leaf mechanism: {app_train.mechanism_option(mechanism)} (fixed)")
        else:
            mechanism = st.selectbox(
                "Leaf mechanism",
                list(MECHANISMS),
                format_func=app_train.mechanism_option,
                key=K["mechanism"],
            )
        mech = MECHANISMS[mechanism]
        if mech.private:
            st.caption(f"**{mech.badge}** · {mech.description}")
        else:
            st.error(f"**{mech.badge}** · {mech.description}")
        st.select_slider(
            "Privacy budget ε (log scale)",
            options=app_train.epsilon_grid(),
            format_func=lambda v: f"{v:g}",
            key=K["eps_slider"],
            on_change=eps_from_slider,
        )
        epsilon = st.number_input(
            "ε exactly",
            min_value=app_train.EPSILON_MIN,
            max_value=app_train.EPSILON_MAX,
            step=0.01,
            format="%.3f",
            key=K["eps"],
            on_change=eps_from_box,
            help="The released model's total ε. Smaller is more private and noisier.",
        )
    with right:
        trees = int(st.number_input("Trees", 1, 1000, step=10, key=K["trees"]))
        rule = st.selectbox("Depth rule", app_train.DEPTH_CHOICES, key=K["depth_rule"])
        depth = rule
        if rule == app_train.FIXED_DEPTH:
            depth = int(st.number_input("Fixed depth", 1, 30, key=K["fixed_depth"]))
        if "data_split" in choice.fixed:
            split = choice.fixed["data_split"]
            st.markdown(f"Data per tree: **{split}** (fixed) · {app_train.DATA_SPLIT_HELP[split]}")
        else:
            split = st.radio(
                "Data per tree",
                ("disjoint", "shared"),
                key=K["split"],
                horizontal=True,
                captions=[
                    app_train.DATA_SPLIT_HELP["disjoint"],
                    app_train.DATA_SPLIT_HELP["shared"],
                ],
            )
        try:
            preview = app_train.depth_preview(data.schema, depth, n_rows, trees, split)
        except ValueError as exc:
            st.error(str(exc))
            return None
        st.caption(preview.text)
        if preview.private_note:
            st.warning(preview.private_note)
        seed_col, folds_col = st.columns(2)
        seed = int(seed_col.number_input("Seed", 0, 2**31 - 1, key=K["seed"]))
        folds = int(folds_col.number_input("Cross-validation folds", 2, 10, key=K["folds"]))
        sklearn = st.checkbox(
            "Also cross-validate scikit-learn's random forest",
            key=K["sklearn"],
            help="A non-private reference; slow on large data (about 15 s per fold at "
            "30,000 rows), so it starts unticked above 5,000 rows.",
        )

    if not st.button("Train", type="primary", key="train.button"):
        return None
    return app_train.TrainSettings(
        mechanism=mechanism,
        epsilon=float(epsilon),
        n_estimators=trees,
        depth=depth,
        data_split=split,
        seed=seed,
        folds=folds,
        sklearn_reference=sklearn,
        algorithm=algorithm,
    )


def train(state: AppState, data, settings: app_train.TrainSettings) -> None:
    with st.status("Training…", expanded=True) as status:
        bar = st.progress(0.0, text="cross-validating")
        try:
            run = app_train.train(
                data, settings, progress=lambda f, m: bar.progress(min(1.0, f), text=m)
            )
        except ValueError as exc:
            status.update(label="Training failed", state="error")
            st.error(str(exc))
        else:
            state.set_run(run)
            status.update(
                label=f"Trained in {run.seconds:.1f} s", state="complete", expanded=False
            )


def show_results(run: app_train.TrainRun) -> None:
    s = run.settings
    st.header(f"Results · {run.dataset}")
    st.caption(
        f"{app_train.mechanism_option(s.mechanism)} · ε = {s.epsilon:g} · "
        f"{s.n_estimators} trees · "
        f"depth {run.model.depth_} ({s.depth}) · {s.data_split} data · seed {s.seed} · "
        f"{s.folds}-fold CV on {run.n_records:,} records. Change a setting and press Train to "
        "update."
    )
    (st.success if run.private else st.error)(
        "**Privacy of the released model.** " + run.privacy_summary
    )
    st.markdown(
        f"**Scores on held-out folds** (mean ± 1 std) — {NOT_PRIVATE_DIAGNOSTICS}: publishing "
        "them is not covered by ε."
    )
    for col, (metric, label) in zip(st.columns(len(METRICS)), METRICS):
        value, delta = run.metric_text(SERIES_DP, metric)
        col.metric(f"{label} · DP forest", value, delta, border=True)
        for series in run.series[1:]:
            col.metric(f"{label} · {REFERENCE_NAMES[series]}", run.metric_text(series, metric)[0])
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
                file_name="dpviz_model.json",
                mime="application/json",
                key="train.model_download",
                help="Tree structure and the released leaf outputs only: no records, no counts.",
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


def main() -> None:
    state = AppState(st.session_state)
    data = state.data
    st.title("Train")
    if data is None:
        st.info("Choose a dataset first.")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/table:")
        return
    settings = settings_form(data)
    if settings is not None:
        train(state, data, settings)
    if state.run is None:
        st.info("Set the options above and press **Train**.")
    else:
        show_results(state.run)


main()
