"""The greedy trees' bins at noisy quantiles (``split_points="quantile"``, issue 28).

From ε = 1 on a schema with a continuous feature, 5% of ε buys a noisy histogram of each
continuous feature (the release DPBoost's grown model makes, :mod:`dpviz.models.trees.edges`)
and the tree cuts that feature at the quantiles it shows; the rest of ε is the tree's. The
law of the counts and a 4ε mutant are checked in ``tests/privacy/test_ledger_entries.py``
(entry kind "edges"); here: the budget, the bins, the model file and what two neighbouring
files show.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.models import files
from dpviz.models.files.manifest import public_fields, unaccounted
from dpviz.models.greedy.budget import QUANTILE_FROM, edge_epsilon
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.edges import EDGE_CELLS
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("col", "discrete", values=("r", "g", "b")),
    ),
)
DISCRETE = Schema("label", ("no", "yes"), (SCHEMA.features[1],))


def _frame(n: int, seed: int) -> pd.DataFrame:
    """``a`` skewed into the lowest tenth of its public domain; the label is a > 4 (10%
    flipped): eight equal-width bins put almost every record in the first."""
    rng = np.random.default_rng(seed)
    a = np.minimum(rng.exponential(5.0, n), 100.0)
    label = np.where((a > 4) ^ (rng.random(n) < 0.1), "yes", "no")
    return pd.DataFrame({"a": a, "col": rng.choice(["r", "g", "b"], n), "label": label})


FRAME = _frame(3000, 0)
X, Y = FRAME.drop(columns="label"), FRAME["label"]


def _fit(epsilon: float, seed: int | None = 1, frame=FRAME, **params):
    model = DPDecisionTreeClassifier(epsilon=epsilon, schema=SCHEMA, noise_seed=seed, **params)
    return model.fit(frame.drop(columns="label"), frame["label"])


@pytest.mark.parametrize("steps", [1, 2])
def test_from_epsilon_1_the_histograms_are_booked_first_and_the_tree_gets_the_rest(steps):
    model = _fit(2.0, None, steps=steps)  # secret noise: the ledger states its total
    assert model.edge_epsilon_ == pytest.approx(0.1)
    queries = [g[0].query for g in model.ledger_.groups]
    at = next(i for i, q in enumerate(queries) if q.startswith("noisy histograms"))
    assert at < next(i for i, q in enumerate(queries) if q.startswith("noisy class counts"))
    assert model.ledger_.groups[at][0].epsilon == pytest.approx(0.1)
    assert model.ledger_.epsilon_total == pytest.approx(2.0)
    assert model.budget_.epsilon == pytest.approx(1.9)
    assert model.budget_.root == pytest.approx(0.19)
    assert model.edge_counts_.shape == (1, EDGE_CELLS)
    assert model.bin_edges_.shape == (1, model.n_bins - 1)
    # The edges follow the skew: the records' low cells get most of them.
    assert np.sum(model.bin_edges_[0] <= EDGE_CELLS // 10) >= 5


def test_below_epsilon_1_uniform_and_all_discrete_data_spend_nothing_on_edges():
    for model in (
        _fit(QUANTILE_FROM * 0.99),
        _fit(5.0, split_points="uniform"),
        DPDecisionTreeClassifier(epsilon=5.0, schema=DISCRETE, noise_seed=1).fit(X[["col"]], Y),
    ):
        assert model.edge_epsilon_ == 0 and model.bin_edges_ is None
        assert model.edge_counts_ is None
        assert not any(g[0].query.startswith("noisy histograms") for g in model.ledger_.groups)
    assert edge_epsilon(1.0, "quantile", 1) == 0.05
    assert edge_epsilon(1.0, "quantile", 0) == edge_epsilon(1.0, "uniform", 3) == 0.0


def test_a_skewed_feature_is_cut_where_its_records_are():
    """With equal widths all but a few records share a's first bin and the tree cannot
    see a > 4; at the noisy quantiles it can (replayable seeds, the same for both)."""
    test = _frame(3000, 1)
    for seed in range(3):
        quantile = _fit(5.0, seed)
        uniform = _fit(5.0, seed, split_points="uniform")
        acc_q = np.mean(quantile.predict(test.drop(columns="label")) == test["label"])
        acc_u = np.mean(uniform.predict(test.drop(columns="label")) == test["label"])
        assert acc_q > 0.85 > acc_u


def test_the_registry_default_is_quantile_and_bad_values_are_refused():
    for name in ("friedman_schuster", "dpea"):
        assert get_algorithm(name).defaults()["split_points"] == "quantile"
    with pytest.raises(ValueError, match="split_points must be one of"):
        DPDecisionTreeClassifier(split_points="median", schema=SCHEMA).fit(X, Y)


def test_a_file_replays_the_edges_and_refuses_edges_its_parameters_do_not_book():
    model = _fit(5.0, None)
    text = files.release(model).to_json()
    doc = json.loads(text)
    assert doc["edge_cells"] == EDGE_CELLS and len(doc["bin_edges"]) == 1
    back = files.ReleasedTree.from_json(text)
    assert unaccounted(doc) == []
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))
    assert "Noisy histograms of the 1 continuous feature" in back.meta["privacy"]["summary"]
    # Edges without their booked histograms, or booked histograms without edges.
    uniform = {**doc, "params": {**doc["params"], "split_points": "uniform"}}
    without = {k: v for k, v in doc.items() if k not in ("bin_edges", "edge_cells")}
    for broken in (uniform, without):
        with pytest.raises(ValueError, match="bin_edges"):
            files.ReleasedTree.from_document(broken)
    with pytest.raises(ValueError, match="bin_edges"):
        files.ReleasedTree.from_document({**doc, "bin_edges": [[3, 2, 1, 4, 5, 6, 7]]})


def test_a_file_written_before_split_points_reads_as_equal_widths():
    """Older tree files have no ``split_points``: their ledger books no histograms."""
    model = _fit(5.0, None, split_points="uniform")
    doc = json.loads(files.release(model).to_json())
    del doc["params"]["split_points"]
    back = files.ReleasedTree.from_document(doc)
    assert back.meta["privacy"]["epsilon_total"] == pytest.approx(5.0)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_neighbouring_files_differ_only_in_released_fields():
    """Files fitted on D and on D plus one record (fresh secret noise, the same public
    schema and settings) agree on every field the manifest calls public, and both list
    their edges."""
    extra = pd.DataFrame([{"a": 50.0, "col": "g", "label": "yes"}])
    doc = json.loads(files.release(_fit(5.0, None)).to_json())
    doc1 = json.loads(
        files.release(_fit(5.0, None, pd.concat([FRAME, extra], ignore_index=True))).to_json()
    )
    assert unaccounted(doc) == [] and unaccounted(doc1) == []
    assert public_fields(doc) == public_fields(doc1)
    assert "bin_edges" in doc and "bin_edges" in doc1
