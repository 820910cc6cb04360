"""The forest's records per tree at large ε (issue 28: capacity that grows with ε):
``data_split="auto"`` keeps disjoint trees below ε = 5 and from there grows ⌈ε/0.5⌉
(rounded up to even) trees in two halves of the records, each record out of the bag of
half of them for the floor's check (:func:`dpviz.models.forest.sizing.resolve_split`,
:func:`dpviz.models.forest.floor.halved`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.app.preview import SHARED_HINT, structure_preview
from dpviz.evaluation.sweep import split_rungs
from dpviz.models.files.claims import forest_ledger
from dpviz.models.files.load import model_from_json, release
from dpviz.models.forest.floor import record_halves, records_split
from dpviz.models.forest.sizing import (
    SHARED_FROM,
    SPLIT_CHOICES,
    auto_shared_trees,
    resolve_split,
)
from dpviz.models.registry import get_algorithm
from tests.models.test_greedy_floor import SCHEMA, _records


@pytest.mark.parametrize(
    "data_split, trees, epsilon, expected",
    [
        ("auto", "auto", 4.99, "disjoint"),
        ("auto", "auto", SHARED_FROM, "shared"),
        ("auto", "auto", 10.0, "shared"),
        ("auto", 25, 10.0, "disjoint"),  # a tree count set by hand keeps disjoint parts
        ("disjoint", "auto", 10.0, "disjoint"),
        ("shared", "auto", 0.1, "shared"),
    ],
)
def test_auto_shares_the_records_from_epsilon_five_with_auto_trees(
    data_split, trees, epsilon, expected
):
    assert resolve_split(data_split, trees, epsilon) == expected
    model = DPRandomForestClassifier(epsilon=epsilon, n_estimators=trees, data_split=data_split)
    assert model.split_at() == expected


@pytest.mark.parametrize(
    "epsilon, trees",
    [(5.0, 10), (5.01, 12), (7.0, 14), (10.0, 20), (0.5 * 37, 38), (49.9, 100), (1e6, 100)],
)
def test_auto_trees_take_half_an_epsilon_each_in_pairs(epsilon, trees):
    """⌈ε/0.5⌉ rounded up to even, at most 100 (a reference at ε = 10⁶ grew two million
    trees), in exact decimal arithmetic: 5 gives 10 (not 12 from a float quotient of
    10.000000000000002)."""
    assert auto_shared_trees(epsilon) == trees


def test_the_registry_offers_auto_and_bad_values_are_refused():
    """Disjoint stays the default (auto answered below the majority on a weak-signal
    validation set); auto is a choice everywhere the registry's choices are."""
    forest = get_algorithm("fletcher_islam")
    assert forest.defaults()["data_split"] == "disjoint"
    assert SPLIT_CHOICES == ("auto", "disjoint", "shared")
    assert "auto" in next(p for p in forest.parameters if p.name == "data_split").choices
    X, y = _records(200, seed=1)
    with pytest.raises(ValueError, match="data_split must be one of auto, disjoint, shared"):
        DPRandomForestClassifier(schema=SCHEMA, data_split="halves").fit(X, y)


def test_at_epsilon_ten_auto_is_twenty_trees_in_two_halves_and_a_check_on_its_ledger():
    """The released model says what it is: 20 trees, each booked at twice its even share
    of ε on its half of the records, pairs of trees on the two halves in parallel, the
    floor's out-of-bag check (5% of ε, from the prior's share, else the leaves'), and the
    whole ledger sums to ε."""
    X, y = _records(600, seed=2, signal=0.3)
    model = DPRandomForestClassifier(
        epsilon=10.0, data_split="auto", schema=SCHEMA, random_state=0
    ).fit(X, y)
    assert model.data_split_ == "shared" and records_split(model) == "halves"
    assert model.n_estimators_ == 20
    assert model.check_epsilon_ == pytest.approx(0.5)
    assert model.tree_epsilon_ == pytest.approx(model.leaf_epsilon_ / 10)
    leaves = [e for e in model.ledger_.entries if "leaf outputs of tree" in e.query]
    assert len(leaves) == 20
    assert [e.data.split(" of")[0] for e in leaves[:4]] == ["half 1", "half 2"] * 2
    assert all(e.epsilon == pytest.approx(model.tree_epsilon_) for e in leaves)
    pairs = [g for g in model.ledger_.groups if any("leaf outputs" in e.query for e in g)]
    assert len(pairs) == 10 and all(len(g) == 2 for g in pairs)
    assert model.ledger_.epsilon_total == pytest.approx(10.0)
    assert model.floor_outcome().test == "out-of-bag check"
    loaded = model_from_json(release(model).to_json())
    assert loaded.floor_outcome() == model.floor_outcome()
    assert forest_ledger(loaded.meta).epsilon_total == pytest.approx(10.0)


def test_each_record_trains_the_trees_of_its_half_dealt_by_a_hash_of_its_features():
    """Tree t counts the records of half t mod 2, a keyed hash of each record's features
    alone: about half each (binomial: 600 records, p = 1/2, within 4 sd), records with
    the same features in one half whatever their labels, and adding records moves none."""
    X, y = _records(600, seed=12, signal=0.3)
    model = DPRandomForestClassifier(
        epsilon=10.0, data_split="auto", schema=SCHEMA, random_state=3, noise_seed=4
    ).fit(X, y)
    encoded = model._encode_predict(X)
    encoded.y = np.searchsorted(model.classes_, y)
    half = record_halves(model, encoded)
    assert abs(np.count_nonzero(half == 0) - 300) <= 4 * np.sqrt(600 * 0.25)
    for t in range(model.n_estimators_):
        counted = model.leaf_counts_[model.leaf_tree_ == t].sum()
        assert counted == np.count_nonzero(half == t % 2)
    assert model.n_train_records_ == 600
    relabelled = model._encode_predict(X)
    relabelled.y = 1 - encoded.y
    assert np.array_equal(record_halves(model, relabelled), half)
    more_X = np.vstack([X.to_numpy(), _records(300, seed=13)[0].to_numpy()])
    more = model._encode_predict(pd.DataFrame(more_X, columns=X.columns))
    assert np.array_equal(record_halves(model, more)[:600], half)


