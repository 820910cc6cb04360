"""Released models of every registry algorithm: JSON export and load (forest, greedy tree,
DPBoost), predictions equal to the fitted model's, validation of the files, and the
CLI's train --out / predict round trip."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest

from dpviz import get_algorithm
from dpviz.cli import main
from dpviz.evaluation.demos import DEMO_CSV, DEMO_SCHEMA
from dpviz.models.files.load import (
    ReleasedBoost,
    ReleasedForest,
    ReleasedTree,
    load_model,
    model_from_json,
    release,
)
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.schema import Schema
from tests.conftest import MIXED_SCHEMA, mixed_records

KINDS = {
    "fletcher_islam": ("forest", ReleasedForest),
    "jpw": ("forest", ReleasedForest),
    "friedman_schuster": ("greedy tree", ReleasedTree),
    "dpea": ("greedy tree", ReleasedTree),
    "dpboost": ("boosted trees", ReleasedBoost),
}
SMALL = {
    "fletcher_islam": {"n_estimators": 10},
    "jpw": {},
    "friedman_schuster": {"max_depth": 4},
    "dpea": {"max_depth": 4},
    "dpboost": {"n_estimators": 30, "trees_per_ensemble": 10, "max_depth": 4},
}


@pytest.fixture(scope="module")
def demo():
    frame = pd.read_csv(DEMO_CSV, dtype=str)
    schema = Schema.load(DEMO_SCHEMA)
    train, test = frame.iloc[:1500], frame.iloc[1500:]
    return train.drop(columns="label"), train["label"], test.drop(columns="label"), schema


@pytest.fixture(scope="module")
def mixed():
    """Three classes, a continuous and two discrete features."""
    records = mixed_records(3, 1200)
    X = records.drop(columns="label")
    return X.iloc[:900], records["label"].iloc[:900], X.iloc[900:], MIXED_SCHEMA


def fitted(name: str, X, y, schema, epsilon: float = 2.0, seed: int = 0, **extra):
    params = {**SMALL[name], **extra}
    return get_algorithm(name).make(epsilon, random_state=seed, schema=schema, **params).fit(X, y)


def test_every_registry_algorithm_has_a_kind_here():
    assert set(KINDS) == set(ALGORITHMS)


@pytest.mark.parametrize("name", list(KINDS))
@pytest.mark.parametrize("data", ["demo", "mixed"])
def test_export_round_trip_predicts_exactly_like_the_model(name, data, request):
    X, y, X_test, schema = request.getfixturevalue(data)
    model = fitted(name, X, y, schema)
    released = release(model, name)
    kind, cls = KINDS[name]
    assert isinstance(released, cls)
    text = released.to_json()
    doc = json.loads(text)
    assert doc["kind"] == kind and doc["algorithm"] == name
    assert doc["privacy"]["summary"] == model.ledger_.describe()
    assert doc["privacy"]["private"] is True
    loaded = model_from_json(text)
    assert type(loaded) is cls
    np.testing.assert_array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    assert (loaded.predict(X_test) == model.predict(X_test).astype(str)).all()
    assert "count[" not in text and "leaf_records" not in text  # no true counts released


def test_greedy_export_lists_every_leaf_and_only_noisy_counts(demo):
    X, y, _, schema = demo
    model = fitted("dpea", X, y, schema)
    doc = json.loads(release(model).to_json())
    output = doc["tree"]["output"]
    leaves = [o for f, o in zip(doc["tree"]["feature"], output) if f < 0]
    assert len(leaves) == len(model.leaf_nodes_)  # empty leaves too: shape is not data
    # Each leaf's class shares, smoothed from released noisy counts only (post-processing).
    shares = np.asarray(leaves)
    np.testing.assert_array_equal(shares, model.leaf_proba_)
    assert np.allclose(shares.sum(axis=1), 1.0)
    assert doc["algorithm"] == "dpea" and doc["n_bins"] == model.n_bins


def test_boost_export_lists_every_leaf_of_every_tree(mixed):
    X, y, _, schema = mixed
    model = fitted("dpboost", X, y, schema)
    doc = json.loads(release(model).to_json())
    assert [part["target"] for part in doc["models"]] == [0, 1, 2]  # one vs rest
    for part in doc["models"]:
        assert len(part["trees"]) == 30
        for tree in part["trees"]:
            assert len(tree["value"]) == 2 ** len(tree["feature"]) == 16


def test_loading_files_from_disk_and_the_wrong_reader(demo, tmp_path):
    X, y, X_test, schema = demo
    tree = release(fitted("friedman_schuster", X, y, schema))
    path = tmp_path / "tree.json"
    tree.save(path)
    loaded = load_model(path)
    assert isinstance(loaded, ReleasedTree)
    assert isinstance(ReleasedTree.load(path), ReleasedTree)
    with pytest.raises(ValueError, match="greedy tree model.*load_model"):
        ReleasedForest.load(path)
    with pytest.raises(ValueError, match="not a dpviz model file"):
        model_from_json(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match="does not exist"):
        load_model(tmp_path / "missing.json")
    forest = release(fitted("fletcher_islam", X, y, schema))
    assert isinstance(model_from_json(forest.to_json()), ReleasedForest)


def test_unknown_discrete_value_abstains_in_a_greedy_tree(mixed):
    X, y, X_test, schema = mixed
    loaded = model_from_json(release(fitted("friedman_schuster", X, y, schema)).to_json())
    odd = X_test.head(5).assign(colour="purple")
    proba = loaded.predict_proba(odd)
    assert proba.shape == (5, 3) and np.allclose(proba.sum(axis=1), 1)


@pytest.mark.parametrize("name", ["friedman_schuster", "dpea"])
def test_an_unknown_value_stops_only_its_own_record(mixed, name):
    """One record with an unseen category abstains; the others keep their leaves, and the
    estimator agrees with its exported model on every record."""
    X, y, X_test, schema = mixed
    # Replayable noise: the split choice is noisy, and this test needs the root on colour.
    model = fitted(name, X, y, schema, noise_seed=0)
    batch = X_test.head(50).copy()
    alone = model.predict_proba(batch)
    batch.iloc[0, batch.columns.get_loc("colour")] = "purple"
    together = model.predict_proba(batch)
    np.testing.assert_allclose(together[0], 1 / 3)  # the root splits on colour: abstains
    np.testing.assert_allclose(together[1:], alone[1:])
    loaded = model_from_json(release(model).to_json())
    np.testing.assert_allclose(loaded.predict_proba(batch), together)


_WRONG = [None, 5, -1, 10**30, 1.5, math.inf, "s", "", [], {}, [None], [[1]], True]


def _paths(obj, prefix=()):
    if prefix:
        yield prefix
    if isinstance(obj, dict | list):
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for key, value in items:
            if key in ("schema",):
                continue  # the schema's own checks have their own test
            yield from _paths(value, (*prefix, key))


def _replaced(doc, path, value):
    doc = copy.deepcopy(doc)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@pytest.mark.parametrize("name", ["friedman_schuster", "dpboost"])
def test_a_damaged_file_is_a_value_error_never_a_crash(name, mixed):
    """Every entry of a small valid file replaced by a wrong-typed value: ValueError or OK."""
    X, y, X_test, schema = mixed
    params = {"max_depth": 2} if name == "friedman_schuster" else {"n_estimators": 2}
    params |= {"max_depth": 2, "n_bins": 2}
    model = get_algorithm(name).make(1.0, random_state=0, schema=schema, **params).fit(X, y)
    doc = json.loads(release(model).to_json())
    records = X_test.head(3)
    for path in _paths(doc):
        if path[0] == "privacy" or path[0] == "params":
            continue  # informative only: never read back
        for value in _WRONG:
            text = json.dumps(_replaced(doc, path, value))
            try:
                model_from_json(text).predict_proba(records)
            except ValueError:
                pass


def test_damaged_boost_file_says_what_is_wrong(mixed):
    X, y, _, schema = mixed
    doc = json.loads(release(fitted("dpboost", X, y, schema)).to_json())
    broken = copy.deepcopy(doc)
    broken["models"][0]["trees"][0]["value"] = [0.0]
    with pytest.raises(ValueError, match="tree 1 of part 1: it needs 16 finite leaf values"):
        model_from_json(json.dumps(broken))
    broken = copy.deepcopy(doc)
    broken["models"].pop()
    with pytest.raises(ValueError, match="needs 3 one-vs-rest parts"):
        model_from_json(json.dumps(broken))
    broken = copy.deepcopy(doc)
    broken["models"][1]["trees"][2]["feature"][1][0] = 7
    with pytest.raises(ValueError, match="splits on a feature the schema lacks"):
        model_from_json(json.dumps(broken))


def test_damaged_tree_file_says_what_is_wrong(mixed):
    X, y, _, schema = mixed
    doc = json.loads(release(fitted("dpea", X, y, schema)).to_json())
    broken = copy.deepcopy(doc)
    broken["tree"]["first_child"][0] = len(broken["tree"]["feature"]) - 1
    with pytest.raises(ValueError, match="children outside the tree"):
        model_from_json(json.dumps(broken))
    broken = copy.deepcopy(doc)
    leaf = broken["tree"]["feature"].index(-1)
    broken["tree"]["output"][leaf] = [1.0]
    with pytest.raises(ValueError, match="noisy counts are not 3 numbers"):
        model_from_json(json.dumps(broken))


# --- CLI ----------------------------------------------------------------------------------


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("dpboost", ["--trees", 20, "--param", "trees_per_ensemble=10", "--max-depth", 3]),
        ("friedman_schuster", ["--max-depth", 4, "--bins", 6]),
    ],
)
def test_cli_train_then_predict_round_trip(capsys, tmp_path, name, extra):
    model_path, preds = tmp_path / "m.json", tmp_path / "p.csv"
    common = ["--data", DEMO_CSV, "--label", "label", "--schema", DEMO_SCHEMA]
    status, out, err = run(
        capsys,
        "train",
        *common,
        "--algorithm",
        name,
        "--epsilon",
        1,
        *extra,
        "--seed",
        4,
        "--out",
        model_path,
        "--json",
    )
    assert status == 0, err
    result = json.loads(out)
    assert result["algorithm"] == name and result["privacy"]["epsilon_total"] == 1.0
    doc = json.loads(model_path.read_text())
    assert doc["algorithm"] == name and doc["kind"] == KINDS[name][0]
    status, out, err = run(
        capsys, "predict", "--model", model_path, "--data", DEMO_CSV, "--out", preds
    )
    assert status == 0, err
    table = pd.read_csv(preds)
    assert list(table.columns) == ["prediction", "proba[0]", "proba[1]"] and len(table) == 2000
    # With replayed noise (NOT private) the same fit in Python gives the same probabilities.
    status, out, err = run(
        capsys, "train", *common, "--algorithm", name, "--epsilon", 1, *extra, "--seed", 4,
        "--noise-seed", 4, "--out", model_path, "--json",
    )  # fmt: skip
    assert status == 0 and "NOT private: the noise can be replayed" in err
    assert json.loads(out)["privacy"]["epsilon_total"] is None
    status, out, err = run(
        capsys, "predict", "--model", model_path, "--data", DEMO_CSV, "--out", preds
    )
    table = pd.read_csv(preds)
    frame = pd.read_csv(DEMO_CSV, dtype=str)
    params = {"n_estimators": 20, "trees_per_ensemble": 10, "max_depth": 3}
    if name == "friedman_schuster":
        params = {"max_depth": 4, "n_bins": 6}
    model = (
        get_algorithm(name)
        .make(1.0, random_state=4, noise_seed=4, schema=Schema.load(DEMO_SCHEMA), **params)
        .fit(frame.drop(columns="label"), frame["label"])
    )
    np.testing.assert_allclose(
        table[["proba[0]", "proba[1]"]].to_numpy(),
        model.predict_proba(frame.drop(columns="label")),
        rtol=0,
        atol=1e-12,
    )
    # Only count-releasing forests can take a new batch.
    status, _, err = run(
        capsys,
        "update",
        "--model",
        model_path,
        "--data",
        DEMO_CSV,
        "--out",
        tmp_path / "u.json",
    )
    assert status == 2 and "only forest models" in err


def test_cli_param_errors_are_one_line(capsys, tmp_path):
    common = ["train", "--data", DEMO_CSV, "--label", "label", "--schema", DEMO_SCHEMA]
    common += ["--epsilon", 1, "--out", tmp_path / "m.json", "--algorithm", "dpboost"]
    status, _, err = run(capsys, *common, "--param", "nope=1")
    assert status == 2 and "dpboost has no parameter 'nope'" in err
    status, _, err = run(capsys, *common, "--param", "learning_rate=fast")
    assert status == 2 and "learning_rate must be a float" in err
    status, _, err = run(capsys, *common, "--param", "learning_rate")
    assert status == 2 and "NAME=VALUE" in err
