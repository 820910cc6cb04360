"""Issue 14, item 9: labels that match the ledger, class legends and readable labels on
every tree view, Negotiate's pre-selection and Friedman–Schuster's own settings."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import models as app_models
from dpviz.app import negotiate as app_negotiate
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY, SWEEP_KEY
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.figures import tree_layout as treeviz
from dpviz.figures import trees as figures_trees
from dpviz.figures.common import mechanism_label, scores_bar_figure
from dpviz.figures.curves import NO_GUARANTEE, curve_figure, series_status
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.schema import Feature, Schema
from tests.app.test_pages_teach_negotiate import APP, NEGOTIATE, key, open_page, run, texts
from tests.conftest import NEGOTIATE_SWEEP, mixed_records

EPS_DP_BADGE = "(ε-DP)"


@pytest.fixture(scope="module")
def inferred() -> support.PreparedData:
    """Records with no declared schema: every model on them has NO guarantee."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = support.prepare_upload(mixed_records(3, 600), "label", name="mine.csv")
    assert not data.schema_public
    return data


@pytest.fixture(scope="module")
def inferred_run(inferred) -> app_train.TrainRun:
    settings = app_train.TrainSettings(
        epsilon=1.0, n_estimators=10, folds=2, sklearn_reference=False, seed=0
    )
    return app_train.train(inferred, settings)


@pytest.fixture(scope="module")
def inferred_sweep(inferred) -> app_curves.SweepRun:
    return app_curves.run(inferred, NEGOTIATE_SWEEP)


# --- labels follow the ledger --------------------------------------------------------------


def test_a_proven_mechanism_without_a_ledger_guarantee_is_not_labelled_dp():
    assert mechanism_label("permute_flip") == "permute_flip (ε-DP)"
    assert mechanism_label("permute_flip", True) == "permute_flip (ε-DP)"
    assert mechanism_label("permute_flip", False) == "permute_flip (NOT DP — see ledger)"
    assert mechanism_label("smooth_em", False) == "smooth_em (NOT DP)"
    assert series_status("fletcher_islam", "permute_flip", private=False) == NO_GUARANTEE
    assert series_status("fletcher_islam", "permute_flip", private=True) == "ε-DP"


def test_sidebar_line_and_scores_of_an_inferred_schema_model_say_not_dp(inferred_run):
    assert not inferred_run.private
    line = inferred_run.describe()
    assert "laplace_counts (NOT DP — see ledger)" in line and EPS_DP_BADGE not in line
    caption = app_train.run_caption(inferred_run)  # the line under the results header
    assert "NOT DP — see ledger" in caption and EPS_DP_BADGE not in caption
    bars = [t.name for t in inferred_run.scores_figure().data]
    assert bars and not any(EPS_DP_BADGE in name for name in bars), bars
    assert any("NOT DP — see ledger" in name for name in bars)
    status = app_train.privacy_status("fletcher_islam", {}, schema_public=False)
    assert status.level == "none" and "NOT DP with this data" in status.text
    assert app_train.privacy_status("fletcher_islam", {}, schema_public=True).level == "ok"


def test_scores_bars_follow_the_row_ledger_flag():
    row = {
        "series": "dp",
        "mechanism": "permute_flip",
        "epsilon": 1.0,
        **{f"{m}_{s}": 0.8 for m in ("accuracy", "auc", "f1") for s in ("mean", "std")},
    }
    private = scores_bar_figure(pd.DataFrame([{**row, "private": True}]))
    assert private.data[0].name == "DP forest, permute_flip (ε-DP), ε = 1"
    assert private.data[0].marker.pattern.shape == ""
    void = scores_bar_figure(pd.DataFrame([{**row, "private": False}]))
    assert void.data[0].name == "DP forest, permute_flip (NOT DP — see ledger), ε = 1"
    assert void.data[0].marker.pattern.shape != ""


