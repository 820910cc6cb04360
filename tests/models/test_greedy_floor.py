"""The greedy trees' floor (dpviz.models.greedy.floor): leaves whose released counts do not
spread beyond their noise and sampling answer the root's class, with scores that keep the
tree's ranking.

Fits use replayable noise seeds (``noise_seed``, the opt-in NOT-private mode), so each
outcome is deterministic; the margins the assertions rely on are stated where they are
made. The floor is post-processing of released counts: the ledger and every released
count are those of the same fit without it (checked here).
"""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import dpviz.models.greedy.estimator as greedy_estimator
from dpviz.models.files.load import model_from_json, release
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.greedy.floor import (
    FLOOR_INNER_Z,
    FLOOR_SELECTION,
    FLOOR_Z,
    leaf_signal,
    partition_signal,
)
from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import discrete_laplace_variance
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    tuple(Feature(f"f{i}", "continuous", low=0.0, high=1.0) for i in range(6)),
)


def _records(n: int, seed: int, signal: float = 0.0) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` records of six uniform features; "yes" for 48% of them, or with ``signal``
    that share moves by ±``signal`` with f0 above or below 0.5 (smarket's shape at 0)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 6))
    share = 0.48 + signal * np.where(x[:, 0] > 0.5, 1.0, -1.0)
    y = np.where(rng.random(n) < share, "yes", "no")
    return pd.DataFrame(x, columns=[f"f{i}" for i in range(6)]), y


def grown_of(model: DPDecisionTreeClassifier) -> GrownTree:
    """The grown tree a fitted model keeps (its fields plus ``_``)."""
    return GrownTree(**{f.name: getattr(model, f"{f.name}_") for f in fields(GrownTree)})


def _fit(X, y, *, floor: bool, monkeypatch, **params) -> DPDecisionTreeClassifier:
    with monkeypatch.context() as patch:
        if not floor:
            patch.setattr(greedy_estimator, "floor_applies", lambda *args: False)
        model = DPDecisionTreeClassifier(schema=SCHEMA, **params)
        return model.fit(X, y)


@pytest.mark.parametrize("steps", [1, 2])
def test_no_signal_answers_the_root_class_and_keeps_the_ranking(steps, monkeypatch):
    """1,000 records without signal at ε = 10 (Friedman–Schuster, DPEA): the tree splits
    on chance differences; the floor's test fails and every record gets the root's
    class, while the class-1 scores rank the test records exactly as the tree's did
    (AUC equal). Five replayable noise seeds; when written, X stayed below the bar in
    all of them (X/bar 0.48–0.61; the test lets a chance spread through sometimes, so
    four of five are required)."""
    X, y = _records(1_000, seed=3)
    X_test, y_test = _records(2_000, seed=4)
    acted = 0
    for seed in range(5):
        params = {"epsilon": 10.0, "steps": steps, "noise_seed": seed}
        plain = _fit(X, y, floor=False, monkeypatch=monkeypatch, **params)
        floored = _fit(X, y, floor=True, monkeypatch=monkeypatch, **params)
        assert len(floored.leaf_nodes_) > 4  # chance splits were made
        # Released counts and the ledger are the same fit's: post-processing only.
        assert np.array_equal(plain.leaf_noisy_counts_, floored.leaf_noisy_counts_)
        assert plain.ledger_.describe() == floored.ledger_.describe()
        if floored.floor_signal_ >= floored.floor_bar_:
            continue
        acted += 1
        predicted = floored.predict(X_test)
        assert len(set(predicted)) == 1
        assert (plain.predict(X_test) != predicted).any()
        scores, plain_scores = floored.predict_proba(X_test), plain.predict_proba(X_test)
        assert np.allclose(scores.sum(axis=1), 1.0)
        truth = y_test == "yes"
        assert roc_auc_score(truth, scores[:, 1]) == pytest.approx(
            roc_auc_score(truth, plain_scores[:, 1]), abs=1e-12
        )
    assert acted >= 4


def test_signal_passes_and_the_tree_is_unchanged(monkeypatch):
    """A clear signal (the "yes" share 0.33 / 0.63 by f0) at ε = 1 and 10: the tree passes
    the test (X/bar 1.43 and 1.77 when written, 1.38 and 1.76 under h-floor2's clipped
    statistic; at the depth of its first split) and the model is the one without the
    floor, bit for bit."""
    X, y = _records(1_000, seed=5, signal=0.15)
    for eps in (1.0, 10.0):
        params = {"epsilon": eps, "noise_seed": 7}
        plain = _fit(X, y, floor=False, monkeypatch=monkeypatch, **params)
        floored = _fit(X, y, floor=True, monkeypatch=monkeypatch, **params)
        assert floored.floor_signal_ > 1.2 * floored.floor_bar_ > 0
        assert np.array_equal(plain.leaf_proba_, floored.leaf_proba_)
        assert np.array_equal(plain.leaf_labels_, floored.leaf_labels_)


@pytest.mark.parametrize(
    "params",
    [{"objective": "balanced_accuracy"}, {"objective": "macro_f1"}, {"fallback": "none"}],
)
def test_the_floor_runs_under_the_default_objective_and_fallback_only(params, monkeypatch):
    """Public settings decide: the other objectives weigh the shares by the prior or a
    threshold, and ``fallback="none"`` is the papers' rule; their models are untouched."""
    X, y = _records(1_000, seed=3)
    plain = _fit(X, y, floor=False, monkeypatch=monkeypatch, epsilon=10.0, noise_seed=1, **params)
    model = _fit(X, y, floor=True, monkeypatch=monkeypatch, epsilon=10.0, noise_seed=1, **params)
    assert model.floor_signal_ is None
    assert np.array_equal(plain.leaf_proba_, model.leaf_proba_)


def test_partition_signal_is_the_spread_beyond_noise_and_sampling():
    """X and the bar by hand for three groups of two classes with noise variances v, one
    of them with a negative noisy total (a group of pure noise): its n̂ is not clipped,
    the pooled shares sum the counts as released, and the noise's mean weighs each group
    by its share of the records (h-floor2's statistic clipped n̂ and the counts at 0 and
    subtracted c·v_g alone: this fails on it)."""
    noisy = np.array([[30, 10], [20, 40], [-3, 1]])
    variance = discrete_laplace_variance(np.array([1.0, 2.0, 0.5]))
    n = np.array([40.0, 60.0, -2.0])  # unclipped
    p = np.array([47.0, 51.0]) / 98.0  # pooled as released
    c = 2 - 2 + 2 * float(np.sum(p**2))
    dev2 = ((noisy - n[:, None] * p) ** 2).sum(axis=1)
    w = np.array([40.0, 60.0, 0.0]) / 100.0  # weights of the clipped totals
    mean = c * (variance * (1 - 2 * w) + w**2 * variance.sum())
    sampling = n * (1 - n / 98.0) * (1 - float(np.sum(p**2)))
    excess, bar = partition_signal(noisy, variance)
    assert excess == pytest.approx(float(np.sum(dev2 - mean)))
    spread = np.sqrt(
        5 * np.sum((variance * c) ** 2) + FLOOR_SELECTION**2 * 2 * np.sum(sampling**2)
    )
    assert bar == pytest.approx(FLOOR_SELECTION * sampling.sum() + FLOOR_Z * spread)
    # Groups with the pooled shares exactly: X is minus the noise's mean.
    two = variance[:2]
    flat, _ = partition_signal(np.array([[10, 10], [30, 30]]), two)
    w = np.array([0.25, 0.75])
    assert flat == pytest.approx(-float(np.sum(two * (1 - 2 * w) + w**2 * two.sum())))


def _discrete_laplace(rng: np.random.Generator, epsilon: float, shape) -> np.ndarray:
    """Discrete Laplace noise at ``epsilon``: the difference of two geometric counts with
    P(stop) = 1 − e^−ε (the law of ``dpviz.privacy``'s draws)."""
    q = math.exp(-epsilon)
    return rng.geometric(1 - q, shape) - rng.geometric(1 - q, shape)


@pytest.mark.parametrize(
    ("sizes", "shares"),
    [
        ([4_000] + [0] * 30, [0.5, 0.5]),  # one group holds the records, 30 pure noise
        ([3_000, 1_000, 200, 0, 0, 0], [0.6, 0.3, 0.1]),  # three classes, skewed groups
    ],
)
def test_without_signal_the_statistic_has_no_mean_beyond_sampling(sizes, shares):
    """The null mean: groups whose true counts are exactly their sizes times shared
    shares (no sampling spread), each count with discrete Laplace noise at ε = 0.5 (v ≈
    8.3), 4,000 draws (numpy seed 28). X's mean is 0 up to the sampling error of the
    draws (4 standard errors) and the statistic's second-order terms (≤ 0.02 of the
    noise's total mean c·Σv: 0.012 ± 0.011 and −0.005 ± 0.007 over 20,000 draws when
    written). h-floor2's clipped statistic has means 0.80 and 0.17 of c·Σv here, the
    deviation around the unclipped n̂ alone still 0.32 and 0.10 (the pooled shares hold
    the noise of the groups in proportion to their weights)."""
    rng = np.random.default_rng(28)
    sizes, shares = np.asarray(sizes, dtype=np.float64), np.asarray(shares)
    variance = np.full(len(sizes), float(discrete_laplace_variance(np.array([0.5]))[0]))
    true = sizes[:, None] * shares[None, :]
    draws = np.array(
        [
            partition_signal(true + _discrete_laplace(rng, 0.5, true.shape), variance)[0]
            for _ in range(4_000)
        ]
    )
    k = len(shares)
    total = (k - 2 + k * float(np.sum(shares**2))) * variance.sum()
    error = draws.std() / math.sqrt(len(draws))
    assert abs(draws.mean()) <= 4 * error + 0.02 * total, (draws.mean() / total, error / total)


def test_leaf_signal_takes_the_depth_that_stands_out_most(monkeypatch):
    """A fitted DPEA tree at ε = 1 (two layers per step): leaf_signal is the largest
    X − bar over its depths, each depth's groups the sums of the leaves below its
    nodes (computed here from the parent links), z = FLOOR_Z for the leaves and
    FLOOR_INNER_Z above them."""
    X, y = _records(1_000, seed=5, signal=0.15)
    model = _fit(X, y, floor=True, monkeypatch=monkeypatch, epsilon=1.0, steps=2, noise_seed=3)
    tree = grown_of(model)
    variance = discrete_laplace_variance(tree.leaf_epsilon)
    results = []
    deepest = int(tree.node_depth[tree.leaf_nodes].max())
    for level in range(1, deepest + 1):
        groups: dict[int, list[int]] = {}
        for row, leaf in enumerate(tree.leaf_nodes):
            node = int(leaf)
            while tree.node_depth[node] > level:
                node = int(tree.parent[node])
            groups.setdefault(node, []).append(row)
        rows = list(groups.values())
        counts = np.array(
            [
                tree_counts.sum(axis=0)
                for tree_counts in (model.leaf_noisy_counts_[r] for r in rows)
            ]
        )
        summed = np.array([variance[r].sum() for r in rows])
        z = FLOOR_Z if level == deepest else FLOOR_INNER_Z
        results.append(partition_signal(counts, summed, z))
    best = max(results, key=lambda pair: pair[0] - pair[1])
    assert leaf_signal(tree, model.leaf_noisy_counts_) == pytest.approx(best)
    assert (model.floor_signal_, model.floor_bar_) == pytest.approx(best)


def test_a_floored_file_scores_as_the_estimator(monkeypatch):
    """The leaves' outputs in a file carry the fall-back scores: the file predicts the
    classes and probabilities the estimator does."""
    X, y = _records(1_000, seed=3)
    model = _fit(X, y, floor=True, monkeypatch=monkeypatch, epsilon=10.0, noise_seed=0)
    assert model.floor_signal_ < model.floor_bar_
    loaded = model_from_json(release(model).to_json())
    X_test, _ = _records(500, seed=9)
    assert np.array_equal(loaded.predict(X_test), model.predict(X_test))
    assert np.allclose(loaded.predict_proba(X_test), model.predict_proba(X_test), atol=1e-12)


def test_where_the_test_passes_the_model_is_the_one_without_the_floor(monkeypatch):
    """Two and three classes, 80 and 3,000 records with a signal in one feature, FS and
    DPEA, ε 0.1 / 1 / 10, noise seed 7: every fit whose leaves pass is bit for bit the
    fit without the floor, and every 3,000-record fit passes (the signal moves a fifth
    of the records); some 80-record fits fall back."""
    rng = np.random.default_rng(2)
    fell_back = 0
    for k in (2, 3):
        classes = ("a", "b", "c")[:k]
        schema = Schema("label", classes, SCHEMA.features[:2])
        for n in (80, 3_000):
            X = pd.DataFrame(rng.random((n, 2)), columns=["f0", "f1"])
            follow = rng.random(n) < 0.5
            y = np.where(follow, np.where(X["f0"] > 0.7, classes[-1], classes[0]), classes[0])
            y = np.where(~follow & (rng.random(n) < 0.2), rng.choice(classes, n), y)
            for steps in (1, 2):
                for eps in (0.1, 1.0, 10.0):
                    params = {"epsilon": eps, "steps": steps, "noise_seed": 7}
                    with monkeypatch.context() as patch:
                        patch.setattr(greedy_estimator, "floor_applies", lambda *args: False)
                        plain = DPDecisionTreeClassifier(schema=schema, **params).fit(X, y)
                    model = DPDecisionTreeClassifier(schema=schema, **params).fit(X, y)
                    if model.floor_signal_ is None or model.floor_signal_ >= model.floor_bar_:
                        assert np.array_equal(plain.leaf_proba_, model.leaf_proba_)
                        assert np.array_equal(plain.predict(X), model.predict(X))
                    else:
                        assert n == 80, (k, steps, eps)
                        fell_back += 1
    assert fell_back > 0
