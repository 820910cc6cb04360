"""The greedy trees under ``objective="macro_f1"`` on two classes (issue 28): one level
of splits where the "auto" rule gives none (the root untested), tied leaves ordered where
the threshold would answer the majority; every release keeps its booked law, and other
objectives fit main's model."""

import hashlib

import numpy as np
import pandas as pd
import pytest

from dpviz.models.files.load import model_from_json, release
from dpviz.models.greedy import grow as greedy_grow
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier, bin_codes
from dpviz.models.greedy.leaves import TIE_STEP, order_ties
from dpviz.models.greedy.score import gini_weight, score_sensitivity
from dpviz.models.greedy.select import enumerate_subtrees
from dpviz.models.greedy.stopping import forced_split, macro_f1_depth
from dpviz.models.trees.threshold import NEVER
from dpviz.privacy.noise import SecureGenerator
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.privacy.test_ledger_entries import (
    _scaled_argument,
    law_holds,
    pit_choice,
    pit_discrete_laplace,
    spend_more,
)

FEATURES = (
    Feature("x", "continuous", low=0.0, high=10.0),
    Feature("col", "discrete", values=("a", "b", "c")),
)
BINARY = Schema("label", ("no", "yes"), FEATURES)
THREE = Schema("label", ("a", "b", "c"), FEATURES)


