"""Private-RDT's leaves shrunk by an empirical-Bayes pseudo-count (issue 28): where its
floor's test applies, the leaves' own deviations beyond noise and sampling, pooled over
the trees, set how far they are shrunk to the prior
(:func:`dpviz.models.forest.signal.pooled_shrink_records`)."""

from __future__ import annotations

import numpy as np
import pytest

from dpviz import DPRandomForestClassifier, PrivateRDTClassifier
from dpviz.models.files import forest as forest_file
from dpviz.models.files.load import model_from_json, release
from dpviz.models.forest import voting
from dpviz.models.forest.scoring import count_prior, count_values, shrink_records
from dpviz.models.forest.signal import (
    SHRINK_MAX_RECORDS,
    leaf_dispersion,
    pooled_shrink_records,
    shared_floor_applies,
    tree_terms,
)
from tests.models.test_greedy_floor import SCHEMA, _records

# A leaf ε whose noise is nil to double precision (variance 2q/(1 − q)², q = e^(−50)):
# the terms are the counts' own.
NO_NOISE = 50.0


def test_no_deviation_beyond_sampling_gives_the_cap():
    """Two leaves of 10 / 10: no deviation from the pooled 50 / 50 (X = 0) and a sampling
    mean s = 2·20·(1 − 20/40)·(1 − ½) = 10, so δ² = 0 and m is the cap; τ trees divide it."""
    counts = np.array([[10, 10], [10, 10]])
    terms = tree_terms(counts, np.zeros(2, dtype=np.int64), NO_NOISE)
    assert terms[0, 0] == pytest.approx(0.0, abs=1e-12)
    assert terms[0, 1] == pytest.approx(10.0, rel=1e-12)
    assert terms[0, 3] == 800.0  # Σ n̂² = 20² + 20²
    assert leaf_dispersion(terms) == 0.0
    prior = [0.5, 0.5]
    assert pooled_shrink_records(terms, prior, NO_NOISE) == SHRINK_MAX_RECORDS
    two = tree_terms(np.vstack([counts, counts]), np.repeat([0, 1], 2), NO_NOISE)
    assert pooled_shrink_records(two, prior, NO_NOISE) == SHRINK_MAX_RECORDS / 2


def test_a_clear_deviation_gives_a_small_pseudo_count():
    """Leaves 30 / 10 and 10 / 30 around pooled 50 / 50: X = 4·10² = 400, s =
    2·40·(1 − 40/80)·½ = 20, Σ n̂² = 2·40² = 3,200, so δ² = 380/3,200 = 0.11875 and
    m = (1 − Σπ²)/δ² − 1: 61/19 for π = ½ / ½, 0.48/0.11875 − 1 = 215/95 − 1 for
    π = 0.6 / 0.4. One tree keeps m (above the fixed 2 records); two such trees halve it,
    below the fixed α, which then holds."""
    counts = np.array([[30, 10], [10, 30]])
    one = tree_terms(counts, np.zeros(2, dtype=np.int64), NO_NOISE)
    assert one[0, 0] == pytest.approx(400.0, rel=1e-12)
    assert one[0, 1] == pytest.approx(20.0, rel=1e-12)
    assert leaf_dispersion(one) == pytest.approx(380.0 / 3200.0, rel=1e-12)
    assert shrink_records(NO_NOISE) == 2.0
    assert pooled_shrink_records(one, [0.5, 0.5], NO_NOISE) == pytest.approx(61 / 19, rel=1e-9)
    expected = 0.48 / 0.11875 - 1.0
    assert pooled_shrink_records(one, [0.6, 0.4], NO_NOISE) == pytest.approx(expected, rel=1e-9)
    two = tree_terms(np.vstack([counts, counts]), np.repeat([0, 1], 2), NO_NOISE)
    assert leaf_dispersion(two) == pytest.approx(380.0 / 3200.0, rel=1e-12)
    assert pooled_shrink_records(two, [0.5, 0.5], NO_NOISE) == 2.0
    # The fixed α is the least: at ε = 0.5 it is 2/ε = 4 > 61/19.
    assert pooled_shrink_records(one, [0.5, 0.5], 0.5) == shrink_records(0.5) == 4.0


