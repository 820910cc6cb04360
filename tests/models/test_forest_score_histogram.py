"""The default forest's macro_f1 threshold from ε = 1 up (issue 28): a booked noisy
histogram of the checked records' out-of-bag scores.

The released counts follow the booked discrete Laplace law (a 4ε mutant is refuted by
the exact check of ``tests/privacy/test_ledger_entries.py``); the ledger, the model file
and the release manifest account for the release; the threshold is post-processing of it
and the released prior; other objectives, more classes and ε below 1 release nothing new.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import f1_score

from dpviz.models.files import load as files
from dpviz.models.files.claims import forest_ledger
from dpviz.models.files.manifest import public_fields, unaccounted
from dpviz.models.forest import release, score_histogram
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.forest.records import normalise_votes
from dpviz.models.trees.threshold import NEVER
from dpviz.privacy.noise import SecureGenerator
from dpviz.privacy.schema import Feature, Schema
from tests.privacy.test_ledger_entries import law_holds, pit_discrete_laplace, spend_more

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=10.0),
        Feature("col", "discrete", values=("r", "g", "b")),
    ),
)
HISTOGRAM = "noisy histogram of the checked records' out-of-bag scores"


def imbalanced_frame(n: int, seed: int, signal: bool = True) -> pd.DataFrame:
    """``n`` records of SCHEMA, about 8% ``yes``: 25% where a > 8, 3% elsewhere (or 8%
    everywhere without ``signal``)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 10, n)
    rate = np.where(a > 8, 0.25, 0.0375) if signal else np.full(n, 0.08)
    frame = pd.DataFrame({"a": a, "col": rng.choice(["r", "g", "b"], n)})
    frame["label"] = np.where(rng.random(n) < rate, "yes", "no")
    return frame


FRAME = imbalanced_frame(3000, 0)
# 8,000 records: enough for the accuracy objective's histogram at ε = 1 (its own tests:
# tests/models/test_forest_accuracy_cut.py).
BIG = imbalanced_frame(8000, 5)


def _fit(seed, frame=FRAME, schema=SCHEMA, objective="macro_f1", epsilon=1.0, **params):
    model = DPRandomForestClassifier(
        epsilon=epsilon,
        schema=schema,
        random_state=0,
        noise_seed=seed,
        objective=objective,
        **params,
    )
    return model.fit(frame.drop(columns="label"), frame["label"])


def _true_histogram(model) -> np.ndarray:
    """The TRUE counts the model's histogram released with noise (per class for the
    accuracy objective)."""
    routed, y = model._check_routes.routes(model)
    scores = normalise_votes(model.votes(routed))[:, 1]
    if score_histogram.by_class(model):
        return score_histogram.true_class_histogram(scores, y, model.threshold_edges_)
    return score_histogram.true_histogram(scores, model.threshold_edges_)


def law_transforms(fit, n_fits: int, rng_seed: int) -> np.ndarray:
    """The released counts' noise of ``fit(seed)`` for seeds 0 … n_fits − 1, through the
    exact discrete Laplace PIT at the booked ε."""
    rng = np.random.default_rng(rng_seed)
    out = []
    for seed in range(n_fits):
        model = fit(seed)
        (entry,) = [e for e in model.ledger_.entries if e.query.startswith(HISTOGRAM)]
        z = model.threshold_counts_ - _true_histogram(model)
        out.append(pit_discrete_laplace(z.ravel(), entry.epsilon, rng))
    return np.concatenate(out)


def _transforms(n_fits: int) -> np.ndarray:
    return law_transforms(_fit, n_fits, 7)


def test_the_released_histogram_follows_the_booked_law():
    """Fixed replayable seeds (noise_seed 0 … 9): at least 300 cell counts pass the exact
    uniformity check (false alarm ≤ 10⁻³ over seeds)."""
    assert law_holds(_transforms(10), 300)


def spend_four_times_on_the_forest_histogram(monkeypatch) -> None:
    """The 4ε mutant of the forest's score histograms (macro_f1's and the accuracy cut's):
    the same ledger, noise at 4·ε_h (shared with the whole-release audit's mutant
    tests)."""
    spend_more(
        monkeypatch,
        SecureGenerator,
        "discrete_laplace",
        "dpviz.models.forest.score_histogram",
        "release_histogram",
        4.0,
    )


