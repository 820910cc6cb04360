"""Every registry algorithm in the app (issue 7): the Train page offers each with widgets
built from its registry parameters and its privacy status, trains it beside its
non-private reference, and the Trees and Leaves pages draw its trees and leaves — or
say plainly which diagnostic does not exist for it.

AppTest first runs app.py (which loads the default demo) and then switches page, as in
tests/test_pages.py; the page logic is also tested directly (dpviz.app.train,
dpviz.app.models).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import models as app_models
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY
from dpviz.evaluation.sweep import SERIES_DP, SERIES_HGB, SERIES_SKLEARN
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.registry import ALGORITHMS, Algorithm, Parameter
from dpviz.privacy.schema import Feature, Schema
from tests.conftest import MIXED_SCHEMA, mixed_records
from tests.page_checks import chart_spec, charts, key, texts

ROOT = Path(__file__).resolve().parent.parent.parent
APP = str(ROOT / "app.py")
DIAGNOSTICS = "Data-owner diagnostics (not private)"
NON_FOREST = [a.id for a in ALGORITHMS.values() if not a.forest_family]
# Small, fast settings per algorithm (registry parameter names).
FAST = {
    "friedman_schuster": {"max_depth": 4},
    "dpea": {"max_depth": 4},
    "dpboost": {"n_estimators": 20, "trees_per_ensemble": 10, "max_depth": 4},
}


def mixed_data() -> support.PreparedData:
    """Three classes, one continuous and two discrete features, a public schema."""
    frame = mixed_records(5, 900)
    frame["size"] = frame["size"].astype(str)
    return support.prepare_upload(frame, "label", MIXED_SCHEMA, name="mixed.csv")


def open_train(data: support.PreparedData | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if data is not None:
        at.session_state[DATA_KEY] = data
    at.run()
    at.switch_page("pages/train.py").run()
    assert not at.exception, at.exception
    return at


def set_parameter(at: AppTest, algorithm: str, name: str, value) -> None:
    """Set a registry parameter's widget; a number for a rule-or-number parameter (the
    greedy trees' max_depth: "auto" or fixed) picks "fixed" and types the number."""
    widget = at.get_by_key(key(f"train.{algorithm}.{name}"))
    if isinstance(value, int) and "fixed" in getattr(widget, "options", ()):
        widget.set_value("fixed").run()
        widget = at.number_input(key=key(f"train.{algorithm}.{name}.number"))
    widget.set_value(value)


def train_in_app(algorithm: str, data=None, **params) -> AppTest:
    """Select ``algorithm`` on the Train page, set its parameters, press Train."""
    at = open_train(data)
    at.selectbox(key=key("train.algorithm")).set_value(algorithm).run()
    assert not at.exception, at.exception
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    for name, value in params.items():
        set_parameter(at, algorithm, name, value)
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    assert not at.error, texts(at.error)
    return at


# --- Train page ---------------------------------------------------------------------------


def test_every_algorithm_is_offered_with_its_status_and_its_own_parameters():
    at = open_train()
    box = at.selectbox(key=key("train.algorithm"))
    assert box.options == [f"{a.name}  [{a.privacy}]" for a in ALGORITHMS.values()]
    for algorithm in ALGORITHMS.values():
        at.selectbox(key=key("train.algorithm")).set_value(algorithm.id).run()
        assert not at.exception, at.exception
        for p in algorithm.parameters:
            widget = at.get_by_key(key(f"train.{algorithm.id}.{p.name}"))
            assert widget is not None, (algorithm.id, p.name)
            # Every widget starts at the registry default: the forest's "auto" tree count
            # too, never a number read from the file's rows.
            assert widget.value == p.default, (algorithm.id, p.name)
        assert algorithm.description in texts(at.caption)
        assert "ε-DP" in texts(at.caption)  # every default is proven ε-DP


def test_each_algorithm_has_its_own_widgets_and_defaults():
    # (That a value survives switching algorithms rests on app.py's kept-widget keys,
    # which AppTest does not run around a switched-to page; the browser run checks it.)
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("dpboost").run()
    at.number_input(key=key("train.dpboost.max_depth")).set_value(3).run()
    assert "depth 3 (8 leaves each)" in texts(at.caption)
    at.selectbox(key=key("train.algorithm")).set_value("dpea").run()
    assert at.selectbox(key=key("train.dpea.max_depth")).value == "auto"
    assert "train.dpboost.max_depth" not in " ".join(w.key for w in at.number_input)


