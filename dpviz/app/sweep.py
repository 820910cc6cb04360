"""The sweep engine as the Train and Curves pages call it: DP forest points plus the
non-private references, with progress as a fraction.

``dpviz.evaluation.sweep.run_sweep(references=True)`` adds both references, and scikit-learn's
forest costs about 15 s per fold at 30,000 rows. The pages make that one optional:
without it, the non-private forest (true-majority labels, every tree on all records)
runs as its own one-point sweep on the same folds and seeds, which gives exactly the
rows ``run_sweep`` would have added (a test checks this).

Metrics and diagnostics read the raw data and the test folds: NOT private.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from dpviz.compiled import kernels as kernels
from dpviz.evaluation.sweep import (
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepGrid,
    SweepResult,
    run_sweep,
)
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData

Progress = Callable[[float, str], None]
# Worker processes cost 2-4 s to start cold (6.2 s for a first Train on 2 cores against
# 1.55 s in one process, issue 14) and each re-reads the data. They can only win where
# cores are left over once the routing kernels' own threads (dpviz.compiled.kernels) are busy,
# and where a fold's work (records × trees routed) takes several seconds: from
# PARALLEL_FROM_CORES cores and PARALLEL_FROM_PAIRS (record, tree) pairs per fold.
PARALLEL_FROM_CORES = 4
PARALLEL_FROM_PAIRS = 50_000_000
# scikit-learn's forest is on by default only below this many records (it is slow).
SKLEARN_DEFAULT_MAX_ROWS = 5_000


# Round values of ε per decade: a curve's points and the sliders' stops are numbers
# people can say out loud in a negotiation ("ε = 0.5"), not 0.4833.
LADDERS = {
    3: (1.0, 2.0, 5.0),
    6: (1.0, 1.5, 2.0, 3.0, 5.0, 7.0),
    10: (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0),
}


def epsilon_ladder(low: float, high: float, per_decade: int = 6) -> list[float]:
    """Round ε values from ``low`` to ``high`` (both included), ``per_decade`` of them
    per factor of 10 (3, 6 or 10). ``ValueError`` for an empty or unknown range."""
    if per_decade not in LADDERS:
        raise ValueError(f"per_decade must be one of {', '.join(map(str, LADDERS))}")
    if not 0 < low <= high:
        raise ValueError(f"the ε range must satisfy 0 < low ≤ high, got {low:g} – {high:g}")
    values = {float(f"{low:.6g}"), float(f"{high:.6g}")}
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for m in LADDERS[per_decade]:
            v = float(f"{m * 10.0**exponent:.6g}")
            if low <= v <= high:
                values.add(v)
    return sorted(values)


def sklearn_default(n_records: int) -> bool:
    """Whether the scikit-learn reference is ticked by default for this data size."""
    return n_records <= SKLEARN_DEFAULT_MAX_ROWS


def sweep_jobs(n_records: int, folds: int, n_trees: int = 100) -> int:
    """How many processes the app gives a sweep: one (no pool to start) unless the
    machine has cores to spare and the folds are long enough to pay for the pool."""
    cores = kernels.cores()
    if cores < PARALLEL_FROM_CORES or n_records * n_trees < PARALLEL_FROM_PAIRS:
        return 1
    # Half the cores: the kernels in each worker use threads as well.
    return max(1, min(folds, cores // 2, 4))


def warm_up() -> None:
    """Load the compiled routing kernels in the background while the user looks at the
    first page, so that no sweep or Train waits for them (``dpviz.compiled.kernels``)."""
    kernels.warm_up()


def run_with_references(
    encoded: EncodedData,
    schema: Schema,
    *,
    epsilons: Sequence[float],
    n_estimators: Sequence[int] = (100,),
    depths: Sequence[str | int] = SweepGrid.depths,
    mechanisms: Sequence[str] = SweepGrid.mechanisms,
    data_splits: Sequence[str] = ("disjoint",),
    sklearn: bool = True,
    folds: int = 5,
    seed: int = 0,
    n_jobs: int = 1,
    progress: Progress | None = None,
    noise_seed: int | None = None,
) -> SweepResult:
    """Cross-validate every grid point and the non-private forest of each (trees,
    depth); scikit-learn's random forest too when ``sklearn``. ``seed`` is public (folds,
    structure); ``noise_seed`` replays the noise (NOT private), None draws it fresh.

    ``progress(fraction, message)`` is called after each fold. Raises ``ValueError``
    for unusable settings or data (one class, too few records for the folds).
    """
    say = progress or (lambda _f, _m: None)
    say(0.0, f"DP forest: fold 1 of {folds} running")  # the bar moves from the start
    # The engine's own twin (true majority labels, or exact counts for a count forest)
    # on the same folds; scikit-learn's forest too when asked.
    references = {SERIES_NONPRIVATE} | ({SERIES_SKLEARN} if sklearn else set())
    grid = SweepGrid(
        epsilons=list(epsilons),
        n_estimators=list(n_estimators),
        depths=list(depths),
        mechanisms=list(mechanisms),
        data_splits=list(data_splits),
        references=references,
    )
    return run_sweep(
        encoded,
        schema,
        grid,
        folds=folds,
        seed=seed,
        noise_seed=noise_seed,
        n_jobs=n_jobs,
        progress=lambda done, total, _m: say(
            done / total, f"DP forest: fold {done} of {total} done"
        ),
    )