def test_curves_legends_tables_and_algorithm_table_of_an_inferred_sweep(inferred_sweep):
    sweep = inferred_sweep
    assert sweep.schema_inferred
    labels = sweep.series()
    assert labels["fletcher_islam/permute_flip"] == "permute_flip (NOT DP — see ledger)"
    assert labels["fletcher_islam/smooth_em"] == "smooth_em (NOT DP)"
    assert sweep.series_status("fletcher_islam/permute_flip") == NO_GUARANTEE
    fig = curve_figure(sweep.summary, fixed={"n_estimators": 10}, statuses=sweep.statuses)
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert "permute_flip (NOT DP — see ledger)" in names
    assert not any(EPS_DP_BADGE in n for n in names if n), names
    drawn = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert drawn["permute_flip (NOT DP — see ledger)"].line.dash == "dash"
    assert "see ledger" in fig.layout.annotations[0].text
    table = sweep.candidate(1.0, "accuracy", {"n_estimators": 10, "epsilon": 1.0})
    assert not table["mechanism"].str.contains("ε-DP", regex=False).any()
    assert set(table["guarantee"]) == {"NONE (not DP)"}
    privacy = sweep.algorithm_table()["privacy"].iloc[0]
    assert "ε-DP" not in privacy.replace("NOT DP — see ledger", ""), privacy


def test_a_public_schema_sweep_keeps_its_dp_labels():
    sweep = app_curves.run(support.prepare_demo(DEFAULT_DEMO), NEGOTIATE_SWEEP)
    assert sweep.series()["fletcher_islam/permute_flip"] == "permute_flip (ε-DP)"


