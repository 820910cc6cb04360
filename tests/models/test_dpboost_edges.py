"""DPBoost's bin edges from noisy quantiles (issue 28): the grown model's one new release.

The released cell counts follow the booked discrete Laplace law at ε_q/s per count (a
4ε mutant is refuted by the same exact check as every ledger entry,
``tests/privacy/test_ledger_entries.py``); the edges and codes are post-processing;
the ledger and the model file account for the release; two files fitted on
neighbouring data agree on every public field; models that do not grow release
nothing new.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.files import load as files
from dpviz.models.files.manifest import public_fields, unaccounted
from dpviz.models.trees.edges import (
    EDGE_CELLS,
    EDGE_SHARE,
    edge_cells,
    edge_codes,
    edge_values,
    edges_from_counts,
)
from dpviz.models.trees.features import bin_codes
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.privacy.test_ledger_entries import EDGES, law_holds, pit_discrete_laplace

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("b", "continuous", low=0.0, high=100.0),
        Feature("c", "continuous", low=-5.0, high=5.0),
        Feature("col", "discrete", values=("r", "g", "b")),
    ),
)
ROWS = 6500  # above the 6,000 records the grown model needs


def _frame(n: int, seed: int) -> pd.DataFrame:
    """Skewed continuous features (most records in the lowest tenth of a and b), a
    label that follows a."""
    rng = np.random.default_rng(seed)
    a = np.minimum(rng.exponential(5.0, n), 100.0)
    frame = pd.DataFrame(
        {
            "a": a,
            "b": np.minimum(rng.exponential(2.0, n), 100.0),
            "c": rng.uniform(-5, 5, n),
            "col": rng.choice(["r", "g", "b"], n),
        }
    )
    frame["label"] = np.where((a > 4) ^ (rng.random(n) < 0.1), "yes", "no")
    return frame


FRAME = _frame(ROWS, 0)
X, Y = FRAME.drop(columns="label"), FRAME["label"]


def _fit(seed: int | None, frame: pd.DataFrame = FRAME, **params) -> DPBoostClassifier:
    model = DPBoostClassifier(epsilon=10.0, schema=SCHEMA, noise_seed=seed, **params)
    return model.fit(frame.drop(columns="label"), frame["label"])


def _transforms(n_fits: int) -> np.ndarray:
    """The released − true cell counts of ``n_fits`` fits (noise seeds 0, 1, …) as
    randomised probability integral transforms under the booked law."""
    rng = np.random.default_rng(7)
    true = None
    out = []
    for seed in range(n_fits):
        model = _fit(seed)
        assert model.grown_
        (entry,) = [e for e in model.ledger_.entries if e.query.startswith("noisy histograms")]
        s = len(SCHEMA.continuous)
        if true is None:
            cells = edge_cells(encode(FRAME, SCHEMA), SCHEMA)
            true = np.stack([np.bincount(cells[:, j], minlength=EDGE_CELLS) for j in range(s)])
        out.append(pit_discrete_laplace(model.edge_counts_ - true, entry.epsilon / s, rng))
    return np.concatenate(out)


def test_the_released_counts_follow_the_booked_law():
    """Fixed replayable seeds (noise_seed 0, 1): 3 features × 128 cells × 2 fits = 768
    transforms pass the exact uniformity check (false alarm ≤ 10⁻³ over seeds)."""
    assert law_holds(_transforms(2), 700)


def test_counts_at_four_times_the_booked_epsilon_are_refuted(monkeypatch):
    """The 4ε mutant (the same ledger, noise at 4·ε_q/s): its transforms pile up in
    the middle bins and fail the same check."""
    EDGES(4.0)(monkeypatch)
    assert not law_holds(_transforms(2), 700)


def test_the_ledger_books_the_histograms_before_the_trees():
    model = _fit(1)
    assert model.edge_epsilon_ == pytest.approx(EDGE_SHARE * 10.0)
    queries = [g[0].query for g in model.ledger_.groups]
    at = next(i for i, q in enumerate(queries) if q.startswith("noisy histograms"))
    # after the prior (which decides the growth), before the first ensemble
    assert queries[at - 1].startswith("noisy class histogram")
    assert queries[at + 1].startswith("tree 1 of ensemble 1")
    (entry,) = model.ledger_.groups[at]
    assert entry.query.startswith("noisy histograms of the 3 continuous features")
    assert entry.epsilon == pytest.approx(0.5) and entry.data == "all records"
    # replayable noise books ε = ∞; the private entries total ε
    assert sum(e.epsilon for e in model.ledger_.entries if e.private and e.data == "all records")
    assert _fit(None).ledger_.epsilon_total == pytest.approx(10.0)
    assert model.tree_epsilon_ == pytest.approx((10.0 - 1.0 - 0.5) / 2)
    # The edges follow the skew: most of a's and b's bins lie in the lowest cells.
    assert model.bin_edges_.shape == (3, 31)
    # (Each cell of the dense low range gets at most one edge: no edge spent twice.)
    assert np.sum(model.bin_edges_[0] < EDGE_CELLS / 5) >= 20
    low = model.bin_edges_[0][model.bin_edges_[0] < EDGE_CELLS / 5]
    assert len(np.unique(low)) == len(low)
    assert np.all(np.diff(model.bin_edges_, axis=1) >= 0)


def test_models_that_do_not_grow_release_no_edges():
    small = DPBoostClassifier(epsilon=10.0, schema=SCHEMA, noise_seed=1).fit(X[:3000], Y[:3000])
    for model in (small, _fit(1, preset="paper"), _fit(1, max_depth=4)):
        assert model.bin_edges_ is None and model.edge_epsilon_ == 0
        assert not any(e.query.startswith("noisy histograms") for e in model.ledger_.entries)
        doc = files.release(model).to_json()
        assert "bin_edges" not in doc and "edge_cells" not in doc
    # Without a continuous feature there is nothing to cut and nothing is spent.
    discrete = Schema("label", ("no", "yes"), (SCHEMA.features[3],))
    frame = FRAME[["col", "label"]]
    model = DPBoostClassifier(epsilon=10.0, schema=discrete, noise_seed=1)
    model.fit(frame[["col"]], frame["label"])
    assert model.grown_ and model.bin_edges_ is None and model.edge_epsilon_ == 0


def test_edges_are_post_processing_of_the_counts():
    # Uniform counts: equal widths; 32 bins of 128 cells cut at every 4th cell, the same
    # codes as the public equal-width bins.
    edges = edges_from_counts(np.full((1, EDGE_CELLS), 50), 32)
    np.testing.assert_array_equal(edges[0], np.arange(4, EDGE_CELLS, 4))
    encoded = encode(FRAME, SCHEMA)
    three = np.repeat(edges, 3, axis=0)
    np.testing.assert_array_equal(
        edge_codes(encoded, SCHEMA, three)[0], bin_codes(encoded, SCHEMA, 32)[0]
    )
    # All mass in one cell: that cell alone in a bin, the bins above it empty; no mass
    # (noise ≤ 0 everywhere): equal widths.
    spike = np.zeros((2, EDGE_CELLS), dtype=np.int64)
    spike[0, 10] = 1000
    spike[1] = -3
    edges = edges_from_counts(spike, 4)
    np.testing.assert_array_equal(edges, [[10, 11, EDGE_CELLS], [32, 64, 96]])
    values = edge_values(SCHEMA, edges)
    np.testing.assert_allclose(values[0], [0.0, 10 * 100 / 128, 11 * 100 / 128, 100, 100])


def test_a_point_mass_gets_one_bin_and_the_rest_is_cut_at_equal_shares():
    # Adult's capital gain: most records at 0 (cell 0), the rest spread over cells 1..127.
    # Before, every quantile edge up to the point mass's share landed on cell 1 (3 distinct
    # edges of 31); now cell 0 is one bin and the other 30 cut the rest's mass equally.
    counts = np.zeros((1, EDGE_CELLS))
    counts[0, 0] = 9000
    counts[0, 1:] = 10
    edges = edges_from_counts(counts, 32)[0]
    assert edges[0] == 1 and len(np.unique(edges)) == 31
    assert np.all(np.diff(edges) > 0)
    # The rest (1,270 in cells 1..127) at equal shares: bin b ≥ 1 holds 127/31 cells.
    widths = np.diff(np.concatenate([edges, [EDGE_CELLS]]))
    assert widths.min() >= 4 and widths.max() <= 5
    # Two point masses and a thin rest: each mass alone, never more than n_bins − 1 edges.
    counts = np.zeros((1, EDGE_CELLS))
    counts[0, [5, 90]] = [5000, 4000]
    counts[0, 100:] = 1
    edges = edges_from_counts(counts, 4)[0]
    np.testing.assert_array_equal(edges, [5, 6, 90])


def test_a_file_replays_the_edges_and_refuses_bad_ones():
    model = _fit(2)
    doc = files.release(model).to_json()
    back = files.ReleasedBoost.from_json(doc)
    assert unaccounted(back_document(doc)) == []
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))
    assert (
        "noisy histograms of the 3 continuous features" in back.meta["privacy"]["summary"].lower()
    )
    for bad in ([[1, 2]] * 3, [list(range(31, 0, -1))] * 3, [[0] * 31] * 3, "x"):
        broken = {**back_document(doc), "bin_edges": bad}
        with pytest.raises(ValueError, match="bin_edges"):
            files.ReleasedBoost.from_document(broken)
    with pytest.raises(ValueError, match="edge_cells"):
        files.ReleasedBoost.from_document({**back_document(doc), "edge_cells": 64})


def back_document(text: str) -> dict:
    import json

    return json.loads(text)


def test_neighbouring_files_differ_only_in_released_fields():
    """A model file fitted on D and one on D plus one record (fresh secret noise, the
    same public schema and settings) agree on every field the manifest calls public."""
    extra = pd.DataFrame([{"a": 50.0, "b": 99.0, "c": 0.0, "col": "g", "label": "yes"}])
    d = files.release(_fit(None)).to_json()
    d1 = files.release(_fit(None, pd.concat([FRAME, extra], ignore_index=True))).to_json()
    doc, doc1 = back_document(d), back_document(d1)
    assert unaccounted(doc) == [] and unaccounted(doc1) == []
    assert public_fields(doc) == public_fields(doc1)
    assert "bin_edges" in doc and "bin_edges" in doc1


def test_the_tree_view_labels_splits_at_the_released_edges():
    """The Model page's tree table names a continuous split by its released edge (a
    record goes right when its code is above the threshold, i.e. its cell is at or
    past the next bin's first cell)."""
    from dpviz.figures.tree_layout import boost_nodes, threshold_text

    model = _fit(3)
    spec = model.models_[0][0]
    f, t = int(spec["feature"][0][0]), int(spec["threshold"][0][0])
    nodes = boost_nodes(model, 0, 0)
    if f < len(SCHEMA.continuous):
        value = edge_values(SCHEMA, model.bin_edges_)[f][t + 1]
        assert nodes.loc[2, "edge"] == f"{SCHEMA.continuous[f].name} ≥ {threshold_text(value)}"
    # Every continuous split of the tree is labelled at a released edge.
    labels = " ".join(nodes["edge"])
    for level_f, level_t in zip(spec["feature"], spec["threshold"]):
        for f, t in zip(level_f, level_t):
            if f < len(SCHEMA.continuous):
                value = edge_values(SCHEMA, model.bin_edges_)[f][t + 1]
                assert threshold_text(value) in labels
