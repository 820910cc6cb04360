"""DPBoost's macro_f1 threshold (issue 28): a booked noisy histogram of training scores.

The released counts follow the booked discrete Laplace law at ε_th (a 4ε mutant is
refuted by the exact check every ledger entry uses, ``tests/privacy/test_ledger_entries.py``);
the threshold is post-processing; the ledger and the model file account for the
release; neighbouring files agree on every public field; other objectives and more
classes release nothing new and keep their bytes.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.models.boosting import estimator as boost_estimator
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.boosting.predict import decision_scores, model_codes
from dpviz.models.boosting.threshold import (
    BINS,
    NEVER,
    THRESHOLD_SHARE,
    bin_edges,
    score_range,
    threshold_from_histogram,
)
from dpviz.models.boosting.tree import tree_scores
from dpviz.models.files import load as files
from dpviz.models.files.claims import estimator_ledger
from dpviz.models.files.manifest import public_fields, unaccounted
from dpviz.privacy.noise import SecureGenerator
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.privacy.test_ledger_entries import law_holds, pit_discrete_laplace, spend_more

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=10.0),
        Feature("col", "discrete", values=("r", "g", "b")),
    ),
)


def two_class_frame(
    n: int, seed: int, cut: float = 6.0, above: float = 0.9, below: float = 0.05
) -> pd.DataFrame:
    """``n`` records of SCHEMA, ``yes`` with probability ``above`` where a > ``cut`` and
    ``below`` elsewhere (by default about 39% positives, nearly all where a > 6)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 10, n)
    frame = pd.DataFrame({"a": a, "col": rng.choice(["r", "g", "b"], n)})
    frame["label"] = np.where(rng.random(n) < np.where(a > cut, above, below), "yes", "no")
    return frame


# 7,000 records at ε = 4: the square-loss model with 64 bins (below 6,000 records, or
# below ε = 1, macro_f1 fits one small tree instead: tests/models/test_dpboost_small_f1.py).
FRAME = two_class_frame(7000, 0)
EPSILON = 4.0


def _fit(seed, frame=FRAME, schema=SCHEMA, objective="macro_f1", epsilon=EPSILON, **params):
    model = DPBoostClassifier(
        epsilon=epsilon, schema=schema, noise_seed=seed, objective=objective, **params
    )
    return model.fit(frame.drop(columns="label"), frame["label"])


def _true_histogram(model) -> np.ndarray:
    encoded = encode(FRAME, SCHEMA)
    codes, _ = model_codes(model, encoded)
    raw = tree_scores(model.models_, codes, float(model.learning_rate_))
    q = decision_scores(model.init_score_ + model.tree_weight_ * raw, model.reach_)[:, 1]
    edges = bin_edges(*score_range(model))
    cell = np.clip(np.searchsorted(edges, q, side="right") - 1, 0, BINS - 1)
    counts = np.zeros((BINS, 2), dtype=np.int64)
    np.add.at(counts, (cell, encoded.y), 1)
    return counts


def _transforms(n_fits: int) -> np.ndarray:
    rng = np.random.default_rng(11)
    out = []
    for seed in range(n_fits):
        model = _fit(seed)
        assert model.threshold_counts_ is not None
        (entry,) = [e for e in model.ledger_.entries if "macro_f1 threshold" in e.query]
        z = model.threshold_counts_ - _true_histogram(model)
        out.append(pit_discrete_laplace(z, entry.epsilon, rng))
    return np.concatenate(out)


def spend_four_times_on_the_histogram(monkeypatch) -> None:
    """The 4ε mutant of DPBoost's macro_f1 score histogram: the same ledger, noise at
    4·ε_th (shared with the whole-release audit's mutant test)."""
    spend_more(
        monkeypatch,
        SecureGenerator,
        "discrete_laplace",
        "dpviz.models.boosting.threshold",
        "noisy_score_histogram",
        4.0,
    )


def test_the_released_histogram_follows_the_booked_law():
    """Fixed replayable seeds (noise_seed 0 … 5): 64 bins × 2 classes × 6 fits = 768
    transforms pass the exact uniformity check (false alarm ≤ 10⁻³ over seeds)."""
    assert law_holds(_transforms(6), 700)


def test_a_histogram_at_four_times_the_booked_epsilon_is_refuted(monkeypatch):
    """The 4ε mutant (the same ledger, noise at 4·ε_th): its transforms pile up in the
    middle bins and fail the same check."""
    spend_four_times_on_the_histogram(monkeypatch)
    assert not law_holds(_transforms(6), 700)