def test_the_check_reads_every_record_through_the_other_halfs_trees():
    """The out-of-bag votes of a record are those of the trees of the other half: each
    checked record is silent in exactly the trees of its own half."""
    X, y = _records(600, seed=14, signal=0.3)
    model = DPRandomForestClassifier(
        epsilon=10.0, data_split="auto", schema=SCHEMA, random_state=5, noise_seed=6
    ).fit(X, y)
    routed, checked_y = model._check_routes.routes(model)
    assert routed.n_records == len(checked_y) == 600
    encoded = model._encode_predict(X)
    encoded.y = np.searchsorted(model.classes_, y)
    half = record_halves(model, encoded)
    silent = np.asarray(routed.leaf_matrix) == len(routed.leaf_keys)
    expected = np.arange(model.n_estimators_)[:, None] % 2 == half[None, :]
    assert np.array_equal(silent, expected)


def test_below_epsilon_five_auto_is_the_disjoint_forest_bit_for_bit():
    """Nothing changes below ε = 5: the same seeds give the same release and scores."""
    X, y = _records(800, seed=3, signal=0.2)
    X_test, _ = _records(300, seed=4, signal=0.2)
    for epsilon in (0.1, 1.0, 4.99):
        kwargs = {"epsilon": epsilon, "schema": SCHEMA, "random_state": 5, "noise_seed": 6}
        auto = DPRandomForestClassifier(data_split="auto", **kwargs).fit(X, y)
        disjoint = DPRandomForestClassifier(**kwargs).fit(X, y)
        assert auto.data_split_ == "disjoint"
        assert np.array_equal(auto.leaf_noisy_counts_, disjoint.leaf_noisy_counts_)
        assert np.array_equal(auto.predict_proba(X_test), disjoint.predict_proba(X_test))


def test_shared_trees_beat_disjoint_trees_on_a_small_set_at_large_epsilon():
    """Where the records are few and ε large, a disjoint tree's leaves hold a few records
    each; shared trees read them all. 600 records with a clear signal, eight replayable
    noise seeds: auto scores above the disjoint forest in most of them."""
    X, y = _records(600, seed=7, signal=0.3)
    X_test, y_test = _records(2_000, seed=8, signal=0.3)
    wins = 0
    for seed in range(8):
        kwargs = {"epsilon": 10.0, "schema": SCHEMA, "random_state": seed, "noise_seed": seed}
        shared = (
            DPRandomForestClassifier(data_split="auto", **kwargs).fit(X, y).score(X_test, y_test)
        )
        disjoint = DPRandomForestClassifier(**kwargs).fit(X, y).score(X_test, y_test)
        wins += shared > disjoint
    assert wins >= 6


def test_a_model_file_keeps_the_shared_trees_and_their_scores():
    X, y = _records(500, seed=9, signal=0.3)
    X_test, _ = _records(200, seed=10, signal=0.3)
    model = DPRandomForestClassifier(
        epsilon=10.0, data_split="auto", schema=SCHEMA, random_state=1, noise_seed=2
    )
    model.fit(X, y)
    file = release(model)
    assert file.meta["data_split"] == "halves" and file.meta["n_estimators"] == 20
    assert file.meta["floor_trusted"] == model.floor_trusted_
    loaded = model_from_json(file.to_json())
    assert np.array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
    assert np.array_equal(loaded.predict(X_test), model.predict(X_test))


def test_a_sweep_grows_one_structure_per_shared_tree_count():
    """ε below 5 share the disjoint structures (one per split rung and decade); from 5 up
    each tree count is a structure of its own, and a rung's points share it."""
    model = DPRandomForestClassifier(data_split="auto")
    epsilons = [0.5, 1.0, 3.0, 5.0, 5.2, 7.0, 10.0]
    rungs = split_rungs(model, SCHEMA, epsilons)
    assert [5.0] in rungs and [5.2] in rungs and [7.0] in rungs and [10.0] in rungs
    assert [1.0, 3.0] in rungs
    disjoint = split_rungs(DPRandomForestClassifier(), SCHEMA, epsilons)
    assert [1.0, 3.0, 5.0, 5.2, 7.0, 10.0] in disjoint


def test_the_train_preview_says_the_trees_share_the_records():
    auto = {"data_split": "auto"}
    preview = structure_preview(SCHEMA, 5_000, "fletcher_islam", auto, epsilon=10.0)
    assert preview.text.startswith("20 trees (auto, from ε) in two halves of the records")
    below = structure_preview(SCHEMA, 5_000, "fletcher_islam", auto, epsilon=1.0)
    assert below.text.startswith("About ")
    # The disjoint default at large ε points to the choice; below ε = 5 it does not.
    default = structure_preview(SCHEMA, 5_000, "fletcher_islam", {}, epsilon=10.0)
    assert default.text.endswith(SHARED_HINT)
    assert SHARED_HINT not in structure_preview(SCHEMA, 5_000, "fletcher_islam", {}).text
