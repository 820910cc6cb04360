"""Curves page: run a sweep once (ε × mechanisms × trees × depth rules), then look at it
any way without recomputing: metric, x axis, series, the ε under discussion.
Logic: dpviz.app_curves, figures: dpviz.figures_curves."""

from __future__ import annotations

import streamlit as st

from dpviz import app_curves
from dpviz.app_session import KEEP_PREFIX, AppState
from dpviz.app_support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.app_sweep import sklearn_default
from dpviz.app_train import epsilon_grid
from dpviz.depth import DEPTH_RULES
from dpviz.figures import METRICS, mechanism_label
from dpviz.figures_curves import X_AXES, curve_figure
from dpviz.mechanisms import MECHANISMS
from dpviz.sweep import SERIES_NONPRIVATE, SERIES_SKLEARN

K = {n: f"{KEEP_PREFIX}curves.{n}" for n in ("low", "high", "per_decade", "mechs", "trees")}
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("depths",)})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("splits", "folds", "seed", "sklearn")})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("metric", "x", "shown", "refs", "discuss")})
DEPTH_OPTIONS = (*DEPTH_RULES, 4, 6, 8, 10, 12, 15)
LABEL_MECHANISMS = [m for m in MECHANISMS if m != "none"]  # none is the reference


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/curves.py"):
    st.switch_page("app.py")


def sweep_form(data) -> app_curves.SweepSettings | None:
    """The sweep's settings; returned when Run sweep is pressed (None otherwise)."""
    defaults = {
        "low": 0.01,
        "high": 10.0,
        "per_decade": 6,
        "mechs": list(app_curves.DEFAULT_MECHANISMS),
        "trees": [100],
        "depths": ["theorem2"],
        "splits": ["disjoint"],
        "folds": 5,
        "seed": 0,
        "sklearn": sklearn_default(len(data.frame)),
        "metric": "accuracy",
        "x": "epsilon",
    }
    for key, value in defaults.items():
        st.session_state.setdefault(K[key], value)

    with st.form("curves.settings"):
        st.markdown("**Sweep settings** — every combination is cross-validated on the same folds")
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
        mechanisms = b.multiselect(
            "Mechanisms", LABEL_MECHANISMS, format_func=mechanism_label, key=K["mechs"]
        )
        trees = b.multiselect("Tree counts", app_curves.TREE_CHOICES, key=K["trees"])
        depths = c.multiselect(
            "Depth rules (numbers: fixed depths)", DEPTH_OPTIONS, format_func=str, key=K["depths"]
        )
        splits = c.multiselect("Data per tree", ["disjoint", "shared"], key=K["splits"])
        d, e, f = st.columns(3)
        folds = d.number_input("Cross-validation folds", 2, 10, key=K["folds"])
        seed = e.number_input("Seed", 0, 2**31 - 1, key=K["seed"])
        sklearn = f.checkbox(
            "Include scikit-learn's random forest",
            key=K["sklearn"],
            help="A non-private reference; slow on large data (about 15 s per fold at "
            "30,000 rows), so it starts unticked above 5,000 rows.",
        )
        if not st.form_submit_button("Run sweep", type="primary"):
            return None
    try:
        return app_curves.SweepSettings(
            eps_low=float(min(eps_low, eps_high)),
            eps_high=float(max(eps_low, eps_high)),
            per_decade=int(per_decade),
            mechanisms=tuple(mechanisms),
            n_estimators=tuple(int(t) for t in trees),
            depths=tuple(depths),
            data_splits=tuple(splits),
            folds=int(folds),
            seed=int(seed),
            sklearn_reference=sklearn,
        )
    except ValueError as exc:
        st.error(str(exc))
        return None


def run(state: AppState, data, settings: app_curves.SweepSettings) -> None:
    bar = st.progress(0.0, text=f"sweeping {settings.n_configurations:,} configurations")
    try:
        sweep = app_curves.run(data, settings, progress=lambda x, m: bar.progress(min(1.0, x), m))
    except ValueError as exc:
        st.error(str(exc))
    else:
        bar.progress(1.0, text=f"done in {sweep.seconds:.1f} s")
        state.set_sweep(sweep)