def test_the_preview_states_the_budget_split():
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("friedman_schuster").run()
    # The auto depth for the demo's 2,000 records is 2: two levels and the leaves.
    assert "ε' = ε / 3 = 0.333 each" in texts(at.caption)
    at.selectbox(key=key("train.algorithm")).set_value("dpboost").run()
    assert "each ensemble spends ε / 1" in texts(at.caption)
    label = at.checkbox(key=key("train.sklearn")).label
    assert label == f"Also cross-validate {app_train.reference_text('dpboost')}"


@pytest.mark.skipif(
    next(p for p in ALGORITHMS["dpea"].parameters if p.name == "steps").high < 3,
    reason="the registry offers DPEA with d ≤ 2 only",
)
def test_dpea_with_mcmc_steps_is_flagged_approximate():
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("dpea").run()
    at.number_input(key=key("train.dpea.steps")).set_value(3).run()
    assert not at.exception
    assert "approximate" in texts(at.warning) and "NOT DP" in texts(at.warning)


def test_an_algorithm_added_to_the_registry_appears_with_its_parameters(monkeypatch):
    extra = Algorithm(
        id="tiny_boost",
        name="Tiny DPBoost (test entry)",
        description="A registry entry added by a test.",
        privacy="ε-DP",
        parameters=(
            Parameter("n_estimators", 6, "trees per class", low=1, high=50),
            Parameter("trees_per_ensemble", 3, "trees per ensemble", low=1, high=50),
            Parameter("max_depth", 2, "tree depth", low=1, high=4),
            Parameter("learning_rate", 0.05, "shrinkage", low=0.001, high=0.5),
        ),
        build=DPBoostClassifier,
        reference="sklearn_hist_gradient_boosting",
    )
    monkeypatch.setitem(ALGORITHMS, "tiny_boost", extra)
    at = train_in_app("tiny_boost", max_depth=3)
    assert at.number_input(key=key("train.tiny_boost.learning_rate")).value == 0.05
    run = at.session_state[RUN_KEY]
    assert run.model.max_depth == 3 and run.model.n_estimators == 6
    assert [m.label for m in at.metric][0] == "Accuracy · Tiny DPBoost"
    at.switch_page("pages/trees.py").run()
    assert not at.exception and "Tree 1 of ensemble 1" in chart_spec(at)["layout"]["title"]["text"]


def test_the_greedy_split_score_is_a_choice_on_the_train_page():
    """The greedy trees offer the split score (criterion, issue 13): max operator + Gini
    by default, the papers' max operator alone when picked; the trained model uses it."""
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("friedman_schuster").run()
    box = at.selectbox(key=key("train.friedman_schuster.criterion"))
    assert box.value == "max_gini" and list(box.options) == ["max_gini", "max"]
    at = train_in_app("friedman_schuster", criterion="max", **FAST["friedman_schuster"])
    run = at.session_state[RUN_KEY]
    assert run.model.criterion == "max"
    assert run.model.ledger_.epsilon_total == pytest.approx(run.settings.epsilon)


def test_the_greedy_bins_are_a_choice_on_the_train_page():
    """split_points (issue 28): equal widths by default; "quantile" books the noisy
    histograms of the bin edges (from ε = 1: the Train page's ε is 1) and the Trees page
    draws the tree cut at the released edges."""
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("friedman_schuster").run()
    box = at.selectbox(key=key("train.friedman_schuster.split_points"))
    assert box.value == "uniform" and list(box.options) == ["uniform", "quantile"]
    at = train_in_app("friedman_schuster", split_points="quantile", **FAST["friedman_schuster"])
    model = at.session_state[RUN_KEY].model
    assert model.split_points == "quantile" and model.bin_edges_ is not None
    assert any(e.query.startswith("noisy histograms") for e in model.ledger_.entries)
    assert model.ledger_.epsilon_total == pytest.approx(at.session_state[RUN_KEY].settings.epsilon)
    at.switch_page("pages/trees.py").run()
    assert not at.exception, at.exception


def test_crowded_equal_width_bins_point_to_the_quantile_bins():
    """A feature whose records crowd into 2 of 8 equal-width bins of its public domain
    (sizes 0–5 of 0–100): the Train page's preview for a greedy tree says so, labelled not
    private, and names the option; with split_points = quantile the note goes."""
    rng = np.random.default_rng(0)
    size = rng.exponential(1.0, 600).clip(0, 100)
    frame = pd.DataFrame({"size": size.astype(str), "label": np.where(size > 1, "yes", "no")})
    schema = Schema("label", ("no", "yes"), (Feature("size", "continuous", low=0.0, high=100.0),))
    data = support.prepare_upload(frame, "label", schema, name="skewed.csv")
    at = open_train(data)
    at.selectbox(key=key("train.algorithm")).set_value("friedman_schuster").run()
    notes = texts(at.info)
    assert "not private" in notes and "'size' 100%" in notes and "split_points = quantile" in notes
    set_parameter(at, "friedman_schuster", "split_points", "quantile")
    at.run()
    assert not at.exception and "equal-width bins" not in texts(at.info)


