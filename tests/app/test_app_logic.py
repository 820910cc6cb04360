"""The page logic in dpviz (no streamlit): app_data, app_sweep, app_train, app_curves,
app_leaves."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app import curves as app_curves
from dpviz.app import data as app_data
from dpviz.app import leaves as app_leaves
from dpviz.app import support as support
from dpviz.app import sweep as app_sweep
from dpviz.app import train as app_train
from dpviz.evaluation.demos import DEMO_CSV
from dpviz.evaluation.sweep import SERIES_NONPRIVATE, SweepGrid, run_sweep
from dpviz.models.files.load import ReleasedForest
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.schema import DECLARED_ON_DATA_PAGE, MISSING, Schema
from dpviz.tabular.encode import encode

CORPUS = Path(__file__).resolve().parent.parent / "bad_inputs"
DEMO_BYTES = DEMO_CSV.read_bytes()


@pytest.fixture(scope="module")
def demo_frame() -> pd.DataFrame:
    return support.read_uploaded_csv(DEMO_BYTES)


def mixed_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "size": rng.normal(size=200).round(3).astype(str),
            "colour": rng.choice(["red", "green", "blue"], 200),
            "kind": rng.choice(["a", "b"], 200),
        }
    )


# --- app_data -----------------------------------------------------------------------------


def test_read_upload_parses_and_names_the_file_in_errors():
    up = app_data.read_upload("d.csv", DEMO_BYTES)
    assert up.frame.shape == (2000, 6) and up.size == len(DEMO_BYTES)
    assert up.frame_id == support.frame_id(up.frame) and up.header_warning is None
    with pytest.raises(ValueError, match=r"^Could not read bad\.csv: the file is empty"):
        app_data.read_upload("bad.csv", b"")


def test_header_warning_for_a_first_row_of_numbers():
    assert "5.1, 3.5" in app_data.header_warning(["5.1", "3.5", "1.4", "0.2", "Iris-setosa"])
    assert app_data.header_warning(["age", "income", "label"]) is None
    assert app_data.header_warning(["x", "2020", "label"]) is None  # one number in three
    assert app_data.header_warning(["nan", "inf", "label"]) is None  # not finite numbers


def test_schema_table_round_trips_without_reading_the_data(demo_frame):
    schema = Schema.load(DEMO_CSV.with_name("demo.schema.json"))
    table = app_data.schema_table(schema, demo_frame.columns)
    assert list(table.columns) == list(app_data.TABLE_COLUMNS) and table["use"].all()
    again, filled = app_data.table_to_schema(table, schema.classes, "label", demo_frame)
    assert again == schema and filled == []


def test_table_blanks_are_filled_from_the_data_and_reported():
    frame = mixed_frame()
    frame.loc[3, "colour"] = None
    table = pd.DataFrame(
        [
            {"use": True, "feature": "size", "type": "continuous", "min": -10.0, "max": None},
            {"use": True, "feature": "colour", "type": "discrete", "values": ""},
        ]
    )
    schema, filled = app_data.table_to_schema(table, "a, b", "kind", frame)
    assert filled == ["size", "colour"]
    size = schema.features[0]
    assert size.low == -10.0 and size.high == pd.to_numeric(frame["size"]).max()
    assert schema.features[1].values == ("blue", "green", "red", MISSING)
    assert schema.classes == ("a", "b")


def test_table_errors_name_the_row_to_fix():
    frame = mixed_frame()
    row = {"use": True, "feature": "colour", "type": "continuous", "min": None, "max": None}
    with pytest.raises(ValueError, match="'colour' holds text"):
        app_data.table_to_schema(pd.DataFrame([row]), "a,b", "kind", frame)
    with pytest.raises(ValueError, match="type must be continuous or discrete"):
        app_data.table_to_schema(pd.DataFrame([{**row, "type": "fuzzy"}]), "a,b", "kind", frame)
    with pytest.raises(ValueError, match="no feature is ticked"):
        app_data.table_to_schema(pd.DataFrame([{**row, "use": False}]), "a,b", "kind", frame)
    with pytest.raises(ValueError, match="at least 2 classes"):
        app_data.table_to_schema(
            pd.DataFrame([{**row, "feature": "size", "min": 0, "max": 1}]), "a", "kind", frame
        )


def test_unticked_columns_are_left_out_of_the_schema():
    frame = mixed_frame()
    schema = app_data.choose_schema(frame, "kind").schema
    table = app_data.schema_table(schema, frame.columns)
    table.loc[table["feature"] == "colour", "use"] = False
    chosen = app_data.choose_schema(frame, "kind", edits=table, classes="a, b")
    assert chosen.schema.feature_names == ["size"] and not chosen.public


def test_inferred_schema_is_not_public_and_says_the_guarantee_is_void(demo_frame):
    choice = app_data.choose_schema(demo_frame, "label")
    assert not choice.public and choice.schema.inferred
    assert choice.note == support.INFERRED_SCHEMA_WARNING and "VOID" in choice.note


def test_uploaded_schema_is_public_unless_a_blank_was_filled_from_the_data(demo_frame):
    schema = Schema.load(DEMO_CSV.with_name("demo.schema.json"))
    choice = app_data.choose_schema(demo_frame, "label", schema_file=schema, schema_name="s.json")
    assert choice.public and choice.note == app_data.UPLOADED_NOTE.format(name="s.json")
    table = app_data.schema_table(schema)
    table.loc[0, "min"] = np.nan
    filled = app_data.choose_schema(demo_frame, "label", schema_file=schema, edits=table)
    assert not filled.public and "Blank domain cells of x0" in filled.note
    with pytest.raises(ValueError, match="names 'label' as the label"):
        app_data.choose_schema(demo_frame, "x0", schema_file=schema)
    with pytest.raises(ValueError, match="lacks the schema's columns: x3"):
        app_data.choose_schema(demo_frame.drop(columns="x3"), "label", schema_file=schema)
    with pytest.raises(ValueError, match="not in the file"):
        app_data.choose_schema(demo_frame, "nope")


def test_declared_public_schema_flags_domains_equal_to_the_data_range(demo_frame):
    inferred = app_data.choose_schema(demo_frame, "label", declared_public=True)
    assert inferred.public and inferred.note == app_data.DECLARED_NOTE
    assert "(the data's own min and max)" in inferred.warnings[0]
    assert all(f"'x{i}' [" in inferred.warnings[0] for i in range(5))
    assert "the class list of 'label' (read from the data)" in inferred.warnings[0]
    assert inferred.schema.declaration == DECLARED_ON_DATA_PAGE  # who, never what
    table = app_data.schema_table(inferred.schema)
    table["min"], table["max"] = -10.0, 10.0
    widened = app_data.choose_schema(demo_frame, "label", edits=table, declared_public=True)
    assert widened.public and widened.warnings == ()
    assert app_data.same_as_data(widened.schema, demo_frame) == []


def test_applied_edits_belong_to_one_label_and_schema_file():
    ws = app_data.UploadWorkspace(app_data.read_upload("d.csv", DEMO_BYTES))
    assert ws.applied_edits("label") == (None, None)
    ws.edits, ws.classes, ws.edits_for = pd.DataFrame(), "0, 1", ("label", "")
    assert ws.applied_edits("label")[1] == "0, 1"
    assert ws.applied_edits("x0") == (None, None)
    ws.schema_file_id = "other"
    assert ws.applied_edits("label") == (None, None)


def test_data_report_counts_missing_outside_and_training_drops():
    frame = mixed_frame()
    frame.loc[[0, 1], "size"] = None
    frame.loc[2, "size"] = "99"
    frame.loc[5, "colour"] = "purple"
    schema = Schema.from_dict(
        {
            "label": "kind",
            "classes": ["a", "b"],
            "features": [
                {"name": "size", "type": "continuous", "min": -5, "max": 5},
                {"name": "colour", "type": "discrete", "values": ["red", "green", "blue"]},
            ],
        }
    )
    report = app_data.data_report(support.PreparedData("t.csv", frame, schema, ""))
    table = report.table.set_index("column")
    assert table.loc["size", "missing"] == 2 and table.loc["size", "outside domain"] == 1
    assert table.loc["colour", "outside domain"] == 1 and table.loc["kind", "role"] == "label"
    assert report.rows_used == 197 and report.error is None
    joined = " ".join(report.messages)
    assert "2 rows had no value for continuous 'size'" in joined and "clipped" in joined


def test_data_report_says_why_training_would_fail():
    frame = support.read_uploaded_csv((CORPUS / "text_in_continuous.csv").read_bytes())
    schema = Schema.load(CORPUS / "text_in_continuous.schema.json")
    report = app_data.data_report(support.PreparedData("t.csv", frame, schema, ""))
    assert report.rows_used is None and "holds text ('about 2' in data row 3)" in report.error


# --- app_sweep ----------------------------------------------------------------------------


def test_epsilon_ladder_gives_round_values_between_the_ends():
    assert app_sweep.epsilon_ladder(0.1, 1, 3) == [0.1, 0.2, 0.5, 1.0]
    assert app_sweep.epsilon_ladder(0.01, 10)[:7] == [0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1]
    assert len(app_sweep.epsilon_ladder(0.01, 10, 6)) == 19
    assert app_sweep.epsilon_ladder(0.04, 0.06, 3) == [0.04, 0.05, 0.06]  # ends kept
    assert app_sweep.epsilon_ladder(1, 1) == [1.0]
    with pytest.raises(ValueError, match="0 < low ≤ high"):
        app_sweep.epsilon_ladder(2, 1)
    with pytest.raises(ValueError, match="per_decade"):
        app_sweep.epsilon_ladder(0.1, 1, 4)


def test_reference_defaults_follow_the_data_size():
    assert app_sweep.sklearn_default(2_000) and not app_sweep.sklearn_default(30_000)
    assert app_sweep.sweep_jobs(2_000, 5) == 1 and app_sweep.sweep_jobs(30_000, 5) >= 1


def test_references_without_sklearn_equal_the_engines_own_reference_rows(demo_frame):
    schema = Schema.load(DEMO_CSV.with_name("demo.schema.json"))
    encoded = encode(demo_frame, schema)
    seen = []
    ours = app_sweep.run_with_references(
        encoded,
        schema,
        epsilons=[0.5, 2.0],
        n_estimators=[10],
        sklearn=False,
        folds=3,
        seed=4,
        noise_seed=1,
        progress=lambda f, m: seen.append(f),
    )
    grid = SweepGrid([0.5, 2.0], n_estimators=[10])
    engine = run_sweep(encoded, schema, grid, folds=3, seed=4, noise_seed=1)
    metrics = ["accuracy_mean", "auc_mean", "f1_mean", "accuracy_std", "empty_leaf_pct"]
    for table in (ours.summary, engine.summary):
        assert (table["series"] == SERIES_NONPRIVATE).sum() == 1
    a = ours.summary[ours.summary["series"] == SERIES_NONPRIVATE].iloc[0]
    b = engine.summary[engine.summary["series"] == SERIES_NONPRIVATE].iloc[0]
    assert np.allclose(a[metrics].astype(float), b[metrics].astype(float))
    assert a["epsilon"] == math.inf and not a["private"] and a["data_split"] == "shared"
    dp_ours = ours.summary[ours.summary["series"] == "dp_forest"][metrics].to_numpy(float)
    dp_engine = engine.summary[engine.summary["series"] == "dp_forest"][metrics].to_numpy(float)
    assert np.allclose(dp_ours, dp_engine)
    # The bar moves at once (fold 1 running), then after each of the 3 folds (the twin
    # runs in the same pass).
    assert seen[0] == 0.0 and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert len(seen) == 4


# --- app_train ----------------------------------------------------------------------------


def test_epsilon_grid_and_snapping():
    grid = app_train.epsilon_grid()
    assert grid[0] == 0.01 and grid[-1] == 10.0 and 1.0 in grid and len(grid) == 19
    assert app_train.nearest_epsilon(0.33) == 0.3 and app_train.nearest_epsilon(0.9) == 1.0
    assert app_train.nearest_epsilon(50) == 10.0 and app_train.nearest_epsilon(0) == 0.01


def test_algorithm_choices_come_from_one_place():
    choices = app_train.algorithm_choices()
    # Every algorithm of the registry: the Trees and Leaves pages draw them all.
    assert list(choices) == list(ALGORITHMS)
    assert choices["jpw"].fixed == {
        "mechanism": "laplace_counts",
        "data_split": "shared",
        "split_points": "uniform",
    }
    assert choices["jpw"].defaults["n_estimators"] == "auto"
    with pytest.raises(ValueError, match="jpw fixes mechanism"):
        app_train.TrainSettings(algorithm="jpw", mechanism="permute_flip")
    with pytest.raises(ValueError, match="unknown algorithm"):
        app_train.TrainSettings(algorithm="nope")
    with pytest.raises(ValueError, match="unknown mechanism"):
        app_train.TrainSettings(mechanism="nope")
    for m in MECHANISMS:
        assert f"[{MECHANISMS[m].badge}]" in app_train.mechanism_option(m)


def test_depth_preview_explains_the_rule():
    schema = support.prepare_demo("demo_csv").schema
    preview = app_train.depth_preview(schema, "theorem2", 2000, 100, "disjoint")
    assert preview.depth == 5 and "32 leaves for about 20 records" in preview.text
    assert "most leaves will be empty" in preview.text and preview.private_note is None
    shared = app_train.depth_preview(schema, 3, 2000, 100, "shared")
    assert shared.depth == 3 and "8 leaves for about 2,000 records." in shared.text
    jpw = app_train.depth_preview(schema, "jpw", 2000, 100, "disjoint")
    assert "reads the number of records" in jpw.private_note
    mixed = app_data.choose_schema(mixed_frame(), "kind").schema
    assert (
        "sees about 2 records" in app_train.depth_preview(mixed, "full", 200, 100, "disjoint").text
    )
    with pytest.raises(ValueError, match="unknown depth rule"):
        app_train.depth_preview(schema, "deep", 2000, 100, "disjoint")


def test_the_dpboost_preview_says_how_classes_share_the_budget():
    """More than two classes: the default's one tree serves every class with the whole ε;
    the paper preset gives each one-vs-rest class ε / k."""
    schema = app_data.choose_schema(mixed_frame(), "colour").schema
    k = len(schema.classes)
    assert k == 3
    shared = app_train.structure_preview(schema, 2000, "dpboost", {})
    assert f"one tree serving all {k} one-vs-rest classes" in shared.text
    assert "per one-vs-rest class" not in shared.text
    paper = app_train.structure_preview(schema, 2000, "dpboost", {"preset": "paper"})
    assert f"ε / {k} per one-vs-rest class" in paper.text


@pytest.fixture(scope="module")
def run() -> app_train.TrainRun:
    settings = app_train.TrainSettings(
        epsilon=0.5, n_estimators=20, folds=3, sklearn_reference=False, seed=1
    )
    return app_train.train(support.prepare_demo("demo_csv"), settings)


def test_train_cross_validates_beside_the_non_private_forest(run):
    assert run.series == ["dp_forest", "nonprivate_forest"]
    value, delta = run.metric_text("dp_forest", "accuracy")
    row, ref = run.row("dp_forest"), run.row(SERIES_NONPRIVATE)
    assert value == f"{100 * row['accuracy_mean']:.1f}% ± {100 * row['accuracy_std']:.1f}"
    diff = 100 * (row["accuracy_mean"] - ref["accuracy_mean"])
    assert delta == f"{diff:+.1f} pts vs non-private forest"
    assert run.metric_text(SERIES_NONPRIVATE, "f1")[1] is None
    assert run.metric_text("sklearn_random_forest", "auc") == ("—", None)
    assert run.n_records == 2000 and run.seconds > 0
    # Below ε = 1 the records rule sizes leaves for n̂/10 records: ~200 over 20 trees,
    # ~10 a tree, depth 3 (n̂ ± its noise, scale 40, keeps it between 8 and 15).
    assert "laplace_counts (ε-DP) · ε = 0.5 · 20 trees · depth 3" in run.describe()


def test_the_released_model_and_its_ledger(run):
    assert run.private and run.privacy_summary == run.model.ledger_.describe()
    assert "0.5-differentially private" in run.privacy_summary
    assert run.export_problem is None
    released = ReleasedForest.from_json(run.model_json)
    X = support.prepare_demo("demo_csv").frame.drop(columns="label").head(50)
    assert (released.predict(X) == run.model.predict(X)).all()
    assert "count[" not in run.model_json  # no true counts in the released model
    assert run.released.meta["privacy"]["summary"] == run.privacy_summary


def test_metrics_csv_and_diagnostics(run):
    table = pd.read_csv(io.StringIO(run.metrics_csv()))
    assert list(table["series"]) == ["dp_forest", "nonprivate_forest"]
    assert {"accuracy_mean", "auc_std", "f1_mean", "private"} <= set(table.columns)
    assert {"macro_f1_mean", "majority_accuracy_mean", "majority_f1_std"} <= set(table.columns)
    assert {"majority_auc_mean", "majority_macro_f1_mean", "one_class_share"} <= set(table.columns)
    assert table.loc[0, "accuracy_mean"] == pytest.approx(run.row("dp_forest")["accuracy_mean"])
    # The trivial baseline is the same on every row: the same folds.
    assert table["majority_accuracy_mean"].nunique() == 1
    cards = run.diagnostics()
    d = run.model.diagnostics_
    assert cards["Leaves in the forest"] == "160" and cards["Leaves with records"] == str(
        d["n_leaves_nonempty"]
    )
    assert cards["Empty leaves"] == f"{d['empty_leaf_pct']:.1f}%"
    assert len(run.leaf_table) == d["n_leaves_nonempty"]
    fig = run.scores_figure()
    assert [t.name.split(",")[0] for t in fig.data] == ["DP forest", "non-private forest (NOT DP)"]
    # The trivial baseline: a grey line across each metric's bars, one legend entry.
    row = run.row("dp_forest")
    lines = [s for s in fig.layout.shapes if (s.name or "").startswith("majority class")]
    assert [s.y0 for s in lines] == pytest.approx(
        [100 * row[f"majority_{m}_mean"] for m in ("accuracy", "auc", "f1")]
    )
    assert [s.showlegend for s in lines] == [True, False, False]


def test_a_forest_too_large_to_list_is_refused_with_the_reason():
    settings = app_train.TrainSettings(depth=20, n_estimators=5, folds=2, sklearn_reference=False)
    big = app_train.train(support.prepare_demo("demo_csv"), settings)
    assert "cannot export" in big.export_problem and "every leaf" in big.export_problem
    assert big.released is None


def test_an_inferred_schema_gives_a_run_without_guarantee(demo_frame):
    data = support.prepare_upload(demo_frame, "label")
    settings = app_train.TrainSettings(n_estimators=5, folds=2, sklearn_reference=False)
    steps = []
    run = app_train.train(data, settings, progress=lambda f, m: steps.append((f, m)))
    assert not run.private and "NO privacy guarantee" in run.privacy_summary
    assert [f for f, _ in steps] == sorted(f for f, _ in steps) and steps[-1] == (1.0, "done")
    with pytest.raises(ValueError, match="too few for"):
        app_train.train(
            support.prepare_upload(demo_frame.head(5), "label"),
            app_train.TrainSettings(folds=5, sklearn_reference=False),
        )


# --- app_curves ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep() -> app_curves.SweepRun:
    settings = app_curves.SweepSettings(
        eps_low=0.1,
        eps_high=1.0,
        per_decade=3,
        mechanisms=("permute_flip", "smooth_em"),
        depths=("theorem2",),
        n_estimators=(10, 20),
        folds=2,
    )
    return app_curves.run(support.prepare_demo("demo_csv"), settings)


def test_sweep_run_describes_its_grid(sweep):
    assert sweep.settings.epsilons == [0.1, 0.2, 0.5, 1.0]
    assert sweep.settings.n_configurations == 16
    assert sweep.axes() == ["epsilon", "n_estimators"]
    assert sweep.values("epsilon") == [0.1, 0.2, 0.5, 1.0]
    assert sweep.values("n_estimators") == [10, 20]
    assert sweep.describe().startswith("4 ε values × 2 mechanisms × 2 tree counts, 2-fold CV")
    folds = pd.read_csv(io.StringIO(sweep.results_csv))
    assert len(folds) == 2 * (16 + 2) and set(folds["fold"]) == {0, 1}
    assert len(pd.read_csv(io.StringIO(sweep.summary_csv))) == 18


def test_candidate_table_puts_cost_and_guarantee_side_by_side(sweep):
    fixed = {"n_estimators": 20, "depth_rule": "theorem2", "data_split": "disjoint"}
    table = sweep.candidate(0.5, "auc", fixed)
    assert list(table["mechanism"]) == ["permute_flip (ε-DP)", "smooth_em (NOT DP)"]
    assert list(table["guarantee"]) == ["0.5-DP", "NONE (not DP)"]
    summary = sweep.summary
    row = summary[
        (summary["series"] == "dp_forest")
        & (summary["mechanism"] == "permute_flip")
        & (summary["epsilon"] == 0.5)
        & (summary["n_estimators"] == 20)
    ].iloc[0]
    ref = sweep.reference(SERIES_NONPRIVATE, fixed)
    assert ref["n_estimators"] == 20
    assert table.loc[0, "ROC AUC"] == f"{100 * row['auc_mean']:.1f}% ± {100 * row['auc_std']:.1f}"
    assert (
        table.loc[0, "vs non-private"] == f"{100 * (row['auc_mean'] - ref['auc_mean']):+.1f} pts"
    )
    assert sweep.reference("sklearn_random_forest", fixed) is None
    text = sweep.ledger_text("permute_flip", 0.5, fixed)
    # The split histograms (ε = 0.01 at this rung) and the class prior (at least 0.08)
    # are booked before the leaves' parallel part.
    assert "together ε = 0.41 by parallel" in text
    assert "spent ε = 0.01" in text and "spent ε = 0.08" in text
    assert "the released model is 0.5-differentially private" in text
    assert "NO privacy guarantee" in sweep.ledger_text("smooth_em", 0.5, fixed)


def test_a_sweeps_ledger_of_the_auto_data_split_is_the_points_own():
    """data_split="auto" is disjoint at ε = 1 and two halves of the records at ε = 10: each
    point's ledger says so and totals its ε (it once booked every tree at the whole leaf ε
    in turn: ε = 181 at 10), for a point the sweep ran and for one it did not."""
    settings = app_curves.SweepSettings(
        eps_low=1.0,
        eps_high=10.0,
        per_decade=3,
        mechanisms=("laplace_counts",),
        n_estimators=("auto",),
        data_splits=("auto",),
        folds=2,
    )
    run = app_curves.run(support.prepare_demo("demo_csv"), settings)
    fixed = {"data_split": "auto"}
    below = run.ledger_text("laplace_counts", 1.0, fixed)
    assert "by parallel composition" in below and "two halves" not in below
    assert "the released model is 1-differentially private" in below
    above = run.ledger_text("laplace_counts", 10.0, fixed)
    assert "Trees 1 and 2 read the two halves of the records" in above
    assert "the released model is 10-differentially private" in above
    rows = run.summary[run.summary["series"] == "dp_forest"]
    splits = dict(zip(rows["epsilon"], rows["records_split"]))
    assert splits == {1.0: "disjoint", 2.0: "disjoint", 5.0: "halves", 10.0: "halves"}
    unswept = run.point_ledger("laplace_counts", 7.0, {"data_split": "auto", "n_estimators": 14})
    assert unswept.epsilon_total == pytest.approx(7.0)


def test_risk_lines_spell_out_the_bound():
    per_record, odds, posterior, attribute = app_curves.risk_lines(1.0)
    assert "k·ε" in per_record
    assert "by at most 2.72" in odds and "be at most 73.1% sure" in posterior
    assert "88.1%" in attribute
    assert "at most 52.5% sure" in app_curves.risk_lines(0.1)[2]


def test_sweep_errors_are_messages():
    data = support.prepare_demo("demo_csv")
    with pytest.raises(ValueError, match="at least one mechanism"):
        app_curves.run(data, app_curves.SweepSettings(mechanisms=()))
    with pytest.raises(ValueError, match="unknown mechanism"):
        app_curves.run(data, app_curves.SweepSettings(mechanisms=("nope",)))


# --- app_leaves ---------------------------------------------------------------------------


def test_parse_counts():
    assert app_leaves.parse_counts("5, 10") == [5, 10]
    assert app_leaves.parse_counts("1;2;3") == [1, 2, 3]
    for bad, message in (("5", "at least 2"), ("a,b", "whole numbers"), ("1,-2", "negative")):
        with pytest.raises(ValueError, match=message):
            app_leaves.parse_counts(bad)


def test_leaf_release_table_is_exact():
    table = app_leaves.leaf_release_table([0, 4], 0.5, classes=["no", "yes"])
    assert list(table.columns) == ["mechanism", "P(no)", "P(yes)", "P(abstain)", "P(flip)"]
    assert len(table) == len(MECHANISMS)
    assert np.allclose(table[["P(no)", "P(yes)", "P(abstain)"]].sum(axis=1), 1.0)
    # Only abstain_flip abstains; θ = (ln 2 + 2)/0.5 ≈ 5.4 > 4, so it often does here.
    abstaining = table["mechanism"].str.startswith("abstain_flip")
    assert (table.loc[~abstaining, "P(abstain)"] == 0).all()
    assert table.loc[abstaining, "P(abstain)"].iloc[0] > 0.5
    assert np.allclose(table["P(flip)"], table["P(no)"])  # class "yes" is the majority
    pf = table.set_index("mechanism").loc["permute_flip (ε-DP)"]
    assert pf["P(flip)"] == pytest.approx(0.5 * math.exp(-0.5 * 4))  # e^(-εj)/2
    assert table.set_index("mechanism").loc["none (NOT DP)", "P(flip)"] == 0
    assert list(app_leaves.leaf_release_table([1, 2, 3], 1.0).columns)[1] == "P(class 1)"
    with pytest.raises(ValueError, match="epsilon"):
        app_leaves.leaf_release_table([1, 2], 0)
    assert json.dumps(table.to_dict())  # plain numbers, renderable


def test_training_jpw_from_the_page_logic():
    from dpviz.models.forest.estimator import PrivateRDTClassifier

    data = support.prepare_demo("demo_csv")
    settings = app_train.TrainSettings(
        algorithm="jpw",
        mechanism="laplace_counts",
        data_split="shared",
        n_estimators=10,
        depth="jpw",
        folds=2,
        sklearn_reference=False,
    )
    run = app_train.train(data, settings)
    assert isinstance(run.model, PrivateRDTClassifier)
    assert run.model.ledger_.epsilon_total == pytest.approx(1.0)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 2.0])
@pytest.mark.parametrize("algorithm", ["friedman_schuster", "dpea"])
def test_the_greedy_preview_gives_the_fitted_depth(algorithm, epsilon):
    """The Train page's preview of an "auto" greedy depth, at the record count the fit
    read (its noisy n̂, replayable here), is the depth the fit grew: the preview keeps
    the prior's reserve off the tree as the fit does."""
    data = support.prepare_demo("demo_csv")
    model = ALGORITHMS[algorithm].make(epsilon, schema=data.schema, noise_seed=3, random_state=0)
    model.fit(data.frame.drop(columns=data.schema.label), data.frame[data.schema.label])
    n_hat = int(round(model.n_records_estimate_))
    preview = app_train.structure_preview(data.schema, n_hat, algorithm, {}, epsilon)
    assert preview.depth == model.depth_


