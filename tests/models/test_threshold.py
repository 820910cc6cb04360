"""The macro_f1 objective's threshold from a model's own released leaf counts (issue 28).

Exact on hand-made curves and on a greedy tree whose leaves are set by hand; the forest's
simulation exact for one tree; the deconvolution of noisy counts checked against a
fixed-seed sample with a tolerance from its size; and the threshold's path through a
forest's predict, a copy and a model file.
"""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.models.files.load import model_from_json, release
from dpviz.models.files.manifest import unaccounted
from dpviz.models.objective import decide
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.threshold import (
    NEVER,
    best_threshold,
    macro_f1_curve,
    posterior_counts,
    simulate_forest,
)
from dpviz.privacy.schema import infer_schema

# Three leaves: class-1 score, and (class 0, class 1) records. Worked by hand:
# P = 20, N = 132. Cut at 0.8: TP 8, FP 2 → F1₁ 16/30, F1₀ 260/274, macro 0.7411;
# at 0.3: TP 18, FP 32 → 36/70, 200/234, macro 0.6845; at 0.05 (all class 1):
# 40/172 and 0, 0.1163; never: 264/284 / 2 = 0.4648. Best: 0.8.
SCORES = np.array([0.3, 0.8, 0.05])
COUNTS = np.array([[30, 10], [2, 8], [100, 2]])


def test_best_threshold_by_hand():
    assert best_threshold(SCORES, COUNTS) == 0.8
    assert macro_f1_curve(8, 2, 20, 132) == pytest.approx((16 / 30 + 260 / 274) / 2)
    # Fewer class-0 records in the middle leaf: at 0.3, TP 18, FP 12 (P 20, N 112) →
    # 36/50 and 240/254, macro 0.8324, above 0.8's 0.7368.
    middle = COUNTS.copy()
    middle[0] = [10, 10]
    assert best_threshold(SCORES, middle) == 0.3
    # No class-1 record, or a curve where no cut beats the majority: never.
    assert best_threshold(SCORES, np.c_[COUNTS[:, 0], [0, 0, 0]]) == NEVER
    assert best_threshold([0.5], [[90, 10]]) == NEVER
    # Noisy counts may be negative: the curve sums them as they are.
    assert best_threshold(SCORES, COUNTS + [[0, 0], [0, 0], [-3, -1]]) == 0.8


def test_decide_with_a_threshold():
    scores = np.array([[0.2, 0.8], [0.7, 0.3], [0.9, 0.1]])
    assert decide(scores, [0.9, 0.1], "macro_f1", 0.3).tolist() == [1, 1, 0]
    assert decide(scores, [0.9, 0.1], "macro_f1", NEVER).tolist() == [0, 0, 0]
    # every objective cuts at it (the default forest's accuracy and balanced cuts)
    assert decide(scores, [0.9, 0.1], "accuracy", 0.3).tolist() == [1, 1, 0]
    assert decide(scores, [0.9, 0.1], "accuracy").tolist() == [1, 0, 0]
    assert decide(scores, [0.9, 0.1], "balanced_accuracy").tolist() == [1, 1, 0]
    assert decide(scores, [0.9, 0.1], "balanced_accuracy", 0.95).tolist() == [0, 0, 0]


def test_one_tree_is_exact():
    # A one-tree forest: the leaves themselves are the atoms, each class's records
    # scored by the leaf less one record of that class (score: the values as votes).
    values = (np.array([[0.7, 0.3], [0.2, 0.8]]), np.array([[0.6, 0.4], [0.1, 0.9]]))
    scores, weights = simulate_forest(values, np.array([[5.0, 1.0], [1.0, 3.0]]), 1, lambda v: v)
    np.testing.assert_allclose(scores, [0.3, 0.8, 0.4, 0.9])
    np.testing.assert_allclose(weights, [[5, 0], [1, 0], [0, 1], [0, 3]])


def test_simulation_is_public_and_repeatable():
    rng = np.random.default_rng(3)  # fixed replayable seed: the leaves, not the method
    values = rng.normal(size=(50, 2))
    counts = rng.integers(0, 20, size=(50, 2)).astype(float)
    first = simulate_forest((values, values), counts, 10, np.exp)
    second = simulate_forest((values, values), counts, 10, np.exp)
    np.testing.assert_array_equal(first[0], second[0])
    # weights sum to each class's records per tree
    np.testing.assert_allclose(first[1].sum(axis=0), counts.sum(axis=0) / 10)


