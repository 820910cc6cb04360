"""The home page (app.py) and what it calls in dpviz: demos and dpviz.app_support.

How uploads are tested. The upload handling is factored into dpviz.app_support
(``read_uploaded_csv``, ``read_uploaded_schema``, ``prepare_upload``), which takes bytes
and raises ``ValueError`` with the message the page shows; those functions are tested
directly with bad bytes below. The page itself is driven through Streamlit's AppTest,
which (in the installed Streamlit 1.67) can upload files:
``at.sidebar.file_uploader(key="csv").set_value((name, bytes, mime))``. So the
upload → error / warning → train path also runs in-process, without a browser, and no
session-state shortcut is needed; with an older Streamlit whose AppTest cannot upload,
those page tests skip and say so. The real browser upload through ``<input type=file>``
is covered by tests/test_e2e_browser.py.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz import app_support as support
from dpviz.demos import (
    DEFAULT_DEMO,
    DEMO_CSV,
    DEMO_SCHEMA,
    DEMOS,
    demo_csv_records,
    load_demo,
    round_outwards,
)
from dpviz.schema import Schema

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
TIMEOUT = 60
DEMO_BYTES = DEMO_CSV.read_bytes()
SCHEMA_BYTES = DEMO_SCHEMA.read_bytes()


# --- bundled demos ----------------------------------------------------------------------


def test_demo_csv_is_small_and_regenerates_byte_for_byte():
    assert DEMO_CSV.stat().st_size < 200 * 1024
    frame, schema = demo_csv_records()
    assert frame.to_csv(index=False, lineterminator="\n").encode() == DEMO_BYTES
    assert Schema.load(DEMO_SCHEMA) == schema
    assert len(frame) == 2000 and list(frame.columns) == ["x0", "x1", "x2", "x3", "x4", "label"]


@pytest.mark.parametrize("demo_id", list(DEMOS))
def test_every_demo_loads_with_a_public_schema_that_covers_its_records(demo_id):
    frame, schema = load_demo(demo_id)
    demo = DEMOS[demo_id]
    assert not schema.inferred and len(demo.schema_public_because) > 40
    assert set(schema.feature_names) | {schema.label} == set(frame.columns)
    assert set(frame[schema.label].astype(str)) == set(schema.classes)
    for feature in schema.continuous:
        values = pd.to_numeric(frame[feature.name]).to_numpy()
        assert feature.low <= values.min() and values.max() <= feature.high, feature.name
    if demo_id.startswith("Synth"):
        assert len(frame) == 30_000


def test_breast_cancer_demo_labels_and_outward_rounded_domains():
    frame, schema = load_demo("breast_cancer")
    assert schema.label == "diagnosis" and set(schema.classes) == {"malignant", "benign"}
    assert (frame["diagnosis"] == "malignant").sum() == 212
    radius = next(f for f in schema.features if f.name == "mean radius")
    assert (radius.low, radius.high) == (6.0, 29.0)  # data range 6.981 – 28.11
    assert round_outwards(0.05263, 0.1634) == (0.05, 0.17)
    assert round_outwards(0.0, 0.4268) == (0.0, 0.43)


def test_unknown_demo_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown demo"):
        load_demo("nope")
    assert DEFAULT_DEMO == "demo_csv"


# --- upload handling, without streamlit -------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02 binary\n", "binary"),
        (b"a,label\n\xff\xfe,1\n", "not UTF-8"),
        (b"justonecolumn\n1\n2\n", "only one column"),
        (b"a,label\n", "no data rows"),
        (b"a,a\n1,2\n", "twice"),
    ],
)
def test_bad_csv_bytes_raise_a_message_for_the_user(data, message):
    with pytest.raises(ValueError, match=message):
        support.read_uploaded_csv(data)


def test_good_csv_bytes_become_text_columns():
    frame = support.read_uploaded_csv(DEMO_BYTES)
    assert frame.shape == (2000, 6) and frame["label"].isin(["0", "1"]).all()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b'{"label": "y"}', "no 'classes'"),
        (b"[1, 2]", "JSON object"),
    ],
)
def test_bad_schema_bytes_raise_a_message_for_the_user(data, message):
    with pytest.raises(ValueError, match=message):
        support.read_uploaded_schema(data)


def test_prepare_upload_infers_loudly_or_uses_the_uploaded_schema():
    frame = support.read_uploaded_csv(DEMO_BYTES)
    inferred = support.prepare_upload(frame, "label")
    assert inferred.schema.inferred and not inferred.schema_public
    assert inferred.schema_note == support.INFERRED_SCHEMA_WARNING
    assert "VOID" in inferred.schema_note and "inferred from the uploaded records" in (
        inferred.schema_note
    )
    given = support.prepare_upload(frame, "label", support.read_uploaded_schema(SCHEMA_BYTES))
    assert given.schema_public and given.schema == Schema.load(DEMO_SCHEMA)
    with pytest.raises(ValueError, match="names 'label' as the label"):
        support.prepare_upload(frame, "x0", given.schema)
    with pytest.raises(ValueError, match="not in the file"):
        support.prepare_upload(frame, "nope")
    with pytest.raises(ValueError, match="lacks the schema's columns"):
        support.prepare_upload(frame.drop(columns="x3"), "label", given.schema)


def test_guess_label():
    assert support.guess_label(["a", "b", "Class"]) == "Class"
    assert support.guess_label(["a", "b", "c"]) == "c"
    assert support.guess_label(["label", "x"]) == "label"


def test_train_and_evaluate_returns_metrics_ledger_and_figures():
    steps = []
    run = support.train_and_evaluate(
        support.prepare_demo("demo_csv"),
        mechanism="permute_flip",
        epsilon=1.0,
        n_estimators=20,
        folds=3,
        progress=steps.append,
    )
    assert len(steps) == 3 and run.private and run.schema_public
    assert run.reference["mechanism"] == "none" and run.result["mechanism"] == "permute_flip"
    value, delta = run.metric("accuracy")
    assert value.endswith(f"± {100 * run.result['accuracy']['std']:.1f}")
    assert delta.endswith("pts vs no privacy")
    assert "1-differentially private" in run.privacy_summary
    assert len(run.accuracy_figure.data) == 2 and run.flip_figure.data
    assert run.leaf_epsilon == 1.0 and run.n_leaves > 0
    assert set(run.diagnostics()) >= {"Empty leaves", "Flipped leaves"}
    run.result["empty_leaf_pct"] = 99.99871
    assert run.diagnostics()["Empty leaves"] == "99.9987%"


def test_training_on_an_inferred_schema_reports_no_guarantee():
    frame = support.read_uploaded_csv(DEMO_BYTES)
    run = support.train_and_evaluate(
        support.prepare_upload(frame, "label"),
        mechanism="permute_flip",
        epsilon=1.0,
        n_estimators=10,
        folds=2,
    )
    assert not run.private and "NO privacy guarantee" in run.privacy_summary


def test_three_classes_and_a_discrete_feature_work():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 300),
            "size": rng.normal(size=300).round(3).astype(str),
            "kind": rng.choice(["a", "b", "c"], 300),
        }
    )
    data = support.prepare_upload(frame, "kind")
    run = support.train_and_evaluate(data, mechanism="count_em", epsilon=2.0, n_estimators=5)
    assert 0 <= run.result["accuracy"]["mean"] <= 1 and len(run.flip_figure.data) >= 5


# --- the page, through AppTest ----------------------------------------------------------


def upload(at: AppTest, key: str, name: str, data: bytes, mime: str) -> None:
    uploader = at.sidebar.file_uploader(key=key)
    if not hasattr(uploader, "set_value"):
        pytest.skip("this Streamlit's AppTest cannot upload files (added in later versions)")
    uploader.set_value((name, data, mime))
    at.run()


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def charts(at: AppTest):
    return at.get("plotly_chart")


def test_default_run_uses_the_demo_csv_and_has_no_exception():
    at = run_app()
    assert at.sidebar.radio(key="source").value == "Bundled demo dataset"
    assert at.sidebar.selectbox(key="demo").value == "demo_csv"
    assert "Public schema" in texts(at.info)
    assert not at.warning and not at.error
    assert at.sidebar.number_input(key="folds").value == 3
    options = at.sidebar.selectbox(key="mechanism").options
    assert "permute_flip  [ε-DP]" in options and "smooth_em  [NOT DP]" in options
    assert not charts(at) and not at.metric


def test_train_shows_metrics_ledger_charts_and_private_diagnostics():
    at = run_app()
    at.sidebar.number_input(key="epsilon").set_value(0.5)
    at.sidebar.number_input(key="trees").set_value(30)
    at.sidebar.button(key="train").click().run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert labels[:3] == ["Accuracy", "ROC AUC", "F1"]
    for card in at.metric[:3]:
        assert "% ± " in card.value and card.delta.endswith("pts vs no privacy")
    assert len(charts(at)) == 2
    assert "0.5-differentially private" in texts(at.success)
    assert "ε = 0.5 · 30 trees" in texts(at.caption)
    assert any("not private (computed from the raw data)" in h.value for h in at.subheader)
    # the result survives a rerun (stored in session state)
    at.run()
    assert len(charts(at)) == 2 and isinstance(at.session_state["home_run"], support.HomeRun)


def test_not_dp_mechanism_is_marked_in_the_sidebar_ledger_and_chart():
    at = run_app()
    at.sidebar.selectbox(key="mechanism").set_value("smooth_em").run()
    assert "NOT DP" in texts(at.sidebar.error)
    at.sidebar.number_input(key="trees").set_value(20)
    at.sidebar.button(key="train").click().run()
    assert not at.exception
    assert "NO privacy guarantee" in texts(at.error)
    assert "smooth_em forest, ε = 1 (NOT DP)" in charts(at)[0].proto.spec


def test_bad_upload_shows_an_error_and_the_app_keeps_working():
    at = run_app()
    at.sidebar.radio(key="source").set_value("Upload a CSV").run()
    assert "Upload a CSV in the sidebar" in texts(at.info)
    assert at.sidebar.button(key="train").disabled
    upload(at, "csv", "bad.csv", b"\x00\x01binary", "text/csv")
    assert not at.exception
    assert "Could not read bad.csv" in texts(at.error) and "binary" in texts(at.error)
    at.sidebar.radio(key="source").set_value("Bundled demo dataset").run()
    assert not at.exception and not at.error
    at.sidebar.number_input(key="trees").set_value(10)
    at.sidebar.button(key="train").click().run()
    assert len(charts(at)) == 2


def test_upload_without_schema_warns_that_the_guarantee_is_void():
    at = run_app()
    at.sidebar.radio(key="source").set_value("Upload a CSV").run()
    upload(at, "csv", "demo.csv", DEMO_BYTES, "text/csv")
    assert not at.exception
    assert at.sidebar.selectbox(key="label").value == "label"
    warning = texts(at.warning)
    assert "VOID" in warning and "inferred from the uploaded records" in warning
    at.sidebar.number_input(key="trees").set_value(10)
    at.sidebar.button(key="train").click().run()
    assert "NO privacy guarantee" in texts(at.error) and len(charts(at)) == 2


def test_upload_with_schema_is_public_and_a_bad_schema_is_an_error():
    at = run_app()
    at.sidebar.radio(key="source").set_value("Upload a CSV").run()
    upload(at, "csv", "demo.csv", DEMO_BYTES, "text/csv")
    upload(at, "schema", "s.json", b"{oops", "application/json")
    assert not at.exception and "not valid JSON" in texts(at.error)
    upload(at, "schema", "s.json", SCHEMA_BYTES, "application/json")
    assert not at.exception and not at.warning and not at.error
    assert "the schema file you uploaded" in texts(at.info)
    at.sidebar.number_input(key="trees").set_value(10)
    at.sidebar.button(key="train").click().run()
    assert "1-differentially private" in texts(at.success)