def _frame(n: int, classes, seed: int, follow: float = 0.5) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` records: a share ``follow`` labelled by x > 7 (last class) or not (first),
    the rest mostly the first class."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 10, n)
    col = rng.choice(["a", "b", "c"], n)
    rest = [0.8] + [0.2 / (len(classes) - 1)] * (len(classes) - 1)
    y = np.where(
        rng.random(n) < follow,
        np.where(x > 7, classes[-1], classes[0]),
        rng.choice(classes, n, p=rest),
    )
    return pd.DataFrame({"x": x, "col": col}), y


def _fit(X, y, schema, objective, epsilon, steps=1, seed=None):
    return DPDecisionTreeClassifier(
        epsilon=epsilon, steps=steps, schema=schema, objective=objective, noise_seed=seed
    ).fit(X, y)


def test_the_floor_follows_the_public_objective_and_class_count():
    assert macro_f1_depth("macro_f1", 2) == 1
    assert macro_f1_depth("macro_f1", 3) == 0
    assert macro_f1_depth("accuracy", 2) == macro_f1_depth("balanced_accuracy", 2) == 0


@pytest.mark.parametrize("steps", [1, 2])
def test_macro_f1_splits_where_the_accuracy_tree_has_none(steps):
    """80 records at ε = 0.1: the "auto" depth is 0 and the accuracy tree answers one
    class; under macro_f1 the root splits (its stopping test is skipped), the ledger
    books that depth's budget, which sums to ε, and both classes are predicted."""
    X, y = _frame(80, ("no", "yes"), 1)
    flat = _fit(X, y, BINARY, "accuracy", 0.1, steps)
    assert flat.depth_ == 0 and flat.feature_[0] < 0
    for seed in range(5):
        tree = _fit(X, y, BINARY, "macro_f1", 0.1, steps, seed)
        assert tree.depth_ == 1 and tree.feature_[0] >= 0
        assert len(tree.leaf_nodes_) == int(tree.n_values_[tree.feature_[0]])
    secret = _fit(X, y, BINARY, "macro_f1", 0.1, steps)
    assert secret.ledger_.private
    assert secret.ledger_.epsilon_total == pytest.approx(0.1)
    assert not any("without splits" in e.query for e in secret.ledger_.entries)
    # Some fit of these answers "yes" somewhere (the threshold found a leaf for it).
    answers = {
        a for seed in range(5) for a in _fit(X, y, BINARY, "macro_f1", 0.1, steps, seed).predict(X)
    }
    assert answers == {"no", "yes"}


def test_a_split_is_forced_only_where_the_rule_gives_none():
    n_values = np.array([8, 3])
    assert not forced_split(0, 0, None, n_values, 0.1, 1, "noisy_count")
    assert forced_split(1, 0, np.array([40, 5]), n_values, 0.0, 1, "noisy_count")
    # Depth 1 and a root histogram of 2,000 records at ε' = 0.05: 2000/(8·2) = 125 ≥
    # √2/0.05 ≈ 28, the root splits anyway; of 200 records (12.5 < 28) it would close.
    assert not forced_split(1, 1, np.array([1800, 200]), n_values, 0.05, 1, "noisy_count")
    assert forced_split(1, 1, np.array([180, 20]), n_values, 0.05, 1, "noisy_count")
    assert not forced_split(1, 1, np.array([180, 20]), n_values, 0.05, 1, "none")
    assert not forced_split(1, 1, None, n_values, 0.05, 1, "noisy_count")


@pytest.mark.parametrize("steps", [1, 2])
def test_where_the_rule_splits_and_the_threshold_cuts_the_model_is_the_accuracy_one(
    steps, monkeypatch
):
    """3,000 records at ε = 1: the "auto" tree splits, so under macro_f1 the same noise
    seed gives the accuracy model's tree and leaves bit for bit (only the decision
    differs) wherever its threshold is a cut, not the majority. The accuracy model's
    fallback also counts sampling (leaves.node_shares), macro_f1's does not: that is
    switched off for the accuracy fits here."""
    import dpviz.models.greedy.estimator as greedy_estimator
    from dpviz.models.greedy.leaves import release_leaves

    monkeypatch.setattr(
        greedy_estimator, "release_leaves", lambda *args: release_leaves(*args[:4], False)
    )
    X, y = _frame(3000, ("no", "yes"), 4)
    cuts = 0
    for seed in range(4):
        plain = _fit(X, y, BINARY, "accuracy", 1.0, steps, seed)
        tree = _fit(X, y, BINARY, "macro_f1", 1.0, steps, seed)
        assert plain.depth_ >= 1 and tree.depth_ == plain.depth_
        assert np.array_equal(tree.feature_, plain.feature_)
        assert np.array_equal(tree.leaf_noisy_counts_, plain.leaf_noisy_counts_)
        if tree.decision_threshold_ != NEVER:
            cuts += 1
            assert np.array_equal(tree.leaf_proba_, plain.leaf_proba_)
    assert cuts >= 3


def test_order_ties_orders_tied_leaves_by_their_own_counts_and_keeps_the_rest():
    tied = np.full((4, 2), [0.9, 0.1])
    noisy = np.array([[50, 2], [40, 12], [-3, 1], [60, 6]])
    eps = np.full(4, 0.05)
    out = order_ties(tied, noisy, eps)
    # Pooled share p = 21/171; m = 4·σ(0.05) ≈ 113; shrunk shares 0.096, 0.157, 0.132,
    # 0.111: ranks 0, 3, 2, 1.
    assert np.argsort(out[:, 1]).tolist() == [0, 3, 2, 1]
    assert np.allclose(out.sum(axis=1), 1.0)
    assert np.abs(out - tied).max() < TIE_STEP
    apart = np.array([[0.9, 0.1], [0.7, 0.3], [0.8, 0.2], [0.6, 0.4]])
    assert np.argsort(order_ties(apart, noisy, eps)[:, 1]).tolist() == [0, 2, 1, 3]
    three = np.full((2, 3), 1 / 3)
    assert order_ties(three, np.ones((2, 3), dtype=int), eps[:2]) is three


def test_the_threshold_and_a_file_answer_alike():
    """The file carries the ordered shares and the threshold: it predicts as the fit."""
    X, y = _frame(300, ("no", "yes"), 2)
    for seed in range(3):
        tree = _fit(X, y, BINARY, "macro_f1", 0.1, 1, seed)
        released = model_from_json(release(tree).to_json())
        assert tree.decision_threshold_ is not None
        assert np.array_equal(released.predict(X), tree.predict(X))


def test_other_objectives_and_three_classes_fit_mains_model_bit_for_bit(monkeypatch):
    """accuracy and balanced_accuracy on two and three classes, macro_f1 on three, FS and
    DPEA, ε 0.1 / 1 / 10, 80 and 3,000 records, noise seed 7: the SHA-256 of every fit's
    features, noisy leaf counts, leaf shares and predict_proba (both rounded to 10
    decimals) and predict equals the digest taken when the hierarchical fallback began to
    count sampling under accuracy (issue 28; before that, main's at 7d9cca9, before the
    macro_f1 floor, which only that change moved). Rounded:
    numpy's exp and log differ in the last bit between CPUs (their SIMD paths), and an
    unrounded digest taken on one machine failed on another with 7d9cca9's own code.
    The greedy trees' no-signal floor (dpviz.models.greedy.floor, accuracy only) is
    switched off here: where its test passes it changes nothing (tests/models/
    test_greedy_floor.py); these 80-record fits at ε 1 and 10 are where it acts."""
    import dpviz.models.greedy.estimator as greedy_estimator

    monkeypatch.setattr(greedy_estimator, "floor_applies", lambda *args: False)
    digest = hashlib.sha256()
    for classes, schema in ((("no", "yes"), BINARY), (("a", "b", "c"), THREE)):
        for n in (80, 3000):
            X, y = _frame(n, classes, n)
            for steps in (1, 2):
                for eps in (0.1, 1.0, 10.0):
                    objectives = ["accuracy", "balanced_accuracy"]
                    objectives += ["macro_f1"] if len(classes) > 2 else []
                    for objective in objectives:
                        m = _fit(X, y, schema, objective, eps, steps, 7)
                        for a in (
                            m.feature_,
                            m.leaf_noisy_counts_,
                            np.round(m.leaf_proba_, 10),
                            np.round(m.predict_proba(X), 10),
                            np.asarray(m.predict(X), dtype=str),
                        ):
                            digest.update(np.ascontiguousarray(a).tobytes())
    assert digest.hexdigest() == (
        "1886ef5bde9f30363e926b2fd78431dcdc0a0770429f66c25734345391b6f057"
    )


# --- the floored tree's releases against their booked laws, and 4×-ε mutants ----------------
# 60 records, half "yes" when x > 5 (a clear split), at ε = 0.3: the "auto" depth is 0
# under accuracy; under macro_f1 the root's exponential-mechanism step and the leaves'
# counts are released at the booked ε. The checks are those of
# tests/privacy/test_ledger_entries.py (randomised PIT, 10 bins, exact binomial tests,
# false alarm ≤ 10⁻³ over the noise seeds; deterministic with the fixed seeds here).

LAW_EPS = 0.3


def _law_data():
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 10, 60)
    frame = pd.DataFrame(
        {"x": x, "col": rng.choice(["a", "b", "c"], 60), "label": np.where(x > 5, "yes", "no")}
    )
    return encode(frame, BINARY)


LAW_DATA = _law_data()


def _law_fits(n: int, mutant=None):
    for seed in range(n):
        with pytest.MonkeyPatch.context() as mp:
            if mutant is not None:
                mutant(mp)
            model = DPDecisionTreeClassifier(
                epsilon=LAW_EPS, schema=BINARY, objective="macro_f1", noise_seed=seed
            )
            yield model.fit_encoded(LAW_DATA, BINARY)


def _leaf_transforms(n_fits: int, mutant=None) -> np.ndarray:
    rng = np.random.default_rng(3)
    out = []
    for m in _law_fits(n_fits, mutant):
        assert m.depth_ == 1
        booked = {e.epsilon for e in m.ledger_.entries if e.query.startswith("discrete Laplace")}
        assert len(booked) == 1 and booked.pop() == pytest.approx(m.leaf_epsilon_.min())
        eps = np.repeat(m.leaf_epsilon_, 2)
        out.append(pit_discrete_laplace(m.leaf_noisy_counts_ - m.leaf_counts_, eps, rng))
    return np.concatenate(out)


def _split_transforms(n_fits: int, mutant=None) -> np.ndarray:
    rng = np.random.default_rng(4)
    out = []
    for m in _law_fits(n_fits, mutant):
        codes, n_values = bin_codes(LAW_DATA, BINARY, m.n_bins)
        beta = gini_weight(m.criterion)
        candidates, scores = enumerate_subtrees(codes, LAW_DATA.y, n_values, 2, 1, beta)
        eps = {e.epsilon for e in m.ledger_.entries if e.query.startswith("exponential")}
        assert len(eps) == 1
        log_p = eps.pop() / (2 * score_sensitivity(beta)) * scores
        out.append(pit_choice(candidates.index((int(m.feature_[0]),)), log_p, rng))
    return np.array(out)


def test_the_floored_trees_leaf_counts_follow_the_booked_law():
    # Replayable seed: with fresh noise the depth's noisy count gave depth 1 in 14 of 200
    # fits (and failed CI once); accuracy has no forced level, macro_f1 does (below).
    data = _frame(60, ("no", "yes"), 9)
    assert _fit(*data, BINARY, "accuracy", LAW_EPS, seed=0).depth_ == 0
    assert law_holds(_leaf_transforms(40), 500)


def test_leaf_counts_at_four_times_the_booked_epsilon_are_refuted():
    def mutant(mp):
        spend_more(
            mp,
            SecureGenerator,
            "discrete_laplace",
            "dpviz.models.greedy.leaves",
            "noisy_leaf_counts",
            4.0,
        )

    assert not law_holds(_leaf_transforms(40, mutant), 500)


def test_the_floored_roots_split_follows_the_booked_exponential_mechanism():
    assert law_holds(_split_transforms(300), 300)


def test_a_split_at_four_times_the_booked_epsilon_is_refuted():
    def mutant(mp):
        _scaled_argument(mp, greedy_grow, "choose_subtrees", 4, 4.0)

    assert not law_holds(_split_transforms(300, mutant), 300)


def test_tied_leaves_are_ordered_where_class_1_is_the_majority():
    """2,000 records without signal, "yes" (class 1) 80% of them, at ε = 0.1: the "auto"
    rule splits (depth 1), the fallback gives every leaf the same shares, and the
    threshold then answers class 1, the majority, everywhere. The leaves are ordered
    as where class 0 is the majority, so every fit answers "no" for some records (the
    replayable noise seeds 0–5; with the check for class 0 alone, 5 of these 6 fits
    answered "yes" for all of them)."""
    X, y = _frame(2000, ("yes", "no"), 1, follow=0.0)
    assert (y == "yes").mean() > 0.7
    for seed in range(6):
        tree = _fit(X, y, BINARY, "macro_f1", 0.1, seed=seed)
        assert tree.depth_ >= 1
        assert len(np.unique(tree.leaf_proba_[:, 1])) > 1
        assert 0.0 < (tree.predict(X) == "no").mean() < 0.5
