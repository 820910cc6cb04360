"""Every algorithm says what its floor test decided (``floor_outcome``), and what it says is
what the model does: trees without signal answer the fall-back, trees with signal answer
themselves, and the numbers are the ones the test compared.

Replayable noise seeds (NOT private, tests only) make each fit exact: the assertions are
about one fixed draw each, not about rates.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpviz.models.boosting.check import CHECK_THRESHOLD
from dpviz.models.forest import voting
from dpviz.models.forest.floor import check_threshold
from dpviz.models.forest.signal import LEAF_FLOOR_U
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.floor import FloorOutcome
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    tuple(Feature(f"x{i}", "continuous", 0.0, 1.0) for i in range(4)),
)
# (algorithm, ε) where each family's floor test runs: the disjoint forest's out-of-bag
# check from ε = 2, Private-RDT's leaf test from a leaf ε of 0.4, the greedy trees' leaf
# test and DPBoost's held-out check at any ε.
RUNS = [
    ("fletcher_islam", 10.0),
    ("jpw", 10.0),
    ("friedman_schuster", 1.0),
    ("dpea", 1.0),
    ("dpboost", 1.0),
]


def records(signal: bool, n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` records; with ``signal`` the label is x0 > 0.5 (5% flipped), else a coin
    with P(yes) = 0.3 independent of every feature."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(0, 1, (n, 4)), columns=SCHEMA.feature_names)
    if signal:
        y = (X["x0"] > 0.5).to_numpy() ^ (rng.uniform(size=n) < 0.05)
    else:
        y = rng.uniform(size=n) < 0.3
    return X, np.where(y, "yes", "no")


def fit(algorithm: str, epsilon: float, signal: bool):
    X, y = records(signal)
    model = get_algorithm(algorithm).make(epsilon, random_state=0, schema=SCHEMA, noise_seed=7)
    return model.fit(X, y), X


@pytest.mark.parametrize("algorithm,epsilon", RUNS)
def test_trees_without_signal_fall_back_and_say_so(algorithm, epsilon):
    model, X = fit(algorithm, epsilon, signal=False)
    outcome = model.floor_outcome()
    assert isinstance(outcome, FloorOutcome)
    assert not outcome.trusted and outcome.statistic < outcome.bar
    text = outcome.describe()
    assert text.startswith("The trees did not pass their floor test")
    assert outcome.test in text and outcome.fallback in text
    if algorithm != "dpboost":
        # The prior's (the root's) first class for every record, named in the sentence.
        predicted = np.unique(model.predict(X))
        assert len(predicted) == 1 and repr(str(predicted[0])) in outcome.fallback


@pytest.mark.parametrize("algorithm,epsilon", RUNS)
def test_trees_with_signal_pass_and_say_so(algorithm, epsilon):
    model, X = fit(algorithm, epsilon, signal=True)
    outcome = model.floor_outcome()
    assert outcome.trusted and outcome.statistic >= outcome.bar
    assert outcome.describe().startswith("The trees passed their floor test")
    assert len(np.unique(model.predict(X))) == 2


def test_the_numbers_are_the_ones_each_test_compared():
    forest, _ = fit("fletcher_islam", 10.0, signal=False)
    outcome = forest.floor_outcome()
    assert outcome.statistic == forest.floor_check_
    assert outcome.bar == check_threshold(forest.floor_disagreements_)
    assert outcome.trusted == forest.floor_trusted_

    rdt, _ = fit("jpw", 10.0, signal=False)
    outcome = rdt.floor_outcome()
    assert outcome.statistic == voting.release_tree_signal(rdt)
    assert outcome.bar == LEAF_FLOOR_U
    assert outcome.trusted == voting.release_leaves_trusted(rdt)

    greedy, _ = fit("friedman_schuster", 1.0, signal=False)
    outcome = greedy.floor_outcome()
    assert (outcome.statistic, outcome.bar) == (greedy.floor_signal_, greedy.floor_bar_)

    boost, _ = fit("dpboost", 1.0, signal=False)
    outcome = boost.floor_outcome()
    assert outcome.statistic == boost.check_gain_
    assert math.isclose(outcome.bar, CHECK_THRESHOLD / boost.tree_epsilon_)
    assert outcome.trusted == boost.check_passed_
    # Failed: the trees keep the floor's weight, which the sentence states.
    assert f"{float(boost.tree_weight_[0]):.3g}" in outcome.fallback


@pytest.mark.parametrize(
    "algorithm,epsilon,params",
    [
        ("fletcher_islam", 0.5, {}),  # the out-of-bag check runs from ε = 1
        ("jpw", 1.0, {}),  # the leaf test from a leaf ε of 0.4 (ε ≈ 5 with 10 trees)
        ("jpw", 10.0, {"objective": "macro_f1"}),  # accuracy only
        ("dpboost", 1.0, {"preset": "paper"}),  # no prior, no check
    ],
)
def test_no_outcome_where_no_floor_test_runs(algorithm, epsilon, params):
    X, y = records(signal=False)
    model = get_algorithm(algorithm).make(
        epsilon, random_state=0, schema=SCHEMA, noise_seed=7, **params
    )
    assert model.fit(X, y).floor_outcome() is None


def test_a_new_release_is_tested_again():
    # The test reads the release: relabelling draws new leaf noise (replayable noise is
    # named by ε, so another ε), and the outcome is the statistic of the new leaves, not
    # a number kept from the first fit.
    model, _ = fit("jpw", 10.0, signal=False)
    before = model.floor_outcome()
    model.relabel(8.0)
    after = model.floor_outcome()
    assert after.statistic != before.statistic
    assert after.statistic == voting.release_tree_signal(model)
    assert after.trusted == (after.statistic >= LEAF_FLOOR_U)


@pytest.mark.parametrize("algorithm", ["jpw", "friedman_schuster"])
def test_a_sweep_records_each_folds_floor(algorithm):
    # Each fold's model at each ε says whether its test ran and fell back: the per-fold
    # flag is the fold model's own outcome, and the summary's share is their mean.
    from dpviz.evaluation.sweep import SERIES_DP, SweepGrid, run_sweep
    from dpviz.tabular.encode import encode

    X, y = records(signal=False, n=2000)
    encoded = encode(X.assign(label=y), SCHEMA)
    grid = SweepGrid(epsilons=[1.0, 10.0], algorithms=[algorithm], references=False)
    result = run_sweep(encoded, SCHEMA, grid, folds=2, seed=0, noise_seed=3)
    rows = result.results[result.results["series"] == SERIES_DP]
    at_10 = rows.loc[rows["epsilon"] == 10.0, "floored"]
    assert at_10.notna().all() and at_10.isin([0.0, 1.0]).all()
    if algorithm == "jpw":  # its test runs from a leaf ε of 0.4: not at ε = 1
        assert rows.loc[rows["epsilon"] == 1.0, "floored"].isna().all()
    summary = result.summary.set_index("epsilon")
    assert summary.loc[10.0, "floor_share"] == at_10.mean()
    assert summary.loc[10.0, "floor_runs"] == len(at_10)
