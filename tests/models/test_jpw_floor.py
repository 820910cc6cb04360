"""Private-RDT's floor (issue 28): a per-tree test on every leaf's released counts, and the
fall-back on the released prior's class where it finds no signal
(:mod:`dpviz.models.forest.signal`, :func:`dpviz.models.trees.floor.partition_terms`)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dpviz import PrivateRDTClassifier
from dpviz.models.files.load import model_from_json, release
from dpviz.models.forest import release as forest_release
from dpviz.models.forest import voting
from dpviz.models.forest.signal import (
    LEAF_FLOOR_EPSILON,
    LEAF_FLOOR_U,
    leaves_trusted,
    shared_floor_applies,
    tree_signal,
)
from dpviz.models.trees.floor import partition_terms
from tests.models.test_greedy_floor import SCHEMA, _records


def _discrete_laplace(rng, epsilon: float, shape) -> np.ndarray:
    """P(z) ∝ exp(−ε|z|): the difference of two geometric draws (variance 2q/(1 − q)²)."""
    q = np.exp(-epsilon)
    return rng.geometric(1.0 - q, shape) - rng.geometric(1.0 - q, shape)


def test_the_statistic_has_no_noise_mean_over_every_leaf_of_a_tree():
    """A tree's leaves as Private-RDT's floor reads them: 50 leaves whose true counts
    follow the pooled shares exactly (60 / 40) and 400 leaves no record reached (pure
    noise), discrete Laplace at ε = 0.85 (v = 2.53), numpy seed 20261128, 400
    replications. The mean X is 0 within 4 of its standard errors plus 1% of the noise
    total (the subtracted mean is exact to first order in the noise); the clipped rule it
    replaced (n̂_g at 0, shares of the clipped counts) was over 50 standard errors up."""
    rng = np.random.default_rng(20261128)
    eps = 0.85
    q = np.exp(-eps)
    v = 2.0 * q / (1.0 - q) ** 2
    true = np.vstack([np.tile([60, 40], (50, 1)), np.zeros((400, 2), dtype=np.int64)])
    excess = np.array(
        [partition_terms(true + _discrete_laplace(rng, eps, true.shape), v)[0] for _ in range(400)]
    )
    noise_total = len(true) * v * 2 * (0.6**2 + 0.4**2)
    error = excess.std() / np.sqrt(len(excess))
    assert abs(excess.mean()) < 4 * error + 0.01 * noise_total
    # The spread σ's noise part is X's standard deviation under this null (within 15%:
    # 400 replications give the sd to about 4%; 5·Σ(noise²) is the fourth-moment bound).
    _, sampling, spread = partition_terms(true + 0, v)
    assert sampling >= 0
    assert excess.std() < 1.15 * spread


def test_tree_signal_is_the_mean_of_the_trees_u_in_any_order():
    """u_t = (X_t − s_t)/σ_t per tree (S = 1), averaged over the trees; the
    leaves' order (the estimator's by key, a file's by node) does not change it."""
    rng = np.random.default_rng(5)
    counts = rng.integers(-3, 30, (60, 3))
    tree = np.repeat(np.arange(4), 15)
    q = np.exp(-0.5)
    v = 2 * 2.0 * q / (1.0 - q) ** 2  # two batches of noise
    u = []
    for t in range(4):
        excess, s, spread = partition_terms(counts[tree == t], v)
        u.append((excess - s) / spread)
    assert tree_signal(counts, tree, 0.5, n_batches=2) == pytest.approx(np.mean(u), rel=1e-12)
    order = rng.permutation(60)
    assert tree_signal(counts[order], tree[order], 0.5, 2) == tree_signal(counts, tree, 0.5, 2)
    assert leaves_trusted(counts, tree, 0.5, 2) == (np.mean(u) >= LEAF_FLOOR_U)


def test_where_the_floor_applies():
    """Shared trees, released counts, a leaf ε from LEAF_FLOOR_EPSILON, accuracy and a
    released prior; nowhere else."""
    ok = ("shared", True, LEAF_FLOOR_EPSILON, "accuracy", True)
    assert shared_floor_applies(*ok)
    for i, other in enumerate(("disjoint", False, 0.99 * LEAF_FLOOR_EPSILON, "macro_f1", False)):
        assert not shared_floor_applies(*ok[:i], other, *ok[i + 1 :])


def _jpw(epsilon: float, X, y, **params) -> PrivateRDTClassifier:
    model = PrivateRDTClassifier(epsilon=epsilon, schema=SCHEMA, random_state=0, **params)
    return model.fit(X, y)