def test_a_histogram_at_four_times_the_booked_epsilon_is_refuted(monkeypatch):
    """The 4ε mutant (the same ledger, noise at 4·ε_h) fails the same check."""
    spend_four_times_on_the_forest_histogram(monkeypatch)
    assert not law_holds(_transforms(10), 300)


def assert_booked_from_the_leaves(model) -> None:
    """One ledger entry of 5% of ε (1) for the histogram, on all records, taken from the
    leaves: the ledger still totals ε."""
    (entry,) = [e for e in model.ledger_.entries if e.query.startswith(HISTOGRAM)]
    assert entry.epsilon == model.threshold_epsilon_ == score_histogram.SHARE * 1.0
    assert entry.data == "all records"
    assert model.ledger_.epsilon_total == pytest.approx(1.0)
    spent = (
        model.depth_count_epsilon_
        + model.split_epsilon_
        + model.prior_epsilon_
        + model.check_epsilon_
        + model.threshold_epsilon_
    )
    assert model.leaf_epsilon_ == pytest.approx(1.0 - spent)


def test_the_ledger_books_the_histogram_from_the_leaves():
    model = _fit(None)
    assert_booked_from_the_leaves(model)
    assert 0.0 <= model.decision_threshold_ <= 1.0


@pytest.mark.parametrize(
    "objective, epsilon", [("accuracy", 0.5), ("balanced_accuracy", 2.0), ("macro_f1", 0.5)]
)
def test_nothing_is_booked_where_the_rule_does_not_apply(objective, epsilon):
    """balanced_accuracy, and below ε = 1 (no check; macro_f1 reads the leaves' rule).
    The accuracy objective's histogram from ε = 1: tests/models/test_forest_accuracy_cut.py."""
    model = _fit(1, objective=objective, epsilon=epsilon)
    assert model.threshold_epsilon_ == 0.0 and model.threshold_counts_ is None
    assert not any(e.query.startswith(HISTOGRAM) for e in model.ledger_.entries)
    doc = json.loads(files.release(model).to_json())
    assert "threshold_epsilon" not in doc


@pytest.mark.parametrize("objective", ["macro_f1", "accuracy"])
def test_more_classes_book_nothing(objective):
    """Three classes on 8,000 records (enough for the accuracy cut's histogram on two)."""
    schema = Schema("label", ("x", "y", "z"), SCHEMA.features)
    frame = BIG.assign(label=np.where(BIG["a"] > 6, "z", np.where(BIG["a"] > 3, "y", "x")))
    model = _fit(2, frame, schema, objective=objective)
    assert model.threshold_epsilon_ == 0.0 and model.decision_threshold_ is None


def test_the_threshold_is_post_processing_of_the_histogram_and_the_prior():
    edges = np.array([0.1, 0.2, 0.3])
    counts = np.array([500.0, 300.0, 150.0, 50.0])  # 1,000 records: 5% in the top cell
    # Class 1's share 0.04: 1.25·0.04 = 5% of the records, the top cell (from 0.3).
    assert score_histogram.histogram_threshold(counts, edges, 0.04) == pytest.approx(0.3)
    # 0.16: 20%, the top two cells (from 0.2); negative noisy counts count as 0.
    assert score_histogram.histogram_threshold(counts, edges, 0.16) == pytest.approx(0.2)
    noisy = counts + np.array([0.0, 0.0, 0.0, -60.0])
    assert score_histogram.histogram_threshold(noisy, edges, 0.01) == pytest.approx(0.3)
    # No class 1 in the prior, or no record at all: class 0 everywhere.
    assert score_histogram.histogram_threshold(counts, edges, 0.0) == NEVER
    assert score_histogram.histogram_threshold(-counts, edges, 0.1) == NEVER
    # Class 1 the majority (96%): class 0, the rarer, gets 1.25·4% = 5% of the records,
    # the bottom cell is 50%, so class 1 from 0 (everyone) is the closest cut here...
    assert score_histogram.target_share(0.96) == pytest.approx(0.95)
    assert score_histogram.histogram_threshold(counts, edges, 0.96) == pytest.approx(0.0)
    # ... and with a bottom cell of 5%, class 1 from its upper edge (0.1).
    low = np.array([50.0, 300.0, 400.0, 250.0])
    assert score_histogram.histogram_threshold(low, edges, 0.96) == pytest.approx(0.1)


