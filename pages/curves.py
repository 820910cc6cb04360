"""Curves page: run a sweep once — any algorithms of the registry on the same folds, the
forest over ε × mechanisms × trees × depth rules — then look at it any way without
recomputing: metric, x axis, series, highlighted algorithm, the ε under discussion.
Logic: dpviz.app.curves, figures: dpviz.figures.curves."""

from __future__ import annotations

import streamlit as st

from dpviz.app import curves as app_curves
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.app.support import NOT_PRIVATE_DIAGNOSTICS
from dpviz.app.sweep import sklearn_default
from dpviz.app.train import epsilon_grid, parameter_widget, privacy_status
from dpviz.evaluation.sweep import FLETCHER_ISLAM
from dpviz.figures.common import mechanism_label
from dpviz.figures.curves import EPS_DP, X_AXES, curve_figure
from dpviz.models.depth import DEPTH_RULES
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.mechanisms import MECHANISMS

K = {n: f"{KEEP_PREFIX}curves.{n}" for n in ("low", "high", "per_decade", "mechs", "trees")}
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("depths",)})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("splits", "folds", "seed", "sklearn")})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("metric", "x", "shown", "refs", "discuss")})
K.update({n: f"{KEEP_PREFIX}curves.{n}" for n in ("algorithms", "highlight")})
NO_HIGHLIGHT = "(none)"
DEPTH_OPTIONS = (*DEPTH_RULES, 4, 6, 8, 10, 12, 15)
LABEL_MECHANISMS = [m for m in MECHANISMS if m != "none"]  # none is the reference


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/curves.py"):
    st.switch_page("app.py")


def param_key(algorithm: str, name: str) -> str:
    return f"{KEEP_PREFIX}curves.{algorithm}.{name}"


