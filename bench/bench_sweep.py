"""ε-sweep benchmark (issue 4): a 20-point ε curve against one evaluation at one ε.

dpviz routes the records once per fold and only redraws leaf outputs per ε, so the
ratio should stay near 1. For comparison, diffprivlib's forest has to be refitted for
every ε (20 fits per fold); it is measured on the two fast cases only. Every timing is
the median of ``--reps`` runs of 5-fold CV in this process, one core (n_jobs=1).

Usage: python bench/bench_sweep.py [--reps 3] [--out bench/results/sweep.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpviz.evaluation.peers import patch_sklearn_for_diffprivlib  # noqa: E402
from dpviz.evaluation.sweep import SweepGrid, fold_splits, run_sweep, subset  # noqa: E402
from dpviz.evaluation.synthetic import SYNTH_SPECS, make_synth  # noqa: E402
from dpviz.models.data import encode  # noqa: E402
from dpviz.models.depth import theorem2_depth  # noqa: E402

EPSILONS = list(np.logspace(-2, 1, 20))


def timed(reps: int, fn, *args) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def diffprivlib_sweep(encoded, schema, epsilons) -> None:
    """20 fits per fold: diffprivlib cannot reuse a fitted forest for another ε."""
    patch_sklearn_for_diffprivlib()  # diffprivlib 0.6.6 vs scikit-learn 1.9
    from diffprivlib.models import RandomForestClassifier

    bounds = (
        np.array([f.low for f in schema.continuous]),
        np.array([f.high for f in schema.continuous]),
    )
    depth = theorem2_depth(len(schema.continuous), len(schema.discrete))
    for train, test in fold_splits(encoded.y, 5, 1, 0):
        tr, te = subset(encoded, train), subset(encoded, test)
        for eps in epsilons:
            model = RandomForestClassifier(
                n_estimators=100,
                epsilon=eps,
                max_depth=depth,
                bounds=bounds,
                classes=[0, 1],
                random_state=0,
            )
            model.fit(tr.continuous, tr.y)
            model.predict(te.continuous)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench/results/sweep.json")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    cases = [(name, 30_000) for name in SYNTH_SPECS] + [("SynthF", 300_000), ("SynthF", 3_000_000)]
    rows = []
    for name, n in cases:
        frame, schema = make_synth(name, n, seed=0)
        encoded = encode(frame, schema)
        reps = args.reps if n < 3_000_000 else 1
        one = timed(reps, run_sweep, encoded, schema, SweepGrid([1.0], references=False))
        twenty = timed(reps, run_sweep, encoded, schema, SweepGrid(EPSILONS, references=False))
        row = {
            "dataset": name,
            "rows": n,
            "reps": reps,
            "one_epsilon_s": one,
            "twenty_epsilons_s": twenty,
            "ratio": twenty / one,
        }
        if n == 30_000 and name in ("SynthA", "SynthF"):
            row["diffprivlib_twenty_s"] = timed(1, diffprivlib_sweep, encoded, schema, EPSILONS)
            row["diffprivlib_vs_dpviz"] = row["diffprivlib_twenty_s"] / twenty
        rows.append(row)
        print(json.dumps(row), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    out = {"rows": rows, "peak_rss_gb_whole_run": peak}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))
    print(f"peak RSS of the whole run: {peak:.2f} GB")


if __name__ == "__main__":
    main()
