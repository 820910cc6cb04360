"""The default fit's fast paths give what the paths they replace give: the floor
check's records routed when a release first runs the check, and the schema of an
integer-labelled float array inferred from its column ranges."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels
from dpviz.models.forest.splits import TableLayout, class_tables
from dpviz.privacy.schema import Feature, PrivacyLeakWarning, Schema
from dpviz.tabular.encode import _column_ranges, encode, encode_array
from dpviz.tabular.inputs import resolve_schema

pytestmark = pytest.mark.filterwarnings("ignore::dpviz.privacy.schema.PrivacyLeakWarning")


def _data(n: int = 1_500, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.clip(rng.standard_normal((n, 4)), -5, 5)
    y = (X[:, 0] + 0.5 * rng.standard_normal(n) > 0.3).astype(int)
    return X, y


def _fit(epsilon: float, mechanism: str = "laplace_counts") -> DPRandomForestClassifier:
    X, y = _data()
    # A declared count: the structure is the same at every ε of the split rung (ε ≥ 1).
    model = DPRandomForestClassifier(
        epsilon, random_state=1, noise_seed=2, declared_n=1_500, mechanism=mechanism
    )
    return model.fit(X, y)


def test_the_check_routes_its_records_when_a_release_first_runs_it():
    # The true majority (no privacy) runs no check: same trees, no routing yet.
    below, at_three = _fit(1.0, "none"), _fit(3.0)
    assert below._check_routes._routes is None
    assert at_three._check_routes._routes is not None and at_three.floor_check_ is not None
    below.release_instead(3.0, "laplace_counts")
    assert below._check_routes._checked is None  # routed: the records are dropped
    assert below.floor_check_ == at_three.floor_check_
    assert below.floor_trusted_ == at_three.floor_trusted_
    np.testing.assert_array_equal(
        below.predict_proba(_data()[0]), at_three.predict_proba(_data()[0])
    )


def test_a_copy_holds_the_check_routing_never_the_records():
    model = _fit(1.0)
    copy = pickle.loads(pickle.dumps(model))
    assert copy._check_routes._checked is None and copy._check_routes._routes is not None
    routed, y = copy._check_routes.routes(copy)
    expected, expected_y = model._check_routes.routes(model)  # routed by the dump
    np.testing.assert_array_equal(routed.pair_leaf, expected.pair_leaf)
    np.testing.assert_array_equal(routed.pair_record, expected.pair_record)
    np.testing.assert_array_equal(y, expected_y)
    assert copy.release_instead(4.0).floor_check_ == model.release_instead(4.0).floor_check_


@pytest.mark.parametrize(
    "X, y",
    [
        (np.random.default_rng(1).normal(size=(400, 3)), np.arange(400) % 3),
        (np.round(np.random.default_rng(2).normal(size=(300, 2)) * 3), np.arange(300) % 12),
        (np.ones((40, 2)), np.array([7, -5] * 20, dtype=np.int8)),
        (np.zeros((40, 1)), np.array([3, 250] * 20, dtype=np.uint8)),
    ],
)
def test_an_integer_labelled_array_infers_the_frames_schema(X, y):
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        from_frame = resolve_schema(None, frame, y)
        fast = resolve_schema(None, frame, y, _column_ranges(X))
    assert isinstance(fast, Schema) and fast.inferred
    assert fast.to_dict() == from_frame.to_dict()


def test_an_integer_labelled_array_warns_and_refuses_one_class():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        DPRandomForestClassifier(random_state=0).fit(X, np.arange(30) % 2)
    with pytest.raises(ValueError, match="only one class"):
        DPRandomForestClassifier(random_state=0).fit(X, np.zeros(30, dtype=int))


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
def test_small_tables_and_ranges_take_the_loaded_kernels_with_numpys_numbers(monkeypatch):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2_000, 5)).clip(-3, 3)
    y = rng.integers(0, 3, 2_000)
    lows, highs = np.full(5, -3.0), np.full(5, 3.0)
    layout = TableLayout(5, ())
    compiled = class_tables(X, np.empty((2_000, 0), np.int32), y, lows, highs, layout, 3)
    ranges = _column_ranges(X)
    frozen = X.copy()
    frozen.flags.writeable = False  # typed out of the kernel: numpy's path
    frozen_ranges = _column_ranges(frozen)
    monkeypatch.setattr(kernels, "loaded", lambda: None)  # numpy throughout
    numpy_tables = class_tables(X, np.empty((2_000, 0), np.int32), y, lows, highs, layout, 3)
    np.testing.assert_array_equal(compiled, numpy_tables)
    for ours in (ranges, frozen_ranges):
        np.testing.assert_array_equal(ours[0], X.min(axis=0))
        np.testing.assert_array_equal(ours[1], X.max(axis=0))


@pytest.mark.parametrize(
    "labels",
    [["no", "yes", "nan"], ["no", "yes", "NaN"], ["no", "yes", ""], ["no", "maybe", "yes"]],
)
def test_text_labels_of_an_array_encode_as_the_frames(labels):
    """Every label a class: one comparison per class; else pandas' path counts the
    missing ("", "NaN" unless a class) and unknown labels. The same records and report."""
    schema = Schema("label", ("no", "yes", "nan"), (Feature("a", "continuous", 0.0, 1.0),))
    X = np.random.default_rng(0).random((9, 1))
    y = np.array(labels * 3)
    fast = encode_array(X, y, schema)
    frame = encode(pd.DataFrame({"a": X[:, 0], "label": y.astype(object)}), schema)
    np.testing.assert_array_equal(fast.y, frame.y)
    np.testing.assert_array_equal(fast.continuous, frame.continuous)
    assert fast.report == frame.report
