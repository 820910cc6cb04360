"""The naive Bayes term from the forest's released split tables (dpviz.models.forest.bayes):
its arithmetic, the weight rule, the votes that follow it, the ledger it leaves alone and
the model file that carries the tables."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpviz.models.files import model_from_json, release
from dpviz.models.files.manifest import unaccounted
from dpviz.models.forest import bayes, voting
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.forest.records import normalise_votes
from dpviz.models.forest.splits import SPLIT_BINS, TableLayout
from dpviz.privacy.schema import Feature, Schema
from tests.conftest import MIXED_SCHEMA, mixed_records

TWO = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("size", "continuous", 0.0, 10.0),
        Feature("colour", "discrete", values=("blue", "green", "red")),
    ),
)
DISCRETE = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("colour", "discrete", values=("blue", "green", "red")),
        Feature("shape", "discrete", values=("round", "square")),
    ),
)


def _records(seed: int, n: int, schema: Schema = TWO) -> pd.DataFrame:
    """Two classes: ``yes`` mostly for small sizes or red (public schema ``schema``)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "size": rng.uniform(0, 10, n).round(3),
            "colour": rng.choice(["red", "green", "blue"], n),
            "shape": rng.choice(["round", "square"], n),
        }
    )
    signal = (frame["size"] < 3) | (frame["colour"] == "red")
    flip = rng.random(n) < 0.15
    frame["label"] = np.where(signal ^ flip, "yes", "no")
    return frame[[*schema.feature_names, "label"]]


def _fit(schema: Schema, frame: pd.DataFrame, epsilon: float = 1.0, **params):
    model = DPRandomForestClassifier(
        epsilon=epsilon, schema=schema, random_state=3, noise_seed=5, **params
    )
    return model.fit(frame.drop(columns="label"), frame["label"])


def _tree_proba(model, X) -> np.ndarray:
    """The trees' vote shares alone (predict_proba before the tables' term)."""
    encoded = model._encode_predict(X)
    return normalise_votes(voting._tree_votes(model, encoded))


def _booked(model) -> tuple[set, float]:
    """The ledger's queries and the ε its private groups add up to (a group of
    disjoint parts: its largest)."""
    groups = model.ledger_.to_dict()["groups"]
    queries = {entry["query"] for group in groups for entry in group}
    private = [g for g in groups if all(e["private"] for e in g)]
    return queries, sum(max(e["epsilon"] for e in g) for g in private)


@pytest.fixture(scope="module")
def binary():
    frame = _records(0, 1500)
    model = _fit(TWO, frame.iloc[:1200])
    return model, frame.iloc[1200:].drop(columns="label")


def test_naive_bayes_scores_of_a_tiny_table_by_hand():
    layout = TableLayout(1, (3,))
    rng = np.random.default_rng(7)
    noisy = rng.integers(-20, 60, size=(2, SPLIT_BINS + 3))
    split_eps = 0.5
    pseudo = 1.0 * 2 / split_eps  # one noise scale d/ε_split per cell, d = 2

    def log_p(c, start, stop, cell):
        block = [max(v, 0) + pseudo for v in noisy[c, start:stop]]
        return math.log(block[cell] / sum(block))

    lows, highs = np.array([0.0]), np.array([8.0])  # bins of width 0.5
    continuous = np.array([[1.2], [-3.0], [99.0], [7.99]])
    discrete = np.array([[1], [0], [-1], [2]])
    loglik = bayes.log_likelihoods(noisy, layout, split_eps)
    scores = bayes.table_scores(loglik, continuous, discrete, lows, highs, layout)
    bins, codes = [2, 0, SPLIT_BINS - 1, SPLIT_BINS - 1], [1, 0, None, 2]
    for r in range(4):
        for c in range(2):
            want = log_p(c, 0, SPLIT_BINS, bins[r])
            if codes[r] is not None:  # an unknown value adds nothing
                want += log_p(c, SPLIT_BINS, SPLIT_BINS + 3, codes[r])
            assert scores[r, c] == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_the_weight_is_the_tables_share_of_the_rest_of_the_budget():
    assert bayes.table_weight(1.0, 0.2, 2) == pytest.approx(0.25)
    assert bayes.table_weight(10.0, 0.2, 2) == pytest.approx(0.2 / 9.8)
    assert bayes.table_weight(0.1, 0.01, 2) == pytest.approx(0.01 / 0.09)
    assert bayes.table_weight(1.0, 0.2, 3) == 0.0  # more classes: unchanged
    assert bayes.table_weight(1.0, 0.0, 2) == 0.0  # no tables released
    assert bayes.table_weight(math.inf, 0.2, 2) == 0.0  # a non-private twin


