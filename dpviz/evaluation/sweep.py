"""Cross-validated sweeps over ε × trees × depth × mechanism × data split (SPEC §5).

Tree structure and the routing of training and test records do not depend on ε or on
the leaf mechanism, so each fold routes once per (trees, depth, split) and only redraws
the leaf outputs for every (mechanism, ε): a 20-point ε curve costs about one fit.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.model_selection import RepeatedStratifiedKFold
from threadpoolctl import threadpool_limits

from dpviz.compiled import kernels
from dpviz.evaluation.metrics import BASELINE_METRICS, majority_score, score
from dpviz.models.forest.estimator import (
    AUTO_TREES,
    DATA_SPLITS,
    DPRandomForestClassifier,
    LeafCounts,
    RoutedRecords,
    flipped_labels,
    split_tables,
)
from dpviz.models.forest.splits import SplitRelease, TableLayout, release_splits, split_epsilon
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.objective import decide
from dpviz.models.registry import get_algorithm
from dpviz.models.trees import space as routing
from dpviz.models.trees.depth import COUNTED_RULES, check_rule
from dpviz.models.trees.space import matrix_value_sums, packed_label_votes, route_compact
from dpviz.privacy.mechanisms import _check_epsilon, gap, get_mechanism, is_majority
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData

METRICS = ("accuracy", "auc", "f1", "macro_f1")
# Each fold's trivial baseline (always the training majority, metrics.majority_score),
# one column per metric on every row: ``majority_accuracy``, ``majority_f1``, ...
BASELINE_COLUMNS = tuple(f"majority_{m}" for m in BASELINE_METRICS)
DIAGNOSTICS = (
    "empty_leaf_pct",
    "flipped_leaf_pct",
    "expected_flip_pct",
    "mean_smooth_sensitivity",
    "fit_seconds",
)
# How a forest point's ε is split before its leaves (its ledger's other entries): a noisy
# record count, the split histograms and the class prior, as its fold model spent them.
BUDGET_COLUMNS = ("count_epsilon", "split_epsilon", "prior_epsilon", "check_epsilon")
GRID_KEYS = (
    "series",
    "algorithm",
    "mechanism",
    "epsilon",
    "n_estimators",
    "depth_rule",
    "data_split",
)
MIN_FOLDS, MAX_FOLDS = 2, 20
FLETCHER_ISLAM = "fletcher_islam"
SERIES_DP = "dp_forest"
SERIES_NONPRIVATE = "nonprivate_forest"
SERIES_SKLEARN = "sklearn_random_forest"
SERIES_HGB = "sklearn_hist_gradient_boosting"
# The non-private references a sweep can add, each computed once per fold (not per ε):
# the ε = ∞ forest of each forest-family structure, scikit-learn's random forest, and
# HistGradientBoosting (only when an algorithm whose registry reference it is runs).
REFERENCE_SERIES = (SERIES_NONPRIVATE, SERIES_SKLEARN, SERIES_HGB)

Progress = Callable[[int, int, str], None]
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


# A grid's structure and mechanism lists default to the registry's forest.
_FOREST_DEFAULTS = get_algorithm("fletcher_islam").defaults()


class SweepCancelled(Exception):
    """The user stopped the sweep; no partial result is returned."""


# A curve needs a few ε per decade; thousands only multiply the work and the output.
MAX_EPSILONS = 200


@dataclass(frozen=True)
class SweepGrid:
    """The configurations a sweep evaluates, every combination of the lists."""

    epsilons: Sequence[float]
    n_estimators: Sequence[int] = (_FOREST_DEFAULTS["n_estimators"],)
    depths: Sequence[str | int] = (_FOREST_DEFAULTS["depth"],)
    mechanisms: Sequence[str] = (_FOREST_DEFAULTS["mechanism"],)
    data_splits: Sequence[str] = ("disjoint",)
    references: bool | Collection[str] = True
    algorithms: Sequence[str] = ("fletcher_islam",)
    presets: Mapping[str, Mapping] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """The structure lists apply to fletcher_islam; every other algorithm runs its
        registry defaults, overridden by ``presets[algorithm]``. ``references`` is True
        (every reference that applies), False (none) or a collection of
        ``REFERENCE_SERIES``; it is stored as a frozenset."""
        if len(self.algorithms) == 0:
            raise ValueError("the sweep's algorithms list is empty")
        object.__setattr__(self, "algorithms", tuple(dict.fromkeys(self.algorithms)))
        object.__setattr__(self, "references", _reference_set(self.references))
        for name in self.algorithms:
            algorithm = get_algorithm(name)
            preset = dict(self.presets.get(name, {}))
            algorithm.make(1.0, **preset)
        for name in ("epsilons", "n_estimators", "depths", "mechanisms", "data_splits"):
            values = getattr(self, name)
            if len(values) == 0:
                raise ValueError(f"the sweep's {name.replace('_', ' ')} list is empty")
            object.__setattr__(self, name, tuple(values))
        if len(self.epsilons) > MAX_EPSILONS:
            raise ValueError(
                f"the sweep has {len(self.epsilons):,} ε values; at most {MAX_EPSILONS} "
                "are swept at once (a curve needs a few per decade)"
            )
        for eps in self.epsilons:
            _check_epsilon(eps)
        for trees in self.n_estimators:
            if trees == AUTO_TREES:
                continue
            if isinstance(trees, bool) or not isinstance(trees, int | np.integer) or trees < 1:
                raise ValueError(f"tree counts must be whole numbers ≥ 1 or 'auto', got {trees!r}")
        for depth in self.depths:
            check_rule(depth)
        for mech in self.mechanisms:
            get_mechanism(mech)
        for split in self.data_splits:
            if split not in DATA_SPLITS:
                raise ValueError(f"data split must be 'disjoint' or 'shared', got {split!r}")

    def wants(self, series: str) -> bool:
        """Whether the sweep adds the reference ``series`` (one of REFERENCE_SERIES)."""
        if series == SERIES_HGB:
            return series in self.references and any(
                get_algorithm(a).reference == SERIES_HGB for a in self.algorithms
            )
        return series in self.references

    @property
    def structures(self) -> list[tuple[int, str | int, str]]:
        return list(itertools.product(self.n_estimators, self.depths, self.data_splits))

    @property
    def n_points(self) -> int:
        others = len(self.algorithms) - (FLETCHER_ISLAM in self.algorithms)
        per_eps = len(self.structures) * len(self.mechanisms) * (FLETCHER_ISLAM in self.algorithms)
        return (per_eps + others) * len(self.epsilons)


def _reference_set(references) -> frozenset[str]:
    if isinstance(references, bool | np.bool_):
        return frozenset(REFERENCE_SERIES) if references else frozenset()
    if isinstance(references, str):
        references = (references,)
    chosen = frozenset(references)
    unknown = chosen - set(REFERENCE_SERIES)
    if unknown:
        raise ValueError(
            f"unknown reference {sorted(unknown)[0]!r}; choose from {', '.join(REFERENCE_SERIES)}"
        )
    return chosen


@dataclass
class SweepResult:
    """One row per grid point × repeat × fold, and mean/std per grid point."""

    results: pd.DataFrame
    summary: pd.DataFrame = field(init=False)

    def __post_init__(self) -> None:
        self.summary = summarise(self.results)


def reference_costs(results: pd.DataFrame) -> dict[str, str]:
    """What each non-private reference of a sweep's rows was and what it cost, one line
    per series: e.g. ``"10 trees, bootstrap of 2,500, 0.38 s over 5 fits"``."""
    out = {}
    for series, rows in results[results["series"].isin(REFERENCE_SERIES)].groupby("series"):
        trees = sorted({int(t) for t in rows["n_estimators"]})
        splits = ", ".join(sorted({str(s) for s in rows["data_split"]}))
        out[str(series)] = (
            f"{'/'.join(map(str, trees))} trees, {splits}, "
            f"{rows['fit_seconds'].sum():.2f} s over {len(rows)} fits"
        )
    return out


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation of each metric per grid point; means of diagnostics.

    With the trivial baseline's columns (``majority_<metric>``) their mean and std too
    (``majority_<metric>_mean``, ``majority_<metric>_std``), and with the ``one_class``
    flag the share of runs in which the model predicted a single class
    (``one_class_share``). Columns a results frame lacks are left out.
    """
    keys = [k for k in GRID_KEYS if k in results.columns]
    grouped = results.groupby(keys, dropna=False, sort=False)
    scored = [c for c in (*METRICS, *BASELINE_COLUMNS) if c in results.columns]
    summary = grouped[scored].agg(["mean", "std"])
    summary.columns = [f"{m}_{stat}" for m, stat in summary.columns]
    if "one_class" in results.columns:
        # As floats: rows from an older results frame (concatenated) may lack the flag.
        flags = results[keys].assign(one_class=results["one_class"].astype(float))
        summary["one_class_share"] = flags.groupby(keys, dropna=False, sort=False)[
            "one_class"
        ].mean()
    budget = [c for c in BUDGET_COLUMNS if c in results.columns]
    extra = grouped[[*DIAGNOSTICS, "depth", *budget]].mean()
    extra["private"] = grouped["private"].all()
    extra["n_runs"] = grouped.size()
    return summary.join(extra).reset_index()


