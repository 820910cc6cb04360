"""Issue 15's fast paths give exactly what the paths they replace gave.

Column ranges folded row-major, integer labels by lookup table, the chunked record
hash, the compact router keeping every leaf, and the one descent kernel for the full
and the compact matrix.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels
from dpviz.models.forest import estimator as forest_module
from dpviz.models.forest.release import reset_empty_outputs
from dpviz.models.trees import compact
from dpviz.models.trees import votes as tree_votes
from dpviz.privacy.randomness import hash_columns
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import EncodingReport, _column_ranges, _integer_labels, _labels, encode


@pytest.mark.parametrize("n", [0, 1, 255, 256, 1000, 4097, 400_001])  # the last: compiled
@pytest.mark.parametrize("order", ["C", "F"])
def test_column_ranges_equal_numpy(n, order):
    kernels.get(wait=True)  # loaded: large arrays take the compiled pass
    rng = np.random.default_rng(n)
    X = np.array(rng.normal(size=(n, 3)), order=order)
    if n > 300:
        X[300, 1] = np.nan  # a missing value shows as NaN, as in X.min(axis=0)
    low, high = _column_ranges(X)
    if n == 0:
        assert np.isinf(low).all() and np.isinf(high).all()
        return
    np.testing.assert_array_equal(low, X.min(axis=0))
    np.testing.assert_array_equal(high, X.max(axis=0))


@pytest.mark.parametrize(
    "classes, y",
    [
        (("0", "1"), np.array([0, 1, 1, 0, 1])),
        (("1", "3", "7"), np.array([7, 3, 3, 1, 9, -2], dtype=np.int16)),  # 9, -2 unknown
        (("03", "3.0", "3"), np.array([3, 3, 4], dtype=np.uint8)),  # only "3" is 3's text
        (("a", "2"), np.array([2, 2, 5])),
        (("-100", "100"), np.array([-100, 100, 0], dtype=np.int8)),  # range over int8's
    ],
)
def test_integer_labels_equal_the_general_path(classes, y):
    schema = Schema("label", classes, (Feature("x", "continuous", low=0.0, high=1.0),))
    fast_report, slow_report = EncodingReport(rows_in=len(y)), EncodingReport(rows_in=len(y))
    fast_keep, slow_keep = np.ones(len(y), bool), np.ones(len(y), bool)
    fast = _integer_labels(y, schema, fast_report, fast_keep)
    slow = _labels(pd.Series(y), schema, slow_report, slow_keep)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(fast_keep, slow_keep)
    assert (fast_report.missing_label, fast_report.unknown_label) == (
        slow_report.missing_label,
        slow_report.unknown_label,
    )


def test_integer_labels_decline_what_they_do_not_cover():
    schema = Schema("label", ("0", "1"), (Feature("x", "continuous", low=0.0, high=1.0),))
    report, keep = EncodingReport(rows_in=2), np.ones(2, bool)
    assert _integer_labels(np.array([0.0, 1.0]), schema, report, keep) is None
    assert _integer_labels(np.array([True, False]), schema, report, keep) is None
    assert _integer_labels(np.array([0, 2**40]), schema, report, keep) is None


def test_fit_rejects_a_regression_target_as_before():
    X = np.random.default_rng(0).random((20, 2))
    with pytest.raises(ValueError, match="Unknown label type"):
        DPRandomForestClassifier(n_estimators=2, random_state=0).fit(X, X[:, 0])


@pytest.mark.parametrize("path", ["compiled", "numpy"])
def test_record_hash_in_one_pass_or_chunks_equals_the_column_hash(monkeypatch, path):
    """hash_trees: the compiled kernel (rows, one pass) and numpy (chunks of 32,768
    records) give hash_columns' trees of the feature columns exactly, unknown (-1)
    discrete codes included; the label is not hashed."""
    if path == "compiled" and kernels.get(wait=True) is None:
        pytest.skip("numba is not installed")
    if path == "numpy":
        monkeypatch.setattr(kernels, "_kernels", None)
        monkeypatch.setattr(kernels, "_failed", True)
    rng = np.random.default_rng(0)
    n = 70_000  # three chunks
    features = (
        Feature("a", "continuous", low=0.0, high=1.0),
        Feature("c", "discrete", values=("x", "y")),
    )
    schema = Schema("label", ("p", "q"), features)
    frame = pd.DataFrame(
        {"a": rng.random(n), "c": rng.choice(["x", "y"], n), "label": rng.choice(["p", "q"], n)}
    )
    encoded = encode(frame, schema)
    encoded.discrete[::5, 0] = -1
    columns = [encoded.continuous[:, 0].view(np.uint64)]
    columns += [encoded.discrete[:, 0].astype(np.uint64)]
    expected = (hash_columns(columns, 11) % np.uint64(7)).astype(np.int64)
    np.testing.assert_array_equal(forest_module.hash_trees(encoded, 7, 11), expected)
    relabelled = encode(frame.assign(label=rng.choice(["p", "q"], n)), schema)
    relabelled.discrete[::5, 0] = -1
    np.testing.assert_array_equal(forest_module.hash_trees(relabelled, 7, 11), expected)


def test_keeping_every_leaf_changes_no_vote(monkeypatch):
    """route_compact keeps all leaves when records are many per leaf: the same votes as
    keeping the reached ones only (replayable noise, untrained leaves included)."""
    rng = np.random.default_rng(1)
    schema = Schema(
        "label",
        ("p", "q"),
        tuple(Feature(f"x{i}", "continuous", low=0.0, high=1.0) for i in range(3)),
    )
    X = rng.random((400, 3))
    y = np.where(X[:, 0] > 0.5, "p", "q")
    model = DPRandomForestClassifier(
        n_estimators=10, depth=6, schema=schema, random_state=0, noise_seed=3
    ).fit(X, y)
    test = rng.random((3000, 3))
    monkeypatch.setattr(compact, "KEEP_ALL_LEAVES_FROM", 10**9)
    pruned = model.predict_proba(test)
    reset_empty_outputs(model)
    monkeypatch.setattr(compact, "KEEP_ALL_LEAVES_FROM", 1)
    kept = model.predict_proba(test)
    np.testing.assert_array_equal(kept, pruned)


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_packed_votes_of_many_releases_equal_one_count_each(k, dtype):
    """Releases with and without abstaining leaves (the latter get no class-0 field),
    bit fields spilling over several words: each equals matrix_label_counts."""
    rng = np.random.default_rng(k)
    n_trees, n, per_tree = 37, 1500, 40
    local = np.ascontiguousarray(rng.integers(0, per_tree, (n_trees, n)).astype(dtype))
    offsets = np.arange(n_trees, dtype=np.int64) * per_tree
    labels = [rng.integers(0, k, n_trees * per_tree) for _ in range(11)]
    for r in (2, 5):
        labels[r][rng.random(len(labels[r])) < 0.2] = -1  # abstaining leaves
    votes = tree_votes.packed_label_votes(local, offsets, labels, k)
    base = rng.random(k)
    for r, label in enumerate(labels):
        small = np.where(label < 0, k, label).astype(np.uint8)
        expected = tree_votes.matrix_label_counts(local, small, k, offsets)
        np.testing.assert_array_equal(votes(r), expected)
        np.testing.assert_array_equal(votes(r, base), expected + base)


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
def test_packed_votes_sum_chunks_of_trees_with_narrow_fields():
    """20 binary releases through 100 trees pack into 6-bit fields over two chunks of
    trees (two words a tree, not three); the chunks' fields add up to the exact counts."""
    rng = np.random.default_rng(7)
    n_trees, n, per_tree, k = 100, 700, 30, 2
    labels = [rng.integers(0, k, n_trees * per_tree) for _ in range(20)]
    bits, chunk, layout = tree_votes._packing(labels, k, n_trees)
    assert (bits, chunk, layout[-1][0] + 1) == (6, 63, 2)
    local = np.ascontiguousarray(rng.integers(0, per_tree, (n_trees, n)).astype(np.uint8))
    offsets = np.arange(n_trees, dtype=np.int64) * per_tree
    votes = tree_votes.packed_label_votes(local, offsets, labels, k)
    for r, label in enumerate(labels):
        expected = tree_votes.matrix_label_counts(local, label.astype(np.uint8), k, offsets)
        np.testing.assert_array_equal(votes(r), expected)


@pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")
@pytest.mark.parametrize("k", [2, 3])
def test_packed_votes_with_many_chunks_of_trees(monkeypatch, k):
    """Forced 3-bit fields: 37 trees in six chunks of at most 7, abstaining leaves too;
    the rows between the first and the last are summed as well."""
    rng = np.random.default_rng(k + 10)
    n_trees, n, per_tree = 37, 500, 20
    labels = [rng.integers(0, k, n_trees * per_tree) for _ in range(5)]
    labels[1][rng.random(len(labels[1])) < 0.3] = -1
    monkeypatch.setattr(
        tree_votes, "_packing", lambda lab, kk, t: (3, 7, tree_votes._word_layout(lab, kk, 3))
    )
    local = np.ascontiguousarray(rng.integers(0, per_tree, (n_trees, n)).astype(np.uint8))
    offsets = np.arange(n_trees, dtype=np.int64) * per_tree
    votes = tree_votes.packed_label_votes(local, offsets, labels, k)
    for r, label in enumerate(labels):
        small = np.where(label < 0, k, label).astype(np.uint8)
        expected = tree_votes.matrix_label_counts(local, small, k, offsets)
        np.testing.assert_array_equal(votes(r, np.arange(k) / 7), expected + np.arange(k) / 7)
