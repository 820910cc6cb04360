"""The home page (app.py), session isolation, and what every page relies on in dpviz:
demos, uploaded bytes (dpviz.app.support) and the session state (dpviz.app.session).

Uploads: dpviz.app.support takes bytes and raises ``ValueError`` with the message the
page shows; those functions are tested directly with bad bytes here, and the Data page
is driven with real uploads through AppTest in tests/test_pages.py
(``file_uploader(...).set_value((name, bytes, mime))`` works in Streamlit 1.67). The
browser's ``<input type=file>`` path is covered by tests/test_e2e_browser.py.
"""

import dataclasses
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import support as support
from dpviz.app.session import (
    DATA_KEY,
    DATA_PARAM,
    KEEP_PREFIX,
    RUN_KEY,
    SWEEP_KEY,
    WANTED_KEY,
    AppState,
    kept_widget_keys,
)
from dpviz.evaluation.demos import (
    DEFAULT_DEMO,
    DEMO_CSV,
    DEMO_SCHEMA,
    DEMOS,
    demo_csv_records,
    load_demo,
    round_outwards,
)
from dpviz.privacy.schema import Schema

ROOT = Path(__file__).resolve().parent.parent.parent
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


def test_upload_limit_matches_the_streamlit_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == support.UPLOAD_LIMIT_MB == 200


def test_upload_over_the_limit_is_refused_with_the_sizes(monkeypatch):
    monkeypatch.setattr(support, "UPLOAD_LIMIT_MB", 100 / 2**20)  # 100 bytes
    with pytest.raises(ValueError, match="the limit is 100 bytes"):
        support.read_uploaded_csv(DEMO_BYTES)


def test_prepared_data_fingerprint_follows_records_and_schema():
    frame = support.read_uploaded_csv(DEMO_BYTES)
    a = support.prepare_upload(frame, "label")
    b = support.prepare_upload(frame.copy(), "label")
    assert a.fingerprint == b.fingerprint and a.frame_id == support.frame_id(frame)
    public = support.prepare_upload(frame, "label", Schema.load(DEMO_SCHEMA))
    assert public.fingerprint != a.fingerprint  # same records, other schema
    changed = frame.copy()
    changed.loc[0, "x0"] = "0.5"
    assert support.prepare_upload(changed, "label").fingerprint != a.fingerprint
    demo = support.prepare_demo("demo_csv")
    assert demo.frame_id == "demo:demo_csv" and demo.source == "demo" and demo.schema_public


# --- session state, without streamlit -----------------------------------------------------


class Described:
    def __init__(self, text):
        self.text = text

    def describe(self):
        return self.text


def test_app_state_drops_model_and_sweep_when_the_dataset_changes():
    store = {}
    state = AppState(store)
    assert state.data is None and state.run is None and "none yet" in state.summary()[0]
    demo = support.prepare_demo("demo_csv")
    assert state.set_data(demo) == []
    state.set_run(Described("model line"))
    state.set_sweep(Described("sweep line"))
    assert state.set_data(support.prepare_demo("demo_csv")) == []  # same data: kept
    lines = state.summary()
    assert "demo.csv" in lines[0] and lines[1] == "Schema: public"
    assert "model line" in lines[2] and "sweep line" in lines[3]
    frame = support.read_uploaded_csv(DEMO_BYTES)
    dropped = state.set_data(support.prepare_upload(frame, "label"))
    assert dropped == ["the trained model", "the sweep results"]
    assert RUN_KEY not in store and SWEEP_KEY not in store and store[DATA_KEY] is state.data
    assert "no privacy guarantee" in state.summary()[1]


def test_a_page_opened_before_app_py_asks_for_the_frame_once():
    store = {}
    state = AppState(store)
    assert state.needs_frame("pages/train.py")  # no frame yet: remember the page
    assert state.mark_frame() == "pages/train.py"  # app.py runs, then opens it
    assert state.mark_frame() is None
    assert not state.needs_frame("pages/data.py") and WANTED_KEY not in store


