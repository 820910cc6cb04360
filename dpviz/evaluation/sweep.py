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
from collections.abc import Callable, Sequence

import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone

from dpviz.compiled import kernels
from dpviz.evaluation.metrics import majority_score, positive_class, score
from dpviz.evaluation.sweep_grid import (
    BASELINE_COLUMNS,
    BUDGET_COLUMNS,
    DIAGNOSTICS,
    FLETCHER_ISLAM,
    GRID_KEYS,
    MAX_EPSILONS,
    MAX_FOLDS,
    METRICS,
    MIN_FOLDS,
    REFERENCE_SERIES,
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    Progress,
    SweepCancelled,
    SweepGrid,
    SweepResult,
    _fractions,
    declare_fold_size,
    fold_splits,
    reference_costs,
    subset,
    summarise,
)
from dpviz.evaluation.sweep_points import LeafPatterns, _point_facts, _refit_rows, release_votes
from dpviz.evaluation.sweep_references import (
    REFERENCE_MAX_SAMPLES,
    REFERENCE_TREES,
    TWIN_EPSILON,
    _empty_leaf_pct,
    _nonprivate_row,
    _sklearn_row,
    _twin_row_beside,
)
from dpviz.models.forest.estimator import AUTO_TREES
from dpviz.models.forest.floor import records_split
from dpviz.models.forest.sizing import auto_shared_trees, signal_scale
from dpviz.models.forest.splits import split_epsilon
from dpviz.models.objective import decide
from dpviz.models.registry import get_algorithm
from dpviz.privacy.mechanisms import get_mechanism
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData


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
    threads: int = 1,
) -> SweepResult:
    """Evaluate every grid point on the same repeated stratified folds.

    Folds run in parallel with joblib (``n_jobs`` processes, or, split into their
    parts, ``threads`` threads of this process: :func:`fold_threads`), or as tasks on a
    Dask cluster when
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
    if n_jobs == 1 and threads > 1:
        # The folds' parts on threads of this process: no worker to start or data to
        # copy, and the compiled kernels, numpy and the cipher release the GIL for most
        # of a part.
        outputs = _folds_on_threads(
            encoded, schema, grid, splits, folds, (seed, noise_seed), threads
        )
    elif n_jobs == 1:
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


def fold_threads(folds: int, repeats: int = 1, n_jobs: int = 1) -> int:
    """Threads for a sweep's folds when no worker process runs them (``n_jobs`` 1): one
    per core the kernels may use, at most one per fold. A fold's rows do not depend on
    the thread that ran it (each fold has its own models, public seed and noise), so
    the results are the same; only the order folds finish in changes."""
    if n_jobs != 1:
        return 1
    return max(1, min(kernels.cores(), folds * repeats))


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


def split_rungs(model, schema, epsilons: Sequence[float]) -> list[list[float]]:
    """``epsilons`` grouped by the structure their forest grows, in order of first
    appearance: the ε it spends on split histograms
    (:func:`~dpviz.models.forest.splits.split_epsilon`) and, for a forest sized from the
    record count (``"auto"`` trees or the ``records`` depth rule), the decade of ε its
    size follows below ε = 1 (:func:`~dpviz.models.forest.sizing.signal_scale`), and for
    ``data_split="auto"`` the tree count of trees that share the records from ε = 5
    (:func:`~dpviz.models.forest.sizing.auto_shared_trees`).

    A sweep grows one structure per rung and releases the leaves of every ε of the
    rung from it: each point is then distributed as a plain fit at its ε. Without
    continuous features, or with ``uniform`` split points, and with a fixed size, there
    is one rung."""
    rule = getattr(model, "split_points", "uniform")
    sized = getattr(model, "n_estimators", None) == AUTO_TREES or (
        getattr(model, "depth", None) == "records"
    )
    split_at = getattr(model, "split_at", None)
    rungs: dict[tuple, list[float]] = {}
    for eps in epsilons:
        # Trees that share the records from ε = 5 (data_split="auto") are a structure of
        # their own at each tree count (sizing.auto_shared_trees).
        shared = split_at is not None and model.data_split == "auto" and split_at(eps) == "shared"
        key = (
            split_epsilon(eps, len(schema.continuous), rule),
            signal_scale(eps) if sized else 1.0,
            auto_shared_trees(eps) if shared else 0,
        )
        rungs.setdefault(key, []).append(eps)
    return list(rungs.values())


def _fold_seed(seed: int | None, index: int) -> int | None:
    return None if seed is None else seed * 1_000_003 + index


# One part of a fold's rows: (weight, a call that returns the rows). The weight orders
# the threads' queue only, heaviest first: a forest's rung weighs its largest ε (larger ε
# grow larger forests: sizing.signal_scale); refits and scikit-learn's references, of
# unknown cost, go first.
Part = tuple[float, Callable[[], list[dict]]]
_FIRST = math.inf


def _fold_parts(
    train, test, schema, grid: SweepGrid, index: int, folds: int, seeds: tuple
) -> list[Part]:
    """The parts of one fold's rows, in the order of the rows; ``seeds`` is (public seed,
    noise seed or None). Parts share no state: a refitted algorithm's point per ε, a
    forest's split-table rung (each part fits its own model), a forest's twin where it
    grows its own trees, scikit-learn's references. Replayable noise is named by the
    model's mechanism, ε and rung, not drawn in sequence, so the rows do not depend on
    the order the parts run in (:meth:`DPRandomForestClassifier._release_source`)."""
    seed, noise_seed = seeds
    public, noise = _fold_seed(seed, index), _fold_seed(noise_seed, index)
    base = {"repeat": index // folds, "fold": index % folds}
    k = len(schema.classes)
    parts: list[Part] = []
    for name in grid.algorithms:
        if not get_algorithm(name).forest_family:
            refit = (base, train, test, schema, grid, name, public, noise)
            parts.extend(
                (_FIRST, functools.partial(_refit_rows, *refit, [eps])) for eps in grid.epsilons
            )
    for algorithm, model, mechanisms in _models(grid, public, noise):
        parts.extend(
            _forest_parts(
                base, train, test, schema, grid, (index, seed), algorithm, model, mechanisms
            )
        )
    for series, boosting in ((SERIES_SKLEARN, False), (SERIES_HGB, True)):
        if grid.wants(series):
            row = functools.partial(_sklearn_row, base, train, test, k, index, seed, boosting)
            parts.append((_FIRST, lambda row=row: [row()]))
    return parts


def _forest_parts(
    base, train, test, schema, grid: SweepGrid, fold: tuple, algorithm, model, mechanisms
) -> list[Part]:
    """One forest structure's parts: one per split-table rung (:func:`split_rungs`), each
    on its own copy of the unfitted ``model``, and its non-private twin. ``fold``: the
    fold's (index, public seed)."""
    rungs = split_rungs(model, schema, grid.epsilons)
    top = max(range(len(rungs)), key=lambda i: max(rungs[i]))
    # The twin shares the structure of the largest swept ε, the one nearest to ε = ∞:
    # below ε = 1 a forest is sized for its signal (fewer, shallower trees), and a twin of
    # that size would understate what the data can give.
    twin = grid.wants(SERIES_NONPRIVATE) and (
        algorithm != FLETCHER_ISLAM or model.data_split == grid.data_splits[0]
    )
    # The twin releases what the first mechanism swept releases: exact counts for a count
    # forest (the default), true majority labels otherwise.
    counts = get_mechanism(mechanisms[0]).releases == "counts"
    rule = getattr(model, "split_points", "uniform")
    # Split points drawn from split tables: the twin draws its own from the exact tables,
    # so it needs only the top rung's sizes and runs beside it. Otherwise it has the top
    # rung's trees, and reuses its built trees and routing in the same part.
    beside = twin and split_epsilon(rungs[top][0], len(schema.continuous), rule) > 0
    parts: list[Part] = []
    for group, epsilons in enumerate(rungs):
        inside = twin and group == top and not beside
        rows = functools.partial(
            _rung_rows, base, train, test, schema, fold, algorithm, clone(model), mechanisms
        )
        parts.append(
            (max(epsilons), functools.partial(rows, epsilons, counts if inside else None))
        )
        if twin and group == top and beside:
            row = functools.partial(
                _twin_row_beside, base, train, test, schema, *fold, algorithm, clone(model)
            )
            parts.append((max(epsilons), lambda row=row, e=epsilons[0]: [row(e, counts)]))
    return parts


