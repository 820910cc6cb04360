"""ε-sweep benchmark (issue 4): a 20-point ε curve against one evaluation at one ε.

dpviz routes the records once per fold and only redraws leaf outputs per ε, so the
ratio should stay near 1. For comparison, diffprivlib's forest has to be refitted for
every ε (20 fits per fold); it is measured on the two fast cases only. Every timing is
the median of ``--reps`` runs of 5-fold CV in this process, one core (n_jobs=1).

Usage: python bench/bench_sweep.py [--reps 3] [--out bench/results/sweep.json]

``--cli`` measures issue 29's number instead: the command line as a user runs it, one
``python -m dpviz evaluate`` (ε = 1) against one 20-ε ``python -m dpviz sweep`` (with
and without ``--no-references``), 5 folds, on a SynthF CSV of ``--rows`` rows and its
public schema; wall and CPU (user + sys) of each process, medians of ``--reps``,
interleaved so that the load falls on all three alike.
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
from dpviz.models.trees.depth import theorem2_depth  # noqa: E402
from dpviz.tabular.encode import encode  # noqa: E402

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


def cli_run(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + sys of the child) of ``python -m dpviz args``."""
    import os
    import subprocess

    before = os.times()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "dpviz", *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )


def cli_main(rows: int, reps: int) -> None:
    import os
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="dpviz-sweep-cli-"))
    frame, schema = make_synth("SynthF", rows, seed=0)
    frame.to_csv(folder / "data.csv", index=False)
    (folder / "schema.json").write_text(schema.to_json())
    data = ["--data", str(folder / "data.csv"), "--label", schema.label]
    data += ["--schema", str(folder / "schema.json"), "--folds", "5"]
    grid = ",".join(f"{e:.6g}" for e in EPSILONS)
    commands = {
        "evaluate (ε = 1)": ["evaluate", *data, "--epsilon", "1"],
        "sweep (20 ε)": ["sweep", *data, "--epsilons", grid, "--quiet"],
        "sweep (20 ε, --no-references)": ["sweep", *data, "--epsilons", grid, "--quiet"]
        + ["--no-references"],
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    loads = []
    for _ in range(reps):
        for name, command in commands.items():
            out = ["--out", str(folder / "sweep.csv")] if command[0] == "sweep" else []
            times[name].append(cli_run(command + out))
            loads.append(os.getloadavg()[0])
    print(
        f"SynthF, {rows:,} rows, 5 folds, medians of {reps}; "
        f"load average {min(loads):.1f}–{max(loads):.1f}"
    )
    base = [statistics.median(t[i] for t in times["evaluate (ε = 1)"]) for i in (0, 1)]
    for name, values in times.items():
        wall = statistics.median(t[0] for t in values)
        cpu = statistics.median(t[1] for t in values)
        print(
            f"  {name:32s} wall {wall:6.2f} s ({wall / base[0]:.2f}×)   "
            f"CPU {cpu:6.2f} s ({cpu / base[1]:.2f}×)"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench/results/sweep.json")
    parser.add_argument("--cli", action="store_true", help="issue 29: evaluate vs sweep, CLI")
    parser.add_argument("--rows", type=int, default=30_000, help="rows of the --cli dataset")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.cli:
        cli_main(args.rows, args.reps)
        return
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
