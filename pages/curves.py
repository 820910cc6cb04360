"""Curves page: run a sweep once — any algorithms of the registry on the same folds, the
forest over ε × mechanisms × trees × depth rules — then look at it any way without
recomputing: metric, x axis, series, highlighted algorithm, the ε under discussion.
Logic: dpviz.app.curves, figures: dpviz.figures.curves."""

from __future__ import annotations

import streamlit as st

from dpviz.app import curves as app_curves
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.app.train import epsilon_grid
from dpviz.evaluation.sweep import FLETCHER_ISLAM
from dpviz.figures.common import mechanism_label
from dpviz.models.trees.depth import DEPTH_RULES
from dpviz.privacy.mechanisms import MECHANISMS
from pages.ui import curves as curves_ui
from pages.ui import peers as peers_ui
from pages.ui.curves_picker import algorithm_picker
from pages.ui.frame import frame_first

K = {n: f"{KEEP_PREFIX}curves.{n}" for n in ("low", "high", "per_decade", "mechs", "trees")}
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("depths",)})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("splits", "folds", "seed", "sklearn")})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("metric", "x", "shown", "refs", "discuss")})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("algorithms", "highlight")})
DEPTH_OPTIONS = (*DEPTH_RULES, 4, 6, 8, 10, 12, 15)
LABEL_MECHANISMS = [m for m in MECHANISMS if m != "none"]  # none is the reference


frame_first("pages/curves.py")


def param_key(algorithm: str, name: str) -> str:
    return f"{KEEP_PREFIX}curves.{algorithm}.{name}"


def defaults(data) -> None:
    for key, value in app_curves.form_defaults(len(data.frame)).items():
        st.session_state.setdefault(K[key], value)


def sweep_form(data, algorithms: list[str], presets: dict) -> app_curves.SweepSettings | None:
    """The sweep's settings; returned when Run sweep is pressed (None otherwise)."""
    forest = FLETCHER_ISLAM in algorithms
    with st.form("curves.settings"):
        st.markdown(
            "**Sweep settings** — every algorithm and combination is cross-validated on the "
            "same folds"
        )
        a, b, c = st.columns(3)
        # Two sliders, not one range slider: AppTest mis-reads a range kept in session state.
        eps_low = a.select_slider(
            "Smallest ε (log scale)", epsilon_grid(), format_func=lambda v: f"{v:g}", key=K["low"]
        )
        eps_high = a.select_slider(
            "Largest ε (log scale)", epsilon_grid(), format_func=lambda v: f"{v:g}", key=K["high"]
        )
        per_decade = a.radio(
            "ε values per factor of 10",
            app_curves.PER_DECADE,
            key=K["per_decade"],
            horizontal=True,
            help="3: 1, 2, 5 · 6: 1, 1.5, 2, 3, 5, 7 · 10: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8",
        )
        if forest:
            mechanisms = b.multiselect(
                "Mechanisms (fletcher_islam)",
                LABEL_MECHANISMS,
                # An inferred schema voids every guarantee: no option promises ε-DP then.
                format_func=lambda m: mechanism_label(m, data.schema_public),
                key=K["mechs"],
            )
            trees = b.multiselect(
                "Tree counts (fletcher_islam)", app_curves.TREE_CHOICES, key=K["trees"]
            )
            depths = c.multiselect(
                "Depth rules (numbers: fixed depths)",
                DEPTH_OPTIONS,
                format_func=str,
                key=K["depths"],
            )
            splits = c.multiselect("Data per tree", app_curves.SPLIT_CHOICES, key=K["splits"])
        else:
            mechanisms, trees, depths, splits = (
                st.session_state[K[k]] for k in ("mechs", "trees", "depths", "splits")
            )
            b.caption(
                "Mechanisms, tree counts, depth rules and data per tree are the grid of "
                "fletcher_islam, which is not chosen; the other algorithms take their "
                "settings above."
            )
        d, e, f = st.columns(3)
        folds = d.number_input("Cross-validation folds", 2, 10, key=K["folds"])
        seed = e.number_input(
            "Seed", 0, 2**31 - 1, key=K["seed"], help="The same seed gives the same folds."
        )
        sklearn = f.checkbox(
            "Include scikit-learn's random forest",
            key=K["sklearn"],
            help="A non-private reference; slow on large data (about 15 s per fold at "
            "30,000 rows), so it starts unticked above 5,000 rows. DPBoost's reference, "
            "HistGradientBoosting, is always included with it.",
        )
        peers_ui.control()
        if not st.form_submit_button("Run sweep", type="primary"):
            return None
    try:
        return app_curves.SweepSettings(
            eps_low=float(min(eps_low, eps_high)),
            eps_high=float(max(eps_low, eps_high)),
            per_decade=int(per_decade),
            mechanisms=tuple(mechanisms),
            n_estimators=tuple(trees),
            depths=tuple(depths),
            data_splits=tuple(splits),
            folds=int(folds),
            seed=int(seed),
            sklearn_reference=sklearn,
            algorithms=tuple(algorithms),
            presets=presets,
        )
    except ValueError as exc:
        st.error(str(exc))
        return None


def run(state: AppState, data, settings: app_curves.SweepSettings) -> None:
    bar = st.progress(
        0.0,
        text=f"sweeping {settings.n_configurations:,} configurations of "
        f"{len(settings.algorithms)} algorithm(s) on {settings.folds} folds",
    )
    try:
        sweep = app_curves.run(data, settings, progress=lambda x, m: bar.progress(min(1.0, x), m))
    except ValueError as exc:
        st.error(str(exc))
    else:
        bar.progress(1.0, text=f"done in {sweep.seconds:.1f} s")
        state.set_sweep(sweep)
        st.session_state.pop(K["shown"], None)  # a new sweep shows all its lines


@st.fragment
def show(sweep: app_curves.SweepRun) -> None:
    """Every view of a finished sweep: reads its summary, never reruns it. A fragment:
    changing a view control reruns this function only, not the page (nor the sweep)."""
    st.caption(
        f"Sweep on {sweep.dataset}: {sweep.describe()}. Changing what is shown below does not "
        f"rerun it. Scores are from held-out folds: {NOT_PRIVATE_DIAGNOSTICS}."
    )
    if sweep.multi:
        with st.expander("What ran: each algorithm, its settings and its privacy"):
            st.dataframe(sweep.algorithm_table(), hide_index=True, width="stretch")
    view = curves_ui.controls(sweep, K)
    curves_ui.chart(sweep, view)
    curves_ui.discussion(sweep, view)
    peers_ui.table(sweep, view.discuss, view.metric)
    curves_ui.downloads(sweep)


def main() -> None:
    state = AppState(st.session_state)
    data = state.data
    st.title("Curves")
    if data is None:
        st.info("Choose a dataset first.")
        st.page_link("pages/data.py", label="Go to the Data page", icon=":material/table:")
        return
    st.markdown(f"Dataset: **{data.name}** · {len(data.frame):,} rows")
    if not data.schema_public:
        st.warning(data.schema_note, icon="⚠️")

    defaults(data)
    algorithms, presets = algorithm_picker(K, param_key)
    settings = sweep_form(data, algorithms, presets)
    if settings is not None:
        run(state, data, settings)
    if state.sweep is None:
        st.info("Choose the sweep above and press **Run sweep**.")
        curves_ui.empty_chart(*(st.session_state[K[k]] for k in ("low", "high")))
    else:
        show(state.sweep)
    peers_ui.complete(state, data, settings)  # after the curves: they show while it runs


main()