def _rung_rows(
    base,
    train,
    test,
    schema,
    fold: tuple,
    algorithm,
    model,
    mechanisms,
    epsilons,
    twin_counts: bool | None = None,
) -> list[dict]:
    """One split-table rung's rows: ``model`` (unfitted) grown once at ``epsilons[0]``
    and its leaves released at every (mechanism, ε) of the rung; with ``twin_counts``
    (not None) the twin's row after them, on this structure's trees."""
    k = len(schema.classes)
    depth, split = model.depth, model.data_split
    model.set_params(epsilon=epsilons[0])
    start = time.perf_counter()
    declare_fold_size(model, train.n_records)
    model.fit_encoded(train, schema)
    routed = model.route_records(test)
    route_seconds = time.perf_counter() - start
    trees = model.n_estimators_
    empty_pct = _empty_leaf_pct(model)
    private = {}  # whether a release is proven does not depend on its ε
    points = list(itertools.product(mechanisms, epsilons))
    facts = functools.partial(
        _point_facts, private=private, patterns=LeafPatterns.of(model.leaf_counts_)
    )
    rows = []
    positive = positive_class(train.y, k)  # the rung's points score one training fold
    # The fit's release (at the rung's first ε) is the first point's when their
    # mechanisms agree: nothing has read it.
    for (mech, eps), votes, point_seconds, (diagnostics, rule) in release_votes(
        model, routed, points, facts, fitted=True
    ):
        seconds = route_seconds + point_seconds
        fractions = _fractions(votes)
        predicted = decide(fractions, rule[0], model.objective, rule[1])
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
                "records_split": records_split(model),
                **score(test.y, fractions, train.y, k, predicted, positive),
                "empty_leaf_pct": empty_pct,
                **diagnostics,
                "fit_seconds": seconds,
                "private": private[mech],
            }
        )
    if twin_counts is not None:
        index, seed = fold
        twin = (base, train, test, schema, trees, depth, index, seed, algorithm, model, routed)
        rows.append(_nonprivate_row(*twin, counts=twin_counts))
    return rows


