"""Quantile split points: the noisy class tables, their post-processing (thresholds and
feature weights), and how the forest, its ledger, files and sweeps carry them."""

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.evaluation import sweep
from dpviz.evaluation.release_audit import clopper_pearson
from dpviz.models.files.load import ReleasedForest
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.forest.splits import (
    RELEVANCE_MIX,
    SPLIT_BINS,
    TableLayout,
    cdf_from_counts,
    class_tables,
    feature_weights,
    gain_ratio,
    noisy_tables,
    split_epsilon,
)
from dpviz.models.trees.thresholds import quantile_thresholds
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode


def skewed(n=4000, seed=0):
    """A heavy-tailed feature whose label flips at its median (public domain [0, 1000])."""
    rng = np.random.default_rng(seed)
    x = np.minimum(rng.exponential(20.0, n), 1000.0)
    colour = rng.choice(["red", "blue"], n)
    y = np.where(x > np.median(x), "yes", "no")
    frame = pd.DataFrame({"x": x, "colour": colour, "label": y})
    schema = Schema(
        label="label",
        classes=("no", "yes"),
        features=(
            Feature("x", "continuous", 0.0, 1000.0),
            Feature("colour", "discrete", values=("red", "blue")),
        ),
    )
    return frame, schema


@pytest.mark.parametrize(
    "eps, expected",
    [(1.0, 0.2), (10.0, 0.2), (5.0, 0.2), (0.5, 0.01), (0.1, 0.01), (0.3, 0.01), (0.05, 0.001)],
)
def test_the_split_budget_follows_a_public_ladder(eps, expected):
    assert split_epsilon(eps, 3, "quantile") == pytest.approx(expected)
    assert split_epsilon(eps, 3, "quantile") <= 0.2 * eps * (1 + 1e-9)
    assert split_epsilon(eps, 0, "quantile") == 0.0  # nothing to split: nothing spent
    assert split_epsilon(eps, 3, "uniform") == 0.0


def test_an_unknown_split_rule_is_a_clear_error():
    with pytest.raises(ValueError, match="split_points must be one of"):
        split_epsilon(1.0, 2, "median")
    frame, schema = skewed(200)
    with pytest.raises(ValueError, match="split_points"):
        DPRandomForestClassifier(schema=schema, split_points="median").fit(
            frame.drop(columns="label"), frame["label"]
        )


def test_tables_count_each_record_once_per_feature_by_class_in_public_cells():
    x = np.array([[0.0, 5.0], [999.9, 5.0], [500.0, -3.0], [1000.0, 7.0]])
    codes = np.array([[0, 2], [1, 2], [1, 0], [1, 1]])
    y = np.array([0, 1, 1, 0])
    layout = TableLayout(2, (2, 3))
    t = class_tables(x, codes, y, np.array([0.0, -5.0]), np.array([1000.0, 5.0]), layout, 2)
    assert t.shape == (2, 2 * SPLIT_BINS + 5)
    # Every record once per feature, in its own class's row.
    stops = np.cumsum(layout.widths)
    for start, stop in zip(stops - layout.widths, stops):
        assert t[:, start:stop].sum(axis=1).tolist() == [2, 2]
    assert t[0, 0] == 1 and t[1, SPLIT_BINS // 2] == 1 and t[1, SPLIT_BINS - 1] == 1
    assert t[0, SPLIT_BINS - 1] == 1  # at the public bound: the end bin
    # Values at or beyond the public bounds fall in the end bins.
    second = t[:, SPLIT_BINS : 2 * SPLIT_BINS]
    assert second[:, -1].tolist() == [2, 1] and second[1, int((-3 + 5) / 10 * SPLIT_BINS)] == 1
    assert t[:, 2 * SPLIT_BINS :].tolist() == [[1, 1, 0, 1, 1], [0, 2, 1, 0, 1]]


def test_the_compiled_tables_equal_numpys(monkeypatch):
    from dpviz.compiled import kernels

    compiled = kernels.get(wait=True)
    if compiled is None:
        pytest.skip("numba is not installed: the numpy tables are the only ones")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400_000, 3)) * [1, 10, 100]
    x[:5] = [[-1e9, 1e9, 0]] * 5  # beyond the domain: the end bins
    y = rng.integers(0, 3, len(x))
    codes = np.zeros((len(x), 0), dtype=np.int64)
    lows, highs = np.array([-3.0, -30, -300]), np.array([3.0, 30, 300])
    layout = TableLayout(3, ())
    fast = class_tables(x, codes, y, lows, highs, layout, 3)  # 1.2M values: compiled
    frozen = x.copy()
    frozen.flags.writeable = False  # as joblib's parallel folds hand it: numpy's pass
    assert np.array_equal(class_tables(frozen, codes, y, lows, highs, layout, 3), fast)
    monkeypatch.setattr(kernels, "get", lambda wait: None)
    for order in (x, np.asfortranarray(x)):
        assert np.array_equal(class_tables(order, codes, y, lows, highs, layout, 3), fast)


