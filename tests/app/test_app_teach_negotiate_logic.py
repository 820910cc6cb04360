"""The Teach and Negotiate pages' logic in dpviz (no streamlit): app_teach, app_negotiate."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pandas as pd
import pytest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as app_negotiate
from dpviz.app import support as support
from dpviz.app import teach as app_teach
from dpviz.app.report import WITHHELD
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.evaluation.sweep import SweepResult
from dpviz.evaluation.teach import compare_with_printed
from dpviz.models.registry import get_algorithm
from dpviz.privacy.risk import RISK_COLUMNS, candidate_table, risk_sentences, smallest_epsilon
from dpviz.privacy.schema import Feature, Schema
from tests.conftest import NEGOTIATE_SWEEP, reference_path
from tests.html_checks import network_urls

# --- app_teach ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference():
    return reference_path("mechanism_tables.csv")


def test_table2_puts_the_printed_value_beside_each_computed_one(reference):
    table = app_teach.table2_view(reference)
    assert list(table["gap j"]) == [0, 1, 5, 10, 50, 100, 500]
    assert list(table.columns[1:3]) == ["ε = 0.01 · dpviz", "ε = 0.01 · printed"]
    row = table[table["gap j"] == 500].iloc[0]
    assert row["ε = 1 · printed"] == "7.12e-218" and row["ε = 1 · dpviz"] == "7.12458e-218"
    for column in (c for c in table.columns if c.endswith("· printed")):
        dpviz = table[column.replace("printed", "dpviz")].astype(float)
        printed = table[column].astype(float)
        assert np.allclose(dpviz, printed, rtol=1e-2, atol=1e-5), column


def test_table6_has_the_addendum_values_and_permute_flip_as_an_addition(reference):
    table = app_teach.table6_view(reference)
    assert list(table[["f_A", "f_B"]].itertuples(index=False, name=None))[:2] == [
        (5, 10),
        (105, 110),
    ]
    smooth = "smooth_em (NOT DP)"
    assert list(table[f"{smooth} · printed"])[:3] == ["52.1", "52.1", "51.4"]
    assert table["count_em (ε-DP) · dpviz"].iloc[0] == "62.25"
    assert "permute_flip (ε-DP) · dpviz" in table.columns
    assert not any("permute_flip" in c and "printed" in c for c in table.columns)


def test_tables_without_the_reference_show_only_dpviz():
    assert not any("printed" in c for c in app_teach.table2_view(None).columns)
    assert not any("printed" in c for c in app_teach.table6_view(None).columns)
    assert "not available here" in app_teach.agreement(None)
    assert app_teach.reference_csv("/nonexistent/mechanism_tables.csv") is None


def test_agreement_sentence_counts_every_printed_value(reference):
    text = app_teach.agreement(reference)
    n2, n6 = (
        int((compare_with_printed(reference)["table"] == t).sum()) for t in ("Table2", "Table6")
    )
    assert text.startswith(f"All {n2} printed values of Table 2 and {n6} of Table 6 agree")


def test_walkthrough_grows_on_the_session_data_and_says_it_is_not_private():
    data = support.prepare_demo(DEFAULT_DEMO)
    source = app_teach.walkthrough_for(data, depth=2, epsilon=0.5, seed=3)
    assert source.on_session_data and source.dataset == data.name
    assert "NOT private" in source.note
    assert len(source.walk.steps) == 4 and source.walk.epsilon == 0.5
    assert set(source.walk.test_record) == {*data.schema.feature_names, data.schema.label}


def test_walkthrough_falls_back_to_the_tiny_demo_and_says_why(monkeypatch):
    none = app_teach.walkthrough_for(None)
    assert not none.on_session_data and "no dataset is loaded" in none.note
    assert set(none.walk.test_record) == {"hours_studied", "hours_slept", "passed"}

    data = support.prepare_demo(DEFAULT_DEMO)
    monkeypatch.setattr(app_teach, "WALK_MAX_RECORDS", 100)
    big = app_teach.walkthrough_for(data)
    assert not big.on_session_data and "2,000 records, more than the 100" in big.note

    # 12 values per feature: 1 + 12 + 144 nodes at depth 2, too many to draw.
    values = tuple(f"v{i}" for i in range(12))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"a": rng.choice(values, 50), "b": rng.choice(values, 50), "y": rng.choice(["n", "p"], 50)}
    )
    schema = Schema(
        label="y",
        classes=("n", "p"),
        features=(
            Feature("a", "discrete", values=values),
            Feature("b", "discrete", values=values),
        ),
    )
    wide = support.PreparedData("wide.csv", frame, schema, "public")
    fallback = app_teach.walkthrough_for(wide, depth=2)
    assert not fallback.on_session_data and "too many to draw" in fallback.note


def test_walkthrough_bad_settings_are_a_value_error():
    with pytest.raises(ValueError, match="epsilon"):
        app_teach.walkthrough_for(None, epsilon=0)
    with pytest.raises(ValueError, match="depth"):
        app_teach.walkthrough_for(support.prepare_demo(DEFAULT_DEMO), depth=0)


# --- app_negotiate ------------------------------------------------------------------------

PF = {"mechanism": "permute_flip", "n_estimators": 10, "depth_rule": "theorem2"}
PF["data_split"] = "disjoint"


@pytest.fixture(scope="module")
def data():
    return support.prepare_demo(DEFAULT_DEMO)


@pytest.fixture(scope="module")
def sweep(data):
    return app_curves.run(data, NEGOTIATE_SWEEP)


def test_default_sweep_is_small_and_private():
    s = app_negotiate.DEFAULT_SWEEP
    forest = get_algorithm("fletcher_islam").defaults()  # the default forest
    assert s.mechanisms == (forest["mechanism"],) and s.depths == (forest["depth"],)
    assert not s.sklearn_reference
    assert s.n_configurations <= 20 and s.epsilons[0] == 0.05 and s.epsilons[-1] == 10.0
    # The forest Train releases by default: the same "auto" tree count rule.
    assert s.n_estimators == (forest["n_estimators"],) == ("auto",)


def test_curve_choices_put_proven_mechanisms_first(sweep):
    choices = app_negotiate.curve_choices(sweep)
    assert choices["mechanism"] == ["permute_flip", "smooth_em"]
    assert choices["n_estimators"] == [10] and choices["data_split"] == ["disjoint"]
    assert app_negotiate.swept_epsilons(sweep, PF) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]


def test_a_sweep_of_several_algorithms_offers_only_forest_choices(data, sweep):
    """A Curves-page sweep with JPW beside the forest: Negotiate reads the forest's rows."""
    settings = dataclasses.replace(NEGOTIATE_SWEEP, algorithms=("fletcher_islam", "jpw"))
    both = app_curves.run(data, settings)
    assert set(both.summary["algorithm"]) >= {"fletcher_islam", "jpw"}
    assert app_negotiate.curve_choices(both) == app_negotiate.curve_choices(sweep)
    assert app_negotiate.swept_epsilons(both, PF) == app_negotiate.swept_epsilons(sweep, PF)
    # With the same replayed noise the forest's rows, and so the suggestion, are equal.
    replayed = [
        app_curves.run(data, dataclasses.replace(s, noise_seed=3))
        for s in (settings, NEGOTIATE_SWEEP)
    ]
    first, second = (app_negotiate.suggest(r, "accuracy", 5.0, PF) for r in replayed)
    assert first.epsilon == second.epsilon


