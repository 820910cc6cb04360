"""A sweep's non-private references, each fitted once per fold: the forest's ε = ∞ twin
(every record in every tree, true majorities or exact counts), scikit-learn's random
forest and HistGradientBoosting.

Privacy role: NOT private by design; they read the raw data without noise and are shown
only as references (rows with ``private`` False).
"""

from __future__ import annotations

import math
import time

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from threadpoolctl import threadpool_limits

from dpviz.compiled import kernels
from dpviz.evaluation.metrics import score
from dpviz.evaluation.sweep_grid import (
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    _fractions,
    declare_fold_size,
)
from dpviz.models.forest.diagnostics import leaf_totals
from dpviz.models.forest.estimator import (
    DPRandomForestClassifier,
    LeafCounts,
    RoutedRecords,
    split_tables,
)
from dpviz.models.forest.release import release_leaves
from dpviz.models.forest.splits import SplitRelease, TableLayout, release_splits
from dpviz.models.trees.compact import route_compact
from dpviz.models.trees.depth import COUNTED_RULES
from dpviz.privacy.noise import NoiseSource

# scikit-learn's forest reference: REFERENCE_TREES unlimited-depth trees, each on a
# bootstrap of at most REFERENCE_MAX_SAMPLES records. 100 trees on bootstraps of 5,000
# cost 20x the whole 20-ε DP curve at 30,000 rows (1.2 CPU-s a fold against 0.07);
# 10 trees on 2,500 cost 0.07 CPU-s a fold, about the curve's own cost, for 1.5 points
# of accuracy (SynthF 30,000 rows, 3 splits: 0.934 against 0.949; AUC 0.977 against
# 0.986), still 11 points above the ε = ∞ twin (bench/README.md, issue 15). The rows
# say it (``n_estimators``, ``data_split`` "bootstrap of 2,500"); ``fit_seconds`` is
# its cost.
REFERENCE_TREES = 10
# The ε of a count forest's non-private twin: noise of scale 10⁻⁴ per tree of 100, which
# rounds to 0 (DPBoost's twin in bench/bench_utility.py uses the same ε).
TWIN_EPSILON = 1e6
REFERENCE_MAX_SAMPLES = 2_500


def _nonprivate_twin(
    trees, depth, random_state, counts: bool = False, split_points: str = "uniform"
) -> DPRandomForestClassifier:
    """The ε = ∞ reference of a forest: every record in every tree (``shared``) and the
    same structure rule, releasing true majority labels (the paper's non-private forest)
    or, for a forest whose leaves release counts, its counts with noise of scale 10⁻⁴
    (ε = 10⁶ over the trees: none is ever drawn), scored as the DP forest scores its own."""
    return DPRandomForestClassifier(
        epsilon=TWIN_EPSILON if counts else 1.0,
        n_estimators=trees,
        depth=depth,
        mechanism="laplace_counts" if counts else "none",
        data_split="shared",
        random_state=random_state,
        split_points=split_points,
    )


def _twin_votes(
    model, dp, train, schema, routed, test=None, splits: SplitRelease | None = None
) -> np.ndarray | None:
    """Fit the ε = ∞ twin ``model`` (unfitted) on ``train`` and return its votes on the
    test records, counting the training records through trees built once; None when
    that does not apply (then the twin is fitted and routes on its own).

    Without ``splits`` the twin has the DP forest ``dp``'s trees (uniform split points):
    it reuses ``dp``'s built trees and its routing ``routed`` of the test records. With
    ``splits`` (the exact split release, :func:`_exact_splits`) the twin grows its own
    trees from them, builds them once and routes ``test`` through the same build.

    The twin counts every training record in every tree (``shared``): the training
    records go through the built trees once (a compact matrix), its leaves are released
    as a fit releases them (true majority, or counts at ε = 10⁶, public tie-breaks), and
    its votes are those of the test routing. The same model and votes as
    ``fit_encoded`` + ``_votes`` (a test checks it), without building the trees again
    for each pass."""
    own = splits is not None
    if not own and (dp is None or routed is None or routed.local is None):
        return None
    if own and test is None:
        return None
    forest = None if own else dp._compact_forest(np.arange(dp.n_estimators_), train.n_records)
    if not own and forest is None:
        return None
    # fit_encoded's steps, with the leaves counted through trees built once.
    model._validate_params()
    model.schema_, model.n_features_in_ = schema, len(schema.features)
    model.classes_ = np.asarray(schema.classes, dtype=object)
    start = time.perf_counter()
    model.encoding_report_ = train.report
    source = model._release_source(0)
    if own:
        model._prepare(train.n_records, source, splits=splits)
        forest = model._compact_forest(np.arange(model.n_estimators_), train.n_records, keep=True)
        if forest is None:
            return None
        built = model
    else:
        # The DP forest's released split points, so that the twin has the same trees.
        model._prepare(train.n_records, source, splits=dp.splits_)
        same_splits = (model.splits_ is None) == (dp.splits_ is None)
        if (
            model.depth_ != dp.depth_
            or not np.array_equal(model.root_keys_, dp.root_keys_)
            or not same_splits
        ):
            return None
        built = dp
    compact = route_compact(
        built.space_,
        built.root_keys_,
        forest.trees,
        train.continuous,
        train.discrete,
        forest=forest,
    )
    if compact.abstain is not None and (compact.local == compact.abstain).any():
        return None  # training records never abstain (unknown values are dropped)
    counts = _leaf_class_counts(compact, train.y, len(schema.classes))
    reached = counts.sum(axis=1) > 0  # as a fit's routing: leaves some record reached
    model._add_counts(
        [
            LeafCounts(
                compact.leaf_keys[reached],
                compact.leaf_tree[reached],
                compact.leaf_depth[reached],
                counts[reached],
                [],
            )
        ],
        train.n_records,
    )
    release_leaves(model, source)
    model.fit_seconds_ = time.perf_counter() - start
    if own:
        return model._votes(test)
    same = RoutedRecords(
        routed.n_records,
        None,
        None,
        routed.leaf_keys,
        model._trained(routed.leaf_keys),
        local=routed.local,
        offsets=routed.offsets,
    )
    return model.votes(same)