def test_features_that_tell_the_class_apart_are_drawn_more_and_noise_leaves_it_uniform():
    """Post-processing of the noisy tables: a feature whose cells split the classes gets
    the relevance share, noise-only tables leave the draw uniform (a fixed seed: the
    weights are a deterministic function of the released counts)."""
    layout = TableLayout(1, (2, 4))
    informative = np.zeros((2, SPLIT_BINS))
    informative[0, :8], informative[1, 8:] = 500, 500  # the class is which half
    flat = np.full((2, 2), 2000)  # class independent of the value
    many = np.full((2, 4), 1000)
    tables = np.hstack([informative, flat, many])
    w = feature_weights(tables, layout, epsilon=0.1)
    assert w.sum() == pytest.approx(1.0)
    floor = (1 - RELEVANCE_MIX) / 3
    assert w[0] == pytest.approx(floor + RELEVANCE_MIX, abs=1e-3)
    assert w[1:] == pytest.approx([floor, floor], abs=1e-3)
    # Pure noise (true counts 0 against noise of scale 30): about uniform.
    rng = np.random.default_rng(0)
    noise = rng.integers(-60, 60, size=tables.shape)
    w = feature_weights(np.hstack([np.full((2, SPLIT_BINS), 50), flat, many]) + noise, layout, 0.1)
    assert np.all(w >= floor) and np.all(w <= floor + RELEVANCE_MIX)
    assert np.allclose(feature_weights(np.zeros_like(tables), layout, 0.1), 1 / 3)


def test_gain_ratio_discounts_features_of_many_values():
    two = np.array([[90, 10], [10, 90]])  # two values, strongly dependent
    # Eight values carrying the same information as the two, each split in four.
    eight = np.repeat(two, 4, axis=1) / 4
    assert gain_ratio(two) == pytest.approx(gain_ratio(eight) * 3)
    assert gain_ratio(np.array([[50, 50], [50, 50]])) == pytest.approx(0.0)
    assert gain_ratio(np.zeros((2, 3))) == 0.0


def test_weighted_feature_draws_follow_the_weights_and_the_path():
    from dpviz.models.trees.space import Frontier, TreeSpace, choose_splits
    from dpviz.privacy.randomness import tree_root_keys

    weights = np.array([0.1, 0.6, 0.3])  # one continuous, two discrete features
    space = TreeSpace(np.zeros(1), np.ones(1), np.array([3, 4]), 3, feature_weights=weights)
    n = 20_000
    keys = tree_root_keys(5, n)
    frontier = Frontier.roots(space, keys, np.arange(n), 0)
    drawn = np.bincount(choose_splits(space, frontier).feature, minlength=3) / n
    # 20,000 independent draws: sd of a share ≤ 0.0036, so 0.015 is over 4 sd.
    assert np.allclose(drawn, weights, atol=0.015)
    # A discrete feature already used on the path is never drawn again; the others
    # share its weight in proportion.
    frontier.used[:, 0] = True
    drawn = np.bincount(choose_splits(space, frontier).feature, minlength=3) / n
    assert drawn[1] == 0 and np.allclose(drawn[[0, 2]], [0.25, 0.75], atol=0.015)


def test_the_distribution_follows_large_counts_and_stays_uniform_on_noise():
    eps = 0.1
    big = np.zeros((1, SPLIT_BINS))
    big[0, :4] = 10_000  # all the mass in the first eighth of the domain
    cdf = cdf_from_counts(big, 1 / eps)
    assert cdf[0, 0] == 0 and cdf[0, -1] == 1 and (np.diff(cdf, axis=1) > 0).all()
    assert cdf[0, 4] > 0.95
    # Counts of a few records against noise of scale 10: below two scales they are read
    # as empty, and the pseudo-records keep the thresholds about uniform.
    small = np.random.default_rng(1).integers(-15, 19, size=(3, SPLIT_BINS))
    cdf = cdf_from_counts(small, 10.0)
    uniform = np.linspace(0, 1, SPLIT_BINS + 1)
    assert np.abs(cdf - uniform).max() < 0.1