def fold_splits(y: np.ndarray, folds: int, repeats: int, seed: int):
    if not MIN_FOLDS <= folds <= MAX_FOLDS:
        raise ValueError(f"folds must be between {MIN_FOLDS} and {MAX_FOLDS}, got {folds}")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    present = np.bincount(y)
    if np.count_nonzero(present) < 2:
        raise ValueError("the data holds only one class; a classifier needs at least two")
    if len(y) < 2 * folds:
        raise ValueError(f"{len(y)} records are too few for {folds} folds; lower the folds")
    splitter = RepeatedStratifiedKFold(n_splits=folds, n_repeats=repeats, random_state=seed)
    # A class rarer than the fold count (Nursery's 2 'recommend' records) is spread over
    # as many folds as it has records; scikit-learn warns and carries on, and so do we.
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="The least populated class", category=UserWarning
        )
        return list(splitter.split(np.zeros(len(y)), y))


def subset(encoded: EncodedData, rows: np.ndarray) -> EncodedData:
    return EncodedData(
        encoded.continuous[rows],
        encoded.discrete[rows],
        encoded.y[rows],
        encoded.report,
    )


def run_sweep(
    encoded: EncodedData,
    schema: Schema,
    grid: SweepGrid,
    *,
    folds: int = 5,
    repeats: int = 1,
    seed: int = 0,
    n_jobs: int = 1,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    client=None,
    noise_seed: int | None = None,
) -> SweepResult:
    """Evaluate every grid point on the same repeated stratified folds.

    Folds run in parallel with joblib (``n_jobs``), or as tasks on a Dask cluster when
    a ``distributed.Client`` is given; ``progress(done, total, message)`` is called
    after each fold and ``cancel()`` is checked between folds. Metrics and
    diagnostics come from the raw data: NOT private (only the models are).

    ``seed`` fixes the folds and the public structure of every model; each model's
    noise is fresh and secret unless ``noise_seed`` makes it replayable (for tests and
    exact reproduction: such models are NOT private).
    """
    splits = fold_splits(encoded.y, folds, repeats, seed)
    total = len(splits)
    if client is not None:
        return _run_on_cluster(
            client, encoded, schema, grid, splits, folds, (seed, noise_seed), progress, cancel
        )
    tasks = (
        delayed(_fold_rows)(
            subset(encoded, tr), subset(encoded, te), schema, grid, i, folds, (seed, noise_seed)
        )
        for i, (tr, te) in enumerate(splits)
    )
    rows: list[dict] = []
    if n_jobs == 1:
        outputs = (task[0](*task[1], **task[2]) for task in tasks)
    else:
        outputs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks)
    try:
        for done, fold_rows in enumerate(outputs, start=1):
            rows.extend(fold_rows)
            if progress is not None:
                progress(done, total, f"fold {done} of {total} done")
            if cancel is not None and cancel() and done < total:
                raise SweepCancelled(f"sweep cancelled after {done} of {total} folds")
    finally:
        close = getattr(outputs, "close", None)
        if close is not None:
            close()
    results = pd.DataFrame(rows).sort_values(["repeat", "fold"], kind="stable")
    return SweepResult(results.reset_index(drop=True))


