"""The view controls of Curves, Negotiate, Trees and Leaves are Streamlit fragments:
changing one reruns the fragment only, never the page around it nor any computation.

AppTest reruns the whole script on every interaction; :func:`fragment_rerun` makes it
rerun only the page's fragments, as the browser does when a widget inside a fragment
changes (it sets the rerun's ``fragment_id_queue``, Streamlit's own mechanism). Each
test counts calls of a function the page makes OUTSIDE its fragment (it must not be
called again) and checks that the view really changed.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import streamlit.testing.v1.local_script_runner as local_runner
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import models as app_models
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY, SWEEP_KEY
from dpviz.evaluation.demos import DEFAULT_DEMO
from tests.page_checks import chart_spec, key, texts

ROOT = Path(__file__).resolve().parent.parent.parent
APP = str(ROOT / "app.py")


@contextlib.contextmanager
def fragment_rerun(at: AppTest, monkeypatch):
    """Within the block, ``.run()`` reruns only the fragments the page registered."""
    fragments = list(at._fragment_storage._fragments)  # registered by the last run
    assert fragments, "the page registered no fragment"
    plain = local_runner.RerunData

    def scoped(**kwargs):
        return plain(**kwargs, fragment_id_queue=fragments, is_fragment_scoped_rerun=True)

    with monkeypatch.context() as patch:
        patch.setattr(local_runner, "RerunData", scoped)
        yield


def counting(monkeypatch, module, name: str) -> list:
    """Count calls of ``module.name`` (the pages call it through the module)."""
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def page(path: str, **state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for name, value in state.items():
        at.session_state[name] = value
    at._fragment_storage.clear()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


@pytest.fixture(scope="module")
def data():
    return support.prepare_demo(DEFAULT_DEMO)


@pytest.fixture(scope="module")
def sweep(data):
    settings = app_curves.SweepSettings(
        eps_low=0.1, eps_high=1.0, per_decade=3, n_estimators=(10,), folds=2
    )
    return app_curves.run(data, settings)


@pytest.fixture(scope="module")
def trained(data):
    settings = app_train.TrainSettings(n_estimators=10, sklearn_reference=False, folds=2)
    return app_train.train(data, settings)


def test_switching_the_curves_metric_reruns_the_view_only(monkeypatch, data, sweep):
    at = page("pages/curves.py", **{DATA_KEY: data, SWEEP_KEY: sweep})
    outside = counting(monkeypatch, app_curves, "algorithm_options")
    sweeps = counting(monkeypatch, app_curves, "run")
    with fragment_rerun(at, monkeypatch):
        at.radio(key=key("curves.metric")).set_value("f1").run()
    assert not at.exception, at.exception
    assert chart_spec(at)["layout"]["yaxis"]["title"]["text"].startswith("F1")
    assert outside == [] and sweeps == [] and at.session_state[SWEEP_KEY] is sweep
    at.radio(key=key("curves.metric")).set_value("auc").run()  # a whole rerun, for contrast
    assert outside and sweeps == []


def test_choosing_an_epsilon_on_negotiate_reruns_the_negotiation_only(monkeypatch, data, sweep):
    at = page("pages/negotiate.py", **{DATA_KEY: data, SWEEP_KEY: sweep})
    sweeps = counting(monkeypatch, app_curves, "run")
    outside = counting(monkeypatch, app_curves.SweepRun, "describe")  # the page's caption
    chosen = at.select_slider(key=key("negotiate.chosen"))
    # The options are the swept ε values and 'not chosen' (pre-selected when no ε meets
    # the target): pick an ε other than the current choice.
    numbers = [v for v in chosen.options if v != "not chosen"]
    other = [v for v in numbers if str(v) != str(chosen.value)][0]
    with fragment_rerun(at, monkeypatch):
        chosen.set_value(float(other)).run()
    assert not at.exception, at.exception
    assert at.select_slider(key=key("negotiate.chosen")).value == float(other)
    assert sweeps == [] and outside == [] and at.session_state[SWEEP_KEY] is sweep


def test_changing_the_tree_view_reruns_the_view_only(monkeypatch, data, trained):
    at = page("pages/trees.py", **{DATA_KEY: data, RUN_KEY: trained})
    outside = counting(monkeypatch, app_models, "summary_caption")
    drawn = counting(monkeypatch, app_models, "draw_tree")
    with fragment_rerun(at, monkeypatch):
        at.radio(key=key("trees.view")).set_value("Data-owner diagnostics (not private)").run()
    assert not at.exception, at.exception
    assert "NOT private" in chart_spec(at)["layout"]["title"]["text"]
    assert outside == [] and len(drawn) == 1


def test_typing_leaf_counts_reruns_the_calculator_only(monkeypatch, data, trained):
    at = page("pages/leaves.py", **{DATA_KEY: data, RUN_KEY: trained})
    table = counting(monkeypatch, app_models, "leaves_view")
    with fragment_rerun(at, monkeypatch):
        at.text_input(key=key("leaves.counts")).set_value("5, x").run()
    assert "whole numbers" in texts(at.error) and not at.exception
    assert table == []  # the model's leaf table (NOT private) was not recomputed