def show(sweep: app_curves.SweepRun) -> None:
    """Every view of a finished sweep: reads its summary, never reruns it."""
    st.caption(
        f"Sweep on {sweep.dataset}: {sweep.describe()}. Changing what is shown below does not "
        f"rerun it. Scores are from held-out folds: {NOT_PRIVATE_DIAGNOSTICS}."
    )
    metric_names = dict(METRICS)
    controls = st.columns([2, 2, 3])
    metric = controls[0].radio(
        "Metric",
        list(metric_names),
        format_func=metric_names.get,
        key=K["metric"],
        horizontal=True,
    )
    axes = sweep.axes()
    if st.session_state[K["x"]] not in axes:
        st.session_state[K["x"]] = "epsilon"
    x = controls[1].radio(
        "Against",
        axes,
        format_func=lambda a: X_AXES[a].split(" (")[0],
        key=K["x"],
        horizontal=True,
    )
    swept = sweep.values("mechanism")
    if not set(st.session_state.get(K["shown"], [])) <= set(swept):
        st.session_state.pop(K["shown"], None)
    st.session_state.setdefault(K["shown"], swept)
    shown = controls[2].multiselect("Series", swept, format_func=mechanism_label, key=K["shown"])
    references = [SERIES_NONPRIVATE] + (
        [SERIES_SKLEARN] if sweep.reference(SERIES_SKLEARN, {}) is not None else []
    )

    epsilons = sweep.values("epsilon")
    if st.session_state.get(K["discuss"]) not in epsilons:
        st.session_state[K["discuss"]] = min(epsilons, key=lambda v: abs(v - 1.0))
    pins = {}
    pin_cols = st.columns([2, 1, 1, 1])
    discuss = pin_cols[0].select_slider(
        "ε under discussion", epsilons, format_func=lambda v: f"{v:g}", key=K["discuss"]
    )
    for col, key in zip(pin_cols[1:], ("n_estimators", "depth_rule", "data_split")):
        values = sweep.values(key)
        pins[key] = values[0]
        if key != x and len(values) > 1:
            pins[key] = col.selectbox(
                f"Fix {key.replace('_', ' ')}", values, key=f"curves.pin.{key}"
            )
    pins["epsilon"] = discuss

    fig = curve_figure(
        sweep.summary,
        metric=metric,
        x=x,
        fixed=pins,
        mechanisms=shown,
        references=references,
        highlight_epsilon=discuss,
        folds=sweep.settings.folds,
    )
    st.plotly_chart(fig, key="curves.figure", theme=None)

    st.subheader(f"ε = {discuss:g}: what it costs and what it protects")
    private_any = any(MECHANISMS[m].private for m in shown) and not sweep.schema_inferred
    if private_any:
        st.markdown("\n".join(f"- {line}" for line in app_curves.risk_lines(discuss)))
    else:
        st.warning(
            "No series shown carries a guarantee (NOT DP mechanism or inferred schema), so no "
            "risk bound applies."
        )
    st.dataframe(
        sweep.candidate(discuss, metric, pins, mechanisms=shown), hide_index=True, width="stretch"
    )
    first_private = next((m for m in shown if MECHANISMS[m].private), shown[0] if shown else None)
    if first_private:
        st.caption(
            f"Ledger of a {first_private} model released with these settings: "
            + sweep.ledger_text(first_private, discuss, pins)
        )

    left, right = st.columns(2)
    left.download_button(
        "Download every fold (CSV)",
        sweep.results_csv,
        file_name="dpviz_sweep_folds.csv",
        mime="text/csv",
        key="curves.folds_download",
    )
    right.download_button(
        "Download the summary (CSV)",
        sweep.summary_csv,
        file_name="dpviz_sweep_summary.csv",
        mime="text/csv",
        key="curves.summary_download",
    )


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

    settings = sweep_form(data)
    if settings is not None:
        run(state, data, settings)
    if state.sweep is None:
        st.info("Choose the sweep above and press **Run sweep**.")
    else:
        show(state.sweep)


main()