def _cluster_fold(encoded, schema, grid, train, test, index, folds, seeds):
    return _fold_rows(
        subset(encoded, train), subset(encoded, test), schema, grid, index, folds, seeds
    )


def _run_on_cluster(client, encoded, schema, grid, splits, folds, seeds, progress, cancel):
    """One Dask task per fold; a worker that dies has its fold re-run elsewhere (up to
    twice), and a fold that cannot finish stops the sweep with no partial result."""
    from concurrent.futures import CancelledError

    from distributed import KilledWorker, as_completed

    rows: list[dict] = []
    futures = []
    try:
        shared = client.scatter(encoded, broadcast=True)
        futures = [
            client.submit(
                _cluster_fold,
                *(shared, schema, grid, train, test, i, folds, seeds),
                pure=False,
                retries=2,
            )
            for i, (train, test) in enumerate(splits)
        ]
        for done, future in enumerate(as_completed(futures), start=1):
            rows.extend(future.result())
            if progress is not None:
                progress(done, len(futures), f"fold {done} of {len(futures)} done")
            if cancel is not None and cancel() and done < len(futures):
                raise SweepCancelled(f"sweep cancelled after {done} of {len(futures)} folds")
    except (KilledWorker, CancelledError, OSError) as exc:
        # OSError covers a connection closed by a dying worker (CommClosedError), e.g.
        # while the data is being scattered; a lost future surfaces as CancelledError.
        raise ValueError(
            f"a Dask worker died repeatedly while running a fold ({type(exc).__name__}: "
            f"{exc}); the sweep stopped and returns no partial result — check the workers' "
            "memory and retry"
        ) from None
    finally:
        client.cancel(futures)
    results = pd.DataFrame(rows).sort_values(["repeat", "fold"], kind="stable")
    return SweepResult(results.reset_index(drop=True))