def test_suggest_is_risk_smallest_epsilon(sweep):
    got = app_negotiate.suggest(sweep, "accuracy", 5.0, PF)
    want = smallest_epsilon(sweep.summary, "accuracy", 5.0, **PF)
    assert got.epsilon == want.epsilon and got.reason == want.reason
    with pytest.raises(ValueError, match="metric"):
        app_negotiate.suggest(sweep, "recall", 2.0, PF)


@pytest.mark.parametrize(
    ("suggested", "expected"),
    [(1.0, [0.5, 1.0, 2.0]), (0.1, [0.1, 0.2, 0.5]), (10.0, [2.0, 5.0, 10.0]), (None, [2, 5, 10])],
)
def test_default_candidates_surround_the_suggestion(suggested, expected):
    eps = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    assert app_negotiate.default_candidates(eps, suggested) == expected
    assert app_negotiate.default_candidates([1.0], 1.0) == [1.0]
    assert app_negotiate.default_candidates([], None) == []


def test_compare_gives_utility_and_the_risk_formulas(sweep):
    cards = app_negotiate.compare(sweep, [2.0, 1.0], 0.5, "accuracy", PF)
    assert [c.epsilon for c in cards] == [1.0, 2.0]
    one = cards[0]
    assert one.private and re.fullmatch(r"\d+\.\d% ± \d+\.\d", one.utility)
    assert re.fullmatch(r"[+-]\d+\.\d pts", one.versus_reference)
    # ε = 1: e = 2.72, (e − 1)/(e + 1) = 46.2%, posterior at p = 0.5: 73.1%, 1/(1 + e) = 26.9%;
    # an attribute of a person known to be in the data: e²/(e² + 1) = 88.1%
    assert one.numbers == {
        "per_record": "ε = k × 1",
        "odds_ratio_bound": "×2.72",
        "membership_advantage": "46.2 points",
        "posterior_bound": "73.1%",
        "attribute_posterior_bound": "88.1%",
        "balanced_error_rate": "26.9%",
    }
    assert list(one.numbers) == list(app_negotiate.RISK_LABELS)
    assert one.sentences == risk_sentences(1.0, 0.5)
    assert "at most 73.1% sure that she is in it" in one.sentences["posterior_bound"]
    assert "known to be in the data" in one.sentences["attribute_posterior_bound"]
    assert "at most 88.1% sure" in one.sentences["attribute_posterior_bound"]
    assert "a person with k records" in one.sentences["per_record"]
    assert "ε = 4 for 2 records" in cards[1].sentences["per_record"]
    assert cards[1].numbers["per_record"] == "ε = k × 2"
    row = candidate_table([1.0], 0.5, sweep.summary, "accuracy", **PF).iloc[0]
    assert one.utility == f"{100 * row.accuracy_mean:.1f}% ± {100 * row.accuracy_std:.1f}"
    with pytest.raises(ValueError, match="1 to 3"):
        app_negotiate.compare(sweep, [0.1, 0.2, 0.5, 1.0], 0.5, "accuracy", PF)
    with pytest.raises(ValueError, match="1 to 3"):
        app_negotiate.compare(sweep, [], 0.5, "accuracy", PF)


