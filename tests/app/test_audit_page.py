"""The Audit page through AppTest: the attack runs on the session's data and draws its ROC
chart with the verdict and the NOT-private label; the whole-release audit runs with its
widgets; and the page's audit refutes a halved-noise mutant.

Why the mutant assertion is sound: the audit's Clopper–Pearson bound exceeds the
ledger's ε only with probability ≤ 5% for correct code, and for the mutant (leaf noise
at 2ε, x alone in its leaf, all of ε on the leaves) the expected bound with 200 fits per
dataset is about 1.6, several standard deviations above the ledger's ε = 1
(tests/evaluation/test_audit_pair.py states the same).
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.scriptrunner import RerunData, get_script_run_ctx
from streamlit.testing.v1 import AppTest

from dpviz.app import audit as app_audit
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY
from dpviz.app.support import PreparedData
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Feature, Schema
from tests.page_checks import texts

ROOT = Path(__file__).resolve().parent.parent.parent
APP = str(ROOT / "app.py")
PAGE = "pages/audit.py"
LEAVES_ONLY = {"declared_n": 40, "prior_share": 0.0, "split_points": "uniform"}


def open_audit(data: PreparedData | None = None, run=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    if data is not None:
        at.session_state[DATA_KEY] = data
    if run is not None:
        at.session_state[RUN_KEY] = run
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def town_data() -> PreparedData:
    """200 records with a discrete feature and a public schema."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame(
        {
            "age": rng.uniform(18, 90, 200).round(1),
            "town": rng.choice(["north", "south", "east"], 200),
        }
    )
    frame["outcome"] = np.where(frame["age"] > 50, "high", "low")
    schema = Schema(
        "outcome",
        ("low", "high"),
        (
            Feature("age", "continuous", low=18.0, high=90.0),
            Feature("town", "discrete", values=("north", "south", "east")),
        ),
    )
    return PreparedData("towns", frame, schema, "public schema", frame_id="towns")


def test_the_attack_draws_its_roc_chart_with_the_verdict_on_the_demo():
    at = open_audit()
    assert "the attack uses the defaults" in texts(at.info)
    at.number_input(key="audit.epsilon").set_value(2.0).run()
    at.button(key="audit.attack").click().run()
    assert not at.exception, at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and "Membership attack ROC" in charts[0].proto.spec
    table = at.dataframe[0].value
    assert list(table["model"]) == ["DP model", "non-private reference"]
    assert (table["ε-DP bound"] == round(np.tanh(1.0), 3)).all()
    assert "ε = 2 allows" in texts(at.success) + texts(at.error)
    assert "NOT private" in texts(at.caption)
    # A changed ε says the shown results are for another configuration.
    at.number_input(key="audit.epsilon").set_value(0.5).run()
    assert "another configuration" in texts(at.caption)


def test_the_release_audit_runs_on_the_trained_configuration():
    data = town_data()
    run = types.SimpleNamespace(
        fingerprint=data.fingerprint,
        settings=app_train.TrainSettings(algorithm="friedman_schuster", epsilon=1.0),
    )
    at = open_audit(data, run)
    assert "Train page's run" in texts(at.caption)
    at.number_input(key="audit.runs").set_value(20).run()
    at.button(key="audit.release").click().run()
    assert not at.exception, at.exception
    said = texts(at.success) + texts(at.warning) + texts(at.error)
    assert "20 fits on each dataset" in said and "claimed ε = 1" in said
    assert not [b for b in at.button if b.key == "audit.stop"]  # a finished run has no Stop


def test_the_page_audit_refutes_a_halved_noise_mutant(monkeypatch):
    real = NoiseSource.discrete_laplace
    monkeypatch.setattr(
        NoiseSource, "discrete_laplace", lambda self, keys, k, eps: real(self, keys, k, 2 * eps)
    )
    data = town_data()
    settings = app_train.TrainSettings(algorithm="fletcher_islam", epsilon=1.0, params=LEAVES_ONLY)
    at = open_audit(data, types.SimpleNamespace(fingerprint=data.fingerprint, settings=settings))
    at.number_input(key="audit.runs").set_value(200).run()
    at.button(key="audit.release").click().run()
    assert not at.exception, at.exception
    assert "REFUTED" in texts(at.error), texts(at.success)


def audit_after_training(algorithm: str, epsilon: float) -> AppTest:
    """The Audit page on the town data after a Train run of ``algorithm`` at ``epsilon``."""
    data = town_data()
    settings = app_train.TrainSettings(algorithm=algorithm, epsilon=epsilon)
    return open_audit(data, types.SimpleNamespace(fingerprint=data.fingerprint, settings=settings))


def test_dpboost_offers_its_grown_and_macro_f1_audits_with_a_bound_per_booked_entry():
    at = audit_after_training("dpboost", 1.0)
    subject = at.radio(key="audit.subject")
    assert subject.options[0] == app_audit.SCHEMA_SUBJECT and len(subject.options) == 4
    schema_pair = "built from your *schema* only"
    assert schema_pair in texts(at.markdown)
    subject.set_value("macro_f1").run()
    assert "Audited at ε = 1, registry defaults" in texts(at.caption)
    # The paragraph describes the pair the variant fits, not the schema pair.
    assert schema_pair not in texts(at.markdown)
    assert "600 records" in texts(at.markdown)
    assert at.number_input(key="audit.runs.macro_f1").value == 100
    at.number_input(key="audit.runs.macro_f1").set_value(20).run()
    at.button(key="audit.release").click().run()
    assert not at.exception, at.exception
    assert "20 fits on each dataset" in said(at) and "claimed ε = 1" in said(at), said(at)
    parts = at.dataframe[-1].value
    assert list(parts["booked entry"])[-1] == "all parts"
    assert "score histogram (x's bin, class 'yes')" in list(parts["booked entry"])
    # Another subject is another configuration: its result is not passed off as this one's.
    at.radio(key="audit.subject").set_value("grown").run()
    assert "Audited at ε = 5" in texts(at.caption)
    assert "6,400 records" in texts(at.markdown) and schema_pair not in texts(at.markdown)
    assert "This audit is of another configuration: run it again." in texts(at.caption)
    at.radio(key="audit.subject").set_value("random").run()
    assert "Audited at ε = 1" in texts(at.caption) and "3,000 records" in texts(at.markdown)


