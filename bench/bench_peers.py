"""Peers on the Curves page (issue 30): what diffprivlib's lines add to a default Curves
sweep, and what DP-EBM costs.

In this process, as the app runs them: the Curves page's default sweep
(``dpviz.app.curves.form_defaults`` on the default demo, 2,000 rows: the forest's three
mechanisms at 19 ε values, 5 folds, its non-private twin and scikit-learn's forest) with
``dpviz.app.curves.run``, then diffprivlib's three models on the same folds and ε values
with ``dpviz.app.peers.with_peers``. Each repeat times the sweep alone and the peers
right after it; the ratio (sweep + peers) / sweep is taken per repeat, and the medians
are reported with the load average. ``--ebm`` also times DP-EBM on the same sweep once.
Compiled kernels and the libraries are loaded before the first timing.

Usage: python bench/bench_peers.py [--repeats 5] [--ebm] [--out bench/results/peers.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpviz.app import curves as app_curves  # noqa: E402
from dpviz.app import peers as app_peers  # noqa: E402
from dpviz.app.support import prepare_demo  # noqa: E402
from dpviz.compiled import kernels  # noqa: E402
from dpviz.evaluation.demos import DEFAULT_DEMO  # noqa: E402
from dpviz.evaluation.peers import DIFFPRIVLIB_PEERS, missing  # noqa: E402


def default_settings(n_rows: int) -> app_curves.SweepSettings:
    """The settings the Curves page starts from (its form's first values)."""
    f = app_curves.form_defaults(n_rows)
    return app_curves.SweepSettings(
        eps_low=f["low"],
        eps_high=f["high"],
        per_decade=f["per_decade"],
        mechanisms=tuple(f["mechs"]),
        n_estimators=tuple(f["trees"]),
        depths=tuple(f["depths"]),
        data_splits=tuple(f["splits"]),
        folds=f["folds"],
        seed=f["seed"],
        sklearn_reference=f["sklearn"],
        algorithms=tuple(f["algorithms"]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ebm", action="store_true", help="time DP-EBM too (minutes)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "peers.json")
    args = parser.parse_args()
    note = missing()
    if note:
        sys.exit(note)
    data = prepare_demo(DEFAULT_DEMO)
    settings = default_settings(len(data.frame))
    kernels.get(wait=True)
    # Warm-up, not timed: first imports and first calls of every library.
    small = app_curves.run(data, settings)
    app_peers.with_peers(small, data, DIFFPRIVLIB_PEERS)  # starts the worker processes
    out = {
        "dataset": data.name,
        "settings": f"{len(settings.epsilons)} ε × {len(settings.mechanisms)} mechanisms, "
        f"{settings.folds} folds, scikit-learn reference {settings.sklearn_reference}",
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z", time.gmtime()),
        "loadavg_start": os.getloadavg(),
        "runs": [],
    }
    for _ in range(args.repeats):
        start = time.perf_counter()
        sweep = app_curves.run(data, settings)
        alone = time.perf_counter() - start
        run = {"sweep_s": alone, "loadavg": os.getloadavg()[0]}
        # As the app runs them (its worker processes), and in this process alone.
        for key, jobs in (("", None), ("_one_process", 1)):
            start = time.perf_counter()
            with_peers, _ = app_peers.with_peers(sweep, data, DIFFPRIVLIB_PEERS, n_jobs=jobs)
            peers = time.perf_counter() - start
            run[f"diffprivlib{key}_s"] = peers
            run[f"ratio{key}"] = (alone + peers) / alone
        run["diffprivlib_fits"] = len(with_peers.result.results) - len(sweep.result.results)
        out["runs"].append(run)
        print(
            f"sweep {alone:.2f} s; + diffprivlib {run['diffprivlib_s']:.2f} s on "
            f"{app_peers.peer_jobs()} processes ({run['ratio']:.2f}x), "
            f"{run['diffprivlib_one_process_s']:.2f} s in one ({run['ratio_one_process']:.2f}x); "
            f"{run['diffprivlib_fits']} fits, load {run['loadavg']:.1f}",
            flush=True,
        )
    keys = ("sweep_s", "diffprivlib_s", "ratio", "diffprivlib_one_process_s", "ratio_one_process")
    for key in keys:
        out[f"median_{key}"] = statistics.median(r[key] for r in out["runs"])
    if args.ebm:
        start = time.perf_counter()
        with_ebm, _ = app_peers.with_peers(sweep, data, ["dp_ebm"])
        out["dp_ebm_s"] = time.perf_counter() - start
        out["dp_ebm_fits"] = len(with_ebm.result.results) - len(sweep.result.results)
        print(f"DP-EBM {out['dp_ebm_s']:.1f} s ({out['dp_ebm_fits']} fits)", flush=True)
    out["loadavg_end"] = os.getloadavg()
    print(
        f"medians over {args.repeats}: sweep {out['median_sweep_s']:.2f} s, diffprivlib "
        f"{out['median_diffprivlib_s']:.2f} s, ratio {out['median_ratio']:.2f}x (one "
        f"process: {out['median_ratio_one_process']:.2f}x); load "
        f"{out['loadavg_start'][0]:.1f} → {out['loadavg_end'][0]:.1f}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
