"""The ε odometer in the app (AppTest): a session of two trainings, a relabel and a
decision report, all downloaded, whose odometer total is the sum of the downloaded
files' ledgers; a budget that asks before a download passes it; the sidebar.

Small data (900 records, 2 folds, no scikit-learn reference). The model's noise is fresh,
but the assertions compare ledgers, which do not depend on it; the sweep behind the
report replays its noise (noise_seed=0), so its ε grid and choices are fixed."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as app_negotiate
from dpviz.app import odometer
from dpviz.app.session import (
    DATA_KEY,
    ODOMETER_KEY,
    RELABEL_KEY,
    RUN_KEY,
    SWEEP_KEY,
    AppState,
)
from dpviz.privacy.session_ledger import Release, SessionLedger, exact
from tests.app.test_algorithms_app import mixed_data
from tests.app.test_pages_teach_negotiate import APP, NEGOTIATE, key, run, texts
from tests.conftest import NEGOTIATE_SWEEP

TRAIN = "pages/train.py"


def download(at: AppTest, name: str) -> None:
    """Click the download button keyed ``name`` (enabled), as a browser would."""
    (button,) = [d for d in at.get("download_button") if d.key == name]
    assert not button.proto.disabled, f"{name} is disabled"
    button.click()
    run(at)


def train(at: AppTest, epsilon: float) -> None:
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.number_input(key=key("train.eps")).set_value(epsilon)
    run(at)
    at.button(key="train.button").click()
    run(at)
    assert not at.error, texts(at.error)


def the_odometer(at: AppTest) -> SessionLedger:
    (ledger,) = at.session_state[ODOMETER_KEY].values()
    return ledger


def stated(model_json: str) -> dict:
    """What a downloaded model file states of its privacy (its ledger)."""
    return json.loads(model_json)["privacy"]


@pytest.fixture(scope="module")
def data():
    return mixed_data()


def open_app(data) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state[DATA_KEY] = data
    return run(at)


def test_a_sessions_total_is_the_sum_of_its_downloaded_files_ledgers(data):
    at = open_app(data)
    sidebar = texts(at.sidebar.markdown)
    assert "### ε odometer" in sidebar and "Nothing released from this dataset yet" in sidebar
    assert odometer.NOT_RELEASES in texts(at.sidebar.caption)
    at.switch_page(TRAIN)
    run(at)

    # Training 1, seen on screen only: nothing is released.
    train(at, 1.0)
    assert the_odometer(at).releases == []
    assert "Each download is a release" in texts(at.caption)
    download(at, "train.model_download")
    files = {"model 1": at.session_state[RUN_KEY].model_json}

    # A relabel of model 1 with fresh noise, downloaded.
    at.number_input(key="train.relabel_eps").set_value(0.5)
    at.button(key="train.relabel").click()
    run(at)
    download(at, "train.relabel_download.1")
    files["relabel"] = at.session_state[RELABEL_KEY][-1].model_json

    # Training 2, downloaded.
    train(at, 0.5)
    download(at, "train.model_download")
    files["model 2"] = at.session_state[RUN_KEY].model_json

    # The decision report, downloaded from Negotiate.
    settings = dataclasses.replace(
        NEGOTIATE_SWEEP, mechanisms=("permute_flip",), eps_low=0.5, eps_high=5.0, noise_seed=0
    )
    at.session_state[SWEEP_KEY] = app_curves.run(data, settings)
    at.switch_page(NEGOTIATE)
    run(at)
    slider = at.select_slider(key=key("negotiate.chosen"))
    slider.set_value(float(slider.options[-1]) if slider.value is None else slider.value)
    run(at)
    download(at, "negotiate.report")

    ledger = the_odometer(at)
    assert [r.kind for r in ledger.releases] == ["model", "relabel", "model", "report"]
    assert [r.lineage for r in ledger.releases] == ["model 1", "model 1", "model 2", None]
    # Each booked release carries the ledger its downloaded file states.
    for release, name in zip(ledger.releases, files):
        assert release.epsilon == stated(files[name])["epsilon_total"]
        assert release.summary == stated(files[name])["summary"]
    first, relabel, second = (exact(stated(files[n])["epsilon_total"]) for n in files)
    # The relabelled file's ledger books the first release of the same leaves: the first
    # file's ε is in it, so the two files of model 1 cost the relabelled file's ε.
    earlier = json.loads(files["relabel"])["earlier_releases"]
    assert len(earlier) == 1 and relabel > first
    assert ledger.private_epsilon == first + (relabel - first) + second
    # The report's held-out scores are NOT private: the session then has no guarantee.
    assert ledger.epsilon is None and not ledger.releases[-1].private
    assert [r["adds"] for r in ledger.rows()] == [
        float(first),
        float(relabel - first),
        float(second),
        None,
    ]

    # The sidebar says so (drawn by app.py around every page).
    at.switch_page("app.py")
    run(at)
    assert "NO guarantee: 1 downloaded file carries" in texts(at.sidebar.error)
    assert f"alone spent ε = {float(ledger.private_epsilon):g}" in texts(at.sidebar.error)
    lines = texts(at.sidebar.caption)
    assert "4. Decision report" in lines and "voids the guarantee" in lines
    session_json = [d for d in at.get("download_button") if d.key == "odometer.ledger_download"]
    assert session_json and session_json[0].proto.label == "Download the session ledger (JSON)"


def test_the_report_lists_every_release_of_the_session(data):
    settings = dataclasses.replace(
        NEGOTIATE_SWEEP, mechanisms=("permute_flip",), eps_low=0.5, eps_high=5.0, noise_seed=0
    )
    sweep = app_curves.run(data, settings)
    config = {k: v[0] for k, v in app_negotiate.curve_choices(sweep).items()}
    choice = app_negotiate.suggest(sweep, "accuracy", 50.0, config)
    session = SessionLedger(data.name)
    session.book(odometer.schema_release(data.schema, "mixed.schema.json"))
    file = "dpviz_decision_epsilon_1.html"
    rows = odometer.report_rows(session, odometer.report_release(file, 1.0))
    html = app_negotiate.report_html(
        sweep,
        data.schema,
        config=config,
        choice=choice,
        chosen=1.0,
        candidates=[1.0],
        prior=0.5,
        releases=rows,
    )
    section = html[html.index("<h2>Releases of this session</h2>") :]
    assert "mixed.schema.json" in section and file in section
    assert "Decision report (chosen ε = 1) (this report)" in section
    assert "voids the guarantee" in section and "no guarantee" in section


def test_a_download_past_the_budget_asks_first(data):
    at = open_app(data)
    at.number_input(key="odometer.budget.0").set_value(0.5)
    run(at)
    assert "Budget ε = 0.5: ε = 0.5 left." in texts(at.sidebar.caption)
    at.switch_page(TRAIN)
    run(at)
    train(at, 1.0)
    (button,) = [d for d in at.get("download_button") if d.key == "train.model_download"]
    assert button.proto.disabled
    assert "takes the session to ε = 1, over the budget of ε = 0.5" in texts(at.warning)
    assert the_odometer(at).releases == []
    at.checkbox(key="train.model_download.confirm").check()
    run(at)
    download(at, "train.model_download")
    assert the_odometer(at).epsilon == Fraction(1)
    # Booked: the same file again adds nothing and asks nothing; a table of held-out
    # scores (NOT private) passes any budget and asks.
    (button,) = [d for d in at.get("download_button") if d.key == "train.model_download"]
    assert not button.proto.disabled
    assert "train.model_download.confirm" not in [c.key for c in at.checkbox]
    (table,) = [d for d in at.get("download_button") if d.key == "train.metrics_download"]
    assert table.proto.disabled and "Metrics of the folds carries NO guarantee" in texts(
        at.warning
    )
    at.checkbox(key="train.metrics_download.confirm").check()
    run(at)
    download(at, "train.metrics_download")
    assert the_odometer(at).epsilon is None and the_odometer(at).private_epsilon == 1
    # Each release not covered asks again: the tick is cleared once it is booked.
    assert not at.checkbox(key="train.metrics_download.confirm").value
    at.switch_page("app.py")
    run(at)
    assert "Budget ε = 0.5: passed (a release has no guarantee)." in texts(at.sidebar.caption)


# --- the logic behind the sidebar and the relabel (no Streamlit) -----------------------------


def test_budget_words_and_release_lines():
    session = SessionLedger("d")
    assert odometer.budget_text(session) == "No budget set."
    session.set_budget(1.0)
    session.book(Release("model", "Model", "m.json", 0.75, "s", lineage="model 1"))
    assert odometer.budget_text(session) == "Budget ε = 1: ε = 0.25 left."
    assert odometer.budget_fraction(session) == 0.75
    session.book(Release("relabel", "Relabel", "r.json", 1.5, "s", lineage="model 1"))
    assert odometer.budget_text(session) == "Budget ε = 1: passed by 0.5 (you confirmed it)."
    session.book(Release("model", "Model", "m.json", 0.75, "s", lineage="model 1"))
    session.book(odometer.not_private_table("Leaf table", "l.csv", odometer.TRUE_COUNTS))
    assert odometer.budget_fraction(session) is None
    assert odometer.release_lines(session) == [
        "1. Model · `m.json` · ε = 0.75 · adds 0.75",
        "2. Relabel · `r.json` · ε = 1.5 · adds 0.75",
        "3. Model · `m.json` · ε = 0.75 · adds 0 (already counted)",
        "4. Leaf table · `l.csv` · NOT private · voids the guarantee",
    ]


def test_a_declared_schema_costs_nothing_and_an_inferred_one_voids_the_guarantee(data):
    declared = odometer.schema_release(data.schema, "s.json")
    assert declared.epsilon == 0.0
    inferred = odometer.schema_release(dataclasses.replace(data.schema, inferred=True), "s.json")
    assert not inferred.private


def test_relabel_copies_the_model_and_books_the_earlier_release(data):
    from dpviz.app import train as app_train

    run_ = app_train.train(data, app_train.TrainSettings(folds=2, sklearn_reference=False))
    before = run_.model.ledger_.epsilon_total
    first = odometer.relabel(run_.model, "fletcher_islam", 0.5, "model 1", 1)
    assert run_.model.ledger_.epsilon_total == before  # the trained model is untouched
    earlier = json.loads(first.model_json)["earlier_releases"]
    assert len(earlier) == 1 and first.release.lineage == "model 1"
    second = odometer.relabel(first.model, "fletcher_islam", 0.5, "model 1", 2)
    assert len(json.loads(second.model_json)["earlier_releases"]) == 2
    assert exact(second.release.epsilon) - exact(first.release.epsilon) == exact(
        first.release.epsilon
    ) - exact(before)  # the same ε again: the same increment
    with pytest.raises(ValueError, match="cannot be relabelled"):
        odometer.relabel(object(), "dpboost", 1.0, "model 2", 1)


def test_each_run_is_a_lineage_of_its_own_however_it_was_stored():
    state = AppState({})
    first, second = object(), object()
    state.set_run(first)
    assert state.lineage == "model 1" and state.lineage == "model 1"
    state.store[RUN_KEY] = second  # not through set_run
    assert state.lineage == "model 2" and state.relabels == []