def defaults(data) -> None:
    values = {
        "algorithms": list(app_curves.DEFAULT_ALGORITHMS),
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
    for key, value in values.items():
        st.session_state.setdefault(K[key], value)


def parameter_input(algorithm: str, parameter):
    """One registry parameter as a widget (the Train page's widgets); returns its value."""
    w = parameter_widget(parameter)
    key = param_key(algorithm, w.name)
    st.session_state.setdefault(key, w.initial)
    if w.kind == "choice":
        chosen = st.selectbox(w.label, w.options, format_func=w.option_text, key=key, help=w.help)
        number = None
        if w.number_option is not None and chosen == w.number_option:
            number = st.number_input(
                f"{w.label}: value", 1, 50, w.number_default, key=key + ".number"
            )
        return w.value(chosen, number)
    if w.kind == "bool":
        return st.checkbox(w.label, key=key, help=w.help)
    if w.kind in ("int", "float"):
        return st.number_input(
            w.label, w.low, w.high, step=w.step, format=w.format, key=key, help=w.help
        )
    return st.text_input(w.label, key=key, help=w.help)


def algorithm_picker() -> tuple[list[str], dict]:
    """The algorithms to compare (from the registry) and the settings of those other
    than the forest, with the privacy status each has with them."""
    options = app_curves.algorithm_options()
    kept = [a for a in st.session_state[K["algorithms"]] if a in options]
    if kept != st.session_state[K["algorithms"]]:
        st.session_state[K["algorithms"]] = kept
    chosen = st.multiselect(
        "Algorithms to compare — every one runs on the same folds",
        list(options),
        format_func=options.get,
        key=K["algorithms"],
        help="The forest sweeps ε in about one fit per fold; the greedy trees and DPBoost "
        "read the data to grow, so they are fitted again for every ε and fold (slower).",
    )
    presets = {}
    lines = []
    for algorithm in chosen:
        entry = ALGORITHMS[algorithm]
        if algorithm == FLETCHER_ISLAM:
            mechanisms = st.session_state[K["mechs"]] or ["permute_flip"]
            lines.append(
                f"- `{algorithm}` · **{app_curves.forest_privacy(mechanisms)}** · "
                "its mechanisms, trees and depth rules are swept below"
            )
            continue
        with st.expander(f"{algorithm}: settings ({entry.name})"):
            st.caption(entry.description)
            presets[algorithm] = {p.name: parameter_input(algorithm, p) for p in entry.parameters}
        try:
            status = privacy_status(algorithm, presets[algorithm]).text
        except ValueError as exc:
            status = f"settings not valid: {exc}"
        lines.append(f"- `{algorithm}` · {status}")
    if lines:
        st.markdown("\n".join(lines))
    return chosen, presets


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
            splits = c.multiselect("Data per tree", ["disjoint", "shared"], key=K["splits"])
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
    metric_names = sweep.metric_options()
    if st.session_state.get(K["metric"]) not in metric_names:
        st.session_state[K["metric"]] = "accuracy"
    note = sweep.rare_class_note()
    if note:
        st.caption(note)
    controls = st.columns([2, 2, 3, 2] if sweep.multi else [2, 2, 3])
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
    labels = sweep.series()
    if not set(st.session_state.get(K["shown"], [])) <= set(labels):
        st.session_state.pop(K["shown"], None)
    st.session_state.setdefault(K["shown"], list(labels))
    shown = controls[2].multiselect("Series", list(labels), format_func=labels.get, key=K["shown"])
    highlight = None
    if sweep.multi:
        choices = [NO_HIGHLIGHT, *sweep.settings.algorithms]
        if st.session_state.get(K["highlight"]) not in choices:
            st.session_state[K["highlight"]] = NO_HIGHLIGHT
        picked = controls[3].selectbox(
            "Highlight", choices, key=K["highlight"], help="Draw one algorithm bold, fade the rest"
        )
        highlight = None if picked == NO_HIGHLIGHT else picked

    epsilons = sweep.values("epsilon")
    if st.session_state.get(K["discuss"]) not in epsilons:
        st.session_state[K["discuss"]] = min(epsilons, key=lambda v: abs(v - 1.0))
    pins = {}
    pin_cols = st.columns([2, 1, 1, 1])
    discuss = pin_cols[0].select_slider(
        "ε under discussion", epsilons, format_func=lambda v: f"{v:g}", key=K["discuss"]
    )
    if sweep.settings.forest:
        for col, key in zip(pin_cols[1:], ("n_estimators", "depth_rule", "data_split")):
            values = sweep.values(key)
            pins[key] = values[0]
            if key != x and len(values) > 1:
                pins[key] = col.selectbox(
                    f"Fix {key.replace('_', ' ')} (fletcher_islam)",
                    values,
                    key=f"curves.pin.{key}",
                )
    pins["epsilon"] = discuss

    fig = curve_figure(
        sweep.summary,
        metric=metric,
        x=x,
        fixed=pins,
        series=shown,
        highlight_epsilon=discuss,
        folds=sweep.settings.folds,
        statuses=sweep.statuses,
        highlight=highlight,
    )
    st.plotly_chart(fig, key="curves.figure", theme=None)

    st.subheader(f"ε = {discuss:g}: what it costs and what it protects")
    private_any = (
        any(sweep.series_status(s) == EPS_DP for s in shown) and not sweep.schema_inferred
    )
    if private_any:
        st.markdown("\n".join(f"- {line}" for line in app_curves.risk_lines(discuss)))
    else:
        st.warning(
            "No series shown carries a guarantee (NOT DP or approximate, or an inferred "
            "schema), so no risk bound applies."
        )
    warning = sweep.one_class_warning(discuss, pins, series=shown)
    if warning:
        st.warning(warning, icon=":material/warning:")
    st.dataframe(
        sweep.candidate(discuss, metric, pins, series=shown), hide_index=True, width="stretch"
    )
    forest = [s.partition("/")[2] for s in shown if s.startswith(FLETCHER_ISLAM + "/")]
    first = next((m for m in forest if MECHANISMS[m].private), forest[0] if forest else None)
    if first:
        st.caption(
            f"Ledger of a fletcher_islam {first} model released with these settings: "
            + sweep.ledger_text(first, discuss, pins)
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

    defaults(data)
    algorithms, presets = algorithm_picker()
    settings = sweep_form(data, algorithms, presets)
    if settings is not None:
        run(state, data, settings)
    if state.sweep is None:
        st.info("Choose the sweep above and press **Run sweep**.")
    else:
        show(state.sweep)


main()
