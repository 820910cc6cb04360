"""A disjoint fit's one-pass counting (``heap_fit_counts``) and its input path give
exactly what the paths they replace give."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels
from dpviz.models.forest import counting
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.inputs import class_array

pytestmark = pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")


def _schema(n_features: int, classes=("0", "1", "2")) -> Schema:
    features = [Feature(f"x{j}", "continuous", low=-3.0, high=3.0) for j in range(n_features)]
    return Schema(features=features, label="y", classes=classes)


def _data(n: int, n_features: int, order: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = np.array(rng.normal(size=(n, n_features)).clip(-3, 3), order=order)
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0.5)
    return X, y


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("n, trees, depth", [(20_011, 50, 6), (1_003, 7, 3), (9, 3, 2)])
def test_fused_counts_equal_routed_pairs(monkeypatch, order, n, trees, depth):
    X, y = _data(n, 4, order)

    def fitted():
        return DPRandomForestClassifier(
            epsilon=1.0,
            n_estimators=trees,
            depth=depth,
            mechanism="permute_flip",
            schema=_schema(4),
            random_state=5,
            noise_seed=2,
        ).fit(X, y)

    calls = []
    original = counting.heap_counts

    def spy(model, *args, **kwargs):
        out = original(model, *args, **kwargs)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(counting, "heap_counts", spy)
    fused = fitted()
    assert calls == [True]  # the one-pass kernel counted this fit
    monkeypatch.setattr(counting, "heap_counts", lambda *a, **k: None)
    paired = fitted()
    for name in ("leaf_keys_", "leaf_tree_", "leaf_depth_", "leaf_counts_", "leaf_labels_"):
        np.testing.assert_array_equal(getattr(fused, name), getattr(paired, name))
    assert fused.leaf_counts_.sum() == n
    for (keys_a, node_a, nodes_a), (keys_b, node_b, nodes_b) in zip(
        fused.node_tables_, paired.node_tables_, strict=True
    ):
        np.testing.assert_array_equal(keys_a, keys_b)
        np.testing.assert_array_equal(node_a, node_b)
        for key in nodes_a:
            np.testing.assert_array_equal(nodes_a[key], nodes_b[key])
    np.testing.assert_array_equal(fused.predict(X[:500]), paired.predict(X[:500]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_still_refused(bad):
    X, y = _data(500, 3, "C")
    X[17, 2] = bad
    model = DPRandomForestClassifier(n_estimators=3, depth=3, schema=_schema(3), random_state=0)
    with pytest.raises(ValueError, match="Input X contains"):
        model.fit(X, y)


@pytest.mark.parametrize(
    "classes, y, expected",
    [
        (("0", "1", "2"), np.array([2, 0, 1, 1], dtype=np.int32), np.array([0, 1, 2], np.int32)),
        (("0", "1", "2"), np.array([0, 1, 1]), np.array(["0", "1", "2"], dtype=object)),
        (("03", "1"), np.array([3, 1]), np.array(["03", "1"], dtype=object)),
        (("-1", "7"), np.array([7, -1, 7], dtype=np.int8), np.array([-1, 7], np.int8)),
    ],
)
def test_class_array_from_codes_equals_scan(classes, y, expected):
    lookup = {c: i for i, c in enumerate(classes)}
    codes = np.array([lookup.get(str(v), -1) for v in y], dtype=np.int32)
    codes = codes[codes >= 0]
    fast = class_array(classes, y, codes)
    slow = class_array(classes, y)
    np.testing.assert_array_equal(fast, expected)
    np.testing.assert_array_equal(slow, expected)
    assert fast.dtype == slow.dtype


def test_read_only_records_are_counted_as_writeable_ones():
    """joblib hands parallel folds read-only memory maps: the fit must accept them (the
    compiled kernel is typed for writeable arrays) and count the same leaves."""
    from dpviz.tabular.encode import encode

    X, y = _data(5_000, 4, "F")
    import pandas as pd

    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)]).assign(y=y.astype(str))
    schema = _schema(4)
    encoded = encode(frame, schema)
    params = dict(epsilon=1.0, n_estimators=20, depth=5, schema=schema, random_state=1)
    params.update(noise_seed=3, split_points="uniform")
    plain = DPRandomForestClassifier(**params).fit_encoded(encoded, schema)
    for array in (encoded.continuous, encoded.y):
        array.flags.writeable = False
    frozen = DPRandomForestClassifier(**params).fit_encoded(encoded, schema)
    np.testing.assert_array_equal(plain.leaf_counts_, frozen.leaf_counts_)
    np.testing.assert_array_equal(plain.leaf_keys_, frozen.leaf_keys_)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize(
    "n, trees, depth, classes, split",
    [
        (20_000, 40, 6, ("0", "1", "2"), "quantile"),
        (9_001, 13, 4, ("0", "1"), "uniform"),  # 9,001 = 8k + 1: the 16-record tail
        (3_001, 5, 2, ("0", "1"), "quantile"),  # the two levels read before the loop
    ],
)
def test_fused_count_votes_equal_routed_votes(monkeypatch, order, n, trees, depth, classes, split):
    """predict_proba of a count forest by one descend-and-sum pass
    (``routing.count_votes_fused``) equals routing then summing, value for value, and draws
    the same untrained leaves' outputs."""
    from dpviz.models.forest import routing

    X, y = _data(n, 4, order, seed=3)
    y = np.minimum(y, len(classes) - 1)

    def fitted():
        return DPRandomForestClassifier(
            epsilon=2.0,
            n_estimators=trees,
            depth=depth,
            mechanism="laplace_counts",
            schema=_schema(4, classes),
            split_points=split,
            random_state=5,
            noise_seed=4,
        ).fit(X, y)

    calls = []
    original = routing.count_votes_fused

    def spy(model, encoded):
        out = original(model, encoded)
        calls.append(out is not None)
        return out

    test = np.array(np.random.default_rng(9).normal(size=(n, 4)).clip(-3, 3), order=order)
    monkeypatch.setattr(routing, "count_votes_fused", spy)
    fused_model = fitted()
    fused = fused_model.predict_proba(test)
    few = fused_model.predict_proba(test[:20])  # too few records: routed, not fused
    assert calls == [True, False]
    monkeypatch.setattr(routing, "count_votes_fused", lambda model, encoded: None)
    routed_model = fitted()
    routed = routed_model.predict_proba(test)
    np.testing.assert_array_equal(fused, routed)
    np.testing.assert_array_equal(few, routed[:20])
    # The untrained leaves drew the same outputs, whichever path asked for them.
    order_f = np.argsort(fused_model._empty_keys)
    order_r = np.argsort(routed_model._empty_keys)
    np.testing.assert_array_equal(
        fused_model._empty_keys[order_f], routed_model._empty_keys[order_r]
    )
    np.testing.assert_array_equal(
        fused_model._empty_noisy[order_f], routed_model._empty_noisy[order_r]
    )


def test_fused_value_sums_equal_matrix_sums():
    """``trees.heap_value_sums`` adds the same values in the same order as the leaf
    matrix's sums (any values; a last column of ones set to the tree count)."""
    from dpviz.models.trees.compact import route_compact
    from dpviz.models.trees.votes import heap_value_sums, matrix_value_sums

    X, y = _data(5_003, 4, "C", seed=1)
    model = DPRandomForestClassifier(
        epsilon=1.0, n_estimators=9, depth=5, schema=_schema(4), random_state=2, noise_seed=1
    ).fit(X, y)
    forest = model._compact_forest(np.arange(9), len(X))
    rng = np.random.default_rng(0)
    for ones in (False, True):
        values = rng.normal(size=(len(forest.leaf_nodes), 3))
        if ones:
            values[:, -1] = 1.0
        routed = route_compact(
            model.space_, model.root_keys_, np.arange(9), X, np.zeros((len(X), 0)), forest=forest
        )
        expected = matrix_value_sums(routed.local, values, routed.offsets)
        np.testing.assert_array_equal(heap_value_sums(forest, X, values), expected)