def test_the_small_macro_f1_dpboost_is_one_tree_on_every_record():
    """DPBoost's small macro_f1 model (few records): the preview and the ledger say its
    one tree reads every record, not a "disjoint subset"."""
    schema = app_data.choose_schema(mixed_frame(), "kind").schema
    small = app_train.structure_preview(schema, 1500, "dpboost", {"objective": "macro_f1"}, 0.5)
    assert small.text.startswith("One tree of depth 2 (4 leaves) reads every record")
    assert "macro_f1 threshold" in small.text
    plain = app_train.structure_preview(schema, 1500, "dpboost", {}, 0.5)
    assert "disjoint subset" in plain.text
    frame = mixed_frame()
    model = ALGORITHMS["dpboost"].make(0.5, schema=schema, objective="macro_f1", noise_seed=1)
    model.fit(frame.drop(columns="kind"), frame["kind"])
    text = model.ledger_.describe()
    assert "read every record" in text and "disjoint subset" not in text


def test_the_private_rdt_preview_gives_its_exact_auto_trees():
    """Private-RDT's "auto" count follows ε alone: the preview states it exactly and
    does not warn that the tree count may differ from the one shown."""
    schema = support.prepare_demo("demo_csv").schema
    at_one = app_train.structure_preview(schema, 2000, "jpw", {}, 1.0)
    assert at_one.text.startswith("10 trees (auto, from ε).")
    assert "tree count may differ" not in at_one.private_note
    assert app_train.structure_preview(schema, 2000, "jpw", {}, 0.5).text.startswith("3 trees")
