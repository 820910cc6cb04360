"""The Curves page's default sweep, in process: what the server computes between Run sweep
and the chart. Measures, never asserts.

    python bench/bench_curves_sweep.py CSV [--repeats 3] [--against OTHER_CHECKOUT]

The CSV is uploaded as the Data page takes it with no schema declared (the schema is
inferred), then ``dpviz.app.curves.run`` runs with the page's defaults
(``SweepSettings()``, scikit-learn's forest only where the page ticks it), in a fresh
process per checkout with the compiled kernels loaded first (the app loads them at
start-up). Wall and CPU seconds per sweep, medians, and the 1-minute load average.
``--against``: another checkout (e.g. the base of a branch) run the same way, the two
interleaved (one sweep of each in turn) so that both see the same load.
``--noise-seed N`` replays the noise (NOT private) and ``--rows-out PATH`` pickles the
last sweep's rows without ``fit_seconds``: two checkouts' pickles must then be equal.
``--data-split auto`` sweeps the forest with that ``data_split`` instead of the default.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_sweep(
    csv: str, noise_seed: int | None, rows_out: str | None, data_split: str | None = None
) -> dict:
    """One default sweep in this process (the checkout on ``sys.path``)."""
    import time

    import pandas as pd

    from dpviz.app import curves
    from dpviz.app.support import prepare_upload
    from dpviz.compiled import kernels

    kernels.get(wait=True)
    frame = pd.read_csv(csv)
    data = prepare_upload(frame, frame.columns[-1])
    settings = curves.SweepSettings(
        sklearn_reference=curves.form_defaults(len(frame))["sklearn"], noise_seed=noise_seed
    )
    if data_split:
        settings = dataclasses.replace(settings, data_splits=(data_split,))
    wall, cpu = time.perf_counter(), time.process_time()
    run = curves.run(data, settings)
    out = {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "load": os.getloadavg()[0],
        "dpviz": str(Path(curves.__file__).parents[2]),
    }
    if rows_out:
        run.result.results.drop(columns="fit_seconds").to_pickle(rows_out)
    return out


def in_checkout(root: Path, csv: str, noise_seed, rows_out, data_split=None) -> dict:
    """One sweep in a fresh process that imports dpviz from ``root``."""
    args = [sys.executable, str(Path(__file__).resolve()), csv, "--one"]
    if data_split:
        args += ["--data-split", data_split]
    if noise_seed is not None:
        args += ["--noise-seed", str(noise_seed)]
    if rows_out:
        args += ["--rows-out", rows_out]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(args, env=env, cwd=root, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", type=Path, default=None, help="another checkout")
    parser.add_argument("--noise-seed", type=int, default=None)
    parser.add_argument("--rows-out", default=None, help="pickle of the last rows (a prefix)")
    parser.add_argument("--data-split", default=None, help="the forest's data_split")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one_sweep(args.csv, args.noise_seed, args.rows_out, args.data_split)))
        return 0
    roots = {"this": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    runs: dict[str, list[dict]] = {name: [] for name in roots}
    for _ in range(args.repeats):
        for name, root in roots.items():
            out = f"{args.rows_out}.{name}.pkl" if args.rows_out else None
            runs[name].append(in_checkout(root, args.csv, args.noise_seed, out, args.data_split))
            print(name, json.dumps(runs[name][-1]), flush=True)
    for name, values in runs.items():
        wall = statistics.median(v["wall"] for v in values)
        cpu = statistics.median(v["cpu"] for v in values)
        loads = [v["load"] for v in values]
        print(
            f"{name} ({roots[name]}): wall {wall:.2f} s, CPU {cpu:.2f} s, medians of "
            f"{len(values)}; load {min(loads):.1f}–{max(loads):.1f}"
        )
    if len(runs) == 2:
        this, other = (statistics.median(v["wall"] for v in runs[n]) for n in roots)
        cpu_this, cpu_other = (statistics.median(v["cpu"] for v in runs[n]) for n in roots)
        print(f"against / this: wall {other / this:.2f}×, CPU {cpu_other / cpu_this:.2f}×")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