def test_blend_adds_the_weighted_score_to_the_log_votes():
    votes = np.array([[1.0, 0.5], [0.2, 1.0], [1.0, 0.0]])
    scores = np.array([[0.0, 2.0], [1.0, -1.0], [0.0, 5.0]])
    out = bayes.blend_votes(votes.copy(), scores, 0.25)
    log_odds = np.log(votes[:2, 1] / votes[:2, 0]) + 0.25 * (scores[:2, 1] - scores[:2, 0])
    np.testing.assert_allclose(np.log(out[:2, 1] / out[:2, 0]), log_odds, rtol=1e-12)
    assert (out.max(axis=1) == 1.0).all()
    assert out[2, 1] == 0.0  # a vote of 0 stays 0


def test_two_class_votes_add_the_tables_term_and_book_nothing_new(binary):
    model, X = binary
    term = voting.table_term(model)
    assert term is not None and term[1] == pytest.approx(0.25)
    encoded = model._encode_predict(X)
    trees = voting._tree_votes(model, encoded)
    scores = bayes.table_scores(
        term[0],
        encoded.continuous,
        encoded.discrete,
        model.space_.lows,
        model.space_.highs,
        TableLayout.of(TWO),
    )
    want = normalise_votes(bayes.blend_votes(trees, scores, 0.25))
    np.testing.assert_array_equal(model.predict_proba(X), want)
    assert np.abs(model.predict_proba(X) - _tree_proba(model, X)).max() > 0.01
    # The term reads the booked split release only: the ledger is that of the same
    # forest with uniform split points plus the tables' entry, and sums to ε.
    uniform = _fit(TWO, _records(0, 1200), split_points="uniform")
    queries, spent = _booked(model)
    added = queries - _booked(uniform)[0]
    assert len(added) == 1 and "tables of every feature" in added.pop()
    assert spent == pytest.approx(1.0)


def test_without_a_continuous_feature_the_votes_are_the_trees():
    frame = _records(1, 1500, DISCRETE)
    model = _fit(DISCRETE, frame.iloc[:1200])
    X = frame.iloc[1200:].drop(columns="label")
    assert model.splits_ is None and voting.table_term(model) is None
    np.testing.assert_array_equal(model.predict_proba(X), _tree_proba(model, X))


def test_three_classes_keep_the_trees_votes():
    frame = mixed_records(2, 1500)
    model = _fit(MIXED_SCHEMA, frame.iloc[:1200])
    X = frame.iloc[1200:].drop(columns="label")
    assert model.splits_.tables is not None and voting.table_term(model) is None
    np.testing.assert_array_equal(model.predict_proba(X), _tree_proba(model, X))


def test_the_file_lists_the_tables_and_scores_as_the_fit(binary):
    model, X = binary
    doc = json.loads(release(model).to_json())
    assert doc["split_tables"] == model.splits_.tables.tolist()
    assert unaccounted(doc) == []
    loaded = model_from_json(json.dumps(doc))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert (loaded.predict(X) == model.predict(X).astype(str)).all()
    # Without the tables (an edited, unsigned file) it scores the trees alone.
    bare = {k: v for k, v in doc.items() if k not in ("split_tables", "signature")}
    np.testing.assert_array_equal(
        model_from_json(json.dumps(bare)).predict_proba(X), _tree_proba(model, X)
    )
    for wrong in (doc["split_tables"][:1], [row[:-1] for row in doc["split_tables"]], [[0.5]]):
        with pytest.raises(ValueError, match="split_tables"):
            model_from_json(json.dumps({**bare, "split_tables": wrong}))