def test_not_dp_mechanism_and_inferred_schema_get_no_risk_translation(sweep):
    smooth = {**PF, "mechanism": "smooth_em"}
    assert "NOT DP" in app_negotiate.guarantee_note(sweep, smooth)
    cards = app_negotiate.compare(sweep, [1.0], 0.5, "accuracy", smooth)
    assert not cards[0].private and cards[0].numbers == {} and cards[0].sentences == {}
    assert app_negotiate.guarantee_note(sweep, PF) is None

    inferred = dataclasses.replace(sweep, schema_inferred=True)
    assert "inferred from the data" in app_negotiate.guarantee_note(inferred, PF)
    table = app_negotiate.candidate_frame(inferred, [1.0, 2.0], 0.5, "accuracy", PF)
    assert table["odds_ratio_bound"].isna().all() and not table["private"].any()
    assert table[list(RISK_COLUMNS)].isna().all(axis=None)
    assert not app_negotiate.ledger_for(inferred, PF, 1.0).private


def test_a_curve_the_sweep_marks_not_private_gets_no_risk_numbers(sweep):
    results = sweep.result.results.copy()
    results.loc[results["mechanism"] == "permute_flip", "private"] = False
    marked = dataclasses.replace(sweep, result=SweepResult(results))
    assert "marks this curve's models as NOT differentially private" in (
        app_negotiate.guarantee_note(marked, PF)
    )
    cards = app_negotiate.compare(marked, [1.0], 0.5, "accuracy", PF)
    assert not cards[0].private and cards[0].numbers == {} and cards[0].sentences == {}


