"""The trivial baseline (always answering the training majority class) in every view's
logic: the Train cards, warning and chart, the Curves lines, table and warning, the
Negotiate cards and curve, and the decision report. No streamlit here; the pages are
driven in tests/test_pages.py and tests/test_pages_teach_negotiate.py."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as app_negotiate
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.evaluation.sweep import SERIES_DP
from dpviz.figures.common import MACRO_F1, MAJORITY_COLOR, MAJORITY_LABEL, METRICS
from dpviz.figures.curves import curve_figure
from tests.conftest import NEGOTIATE_SWEEP
from tests.rare_data import rare_data

PF = {"mechanism": "permute_flip", "n_estimators": 10, "depth_rule": "theorem2"}
PF["data_split"] = "disjoint"
FIXED = {"n_estimators": 10, "depth_rule": "theorem2", "data_split": "disjoint"}


def majority_lines(fig) -> list:
    return [t for t in fig.data if (t.name or "").startswith(MAJORITY_LABEL)]


@pytest.fixture(scope="module")
def rare_run() -> app_train.TrainRun:
    # Replayable noise so that the test is exact; any noise gives one class here.
    settings = app_train.TrainSettings(
        epsilon=1.0, n_estimators=10, folds=3, sklearn_reference=False, noise_seed=0
    )
    return app_train.train(rare_data(), settings)


@pytest.fixture(scope="module")
def demo_run() -> app_train.TrainRun:
    settings = app_train.TrainSettings(
        epsilon=1.0, n_estimators=10, folds=3, sklearn_reference=False, noise_seed=1
    )
    return app_train.train(support.prepare_demo("demo_csv"), settings)


@pytest.fixture(scope="module")
def rare_sweep() -> app_curves.SweepRun:
    settings = app_curves.SweepSettings(
        eps_low=0.1,
        eps_high=1.0,
        per_decade=3,
        mechanisms=("permute_flip",),
        depths=("theorem2",),
        n_estimators=(10,),
        folds=3,
        noise_seed=0,
    )
    return app_curves.run(rare_data(), settings)


@pytest.fixture(scope="module")
def demo_sweep() -> app_curves.SweepRun:
    return app_curves.run(support.prepare_demo("demo_csv"), NEGOTIATE_SWEEP)


# --- Train --------------------------------------------------------------------------------


def test_a_model_predicting_one_class_is_warned_about_and_never_green(rare_run):
    row = rare_run.row(SERIES_DP)
    assert row["one_class_share"] == 1.0
    warning = rare_run.one_class_warning()
    assert warning.startswith("The DP forest predicts only class 'no' in every fold: no better")
    assert "always answering the majority class" in warning
    assert f"({100 * row['majority_accuracy_mean']:.1f}% accuracy, F1 0.0%)" in warning
    assert "non-private forest also predicts only class 'no'" in warning
    card = rare_run.metric_card("accuracy")
    assert card.value == f"{100 * row['accuracy_mean']:.1f}% ± {100 * row['accuracy_std']:.1f}"
    assert card.delta.endswith("pts vs non-private forest")
    assert card.description == "+0.0 pts vs majority class"
    assert card.color == "red"
    assert rare_run.metric_card("f1").color == "red"  # F1 0 = the baseline's
    baseline = rare_run.majority_card("accuracy")
    assert baseline.value == rare_run.majority_text("accuracy")
    assert baseline.delta == "+0.0 pts for the DP forest" and baseline.color == "red"
    assert rare_run.majority_text("f1") == "0.0% ± 0.0"
    assert rare_run.majority_text("auc") == "50.0% ± 0.0"


def test_a_rare_class_brings_macro_f1_beside_accuracy(rare_run):
    assert rare_run.smallest_class == ("yes", pytest.approx(0.03))
    assert rare_run.card_metrics() == [METRICS[0], MACRO_F1, *METRICS[1:]]
    note = rare_run.rare_class_note()
    assert "'yes', is 3.0% of the records" in note and "not private" in note
    assert "Macro F1" in note
    fig = rare_run.scores_figure()
    assert list(fig.data[0].x) == ["Accuracy", "Macro F1", "ROC AUC", "F1"]
    assert all(not t.name.startswith("always") for t in fig.data)  # bars: models only
    lines = fig.layout.shapes
    assert all(s.name.startswith(MAJORITY_LABEL) for s in lines)
    assert {s.line.color for s in lines} == {MAJORITY_COLOR}
    row = rare_run.row(SERIES_DP)
    expected = [100 * row[f"majority_{m}_mean"] for m in ("accuracy", "macro_f1", "auc", "f1")]
    assert [s.y0 for s in lines] == pytest.approx(expected) and lines[-1].y0 == 0.0
    assert [(s.x0, s.x1) for s in lines] == [(i - 0.45, i + 0.45) for i in range(4)]
    labels = [a.text for a in fig.layout.annotations if a.text.startswith("majority")]
    assert labels == [f"majority {v:.1f}" for v in expected]


def test_a_model_that_learnt_something_keeps_its_colours(demo_run):
    assert demo_run.one_class_warning() is None and demo_run.rare_class_note() is None
    assert demo_run.card_metrics() == list(METRICS)
    row = demo_run.row(SERIES_DP)
    card = demo_run.metric_card("accuracy")
    versus = 100 * (row["accuracy_mean"] - row["majority_accuracy_mean"])
    assert versus > 10 and card.color == "normal"
    assert card.description == f"{versus:+.1f} pts vs majority class"
    baseline = demo_run.majority_card("accuracy")
    assert baseline.delta == f"{versus:+.1f} pts for the DP forest" and baseline.color == "normal"
    assert demo_run.majority_text("accuracy").startswith(
        f"{100 * row['majority_accuracy_mean']:.1f}%"
    )
    csv = pd.read_csv(io.StringIO(demo_run.metrics_csv()))
    assert csv["majority_accuracy_mean"].nunique() == 1 and "one_class_share" in csv


# --- Curves -------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["accuracy", "auc", "f1", "macro_f1"])
def test_every_curve_draws_the_majority_line(rare_sweep, metric):
    fig = curve_figure(rare_sweep.summary, metric=metric, fixed=FIXED, folds=3)
    (line,) = majority_lines(fig)
    value = 100 * rare_sweep.summary[f"majority_{metric}_mean"].iloc[0]
    assert line.name == f"{MAJORITY_LABEL}: {value:.1f}%"
    assert list(line.y) == pytest.approx([value, value]) and list(line.x) == [0.1, 1.0]
    assert line.line.color == MAJORITY_COLOR and line.mode == "lines"


def test_curves_table_and_warning_say_when_a_line_predicts_one_class(rare_sweep):
    table = rare_sweep.candidate(1.0, "accuracy", {**FIXED, "epsilon": 1.0})
    baseline = 100 * rare_sweep.summary["majority_accuracy_mean"].iloc[0]
    row = table.iloc[0]
    assert row[MAJORITY_LABEL] == f"{baseline:.1f}%"
    assert row["vs majority"] == "+0.0 pts" and row["one class only"] == "every fold"
    assert row["floor fell back"] == "—"  # a label forest's check runs from ε = 2
    warning = rare_sweep.one_class_warning(1.0, FIXED)
    assert (
        # Replayed noise (noise_seed): the ledger gives no guarantee, and the label says so.
        "At ε = 1 a model predicts a single class — permute_flip (NOT DP — see ledger) in "
        "every fold" in warning
    )
    assert "no better than always answering the majority class" in warning
    assert list(rare_sweep.metric_options()) == ["accuracy", "macro_f1", "auc", "f1"]
    assert "'yes', is 3.0% of the records" in rare_sweep.rare_class_note()


def test_curves_on_balanced_data_offer_no_macro_f1_and_warn_of_nothing(demo_sweep):
    assert list(demo_sweep.metric_options()) == [m for m, _ in METRICS]
    assert demo_sweep.rare_class_note() is None
    assert demo_sweep.one_class_warning(1.0, FIXED) is None
    table = demo_sweep.candidate(1.0, "auc", {**FIXED, "epsilon": 1.0})
    assert set(table[MAJORITY_LABEL]) == {"50.0%"} and set(table["one class only"]) == {"—"}
    fig = curve_figure(demo_sweep.summary, metric="accuracy", x="n_estimators", fixed=FIXED)
    assert len(majority_lines(fig)) == 1


# --- Negotiate and the report -----------------------------------------------------------


def test_negotiate_cards_frame_and_curve_carry_the_baseline(demo_sweep):
    baseline = app_negotiate.majority(demo_sweep, "accuracy")
    summary = demo_sweep.summary
    assert baseline == pytest.approx(summary["majority_accuracy_mean"].iloc[0])
    frame = app_negotiate.candidate_frame(demo_sweep, [0.1, 1.0], 0.5, "accuracy", PF)
    assert list(frame["majority_accuracy_mean"]) == pytest.approx([baseline, baseline])
    dp = summary[(summary["series"] == SERIES_DP) & (summary["mechanism"] == "permute_flip")]
    shares = dp.set_index("epsilon")["one_class_share"]
    assert list(frame["one_class_share"]) == [shares[0.1], shares[1.0]]
    cards = app_negotiate.compare(demo_sweep, [0.1, 1.0], 0.5, "accuracy", PF)
    for card, share in zip(cards, frame["one_class_share"]):
        assert card.majority == f"{100 * baseline:.1f}%"
        assert bool(card.one_class) == (share > 0)  # at ε = 0.1 a fold can go one-class
        mean = float(card.utility.split("%")[0])
        assert float(card.versus_majority.split(" ")[0]) == pytest.approx(
            mean - 100 * baseline, abs=0.11
        )
    choice = app_negotiate.suggest(demo_sweep, "accuracy", 2.0, PF)
    fig = app_negotiate.choice_figure(demo_sweep, choice, 1.0)
    (line,) = majority_lines(fig)
    bottom, top = fig.layout.yaxis.range
    assert bottom <= line.y[0] <= top  # the y range was widened to show it


def test_negotiate_warns_on_a_candidate_that_predicts_one_class(rare_sweep):
    cards = app_negotiate.compare(rare_sweep, [1.0], 0.5, "f1", PF)
    assert cards[0].majority == "0.0%" and cards[0].versus_majority.endswith("pts")
    assert "predicts a single class in every fold" in cards[0].one_class


def test_report_lists_and_draws_the_baseline(demo_sweep):
    choice = app_negotiate.suggest(demo_sweep, "accuracy", 2.0, PF)
    html = app_negotiate.report_html(
        demo_sweep,
        support.prepare_demo("demo_csv").schema,
        config=PF,
        choice=choice,
        chosen=1.0,
        candidates=[0.5, 1.0],
        prior=0.5,
    )
    baseline = 100 * app_negotiate.majority(demo_sweep, "accuracy")
    assert f"<th>{MAJORITY_LABEL}: always the majority class (NOT private)</th>" in html
    assert html.count(f'<td class="num">{baseline:.1f}%</td>') == 2
    assert "a model at or below it has learnt nothing" in html
    assert re.search(rf"{re.escape(MAJORITY_LABEL)}: {baseline:.1f}%", html)  # the curve


def test_a_negotiate_card_no_better_than_the_majority_is_flagged(rare_sweep, demo_sweep):
    (rare,) = app_negotiate.compare(rare_sweep, [1.0], 0.5, "accuracy", PF)
    assert rare.no_better_than_majority and rare.versus_majority == "+0.0 pts"
    demo = app_negotiate.compare(demo_sweep, [10.0], 0.5, "accuracy", PF)
    assert not demo[0].no_better_than_majority


def test_negotiate_says_when_its_suggestion_is_met_by_one_class(rare_sweep, demo_sweep):
    choice = app_negotiate.suggest(rare_sweep, "accuracy", 2.0, PF)
    assert choice.epsilon is not None  # met: both predict 'no' everywhere
    warning = app_negotiate.suggestion_warning(rare_sweep, choice, PF)
    assert warning.startswith(f"Careful: at ε = {choice.epsilon:g} the forest predicts a single")
    assert "the non-private forest predicts a single class in every fold" in warning
    assert "no better than always answering the majority class (97.0% accuracy here)" in warning
    choice = app_negotiate.suggest(demo_sweep, "accuracy", 2.0, PF)
    assert app_negotiate.suggestion_warning(demo_sweep, choice, PF) is None


def test_curves_table_counts_the_folds_whose_floor_fell_back():
    from dpviz.app.sweep_views import _floor_folds

    assert _floor_folds({"floor_share": 0.4, "floor_runs": 5, "n_runs": 5}) == "2 of 5 folds"
    assert _floor_folds({"floor_share": 0.0, "floor_runs": 5}) == "none"
    # Of the folds whose test ran (a greedy tree of depth 0 runs none), not of all folds.
    assert _floor_folds({"floor_share": 1.0, "floor_runs": 3, "n_runs": 5}) == "3 of 3 folds"
    assert _floor_folds({"floor_share": float("nan"), "floor_runs": 0}) == "—"
    assert _floor_folds({"one_class_share": 1.0}) == "—"
