"""A prediction's records imputed and clipped in one compiled pass
(``dpviz.tabular.ranges.clip_columns``) give the same values and the same report as the
per-column numpy pass they replace."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpviz.compiled import kernels
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular import encode as encode_module
from dpviz.tabular.encode import encode_array

pytestmark = pytest.mark.skipif(kernels.get(wait=True) is None, reason="numba is not installed")


def _schema() -> Schema:
    features = (
        Feature("a", "continuous", -1.0, 1.0),
        Feature("b", "continuous", 0.0, 3.0, missing="low"),
        Feature("c", "continuous", -0.5, 0.25),
        Feature("d", "continuous", -10.0, 10.0),  # never outside: no report entry
    )
    return Schema("y", ("0", "1"), features)


@pytest.mark.parametrize("order", ["C", "F", "strided"])
@pytest.mark.parametrize("n", [1, 17, 5_000])
def test_compiled_clipping_equals_numpy(monkeypatch, order, n):
    rng = np.random.default_rng(n)
    X = rng.normal(scale=2.0, size=(n, 4))
    X[:, 3] = X[:, 3].clip(-10, 10)
    X[::5, 0] = np.nan  # imputed to the midpoint
    X[1::7, 1] = np.nan  # routed to the public low
    X[0, 2] = 0.25  # on the domain's edge: not clipped
    if order == "F":
        X = np.asfortranarray(X)
    elif order == "strided":
        X = np.ascontiguousarray(np.repeat(X, 2, axis=1))[:, ::2]
    calls = []
    original = encode_module.clip_columns

    def spy(*args):
        out = original(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(encode_module, "clip_columns", spy)
    fast = encode_array(X.copy(), None, _schema(), training=False)
    assert calls == [True]  # the compiled pass did it
    monkeypatch.setattr(encode_module, "clip_columns", lambda *args: None)
    slow = encode_array(X.copy(), None, _schema(), training=False)
    np.testing.assert_array_equal(fast.continuous, slow.continuous)
    assert fast.continuous.flags.c_contiguous  # row-major, as the routing kernels read
    assert dataclasses.asdict(fast.report) == dataclasses.asdict(slow.report)
    assert list(fast.report.clipped) == list(slow.report.clipped)  # same order of entries
    assert "d" not in fast.report.clipped
    assert fast.report.clipped.get("a", 0) == int(np.sum(np.abs(X[:, 0]) > 1.0))


def test_clean_records_are_not_copied():
    X = np.random.default_rng(0).uniform(0.0, 0.25, size=(100, 4))  # inside every domain
    encoded = encode_array(X, None, _schema(), training=False)
    assert np.shares_memory(encoded.continuous, X)
    assert not encoded.report.clipped