def _jpw(epsilon: float, X, y, **params) -> PrivateRDTClassifier:
    model = PrivateRDTClassifier(epsilon=epsilon, schema=SCHEMA, random_state=0, **params)
    return model.fit(X, y)


def _proba_with_default_alpha(model, X_test, monkeypatch) -> np.ndarray:
    """The estimator's scores of the same release with the fixed α (the rule not acting)."""
    with monkeypatch.context() as patch:
        patch.setattr(voting, "release_shrink_records", lambda model: None)
        voting._MEMO.pop(model, None)
        proba = model.predict_proba(X_test)
    voting._MEMO.pop(model, None)
    return proba


@pytest.mark.parametrize("signal", [0.0, 0.1])
def test_a_file_shrinks_its_leaves_as_the_estimator(signal, monkeypatch):
    """1,250 records at 48% "yes" without signal and with a weak ±10-point one in f0,
    ε = 10 (leaf ε 0.85 a tree), noise seed 2: the pseudo-count is above the fixed one
    (the cap / 10 trees without signal, about 27 records with it, against 2.35), the
    scores move with it, and a model file predicts exactly the estimator's probabilities,
    after a batch of new records (two noise draws per leaf) as well."""
    X, y = _records(1_250, seed=3, signal=signal)
    X_test, _ = _records(500, seed=9, signal=signal)
    model = _jpw(10.0, X, y, noise_seed=2)
    alpha = voting.release_shrink_records(model)
    assert alpha > 5 * shrink_records(model.tree_epsilon_)
    if signal == 0:
        assert alpha == SHRINK_MAX_RECORDS / model.n_estimators_
    proba = model.predict_proba(X_test)
    assert not np.allclose(proba, _proba_with_default_alpha(model, X_test, monkeypatch))
    loaded = model_from_json(release(model).to_json())
    assert np.array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    assert np.array_equal(loaded.predict(X_test), model.predict(X_test))
    X_new, y_new = _records(600, seed=11, signal=signal)
    model.partial_fit(X_new, y_new)
    assert (voting.release_shrink_records(model) != alpha) == (signal > 0)  # new leaves
    loaded = model_from_json(release(model).to_json())
    assert np.array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda X, y: DPRandomForestClassifier(
                epsilon=10.0, schema=SCHEMA, random_state=0, noise_seed=2
            ).fit(X, y),
            id="disjoint",
        ),
        pytest.param(lambda X, y: _jpw(1.0, X, y, noise_seed=2), id="jpw-eps1"),
        pytest.param(
            lambda X, y: _jpw(10.0, X, y, noise_seed=2, objective="balanced_accuracy"),
            id="jpw-balanced",
        ),
    ],
)
def test_the_fixed_pseudo_count_where_the_floor_does_not_apply(make, monkeypatch):
    """The default (disjoint) forest at ε = 10, Private-RDT at ε = 1 (leaf ε 0.085, below
    the floor's) and Private-RDT under balanced_accuracy: no pseudo-count of their own;
    their leaf values are count_values' with the fixed α, and the scores (estimator and
    file) do not move when the rule's pseudo-count is made absurd."""
    X, y = _records(1_250, seed=3, signal=0.1)
    X_test, _ = _records(500, seed=9, signal=0.1)
    model = make(X, y)
    applies = shared_floor_applies(
        model.data_split, True, model.tree_epsilon_, model.objective, True
    )
    assert not applies
    assert voting.release_shrink_records(model) is None
    noisy = model.released_outputs(model.leaf_keys_).noisy_counts
    prior = count_prior(model.prior_counts_, len(model.classes_))
    values, _ = model.count_scoring(noisy)
    shared = model.data_split == "shared"  # Private-RDT: the squared evidence too
    assert np.array_equal(values, count_values(noisy, prior, model.tree_epsilon_, squares=shared))
    proba = model.predict_proba(X_test)
    loaded = model_from_json(release(model).to_json())
    with monkeypatch.context() as patch:
        absurd = lambda *args: 1e6  # noqa: E731
        patch.setattr(voting, "pooled_shrink_records", absurd)
        patch.setattr(forest_file, "pooled_shrink_records", absurd)
        voting._MEMO.pop(model, None)
        assert np.array_equal(model.predict_proba(X_test), proba)
        assert np.array_equal(loaded.predict_proba(X_test), proba)