# --- train, then Trees and Leaves, for every non-forest algorithm --------------------------


@pytest.mark.parametrize("algorithm", NON_FOREST)
def test_train_then_trees_and_leaves(algorithm):
    at = train_in_app(algorithm, **FAST[algorithm])
    run = at.session_state[RUN_KEY]
    assert run.settings.algorithm == algorithm
    label = app_train.short_name(ALGORITHMS[algorithm])
    assert [m.label for m in at.metric if not m.label.endswith("(NOT DP)")] == [
        f"Accuracy · {label}",
        f"ROC AUC · {label}",
        f"F1 · {label}",
    ]
    assert run.privacy_summary in texts(at.success)
    assert "1-differentially private" in texts(at.success)
    assert "Download the released model (JSON)" in [
        d.proto.label for d in at.get("download_button")
    ]

    at.switch_page("pages/trees.py").run()
    assert not at.exception, at.exception
    assert "What an outsider sees" in texts(at.info)
    released = chart_spec(at)["layout"]["title"]["text"]
    assert "Released model" in released
    at.radio(key=key("trees.view")).set_value(DIAGNOSTICS).run()
    assert not at.exception, at.exception
    assert "not private" in texts(at.warning)
    assert "NOT private" in chart_spec(at)["layout"]["title"]["text"]
    if algorithm == "dpboost":
        at.number_input(key=key("trees.ensemble")).set_value(2).run()
        at.number_input(key=key("trees.member")).set_value(4).run()
        assert not at.exception, at.exception
        assert "Tree 4 of ensemble 2" in chart_spec(at)["layout"]["title"]["text"]
        overview = at.dataframe[0].value
        assert len(overview) == 20 and "sign flips" in overview.columns
    else:
        at.slider(key=key("trees.depth.diagnostics")).set_value(2).run()
        assert not at.exception, at.exception

    at.switch_page("pages/leaves.py").run()
    assert not at.exception, at.exception
    cards = [m.label for m in at.metric]
    assert cards[1:3] == ["Leaves with records", "Empty leaves"]
    assert "do not exist" in texts(at.info) or "does not exist" in texts(at.info)
    assert charts(at)
    leaves = at.dataframe[1].value
    assert len(leaves) == run.model.diagnostics_["n_leaves_nonempty"]
    assert "Download the leaf table (CSV, not private)" in [
        d.proto.label for d in at.get("download_button")
    ]


@pytest.mark.parametrize("algorithm", ["dpboost", "dpea"])
def test_three_classes_and_discrete_features(algorithm):
    at = train_in_app(algorithm, data=mixed_data(), **FAST[algorithm])
    at.switch_page("pages/trees.py").run()
    assert not at.exception, at.exception
    if algorithm == "dpboost":
        part = at.selectbox(key=key("trees.part"))
        assert part.options == ["other vs rest", "red vs rest", "small vs rest"]
        part.set_value(2).run()
        assert "class small vs rest" in chart_spec(at)["layout"]["title"]["text"]
    at.radio(key=key("trees.view")).set_value(DIAGNOSTICS).run()
    assert not at.exception, at.exception
    at.switch_page("pages/leaves.py").run()
    assert not at.exception, at.exception
    assert at.dataframe[1].value is not None


def test_a_bad_combination_is_a_message_not_a_traceback():
    at = open_train()
    at.selectbox(key=key("train.algorithm")).set_value("dpea").run()
    set_parameter(at, "dpea", "max_depth", 1)
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck().run()
    at.button(key="train.button").click().run()
    assert not at.exception
    assert "exceeds the depth" in texts(at.error)
    assert RUN_KEY not in at.session_state


# --- the logic behind the pages -------------------------------------------------------------