def _with_baseline(rows: list[dict], test_y, train_y, k: int) -> list[dict]:
    """Every row of a fold carries the fold's trivial baseline (NOT private, as the
    metrics): what always answering the training majority scores on its test records."""
    baseline = {f"majority_{m}": value for m, value in majority_score(test_y, train_y, k).items()}
    for row in rows:
        row.update(baseline)
    return rows


def _fold_rows(
    train,
    test,
    schema,
    grid: SweepGrid,
    index: int,
    folds: int,
    seeds: tuple,
):
    """The rows of one fold, its parts run in turn; ``seeds`` is (public seed, noise
    seed or None)."""
    parts = _fold_parts(train, test, schema, grid, index, folds, seeds)
    rows = [row for _, part in parts for row in part()]
    return _with_baseline(rows, test.y, train.y, len(schema.classes))


def _numbered(fold: int, part: int, n_parts: int, rows: Callable[[], list[dict]]):
    # The parts already fill every thread: a part's noise buffers are drawn in its own
    # thread (the same numbers in any order), not queued on the kernels' threads.
    with kernels.items_in_place():
        return fold, part, n_parts, rows()


def _folds_on_threads(encoded, schema, grid: SweepGrid, splits, folds: int, seeds, threads):
    """Each fold's rows, yielded when its last part is done: the parts of all folds
    (:func:`_fold_parts`) share ``threads`` threads of this process, a fold's heaviest
    first, so that no thread idles while another finishes a whole fold (5 folds on 2
    threads would otherwise run in 3 rounds). Folds are cut in order, a few at a time:
    the records of the folds not yet reached are not copied."""

    def tasks():
        for i, (train_rows, test_rows) in enumerate(splits):
            train, test = subset(encoded, train_rows), subset(encoded, test_rows)
            parts = _fold_parts(train, test, schema, grid, i, folds, seeds)
            for j in sorted(range(len(parts)), key=lambda j: -parts[j][0]):
                yield delayed(_numbered)(i, j, len(parts), parts[j][1])

    k = len(schema.classes)
    outputs = Parallel(
        n_jobs=threads, backend="threading", return_as="generator_unordered", batch_size=1
    )(tasks())
    finished: dict[int, dict[int, list[dict]]] = {}
    try:
        for i, j, n_parts, rows in outputs:
            got = finished.setdefault(i, {})
            got[j] = rows
            if len(got) == n_parts:
                del finished[i]
                train_rows, test_rows = splits[i]
                fold_rows = [row for part in range(n_parts) for row in got[part]]
                yield _with_baseline(fold_rows, encoded.y[test_rows], encoded.y[train_rows], k)
    finally:
        outputs.close()


__all__ = [
    "BASELINE_COLUMNS",
    "BUDGET_COLUMNS",
    "DIAGNOSTICS",
    "FLETCHER_ISLAM",
    "GRID_KEYS",
    "MAX_EPSILONS",
    "MAX_FOLDS",
    "METRICS",
    "MIN_FOLDS",
    "REFERENCE_MAX_SAMPLES",
    "REFERENCE_SERIES",
    "REFERENCE_TREES",
    "SERIES_DP",
    "SERIES_HGB",
    "SERIES_NONPRIVATE",
    "SERIES_SKLEARN",
    "TWIN_EPSILON",
    "LeafPatterns",
    "Progress",
    "SweepCancelled",
    "SweepGrid",
    "SweepResult",
    "declare_fold_size",
    "fold_splits",
    "fold_threads",
    "reference_costs",
    "release_votes",
    "run_sweep",
    "split_rungs",
    "subset",
    "summarise",
]
