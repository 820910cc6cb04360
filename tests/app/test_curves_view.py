"""The Curves page's view of a finished sweep (issue 29): changing what is shown never
runs the sweep again (calls counted, not timed), the chart's empty axes before any sweep
carry no data, and a view shown once is kept: switching back builds nothing."""

from __future__ import annotations

import base64
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app.session import SWEEP_KEY
from dpviz.figures import curves as figures
from tests.page_checks import chart_spec, charts, key

APP = str(Path(__file__).resolve().parent.parent.parent / "app.py")
SMALL = {"low": 0.5, "high": 1.0, "per_decade": 3, "trees": [10], "folds": 2, "sklearn": False}


def curves_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page("pages/curves.py").run()
    assert not at.exception, at.exception
    return at


def test_view_changes_never_call_the_sweep_again(monkeypatch):
    calls = []
    plain = app_curves.run

    def counted(*args, **kwargs):
        calls.append(1)
        return plain(*args, **kwargs)

    monkeypatch.setattr(app_curves, "run", counted)
    at = curves_page()
    for name, value in SMALL.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert len(calls) == 1
    sweep = at.session_state[SWEEP_KEY]
    for metric, title in (("auc", "ROC AUC"), ("f1", "F1"), ("accuracy", "Accuracy")):
        at.radio(key=key("curves.metric")).set_value(metric).run()
        assert chart_spec(at)["layout"]["yaxis"]["title"]["text"].startswith(title + " ")
    at.select_slider(key=key("curves.discuss")).set_value(0.5).run()
    assert not at.exception
    assert len(calls) == 1 and at.session_state[SWEEP_KEY] is sweep
    # Run sweep again: the one call that does sweep.
    at.button[0].click().run()
    assert len(calls) == 2 and at.session_state[SWEEP_KEY] is not sweep


def test_switching_back_to_a_view_builds_neither_its_figure_nor_its_table(monkeypatch):
    from pages.ui import curves as curves_ui

    built = []
    plain = curves_ui.curve_figure

    def counted(summary, **kwargs):
        built.append(kwargs["metric"])
        return plain(summary, **kwargs)

    monkeypatch.setattr(curves_ui, "curve_figure", counted)
    at = curves_page()
    for name, value in SMALL.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    sweep = at.session_state[SWEEP_KEY]
    tables = {}
    for metric in ("auc", "f1", "auc", "accuracy", "f1"):
        at.radio(key=key("curves.metric")).set_value(metric).run()
        assert not at.exception, at.exception
        assert chart_spec(at)["layout"]["yaxis"]["title"]["text"].startswith(
            {"auc": "ROC AUC", "f1": "F1", "accuracy": "Accuracy"}[metric]
        )
        tables.setdefault(metric, at.dataframe[0].value.to_dict())
        assert at.dataframe[0].value.to_dict() == tables[metric]
    assert built == ["accuracy", "auc", "f1"]  # each view built once, then kept
    candidates = [slot for slot in sweep._views if slot[0] == "candidate"]
    assert len(candidates) == 3
    # Another ε under discussion is another view: built, and its table says so.
    at.select_slider(key=key("curves.discuss")).set_value(0.5).run()
    assert built[-1] == "f1" and len(built) == 4
    assert "ε = 0.5: what it costs" in "\n".join(s.value for s in at.subheader)


def test_a_sweep_keeps_a_bounded_number_of_views():
    sweep = app_curves.SweepRun.__new__(app_curves.SweepRun)
    sweep._views = {}
    for i in range(app_curves.VIEWS_KEPT + 5):
        assert sweep.view("figure", i, lambda i=i: i * i) == i * i
    assert len(sweep._views) == app_curves.VIEWS_KEPT
    assert ("figure", 0) not in sweep._views  # the oldest went first
    assert sweep.view("figure", app_curves.VIEWS_KEPT + 4, lambda: -1) == (
        (app_curves.VIEWS_KEPT + 4) ** 2
    )


def test_before_a_sweep_the_chart_is_empty_axes_over_the_chosen_range():
    at = curves_page()
    at.get_by_key(key("curves.low")).set_value(0.1)
    at.get_by_key(key("curves.high")).set_value(1.0).run()
    assert len(charts(at)) == 1
    spec = chart_spec(at)
    assert spec["data"] == []  # no data at all: nothing computed from the records
    assert spec["layout"]["xaxis"]["type"] == "log"
    low, high = spec["layout"]["xaxis"]["range"]
    assert low < -1 < 0 < high  # log10 of 0.1 and 1, padded
    assert "press Run sweep" in spec["layout"]["annotations"][0]["text"]


def test_the_placeholder_range_follows_either_slider_order():
    fig = figures.placeholder_figure(0.01, 10.0)
    low, high = fig.layout.xaxis.range
    assert low < -2 and high > 1 and not fig.data


def test_one_requested_tree_count_is_one_line_across_epsilon():
    """ "auto" trees resolve per ε (fewer below ε = 1): the sweep's rows hold several
    resolved counts, yet the user asked for one setting, so no pin on the resolved count
    is offered and every private line spans every swept ε."""
    at = curves_page()
    settings = {**SMALL, "low": 0.1, "high": 10.0, "trees": ["auto"]}
    for name, value in settings.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    assert not at.exception, at.exception
    sweep = at.session_state[SWEEP_KEY]
    assert len(sweep.values("n_estimators")) > 1  # the case this test is about
    assert not [s for s in at.selectbox if s.key == "curves.pin.n_estimators"]
    swept = sorted(sweep.values("epsilon"))
    lines = [t for t in chart_spec(at)["data"] if t.get("mode") == "lines+markers"]
    assert len(lines) == 3  # one per mechanism
    for trace in lines:
        x = trace["x"]  # plotly packs numeric arrays as typed base64
        xs = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"])
        assert sorted(xs.tolist()) == swept, trace["name"]
