"""Train page: algorithm (any of the registry, with its privacy status), its own
parameters, ε, seed → Train → cross-validated scores beside the references, the
ledger in words, downloads. Logic: dpviz.app.train."""

from __future__ import annotations

import streamlit as st

from dpviz.app import train as app_train
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.privacy.noise import NOT_PRIVATE_NOTE
from pages.ui import parameters
from pages.ui import train as results
from pages.ui.frame import frame_first

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
    """Each algorithm keeps its own parameter values (JPW: 10 trees, the forest: auto)."""
    return f"{KEEP_PREFIX}train.{algorithm}.{name}"


frame_first("pages/train.py")


def eps_from_slider() -> None:
    st.session_state[K["eps"]] = float(st.session_state[K["eps_slider"]])


def eps_from_box() -> None:
    st.session_state[K["eps_slider"]] = app_train.nearest_epsilon(st.session_state[K["eps"]])


def settings_form(data) -> app_train.TrainSettings | None:
    """The options; returns the settings when Train is pressed (None otherwise)."""
    n_rows = len(data.frame)
    for key, value in app_train.form_defaults(n_rows).items():
        st.session_state.setdefault(K[key], value)

    st.markdown(
        f"Dataset: **{data.name}** · {n_rows:,} rows · label `{data.schema.label}` · "
        f"{len(data.schema.features)} features"
    )
    if not data.schema_public:
        st.warning(data.schema_note, icon="⚠️")
    for warning in data.owner_warnings:  # checks of the schema against the records
        st.warning(warning, icon="⚠️")

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
        params = parameters.train_inputs(choice, param_key)
        for name, value in choice.fixed.items():
            st.markdown(app_train.fixed_text(name, value))
        status = app_train.privacy_status(algorithm, params, data.schema_public)
        {"ok": st.caption, "approximate": st.warning}.get(status.level, st.error)(status.text)
        try:
            preview = app_train.structure_preview(
                data.schema, n_rows, algorithm, params, float(epsilon), data.frame
            )
        except ValueError as exc:
            st.error(str(exc))
            return None
        if preview is not None:
            st.caption(preview.text)
            if preview.private_note:
                st.info(preview.private_note)

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
        results.show(state.run)


main()
