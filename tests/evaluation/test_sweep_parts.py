"""A sweep on threads runs each fold's parts (split-table rungs, the forest's twin, each
refitted ε, scikit-learn's references) side by side, heaviest first (issue 29): its rows
must be those of the folds run in turn, in the same order, value for value under a
noise seed."""

from __future__ import annotations

import math

import pandas as pd
from sklearn.base import clone

from dpviz import DPRandomForestClassifier
from dpviz.evaluation import sweep, sweep_references
from dpviz.evaluation.sweep_grid import SERIES_NONPRIVATE, declare_fold_size
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.evaluation.test_sweep_batched import case


def test_parts_on_threads_give_the_rows_of_folds_in_turn():
    """The registry's forest (auto trees, records depth, quantile split points: three
    rungs and a twin beside them), a greedy tree refitted per ε, and scikit-learn's
    references; the threads take the parts in another order than the rows'."""
    frame, schema = case(1200, 3, discrete=True)
    encoded = encode(frame, schema)
    grid = sweep.SweepGrid(
        epsilons=[0.05, 0.3, 2.0, 6.0],
        mechanisms=["laplace_counts", "permute_flip"],
        algorithms=["fletcher_islam", "friedman_schuster"],
    )

    def rows(threads):
        result = sweep.run_sweep(
            encoded, schema, grid, folds=3, seed=4, noise_seed=8, threads=threads
        )
        return result.results.drop(columns="fit_seconds")

    in_turn = rows(1)
    assert set(in_turn["series"]) == {
        sweep.SERIES_DP,
        sweep.SERIES_NONPRIVATE,
        sweep.SERIES_SKLEARN,
    }
    pd.testing.assert_frame_equal(rows(2), in_turn, check_exact=True)
    pd.testing.assert_frame_equal(rows(3), in_turn, check_exact=True)


def test_the_twin_runs_beside_the_forest_only_where_it_grows_its_own_trees():
    frame, schema = case(600, 2)
    train, test = encode(frame.iloc[:450], schema), encode(frame.iloc[450:], schema)
    eps = [0.05, 0.5, 3.0]
    for split_points, twin_parts in (("quantile", 1), ("uniform", 0)):
        grid = sweep.SweepGrid(
            epsilons=eps,
            references=[SERIES_NONPRIVATE],
            presets={"fletcher_islam": {"split_points": split_points}},
        )
        model = next(sweep._models(grid, 1, None))[1]
        rungs = sweep.split_rungs(model, schema, eps)
        parts = sweep._fold_parts(train, test, schema, grid, 0, 5, (1, None))
        assert len(parts) == len(rungs) + twin_parts
        # Heaviest first: the top rung (largest ε) weighs most.
        assert max(weight for weight, _ in parts) == 3.0


def test_the_twin_beside_is_the_twin_of_the_fitted_forest():
    """Sized from the declared count without a record routed, the twin beside the
    forest is the twin given the forest fitted at the same ε (quantile split points,
    auto trees, records depth: every size read from the count)."""
    features = (
        Feature("x0", "continuous", low=0.0, high=1.0),
        Feature("x1", "continuous", low=0.0, high=1.0),
        Feature("x2", "continuous", low=0.0, high=1.0),
    )
    frame, _ = case(1500, 2)
    schema = Schema("label", ("a", "b"), features)
    train, test = encode(frame.iloc[:1100], schema), encode(frame.iloc[1100:], schema)
    unfitted = DPRandomForestClassifier(random_state=sweep._fold_seed(3, 0), noise_seed=5)
    dp = clone(unfitted).set_params(epsilon=4.0)
    declare_fold_size(dp, train.n_records)
    dp.fit_encoded(train, schema)
    base = {"repeat": 0, "fold": 0}
    common = (base, train, test, schema)
    fitted = sweep_references._nonprivate_row(
        *common,
        dp.n_estimators_,
        dp.depth,
        0,
        3,
        "fletcher_islam",
        dp,
        dp.route_records(test),
        counts=True,
    )
    beside = sweep_references._twin_row_beside(
        *common, 0, 3, "fletcher_islam", clone(unfitted), 4.0, True
    )
    assert fitted.pop("fit_seconds") > 0 and beside.pop("fit_seconds") > 0
    assert set(fitted) == set(beside)
    for key, value in fitted.items():
        same = value == beside[key] or (
            isinstance(value, float) and math.isnan(value) and math.isnan(beside[key])
        )
        assert same, (key, value, beside[key])