_FOREST_GRID_KEYS = ("n_estimators", "depth", "mechanism", "data_split")


def _forest_preset(grid: SweepGrid) -> dict:
    """The forest's preset less what the grid sets (trees, depth, mechanism, split)."""
    preset = grid.presets.get(FLETCHER_ISLAM, {})
    return {k: v for k, v in preset.items() if k not in _FOREST_GRID_KEYS}


def _models(grid: SweepGrid, random_state: int, noise_seed: int | None):
    """(algorithm id, unfitted model, mechanisms to release) per structure to route."""
    for name in grid.algorithms:
        if name == FLETCHER_ISLAM:
            for trees, depth, split in grid.structures:
                model = get_algorithm(name).make(
                    grid.epsilons[0],
                    random_state=random_state,
                    noise_seed=noise_seed,
                    n_estimators=trees,
                    depth=depth,
                    mechanism=grid.mechanisms[0],
                    data_split=split,
                    **_forest_preset(grid),
                )
                yield name, model, grid.mechanisms
        elif get_algorithm(name).forest_family:
            model = get_algorithm(name).make(
                grid.epsilons[0],
                random_state=random_state,
                noise_seed=noise_seed,
                **grid.presets.get(name, {}),
            )
            yield name, model, (model.mechanism,)


def declare_fold_size(model, n_records: int) -> None:
    """Declare a training fold's record count public for a forest whose depth rule
    (``jpw``, ``records``) or tree count (``"auto"``) reads it, unless a count was
    declared already.

    A sweep grows a fold's trees once for every ε; a noisy count would be drawn at one
    ε and reused at the others, so the structure would depend on ε. An evaluated
    point's ledger therefore omits that count (5% of ε); a release without a declared
    count pays it."""
    reads = getattr(model, "reads_record_count", None)
    if reads is not None and reads() and not model.declared_n:
        model.set_params(declared_n=int(n_records))


