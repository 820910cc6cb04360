"""DPBoost (Li et al. 2020): budget arithmetic, sensitivities in use, learning."""

import numpy as np
import pandas as pd
import pytest

from dpviz import get_algorithm
from dpviz.boosting import DPBoostClassifier
from dpviz.data import encode
from dpviz.evaluation import cross_validate
from dpviz.schema import Feature, Schema
from dpviz.synthetic import make_synth


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
    ],
)
def test_bad_parameters(synth, params, match):
    X, y, schema = synth
    with pytest.raises(ValueError, match=match):
        DPBoostClassifier(schema=schema, **params).fit(X, y)


def test_registry_defaults_are_the_papers():
    model = get_algorithm("dpboost").make(1.0)
    assert (model.max_depth, model.reg_lambda, model.learning_rate, model.trees_per_ensemble) == (
        6,
        0.1,
        0.01,
        50,
    )