def test_thresholds_are_uniform_in_the_distribution_within_each_node():
    cdf = np.array([np.linspace(0, 1, SPLIT_BINS + 1) ** 0.25])  # mass near the low end
    lows, highs = np.array([0.0]), np.array([100.0])
    u = np.linspace(0.001, 0.999, 999)
    f = np.zeros(len(u), dtype=np.int64)
    whole = quantile_thresholds(cdf, lows, highs, f, np.zeros(len(u)), np.full(len(u), 100.0), u)
    assert (np.diff(whole) >= 0).all() and whole.min() >= 0 and whole.max() <= 100
    # Half the thresholds below the distribution's median bin edge.
    median_edge = np.searchsorted(cdf[0], 0.5) * 100 / SPLIT_BINS
    assert np.mean(whole <= median_edge) >= 0.5
    assert np.median(whole) < 20  # uniform thresholds would have a median of 50
    # Inside a node's sub-domain the thresholds stay inside it.
    lo, hi = np.full(len(u), 30.0), np.full(len(u), 60.0)
    inner = quantile_thresholds(cdf, lows, highs, f, lo, hi, u)
    assert inner.min() >= 30 and inner.max() <= 60


def test_the_noisy_tables_keep_their_epsilon_and_the_audit_catches_half_the_noise():
    """Empirical audit of the only step that reads data: neighbouring tables (one
    record more in cell 3 of each of 2 features), 20,000 releases each from fresh keys,
    Clopper–Pearson at α = 10⁻⁶ per bound. The event "bin 3 of feature 0 ≥ its count
    in D ∪ {x}" has probability ratio e^(ε/2) exactly, so the lower bound on ε must stay
    under ε, and a mutant with half the noise scale must be caught above it."""
    eps, runs, alpha = 1.0, 20_000, 1e-6
    d = np.full((2, 8), 50)
    d2 = d.copy()
    d2[:, 3] += 1
    root = NoiseSource.fresh()

    def hits(hist, epsilon, label):
        got = 0
        for r in range(runs // 500):
            # 500 releases per call: histograms stacked as features of one release
            # would share a budget, so the noise scale is set per release by hand.
            source = root.child(label * 1_000_000 + r)
            noise = source.generator().discrete_laplace(epsilon / 2, 500 * hist.size)
            released = hist[None] + noise.reshape(500, *hist.shape)
            got += int((released[:, 0, 3] >= d2[0, 3]).sum())
        return got

    # The same noise law as noisy_tables (checked below), at ε and at 2ε (the mutant).
    for label, factor in ((1, 1.0), (2, 2.0)):
        h2 = hits(d2, eps * factor, label * 10 + 1)
        h1 = hits(d, eps * factor, label * 10 + 2)
        low2, _ = clopper_pearson(h2, runs, alpha)
        _, up1 = clopper_pearson(h1, runs, alpha)
        bound = float(np.log(low2) - np.log(up1)) * 2  # the event moves one of 2 features
        if factor == 1.0:
            assert 0.8 < bound <= eps, bound  # tight: the event is the worst case
        else:
            assert bound > eps, bound
    # noisy_tables draws exactly that law: discrete Laplace at ε / d per count.
    source = NoiseSource.replayable(5)
    a = noisy_tables(d, TableLayout(2, ()), eps, source) - d
    b = source.child(0x5_9117_0000).generator().discrete_laplace(eps / 2, d.size).reshape(d.shape)
    assert np.array_equal(a, b)


def test_the_forest_books_the_histograms_and_follows_the_data():
    frame, schema = skewed()
    X, y = frame.drop(columns="label"), frame["label"]
    model = DPRandomForestClassifier(schema=schema, random_state=0, n_estimators=10).fit(X, y)
    assert model.split_epsilon_ == pytest.approx(0.2)
    ledger = model.ledger_
    assert ledger.private and ledger.epsilon_total == pytest.approx(1.0)
    assert "noisy class × value tables of every feature" in ledger.describe().lower()
    spent = model.depth_count_epsilon_ + model.split_epsilon_ + model.prior_epsilon_
    assert model.tree_epsilon_ == pytest.approx(
        1.0 - spent - model.check_epsilon_ - model.threshold_epsilon_
    )
    # Uniform thresholds on [0, 1000] put 10% below 100, where 99% of x lies; the noisy
    # distribution over three quarters (the pseudo-records, two noise scales of the
    # class-summed counts per bin, keep ~20% of the mass spread over the domain).
    # What the noisy tables do is checked on replayable noise: with fresh noise the
    # relevance draw once gave the colour the larger weight (0.65 against 0.35).
    model = DPRandomForestClassifier(
        schema=schema, random_state=0, n_estimators=10, noise_seed=0
    ).fit(X, y)
    roots = model.space_.split_cdf[0]
    assert roots[int(100 / 1000 * SPLIT_BINS)] > 0.7
    uniform = DPRandomForestClassifier(
        schema=schema, random_state=0, n_estimators=10, split_points="uniform"
    ).fit(X, y)
    assert uniform.split_epsilon_ == 0 and uniform.space_.split_cdf is None
    assert uniform.space_.feature_weights is None
    # x decides the label, the colour is noise: x gets the relevance share.
    top = (1 - RELEVANCE_MIX) / 2 + RELEVANCE_MIX
    assert model.space_.feature_weights[0] == pytest.approx(top, abs=0.02)
    assert uniform.ledger_.epsilon_total == pytest.approx(1.0)
    test_frame = skewed(2000, seed=1)[0]
    acc_q = (model.predict(test_frame.drop(columns="label")) == test_frame["label"]).mean()
    acc_u = (uniform.predict(test_frame.drop(columns="label")) == test_frame["label"]).mean()
    # The label flips at x ≈ 14: uniform splits on [0, 1000] rarely land near it.
    assert acc_q > acc_u + 0.1, (acc_q, acc_u)


def test_same_noise_seed_same_trees_and_a_file_round_trip():
    frame, schema = skewed(1500)
    X, y = frame.drop(columns="label"), frame["label"]
    kw = dict(schema=schema, random_state=2, n_estimators=8, noise_seed=4)
    a, b = DPRandomForestClassifier(**kw).fit(X, y), DPRandomForestClassifier(**kw).fit(X, y)
    assert np.array_equal(a.splits_.cdf, b.splits_.cdf)
    assert np.array_equal(a.splits_.weights, b.splits_.weights)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))
    secret = DPRandomForestClassifier(schema=schema, random_state=2, n_estimators=8).fit(X, y)
    assert not np.array_equal(secret.splits_.cdf, a.splits_.cdf)  # fresh noise each release
    released = ReleasedForest.from_estimator(secret)
    assert released.meta["split_epsilon"] == pytest.approx(0.2)
    loaded = ReleasedForest.from_json(released.to_json())
    assert np.allclose(loaded.predict_proba(X), secret.predict_proba(X))
    assert loaded.meta["privacy"]["epsilon_total"] == pytest.approx(1.0)
    # A file that hides the histograms' ε does not add up to its trees' ε: refused.
    doc = json.loads(released.to_json())
    doc["split_epsilon"] = 0.0
    with pytest.raises(ValueError, match="per-tree ε"):
        ReleasedForest.from_document(doc)