def test_no_signal_falls_back_on_the_prior_class_and_keeps_the_ranking(monkeypatch):
    """1,250 records at 52 / 48% without signal (smarket's shape), ε = 10 (leaf ε 0.855
    a tree), replayable noise seeds 0–3: the test finds no signal (mean u −0.31 to −0.04
    when written) and every test record gets the prior's class "no"; the class-1 scores
    rank the records as the trees' own did (the same release and pseudo-count with the
    trees trusted: AUC equal). Without the test (the same release under
    balanced_accuracy, the default pseudo-count) 49–53% of the test records got "yes"."""
    X, y = _records(1_250, seed=3)
    X_test, y_test = _records(2_000, seed=4)
    for seed in range(4):
        model = _jpw(10.0, X, y, noise_seed=seed)
        assert not voting.release_leaves_trusted(model)
        assert (model.predict(X_test) == "no").all()
        proba = model.predict_proba(X_test)[:, 1]
        # The trees' own scores: the same release and leaves, the trees trusted.
        with monkeypatch.context() as patch:
            patch.setattr(voting, "LEAF_FLOOR_U", -np.inf)
            assert voting.release_leaves_trusted(model)
            plain = model.predict_proba(X_test)[:, 1]
        assert roc_auc_score(y_test, proba) == pytest.approx(roc_auc_score(y_test, plain))
        model.objective = "balanced_accuracy"  # public; the test does not apply
        assert voting.release_leaves_trusted(model)
        assert not (model.predict(X_test) == "no").all()


def test_signal_passes_and_small_leaf_epsilon_does_not_test():
    """The same records with a ±15-point signal in f0 pass the test at ε = 10 (mean u 7.8
    when written, noise seeds 1 and 2) and the model is the one without the test; at
    ε = 2 (leaf ε 0.17, below LEAF_FLOOR_EPSILON) the test does not run, without signal either."""
    X, y = _records(1_250, seed=3, signal=0.15)
    X_test, y_test = _records(2_000, seed=4, signal=0.15)
    model = _jpw(10.0, X, y, noise_seed=1)
    assert voting.release_leaves_trusted(model)
    assert model.tree_epsilon_ >= LEAF_FLOOR_EPSILON
    assert (model.predict(X_test) == y_test).mean() > 0.55
    X0, y0 = _records(1_250, seed=3)
    small = _jpw(2.0, X0, y0, noise_seed=1)
    assert small.tree_epsilon_ < LEAF_FLOOR_EPSILON
    assert voting.release_leaves_trusted(small)
    assert not (small.predict(X_test) == "no").all()


def test_each_release_is_tested_again():
    """A relabel at another ε draws new leaves: the test reads them (the memo is keyed on
    the released counts), from a fall-back at ε = 10 to no test at ε = 2 and back."""
    X, y = _records(1_250, seed=3)
    X_test, _ = _records(500, seed=4)
    model = _jpw(10.0, X, y, noise_seed=0)
    assert (model.predict(X_test) == "no").all()
    model.release_instead(2.0)
    assert not (model.predict(X_test) == "no").all()
    model.release_instead(10.0)
    assert (model.predict(X_test) == "no").all()


@pytest.mark.parametrize("signal", [0.0, 0.15])
def test_a_file_recomputes_the_floor(signal):
    """A model file groups its listed leaves by tree and takes the same decision: it
    predicts the classes and probabilities the estimator does, fallen back or not, and
    after a batch of new records (two batches of noise per leaf) as well."""
    X, y = _records(1_250, seed=3, signal=signal)
    X_test, _ = _records(500, seed=9, signal=signal)
    model = _jpw(10.0, X, y, noise_seed=2)
    assert voting.release_leaves_trusted(model) == (signal > 0)
    loaded = model_from_json(release(model).to_json())
    assert np.array_equal(loaded.predict(X_test), model.predict(X_test))
    assert np.allclose(loaded.predict_proba(X_test), model.predict_proba(X_test), atol=1e-12)
    X_new, y_new = _records(600, seed=11, signal=signal)
    model.partial_fit(X_new, y_new)
    loaded = model_from_json(release(model).to_json())
    assert np.array_equal(loaded.predict(X_test), model.predict(X_test))
    assert np.allclose(loaded.predict_proba(X_test), model.predict_proba(X_test), atol=1e-12)


def test_every_leaf_is_read_tree_by_tree():
    """The leaves the test reads are the whole leaf space, each with its tree: the
    trained leaves' trees are the fit's, and the keys are the export's."""
    X, y = _records(1_250, seed=3)
    model = _jpw(10.0, X, y, noise_seed=0)
    keys, tree = forest_release.leaf_space_trees(model)
    assert np.array_equal(np.sort(keys), forest_release.leaf_space(model))
    position = model._trained(keys)
    trained = position >= 0
    assert np.array_equal(tree[trained], model.leaf_tree_[position[trained]])
    assert trained.sum() == len(model.leaf_keys_)
