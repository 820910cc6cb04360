"""Core benchmark: dpviz vs diffprivlib vs scikit-learn ExtraTrees.

Measures, for each dataset and model, fit time, predict time (medians of repetitions),
peak extra memory of fit and of predict, and test accuracy. Every (dataset, model)
pair runs in its own fresh Python process (this script in ``--worker`` mode), so
memory is measured without interference from the other models.

    python bench/bench_core.py [--quick] [--out bench/results/core.json]

See bench/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("dpviz", "diffprivlib", "extratrees")
SYNTH_NAMES = ("SynthA", "SynthB", "SynthC", "SynthD", "SynthE", "SynthF", "SynthG")
FULL_CASES = [(name, 30_000) for name in SYNTH_NAMES] + [("SynthF", 1_000_000)]
QUICK_CASES = [("SynthA", 30_000), ("SynthF", 30_000)]
N_ESTIMATORS = 100
EPSILON = 1.0
SEED = 0
TEST_SIZE = 0.2

# Targets (ratios are other model's median fit time / dpviz's median fit time).
TARGET_VS_DIFFPRIVLIB = 20.0
TARGET_VS_EXTRATREES = 3.0
TARGET_1M_SECONDS = 3.0

# Single-threaded everywhere: n_jobs=1 in the estimators, and one BLAS/OpenMP thread.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


# --- memory helpers -------------------------------------------------------------------


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM, which ru_maxrss reports) to the current
    RSS. Linux >= 4.0; returns False where /proc/self/clear_refs is not writable."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PeakMeter:
    """Peak RSS above the RSS at ``start()``, read from getrusage(RUSAGE_SELF).ru_maxrss."""

    def start(self) -> None:
        gc.collect()
        self.reset_ok = _reset_peak()
        self.rss0 = _status_kib("VmRSS")
        self.maxrss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def stop(self) -> dict:
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return {
            "peak_mib": (maxrss - self.rss0) / 1024.0,
            "retained_mib": (_status_kib("VmRSS") - self.rss0) / 1024.0,
            "baseline_rss_mib": self.rss0 / 1024.0,
            "peak_reset": self.reset_ok,
            # Without a reset, a peak below the earlier high-water mark is invisible.
            "exact": self.reset_ok or maxrss > self.maxrss0,
        }


# --- data -----------------------------------------------------------------------------


def prepare_case(name: str, n_samples: int, folder: Path) -> dict:
    """Generate a dataset, split it 80/20 and save it as .npy files for the workers."""
    import numpy as np
    from sklearn.model_selection import train_test_split

    from dpviz.depth import theorem2_depth
    from dpviz.synthetic import make_synth

    start = time.perf_counter()
    frame, schema = make_synth(name, n_samples, seed=SEED)
    X = frame[schema.feature_names].to_numpy(dtype=np.float64)
    y = (frame[schema.label].to_numpy() == "1").astype(np.int64)  # classes "0", "1" -> 0, 1
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SIZE, random_state=SEED
    )
    case_dir = folder / f"{name}_{n_samples}"
    case_dir.mkdir()
    for key, arr in {
        "X_train": X_train,
        "X_test": X_test,
        "y_train": y_train,
        "y_test": y_test,
    }.items():
        np.save(case_dir / f"{key}.npy", np.ascontiguousarray(arr))
    depth = theorem2_depth(len(schema.continuous), len(schema.discrete))
    meta = {
        "dataset": name,
        "n_samples": n_samples,
        "n_train": len(y_train),
        "n_test": len(y_test),
        "n_features": X.shape[1],
        "n_continuous": len(schema.continuous),
        "n_discrete": len(schema.discrete),
        "depth": depth,
        "schema": schema.to_dict(),
        "generate_seconds": time.perf_counter() - start,
        "dir": str(case_dir),
    }
    (case_dir / "meta.json").write_text(json.dumps(meta))
    return meta


# --- worker ---------------------------------------------------------------------------


def _make_factory(model: str, meta: dict):
    """A function returning a fresh estimator; imports only the library it needs."""
    import numpy as np

    depth = meta["depth"]
    if model == "dpviz":
        from dpviz import DPRandomForestClassifier, Schema

        schema = Schema.from_dict(meta["schema"])
        return lambda: DPRandomForestClassifier(
            epsilon=EPSILON,
            n_estimators=N_ESTIMATORS,
            depth=depth,
            mechanism="permute_flip",
            schema=schema,
            random_state=SEED,
        )
    if model == "extratrees":
        from sklearn.ensemble import ExtraTreesClassifier

        return lambda: ExtraTreesClassifier(
            n_estimators=N_ESTIMATORS, max_depth=depth, n_jobs=1, random_state=SEED
        )
    if model == "diffprivlib":
        _patch_sklearn_for_diffprivlib()
        from diffprivlib.models import RandomForestClassifier

        feats = meta["schema"]["features"]
        bounds = (
            np.array([f["min"] for f in feats], dtype=np.float64),
            np.array([f["max"] for f in feats], dtype=np.float64),
        )
        # Integer classes: diffprivlib 0.6.6 maps y to class indices (floats) before the
        # trees compare them with `classes`, so string classes would give empty counts.
        return lambda: RandomForestClassifier(
            n_estimators=N_ESTIMATORS,
            epsilon=EPSILON,
            max_depth=depth,
            bounds=bounds,
            classes=[0, 1],
            n_jobs=1,
            random_state=SEED,
        )
    raise ValueError(f"unknown model {model!r}")


def _patch_sklearn_for_diffprivlib() -> bool:
    """diffprivlib 0.6.6 imports DOUBLE and DTYPE from sklearn.tree._tree, which
    scikit-learn 1.9 removed. They were aliases of np.float64 and np.float32; restore
    them (in this process only) so that diffprivlib imports. Returns True if patched."""
    import numpy as np
    import sklearn.tree._tree as sk_tree

    patched = False
    if not hasattr(sk_tree, "DOUBLE"):
        sk_tree.DOUBLE = np.float64
        patched = True
    if not hasattr(sk_tree, "DTYPE"):
        sk_tree.DTYPE = np.float32
        patched = True
    return patched


def run_worker(spec: dict) -> dict:
    import numpy as np

    meta = json.loads((Path(spec["dir"]) / "meta.json").read_text())
    model, reps = spec["model"], spec["reps"]
    factory = _make_factory(model, meta)
    folder = Path(spec["dir"])
    X_train = np.load(folder / "X_train.npy")
    y_train = np.load(folder / "y_train.npy")
    X_test = np.load(folder / "X_test.npy")
    y_test = np.load(folder / "y_test.npy")

    # Warm-up (not measured): 2 trees on a small slice, so that lazy imports and first-call
    # set-up costs land neither in the first timed fit nor in the memory peak.
    warm = factory().set_params(n_estimators=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.fit(X_train[:2000], y_train[:2000]).predict(X_test[:200])
    del warm

    fit_s, predict_s, fit_cpu, predict_cpu, accuracy, caught = [], [], [], [], [], []
    memory: dict = {}
    core_fit_s = []
    meter = PeakMeter()
    for rep in range(reps):
        est = factory()
        gc.collect()
        if rep == 0:
            meter.start()
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            c0, t0 = time.process_time(), time.perf_counter()
            est.fit(X_train, y_train)
            fit_s.append(time.perf_counter() - t0)
            fit_cpu.append(time.process_time() - c0)
        caught += [f"{w.category.__name__}: {w.message}" for w in seen]
        if rep == 0:
            memory["fit"] = meter.stop()
            meter.start()
        c0, t0 = time.process_time(), time.perf_counter()
        pred = est.predict(X_test)
        predict_s.append(time.perf_counter() - t0)
        predict_cpu.append(time.process_time() - c0)
        if rep == 0:
            memory["predict"] = meter.stop()
        accuracy.append(float(np.mean(np.asarray(pred).astype(np.int64) == y_test)))
        if hasattr(est, "fit_seconds_"):
            core_fit_s.append(float(est.fit_seconds_))
        del est, pred
        if fit_s[-1] > spec["max_fit_seconds"]:
            break  # too slow to repeat within the time budget; say so in the output

    out = {
        "model": model,
        "reps": len(fit_s),
        "fit_seconds": fit_s,
        "predict_seconds": predict_s,
        "fit_median": statistics.median(fit_s),
        "predict_median": statistics.median(predict_s),
        "fit_cpu_seconds": fit_cpu,
        "predict_cpu_seconds": predict_cpu,
        "fit_cpu_median": statistics.median(fit_cpu),
        "predict_cpu_median": statistics.median(predict_cpu),
        "accuracy": accuracy[0],
        "accuracy_all_reps": accuracy,
        "memory": memory,
        "warnings": sorted(set(caught)),
    }
    if core_fit_s:
        out["fit_seconds_internal"] = core_fit_s  # dpviz's own fit_seconds_ (after encoding)
    if spec.get("full_fit"):
        # Target check: fit on all rows (train + test) of the dataset.
        X_all = np.concatenate([X_train, X_test])
        y_all = np.concatenate([y_train, y_test])
        full, full_cpu = [], []
        for _ in range(len(fit_s)):
            est = factory()
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            est.fit(X_all, y_all)
            full.append(time.perf_counter() - t0)
            full_cpu.append(time.process_time() - c0)
            del est
        out["full_fit_rows"] = len(y_all)
        out["full_fit_seconds"] = full
        out["full_fit_median"] = statistics.median(full)
        out["full_fit_cpu_seconds"] = full_cpu
        out["full_fit_cpu_median"] = statistics.median(full_cpu)
    if spec.get("threadpools"):
        from threadpoolctl import threadpool_info

        out["threadpool_info"] = [
            {k: v for k, v in info.items() if k != "filepath"} for info in threadpool_info()
        ]
    return out


def launch_worker(spec: dict, timeout: float) -> dict:
    env = {**os.environ, **THREAD_ENV}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"worker {spec['model']} on {spec['dir']} failed:\n{proc.stderr[-4000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- machine description --------------------------------------------------------------


def machine_info() -> dict:
    import diffprivlib
    import numpy as np
    import pandas as pd
    import sklearn

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    src = hashlib.sha256()
    for path in sorted((ROOT / "dpviz").glob("*.py")):
        src.update(path.name.encode() + b"\0" + path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "dpviz"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.splitlines()
    except OSError:
        commit, dirty = "", []
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scikit-learn": sklearn.__version__,
        "diffprivlib": diffprivlib.__version__,
        "git_head": commit,
        "dpviz_source_sha256": src.hexdigest(),
        "dpviz_uncommitted_files": dirty,
        "env": {
            k: os.environ[k]
            for k in sorted(os.environ)
            if k.startswith(("OPENBLAS", "OMP_", "MKL_"))
        },
        "worker_thread_env": THREAD_ENV,
    }


# --- report ---------------------------------------------------------------------------


def _fmt_s(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _fmt_ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.1f}×" if x < 100 else f"{x:,.0f}×"


def _fmt_mem(m: dict) -> str:
    # A peak below the starting RSS (freed heap reused) reads as 0: no new pages touched.
    peak = max(0.0, m["peak_mib"])
    return f"{peak:.1f}" if m["exact"] else f"≤{peak:.1f}"


def markdown(results: dict) -> str:
    lines = [
        "| dataset | train rows | depth | model | reps | fit s | predict s "
        "| fit other/dpviz | predict other/dpviz | fit peak MiB | predict peak MiB | accuracy "
        "| fit CPU s | predict CPU s |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in results["cases"]:
        runs = case["runs"]
        base = runs["dpviz"]
        for model in MODELS:
            r = runs[model]
            fit_ratio = None if model == "dpviz" else r["fit_median"] / base["fit_median"]
            pred_ratio = None if model == "dpviz" else r["predict_median"] / base["predict_median"]
            lines.append(
                f"| {case['dataset']} | {case['n_train']:,} | {case['depth']} | {model} "
                f"| {r['reps']} | {_fmt_s(r['fit_median'])} | {_fmt_s(r['predict_median'])} "
                f"| {_fmt_ratio(fit_ratio)} | {_fmt_ratio(pred_ratio)} "
                f"| {_fmt_mem(r['memory']['fit'])} | {_fmt_mem(r['memory']['predict'])} "
                f"| {r['accuracy']:.3f} | {_fmt_s(r['fit_cpu_median'])} "
                f"| {_fmt_s(r['predict_cpu_median'])} |"
            )
    return "\n".join(lines)


def evaluate_targets(results: dict) -> dict:
    vs_dpl, vs_et = {}, {}
    full_fit = None
    for case in results["cases"]:
        key = f"{case['dataset']}-{case['n_samples']:,}"
        runs = case["runs"]
        base = runs["dpviz"]["fit_median"]
        vs_dpl[key] = runs["diffprivlib"]["fit_median"] / base
        vs_et[key] = runs["extratrees"]["fit_median"] / base
        if "full_fit_median" in runs["dpviz"]:
            full_fit = {
                "dataset": key,
                "rows": runs["dpviz"]["full_fit_rows"],
                "n_features": case["n_features"],
                "seconds_median": runs["dpviz"]["full_fit_median"],
                "cpu_seconds_median": runs["dpviz"]["full_fit_cpu_median"],
                "met": runs["dpviz"]["full_fit_median"] < TARGET_1M_SECONDS,
            }
    return {
        "fit_vs_diffprivlib": {
            "target": TARGET_VS_DIFFPRIVLIB,
            "ratios": vs_dpl,
            "met_on": [k for k, v in vs_dpl.items() if v >= TARGET_VS_DIFFPRIVLIB],
            "missed_on": [k for k, v in vs_dpl.items() if v < TARGET_VS_DIFFPRIVLIB],
        },
        "fit_vs_extratrees": {
            "target": TARGET_VS_EXTRATREES,
            "ratios": vs_et,
            "met_on": [k for k, v in vs_et.items() if v >= TARGET_VS_EXTRATREES],
            "missed_on": [k for k, v in vs_et.items() if v < TARGET_VS_EXTRATREES],
        },
        "fit_1m_rows_under_3s": full_fit,
    }


def targets_text(t: dict) -> str:
    out = []
    for key, label in (
        ("fit_vs_diffprivlib", "dpviz fit ≥{:g}× faster than diffprivlib"),
        ("fit_vs_extratrees", "dpviz fit ≥{:g}× faster than ExtraTrees"),
    ):
        tt = t[key]
        verdict = "MET on all datasets" if not tt["missed_on"] else "NOT met on all datasets"
        worst = min(tt["ratios"].items(), key=lambda kv: kv[1])
        out.append(
            f"- {label.format(tt['target'])}: {verdict} "
            f"(lowest ratio {worst[1]:.1f}× on {worst[0]}"
            + (f"; missed on {', '.join(tt['missed_on'])}" if tt["missed_on"] else "")
            + ")"
        )
    f = t["fit_1m_rows_under_3s"]
    if f is None:
        out.append("- 1,000,000 × 10 in < 3 s: not measured in this run (use the full run)")
    else:
        out.append(
            f"- {f['rows']:,} × {f['n_features']} trains {N_ESTIMATORS} trees in < "
            f"{TARGET_1M_SECONDS:g} s: {'MET' if f['met'] else 'NOT met'} "
            f"(median {f['seconds_median']:.2f} s wall, {f['cpu_seconds_median']:.2f} s CPU, "
            f"dpviz, all rows of {f['dataset']})"
        )
    return "\n".join(out)


# --- driver ---------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="SynthA and SynthF-30k, 1 rep")
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument(
        "--max-fit-seconds",
        type=float,
        default=300.0,
        help="stop repeating a model once one fit takes longer than this (default 300)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return 0

    cases = QUICK_CASES if args.quick else FULL_CASES
    reps = args.reps or (1 if args.quick else 3)
    out = args.out or ROOT / "bench" / "results" / (
        "core-quick.json" if args.quick else "core.json"
    )
    _patch_sklearn_for_diffprivlib()
    results = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "loadavg_start": os.getloadavg(),
        "machine": machine_info(),
        "settings": {
            "n_estimators": N_ESTIMATORS,
            "epsilon": EPSILON,
            "seed": SEED,
            "test_size": TEST_SIZE,
            "reps": reps,
            "max_fit_seconds": args.max_fit_seconds,
            "n_jobs": 1,
        },
        "cases": [],
    }
    wall = time.perf_counter()
    first = True
    with tempfile.TemporaryDirectory(prefix="dpviz-bench-") as tmp:
        for name, n in cases:
            meta = prepare_case(name, n, Path(tmp))
            print(f"[{name} n={n:,} depth={meta['depth']}]", file=sys.stderr, flush=True)
            case = {k: v for k, v in meta.items() if k not in ("schema", "dir")}
            case["loadavg_before"] = os.getloadavg()
            case["runs"] = {}
            for model in MODELS:
                spec = {
                    "dir": meta["dir"],
                    "model": model,
                    "reps": reps,
                    "max_fit_seconds": args.max_fit_seconds,
                    "full_fit": model == "dpviz" and n >= 1_000_000,
                    "threadpools": first,
                }
                first = False
                res = launch_worker(spec, timeout=3600)
                if "threadpool_info" in res:
                    results["threadpool_info"] = res.pop("threadpool_info")
                case["runs"][model] = res
                print(
                    f"  {model:12s} reps={res['reps']} fit={res['fit_median']:.3f}s "
                    f"predict={res['predict_median']:.3f}s "
                    f"mem={res['memory']['fit']['peak_mib']:.1f}MiB acc={res['accuracy']:.3f}"
                    + (f" warnings={res['warnings']}" if res["warnings"] else ""),
                    file=sys.stderr,
                    flush=True,
                )
            results["cases"].append(case)
    results["wall_seconds"] = time.perf_counter() - wall
    results["loadavg_end"] = os.getloadavg()
    results["targets"] = evaluate_targets(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))

    print(markdown(results))
    print()
    print(targets_text(results["targets"]))
    print()
    print(
        "threadpools (worker, 1 thread forced): "
        + "; ".join(
            f"{i.get('internal_api')} {i.get('version')} threads={i.get('num_threads')}"
            for i in results.get("threadpool_info", [])
        )
    )
    print(f"total wall time {results['wall_seconds']:.0f} s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