def _empty_leaf_pct(model: DPRandomForestClassifier) -> float:
    """``model.diagnostics_["empty_leaf_pct"]`` (NOT private), the same number without
    the rest of the diagnostics (their exact flip probabilities of every leaf cost a
    100-tree forest more than the leaf count itself). The forest's own cached value
    when it has one."""
    known = model.__dict__.get("_diagnostics")
    if known is not None or not isinstance(model, DPRandomForestClassifier):
        return model.diagnostics_["empty_leaf_pct"]
    totals = model.__dict__.get("_leaf_totals")
    totals, _ = totals if totals is not None else leaf_totals(model)
    return 100.0 * (1.0 - len(model.leaf_counts_) / float(totals.sum()))


def _leaf_class_counts(compact, y: np.ndarray, k: int) -> np.ndarray:
    """Each leaf's TRUE class counts (leaves × k) from every record's leaf in every tree
    (``compact``: :class:`~dpviz.models.trees.compact.CompactRouted`, records that all
    reach a leaf). Tree by tree: one (records,) code array in cache per tree, where one
    bincount over the whole (trees × records) matrix made three int64 copies of it
    (100 trees × 40,000 records: 32 MB each, 20-100 ms against 9 ms)."""
    n_leaves = len(compact.leaf_keys)
    compiled = kernels.loaded()
    local = compact.local
    if compiled is not None and local.flags.c_contiguous and local.dtype.itemsize <= 2:
        # One compiled pass per tree row (the same counts, integers: exact).
        counts = np.zeros((n_leaves, k), dtype=np.int64)
        offsets = np.asarray(compact.offsets, dtype=np.int64)
        compiled["leaf_class_counts"](local, offsets, np.asarray(y, dtype=np.int64), counts)
        return counts
    ends = np.append(compact.offsets[1:], n_leaves)
    counts = np.empty((n_leaves, k), dtype=np.int64)
    for t, (a, b) in enumerate(zip(compact.offsets, ends)):
        code = compact.local[t].astype(np.intp) * k + y
        counts[a:b] = np.bincount(code, minlength=(b - a) * k).reshape(b - a, k)
    return counts


def _exact_splits(train, schema) -> SplitRelease:
    """The split release of the ε = ∞ twin: the TRUE class tables of ``train`` read
    without noise (a NOT private reference), thresholds then drawn as the DP forest
    draws them, from the public seed."""
    # At ε = 10¹² the discrete Laplace noise is 0 with probability 1 − 10⁻⁴³⁴²⁹⁴⁴⁸¹⁹⁰.
    source = NoiseSource.replayable(0)
    return release_splits(split_tables(train, schema), TableLayout.of(schema), 1e12, source)


def _twin_row_beside(
    base, train, test, schema, index, seed, algorithm, dp, epsilon: float, counts: bool
) -> dict:
    """The twin's row of the DP forest ``dp`` (unfitted) fitted at ``epsilon``, where
    the twin grows its own trees from the exact split tables: it reads only the sizes
    that fit would give (tree count, depth), computed here from the declared fold size
    without a record routed or a noise drawn, so it runs beside ``dp``'s own fit. The
    same row as :func:`_nonprivate_row` given the fitted ``dp`` (a test checks it)."""
    dp.set_params(epsilon=epsilon)
    declare_fold_size(dp, train.n_records)
    dp._validate_params()
    dp.schema_, dp.n_features_in_ = schema, len(schema.features)
    exact = _exact_splits(train, schema)
    # The fold's count is declared (no noisy count is drawn: the source serves nothing)
    # and the split release given is the exact one (no table is read with noise):
    # nothing is released, only the sizes are read.
    dp._prepare(train.n_records, NoiseSource.replayable(0), splits=exact)
    twin = (base, train, test, schema, dp.n_estimators_, dp.depth, index, seed, algorithm)
    return _nonprivate_row(*twin, dp, counts=counts, exact=exact)


