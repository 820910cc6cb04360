"""DPBoost (Li et al. 2020): budget arithmetic, sensitivities in use, learning, secret
noise and the per-record tree draw."""

import pickle

import numpy as np
import pandas as pd
import pytest

from dpviz import boosting, get_algorithm
from dpviz.boosting import DPBoostClassifier, assign_trees, subset_shares
from dpviz.data import encode
from dpviz.evaluation import cross_validate
from dpviz.noise import NoiseSource
from dpviz.schema import Feature, Schema
from dpviz.synthetic import make_synth
from tests.test_greedy import chi_square_p, reachable_secrets


@pytest.fixture(scope="module")
def synth():
    frame, schema = make_synth("SynthA", 6000, seed=0)
    return frame.drop(columns="label"), frame["label"], schema


def test_ledger_of_ensembles_of_ensembles(synth):
    X, y, schema = synth
    model = DPBoostClassifier(
        epsilon=1.2, n_estimators=120, trees_per_ensemble=50, schema=schema, random_state=0
    ).fit(X, y)
    # ⌈120 / 50⌉ = 3 ensembles (50, 50, 20 trees), ε/3 each, parallel inside.
    assert model.n_ensembles_ == 3
    assert [len(g) for g in model.ledger_.groups] == [50, 50, 20]
    assert all(e.epsilon == pytest.approx(0.4) for g in model.ledger_.groups for e in g)
    assert model.ledger_.epsilon_total == pytest.approx(1.2)


def test_multiclass_splits_the_budget_across_classes():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.uniform(0, 1, 3000), "b": rng.uniform(0, 1, 3000)})
    frame["label"] = np.select([frame.a < 0.33, frame.a < 0.66], ["x", "y"], "z")
    schema = Schema(
        "label",
        ("x", "y", "z"),
        (Feature("a", "continuous", 0, 1), Feature("b", "continuous", 0, 1)),
    )
    model = DPBoostClassifier(
        epsilon=3.0, n_estimators=60, trees_per_ensemble=30, schema=schema, random_state=0
    )
    model.fit(frame[["a", "b"]], frame["label"])
    assert model.class_epsilon_ == pytest.approx(1.0)
    assert len(model.models_) == 3
    assert len(model.ledger_.groups) == 3 * 2
    assert model.ledger_.epsilon_total == pytest.approx(3.0)
    assert "one-vs-rest model of class 3" in model.ledger_.describe()


def test_leaf_values_are_clipped_geometrically(synth):
    X, y, schema = synth
    model = DPBoostClassifier(epsilon=1.0, schema=schema, random_state=0).fit(X, y)
    for t, (_, clipped, _) in enumerate(model.leaf_records_, start=1):
        assert np.abs(clipped).max() <= (1 - 0.01) ** (t - 1) + 1e-12


def test_learns_with_a_large_budget(synth):
    X, y, schema = synth
    encoded = encode(X.assign(label=y), schema)
    low = cross_validate(encoded, schema, epsilon=0.1, algorithm="dpboost", folds=2)
    high = cross_validate(
        encoded, schema, epsilon=50.0, algorithm="dpboost", folds=2, learning_rate=0.1
    )
    assert high["accuracy"]["mean"] > 0.75
    assert high["auc"]["mean"] > low["auc"]["mean"]
    assert high["privacy"]["epsilon_total"] == pytest.approx(50.0)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": -1}, "epsilon"),
        ({"n_bins": 1}, "n_bins"),
        ({"learning_rate": 1.5}, "learning_rate"),
        ({"max_depth": 0}, "max_depth"),
        ({"reg_lambda": 0}, "reg_lambda must be a positive finite number"),
        ({"reg_lambda": 0.0}, "with λ = 0 an empty leaf's value is 0/0"),
        ({"reg_lambda": -0.5}, "reg_lambda"),
        ({"reg_lambda": float("nan")}, "reg_lambda"),
        ({"reg_lambda": "x"}, "reg_lambda"),
        ({"noise_seed": -1}, "noise seed"),
    ],
)
def test_bad_parameters(synth, params, match):
    X, y, schema = synth
    with pytest.raises(ValueError, match=match) as error:
        DPBoostClassifier(schema=schema, **params).fit(X, y)
    assert "\n" not in str(error.value)


def test_registry_defaults_are_the_papers():
    model = get_algorithm("dpboost").make(1.0)
    assert (model.max_depth, model.reg_lambda, model.learning_rate, model.trees_per_ensemble) == (
        6,
        0.1,
        0.01,
        50,
    )


# --- secret noise and the per-record tree draw (SPEC §1, §4) ---------------------------


def small_boost(schema, **params):
    return DPBoostClassifier(
        epsilon=1.0, n_estimators=12, trees_per_ensemble=5, max_depth=3, schema=schema, **params
    )


def leaf_values(model) -> np.ndarray:
    return np.concatenate([tree["value"] for trees in model.models_ for tree in trees])


def test_random_state_does_not_seed_the_noise(synth):
    X, y, schema = synth
    a, b = (small_boost(schema, random_state=0).fit(X, y) for _ in range(2))
    assert not np.array_equal(leaf_values(a), leaf_values(b))
    assert a.__sklearn_tags__().non_deterministic
    assert a.ledger_.private and "NOT private" not in a.ledger_.describe()


