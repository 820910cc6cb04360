"""The sweep's faster paths give the very bits of the paths they replace (issue 29).

Each shortcut here (row sums and maxima column by column, vote fractions, predicted
classes by counting, the twin's compiled leaf counts, the flipped-leaf share from
majorities found once, a release's leaf outputs and count values gathered once, the
empty-leaf share without the other diagnostics) is compared with the plain numpy or
model computation on the same inputs: exact equality, no tolerance.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels
from dpviz.evaluation import sweep_references
from dpviz.evaluation.metrics import _predicted_classes
from dpviz.evaluation.sweep_grid import _fractions
from dpviz.evaluation.sweep_points import LeafPatterns, distinct_rows
from dpviz.models.forest import voting
from dpviz.models.forest.scoring import _row_max, _row_sum, count_values, flipped_labels
from dpviz.privacy.mechanisms import ABSTAIN
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode


def awkward_rows(rng, n: int, k: int) -> np.ndarray:
    """Floats over many magnitudes with the rows that trip reductions: all −0.0, a
    NaN, infinities, zeros."""
    a = rng.normal(size=(n, k)) * 10.0 ** rng.uniform(-6, 6, (n, k))
    a[0] = -0.0
    a[1, 0] = -0.0
    a[2] = 0.0
    a[3, -1] = np.nan
    a[4, 0] = np.inf
    a[5] = -np.inf
    return a


def same_bits(x: np.ndarray, y: np.ndarray) -> bool:
    return (
        x.shape == y.shape
        and x.dtype == y.dtype
        and bool((x.view(np.uint64) == y.view(np.uint64)).all())
    )


@pytest.mark.parametrize("k", range(1, 11))
def test_row_sum_and_max_are_numpys_bits(k):
    rng = np.random.default_rng(k)
    a = awkward_rows(rng, 400, k)
    with np.errstate(invalid="ignore"):
        assert same_bits(_row_sum(a), a.sum(axis=1, keepdims=True))
        expected = a.max(axis=1, keepdims=True)
        got = _row_max(a)
        assert np.array_equal(got, expected, equal_nan=True)
        # ±0.0 may come out either way; what the scores do with it may not differ.
        assert same_bits(np.exp(a - got), np.exp(a - expected))


@pytest.mark.parametrize("k", range(1, 11))
def test_vote_fractions_are_numpys_bits(k):
    rng = np.random.default_rng(100 + k)
    votes = (
        rng.random((500, k)) * rng.integers(0, 3, (500, 1)) * 10.0 ** rng.uniform(-3, 3, (500, 1))
    )
    votes[7] = -0.0
    total = votes.sum(axis=1, keepdims=True)
    expected = np.divide(votes, total, out=np.full_like(votes, 1.0 / k), where=total > 0)
    assert same_bits(_fractions(votes), expected)
    positive = votes + 0.5  # every row has votes: the path without a mask
    total = positive.sum(axis=1, keepdims=True)
    assert same_bits(_fractions(positive), positive / total)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.intp])
def test_predicted_classes_are_numpys_unique(dtype):
    rng = np.random.default_rng(3)
    for n in (0, 1, 7, 3000):
        for k in (1, 2, 5):
            y = rng.integers(0, k, n).astype(dtype)
            got, expected = _predicted_classes(y), np.unique(y)
            assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_twin_leaf_counts_compiled_equal_bincount(monkeypatch):
    if kernels.get(wait=True) is None:
        pytest.skip("numba not available")
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 60, 12)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for dtype, size in ((np.uint8, 3000), (np.uint16, 500)):
        local = np.stack([rng.integers(0, s, size) for s in sizes]).astype(dtype)
        y = rng.integers(0, 3, size)
        compact = SimpleNamespace(leaf_keys=np.arange(sizes.sum()), offsets=offsets, local=local)
        compiled = sweep_references._leaf_class_counts(compact, y, 3)
        with monkeypatch.context() as m:
            m.setattr(kernels, "loaded", lambda: None)
            plain = sweep_references._leaf_class_counts(compact, y, 3)
        assert compiled.dtype == plain.dtype and np.array_equal(compiled, plain)


def test_flipped_leaves_from_patterns_equal_flipped_labels():
    rng = np.random.default_rng(8)
    counts = rng.integers(0, 4, (2000, 3))
    labels = rng.integers(0, 3, 2000)
    labels[::7] = ABSTAIN
    patterns = LeafPatterns.of(counts)
    assert np.array_equal(patterns.flipped(labels), flipped_labels(counts, labels))


@pytest.mark.parametrize(
    ("low", "high", "shape", "dtype"),
    [
        (0, 4, (2000, 3), np.int64),  # keyed: few values
        (0, 40_000, (15_000, 2), np.int64),  # keyed: a sweep's leaf counts
        (0, 300, (500, 7), np.int32),  # keyed, another dtype
        (-3, 3, (800, 2), np.int64),  # negative counts: numpy's row sort
        (0, 2**40, (300, 3), np.int64),  # the key would overflow: numpy's row sort
        (0, 5, (0, 2), np.int64),  # no leaves
    ],
)
def test_distinct_rows_equal_numpys_unique_rows(low, high, shape, dtype):
    counts = np.random.default_rng(4).integers(low, high, shape).astype(dtype)
    counts[::5] = counts[:1]  # repeated rows (none when there are none)
    distinct, inverse = distinct_rows(counts)
    expected, expected_inverse = np.unique(counts, axis=0, return_inverse=True)
    assert distinct.dtype == expected.dtype and np.array_equal(distinct, expected)
    assert np.array_equal(inverse, expected_inverse.reshape(-1))
    assert np.array_equal(distinct[inverse], counts)


def small_forest():
    rng = np.random.default_rng(0)
    n = 1500
    frame = pd.DataFrame({f"x{i}": rng.random(n) for i in range(3)})
    frame["label"] = np.where(frame["x0"] + 0.3 * rng.random(n) > 0.65, "b", "a")
    features = tuple(Feature(f"x{i}", "continuous", low=0.0, high=1.0) for i in range(3))
    schema = Schema("label", ("a", "b"), features)
    data = encode(frame, schema, training=True)
    model = DPRandomForestClassifier(
        n_estimators=8, depth=4, schema=schema, random_state=1, noise_seed=3
    )
    return model.fit_encoded(data, schema), data


def test_leaf_outputs_gathered_once_per_release():
    model, data = small_forest()
    first = model.route_records(data)
    again = model.route_records(data)  # another routing of the same leaves
    for mechanism, epsilon in (
        ("laplace_counts", 1.0),
        ("permute_flip", 2.0),
        ("laplace_counts", 3.0),
    ):
        model.release_instead(epsilon, mechanism)
        a = voting.outputs_of(model, first)
        b = voting.outputs_of(model, again)
        assert b is a  # kept, not gathered again
        assert not a.labels.flags.writeable
        fresh = voting._outputs_of(model, first, True)  # the gathering itself
        assert np.array_equal(a.labels, fresh.labels)
        if fresh.noisy_counts is None:
            assert a.noisy_counts is None
            continue
        assert np.array_equal(a.noisy_counts, fresh.noisy_counts)
        values, _ = model.count_scoring(a.noisy_counts)
        assert model.count_scoring(a.noisy_counts)[0] is values
        prior = voting.count_prior(model.prior_counts_, len(model.classes_))
        assert same_bits(values, count_values(fresh.noisy_counts, prior, model.tree_epsilon_))
    # A new release is never answered from the previous one's outputs.
    model.release_instead(3.0, "laplace_counts")
    before = voting.outputs_of(model, first)
    model.release_instead(3.0, "permute_flip")
    assert voting.outputs_of(model, first) is not before


def test_empty_leaf_share_without_the_diagnostics():
    model, _ = small_forest()
    share = sweep_references._empty_leaf_pct(model)
    model.__dict__.pop("_diagnostics", None)
    assert share == model.diagnostics_["empty_leaf_pct"]


@pytest.mark.parametrize("first", ["laplace_counts", "permute_flip"])
def test_fitted_release_serves_the_first_point(first):
    """A rung's fit at its first ε is that point's release when the mechanisms agree:
    under a noise seed the same votes and facts as drawing it again."""
    from dpviz.evaluation.sweep_points import release_votes

    points = [(first, 1.0), ("laplace_counts", 2.0), ("permute_flip", 1.0)]
    results = []
    for fitted in (True, False):
        model, data = small_forest()
        model.set_params(epsilon=1.0)
        model.fit_encoded(data, model.schema)
        routed = model.route_records(data)
        facts = lambda m: (m.floor_check_, tuple(m._releases), m.prior_counts_.tolist())  # noqa: E731
        results.append(list(release_votes(model, routed, points, facts, fitted=fitted)))
    for (p1, v1, _, f1), (p2, v2, _, f2) in zip(*results, strict=True):
        assert p1 == p2 and f1 == f2
        assert same_bits(np.asarray(v1, dtype=np.float64), np.asarray(v2, dtype=np.float64))
