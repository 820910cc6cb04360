"""Every page through Streamlit's AppTest: widgets set, buttons pressed, rendered elements
checked (metrics, charts, warnings), and never an exception on the page.

The page logic itself is unit-tested in tests/test_app_logic.py and the figures in
tests/test_figures*.py; these tests check the wiring and what the user is told.

AppTest limit: because the project keeps its pages in ``pages/``, ``switch_page`` runs a
page file on its own (Streamlit's v1 multipage mode), not inside app.py's
``st.navigation``. So each test first runs app.py (which loads the default demo into
the session) and then switches; the sidebar summary that app.py draws on every page is
checked on the home page here and across real pages in tests/test_e2e_browser.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.proto.Metric_pb2 import Metric as MetricProto
from streamlit.testing.v1 import AppTest

from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY, SWEEP_KEY
from dpviz.evaluation.demos import DEMO_CSV, DEMO_SCHEMA
from dpviz.figures.common import majority_mean
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.mechanisms import MECHANISMS
from tests.page_checks import chart_spec, charts, key, texts
from tests.rare_data import rare_data

ROOT = Path(__file__).resolve().parent.parent.parent
CORPUS = ROOT / "tests" / "bad_inputs"
APP = str(ROOT / "app.py")
DEMO_BYTES = DEMO_CSV.read_bytes()
SCHEMA_BYTES = DEMO_SCHEMA.read_bytes()
UPLOAD = "My own CSV file"


def downloads(at: AppTest) -> list[str]:
    return [d.proto.label for d in at.get("download_button")]


def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def upload_csv(at: AppTest, name: str, data: bytes) -> AppTest:
    at.radio(key=key("data.source")).set_value(UPLOAD).run()
    at.file_uploader(key="data.csv").set_value((name, data, "text/csv")).run()
    assert not at.exception, at.exception
    return at


# The forest's widgets: each algorithm's parameters have their own keys (registry names).
FOREST_WIDGETS = {
    "trees": "fletcher_islam.n_estimators",
    "mechanism": "fletcher_islam.mechanism",
    "depth_rule": "fletcher_islam.depth",
    "fixed_depth": "fletcher_islam.depth.number",
    "split": "fletcher_islam.data_split",
}


def set_forest_trees(at: AppTest, trees: int) -> None:
    """Choose "a number I choose" for the forest's tree count (its default is "auto")
    and type ``trees``."""
    at.selectbox(key=key("train.fletcher_islam.n_estimators")).set_value(
        app_train.FIXED_TREES
    ).run()
    at.number_input(key=key("train.fletcher_islam.n_estimators.number")).set_value(trees)


def trained(*, trees: int = 20, folds: int = 2, **widgets) -> AppTest:
    """The app after pressing Train on the demo data (small and fast settings)."""
    at = open_page("pages/train.py")
    set_forest_trees(at, trees)
    at.number_input(key=key("train.folds")).set_value(folds)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.run()
    for name, value in widgets.items():  # in order: a choice can reveal the next widget
        at.get_by_key(key(f"train.{FOREST_WIDGETS.get(name, name)}")).set_value(value)
        at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    return at


# --- Data ---------------------------------------------------------------------------------


def test_data_page_starts_on_the_demo_with_a_public_schema_report_and_download():
    at = open_page("pages/data.py")
    assert at.radio(key=key("data.source")).value == "A bundled demo dataset"
    assert at.selectbox(key=key("data.demo")).value == "demo_csv"
    assert "Public schema" in texts(at.info) and not at.warning and not at.error
    report = at.dataframe[1].value
    assert list(report["column"]) == ["label", "x0", "x1", "x2", "x3", "x4"]
    assert "All 2,000 rows are usable" in texts(at.caption)
    assert "Download the schema JSON" in downloads(at)


def test_choosing_another_demo_changes_the_dataset_and_drops_the_model():
    at = trained()
    at.switch_page("pages/data.py").run()
    at.selectbox(key=key("data.demo")).set_value("breast_cancer").run()
    assert not at.exception
    assert at.session_state[DATA_KEY].name == "Breast cancer (569 rows)"
    assert RUN_KEY not in at.session_state
    assert "the trained model" in texts(at.info) and "were cleared" in texts(at.info)


def test_upload_without_schema_warns_that_the_guarantee_is_void():
    at = upload_csv(open_page("pages/data.py"), "demo.csv", DEMO_BYTES)
    warning = texts(at.warning)
    assert "VOID" in warning and "inferred from the uploaded records" in warning
    frame_id = support.frame_id(support.read_uploaded_csv(DEMO_BYTES))
    assert at.selectbox(key=key(f"data.label.{frame_id}")).value == "label"
    assert at.session_state[DATA_KEY].schema.inferred


def test_declaring_the_inferred_schema_public_still_flags_exact_data_ranges():
    at = upload_csv(open_page("pages/data.py"), "demo.csv", DEMO_BYTES)
    frame_id = support.frame_id(support.read_uploaded_csv(DEMO_BYTES))
    at.checkbox(key=key(f"data.declare.{frame_id}")).check().run()
    assert not at.exception
    assert "you declared the class list" in texts(at.info)
    assert "(the data's own min and max)" in texts(at.warning)
    assert not at.session_state[DATA_KEY].schema.inferred


def test_uploaded_schema_makes_it_public_and_a_bad_one_is_an_error():
    at = upload_csv(open_page("pages/data.py"), "demo.csv", DEMO_BYTES)
    at.file_uploader(key="data.schema").set_value(("s.json", b"{oops", "application/json"))
    at.run()
    assert not at.exception and "not valid JSON" in texts(at.error)
    at.file_uploader(key="data.schema").set_value(("s.json", SCHEMA_BYTES, "application/json"))
    at.run()
    assert not at.exception and not at.error
    assert "the schema file you uploaded (s.json)" in texts(at.info)
    assert not at.session_state[DATA_KEY].schema.inferred


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("empty.csv", "the file is empty"),
        ("whitespace.csv", "the file is empty"),
        ("header_only.csv", "no data rows"),
        ("one_column.txt", "only one column"),  # space-separated: the wrong delimiter
        ("ragged.csv", "line 5 has 5 fields"),
        ("latin1.csv", "not UTF-8"),
        ("one_class.csv", "only one class"),
        ("no_labels.csv", "no values"),
        ("binary.png", "looks binary"),
        ("binary.csv.gz", "looks binary"),
        ("duplicate_header.csv", "names column 'x' twice"),
    ],
)
def test_bad_file_gives_a_clear_message_and_the_app_keeps_working(name, message):
    # The uploader only takes .csv/.tsv/.txt names, so binary files arrive renamed.
    upload_name = name if name.endswith((".csv", ".txt")) else f"{name}.csv"
    at = upload_csv(open_page("pages/data.py"), upload_name, (CORPUS / name).read_bytes())
    assert message in texts(at.error)
    assert "keeps working on the current dataset: demo.csv" in texts(at.caption)
    assert at.session_state[DATA_KEY].name.startswith("demo.csv")
    at.switch_page("pages/train.py").run()
    assert not at.exception and at.button(key="train.button")


def test_file_over_the_upload_limit_is_refused(monkeypatch):
    monkeypatch.setattr(support, "UPLOAD_LIMIT_MB", 64 / 2**20)  # 64 bytes
    at = upload_csv(open_page("pages/data.py"), "big.csv", DEMO_BYTES)
    assert "the limit is 64 bytes" in texts(at.error)
    assert at.session_state[DATA_KEY].name.startswith("demo.csv")


def test_headerless_file_is_flagged_and_semicolons_work():
    at = upload_csv(
        open_page("pages/data.py"), "iris.csv", (CORPUS / "no_header.csv").read_bytes()
    )
    assert "looks like data, not column names" in texts(at.warning)
    at = upload_csv(
        open_page("pages/data.py"), "semi.csv", (CORPUS / "semicolon.csv").read_bytes()
    )
    assert not at.error and at.session_state[DATA_KEY].schema.feature_names == ["x", "colour"]
    assert "Upload limit" not in texts(at.caption)
    assert "at most 200 MB" in at.file_uploader(key="data.csv").proto.label


def test_leaving_the_data_page_keeps_the_upload_and_its_label():
    at = upload_csv(open_page("pages/data.py"), "valid.csv", (CORPUS / "valid.csv").read_bytes())
    before = at.session_state[DATA_KEY].fingerprint
    at.switch_page("pages/train.py").run()
    at.switch_page("pages/data.py").run()
    assert not at.exception
    assert at.radio(key=key("data.source")).value == UPLOAD
    assert "Using your upload valid.csv" in texts(at.caption)
    assert at.session_state[DATA_KEY].fingerprint == before


# --- Train --------------------------------------------------------------------------------


def test_train_page_offers_jpw_with_its_fixed_settings():
    at = open_page("pages/train.py")
    at.selectbox(key=key("train.algorithm")).set_value("jpw").run()
    trees = at.selectbox(key=key("train.jpw.n_estimators"))
    assert trees.value == "auto"
    assert "10 trees from ε = 1 up, 3 below" in trees.format_func("auto")
    trees.set_value(app_train.FIXED_TREES).run()
    assert at.number_input(key=key("train.jpw.n_estimators.number")).value == 10
    assert at.selectbox(key=key("train.jpw.depth")).value == "jpw"
    shown = " ".join(m.value for m in at.markdown)
    assert "laplace_counts" in shown and "(fixed)" in shown and "shared" in shown
    assert not at.exception


def test_train_page_lists_mechanisms_with_badges_and_previews_the_depth():
    at = open_page("pages/train.py")
    options = at.selectbox(key=key("train.fletcher_islam.mechanism")).options
    assert any("smooth_em" in o and "[NOT DP]" in o for o in options)
    assert any("permute_flip" in o and "[ε-DP]" in o for o in options)
    # Every algorithm of the registry, each with its privacy status.
    algorithms = at.selectbox(key=key("train.algorithm")).options
    assert algorithms == [f"{a.name}  [{a.privacy}]" for a in ALGORITHMS.values()]
    assert "Depth 5 (records" in texts(at.caption) and "32 leaves" in texts(at.caption)
    assert "spends 5% of ε on a noisy count" in texts(at.info)
    assert at.checkbox(key=key("train.sklearn")).value  # 2,000 rows: on by default
    at.selectbox(key=key("train.fletcher_islam.depth")).set_value("jpw").run()
    assert "The jpw rule reads the number of records" in texts(at.info)
    at.selectbox(key=key("train.fletcher_islam.depth")).set_value("fixed").run()
    at.number_input(key=key("train.fletcher_islam.depth.number")).set_value(3).run()
    assert "Depth 3 (3:" in texts(at.caption)
    assert "Set the options above" in texts(at.info)


def test_epsilon_slider_and_box_stay_in_step():
    at = open_page("pages/train.py")
    at.number_input(key=key("train.eps")).set_value(0.33).run()
    assert at.select_slider(key=key("train.eps_slider")).value == 0.3
    at.select_slider(key=key("train.eps_slider")).set_value(5.0).run()
    assert at.number_input(key=key("train.eps")).value == 5.0


def test_train_shows_cards_references_ledger_chart_and_downloads():
    at = trained(eps=0.5)
    labels = [m.label for m in at.metric]
    assert labels[:2] == ["Accuracy · DP forest", "Accuracy · non-private forest (NOT DP)"]
    dp_cards = [m for m in at.metric if m.label.endswith("DP forest")]
    assert len(dp_cards) == 3
    for card in dp_cards:
        assert "% ± " in card.value and card.delta.endswith("pts vs non-private forest")
        assert card.proto.delta_description.endswith("pts vs majority class")
    # The trivial baseline beside every metric (the demo is balanced: no macro F1 card).
    baseline = [m for m in at.metric if m.label.endswith(app_train.MAJORITY_NAME)]
    assert [m.label.split(" · ")[0] for m in baseline] == ["Accuracy", "ROC AUC", "F1"]
    assert baseline[1].value == "50.0% ± 0.0" and "must beat it" in baseline[0].help
    assert all(m.delta.endswith(" pts for the DP forest") for m in baseline)
    assert not at.warning  # a model that learnt something: no one-class warning
    assert "0.5-differentially private" in texts(at.success)
    assert len(charts(at)) == 1
    names = [trace["name"] for trace in chart_spec(at)["data"]]
    assert names == [
        "DP forest, laplace_counts (ε-DP), ε = 0.5",
        "non-private forest (NOT DP)",
    ]
    shapes = chart_spec(at)["layout"]["shapes"]
    assert [s["name"].split(":")[0] for s in shapes] == ["majority class (trivial baseline)"] * 3
    assert downloads(at) == ["Download the released model (JSON)", "Download the metrics (CSV)"]
    # ε = 0.5, 20 trees: the records rule sizes leaves for n̂/10 records (~10 a tree).
    assert "depth 3 · accuracy" in at.session_state[RUN_KEY].describe()
    at.run()  # the result survives a rerun (session state)
    assert len(charts(at)) == 1 and at.session_state[RUN_KEY].settings.epsilon == 0.5


def test_a_model_predicting_one_class_is_warned_about_with_macro_f1_beside_accuracy():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state[DATA_KEY] = rare_data()  # 3% positives, features without signal
    at.switch_page("pages/train.py").run()
    set_forest_trees(at, 10)
    at.number_input(key=key("train.folds")).set_value(3)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.checkbox(key=key("train.replay")).check()  # exact: any noise gives one class here
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    warning = texts(at.warning)
    assert "The DP forest predicts only class 'no' in every fold" in warning
    assert "no better than always answering the majority class" in warning
    assert "'yes', is 3.0% of the records" in texts(at.caption)
    labels = [m.label for m in at.metric]
    assert labels[:3] == [
        "Accuracy · DP forest",
        "Accuracy · non-private forest (NOT DP)",
        f"Accuracy · {app_train.MAJORITY_NAME}",
    ]
    assert labels[3] == "Macro F1 · DP forest"  # beside accuracy
    accuracy = at.metric[0]
    # 97% accuracy that only repeats the class shares: red, and said so under it.
    assert accuracy.proto.delta_description == "+0.0 pts vs majority class"
    majority = at.metric[2]
    assert majority.delta == "+0.0 pts for the DP forest"
    assert majority.proto.color == MetricProto.MetricColor.RED
    assert accuracy.proto.color == MetricProto.MetricColor.RED
    spec = chart_spec(at)
    assert spec["data"][0]["x"] == ["Accuracy", "Macro F1", "ROC AUC", "F1"]
    marks = [a["text"] for a in spec["layout"]["annotations"] if a["text"].startswith("majority")]
    assert marks[-1] == "majority 0.0"  # F1 of always answering 'no'


def test_not_dp_mechanism_is_badged_and_the_ledger_says_no_guarantee():
    at = open_page("pages/train.py")
    at.selectbox(key=key("train.fletcher_islam.mechanism")).set_value("smooth_em").run()
    assert "NOT DP" in texts(at.error)
    at = trained(mechanism="smooth_em")
    assert "NO privacy guarantee" in texts(at.error)
    assert "smooth_em (NOT DP)" in chart_spec(at)["data"][0]["name"]


def test_training_failure_is_a_message_not_a_traceback():
    at = upload_csv(open_page("pages/data.py"), "valid.csv", (CORPUS / "valid.csv").read_bytes())
    at.switch_page("pages/train.py").run()
    at.number_input(key=key("train.folds")).set_value(10).run()
    at.button(key="train.button").click().run()
    assert not at.exception
    assert "too few for 10 folds" in texts(at.error)
    assert RUN_KEY not in at.session_state


def test_too_large_forest_explains_why_it_cannot_be_exported():
    at = trained(depth_rule="fixed", fixed_depth=20, trees=5)
    assert "cannot export" in texts(at.warning)
    assert downloads(at) == ["Download the metrics (CSV)"]


# --- Trees --------------------------------------------------------------------------------


def test_uniform_splits_are_drawn_without_the_data():
    at = trained(**{"fletcher_islam.split_points": "uniform"})
    at.switch_page("pages/trees.py").run()
    assert "drawn from the public seed without the data" in texts(at.info)


def test_count_leaves_are_coloured_by_their_largest_noisy_count():
    at = trained()  # the default forest: laplace_counts, noisy counts in every leaf
    at.switch_page("pages/trees.py").run()
    assert "the noisy class counts every leaf releases" in texts(at.info)
    spec = chart_spec(at)
    assert "released noisy counts" in spec["layout"]["title"]["text"]
    names = {t.get("name") for t in spec["data"]}
    assert "largest noisy count 0" in names and "released label 0" not in names
    at = trained(**{"fletcher_islam.mechanism": "permute_flip"})
    at.switch_page("pages/trees.py").run()
    assert "the label every leaf releases" in texts(at.info)
    assert "released label 0" in {t.get("name") for t in chart_spec(at)["data"]}


def test_trees_page_asks_for_a_model_first():
    at = open_page("pages/trees.py")
    assert "Train a model first" in texts(at.info) and not charts(at)


def test_shallow_tree_released_and_diagnostic_views():
    at = trained()
    at.switch_page("pages/trees.py").run()
    assert "What an outsider sees" in texts(at.info)
    # Quantile split points (the default): the structure follows a noisy release too.
    assert "noisy per-class tables of the split release" in texts(at.info)
    released = chart_spec(at)
    assert "Released model" in released["layout"]["title"]["text"]
    assert {t["type"] for t in released["data"]} == {"scatter"}  # node-link diagram
    assert not at.dataframe  # no per-tree diagnostics in the released view
    at.radio(key=key("trees.view")).set_value("Data-owner diagnostics (not private)").run()
    assert not at.exception
    assert "not private (computed from the raw data)" in texts(at.warning)
    assert "NOT private" in chart_spec(at)["layout"]["title"]["text"]
    overview = at.dataframe[0].value
    assert len(overview) == 20 and {"flipped leaves", "mean gap j"} <= set(overview.columns)
    at.number_input(key=key("trees.tree")).set_value(7).run()
    assert "Tree 7" in chart_spec(at)["layout"]["title"]["text"]


def test_deep_tree_is_an_icicle_with_a_depth_limit():
    at = trained(depth_rule="fixed", fixed_depth=9)
    at.switch_page("pages/trees.py").run()
    spec = chart_spec(at)
    assert spec["data"][0]["type"] == "icicle" and "Released" in spec["layout"]["title"]["text"]
    at.slider(key=key("trees.depth")).set_value(4).run()
    assert max(int(p) for p in chart_spec(at)["data"][0]["ids"]) < 2**5
    at.radio(key=key("trees.view")).set_value("Data-owner diagnostics (not private)").run()
    spec = chart_spec(at)
    assert spec["data"][0]["type"] == "icicle" and "NOT private" in spec["layout"]["title"]["text"]
    assert not at.exception


# --- Leaves -------------------------------------------------------------------------------


def test_leaves_page_teaches_without_a_model_and_rejects_bad_counts():
    at = open_page("pages/leaves.py")
    table = at.dataframe[0].value
    assert len(table) == len(MECHANISMS) and "P(flip)" in table.columns
    assert "Train a model" in texts(at.info)
    at.text_input(key=key("leaves.counts")).set_value("5, x").run()
    assert "whole numbers" in texts(at.error) and not at.exception


def test_leaves_page_shows_cards_histograms_flips_and_a_leaf_table():
    at = trained()
    at.switch_page("pages/leaves.py").run()
    assert not at.exception
    assert [m.label for m in at.metric][:3] == [
        "Leaves in the forest",
        "Leaves with records",
        "Empty leaves",
    ]
    assert len(charts(at)) == 3
    assert "not private" in chart_spec(at, 0)["layout"]["title"]["text"]
    assert "not private" in texts(at.subheader) and "must not be published" in texts(at.warning)
    leaves = at.dataframe[1].value
    assert {"gap_j", "flipped", "released_label", "path"} <= set(leaves.columns)
    assert len(leaves) == len(at.session_state[RUN_KEY].leaf_table)
    assert "leaf_key" not in leaves.columns  # 64-bit ids stay in the download only
    assert "Download the leaf table (CSV, not private)" in downloads(at)


# --- Curves -------------------------------------------------------------------------------


def swept(**widgets) -> AppTest:
    at = open_page("pages/curves.py")
    settings = {
        "low": 0.1,
        "high": 1.0,
        "per_decade": 3,
        "trees": [10, 25],
        "folds": 2,
        "sklearn": False,
        **widgets,
    }
    for name, value in settings.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def test_curves_page_runs_a_sweep_and_shows_curves_references_and_the_candidate():
    at = swept()
    assert isinstance(at.session_state[SWEEP_KEY].summary.columns[0], str)
    spec = chart_spec(at)
    names = [t.get("name") for t in spec["data"]]
    assert "permute_flip (ε-DP)" in names and "smooth_em (NOT DP)" in names
    assert "non-private forest (NOT DP)" in names
    assert spec["layout"]["xaxis"]["type"] == "log"
    assert "be at most 73.1% sure" in texts(at.markdown)  # the ε = 1 under discussion
    candidate = at.dataframe[0].value
    assert list(candidate["guarantee"]) == ["1-DP", "1-DP", "NONE (not DP)"]
    # The trivial baseline: a labelled line on the curve and a column of the table.
    baseline = 100 * majority_mean(at.session_state[SWEEP_KEY].summary, "accuracy")
    assert f"majority class (trivial baseline): {baseline:.1f}%" in names
    assert set(candidate["majority class (trivial baseline)"]) == {f"{baseline:.1f}%"}
    assert set(candidate["one class only"]) == {"—"} and not at.warning
    assert downloads(at) == ["Download every fold (CSV)", "Download the summary (CSV)"]
    assert "ε values × 3 mechanisms × 2 tree counts" in at.session_state[SWEEP_KEY].describe()


def test_changing_the_view_does_not_rerun_the_sweep():
    at = swept()
    sweep = at.session_state[SWEEP_KEY]
    at.radio(key=key("curves.metric")).set_value("f1").run()
    assert at.session_state[SWEEP_KEY] is sweep
    assert chart_spec(at)["layout"]["yaxis"]["title"]["text"].startswith("F1")
    at.radio(key=key("curves.x")).set_value("n_estimators").run()
    assert chart_spec(at)["layout"]["xaxis"]["title"]["text"] == "number of trees"
    at.select_slider(key=key("curves.discuss")).set_value(0.2).run()
    assert "ε = 0.2: what it costs" in texts(at.subheader)
    at.multiselect(key=key("curves.shown")).set_value(["fletcher_islam/smooth_em"]).run()
    assert "No series shown carries a guarantee" in texts(at.warning)
    assert at.session_state[SWEEP_KEY] is sweep and not at.exception


def test_curves_on_a_rare_class_offer_macro_f1_and_warn_of_one_class_lines():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state[DATA_KEY] = rare_data()
    at.switch_page("pages/curves.py").run()
    settings = {"low": 0.5, "high": 1.0, "per_decade": 3, "trees": [10], "folds": 3}
    settings.update({"mechs": ["permute_flip"], "sklearn": False})
    for name, value in settings.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.radio(key=key("curves.metric")).options == ["Accuracy", "Macro F1", "ROC AUC", "F1"]
    assert "'yes', is 3.0% of the records" in texts(at.caption)
    assert "a model predicts a single class — permute_flip (ε-DP) in" in texts(at.warning)
    at.radio(key=key("curves.metric")).set_value("macro_f1").run()
    assert not at.exception
    spec = chart_spec(at)
    assert spec["layout"]["yaxis"]["title"]["text"].startswith("Macro F1")
    assert any(t.get("name", "").startswith("majority class (trivial") for t in spec["data"])
    assert "Macro F1" in at.dataframe[0].value.columns


def test_bad_sweep_settings_are_a_message():
    at = swept(mechs=[])
    assert "choose at least one mechanism" in texts(at.error)
    assert SWEEP_KEY not in at.session_state


def test_replayable_noise_is_an_opt_in_labelled_not_private_everywhere():
    at = open_page("pages/train.py")
    assert "never seeds the noise" in at.number_input(key=key("train.seed")).help
    assert not any("NOT private" in e.value for e in at.error)
    at = trained(replay=True)
    assert any("NOT private: the noise can be replayed" in e.value for e in at.error)
    run = at.session_state[RUN_KEY]
    assert run.settings.noise_seed == 0 and not run.model.ledger_.private
    assert "NOT private: the noise can be replayed" in run.model.ledger_.describe()
    assert "NOT private: the noise can be replayed" in app_train.run_caption(run)
    default = trained()
    run = default.session_state[RUN_KEY]
    assert run.settings.noise_seed is None and run.model.ledger_.private
    assert "secret noise" in app_train.run_caption(run)


def test_train_sizes_the_forest_from_a_noisy_count_never_from_the_rows():
    """The forest's tree count starts at "auto" (a declared or noisy, booked record count):
    the page previews the size from the file's rows for the owner only, says so, and the
    settings it trains hold "auto"; a number the user chose survives a rerun."""
    at = open_page("pages/train.py")
    trees = at.selectbox(key=key("train.fletcher_islam.n_estimators"))
    assert trees.value == "auto"
    shown = " ".join(c.value for c in at.caption) + " ".join(i.value for i in at.info)
    assert "About 10 trees (auto)" in shown and "Not private, for you only" in shown
    set_forest_trees(at, 40)
    at.run()
    assert at.number_input(key=key("train.fletcher_islam.n_estimators.number")).value == 40
    assert not at.exception


def test_train_trees_that_share_the_records_at_large_epsilon():
    """At ε = 10 the default (disjoint) forest's preview points to data split 'auto';
    choosing it trains ⌈ε/0.5⌉ = 20 trees in two halves of the records, which the results
    say."""
    at = open_page("pages/train.py")
    at.number_input(key=key("train.eps")).set_value(10.0).run()
    shown = " ".join(c.value for c in at.caption) + " ".join(i.value for i in at.info)
    assert "data split 'auto' grows ⌈ε/0.5⌉ trees in two halves of the records" in shown
    at.get_by_key(key("train.fletcher_islam.data_split")).set_value("auto").run()
    shown = " ".join(c.value for c in at.caption) + " ".join(i.value for i in at.info)
    assert "20 trees (auto, from ε) in two halves of the records" in shown
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    assert "20 trees" in at.session_state[RUN_KEY].describe()
    assert "20 trees · depth 5 (records) · data in two halves" in texts(at.caption)
    assert at.session_state[RUN_KEY].model.data_split_ == "shared"


def test_curves_sweeps_the_auto_data_split_with_shared_trees_from_epsilon_five():
    """'auto' among the Curves page's data splits: its points below ε = 5 are the
    disjoint forest's, from ε = 5 ⌈ε/0.5⌉ trees that share the records."""
    at = swept(
        low=2.0, high=10.0, per_decade=3, trees=["auto"], splits=["auto"], mechs=["laplace_counts"]
    )
    rows = at.session_state[SWEEP_KEY].result.results
    trees = rows[rows["series"] == "dp_forest"].groupby("epsilon")["n_estimators"].first()
    assert trees[10.0] == 20 and trees[5.0] == 10 and trees[2.0] == 10
    assert set(rows.loc[rows["series"] == "dp_forest", "data_split"]) == {"auto"}
    assert len(charts(at)) >= 1
