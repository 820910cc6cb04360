"""Negotiate with "auto" trees: the tree count resolves per ε (few trees below ε = 1,
where the forest is sized for its signal), and the curve is every swept ε of that one
request, with one twin, not the ε values of the first resolved count only."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate
from dpviz.app.session import DATA_KEY, SWEEP_KEY
from dpviz.app.support import PreparedData
from dpviz.evaluation.sweep import SERIES_DP
from dpviz.models.forest.estimator import AUTO_TREES
from tests.evaluation.test_sweep_batched import case

APP = str(Path(__file__).resolve().parent.parent.parent / "app.py")
EPSILONS = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]


@pytest.fixture(scope="module")
def auto_sweep() -> tuple[PreparedData, app_curves.SweepRun]:
    frame, schema = case(1500, 2)
    data = PreparedData("auto trees", frame, schema, "generated", "test")
    settings = negotiate.sweep_settings(AUTO_TREES, 3)
    settings = app_curves.SweepSettings(
        **{
            **{f: getattr(settings, f) for f in ("mechanisms", "depths", "data_splits", "seed")},
            "eps_low": 0.1,
            "eps_high": 5.0,
            "per_decade": 3,
            "n_estimators": (AUTO_TREES,),
            "folds": 3,
            "noise_seed": 1,
        }
    )
    return data, app_curves.run(data, settings)


def test_auto_trees_is_one_curve_of_every_swept_epsilon(auto_sweep):
    _, sweep = auto_sweep
    dp = sweep.summary[sweep.summary["series"] == SERIES_DP]
    assert dp["n_estimators"].nunique() > 1  # the request resolved to several counts
    choices = negotiate.curve_choices(sweep)
    assert choices["n_estimators"] == [AUTO_TREES]
    assert "n_estimators" not in negotiate.offered_keys(choices)
    config = {key: values[0] for key, values in choices.items()}
    assert negotiate.swept_epsilons(sweep, config) == EPSILONS
    choice = negotiate.suggest(sweep, "accuracy", 100.0, config)
    # The suggestion reads the whole curve: every swept ε, against the one twin.
    assert sorted(choice.curve["epsilon"]) == EPSILONS
    assert choice.epsilon == EPSILONS[0]  # a 100-point loss: the smallest ε meets it
    # Each point's ledger is its own resolved forest's.
    for eps in (0.1, 5.0):
        trees = dp[dp["epsilon"] == eps]["n_estimators"].iloc[0]
        assert f"{trees} trees" in negotiate.ledger_for(sweep, config, eps).describe()
    assert negotiate.parameters(sweep, config, "accuracy", 2.0)["n_estimators"] == AUTO_TREES


def test_the_negotiate_page_offers_every_swept_epsilon_with_auto_trees(auto_sweep):
    data, sweep = auto_sweep
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state[DATA_KEY] = data
    at.session_state[SWEEP_KEY] = sweep
    at.switch_page("pages/negotiate.py").run()
    assert not at.exception, at.exception
    # No curve choice of a resolved count (the sweep form's own "Trees" stays).
    assert not [s for s in at.selectbox if s.label == "Trees" and s.form_id != "negotiate.sweep"]
    decision = [s for s in at.select_slider if "ε" in s.label]
    assert decision, [s.label for s in at.select_slider]
    offered = [o for o in decision[0].options if o != "not chosen"]
    assert [float(o) for o in offered] == EPSILONS
    decision[0].set_value(EPSILONS[-1]).run()
    assert not at.exception, at.exception