def test_the_cells_follow_the_weighted_synthetic_scores():
    scores = np.linspace(0.0, 1.0, 1001)
    edges = score_histogram.cell_edges(scores, np.ones(1001), 0.1)
    # Deciles of an even spread, and the finer levels below the top 10%: 1 − 0.1·m.
    assert np.all(np.diff(edges) > 0) and len(edges) <= score_histogram.BINS - 1 + 9
    for m in score_histogram.TAIL:
        assert np.min(np.abs(edges - (1 - 0.1 * m))) <= 1e-3
    # A class of weight 0 moves no edge: the upper half weighs nothing here.
    half = score_histogram.cell_edges(scores, (scores <= 0.5).astype(float), 0.1)
    assert half.max() <= 0.5 + 1e-9


def test_without_signal_the_rule_answers_about_the_rare_share():
    """Fixed replayable seeds 0–5, 3,000 training records of 8% ``yes`` without signal,
    3,000 test records: the rule answers ``yes`` for 0.39–1.71 times its share here, and
    macro-F1 is above the majority's in every seed (a ranking no better than chance at
    8%: about 0.50 against 0.479). The leaves' rule (the histogram switched off) answered
    ``yes`` for no test record in one of these seeds and 0.19–0.29 times its share in
    two."""
    train, test = imbalanced_frame(3000, 1, signal=False), imbalanced_frame(3000, 2, False)
    X, y = test.drop(columns="label"), test["label"].to_numpy()
    majority = f1_score(y, np.full(len(y), "no"), average="macro")
    shares, gains = [], []
    for seed in range(6):
        model = _fit(seed, train)
        pred = model.predict(X)
        shares.append(np.mean(pred == "yes") / np.mean(y == "yes"))
        gains.append(f1_score(y, pred, average="macro") - majority)
    assert all(0.25 <= s <= 2.5 for s in shares), shares
    assert all(g > 0 for g in gains), gains


def assert_file_cuts_as_the_model(model, X) -> files.ReleasedForest:
    """The model's file: its threshold and histogram ε stored, every field accounted
    for, the same predictions on ``X``, the histogram in its ledger. Returns the file."""
    doc = files.release(model).to_json()
    meta = json.loads(doc)
    assert meta["decision_threshold"] == model.decision_threshold_
    assert meta["threshold_epsilon"] == model.threshold_epsilon_
    assert unaccounted(meta) == []
    back = files.ReleasedForest.from_json(doc)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    ledger = forest_ledger(back.meta)
    assert any(e.query.startswith(HISTOGRAM) for e in ledger.entries)
    assert ledger.epsilon_total == pytest.approx(model.ledger_.epsilon_total)
    return back


def test_a_file_predicts_with_the_threshold_and_books_the_histogram():
    assert_file_cuts_as_the_model(_fit(3), FRAME.drop(columns="label"))


@pytest.mark.parametrize("objective, frame", [("macro_f1", FRAME), ("accuracy", BIG)])
def test_neighbouring_files_agree_on_every_public_field(objective, frame):
    extra = pd.DataFrame([{"a": 9.5, "col": "g", "label": "yes"}])
    doc = json.loads(files.release(_fit(None, frame, objective=objective)).to_json())
    bigger = pd.concat([frame, extra], ignore_index=True)
    doc1 = json.loads(files.release(_fit(None, bigger, objective=objective)).to_json())
    assert "threshold_epsilon" in doc
    assert unaccounted(doc) == [] and unaccounted(doc1) == []
    assert public_fields(doc) == public_fields(doc1)
    assert doc["threshold_epsilon"] == doc1["threshold_epsilon"]


def test_a_relabel_books_a_histogram_of_its_own():
    model = _fit(4)
    first = model.threshold_counts_
    release.relabel(model, 2.0)
    assert model.threshold_counts_ is not first
    entries = [e for e in model.ledger_.entries if e.query.startswith(HISTOGRAM)]
    assert [e.epsilon for e in entries] == [pytest.approx(0.1)]
    # The earlier release (leaves, prior, check and histogram at ε = 1) is booked whole.
    (earlier,) = [e for e in model.ledger_.entries if e.query.startswith("earlier release 1")]
    assert earlier.epsilon == pytest.approx(
        1.0 - model.depth_count_epsilon_ - model.split_epsilon_
    )
