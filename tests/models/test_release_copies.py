"""A fitted model is one release (SPEC §1): every copy, pickle and exported file of it
answers identically, leaves no training record reached included, and its ``classes_``
and output dtypes come from the schema, never from which classes the labels hold.

Every model here draws fresh secret noise (no ``noise_seed``): a copy that drew any leaf
again would disagree with the original wherever that leaf decides, which exact equality
catches."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier, PrivateRDTClassifier
from dpviz.models.files.load import model_from_json, release
from dpviz.models.forest.release import leaf_space
from dpviz.models.registry import ALGORITHMS
from dpviz.models.trees.full import build_full, leaf_space_keys
from dpviz.models.trees.space import export_node_limit
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.conftest import MIXED_SCHEMA, mixed_records


def _training() -> tuple[pd.DataFrame, pd.Series]:
    """Records in one corner of the domain only (size < 4, never blue), so that most
    leaves, and every probe outside that corner, were reached by no training record."""
    records = mixed_records(0, 600)
    records = records[(records["size"] < 4) & (records["colour"] != "blue")]
    return records.drop(columns="label"), records["label"]


def _probes() -> pd.DataFrame:
    """Inputs over the whole public domain: mostly where no training record went."""
    return mixed_records(1, 2_000).drop(columns="label")


def _copies(model) -> list:
    """A pickle and a deep copy taken before the model has predicted anything."""
    return [pickle.loads(pickle.dumps(model)), copy.deepcopy(model)]


def _assert_untrained_leaves(model) -> None:
    """The forest has leaves no training record reached (else the test proves little)."""
    diagnostics = model.diagnostics_
    assert diagnostics["n_leaves_total_exact"]
    assert diagnostics["n_leaves_total"] > diagnostics["n_leaves_nonempty"]


def _assert_same_answers(model, copies, probes: pd.DataFrame) -> None:
    proba = model.predict_proba(probes)
    for other in copies:
        np.testing.assert_array_equal(other.predict_proba(probes), proba)
    # Asked again, the original (and so every copy) answers as before.
    np.testing.assert_array_equal(model.predict_proba(probes), proba)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_copies_taken_before_any_prediction_answer_identically(name):
    X, y = _training()
    model = ALGORITHMS[name].make(1.0, random_state=0, schema=MIXED_SCHEMA).fit(X, y)
    copies = _copies(model)
    if ALGORITHMS[name].forest_family:
        _assert_untrained_leaves(model)
    probes = _probes()
    _assert_same_answers(model, copies, probes)
    # The exported file lists every leaf: it answers as the model (same sums, possibly
    # in another order, hence a relative tolerance of 1e-12 rather than equality).
    loaded = model_from_json(release(model).to_json())
    np.testing.assert_allclose(loaded.predict_proba(probes), model.predict_proba(probes), 1e-12)


@pytest.mark.parametrize("cls", [DPRandomForestClassifier, PrivateRDTClassifier])
def test_copies_after_a_relabel_answer_identically(cls):
    X, y = _training()
    model = cls(schema=MIXED_SCHEMA, random_state=0).fit(X, y)
    model.relabel(epsilon=0.5)
    _assert_untrained_leaves(model)
    _assert_same_answers(model, _copies(model), _probes())


def test_a_sweeps_alternative_release_is_whole_before_it_is_read():
    # release_instead draws untrained leaves as a sweep reaches them; a copy or a
    # prediction first draws the rest, so copies still answer identically.
    X, y = _training()
    model = DPRandomForestClassifier(schema=MIXED_SCHEMA, random_state=0).fit(X, y)
    model.release_instead(0.5)
    model.votes(model.route_records(encode(mixed_records(4, 20), MIXED_SCHEMA)))
    _assert_untrained_leaves(model)
    _assert_same_answers(model, _copies(model), _probes())


def test_copies_after_an_update_answer_identically():
    X, y = _training()
    model = PrivateRDTClassifier(schema=MIXED_SCHEMA, depth=4, random_state=0).fit(X, y)
    batch = mixed_records(2, 300)
    batch = batch[batch["size"] > 6]  # reaches leaves the first batch never reached
    model.partial_fit(batch.drop(columns="label"), batch["label"])
    assert model.n_batches_ == 2
    _assert_untrained_leaves(model)
    _assert_same_answers(model, _copies(model), _probes())


def test_trees_beyond_an_export_refuse_to_be_copied():
    # 10 continuous trees of depth 18 hold 10 · (2^19 − 1) ≈ 5.2M nodes, more than an
    # export lists: their untrained leaves are drawn on first use, so a copy would answer
    # differently where no record went. Copying is refused, naming the fix.
    schema = Schema("y", ("0", "1"), (Feature("a", "continuous", 0.0, 1.0),))
    X = np.linspace(0.0, 0.3, 200).reshape(-1, 1)
    y = (X[:, 0] > 0.15).astype(int)
    model = DPRandomForestClassifier(
        n_estimators=10, depth=18, schema=schema, random_state=0, split_points="uniform"
    ).fit(X, y)
    assert 10 * (2**19 - 1) > export_node_limit(model.space_)
    for copier in (pickle.dumps, copy.deepcopy):
        with pytest.raises(ValueError, match="smaller depth"):
            copier(model)
    # The model itself stays one release: asked twice, it answers the same.
    probes = np.linspace(0.0, 1.0, 500).reshape(-1, 1)
    np.testing.assert_array_equal(model.predict_proba(probes), model.predict_proba(probes))


SIZE_ONLY = Schema("label", MIXED_SCHEMA.classes, MIXED_SCHEMA.features[:1])


@pytest.mark.parametrize("schema", [MIXED_SCHEMA, SIZE_ONLY])
def test_leaf_space_is_every_leaf_an_export_lists(schema):
    X, y = _training()
    model = DPRandomForestClassifier(n_estimators=5, depth=4, schema=schema, random_state=0)
    model.fit(X[list(schema.feature_names)], y)
    full = build_full(model.space_, model.root_keys_, 10**6)
    expected = np.sort(full.key[full.feature < 0])
    np.testing.assert_array_equal(leaf_space_keys(model.space_, model.root_keys_, 10**6), expected)
    # What the model drew from (the trees its fit built for routing, where it kept them).
    np.testing.assert_array_equal(leaf_space(model), expected)
    # One node fewer than the trees hold: too many to draw at fit time.
    assert leaf_space_keys(model.space_, model.root_keys_, len(full.key) - 1) is None


# --- classes_ and output dtypes from the schema -------------------------------------------

NUMBERED = Schema(
    "label",
    ("0", "1", "2"),
    (
        Feature("size", "continuous", 0.0, 10.0),
        Feature("colour", "discrete", values=("blue", "green", "red")),
    ),
)


def _numbered(with_class_2: bool) -> tuple[pd.DataFrame, np.ndarray]:
    """D: labels 0 and 1 only (integers); D′: D plus one record of class 2."""
    records = mixed_records(3, 300)[["size", "colour"]]
    y = (records["size"] > 5).to_numpy(dtype=np.int64)
    if with_class_2:
        records = pd.concat([records, records.iloc[:1]], ignore_index=True)
        y = np.append(y, 2)
    return records, y


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_classes_and_dtypes_do_not_show_which_classes_occur(name):
    seen = []
    for with_class_2 in (False, True):
        X, y = _numbered(with_class_2)
        model = ALGORITHMS[name].make(1.0, random_state=0, schema=NUMBERED).fit(X, y)
        loaded = model_from_json(release(model).to_json())
        for answer in (model, loaded):
            seen.append((answer.classes_, answer.predict(X.iloc[:50]).dtype))
    classes, dtype = seen[0]
    # The public schema's class texts, although the labels were integers.
    np.testing.assert_array_equal(classes, ["0", "1", "2"])
    assert classes.dtype == object
    for other_classes, other_dtype in seen[1:]:
        np.testing.assert_array_equal(other_classes, classes)
        assert other_classes.dtype == classes.dtype
        assert other_dtype == dtype