def split_rungs(model, schema, epsilons: Sequence[float]) -> list[list[float]]:
    """``epsilons`` grouped by the ε their forest spends on split histograms
    (:func:`~dpviz.models.forest.splits.split_epsilon`), in order of first appearance.

    The structure of a forest with ``quantile`` split points depends on that release,
    so a sweep grows one structure per rung and releases the leaves of every ε of the
    rung from it: each point is then distributed as a plain fit at its ε. Without
    continuous features, or with ``uniform`` split points, there is one rung."""
    rule = getattr(model, "split_points", "uniform")
    rungs: dict[float, list[float]] = {}
    for eps in epsilons:
        rungs.setdefault(split_epsilon(eps, len(schema.continuous), rule), []).append(eps)
    return list(rungs.values())


def _fold_seed(seed: int | None, index: int) -> int | None:
    return None if seed is None else seed * 1_000_003 + index


def _fold_rows(
    train,
    test,
    schema,
    grid: SweepGrid,
    index: int,
    folds: int,
    seeds: tuple,
):
    """The rows of one fold; ``seeds`` is (public seed, noise seed or None)."""
    seed, noise_seed = seeds
    noise = _fold_seed(noise_seed, index)
    rows = []
    base = {"repeat": index // folds, "fold": index % folds}
    k = len(schema.classes)
    for name in grid.algorithms:
        if not get_algorithm(name).forest_family:
            rows.extend(
                _refit_rows(base, train, test, schema, grid, name, _fold_seed(seed, index), noise)
            )
    for algorithm, model, mechanisms in _models(grid, _fold_seed(seed, index), noise):
        depth, split = model.depth, model.data_split
        for group, epsilons in enumerate(split_rungs(model, schema, grid.epsilons)):
            model.set_params(epsilon=epsilons[0])
            start = time.perf_counter()
            declare_fold_size(model, train.n_records)
            model.fit_encoded(train, schema)
            routed = model.route_records(test)
            route_seconds = time.perf_counter() - start
            trees = model.n_estimators_
            empty_pct = model.diagnostics_["empty_leaf_pct"]
            private = {}  # whether a release is proven does not depend on its ε
            points = list(itertools.product(mechanisms, epsilons))
            for (mech, eps), votes, point_seconds, (diagnostics, prior) in release_votes(
                model, routed, points, functools.partial(_point_facts, private=private)
            ):
                seconds = route_seconds + point_seconds
                fractions = _fractions(votes)
                predicted = decide(fractions, prior, model.objective)
                rows.append(
                    {
                        **base,
                        "series": SERIES_DP,
                        "algorithm": algorithm,
                        "mechanism": mech,
                        "epsilon": float(eps),
                        "n_estimators": trees,
                        "depth_rule": str(depth),
                        "depth": model.depth_,
                        "data_split": split,
                        **score(test.y, fractions, train.y, k, predicted),
                        "empty_leaf_pct": empty_pct,
                        **diagnostics,
                        "fit_seconds": seconds,
                        "private": private[mech],
                    }
                )
            if (
                group == 0
                and grid.wants(SERIES_NONPRIVATE)
                and (algorithm != FLETCHER_ISLAM or split == grid.data_splits[0])
            ):
                # The twin releases what the first mechanism swept releases: exact counts
                # for a count forest (the default), true majority labels otherwise.
                counts = get_mechanism(mechanisms[0]).releases == "counts"
                rows.append(
                    _nonprivate_row(
                        base,
                        train,
                        test,
                        schema,
                        trees,
                        depth,
                        index,
                        seed,
                        algorithm,
                        model,
                        routed,
                        counts=counts,
                    )
                )
    if grid.wants(SERIES_SKLEARN):
        rows.append(_sklearn_row(base, train, test, k, index, seed))
    if grid.wants(SERIES_HGB):
        rows.append(_sklearn_row(base, train, test, k, index, seed, boosting=True))
    # Every row of the fold carries the fold's trivial baseline (NOT private, as the
    # metrics): what always answering the training majority scores on these test records.
    baseline = majority_score(test.y, train.y, k)
    for row in rows:
        row.update({f"majority_{m}": value for m, value in baseline.items()})
    return rows


def release_votes(
    model: DPRandomForestClassifier,
    routed: RoutedRecords,
    points: Sequence[tuple[str, float]],
    describe: Callable[[DPRandomForestClassifier], dict] | None = None,
):
    """Release ``model``'s leaves at each (mechanism, ε) of ``points`` in turn and yield
    ``((mechanism, ε), votes, seconds, describe(model))`` per point, in order.

    Each release replaces the previous one unpublished (:meth:`release_instead`: the
    ledger books only the last, and no noise serves two points); ``describe`` reads the
    model while it holds that point's release. A label point's votes on ``routed`` are
    its leaf outputs counted over the routing plus a term that does not depend on the
    record (the class prior: the votes of a record no tree reaches); a count point's
    are a per-record function of its leaves' evidence summed over the routing
    (:func:`dpviz.models.forest.estimator.count_votes`). So the outputs of
    every point are kept (bytes per leaf) and, when the routing is a compact matrix and
    the compiled kernels are loaded, counted together: label releases in one pass over
    the matrix (:func:`dpviz.models.trees.space.packed_label_votes`), noisy counts a few
    points a pass; otherwise each point's votes are counted at its release.
    ``seconds``: the point's release plus its share of the counting passes."""
    k = len(model.classes_)
    local = routed.local
    batched = (
        local is not None
        and local.flags.c_contiguous
        and kernels.get(wait=local.size >= routing.COMPILED_FROM_VISITS) is not None
    )
    kept = []  # (point, votes or None, labels, noisy counts, record-free term, seconds, info)
    for mech, eps in points:
        start = time.perf_counter()
        model.release_instead(eps, mech)
        info = describe(model) if describe is not None else None
        if batched:
            # The record-free term first: before the routed leaves' untrained outputs
            # are drawn, it reads no leaf at all.
            base = model.votes(_reached_by_no_tree(routed))
            outputs = model._outputs_of(routed)
            noisy = None
            if outputs.noisy_counts is not None:
                # A count forest sums its leaves' evidence and scores the sums; ``base``
                # then holds how to score them.
                noisy, base = model.count_scoring(outputs.noisy_counts)
            item = (None, outputs.labels, noisy, base)
        else:
            item = (model.votes(routed), None, None, None)
        kept.append(((mech, eps), *item, time.perf_counter() - start, info))
    if not batched:
        for point, votes, _, _, _, seconds, info in kept:
            yield point, votes, seconds, info
        return
    start = time.perf_counter()
    # counted[i](base): point i's votes plus the record-free term ``base``.
    counted: dict[int, Callable[[np.ndarray], np.ndarray]] = {}
    labelled = [i for i, item in enumerate(kept) if item[3] is None]
    votes_of = packed_label_votes(local, routed.offsets, [kept[i][2] for i in labelled], k)
    for r, i in enumerate(labelled):
        if votes_of is not None:
            counted[i] = lambda base, r=r: votes_of(r, base)
        else:  # more classes than a word's fields hold: the model's own count per point
            counted[i] = lambda base, i=i: (
                DPRandomForestClassifier._label_votes(routed, kept[i][2], k) + base
            )
    noisy = [i for i, item in enumerate(kept) if item[3] is not None]
    # Noisy counts: each leaf's evidence (k columns and a tree count), summed in tree
    # order as model.votes does, a few points per pass so that the output stays within
    # a few (records, k + 1) arrays; then scored per point (``base``: count_votes).
    width = k + 1
    group = max(1, 4 // max(1, width // 2))
    for g in range(0, len(noisy), group):
        part = noisy[g : g + group]
        values = np.concatenate([kept[i][3] for i in part], axis=1)
        sums = matrix_value_sums(local, values, routed.offsets)
        for j, i in enumerate(part):
            counted[i] = lambda score, sums=sums, j=j: score(sums[:, j * width : (j + 1) * width])
    share = (time.perf_counter() - start) / len(kept)
    for i, (point, _, _, _, base, seconds, info) in enumerate(kept):
        begin = time.perf_counter()
        votes = counted[i](base)
        yield point, votes, seconds + share + time.perf_counter() - begin, info


def _point_facts(model: DPRandomForestClassifier, private: dict) -> tuple[dict, np.ndarray]:
    """A sweep point's leaf diagnostics and the ε its model spent before the leaves
    (:data:`BUDGET_COLUMNS`), and the class prior its ``objective`` weighs by (each
    point releases its own noisy prior); notes in ``private`` whether its mechanism's
    release is proven (read from the ledger once per mechanism)."""
    if model.mechanism not in private:
        private[model.mechanism] = bool(model.ledger_.private)
    budget = (
        model.depth_count_epsilon_,
        model.split_epsilon_,
        model.prior_epsilon_,
        model.check_epsilon_,
    )
    facts = {**_leaf_diagnostics(model), **dict(zip(BUDGET_COLUMNS, map(float, budget)))}
    return facts, model.decision_prior_


def _reached_by_no_tree(routed: RoutedRecords) -> RoutedRecords:
    """One record that no tree reaches: its votes are the record-free term."""
    return RoutedRecords(
        1,
        None,
        None,
        np.empty(0, dtype=np.uint64),
        np.empty(0, dtype=np.int64),
        local=np.zeros((0, 1), dtype=routed.local.dtype),
        offsets=np.zeros(0, dtype=np.int64),
    )


def _refit_rows(base, train, test, schema, grid: SweepGrid, name, random_state, noise_seed):
    """Algorithms whose structure reads the data are fitted again for every ε."""
    rows = []
    for eps in grid.epsilons:
        model = get_algorithm(name).make(
            eps, random_state=random_state, noise_seed=noise_seed, **grid.presets.get(name, {})
        )
        start = time.perf_counter()
        model.fit_encoded(train, schema)
        seconds = time.perf_counter() - start
        diag = _refit_diagnostics(model)
        rows.append(
            {
                **base,
                "series": SERIES_DP,
                "algorithm": name,
                "mechanism": "laplace_counts",
                "epsilon": float(eps),
                "n_estimators": getattr(model, "n_estimators", 1),
                "depth_rule": str(model.max_depth),
                # "auto" (greedy trees) is resolved when fitting: the depth used.
                "depth": getattr(model, "depth_", model.max_depth),
                "data_split": "all",
                **score(
                    test.y,
                    model._proba(test),
                    train.y,
                    len(schema.classes),
                    model._decision(test),
                ),
                **{key: diag[key] for key in DIAGNOSTICS if key in diag},
                "fit_seconds": seconds,
                "private": bool(model.ledger_.private),
            }
        )
    return rows


def _refit_diagnostics(model) -> dict:
    """``model.diagnostics_``, faster for a greedy tree: it lists every leaf of the full
    tree (32,768 at depth 5, nearly all empty) and its ``diagnostics_`` computes the exact
    Laplace flip probability of each, ~5 s per fit, then averages over the non-empty
    ones. An empty leaf cannot flip, so computing the non-empty leaves only gives the
    same numbers (a test checks this) about 40 times faster; leaves with equal counts
    share one computation."""
    if not isinstance(model, DPDecisionTreeClassifier):
        return model.diagnostics_
    counts = model.leaf_counts_
    nonempty = counts.sum(axis=1) > 0
    out = {
        "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
        "mean_smooth_sensitivity": float("nan"),
    }
    if not nonempty.any():
        return {**out, "flipped_leaf_pct": 0.0, "expected_flip_pct": 0.0}
    counts = counts[nonempty]
    flipped = ~is_majority(counts)[np.arange(len(counts)), model.leaf_labels_[nonempty]]
    # Each leaf at its own ε (a leaf closed early by the stopping rule has more than ε').
    flip = model.flip_probability(counts, model.leaf_epsilon_[nonempty])
    return {
        **out,
        "flipped_leaf_pct": 100.0 * float(flipped.mean()),
        "expected_flip_pct": 100.0 * float(flip.mean()),
    }


def _leaf_diagnostics(model: DPRandomForestClassifier) -> dict:
    counts = model.leaf_counts_
    if len(counts) == 0:
        return {
            "flipped_leaf_pct": 0.0,
            "expected_flip_pct": 0.0,
            "mean_smooth_sensitivity": math.nan,
        }
    eps = model.tree_epsilon_
    flipped = flipped_labels(counts, model.leaf_labels_)
    expected = get_mechanism(model.mechanism).flip_probability(counts, eps)
    return {
        "flipped_leaf_pct": 100.0 * float(flipped.mean()),
        "expected_flip_pct": 100.0 * float(expected.mean()),
        "mean_smooth_sensitivity": float(np.exp(-gap(counts) * eps).mean()),
    }


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


def _twin_votes(model, dp, train, schema, routed) -> np.ndarray | None:
    """Fit the ε = ∞ twin ``model`` (unfitted) on ``train`` from the trees the DP forest
    ``dp`` built and its routing ``routed`` of the test records, when they have the same
    structure; None otherwise (then the twin is fitted and routes on its own).

    The twin counts every training record in every tree (``shared``): the training
    records go through ``dp``'s built trees once (a compact matrix), its leaves are
    released as a fit releases them (true majority, public tie-breaks), and its votes
    are those of the same test routing. The same model and votes as ``fit_encoded`` +
    ``_votes`` (a test checks it) at about the cost of one more sweep point."""
    if dp is None or routed is None or routed.local is None:
        return None
    forest = dp._compact_forest(np.arange(dp.n_estimators_), train.n_records)
    if forest is None:
        return None
    # fit_encoded's steps, with the leaves counted through dp's trees.
    model._validate_params()
    model.schema_, model.n_features_in_ = schema, len(schema.features)
    model.classes_ = np.asarray(schema.classes, dtype=object)
    start = time.perf_counter()
    model.encoding_report_ = train.report
    source = model._release_source(0)
    # The DP forest's released split points, so that the twin has the same trees.
    model._prepare(train.n_records, source, splits=dp.splits_)
    same_splits = (model.splits_ is None) == (dp.splits_ is None)
    if (
        model.depth_ != dp.depth_
        or not np.array_equal(model.root_keys_, dp.root_keys_)
        or not same_splits
    ):
        return None
    compact = route_compact(
        dp.space_, dp.root_keys_, forest.trees, train.continuous, train.discrete, forest=forest
    )
    if compact.abstain is not None and (compact.local == compact.abstain).any():
        return None  # training records never abstain (unknown values are dropped)
    k = len(schema.classes)
    n_leaves = len(compact.leaf_keys)
    code = (compact.offsets[:, None] + compact.local) * k + train.y
    counts = np.bincount(code.reshape(-1), minlength=n_leaves * k).reshape(n_leaves, k)
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
    model._release_leaves(source)
    model.fit_seconds_ = time.perf_counter() - start
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


def _exact_splits(train, schema) -> SplitRelease:
    """The split release of the ε = ∞ twin: the TRUE class tables of ``train`` read
    without noise (a NOT private reference), thresholds then drawn as the DP forest
    draws them, from the public seed."""
    # At ε = 10¹² the discrete Laplace noise is 0 with probability 1 − 10⁻⁴³⁴²⁹⁴⁴⁸¹⁹⁰.
    source = NoiseSource.replayable(0)
    return release_splits(split_tables(train, schema), TableLayout.of(schema), 1e12, source)


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
):
    """The forest's non-private twin (:func:`_nonprivate_twin`): all data in every tree,
    true majority labels, or exact counts when ``counts`` (the DP forest releases counts).
    ``dp`` and ``routed``: the DP forest of the same structure and its routing of
    ``test``, reused when they fit (:func:`_twin_votes`)."""
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
    exact = _exact_splits(train, schema) if getattr(dp, "splits_", None) is not None else None
    # Trees drawn from noisy split tables differ with the DP noise: the twin draws its
    # own from the exact tables, so that the reference is the same on every page and run
    # with the same settings. Uniform split points are the same trees: their routing
    # is reused.
    votes = None if exact is not None else _twin_votes(model, dp, train, schema, routed)
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
        "empty_leaf_pct": model.diagnostics_["empty_leaf_pct"],
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


def _fractions(votes: np.ndarray) -> np.ndarray:
    total = votes.sum(axis=1, keepdims=True)
    return np.divide(votes, total, out=np.full_like(votes, 1.0 / votes.shape[1]), where=total > 0)
