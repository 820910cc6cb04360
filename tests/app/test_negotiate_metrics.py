"""The Negotiate page's metric: every metric the sweep scored is offered (macro F1
too), the suggestion, the candidate ε values and their cards follow a switch, and a
suggestion met only by a model that predicts a single class is never shown green."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as negotiate
from dpviz.app import support as support
from dpviz.app.session import DATA_KEY, SWEEP_KEY
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.evaluation.sweep import SweepResult
from dpviz.figures.common import ALL_METRIC_NAMES
from tests.conftest import NEGOTIATE_SWEEP
from tests.page_checks import key, texts
from tests.rare_data import rare_data

APP = str(Path(__file__).resolve().parent.parent.parent / "app.py")
NEGOTIATE = "pages/negotiate.py"


@pytest.fixture(scope="module")
def sweep() -> app_curves.SweepRun:
    return app_curves.run(support.prepare_demo(DEFAULT_DEMO), NEGOTIATE_SWEEP)


def open_negotiate(sweep: app_curves.SweepRun, data=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if data is not None:
        at.session_state[DATA_KEY] = data
    at.session_state[SWEEP_KEY] = sweep
    at.switch_page(NEGOTIATE).run()
    assert not at.exception, at.exception
    return at


def test_metric_choices_are_the_metrics_the_sweep_scored(sweep):
    assert negotiate.metric_choices(sweep) == {
        "accuracy": "Accuracy",
        "auc": "ROC AUC",
        "f1": "F1",
        "macro_f1": "Macro F1",
    }
    # A sweep whose rows hold no macro F1 does not offer it.
    results = sweep.result.results.drop(columns=["macro_f1", "majority_macro_f1"])
    older = dataclasses.replace(sweep, result=SweepResult(results))
    assert list(negotiate.metric_choices(older)) == ["accuracy", "auc", "f1"]


def test_candidates_follow_the_suggestion_until_picked_by_hand():
    epsilons = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    # Nothing shown yet, or an ε the curve lacks: the defaults around the suggestion.
    assert negotiate.follow_candidates(None, "not yet", epsilons, 1.0) == [0.5, 1.0, 2.0]
    assert negotiate.follow_candidates([3.0], 1.0, epsilons, 1.0) == [0.5, 1.0, 2.0]
    # A hand-picked set stays while the suggestion stays ...
    assert negotiate.follow_candidates([0.1, 10.0], 1.0, epsilons, 1.0) is None
    # ... and moves with it (another metric or loss), to no suggestion too.
    assert negotiate.follow_candidates([0.1, 10.0], 1.0, epsilons, 5.0) == [2.0, 5.0, 10.0]
    assert negotiate.follow_candidates([0.5, 1.0], 1.0, epsilons, None) == [2.0, 5.0, 10.0]


def test_cards_and_candidates_follow_every_metric_macro_f1_included(sweep):
    at = open_negotiate(sweep)
    radio = at.radio(key=key("negotiate.metric"))
    assert list(radio.options) == ["Accuracy", "ROC AUC", "F1", "Macro F1"]
    config = {k: v[0] for k, v in negotiate.curve_choices(sweep).items()}
    epsilons = negotiate.swept_epsilons(sweep, config)
    rows = negotiate._curve_rows(sweep, config)
    loss = at.number_input(key=key("negotiate.loss")).value
    for metric in ("auc", "macro_f1", "f1", "accuracy"):
        at.radio(key=key("negotiate.metric")).set_value(metric)
        at.run()
        assert not at.exception, at.exception
        choice = negotiate.suggest(sweep, metric, loss, config)
        candidates = at.session_state[key("negotiate.candidates")]
        assert candidates == negotiate.default_candidates(epsilons, choice.epsilon)
        cards = [m for m in at.metric if m.label.endswith("(NOT private)")]
        assert [m.label for m in cards] == [f"{ALL_METRIC_NAMES[metric]} (NOT private)"] * len(
            candidates
        )
        for card, eps in zip(cards, candidates):
            row = rows[rows["epsilon"] == eps].iloc[0]
            mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
            assert card.value == f"{100 * mean:.1f}% ± {100 * std:.1f}"
    # A hand-picked candidate stays while the suggestion does (a new prior moves nothing).
    picked = [epsilons[0], epsilons[-1]]
    at.multiselect(key=key("negotiate.candidates")).set_value(picked)
    at.run()
    at.select_slider(key=key("negotiate.prior")).set_value(0.1)
    at.run()
    assert at.session_state[key("negotiate.candidates")] == picked


def test_a_single_class_model_never_gets_the_green_meets_it():
    settings = dataclasses.replace(
        NEGOTIATE_SWEEP, mechanisms=("permute_flip",), eps_low=0.5, folds=3, noise_seed=0
    )
    data = rare_data()
    rare = app_curves.run(data, settings)
    at = open_negotiate(rare, data)
    config = {k: v[0] for k, v in negotiate.curve_choices(rare).items()}
    choice = negotiate.suggest(rare, "accuracy", 2.0, config)
    view = negotiate.suggestion_view(rare, choice, config)
    # Accuracy on 97% "no" is met by always answering "no": on paper only.
    assert choice.epsilon is not None and view.state == "hollow"
    assert "predicts a single class" in view.caveat
    assert "meets it" not in texts(at.success)
    warnings = texts(at.warning)
    assert f"ε = {choice.epsilon:g} meets it only on paper" in warnings
    assert view.caveat in warnings


def test_only_a_real_answer_is_green(sweep, monkeypatch):
    config = {k: v[0] for k, v in negotiate.curve_choices(sweep).items()}
    # 100 points of loss: the smallest swept ε meets it, whatever the noise drew.
    choice = negotiate.suggest(sweep, "auc", 100.0, config)
    assert choice.epsilon == negotiate.swept_epsilons(sweep, config)[0]
    monkeypatch.setattr(negotiate, "suggestion_warning", lambda *args: None)
    view = negotiate.suggestion_view(sweep, choice, config)
    assert view.state == "met" and view.caveat is None
    assert view.text.startswith(f"**Smallest ε that meets it: {choice.epsilon:g}.** ")
    monkeypatch.setattr(negotiate, "suggestion_warning", lambda *args: "Careful: one class")
    view = negotiate.suggestion_view(sweep, choice, config)
    assert view.state == "hollow" and view.caveat == "Careful: one class"
    none = dataclasses.replace(choice, epsilon=None, reason="No swept ε meets it.")
    view = negotiate.suggestion_view(sweep, none, config)
    assert (view.state, view.text, view.caveat) == ("unmet", "No swept ε meets it.", None)