def test_parameter_widgets_follow_the_registry():
    for algorithm in ALGORITHMS.values():
        for p in algorithm.parameters:
            w = app_train.parameter_widget(p)
            if p.name == "n_estimators" and p.default == "auto":
                # "auto" or a number the user chooses (up to the registry's bound).
                assert w.kind == "choice" and w.initial == "auto" and w.high == p.high
                assert w.value(app_train.FIXED_TREES, 40) == 40
                continue
            assert w.name == p.name and w.initial == p.default
            if p.choices:
                assert w.kind == "choice" and set(p.choices) <= set(w.options)
            elif isinstance(p.default, int):
                assert w.kind == "int" and w.low == p.low and w.high == p.high
            elif isinstance(p.default, float):
                assert w.kind == "float" and w.low <= p.default <= w.high
    depth = next(p for p in ALGORITHMS["fletcher_islam"].parameters if p.name == "depth")
    widget = app_train.parameter_widget(depth)
    assert widget.number_option == "fixed" and widget.value("fixed", 7) == 7
    mechanism = next(p for p in ALGORITHMS["fletcher_islam"].parameters if p.name == "mechanism")
    assert "[NOT DP]" in app_train.parameter_widget(mechanism).option_text("smooth_em")


def test_settings_take_registry_parameters_and_check_them():
    settings = app_train.TrainSettings(algorithm="dpboost", params={"max_depth": 3})
    assert settings.values["max_depth"] == 3 and settings.values["learning_rate"] == 0.1
    with pytest.raises(ValueError, match="dpboost has no parameter 'depth'"):
        app_train.TrainSettings(algorithm="dpboost", params={"depth": 3})
    with pytest.raises(ValueError, match="friedman_schuster has no setting 'n_estimators'"):
        app_train.TrainSettings(algorithm="friedman_schuster", n_estimators=3)
    with pytest.raises(ValueError, match="max_depth must be at most"):
        app_train.TrainSettings(algorithm="dpea", params={"max_depth": 99})


def test_privacy_status_comes_from_the_registry():
    assert app_train.privacy_status("dpboost").level == "ok"
    status = app_train.privacy_status("fletcher_islam", {"mechanism": "smooth_em"})
    assert status.level == "none" and "NOT DP" in status.text
    dpea = ALGORITHMS["dpea"]
    if hasattr(dpea, "status") and dpea.status({"steps": 3}) == "approximate":
        assert app_train.privacy_status("dpea", {"steps": 3}).level == "approximate"


@pytest.fixture(scope="module")
def boost_run() -> app_train.TrainRun:
    settings = app_train.TrainSettings(
        algorithm="dpboost", params=FAST["dpboost"], folds=2, sklearn_reference=True
    )
    return app_train.train(support.prepare_demo("demo_csv"), settings)


def test_dpboost_runs_beside_histgradientboosting(boost_run):
    assert boost_run.series == [SERIES_DP, SERIES_SKLEARN, SERIES_HGB]
    assert boost_run.reference_series == SERIES_HGB
    value, delta = boost_run.metric_text(SERIES_DP, "accuracy")
    assert "% ± " in value and delta.endswith("pts vs HistGradientBoosting")
    names = [t.name for t in boost_run.scores_figure().data]
    assert names == [
        "DPBoost (dpboost), ε = 1",
        "scikit-learn random forest (NOT DP)",
        "scikit-learn HistGradientBoosting (NOT DP)",
    ]
    table = pd.read_csv(__import__("io").StringIO(boost_run.metrics_csv()))
    assert list(table["series"]) == [SERIES_DP, SERIES_SKLEARN, SERIES_HGB]
    assert "DPBoost · ε = 1" in boost_run.describe()


def test_dpboost_trees_and_leaves_logic(boost_run):
    shape = app_models.tree_shape(boost_run.model)
    assert (shape.kind, shape.n_ensembles, shape.trees_per_ensemble) == ("boost", 2, 10)
    drawing = app_models.draw_tree(boost_run, "diagnostics", ensemble=2, member=10)
    assert drawing.overview is not None and len(drawing.overview) == 20
    with pytest.raises(ValueError, match="ensemble 2 has trees 1 to 10"):
        app_models.draw_tree(boost_run, "released", ensemble=2, member=11)
    with pytest.raises(ValueError, match="ensemble must be between 1 and 2"):
        app_models.draw_tree(boost_run, "released", ensemble=3)
    view = app_models.leaves_view(boost_run)
    assert "Gap j, smooth sensitivity and label flips do not exist" in view.missing[0]
    assert len(view.download) == 20 * 16 and (view.table["n_records"] > 0).all()
    assert view.cards["Leaves in all trees"] == "320"


