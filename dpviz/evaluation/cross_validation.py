"""Cross-validated evaluation of one configuration: a one-point sweep (SPEC §5)."""

from __future__ import annotations

from dpviz.evaluation.metrics import BASELINE_METRICS
from dpviz.evaluation.sweep import METRICS, SERIES_DP, Progress, SweepGrid, run_sweep
from dpviz.evaluation.sweep_grid import row_ledger
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import resolve_depth
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData


def cross_validate(
    encoded: EncodedData,
    schema: Schema,
    *,
    epsilon: float,
    algorithm: str = "fletcher_islam",
    folds: int = 5,
    repeats: int = 1,
    seed: int = 0,
    n_jobs: int = 1,
    progress: Progress | None = None,
    client=None,
    noise_seed: int | None = None,
    threads: int = 1,
    **params,
) -> dict:
    """Repeated stratified k-fold evaluation: metrics (mean ± std) and leaf diagnostics.

    Runs the sweep engine on one grid point, so it equals that point of any sweep with
    the same folds and seed. Diagnostics come from the raw data and are NOT private;
    the privacy entry is the trained model's ledger.

    Beside ``accuracy``, ``auc``, ``f1`` and ``macro_f1`` (each ``{"mean", "std"}``),
    ``majority`` holds the trivial baseline on the same folds (always answering the
    training majority: ``{metric: {"mean", "std"}}``) and ``predicts_one_class`` the
    share of folds in which the model predicted a single class (0 to 1). ``threads``:
    folds on threads of this process (:func:`~dpviz.evaluation.sweep.fold_threads`),
    the same results.
    """
    model = get_algorithm(algorithm).make(epsilon, noise_seed=noise_seed, **params)
    n_estimators = getattr(model, "n_estimators", 1)
    # Only forests sweep a depth rule; other algorithms keep theirs in their parameters
    # (a greedy tree's max_depth may be "auto", resolved per fit).
    depth = getattr(model, "depth", None) if get_algorithm(algorithm).forest_family else None
    mechanism = getattr(model, "mechanism", "laplace_counts")
    data_split = getattr(model, "data_split", "disjoint")
    grid = SweepGrid(
        epsilons=[epsilon],
        n_estimators=[n_estimators],
        depths=[depth if depth is not None else "theorem2"],  # unused off the forests
        mechanisms=[mechanism],
        data_splits=[data_split],
        references=False,
        algorithms=[algorithm],
        presets={algorithm: params},
    )
    sweep = run_sweep(
        encoded,
        schema,
        grid,
        folds=folds,
        repeats=repeats,
        seed=seed,
        noise_seed=noise_seed,
        n_jobs=n_jobs,
        progress=progress,
        client=client,
        threads=threads,
    )
    row = sweep.summary[sweep.summary.series == SERIES_DP].iloc[0]
    forest = get_algorithm(algorithm).forest_family
    ledger = _fold_ledger(sweep.results, model, schema, float(epsilon), forest)
    branching = [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]
    return {
        **{m: _mean_std(row, m) for m in METRICS},
        "majority": {m: _mean_std(row, f"majority_{m}") for m in BASELINE_METRICS},
        "predicts_one_class": float(row["one_class_share"]),
        "empty_leaf_pct": float(row["empty_leaf_pct"]),
        "flipped_leaf_pct": float(row["flipped_leaf_pct"]),
        "expected_flip_pct": float(row["expected_flip_pct"]),
        "mean_smooth_sensitivity": float(row["mean_smooth_sensitivity"]),
        "depth": int(round(float(row["depth"])))
        if depth is None or not isinstance(depth, str)
        else resolve_depth(
            depth,
            len(schema.continuous),
            len(schema.discrete),
            n_records=encoded.n_records,
            branching=branching,
        ),
        "fit_seconds": float(row["fit_seconds"]),
        "privacy": {
            "epsilon_total": ledger.epsilon_total,
            "private": ledger.private,
            "summary": ledger.describe(),
        },
        "folds": folds,
        "repeats": repeats,
        "n_records": int(encoded.n_records),
        "algorithm": algorithm,
        "mechanism": mechanism,
        "n_estimators": n_estimators,
        "data_split": data_split,
        "epsilon": float(epsilon),
    }


def _fold_ledger(results, model, schema: Schema, epsilon: float, forest: bool) -> PrivacyLedger:
    """The ledger of the first fold's model. A forest's depends on the fit (its tree
    count, the record count's, split tables', check's and macro_f1 histogram's shares, how
    its trees read the records): read from that fold's row, as the Curves page reads a
    point's; the other families' from the configuration. Public numbers only."""
    if not forest:
        return model.privacy_ledger(schema.inferred)
    first = results[results.series == SERIES_DP].iloc[0]
    return row_ledger(
        first, epsilon, schema_inferred=schema.inferred, replayable=model.noise_seed is not None
    )


def _mean_std(row, metric: str) -> dict[str, float]:
    return {"mean": float(row[f"{metric}_mean"]), "std": _std(row[f"{metric}_std"])}


def _std(value: float) -> float:
    # One fold has no spread; report 0 rather than NaN.
    return 0.0 if value != value else float(value)