def test_posterior_counts():
    # Almost no noise (ε = 30): the posterior mean is the count itself.
    counts = np.array([[0, 5], [12, 0], [3, 3]])
    np.testing.assert_allclose(posterior_counts(counts, 30.0), counts, atol=1e-6)
    # 4,000 leaves, true counts 0 (3,000) or 10 (1,000), discrete Laplace noise at
    # ε = 0.5 (fixed seed 11): the posterior means sum to the true total and sort the
    # leaves. Tolerance: the noisy total's sd is √(4000·2q/(1−q)²) ≈ 170 of 10,000,
    # the deconvolution's error is of that order; 5% = 3 sd.
    rng = np.random.default_rng(11)
    q = np.exp(-0.5)
    true = np.where(np.arange(4000) < 1000, 10, 0)[:, None]
    noise = rng.geometric(1 - q, (4000, 1)) - rng.geometric(1 - q, (4000, 1))
    post = posterior_counts(true + noise, 0.5)[:, 0]
    assert post.sum() == pytest.approx(10_000, rel=0.05)
    assert post[:1000].mean() > 8 and post[1000:].mean() < 2
    # Noisy counts clipped at 0 would have put ~0.95 per pure-noise leaf (2,850).
    assert post[1000:].sum() < 0.5 * np.clip(noise[1000:], 0, None).sum()


def _imbalanced(n: int = 1500, seed: int = 5) -> pd.DataFrame:
    """8% class "yes", shifted by 2 sd on two features (fixed seed)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.08
    return pd.DataFrame(
        {
            "x1": rng.normal(0, 1, n) + 2.0 * y,
            "x2": rng.normal(0, 1, n) + 2.0 * y,
            "label": np.where(y, "yes", "no"),
        }
    )


@pytest.fixture(scope="module")
def frame_schema():
    frame = _imbalanced()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = infer_schema(frame, "label", warn=False)
    return frame, schema


def test_a_greedy_tree_set_by_hand(frame_schema):
    frame, schema = frame_schema
    X = frame.drop(columns="label")
    tree = get_algorithm("friedman_schuster").make(
        1.0, schema=schema, objective="macro_f1", noise_seed=1, random_state=0
    )
    tree.fit(X, frame["label"])
    n = len(tree.leaf_nodes_)
    assert n >= 3
    # The hand-made curve on the first three leaves, the others empty at score 0.
    proba = np.zeros((n, 2))
    proba[:, 0] = 1.0
    proba[:3] = np.c_[1 - SCORES, SCORES]
    counts = np.zeros((n, 2), dtype=np.int64)
    counts[:3] = COUNTS
    tree.leaf_proba_, tree.leaf_noisy_counts_ = proba, counts
    assert tree.decision_threshold_ == 0.8
    got = tree.predict(X) == "yes"
    expected = tree.predict_proba(X)[:, 1] >= 0.8
    np.testing.assert_array_equal(got, expected)
    tree.set_params(objective="balanced_accuracy")
    assert tree.decision_threshold_ is None


@pytest.mark.parametrize("algorithm", ["fletcher_islam", "jpw", "dpea"])
def test_threshold_in_predict_copy_and_file(frame_schema, algorithm):
    frame, schema = frame_schema
    X = frame.drop(columns="label")
    model = get_algorithm(algorithm).make(
        1.0, schema=schema, objective="macro_f1", noise_seed=2, random_state=0
    )
    model.fit(X, frame["label"])
    t = model.decision_threshold_
    assert t is not None and 0.0 <= t <= NEVER
    yes = list(model.classes_).index("yes")
    assert yes == 1  # classes sorted: "no", "yes"
    pred = model.predict(X)
    np.testing.assert_array_equal(pred == "yes", model.predict_proba(X)[:, 1] >= t)
    # Signal of 2 sd: the threshold finds the class (the majority never predicts it).
    assert 0.02 < np.mean(pred == "yes") < 0.3
    copy = pickle.loads(pickle.dumps(model))
    assert copy.decision_threshold_ == t
    text = release(model, algorithm, values_public=True).to_json()
    doc = json.loads(text)
    assert doc["decision_threshold"] == t
    assert unaccounted(doc) == []
    loaded = model_from_json(text)
    assert loaded.decision_threshold == t
    np.testing.assert_array_equal(loaded.predict(X), pred)
    # A file's threshold out of range is refused.
    doc["decision_threshold"] = 5.0
    del doc["signature"]
    with pytest.raises(ValueError, match="decision_threshold"):
        model_from_json(json.dumps(doc))