def test_greedy_tree_logic_matches_the_model():
    settings = app_train.TrainSettings(
        algorithm="friedman_schuster", folds=2, sklearn_reference=False
    )
    run = app_train.train(support.prepare_demo("demo_csv"), settings)
    table = run.leaf_table
    reference = run.model.leaf_table()
    for column in reference.columns:
        assert (table[column].to_numpy() == reference[column].to_numpy()).all(), column
    assert app_models.model_diagnostics(run) == pytest.approx(run.model.diagnostics_, nan_ok=True)
    shape = app_models.tree_shape(run.model)
    assert shape.kind == "greedy" and not shape.shallow and shape.default_depth == 2
    released = app_models.draw_tree(run, "released", limit=2)
    ids = chart_ids = released.figure.data[0].ids
    # The nodes to depth 2 (noise-aware stopping may close some early), each drawn once.
    assert len(chart_ids) == int((run.model.node_depth_ <= 2).sum()) and len(set(ids)) == len(ids)
    view = app_models.leaves_view(run)
    assert "Smooth sensitivity does not exist" in view.missing[0]
    assert "ε' per step and for the leaves" in view.cards
    assert run.export_problem is None and json.loads(run.model_json)["kind"] == "greedy tree"


def test_a_small_greedy_tree_is_drawn_node_by_node_with_discrete_branches():
    settings = app_train.TrainSettings(
        algorithm="friedman_schuster",
        params={"max_depth": 2, "n_bins": 3},
        folds=2,
        sklearn_reference=False,
    )
    run = app_train.train(mixed_data(), settings)
    shape = app_models.tree_shape(run.model)
    assert shape.shallow and len(run.model.leaf_nodes_) <= 32
    for view in ("released", "diagnostics"):
        figure = app_models.draw_tree(run, view).figure
        assert {t.type for t in figure.data} == {"scatter"}  # node-link, not an icicle
        drawn = [str(t) for trace in figure.data if trace.text is not None for t in trace.text]
        branches = [a.text for a in figure.layout.annotations]
        # The split into the public bins [0, 10] / 3, each bin on its branch.
        assert "size (3 bins)" in drawn and "< 3.333" in branches
    nodes = app_models.treeviz.greedy_nodes(run.model)
    root = nodes.iloc[0]
    assert root["records"] == run.n_records and root["released_label"] in ("other", "red", "small")


def test_dpboost_keeps_its_own_reference_when_the_slow_one_is_off():
    settings = app_train.TrainSettings(
        algorithm="dpboost",
        params={"n_estimators": 6, "trees_per_ensemble": 3, "max_depth": 3},
        folds=2,
        sklearn_reference=False,
    )
    run = app_train.train(support.prepare_demo("demo_csv"), settings)
    assert SERIES_SKLEARN not in run.series
    if app_train.always_on_references(ALGORITHMS["dpboost"]):
        assert run.series == [SERIES_DP, SERIES_HGB]
    else:  # a sweep engine without reference lists runs both references or none
        assert run.series == [SERIES_DP]


@pytest.mark.parametrize("signal", [False, True])
def test_the_train_page_says_what_the_floor_decided(signal):
    # The default forest at ε = 10 runs its out-of-bag check. Replayable noise (seed 5,
    # NOT private) makes the run exact: without signal its released gain is below the
    # bar, with x > 5 deciding the label far above it.
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.uniform(0, 10, 3000).round(3)})
    frame["label"] = np.where(
        (frame["x"] > 5) if signal else (rng.uniform(size=3000) < 0.3), "yes", "no"
    )
    schema = Schema("label", ("no", "yes"), (Feature("x", "continuous", 0.0, 10.0),))
    data = support.prepare_upload(frame, "label", schema, name="floor.csv")
    at = open_train(data)
    at.number_input(key=key("train.eps")).set_value(10.0).run()
    at.checkbox(key=key("train.replay")).check().run()
    at.number_input(key=key("train.noise_seed")).set_value(5)
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    floor = [e for e in [*at.warning, *at.caption] if "Floor of the released model" in e.value]
    assert len(floor) == 1
    if signal:
        assert not any("did not pass its floor test" in e.value for e in at.caption)
        assert floor[0] in list(at.caption)
        assert "passed their floor test, the out-of-bag check" in floor[0].value
    else:
        assert floor[0] in list(at.warning)
        assert "did not pass their floor test, the out-of-bag check" in floor[0].value
        assert "'no', for every record" in floor[0].value
        # And in the folds: each fold's model ran the same test on its own release.
        folds = [e.value for e in at.caption if "did not pass its floor test" in e.value]
        results = at.session_state[RUN_KEY].sweep.results
        flags = results.loc[results["series"] == SERIES_DP, "floored"]
        assert len(flags) == 2 and flags.notna().all()  # the check ran in both folds
        hit = int(flags.sum())
        assert hit >= 1 and len(folds) == 1
        assert f"In {hit} of 2 folds the DP forest's trees" in folds[0]