def _nonprivate_row(
    base,
    train,
    test,
    schema,
    trees,
    depth,
    index,
    seed,
    algorithm,
    dp=None,
    routed=None,
    counts: bool = False,
    exact: SplitRelease | None = None,
):
    """The forest's non-private twin (:func:`_nonprivate_twin`): all data in every tree,
    true majority labels, or exact counts when ``counts`` (the DP forest releases counts).
    ``dp`` and ``routed``: the DP forest of the same structure and its routing of
    ``test``, reused when they fit (:func:`_twin_votes`); ``exact``: the exact split
    release (:func:`_exact_splits`) when already read."""
    random_state = seed * 1_000_003 + index
    rule = depth
    # A rule that reads the record count grows the DP forest's trees to the depth its
    # count gave: the twin takes that depth, so that it has the same trees.
    if dp is not None and depth in COUNTED_RULES:
        depth = dp.depth_
    start = time.perf_counter()
    splits = getattr(dp, "split_points", "uniform")
    model = _nonprivate_twin(trees, depth, random_state, counts, splits)
    declare_fold_size(model, train.n_records)
    if getattr(dp, "splits_", None) is None:
        exact = None
    elif exact is None:
        exact = _exact_splits(train, schema)
    # Trees drawn from noisy split tables differ with the DP noise: the twin draws its
    # own from the exact tables, so that the reference is the same on every page and run
    # with the same settings. Uniform split points are the same trees: their routing
    # is reused.
    votes = _twin_votes(model, dp, train, schema, routed, test, exact)
    if votes is None:
        model = _nonprivate_twin(trees, depth, random_state, counts, splits)
        declare_fold_size(model, train.n_records)
        model.fit_encoded(train, schema, exact)
        votes = model._votes(test)
    return {
        **base,
        "series": SERIES_NONPRIVATE,
        "algorithm": algorithm,
        "mechanism": "none",
        "epsilon": math.inf,
        "n_estimators": trees,
        "depth_rule": str(rule),
        "depth": model.depth_,
        "data_split": "shared",
        **score(test.y, _fractions(votes), train.y, len(schema.classes)),
        "empty_leaf_pct": _empty_leaf_pct(model),
        "flipped_leaf_pct": 0.0,
        "expected_flip_pct": 0.0,
        "mean_smooth_sensitivity": math.nan,
        "fit_seconds": time.perf_counter() - start,
        "private": False,
    }


def _sklearn_row(base, train, test, k, index, seed, boosting=False):
    """scikit-learn's random forest (or histogram gradient boosting, DPBoost's non-private
    reference) on the same folds; discrete features as codes. One thread: folds are the
    unit of parallelism (10 trees gain nothing from more: measured, issue 15)."""
    if boosting:
        model = HistGradientBoostingClassifier(random_state=seed * 1_000_003 + index)
    else:
        cap = REFERENCE_MAX_SAMPLES if train.n_records > REFERENCE_MAX_SAMPLES else None
        model = RandomForestClassifier(
            n_estimators=REFERENCE_TREES,
            random_state=seed * 1_000_003 + index,
            n_jobs=1,
            max_samples=cap,
        )
    start = time.perf_counter()
    # One OpenMP thread: folds are the unit of parallelism, and HistGradientBoosting's
    # threads spin-wait on a busy machine (15 s instead of 0.25 s for 1,600 rows on 2 cores).
    with threadpool_limits(limits=1, user_api="openmp"):
        model.fit(np.hstack([train.continuous, train.discrete]), train.y)
        found = model.predict_proba(np.hstack([test.continuous, test.discrete]))
    proba = np.zeros((test.n_records, k))
    proba[:, model.classes_] = found
    return {
        **base,
        "series": SERIES_HGB if boosting else SERIES_SKLEARN,
        "algorithm": "sklearn",
        "mechanism": "none",
        "epsilon": math.inf,
        "n_estimators": model.n_iter_ if boosting else REFERENCE_TREES,
        "depth_rule": "unlimited",
        "depth": np.nan,
        "data_split": "bootstrap"
        if boosting or model.max_samples is None
        else f"bootstrap of {model.max_samples:,}",
        **score(test.y, proba, train.y, k),
        "empty_leaf_pct": math.nan,
        "flipped_leaf_pct": math.nan,
        "expected_flip_pct": math.nan,
        "mean_smooth_sensitivity": math.nan,
        "fit_seconds": time.perf_counter() - start,
        "private": False,
    }
