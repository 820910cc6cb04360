"""App benchmark: how long the Curves page takes on 30,000 rows. Measures, never asserts.

    python bench/bench_app.py [--rows 30000] [--repeats 3] [--out bench/results/app.json]

1. Sweep: a 20-point ε curve (0.01 … 10, log-spaced), permute_flip, 100 trees,
   theorem2, 5-fold CV on SynthF (``dpviz.evaluation.synthetic.make_synth``), with ``n_jobs`` 1
   and 2. Timed twice: the bare engine (``dpviz.evaluation.sweep.run_sweep`` without references)
   and the app's call (``dpviz.app.sweep.run_with_references`` with the non-private
   forest but without scikit-learn's, the Curves page default above 5,000 rows).
2. Re-render after a sweep: with the app's default sweep (19 ε values × 3 mechanisms)
   kept in session state, the time to show another metric or another ε under
   discussion, measured two ways: (a) the figure function alone
   (``dpviz.figures.curves.curve_figure`` on the summary frame), (b) a whole Streamlit
   rerun of the Curves page through ``AppTest`` after changing the widget (this
   includes AppTest's own overhead; as AppTest runs a ``pages/`` file on its own, the
   sidebar drawn by app.py is not in it).
3. For scale: one press of Train on the Train page (3-fold CV + the non-private forest
   + the released forest on all records), the first press in a fresh process (cold:
   nothing imported or compiled beyond the page's own imports) and later presses.
4. The CLI's sweep (``run_sweep``, 20 ε, 5 folds) with its default references (the
   non-private forest and scikit-learn's random forest) against ``--no-references``.

The Curves view controls are a fragment (``st.fragment``): in the browser a metric
switch reruns that fragment only. 2(c) measures exactly that through AppTest, which
reruns a fragment alone when its rerun request names it (as the browser's does).

Run it on an otherwise idle machine: other heavy processes distort every number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import streamlit.testing.v1.local_script_runner as local_runner  # noqa: E402

from dpviz.app import curves as app_curves  # noqa: E402
from dpviz.app.session import DATA_KEY, KEEP_PREFIX, SWEEP_KEY  # noqa: E402
from dpviz.app.support import PreparedData  # noqa: E402
from dpviz.app.sweep import run_with_references  # noqa: E402
from dpviz.evaluation.sweep import SweepGrid, run_sweep  # noqa: E402
from dpviz.evaluation.synthetic import make_synth  # noqa: E402
from dpviz.figures.curves import curve_figure  # noqa: E402
from dpviz.models.data import encode  # noqa: E402

DATASET = "SynthF"
EPSILONS = [float(f"{v:.3g}") for v in np.geomspace(0.01, 10, 20)]
FOLDS = 5
RERENDERS = 15


def timed(fn, repeats: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def stats(times: list[float]) -> dict:
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "runs": len(times),
    }


def bench_sweeps(encoded, schema, repeats: int) -> dict:
    out = {}
    grid = SweepGrid(epsilons=EPSILONS, references=False)
    for n_jobs in (1, 2):
        times, _ = timed(
            lambda n_jobs=n_jobs: run_sweep(encoded, schema, grid, folds=FOLDS, n_jobs=n_jobs),
            repeats,
        )
        out[f"engine_n_jobs_{n_jobs}"] = stats(times)
        times, _ = timed(
            lambda n_jobs=n_jobs: run_with_references(
                encoded, schema, epsilons=EPSILONS, sklearn=False, folds=FOLDS, n_jobs=n_jobs
            ),
            repeats,
        )
        out[f"app_with_nonprivate_n_jobs_{n_jobs}"] = stats(times)
    return out


def bench_rerender(data: PreparedData) -> dict:
    from streamlit.testing.v1 import AppTest

    sweep = app_curves.run(data, app_curves.SweepSettings(folds=FOLDS))
    summary = sweep.summary
    fixed = {"n_estimators": 100, "depth_rule": "theorem2", "data_split": "disjoint"}
    epsilons = sweep.values("epsilon")
    figure_times = {"metric": [], "epsilon": []}
    for i in range(RERENDERS):
        metric = ("accuracy", "auc", "f1")[i % 3]
        start = time.perf_counter()
        curve_figure(summary, metric=metric, fixed=fixed, highlight_epsilon=1.0, folds=FOLDS)
        figure_times["metric"].append(time.perf_counter() - start)
        eps = epsilons[i % len(epsilons)]
        start = time.perf_counter()
        curve_figure(summary, metric="accuracy", fixed=fixed, highlight_epsilon=eps, folds=FOLDS)
        figure_times["epsilon"].append(time.perf_counter() - start)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.session_state[DATA_KEY] = data
    at.session_state[SWEEP_KEY] = sweep
    at.switch_page("pages/curves.py").run()
    if at.exception:
        raise RuntimeError(f"the Curves page failed: {at.exception}")
    fragment_times = {"metric": []}
    fragments = list(at._fragment_storage._fragments)
    plain = local_runner.RerunData
    local_runner.RerunData = lambda **kw: plain(
        **kw, fragment_id_queue=fragments, is_fragment_scoped_rerun=True
    )
    try:
        for i in range(RERENDERS):
            metric = ("auc", "f1", "accuracy")[i % 3]
            start = time.perf_counter()
            at.radio(key=f"{KEEP_PREFIX}curves.metric").set_value(metric).run()
            fragment_times["metric"].append(time.perf_counter() - start)
            if at.exception or at.session_state[SWEEP_KEY] is not sweep:
                raise RuntimeError("a view change must not fail or rerun the sweep")
    finally:
        local_runner.RerunData = plain
    rerun_times = {"metric": [], "epsilon": []}
    for i in range(RERENDERS):
        metric = ("auc", "f1", "accuracy")[i % 3]
        start = time.perf_counter()
        at.radio(key=f"{KEEP_PREFIX}curves.metric").set_value(metric).run()
        rerun_times["metric"].append(time.perf_counter() - start)
        eps = epsilons[(i * 7) % len(epsilons)]
        start = time.perf_counter()
        at.select_slider(key=f"{KEEP_PREFIX}curves.discuss").set_value(eps).run()
        rerun_times["epsilon"].append(time.perf_counter() - start)
        if at.exception or at.session_state[SWEEP_KEY] is not sweep:
            raise RuntimeError("a view change must not fail or rerun the sweep")
    return {
        "sweep_seconds": sweep.seconds,
        "sweep": sweep.describe(),
        "figure_function": {k: stats(v) for k, v in figure_times.items()},
        "apptest_rerun": {k: stats(v) for k, v in rerun_times.items()},
        "apptest_fragment_rerun": {k: stats(v) for k, v in fragment_times.items()},
    }


FIRST_TRAIN = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {root!r})
from dpviz.app import train as app_train
from dpviz.app.support import PreparedData
from dpviz.evaluation.synthetic import make_synth
frame, schema = make_synth({dataset!r}, {rows}, seed=0)
data = PreparedData("bench", frame, schema, "generated", "bench")
settings = app_train.TrainSettings(sklearn_reference=False)
times = []
for _ in range(3):
    start = time.perf_counter()
    app_train.train(data, settings)
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def bench_train(rows: int, repeats: int) -> dict:
    """Train in fresh processes: the first press (cold) and the two after it (warm)."""
    code = FIRST_TRAIN.format(root=str(ROOT), dataset=DATASET, rows=rows)
    first, later = [], []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        times = json.loads(out.stdout.strip().splitlines()[-1])
        first.append(times[0])
        later.extend(times[1:])
    return {
        "settings": "permute_flip, ε = 1, 100 trees, theorem2, 3 folds",
        "first_press": stats(first),
        "later_presses": stats(later),
    }


def bench_cli_references(encoded, schema, repeats: int) -> dict:
    """The CLI sweep's call with its default references and with --no-references."""
    out = {}
    for name, references in (("no_references", False), ("default_references", True)):
        grid = SweepGrid(epsilons=EPSILONS, references=references)
        times, result = timed(
            lambda grid=grid: run_sweep(encoded, schema, grid, folds=FOLDS, n_jobs=1), repeats
        )
        out[name] = stats(times)
        rows = result.results
        out[name]["series_seconds"] = (
            rows.groupby("series")["fit_seconds"].sum().round(3).to_dict()
        )
    out["ratio_default_over_none"] = (
        out["default_references"]["median_s"] / out["no_references"]["median_s"]
    )
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON")
    parser.add_argument(
        "--cli-only",
        action="store_true",
        help="only item 4 (the CLI sweep with and without its references), after a warm-up",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    frame, schema = make_synth(DATASET, args.rows, seed=0)
    encoded = encode(frame, schema)
    if args.cli_only:
        from dpviz.models import kernels

        kernels.get(wait=True)  # loaded before either side is timed
        run_sweep(encoded, schema, SweepGrid(epsilons=EPSILONS[:2]), folds=FOLDS, n_jobs=1)
        results = {
            "load_average_start": os.getloadavg(),
            "cli_sweep_references": bench_cli_references(encoded, schema, args.repeats),
            "load_average_end": os.getloadavg(),
        }
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return 0
    data = PreparedData(f"{DATASET} ({args.rows:,} rows)", frame, schema, "generated", "bench")
    results = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "dataset": f"{DATASET}, {args.rows:,} rows",
        "sweep_20_eps_5_folds": bench_sweeps(encoded, schema, args.repeats),
        "rerender": bench_rerender(data),
        "train_page": bench_train(args.rows, args.repeats),
        "cli_sweep_references": bench_cli_references(encoded, schema, args.repeats),
    }
    print(json.dumps(results, indent=2, ensure_ascii=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
