"""Train page: algorithm (any of the registry, with its privacy status), its own
parameters, ε, seed → Train → cross-validated scores beside the references, the
ledger in words, downloads. Logic: dpviz.app.train."""

from __future__ import annotations

import streamlit as st

from dpviz.app import train as app_train
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.app.sweep import sklearn_default
from dpviz.models.sizing import SIZE_NOTE, suggest_trees
from dpviz.privacy.noise import NOT_PRIVATE_NOTE

K = {
    name: f"{KEEP_PREFIX}train.{name}"
    for name in (
        "algorithm",
        "eps_slider",
        "eps",
        "seed",
        "replay",
        "noise_seed",
        "folds",
        "sklearn",
    )
}


def param_key(algorithm: str, name: str) -> str:
    """Each algorithm keeps its own parameter values (JPW: 10 trees, the forest: 100)."""
    return f"{KEEP_PREFIX}train.{algorithm}.{name}"


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/train.py"):
    st.switch_page("app.py")


def eps_from_slider() -> None:
    st.session_state[K["eps"]] = float(st.session_state[K["eps_slider"]])


def eps_from_box() -> None:
    st.session_state[K["eps_slider"]] = app_train.nearest_epsilon(st.session_state[K["eps"]])


def suggest_tree_count(choice: app_train.AlgorithmChoice, n_rows: int):
    """Preset a disjoint forest's tree count to the size the data suggests, unless the user
    changed it; returns the suggestion (None for other algorithms)."""
    if choice.defaults.get("data_split") != "disjoint":
        return None
    suggestion = suggest_trees(n_rows)
    key = param_key(choice.id, "n_estimators")
    marker = f"{key}.suggested"
    if st.session_state.get(marker) != suggestion.n_estimators:
        if st.session_state.get(key, st.session_state.get(marker)) == st.session_state.get(marker):
            st.session_state[key] = suggestion.n_estimators
        st.session_state[marker] = suggestion.n_estimators
    return suggestion


def parameter_inputs(choice: app_train.AlgorithmChoice, n_rows: int) -> dict:
    """One widget per registry parameter of the algorithm; returns their values."""
    values = {}
    suggestion = suggest_tree_count(choice, n_rows)
    for w in choice.widgets:
        key = param_key(choice.id, w.name)
        st.session_state.setdefault(key, w.initial)
        if w.kind == "choice":
            options = list(w.options)
            if w.captions and len(options) <= 3:
                chosen = st.radio(
                    w.label,
                    options,
                    format_func=w.option_text,
                    key=key,
                    horizontal=True,
                    captions=list(w.captions),
                    help=w.help,
                )
            else:
                chosen = st.selectbox(
                    w.label, options, format_func=w.option_text, key=key, help=w.help
                )
            number = None
            if w.number_option and chosen == w.number_option:
                number_key = f"{key}.number"
                st.session_state.setdefault(number_key, w.number_default)
                number = st.number_input(
                    f"{w.label}: the number", 1, app_train.FIXED_NUMBER_MAX, key=number_key
                )
            values[w.name] = w.value(chosen, number)
        elif w.kind == "int":
            values[w.name] = int(
                st.number_input(
                    w.label, min_value=w.low, max_value=w.high, step=1, key=key, help=w.help
                )
            )
            if w.name == "n_estimators" and suggestion is not None:
                shown = f"Suggested: {suggestion.n_estimators} trees ({suggestion.reason})."
                st.caption(f"{shown} {SIZE_NOTE}")
        elif w.kind == "float":
            values[w.name] = float(
                st.number_input(
                    w.label,
                    min_value=w.low,
                    max_value=w.high,
                    step=w.step,
                    format=w.format,
                    key=key,
                    help=w.help,
                )
            )
        elif w.kind == "bool":
            values[w.name] = st.checkbox(w.label, key=key, help=w.help)
        else:
            values[w.name] = st.text_input(w.label, key=key, help=w.help)
    return values


def settings_form(data) -> app_train.TrainSettings | None:
    """The options; returns the settings when Train is pressed (None otherwise)."""
    n_rows = len(data.frame)
    for key, value in {
        "algorithm": "fletcher_islam",
        "eps_slider": 1.0,
        "eps": 1.0,
        "seed": 0,
        "replay": False,
        "noise_seed": 0,
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

    algorithms = app_train.algorithm_choices()
    if st.session_state[K["algorithm"]] not in algorithms:
        st.session_state[K["algorithm"]] = "fletcher_islam"
    left, right = st.columns(2, gap="large")
    with left:
        algorithm = st.selectbox(
            "Algorithm",
            list(algorithms),
            format_func=lambda a: algorithms[a].option,
            key=K["algorithm"],
        )
        choice = algorithms[algorithm]
        st.caption(choice.description)
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
        seed_col, folds_col = st.columns(2)
        seed = int(
            seed_col.number_input(
                "Public seed",
                0,
                2**31 - 1,
                key=K["seed"],
                help="Draws the tree structure, the record→tree hash and the folds. It never "
                "seeds the noise, which comes from a fresh secret key every time.",
            )
        )
        folds = int(folds_col.number_input("Cross-validation folds", 2, 10, key=K["folds"]))
        noise_seed = None
        if st.checkbox(
            "Replayable noise (NOT private)",
            key=K["replay"],
            help="For teaching and exact reproduction only: the noise is derived from a seed, "
            "so anyone with it can subtract the noise. The model then carries no guarantee.",
        ):
            noise_seed = int(st.number_input("Noise seed", 0, 2**31 - 1, key=K["noise_seed"]))
            st.error(
                f"{NOT_PRIVATE_NOTE}. This model carries NO privacy guarantee.",
                icon=":material/no_encryption:",
            )
        sklearn = st.checkbox(
            f"Also cross-validate {app_train.reference_text(algorithm)}",
            key=K["sklearn"],
            help="Non-private references; scikit-learn's random forest is slow on large data "
            "(about 15 s per fold at 30,000 rows), so this starts unticked above 5,000 rows.",
        )
    with right:
        st.markdown(f"**{choice.name}** — its settings")
        params = parameter_inputs(choice, n_rows)
        for name, value in choice.fixed.items():
            st.markdown(app_train.fixed_text(name, value))
        status = app_train.privacy_status(algorithm, params, data.schema_public)
        {"ok": st.caption, "approximate": st.warning}.get(status.level, st.error)(status.text)
        try:
            preview = app_train.structure_preview(
                data.schema, n_rows, algorithm, params, float(epsilon)
            )
        except ValueError as exc:
            st.error(str(exc))
            return None
        if preview is not None:
            st.caption(preview.text)
            if preview.private_note:
                st.warning(preview.private_note)

    if not st.button("Train", type="primary", key="train.button"):
        return None
    try:
        return app_train.TrainSettings(
            algorithm=algorithm,
            epsilon=float(epsilon),
            params=params,
            seed=seed,
            noise_seed=noise_seed,
            folds=folds,
            sklearn_reference=sklearn,
        )
    except ValueError as exc:
        st.error(str(exc))
        return None


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