def test_noise_seed_replays_the_model_and_is_not_private(synth):
    X, y, schema = synth
    a = small_boost(schema, noise_seed=3, random_state=0).fit(X, y)
    b = small_boost(schema, noise_seed=3, random_state=99).fit(X, y)
    other = small_boost(schema, noise_seed=4).fit(X, y)
    np.testing.assert_array_equal(leaf_values(a), leaf_values(b))
    for ta, tb in zip(a.models_[0], b.models_[0]):
        for level_a, level_b in zip(ta["feature"], tb["feature"]):
            np.testing.assert_array_equal(level_a, level_b)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not np.array_equal(leaf_values(a), leaf_values(other))
    assert not a.__sklearn_tags__().non_deterministic
    ledger = a.ledger_
    assert not ledger.private and ledger.epsilon_total is None
    assert "NOT private" in ledger.describe() and "replayable seed" in ledger.describe()
    assert ledger.notes == ["NOT private: the noise can be replayed from its seed."]
    # the ensembles are still booked as before, after the replayable-noise entry
    assert [len(g) for g in ledger.groups] == [1, 5, 5, 2]


class FixedUniforms:
    """A stand-in generator whose ``random(n)`` returns given uniforms."""

    def __init__(self, uniforms):
        self.uniforms = np.asarray(uniforms, dtype=np.float64)

    def random(self, size):
        assert size == len(self.uniforms)
        return self.uniforms.copy()


def test_tree_assignment_inverts_the_cumulative_shares():
    shares = np.array([0.5, 0.3])  # sum 0.8: a record falls in no tree with p = 0.2
    u = [0.1, 0.49, 0.51, 0.79, 0.81, 0.999]
    np.testing.assert_array_equal(assign_trees(6, shares, FixedUniforms(u)), [0, 0, 1, 1, 2, 2])


def test_adding_a_record_never_moves_another_record():
    """A record's tree is a function of its own uniform: inserting one more record
    anywhere (with any uniform) leaves every other record's tree unchanged, and each
    record alone gets the tree it gets among all (parallel composition: the cut is not
    computed from n, unlike a shuffled permutation cut into blocks)."""
    shares = subset_shares(0.01, 50)
    u = np.random.default_rng(0).random(500)
    base = assign_trees(len(u), shares, FixedUniforms(u))
    for where, extra in [(0, 0.3), (250, 0.004), (500, 0.999999)]:
        bigger = assign_trees(len(u) + 1, shares, FixedUniforms(np.insert(u, where, extra)))
        np.testing.assert_array_equal(np.delete(bigger, where), base)
    alone = [assign_trees(1, shares, FixedUniforms([v]))[0] for v in u]
    np.testing.assert_array_equal(alone, base)
    assert base.min() >= 0 and base.max() < 50


def test_tree_assignment_follows_the_shares():
    """100,000 records under a secure generator: tree sizes against n·shares (χ², 50
    cells, p > 1e-4 at a fixed noise seed; the shares are 2.5%..1.5% of the records)."""
    shares = subset_shares(0.01, 50)
    assert shares.sum() == pytest.approx(1.0)
    position = assign_trees(100_000, shares, NoiseSource.replayable(7).generator())
    assert position.max() < 50
    assert chi_square_p(np.bincount(position, minlength=50), 100_000 * shares) > 1e-4


def test_each_ensemble_deals_its_records_by_independent_draws(synth, monkeypatch):
    """The estimator draws one assignment per ensemble (and class) and grows tree t on
    exactly the records at position t (before gradient filtering)."""
    X, y, schema = synth
    calls = []

    def spy(n, shares, rng):
        position = assign_trees(n, shares, rng)
        calls.append(position)
        return position

    tree_sizes = []
    grow = DPBoostClassifier._tree

    def spy_tree(self, codes, gradient, iteration, eps_tree, rng):
        tree_sizes.append(len(codes))
        return grow(self, codes, gradient, iteration, eps_tree, rng)

    monkeypatch.setattr(boosting, "assign_trees", spy)
    monkeypatch.setattr(DPBoostClassifier, "_tree", spy_tree)
    small_boost(schema, learning_rate=0.3).fit(X, y)
    assert len(calls) == 3 and all(len(c) == len(X) for c in calls)  # ⌈12 / 5⌉ ensembles
    # Tree 1 starts at F = 0, where every |gradient| is 1 = g*, so it keeps all its
    # records; later trees keep those of theirs that pass the gradient filter.
    for sizes, position in ((tree_sizes[:5], calls[0]), (tree_sizes[5:10], calls[1])):
        dealt = np.bincount(position, minlength=5)[:5]
        assert all(0 < kept <= n for kept, n in zip(sizes, dealt))
    assert tree_sizes[0] == np.count_nonzero(calls[0] == 0)
    assert tree_sizes[5] < np.count_nonzero(calls[1] == 0)  # F ≠ 0 by then: some filtered


@pytest.mark.parametrize("noise_seed", [None, 4])
def test_fitted_boost_holds_no_noise_source_and_pickles(synth, noise_seed):
    X, y, schema = synth
    model = small_boost(schema, noise_seed=noise_seed).fit(X, y)
    assert reachable_secrets(model) == []
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.predict_proba(X), model.predict_proba(X))