def test_a_sweep_grows_one_structure_per_rung_and_each_point_is_a_plain_fit():
    frame, schema = skewed(1200)
    encoded = encode(frame, schema)
    model = DPRandomForestClassifier(schema=schema, n_estimators=5)
    eps = [0.05, 0.08, 0.2, 0.5, 1.0, 4.0]
    assert sweep.split_rungs(model, schema, eps) == [[0.05, 0.08], [0.2, 0.5], [1.0, 4.0]]
    # Uniform split points and a fixed size: one structure for every ε. Sized from the
    # record count (the records depth rule), one per decade of ε below 1 (its size follows
    # the signal a leaf carries: sizing.signal_scale).
    uniform = DPRandomForestClassifier(
        schema=schema, split_points="uniform", n_estimators=5, depth=4
    )
    assert sweep.split_rungs(uniform, schema, eps) == [eps]
    sized = DPRandomForestClassifier(schema=schema, split_points="uniform")
    assert sweep.split_rungs(sized, schema, eps) == [[0.05, 0.08], [0.2, 0.5], [1.0, 4.0]]
    train = sweep.subset(encoded, np.arange(800))
    test = sweep.subset(encoded, np.arange(800, 1200))
    grid = sweep.SweepGrid(
        epsilons=[0.2, 1.0, 4.0],
        n_estimators=[5],
        depths=[4],
        references=[sweep.SERIES_NONPRIVATE],
    )
    rows = pd.DataFrame(sweep._fold_rows(train, test, schema, grid, 0, 5, (1, 7)))
    dp = rows[rows["series"] == sweep.SERIES_DP].set_index("epsilon")
    for e in (0.2, 4.0):
        plain = DPRandomForestClassifier(
            epsilon=e,
            n_estimators=5,
            depth=4,
            schema=schema,
            random_state=sweep._fold_seed(1, 0),
            noise_seed=sweep._fold_seed(7, 0),
        ).fit_encoded(train, schema)
        votes = plain._votes(test)
        expected = sweep.score(test.y, sweep._fractions(votes), train.y, 2)["accuracy"]
        assert dp.loc[e, "accuracy"] == pytest.approx(expected), e
    # One twin per fold, on the first rung's trees: exact counts do at least about as
    # well as that rung's noisy ones (400 test records: 0.05 is over 2 sd).
    twin = rows[rows["series"] == sweep.SERIES_NONPRIVATE]
    assert len(twin) == 1 and twin["accuracy"].iloc[0] >= dp.loc[0.2, "accuracy"] - 0.05
