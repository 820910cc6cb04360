"""One training encoding per dataset: the Data page's report makes it, the pages reuse it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpviz.app import curves as app_curves
from dpviz.app import data as app_data
from dpviz.app import support
from dpviz.app.session import AppState
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import encode

CSV = b"x,colour,kind\n" + b"".join(
    f"{i % 7 / 2},{('red', 'blue')[i % 2]},{'ab'[(i // 3) % 2]}\n".encode() for i in range(60)
)


@pytest.fixture
def upload_data() -> support.PreparedData:
    frame = support.read_uploaded_csv(CSV)  # text cells, as the Data page reads a file
    return support.prepare_upload(frame, "kind")


def _counting(monkeypatch) -> list:
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return encode(*args, **kwargs)

    monkeypatch.setattr(support, "encode", counted)
    return calls


def test_training_records_equal_a_fresh_encoding_and_are_read_only(upload_data):
    kept = upload_data.training_records()
    fresh = encode(upload_data.frame, upload_data.schema, training=True)
    for a, b in ((kept.continuous, fresh.continuous), (kept.discrete, fresh.discrete)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(kept.y, fresh.y)
    assert upload_data.training_records() is kept
    # Shared by every page: a consumer that wrote into it would change the others' data.
    with pytest.raises(ValueError, match="read-only"):
        kept.continuous[0, 0] = 1.0


def test_the_data_report_encodes_once_for_the_sweep_after_it(upload_data, monkeypatch):
    calls = _counting(monkeypatch)
    report = app_data.data_report(upload_data)
    assert report.rows_used == 60 and report.error is None
    settings = app_curves.SweepSettings(eps_low=1.0, eps_high=1.0, folds=2)
    app_curves.run(upload_data, settings)
    assert len(calls) == 1


def test_a_new_object_for_the_same_dataset_keeps_the_encoding(upload_data, monkeypatch):
    state = AppState({})
    state.set_data(upload_data)
    kept = upload_data.training_records()
    again = dataclasses.replace(upload_data, schema_note="the newest note")
    state.set_data(again)  # what the Data page does on each of its runs
    calls = _counting(monkeypatch)
    assert state.data.training_records() is kept and not calls
    # Another schema describes other records: encoded afresh.
    other = support.prepare_upload(upload_data.frame.drop(columns="colour"), "kind")
    state.set_data(other)
    assert state.data.training_records() is not kept and len(calls) == 1


def test_a_dataset_with_no_usable_row_raises_each_time(monkeypatch):
    frame = support.read_uploaded_csv(b"x,kind\n1,\n2,\n")  # no row has a label
    schema = Schema.from_dict(
        {
            "label": "kind",
            "classes": ["a", "b"],
            "features": [{"name": "x", "type": "continuous", "min": 0, "max": 5}],
        }
    )
    data = support.PreparedData("t.csv", frame, schema, "")
    calls = _counting(monkeypatch)
    for _ in range(2):
        with pytest.raises(ValueError, match="no usable rows"):
            data.training_records()
    assert len(calls) == 2