def test_kept_widget_keys_are_only_the_prefixed_ones():
    store = {f"{KEEP_PREFIX}a": 1, "data.csv": None, 3: "x", f"{KEEP_PREFIX}b.c": 2}
    assert kept_widget_keys(store) == [f"{KEEP_PREFIX}a", f"{KEEP_PREFIX}b.c"]


# --- the home page and session isolation, through AppTest ---------------------------------


def run_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def test_home_page_explains_links_the_three_uses_and_starts_on_the_demo():
    at = run_app()
    assert at.title[0].value == "What does privacy cost a random forest?"
    links = {link.proto.page: link.proto.label for link in at.get("page_link")}
    assert any(p.endswith("data") for p in links) and any(p.endswith("curves") for p in links)
    assert any(p.endswith("leaves") for p in links)
    sidebar = texts(at.sidebar.caption)
    assert "demo.csv (SynthA, 2,000 rows)" in sidebar and "Schema: public" in sidebar
    assert "not trained yet" in sidebar
    assert isinstance(at.session_state[DATA_KEY], support.PreparedData)
    assert not at.error and not at.warning


def test_two_sessions_never_see_each_others_data():
    secret = "secret_feature"
    csv = DEMO_BYTES.replace(b"x0", secret.encode(), 1)
    alice = run_app()
    alice.switch_page("pages/data.py").run()
    alice.radio(key=f"{KEEP_PREFIX}data.source").set_value("My own CSV file").run()
    alice.file_uploader(key="data.csv").set_value(("alice.csv", csv, "text/csv")).run()
    assert not alice.exception and alice.session_state[DATA_KEY].name == "alice.csv"
    alice.switch_page("pages/train.py").run()
    trees = f"{KEEP_PREFIX}train.fletcher_islam.n_estimators"
    alice.selectbox(key=trees).set_value("a number").run()
    alice.number_input(key=f"{trees}.number").set_value(10).run()
    alice.button(key="train.button").click().run()
    assert not alice.exception and alice.session_state[RUN_KEY] is not None

    bob = run_app()
    for page in ("pages/data.py", "pages/train.py", "pages/trees.py", "pages/curves.py"):
        bob.switch_page(page).run()
        assert not bob.exception
        shown = "\n".join(
            texts(getattr(bob, kind)) for kind in ("markdown", "caption", "info", "warning")
        )
        assert "alice" not in shown and secret not in shown
    assert bob.session_state[DATA_KEY].name.startswith("demo.csv")
    assert RUN_KEY not in bob.session_state
    # Alice still has her upload and model after Bob's visit.
    alice.switch_page("pages/data.py").run()
    assert alice.session_state[DATA_KEY].name == "alice.csv"
    assert secret in alice.session_state[DATA_KEY].schema.feature_names


def test_a_new_session_whose_address_held_an_upload_says_the_upload_was_lost():
    """A server restart gives the browser a new session: the address's ?data=upload is
    all that is left, and the app says the file is gone instead of silently showing the
    demo. A fresh session without it says nothing and marks the address "demo"."""
    fresh = run_app()
    assert "Your uploaded file is gone" not in texts(fresh.warning)
    assert fresh.query_params.get(DATA_PARAM) == "demo"

    restarted = AppTest.from_file(APP, default_timeout=TIMEOUT)
    restarted.query_params[DATA_PARAM] = "upload"
    restarted.run()
    assert not restarted.exception
    assert "Your uploaded file is gone" in texts(restarted.warning)
    assert restarted.session_state[DATA_KEY].source == "demo"


def test_the_lost_upload_notice_lasts_until_data_is_chosen_again():
    state = AppState({})
    demo = support.prepare_demo(DEFAULT_DEMO)
    state.start(demo, "upload")
    assert state.lost_upload and state.data_param == "demo"
    state.set_data(demo)  # the same demo again: still lost
    assert state.lost_upload
    upload = dataclasses.replace(demo, name="mine.csv", frame_id="upload:1", source="upload")
    state.set_data(upload)
    assert state.lost_upload is None and state.data_param == "upload"
    fresh = AppState({})
    fresh.start(demo, None)
    assert fresh.lost_upload is None
