"""The Curves page's "Compare with other DP libraries" (issue 30): the peers' rows join a
finished sweep (its figure, both CSVs and the decision report), the control in AppTest, the
one line shown when the libraries are missing, and finishing peers that were stopped."""

from __future__ import annotations

import dataclasses
import importlib
import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as app_negotiate
from dpviz.app import peers as app_peers
from dpviz.app.support import prepare_demo
from dpviz.evaluation import peers as peers
from dpviz.evaluation.peers import INSTALL_HINT, SERIES_PEER
from dpviz.evaluation.sweep import SweepCancelled
from tests.page_checks import chart_spec, key, texts

ROOT = Path(__file__).resolve().parent.parent.parent
SMALL = {"low": 0.1, "high": 1.0, "per_decade": 3, "mechs": ["permute_flip"], "folds": 2}
QUICK = ["diffprivlib_gnb", "diffprivlib_lr"]


@pytest.fixture(autouse=True)
def one_process(monkeypatch):
    """The peers in the test's process: no worker pool to start per test."""
    monkeypatch.setattr(app_peers, "MAX_PEER_JOBS", 1)


@pytest.fixture(scope="module")
def data():
    return prepare_demo("demo_csv")


@pytest.fixture(scope="module")
def small(data):
    settings = app_curves.SweepSettings(
        eps_low=0.1, eps_high=1.0, per_decade=3, mechanisms=("permute_flip",), folds=2
    )
    return app_curves.run(data, settings)


def test_peer_rows_join_the_sweep_its_csvs_and_report(small, data):
    sweep, notes = app_peers.with_peers(small, data, QUICK, n_jobs=1)
    assert notes == [] and sweep.settings.peers == tuple(QUICK)
    added = sweep.result.results[sweep.result.results.series == SERIES_PEER]
    # Every peer at every ε of the sweep, on each of its folds.
    assert len(added) == len(QUICK) * len(small.settings.epsilons) * small.settings.folds
    assert app_peers.present(sweep) == ["diffprivlib_lr", "diffprivlib_gnb"]
    # The sweep's own lines and tables are unchanged.
    assert sweep.series() == small.series()
    pd.testing.assert_frame_equal(
        sweep.candidate(1.0, "accuracy", {}), small.candidate(1.0, "accuracy", {})
    )
    for text in (sweep.results_csv, sweep.summary_csv):
        frame = pd.read_csv(io.StringIO(text))
        rows = frame[frame.series == SERIES_PEER]
        assert set(rows.algorithm) == set(QUICK) and set(rows.mechanism) == {"ε-DP"}
    table = app_peers.table(sweep, [1.0], "accuracy")
    assert list(table["library"]) == ["diffprivlib LR (ε-DP)", "diffprivlib GNB (ε-DP)"]
    assert list(table["guarantee"]) == ["1-DP", "1-DP"]

    choices = app_negotiate.curve_choices(sweep)  # the negotiation sees the forest only
    config = {k: v[0] for k, v in choices.items()}
    choice = app_negotiate.suggest(sweep, "accuracy", 5.0, config)
    html = app_negotiate.report_html(
        sweep, data.schema, config=config, choice=choice, chosen=1.0, candidates=[0.1], prior=0.5
    )
    section = html.split("<h2>Other DP libraries on the same folds</h2>", 1)[1].split("<h2>")[0]
    assert "NOT private" in section and "diffprivlib GNB (ε-DP)" in section
    assert "0.1-DP" in section and "1-DP" in section
    plain = app_negotiate.report_html(
        small, data.schema, config=config, choice=choice, chosen=1.0, candidates=[0.1], prior=0.5
    )
    assert "Other DP libraries" not in plain


def test_a_stopped_run_keeps_the_sweep_and_another_dataset_is_refused(small, data):
    asked = dataclasses.replace(
        small, settings=dataclasses.replace(small.settings, peers=("diffprivlib_gnb",))
    )
    with pytest.raises(SweepCancelled):
        app_peers.with_peers(asked, data, ["diffprivlib_gnb"], cancel=lambda: True, n_jobs=1)
    assert app_peers.pending(asked, data.schema) == ["diffprivlib_gnb"]
    assert app_peers.pending(small, data.schema) == []
    other = dataclasses.replace(data, frame_id="upload:another")
    with pytest.raises(ValueError, match="another dataset"):
        app_peers.with_peers(small, other, ["diffprivlib_gnb"])


def _curves_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.run()
    at.switch_page("pages/curves.py").run()
    assert not at.exception, at.exception
    for name, value in {**SMALL, "sklearn": False}.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    return at


def test_curves_page_compares_with_other_libraries():
    at = _curves_page()
    control = at.multiselect(key=key("curves.peers"))
    assert control.label.startswith("Compare with other DP libraries")
    assert "DP-EBM ((ε, 1e-6)-DP) — slower: about 1–3 s a fit" in control.options
    control.set_value(QUICK)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error
    sweep = at.session_state["dpviz.sweep"]
    assert sweep.settings.peers == tuple(QUICK)
    assert app_peers.present(sweep) == ["diffprivlib_lr", "diffprivlib_gnb"]
    names = [t.get("name") for t in chart_spec(at)["data"]]
    assert "diffprivlib LR (ε-DP)" in names and "diffprivlib GNB (ε-DP)" in names
    assert "Other DP libraries at ε = 1" in texts(at.markdown)
    table = next(d.value for d in at.dataframe if "guarantee" in d.value and "library" in d.value)
    assert list(table["guarantee"]) == ["1-DP", "1-DP"]
    # A view change reads the sweep: the peers stay, nothing reruns.
    at.radio(key=key("curves.metric")).set_value("auc").run()
    assert at.session_state["dpviz.sweep"] is sweep
    names = [t.get("name") for t in chart_spec(at)["data"]]
    assert "diffprivlib GNB (ε-DP)" in names


def test_curves_page_finishes_peers_that_were_stopped():
    at = _curves_page()
    at.button[0].click().run()
    sweep = at.session_state["dpviz.sweep"]
    assert app_peers.present(sweep) == []
    # As a stop leaves it: the peers asked for, none of their rows.
    at.session_state["dpviz.sweep"] = dataclasses.replace(
        sweep, settings=dataclasses.replace(sweep.settings, peers=("diffprivlib_gnb",))
    )
    at.run()
    assert "did not finish (stopped): diffprivlib GNB (ε-DP)" in texts(at.info)
    at.button(key="curves.peers.resume").click().run()
    assert not at.exception, at.exception
    assert app_peers.present(at.session_state["dpviz.sweep"]) == ["diffprivlib_gnb"]
    assert "did not finish" not in texts(at.info)
    assert "diffprivlib GNB (ε-DP)" in [t.get("name") for t in chart_spec(at)["data"]]


def test_without_the_libraries_the_control_says_how_to_add_them(monkeypatch):
    real = importlib.import_module

    def absent(name, *a, **k):
        if name.split(".")[0] in ("diffprivlib", "interpret"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **k)

    monkeypatch.setattr(peers.importlib, "import_module", absent)
    at = _curves_page()
    assert at.multiselect(key="curves.peers.absent").disabled
    note = [c.value for c in at.caption if "Other DP libraries" in c.value]
    assert note == [
        "Other DP libraries: diffprivlib and interpret-core not installed: "
        f"{INSTALL_HINT} adds the other libraries."
    ]
    at.button[0].click().run()  # the sweep still runs, without them
    assert not at.exception, at.exception
    assert at.session_state["dpviz.sweep"].settings.peers == ()