def test_the_ledger_books_the_histogram_after_the_trees():
    model = _fit(1)
    rest = EPSILON - model.prior_epsilon_
    queries = [g[0].query for g in model.ledger_.groups]
    assert "macro_f1 threshold" in queries[-1]
    (entry,) = model.ledger_.groups[-1]
    assert entry.epsilon == pytest.approx(THRESHOLD_SHARE * rest)
    assert entry.data == "all records"
    assert model.class_epsilon_ == pytest.approx((1 - THRESHOLD_SHARE) * rest)
    assert _fit(None).ledger_.epsilon_total == pytest.approx(EPSILON)
    assert 0.0 <= model.decision_threshold_ <= NEVER


def test_the_threshold_is_post_processing_of_the_histogram():
    edges = np.linspace(0.0, 1.0, 5)
    # Class 1 only in the top bin: the threshold is that bin's lower edge.
    counts = np.array([[500, 0], [400, 0], [100, 0], [0, 60]])
    assert threshold_from_histogram(counts, edges, 10.0) == pytest.approx(0.75)
    # No class-1 record at all: predicting class 0 everywhere (NEVER).
    assert threshold_from_histogram(counts * [1, 0], edges, 10.0) == NEVER


def _no_threshold(monkeypatch):
    """The estimator without its threshold hook: what the fit was before it."""
    monkeypatch.setattr(boost_estimator, "fit_threshold", lambda *a: None)


@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
def test_other_objectives_keep_their_bytes(monkeypatch, objective):
    with_hook = files.release(_fit(3, objective=objective)).to_json()
    assert "decision_threshold" not in with_hook
    _no_threshold(monkeypatch)
    assert files.release(_fit(3, objective=objective)).to_json() == with_hook


def test_more_classes_keep_their_bytes(monkeypatch):
    schema = Schema("label", ("x", "y", "z"), SCHEMA.features)
    frame = FRAME.assign(label=np.where(FRAME["a"] > 6, "z", np.where(FRAME["a"] > 3, "y", "x")))
    model = _fit(4, frame, schema)
    assert (
        model.decision_threshold_ is None
        and model.ledger_.groups[-1][0].query.find("macro_f1") < 0
    )
    with_hook = files.release(model).to_json()
    _no_threshold(monkeypatch)
    assert files.release(_fit(4, frame, schema)).to_json() == with_hook


def test_a_file_predicts_with_the_threshold():
    model = _fit(2)
    doc = files.release(model).to_json()
    assert json.loads(doc)["decision_threshold"] == model.decision_threshold_
    back = files.ReleasedBoost.from_json(doc)
    assert unaccounted(json.loads(doc)) == []
    X = FRAME.drop(columns="label")
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    # The file's own ledger (rebuilt from its parameters) books the histogram.
    ledger = estimator_ledger(back.meta, back.schema, "boost")
    assert any("macro_f1 threshold" in e.query for e in ledger.entries)


def neighbouring_documents(fit, frame: pd.DataFrame) -> tuple[dict, dict]:
    """The files of ``fit(None, frame)`` and of ``frame`` plus one ``yes`` record (fresh
    secret noise), after checking that every field of both is accounted for and that
    their public fields agree."""
    extra = pd.DataFrame([{"a": 9.5, "col": "g", "label": "yes"}])
    doc = json.loads(files.release(fit(None, frame)).to_json())
    doc1 = json.loads(
        files.release(fit(None, pd.concat([frame, extra], ignore_index=True))).to_json()
    )
    assert unaccounted(doc) == [] and unaccounted(doc1) == []
    assert public_fields(doc) == public_fields(doc1)
    return doc, doc1


def test_neighbouring_files_differ_only_in_released_fields():
    doc, doc1 = neighbouring_documents(_fit, FRAME)
    assert "decision_threshold" in doc and "decision_threshold" in doc1


def test_the_grown_log_loss_model_thresholds_its_probabilities():
    """At ε = 10 with 7,000 records DPBoost grows (log-loss, noisy bin edges): the
    histogram is booked after the trees and the edges, the ledger still sums to ε, and
    its file predicts with the threshold exactly as the estimator does."""
    frame = two_class_frame(7000, 3)
    model = _fit(4, frame=frame, epsilon=10.0)
    assert model.loss_ == "logistic" and model.decision_threshold_ is not None
    assert "macro_f1 threshold" in model.ledger_.groups[-1][0].query
    rest = 10.0 - model.prior_epsilon_ - model.edge_epsilon_
    assert model.ledger_.groups[-1][0].epsilon == pytest.approx(THRESHOLD_SHARE * rest)
    # A replayable noise seed voids the total; a fresh-noise fit books exactly ε.
    assert _fit(None, frame=frame, epsilon=10.0).ledger_.epsilon_total == pytest.approx(10.0)
    doc = files.release(model).to_json()
    assert unaccounted(json.loads(doc)) == []
    back = files.ReleasedBoost.from_json(doc)
    X = frame.drop(columns="label")
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    # On the probability scale of the log-loss: a cut strictly inside (0, 1).
    assert 0.0 < model.decision_threshold_ < 1.0
