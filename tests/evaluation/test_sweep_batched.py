"""A sweep's shortcuts give exactly the per-point results (issue 15).

``release_votes`` counts the votes of every (mechanism, ε) point in one pass over the
compact leaf matrix; the ε = ∞ twin reuses the DP forest's built trees and test
routing. With replayable noise (``noise_seed``) both must equal, value for value, what
a release per point followed by ``model.votes`` (and a plain fit of the twin) give.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels
from dpviz.evaluation import sweep, sweep_references
from dpviz.evaluation.sweep_grid import SERIES_NONPRIVATE
from dpviz.models.objective import decide
from dpviz.models.trees import passes
from dpviz.privacy.schema import Feature, Schema, infer_schema
from dpviz.tabular.encode import encode
from tests.conftest import dataset_frame

COMPILED = kernels.get(wait=True) is not None


def case(n: int, k: int, seed: int = 0, discrete: bool = False):
    rng = np.random.default_rng(seed)
    classes = tuple("abcdefghijkl"[:k])
    features = [Feature(f"x{i}", "continuous", low=0.0, high=1.0) for i in range(3)]
    frame = pd.DataFrame({f"x{i}": rng.random(n) for i in range(3)})
    if discrete:
        features.append(Feature("c", "discrete", values=("u", "v", "w")))
        frame["c"] = rng.choice(["u", "v", "w"], n)
    score = frame["x0"] + 0.5 * frame["x1"] + 0.3 * rng.random(n)
    frame["label"] = np.asarray(classes)[np.minimum((score * k / 1.8).astype(int), k - 1)]
    return frame, Schema("label", classes, tuple(features))


def fitted(schema, train, **params):
    model = DPRandomForestClassifier(
        n_estimators=params.pop("n_estimators", 30),
        depth=params.pop("depth", 6),
        schema=schema,
        random_state=4,
        noise_seed=9,
        # Uniform split points: one structure serves every ε (quantile ones: a rung each).
        split_points=params.pop("split_points", "uniform"),
        **params,
    )
    return model.fit_encoded(train, schema)


POINTS = [
    [("permute_flip", e) for e in (0.05, 0.3, 1.0, 4.0, 10.0)],
    [("laplace_counts", e) for e in (0.1, 1.0, 3.0)],
    [("permute_flip", 0.5), ("laplace_counts", 0.5), ("permute_flip", 2.0), ("abstain_flip", 3.0)],
]


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    if request.param == "compiled":
        if not COMPILED:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(passes, "COMPILED_FROM_VISITS", 0)
    else:
        monkeypatch.setattr(kernels, "_kernels", None)
        monkeypatch.setattr(kernels, "_failed", True)
    return request.param


@pytest.mark.parametrize("points", POINTS)
@pytest.mark.parametrize("k", [2, 3])
def test_one_pass_votes_equal_a_release_per_point(path, points, k):
    frame, schema = case(1500, k)
    train, test = encode(frame.iloc[:1000], schema), encode(frame.iloc[1000:], schema)
    batched = fitted(schema, train)
    routed = batched.route_records(test)
    assert routed.local is not None  # the compact matrix the one pass reads
    got = list(sweep.release_votes(batched, routed, points, lambda m: m.leaf_labels_.copy()))
    alone = fitted(schema, train)
    for (point, votes, seconds, labels), (mech, eps) in zip(got, points, strict=True):
        assert point == (mech, eps) and seconds >= 0
        alone.release_instead(eps, mech)
        np.testing.assert_array_equal(labels, alone.leaf_labels_)  # read at its release
        np.testing.assert_array_equal(votes, alone.votes(alone.route_records(test)))
    # The ledger books the last release only, as a loop of release_instead does.
    assert batched.ledger_.to_dict() == alone.ledger_.to_dict()


@pytest.mark.skipif(not COMPILED, reason="numba is not installed")
def test_more_classes_than_a_word_holds_fall_back_to_a_count_per_point(monkeypatch):
    monkeypatch.setattr(passes, "COMPILED_FROM_VISITS", 0)
    frame, schema = case(1200, 12)
    train, test = encode(frame.iloc[:900], schema), encode(frame.iloc[900:], schema)
    points = [("permute_flip", 0.5), ("permute_flip", 5.0)]
    model = fitted(schema, train, n_estimators=40)  # 6 bits × 12 classes > 63
    routed = model.route_records(test)
    got = [votes for _, votes, _, _ in sweep.release_votes(model, routed, points)]
    alone = fitted(schema, train, n_estimators=40)
    for votes, (mech, eps) in zip(got, points, strict=True):
        alone.release_instead(eps, mech)
        np.testing.assert_array_equal(votes, alone.votes(alone.route_records(test)))


@pytest.mark.parametrize("discrete", [False, True])
def test_the_twin_from_the_sweeps_routing_equals_a_fitted_twin(path, discrete):
    frame, schema = case(2000, 3, seed=1, discrete=discrete)
    train, test = encode(frame.iloc[:1500], schema), encode(frame.iloc[1500:], schema)
    seed, index = 3, 2
    dp = DPRandomForestClassifier(
        n_estimators=25,
        depth="theorem2",
        schema=schema,
        random_state=seed * 1_000_003 + index,
        split_points="uniform",  # a fitted twin's structure is then the same
    ).fit_encoded(train, schema)
    routed = dp.route_records(test)
    reused = sweep_references._nonprivate_twin(25, "theorem2", seed * 1_000_003 + index)
    votes = sweep_references._twin_votes(reused, dp, train, schema, routed)
    assert votes is not None  # the shortcut ran
    plain = sweep_references._nonprivate_twin(25, "theorem2", seed * 1_000_003 + index)
    plain.fit_encoded(train, schema)
    np.testing.assert_array_equal(votes, plain._votes(test))
    for name in ("leaf_keys_", "leaf_tree_", "leaf_depth_", "leaf_counts_", "leaf_labels_"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(plain, name))
    assert reused.diagnostics_["empty_leaf_pct"] == plain.diagnostics_["empty_leaf_pct"]
    base = {"repeat": 0, "fold": index}
    args = (base, train, test, schema, 25, "theorem2", index, seed, "fletcher_islam")
    row_reused = sweep_references._nonprivate_row(*args, dp, routed)
    row_plain = sweep_references._nonprivate_row(*args)
    row_reused.pop("fit_seconds"), row_plain.pop("fit_seconds")
    assert row_reused == row_plain


@pytest.mark.parametrize("discrete", [False, True])
def test_the_twin_of_exact_split_tables_built_once_equals_a_fitted_twin(path, discrete):
    """Quantile split points: the twin grows its own trees from the exact tables; built
    once for the training and the test records, it is the twin a plain fit gives."""
    frame, schema = case(2000, 2, seed=2, discrete=discrete)
    train, test = encode(frame.iloc[:1500], schema), encode(frame.iloc[1500:], schema)
    exact = sweep_references._exact_splits(train, schema)

    def twin():
        return sweep_references._nonprivate_twin(20, 6, 7, counts=True, split_points="quantile")

    reused = twin()
    votes = sweep_references._twin_votes(reused, None, train, schema, None, test, exact)
    assert votes is not None  # the shortcut ran
    plain = twin().fit_encoded(train, schema, exact)
    np.testing.assert_array_equal(votes, plain._votes(test))
    # The released counts (ε = 10⁶: the true ones) are what a count twin's votes read;
    # its labels break ties with fresh noise, as two plain fits would.
    for name in ("leaf_keys_", "leaf_tree_", "leaf_counts_", "leaf_noisy_counts_"):
        np.testing.assert_array_equal(getattr(reused, name), getattr(plain, name))
    assert reused.diagnostics_["empty_leaf_pct"] == plain.diagnostics_["empty_leaf_pct"]


def test_a_twin_of_another_structure_is_fitted_on_its_own():
    frame, schema = case(800, 2)
    train, test = encode(frame.iloc[:600], schema), encode(frame.iloc[600:], schema)
    dp = DPRandomForestClassifier(n_estimators=10, depth=5, schema=schema, random_state=1)
    dp.fit_encoded(train, schema)
    other = sweep_references._nonprivate_twin(10, 5, 2)  # other public seed: other trees
    assert sweep_references._twin_votes(other, dp, train, schema, dp.route_records(test)) is None


def plain_point(train, test, schema, epsilon: float, **params):
    """A plain fit at ``epsilon`` as fold 0 of a sweep with seeds (1, 7) makes it (the
    fold's size declared, its public seed, its replayed noise) and the scores of its
    objective's predictions on ``test``."""
    plain = DPRandomForestClassifier(
        epsilon=epsilon,
        declared_n=train.n_records,
        schema=schema,
        random_state=sweep._fold_seed(1, 0),
        noise_seed=sweep._fold_seed(7, 0),
        **params,
    ).fit_encoded(train, schema)
    fractions = sweep._fractions(plain._votes(test))
    rule = (plain.decision_prior_, plain.objective, plain.decision_threshold_)
    predicted = decide(fractions, *rule)
    k = len(schema.classes)
    return plain, sweep.score(test.y, fractions, train.y, k, predicted)


def test_each_point_of_a_forest_sized_from_the_count_is_a_plain_fit_at_its_epsilon(path):
    """Below ε = 1 the default forest's size and prior's ε follow ε (auto trees and the
    records depth per decade of ε, the prior at most ε/4): a sweep grows one structure
    per decade and releases every ε of it from that structure, and each point must be
    what a plain fit at its own ε gives (same public seed, same replayed noise, the
    fold's size declared as the sweep declares it): trees, depth, prior ε and scores.
    Uniform split points, so only the sizing separates the rungs."""
    frame, schema = case(1500, 3)
    train, test = encode(frame.iloc[:1000], schema), encode(frame.iloc[1000:], schema)
    eps = [0.1, 0.3, 0.7, 1.0, 3.0]
    mechanisms = ["laplace_counts", "permute_flip"]
    preset = {"split_points": "uniform"}
    grid = sweep.SweepGrid(
        epsilons=eps, mechanisms=mechanisms, references=False, presets={"fletcher_islam": preset}
    )
    rows = pd.DataFrame(sweep._fold_rows(train, test, schema, grid, 0, 5, (1, 7)))
    assert set(rows["n_estimators"]) == {3, 10}  # 100 signal records below ε = 1: 3 trees
    for mech in mechanisms:
        for e in eps:
            plain, expected = plain_point(train, test, schema, e, mechanism=mech, **preset)
            row = rows[(rows["mechanism"] == mech) & (rows["epsilon"] == e)].iloc[0]
            assert (row["n_estimators"], row["depth"]) == (plain.n_estimators_, plain.depth_)
            assert row["prior_epsilon"] == plain.prior_epsilon_, (mech, e)
            for metric in ("accuracy", "auc", "f1"):
                assert row[metric] == expected[metric], (mech, e, metric)


def test_a_sweep_gives_the_same_rows_with_and_without_the_one_pass(monkeypatch):
    frame, schema = case(900, 2)
    encoded = encode(frame, schema)
    grid = sweep.SweepGrid(epsilons=[0.1, 1.0, 5.0], mechanisms=["permute_flip", "laplace_counts"])

    def rows():
        result = sweep.run_sweep(encoded, schema, grid, folds=2, seed=5, noise_seed=2)
        return result.results.drop(columns="fit_seconds")

    if COMPILED:
        monkeypatch.setattr(passes, "COMPILED_FROM_VISITS", 0)
    batched = rows()
    monkeypatch.setattr(sweep_references, "_twin_votes", lambda *args: None)
    monkeypatch.setattr(kernels, "_kernels", None)
    monkeypatch.setattr(kernels, "_failed", True)
    pd.testing.assert_frame_equal(batched, rows())


def test_the_references_say_what_they_were_and_their_cost():
    frame, schema = case(3400, 2)  # 2,720 training records a fold: over the bootstrap cap
    result = sweep.run_sweep(
        encode(frame, schema), schema, sweep.SweepGrid(epsilons=[1.0]), folds=5, seed=1
    )
    rows = result.results
    forest = rows[rows.series == sweep.SERIES_SKLEARN]
    assert set(forest.n_estimators) == {sweep.REFERENCE_TREES}
    assert set(forest.data_split) == {f"bootstrap of {sweep.REFERENCE_MAX_SAMPLES:,}"}
    costs = sweep.reference_costs(rows)
    assert set(costs) == {sweep.SERIES_NONPRIVATE, sweep.SERIES_SKLEARN}
    seconds = forest.fit_seconds.sum()
    assert costs[sweep.SERIES_SKLEARN] == (
        f"{sweep.REFERENCE_TREES} trees, bootstrap of 2,500, {seconds:.2f} s over 5 fits"
    )


def test_the_twin_has_the_structure_of_the_largest_swept_epsilon():
    """Below ε = 1 the default forest is sized for its signal (3 trees here, at ε ≥ 1
    10): the ε = ∞ twin must take the size of the largest swept ε, the one nearest to
    ε = ∞, whatever order the ε values come in, or the non-private line on the Curves
    page understates what the data can give."""
    frame, schema = case(1500, 3)
    train, test = encode(frame.iloc[:1000], schema), encode(frame.iloc[1000:], schema)
    for eps in ([0.1, 0.3, 1.0, 3.0], [3.0, 0.1, 1.0, 0.3]):
        grid = sweep.SweepGrid(
            epsilons=eps,
            mechanisms=["laplace_counts"],
            references=[SERIES_NONPRIVATE],
            presets={"fletcher_islam": {"split_points": "uniform"}},
        )
        rows = pd.DataFrame(sweep._fold_rows(train, test, schema, grid, 0, 5, (1, 7)))
        twin = rows[rows["series"] == SERIES_NONPRIVATE]
        assert len(twin) == 1
        top = rows[(rows["series"] != SERIES_NONPRIVATE) & (rows["epsilon"] == 3.0)]
        assert twin.iloc[0]["n_estimators"] == top.iloc[0]["n_estimators"] == 10
        assert twin.iloc[0]["depth"] == top.iloc[0]["depth"]


def assert_histogram_points_are_plain_fits(train, test, schema, preset: dict) -> None:
    """A default-forest sweep with ``preset`` at ε 0.3, 1 and 3: each point books its
    score histogram from ε = 1 up (none below) and scores as a plain fit at its ε does
    (same public seed, same replayed noise): budget column and every metric."""
    eps = [0.3, 1.0, 3.0]
    grid = sweep.SweepGrid(
        epsilons=eps,
        mechanisms=["laplace_counts"],
        references=False,
        presets={"fletcher_islam": preset},
    )
    rows = pd.DataFrame(sweep._fold_rows(train, test, schema, grid, 0, 5, (1, 7)))
    for e in eps:
        plain, expected = plain_point(train, test, schema, e, **preset)
        assert (plain.threshold_epsilon_ > 0) == (e >= 1.0)
        row = rows[rows["epsilon"] == e].iloc[0]
        assert row["threshold_epsilon"] == plain.threshold_epsilon_, e
        for metric in ("accuracy", "auc", "f1", "macro_f1"):
            assert row[metric] == expected[metric], (e, metric)


def test_each_macro_f1_point_books_and_reads_its_own_score_histogram():
    """With ``objective="macro_f1"`` on two classes, each point from ε = 1 up releases its
    own score histogram (the forest's macro_f1 threshold, 5% of ε) and decides as a plain
    fit at its ε does (same public seed, same replayed noise): threshold, budget column
    and every metric; below ε = 1 nothing is booked for it."""
    frame, schema = case(1500, 2)
    train, test = encode(frame.iloc[:1000], schema), encode(frame.iloc[1000:], schema)
    assert_histogram_points_are_plain_fits(
        train, test, schema, {"split_points": "uniform", "objective": "macro_f1"}
    )


@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
def test_each_accuracy_point_books_and_cuts_as_a_plain_fit(objective):
    """The default objective (and balanced_accuracy) on two classes: each point from
    ε = 1 up where the records suffice books its own per-class score histogram (the
    cut, 5% of ε) and decides as a plain fit at its ε does (same public seed, same
    replayed noise): budget column, cut and every metric; below ε = 1 nothing is booked.
    MAGIC (bundled) cut to 10% "h", 10,000 training records: at ε = 3 both cuts are
    used (fixed seeds)."""
    frame = dataset_frame("magic_gamma")
    schema = dataclasses.replace(infer_schema(frame, "label", warn=False), inferred=False)
    rng = np.random.default_rng(0)
    g, h = (rng.permutation(np.flatnonzero(frame["label"] == c)) for c in ("g", "h"))
    train = encode(frame.iloc[np.r_[g[:9000], h[:1000]]], schema)
    test = encode(frame.iloc[np.r_[g[9000:], h[1000:1400]]], schema)
    preset = {"objective": objective}
    assert_histogram_points_are_plain_fits(train, test, schema, preset)
    assert plain_point(train, test, schema, 3.0, **preset)[0].decision_threshold_ is not None