@pytest.mark.parametrize(
    "variant, says, entry",
    [
        ("macro_f1", "out-of-bag scores", "score histogram (x's cell)"),
        ("accuracy", "accuracy cut", "score histogram (x's cell, x's class)"),
    ],
)
def test_the_forest_offers_its_histogram_audits_from_epsilon_one(variant, says, entry):
    at = audit_after_training("fletcher_islam", 0.5)
    subject = at.radio(key="audit.subject")
    assert subject.options[0] == app_audit.SCHEMA_SUBJECT and len(subject.options) == 3
    subject.set_value(variant).run()
    assert "Audited at ε = 1, registry defaults" in texts(at.caption)
    assert says in texts(at.markdown)
    at.number_input(key=f"audit.runs.{variant}").set_value(20).run()
    at.button(key="audit.release").click().run()
    assert not at.exception, at.exception
    assert "20 fits on each dataset" in said(at), said(at)
    parts = at.dataframe[-1].value
    assert entry in list(parts["booked entry"])


def test_algorithms_other_than_dpboost_and_the_forest_have_one_audit_subject():
    at = trained_town()
    assert not [r for r in at.radio if r.key == "audit.subject"]


REAL_AUDIT = app_audit.run_release_audit


def click_during_the_audit(
    monkeypatch, key: str, at_fit: int, fast: bool = False, **value
) -> list[int]:
    """Make the browser's click on the widget ``key`` (a button; or the new ``value`` of
    another widget, e.g. ``double_value=2.0``) arrive while the audit runs, just before
    its progress update after ``at_fit`` fits per dataset. Without ``fast``: a rerun
    request whose widget states carry it (as the browser sends them), which Streamlit
    raises at the script's next ``st.*`` call and then runs. With ``fast``: what the
    server does by default (``runner.fastReruns``), a stop request to this run (the
    click's run then starts apart: the test runs it). Returns the fits asked of each
    audit started."""
    started: list[int] = []

    def click() -> None:
        ctx = get_script_run_ctx()
        if fast:
            ctx.script_requests.request_stop()
            return
        state = ctx.session_state
        id_of = state._state._key_id_mapper.get_id_from_key  # Streamlit's key → widget id
        states = WidgetStates()
        for widget in state.get_widget_states():
            # The click on Run was the last run's (the browser no longer sends it); the
            # changed widget is sent with its new value.
            if widget.id not in (id_of("audit.release"), id_of(key)):
                states.widgets.append(widget)
        states.widgets.add(id=id_of(key), **(value or {"trigger_value": True}))
        ctx.script_requests.request_rerun(
            RerunData(widget_states=states, page_script_hash=ctx.page_script_hash)
        )

    def audit(data, config, n_runs, progress=None, cancel=None, variant=None):
        started.append(n_runs)

        def update(done: int, total: int) -> None:
            if done == at_fit:
                click()
            progress(done, total)

        return REAL_AUDIT(data, config, n_runs, progress=update, cancel=cancel, variant=variant)

    monkeypatch.setattr(app_audit, "run_release_audit", audit)
    return started


def trained_town() -> AppTest:
    data = town_data()
    run = types.SimpleNamespace(
        fingerprint=data.fingerprint,
        settings=app_train.TrainSettings(algorithm="friedman_schuster", epsilon=1.0),
    )
    at = open_audit(data, run)
    at.number_input(key="audit.runs").set_value(2000).run()
    return at


def said(at: AppTest) -> str:
    return texts(at.success) + texts(at.warning) + texts(at.error)


@pytest.mark.parametrize("fast", [False, True], ids=["rerun", "fast rerun"])
def test_stop_ends_the_audit_at_the_next_fit_and_shows_the_bound_over_the_fits_made(
    monkeypatch, fast
):
    at = trained_town()
    started = click_during_the_audit(monkeypatch, "audit.stop", at_fit=3, fast=fast)
    at.button(key="audit.release").click().run()
    if fast:  # the click's own run, which the server starts beside the stopped one
        at.button(key="audit.stop").click().run()
    assert not at.exception, at.exception
    assert started == [2000]  # the click's run showed the result, ran no audit
    assert "Stopped after 3 fits per dataset (of 2,000 asked)" in said(at), said(at)
    assert "3 fits on each dataset" in said(at) and "claimed ε = 1" in said(at)
    assert not [b for b in at.button if b.key == "audit.stop"]  # the run is over


def test_another_click_while_the_audit_runs_keeps_its_bound_too(monkeypatch):
    at = trained_town()
    started = click_during_the_audit(monkeypatch, "audit.epsilon", at_fit=5, double_value=2.0)
    at.button(key="audit.release").click().run()
    assert not at.exception, at.exception
    assert started == [2000] and "Stopped after 5 fits per dataset" in said(at), said(at)
    assert at.number_input(key="audit.epsilon").value == 2.0
    assert "This audit is of another configuration" in texts(at.caption)