def test_risk_labels_and_help_say_membership_attribute_and_per_record():
    """Every card row has a label and a help text; none applies e^ε to "anyone's odds about
    a person"; the attribute row uses 2ε and the per-record row k·ε."""
    labels, helps = app_negotiate.RISK_LABELS, app_negotiate.RISK_HELP
    assert list(labels) == list(helps)
    assert set(labels) - {"per_record"} <= set(RISK_COLUMNS)
    assert set(labels) <= set(risk_sentences(1.0))
    text = "\n".join([*labels.values(), *helps.values()]).lower()
    for phrase in ("anyone's odds", "odds about a person", "sensitive fact", "would reveal"):
        assert phrase not in text, phrase
    assert "in the data" in helps["odds_ratio_bound"] and "e^(2ε)" in helps["odds_ratio_bound"]
    assert "a person is in the data" in helps["posterior_bound"]
    assert "p·e^(2ε)/(1 − p + p·e^(2ε))" in helps["attribute_posterior_bound"]
    assert "known to be in the" in helps["attribute_posterior_bound"]
    assert "one record per person" in helps["per_record"] and "k·ε" in helps["per_record"]


def test_ledger_is_the_sweeps_own(sweep, data):
    ledger = app_negotiate.ledger_for(sweep, PF, 2.0)
    assert ledger.private and ledger.epsilon_total == 2.0
    assert ledger.describe() == sweep.ledger_text("permute_flip", 2.0, PF)
    # Entry for entry the ledger of a forest fitted with the curve's settings: the
    # class prior's ε is booked, not folded into the leaves.
    model = get_algorithm("fletcher_islam").make(
        2.0,
        n_estimators=10,
        depth="theorem2",
        mechanism="permute_flip",
        data_split="disjoint",
        split_points="uniform",
        random_state=0,
        schema=data.schema,
    )
    model.fit(data.frame.drop(columns="label"), data.frame["label"])
    assert model.prior_epsilon_ > 0
    assert ledger.describe() == model.ledger_.describe()


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.462, "46.2"), (0.99995, "99.995"), (4.54e-5, "0.005"), (1.0, "100.0"), (0.0, "0.0")],
)
def test_percent_never_rounds_to_certainty(value, text):
    assert app_negotiate.percent(value) == text
    assert app_negotiate.percent(1 - 1e-10) == "> 99.9999"
    assert app_negotiate.percent(1e-10) == "< 0.0001"


def test_shareable_name_withholds_sizes_only_when_asked():
    assert app_negotiate.shareable_name("demo.csv (SynthA, 2,000 rows)", False) == (
        f"demo.csv (SynthA, {WITHHELD} rows)"
    )
    assert app_negotiate.shareable_name("Breast cancer (569 rows)", True) == (
        "Breast cancer (569 rows)"
    )
    assert app_negotiate.shareable_name("v2.csv", False) == "v2.csv"


def test_report_html_is_the_decision_with_nothing_to_fetch(sweep, data):
    choice = app_negotiate.suggest(sweep, "accuracy", 5.0, PF)
    html = app_negotiate.report_html(
        sweep,
        data.schema,
        config=PF,
        choice=choice,
        chosen=2.0,
        candidates=[0.5, 1.0],
        prior=0.1,
        rationale="Five points <b>at most</b>",
        approvers="Ada (DPO)",
    )
    assert html.startswith("<!DOCTYPE html>") and "Chosen ε = 2" in html
    assert "Five points &lt;b&gt;at most&lt;/b&gt;" in html and "Ada (DPO)" in html
    # The ledger of the chosen ε, the class prior's share and the floor's check included.
    assert "spent ε = 1.7 on its leaf outputs" in html and "spent ε = 0.2" in html
    assert "out-of-bag gain" in html and "spent ε = 0.1" in html
    assert "(prior 10%)" in html and "permute_flip" in html
    assert "2,000" not in html and "2000 " not in html and f"{WITHHELD} rows" in html
    assert network_urls(html) == []
    shown = app_negotiate.report_html(
        sweep,
        data.schema,
        config=PF,
        choice=choice,
        chosen=None,
        candidates=[1.0],
        prior=0.5,
        disclose_record_count=True,
    )
    assert "No ε has been chosen yet" in shown and "Records used: 2,000" in shown
    smooth = app_negotiate.report_html(
        sweep,
        data.schema,
        config={**PF, "mechanism": "smooth_em"},
        choice=app_negotiate.suggest(sweep, "accuracy", 5.0, {**PF, "mechanism": "smooth_em"}),
        chosen=1.0,
        candidates=[1.0],
        prior=0.5,
    )
    assert "NOT DIFFERENTIALLY PRIVATE" in smooth and "no guarantee (NOT DP)" in smooth
    assert math.isfinite(choice.reference_mean)