def test_sidebar_and_train_page_with_an_inferred_schema(inferred, inferred_run):
    """The app's sidebar (every page) and the Train settings never say ε-DP for a model
    whose ledger gives no guarantee."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state[DATA_KEY] = inferred
    at.session_state[RUN_KEY] = inferred_run
    run(at)
    sidebar = texts(at.sidebar.caption)
    assert "laplace_counts (NOT DP — see ledger)" in sidebar, sidebar
    assert EPS_DP_BADGE not in sidebar
    at.switch_page("pages/train.py")
    run(at)
    assert "NOT DP with this data" in texts(at.error)
    assert EPS_DP_BADGE not in texts(at.sidebar.caption)


# --- Friedman–Schuster's own settings ------------------------------------------------------


def test_friedman_schuster_lists_only_its_own_settings():
    choices = app_train.algorithm_choices()
    assert "mcmc_steps" not in choices["friedman_schuster"].fixed
    assert choices["friedman_schuster"].fixed == {"steps": 1}
    at = AppTest.from_file(APP, default_timeout=60)
    run(at)
    at.switch_page("pages/train.py")
    run(at)
    at.selectbox(key=key("train.algorithm")).set_value("friedman_schuster")
    run(at)
    shown = texts(at.markdown)
    assert "Steps: **1** (fixed)" in shown
    assert "mcmc" not in shown.lower()
    assert not [w for w in at.number_input if "mcmc" in (w.key or "")]


# --- Negotiate: pre-selection and the "no sweep yet" notice -------------------------------


def test_preselection_is_the_smallest_meeting_epsilon_or_nothing():
    from types import SimpleNamespace

    assert app_negotiate.preselected(SimpleNamespace(epsilon=0.5)) == 0.5
    assert app_negotiate.preselected(SimpleNamespace(epsilon=None)) is None
    assert app_negotiate.chosen_options([1.0, 0.1]) == [None, 0.1, 1.0]
    assert app_negotiate.epsilon_option(None) == "not chosen"
    assert app_negotiate.epsilon_option(0.25) == "0.25"


@pytest.fixture(scope="module")
def low_sweep() -> app_curves.SweepRun:
    """The demo swept at ε 0.01–0.1 only (replayed noise: the same curve every run), where
    a small accuracy loss is out of reach."""
    settings = dataclasses.replace(NEGOTIATE_SWEEP, eps_low=0.01, eps_high=0.1, noise_seed=0)
    return app_curves.run(support.prepare_demo(DEFAULT_DEMO), settings)


def test_negotiate_preselects_nothing_when_no_epsilon_meets_the_target(low_sweep):
    at = open_page(NEGOTIATE, low_sweep)
    config = {k: v[0] for k, v in app_negotiate.curve_choices(low_sweep).items()}
    assert at.selectbox(key=key("negotiate.pin.mechanism")).value == config["mechanism"]
    assert app_negotiate.suggest(low_sweep, "accuracy", 2.0, config).epsilon is None
    # The default 2-point loss is met by no swept ε: nothing is pre-selected.
    assert at.select_slider(key=key("negotiate.chosen")).value is None
    assert app_negotiate.NO_CHOICE in texts(at.info)
    assert not at.get("download_button")  # no report before an ε is chosen
    # A target that is met: its smallest ε is pre-selected.
    met = app_negotiate.suggest(low_sweep, "accuracy", 50.0, config).epsilon
    assert met is not None
    at.number_input(key=key("negotiate.loss")).set_value(50.0)
    run(at)
    assert at.select_slider(key=key("negotiate.chosen")).value == met
    assert app_negotiate.NO_CHOICE not in texts(at.info)
    # Back to an unmet target: nothing again, never the largest ε by default.
    at.number_input(key=key("negotiate.loss")).set_value(2.0)
    run(at)
    assert at.select_slider(key=key("negotiate.chosen")).value is None
    # Choosing one deliberately brings the ledger and the report.
    at.select_slider(key=key("negotiate.chosen")).set_value(0.1)
    run(at)
    assert "Total: the released model is 0.1-differentially private" in texts(at.success)
    assert at.get("download_button")


def test_negotiate_says_no_sweep_yet_only_before_the_sweep():
    at = AppTest.from_file(APP, default_timeout=60)
    run(at)
    at.switch_page(NEGOTIATE)
    run(at)
    assert "no sweep in this session yet" in texts(at.info)
    at.number_input(key=key("negotiate.folds")).set_value(2)
    at.button[0].click()
    run(at)
    assert at.session_state[SWEEP_KEY] is not None
    assert "no sweep in this session yet" not in texts(at.info)
    assert "Using the sweep just run" in texts(at.caption)


# --- trees: class legends, readable labels, amounts ------------------------------------


def test_thresholds_read_as_amounts_never_in_scientific_notation():
    assert treeviz.threshold_text(2_500_000.5) == "2.5M"
    assert treeviz.threshold_text(541_700.2) == "541,700"
    assert treeviz.threshold_text(25_001.5) == "25,000"
    assert treeviz.threshold_text(1_234_567_890) == "1.235B"
    assert treeviz.threshold_text(0.5213) == "0.5213"
    assert treeviz.threshold_text(-3.0e7) == "-30M"


def money_forest(depth: int = 6, n_estimators: int = 3) -> DPRandomForestClassifier:
    rng = np.random.default_rng(5)
    n = 800
    schema = Schema(
        "label",
        ("no", "yes", "maybe"),
        (
            Feature("balance", "continuous", 0.0, 10_000_000.0),
            Feature("income", "continuous", 0.0, 900_000.0),
            Feature(
                "occupation",
                "discrete",
                values=("Exec-managerial-and-administrative", "Craft-repair", "Sales"),
            ),
        ),
    )
    frame = pd.DataFrame(
        {
            "balance": rng.uniform(0, 1e7, n),
            "income": rng.uniform(0, 9e5, n),
            "occupation": rng.choice(list(schema.features[2].values), n),
        }
    )
    y = np.where(frame["balance"] > 5e6, "yes", np.where(frame["income"] > 4e5, "maybe", "no"))
    model = DPRandomForestClassifier(
        epsilon=1.0,
        n_estimators=n_estimators,
        depth=depth,
        schema=schema,
        random_state=1,
        noise_seed=0,
    )
    return model.fit(frame, y)


def label_boxes(fig) -> list[tuple[float, float, float, str]]:
    """(y, left px, right px, band) of every split label of a node-link figure."""
    trace = next(t for t in fig.data if t.name and t.name.startswith("split"))
    xs = np.asarray(trace.x, dtype=float)
    low, high = fig.layout.xaxis.range
    px = figures_trees.PLOT_PX / (high - low)
    out = []
    for x, y, text, band in zip(xs, trace.y, trace.text, trace.textposition):
        if text:
            half = len(text) * figures_trees.CHAR_PX / 2
            centre = (x - low) * px
            out.append((y, centre - half, centre + half, band))
    return out


def assert_no_overlap(fig) -> None:
    boxes = label_boxes(fig)
    assert boxes
    for y in {b[0] for b in boxes}:
        for band in ("top center", "bottom center"):
            row = sorted((b for b in boxes if b[0] == y and b[3] == band), key=lambda b: b[1])
            for a, b in zip(row, row[1:]):
                assert a[2] <= b[1] + 1e-6, (a, b)
            if row:  # inside the plot
                assert row[0][1] >= -1e-6 and row[-1][2] <= figures_trees.PLOT_PX + 1e-6


def test_node_link_tree_has_a_class_legend_fitted_labels_and_full_rules_on_hover():
    model = money_forest(depth=5, n_estimators=2)
    nodes = treeviz.structure_nodes(model, 0)
    assert not nodes["edge"].str.contains("e+", regex=False).any()
    classes = model.schema_.classes
    for diagnostics in (False, True):
        frame = treeviz.with_counts(model, nodes) if diagnostics else nodes
        fig = figures_trees.node_link_figure(
            frame, classes, diagnostics=diagnostics, tree=1, releases_counts=True
        )
        legend = {t.name for t in fig.data if t.showlegend is not False}
        # money_forest releases noisy counts: a leaf's colour is their largest class.
        prefix = "true majority" if diagnostics else "largest noisy count"
        assert {f"{prefix} {c}" for c in classes} <= legend
        assert_no_overlap(fig)
        splits = next(t for t in fig.data if (t.name or "").startswith("split"))
        cut = [i for i, t in enumerate(splits.text) if t.endswith("…") or t == ""]
        assert cut, "a depth-5 tree of long rules has labels to cut"
        for i in cut:
            assert "left branch: " in splits.customdata[i]


def test_icicle_trees_have_a_class_legend_and_hide_rather_than_shrink_labels():
    model = money_forest(depth=9, n_estimators=2)
    classes = model.schema_.classes
    released = figures_trees.icicle_figure(
        treeviz.structure_nodes(model, 0, max_depth=4),
        classes,
        diagnostics=False,
        tree=1,
        releases_counts=True,
    )
    legend = [t.name for t in released.data if t.type == "scatter"]
    assert [f"largest noisy count {c}" for c in classes] == legend[: len(classes)]
    assert released.layout.uniformtext.mode == "hide"
    icicle = released.data[0]
    assert max(len(str(label).rstrip(" …")) for label in icicle.labels) <= (
        figures_trees.LABEL_CHARS
    )
    visited = treeviz.cut_depth(treeviz.visited_nodes(model, 0), 4)
    diag = figures_trees.icicle_figure(visited, classes, diagnostics=True, tree=1)
    legend = {t.name for t in diag.data if t.type == "scatter"}
    assert {f"true majority {c}" for c in classes} <= legend


def test_app_tree_views_of_every_model_kind_have_a_colour_key(inferred):
    """Forest, greedy tree and DPBoost, released and diagnostics, as the Trees page
    draws them: a class legend, or for DPBoost a colour bar naming the class."""
    for algorithm in ("fletcher_islam", "friedman_schuster", "dpboost"):
        settings = app_train.TrainSettings(
            algorithm=algorithm, folds=2, sklearn_reference=False, seed=0
        )
        run_ = app_train.train(inferred, settings)
        for view in (app_models.RELEASED, app_models.DIAGNOSTICS):
            drawing = app_models.draw_tree(run_, view)
            assert "ε-DP" not in drawing.intro  # the ledger gives no guarantee here
            fig = drawing.figure
            if algorithm == "dpboost":
                bars = [
                    t.marker.colorbar.title.text
                    for t in fig.data
                    if getattr(t, "marker", None) is not None and t.marker.colorbar.title.text
                ]
                assert any("blue: " in b and "red: not " in b for b in bars), bars
                if fig.data[0].type == "scatter":  # node-link
                    assert_no_overlap(fig)
                continue
            legend = {
                t.name for t in fig.data if t.type == "scatter" and t.showlegend is not False
            }
            assert any(n.endswith(" red") for n in legend), (algorithm, view, legend)


def test_negotiate_mechanism_choice_of_an_inferred_sweep_is_not_badged_dp(inferred_sweep):
    at = open_page(NEGOTIATE, inferred_sweep)
    options = at.selectbox(key=key("negotiate.pin.mechanism")).options
    assert "permute_flip (NOT DP — see ledger)" in options, options
    assert not any(EPS_DP_BADGE in o for o in options)


def test_decision_report_of_an_inferred_sweep_badges_the_mechanism_by_its_ledger(
    inferred, inferred_sweep
):
    sweep = inferred_sweep
    config = {k: v[0] for k, v in app_negotiate.curve_choices(sweep).items()}
    choice = app_negotiate.suggest(sweep, "accuracy", 5.0, config)
    html = app_negotiate.report_html(
        sweep,
        inferred.schema,
        config=config,
        choice=choice,
        chosen=1.0,
        candidates=[1.0],
        prior=0.5,
        rationale="",
        approvers="",
        disclose_record_count=False,
    )
    assert "<code>permute_flip</code> (ε-DP mechanism, NOT DP here: see ledger)" in html
    assert "<code>permute_flip</code> (ε-DP)" not in html
