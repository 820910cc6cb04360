"""The Curves page's view of
a finished sweep — its controls (metric, x axis, series, highlighted algorithm, the ε
under discussion, the pinned grid values), what that ε costs and protects, and the
downloads. The view reads the sweep, never reruns it."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from dpviz.app import curves as app_curves
from dpviz.app import odometer
from dpviz.figures.curves import X_AXES, curve_figure, placeholder_figure
from dpviz.figures.peers import add_peer_lines
from pages.ui.odometer import release_button

NO_HIGHLIGHT = "(none)"


def empty_chart(eps_low: float, eps_high: float) -> None:
    """The chart's axes before any sweep. They also have the browser load its plotting
    library while the settings are chosen, not after the sweep: a first chart's wait."""
    low, high = sorted((float(eps_low), float(eps_high)))
    st.plotly_chart(placeholder_figure(low, high), theme=None, key="curves.empty")


class View(NamedTuple):
    """What the controls picked: the figure's and the table's arguments."""

    metric: str
    x: str
    shown: list[str]
    highlight: str | None
    discuss: float
    pins: dict

    @property
    def key(self) -> tuple:
        """Everything picked, hashable: what a kept view of the sweep is found by."""
        pins = tuple(sorted((k, str(v)) for k, v in self.pins.items()))
        return (self.metric, self.x, tuple(self.shown), self.highlight, self.discuss, pins)


def controls(sweep: app_curves.SweepRun, K: dict) -> View:
    """The view controls (``K``: the page's session keys); returns what they picked."""
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
            if key == "n_estimators" and len(sweep.settings.n_estimators) == 1:
                # One requested tree count: "auto" resolves per ε, and its points form
                # one line, which a pin on the resolved count would cut into pieces.
                continue
            values = sweep.values(key)
            pins[key] = values[0]
            if key != x and len(values) > 1:
                pins[key] = col.selectbox(
                    f"Fix {key.replace('_', ' ')} (fletcher_islam)",
                    values,
                    key=f"curves.pin.{key}",
                )
    pins["epsilon"] = discuss

    return View(metric, x, shown, highlight, discuss, pins)


def chart(sweep: app_curves.SweepRun, view: View) -> None:
    """The curves of the view, kept per view: switching back rebuilds nothing."""

    def build():
        figure = curve_figure(
            sweep.summary,
            metric=view.metric,
            x=view.x,
            fixed=view.pins,
            series=view.shown,
            highlight_epsilon=view.discuss,
            folds=sweep.settings.folds,
            statuses=sweep.statuses,
            highlight=view.highlight,
        )
        return add_peer_lines(figure, sweep.summary, view.metric, view.x)

    st.plotly_chart(sweep.view("figure", view.key, build), key="curves.figure", theme=None)


def discussion(sweep: app_curves.SweepRun, view: View) -> None:
    """What the ε under discussion costs (the candidate table) and protects (the risk
    sentences, the ledger), for the lines shown."""
    metric, shown, discuss, pins = view.metric, view.shown, view.discuss, view.pins
    st.subheader(f"ε = {discuss:g}: what it costs and what it protects")
    if sweep.guarantee_shown(shown):
        st.markdown("\n".join(f"- {line}" for line in app_curves.risk_lines(discuss)))
    else:
        st.warning(
            "No series shown carries a guarantee (NOT DP or approximate, or an inferred "
            "schema), so no risk bound applies."
        )
    # Kept per view: switching back to a metric or an ε recomputes none of them.
    warning = sweep.view(
        "warning", view.key, lambda: sweep.one_class_warning(discuss, pins, series=shown)
    )
    if warning:
        st.warning(warning, icon=":material/warning:")
    table = sweep.view(
        "candidate", view.key, lambda: sweep.candidate(discuss, metric, pins, series=shown)
    )
    st.dataframe(table, hide_index=True, width="stretch")
    first = app_curves.ledger_mechanism(shown)
    if first:
        ledger = sweep.view("ledger", view.key, lambda: sweep.ledger_text(first, discuss, pins))
        st.caption(
            f"Ledger of a fletcher_islam {first} model released with these settings: {ledger}"
        )


def downloads(sweep: app_curves.SweepRun) -> None:
    """Every fold and the summary, as CSV files."""
    left, right = st.columns(2)
    for col, what, label, data, file, key in (
        (left, "Sweep folds", "every fold", sweep.results_csv, "dpviz_sweep_folds.csv", "folds"),
        (
            right,
            "Sweep summary",
            "the summary",
            sweep.summary_csv,
            "dpviz_sweep_summary.csv",
            "summary",
        ),
    ):
        with col:
            release_button(
                odometer.not_private_table(what, file, odometer.HELD_OUT),
                f"Download {label} (CSV)",
                data,
                file_name=file,
                mime="text/csv",
                key=f"curves.{key}_download",
            )
