"""Core benchmark: dpviz vs diffprivlib vs scikit-learn RandomForest and ExtraTrees.

Measures, for each dataset and model, fit time, predict time and the time of a 20-point
ε sweep (medians of repetitions), peak extra memory of fit, predict and sweep, and test
accuracy. Every (dataset, model) pair runs in its own fresh Python process (this script
in ``--worker`` mode), so memory is measured without interference from the other models.

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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("dpviz", "diffprivlib", "randomforest", "extratrees")
NONPRIVATE = ("randomforest", "extratrees")  # results do not depend on ε
SYNTH_NAMES = ("SynthA", "SynthB", "SynthC", "SynthD", "SynthE", "SynthF", "SynthG")
FULL_CASES = [(name, 30_000) for name in SYNTH_NAMES] + [
    ("SynthF", 300_000),
    ("SynthF", 3_000_000),
]
QUICK_CASES = [("SynthA", 30_000), ("SynthF", 30_000)]
# --speed (issue 15): the side-by-side ratios at 240k / 2.4M training rows (600,000 test
# rows at 3M). scikit-learn's forest is fitted on at most SPEED_RF_FIT_ROWS training rows
# (a depth-8 forest predicts in the same time whatever it was fitted on; its fit at 2.4M
# rows would take most of an hour here); diffprivlib's 20-fit sweep is not run.
SPEED_CASES = [("SynthF", 300_000), ("SynthF", 3_000_000)]
# "dpviz" is the paper's label forest (permute_flip), the ratios' base; "dpviz-counts"
# the estimator's default since issue 13 (laplace_counts, scored from the noisy counts).
SPEED_MODELS = ("dpviz", "dpviz-counts", "diffprivlib", "randomforest")
DPVIZ_MODELS = ("dpviz", "dpviz-counts")
TABLE_ORDER = ("dpviz", "dpviz-counts", "diffprivlib", "randomforest", "extratrees")
SPEED_RF_FIT_ROWS = 240_000
TARGET_PREDICT_VS_PEERS = 1.5
TARGET_SPEED_SWEEP = 1.2
TARGET_SWEEP_MEMORY = 2.0
N_ESTIMATORS = 100
EPSILON = 1.0
SEED = 0
TEST_SIZE = 0.2
SWEEP_EPSILONS = [float(e) for e in np.logspace(-2, 1, 20)]  # the 20-point ε sweep

# Targets (ratios are other model's median fit time / dpviz's median fit time).
TARGET_VS_DIFFPRIVLIB = 20.0
TARGET_VS_EXTRATREES = 3.0
TARGET_1M_SECONDS = 3.0
TARGET_1M_ROWS = 1_000_000  # fitted on the first 1,000,000 training rows of a case this big
TARGET_SWEEP_RATIO = 2.0  # dpviz: 20-point ε sweep time / (fit + predict) time

# Single-threaded everywhere: n_jobs=1 in the estimators, and one BLAS/OpenMP thread.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "DPVIZ_THREADS": "1",  # dpviz's routing kernels on one thread too
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
    from sklearn.model_selection import train_test_split

    from dpviz.evaluation.synthetic import make_synth
    from dpviz.models.trees.depth import theorem2_depth

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

    depth = meta["depth"]
    if model in DPVIZ_MODELS:
        from dpviz import DPRandomForestClassifier, Schema

        schema = Schema.from_dict(meta["schema"])
        mechanism = "permute_flip" if model == "dpviz" else "laplace_counts"
        # The label forest as the peers draw theirs (uniform thresholds); the count
        # forest with the default's split points (a noisy histogram per feature).
        splits = "uniform" if model == "dpviz" else "quantile"
        return lambda: DPRandomForestClassifier(
            epsilon=EPSILON,
            n_estimators=N_ESTIMATORS,
            depth=depth,
            mechanism=mechanism,
            schema=schema,
            random_state=SEED,
            split_points=splits,
        )
    if model == "extratrees":
        from sklearn.ensemble import ExtraTreesClassifier

        return lambda: ExtraTreesClassifier(
            n_estimators=N_ESTIMATORS, max_depth=depth, n_jobs=1, random_state=SEED
        )
    if model == "randomforest":
        from sklearn.ensemble import RandomForestClassifier

        return lambda: RandomForestClassifier(
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
    """The one diffprivlib shim, :func:`dpviz.evaluation.peers.patch_sklearn_for_diffprivlib`
    (bench_fit imports it from here), imported when needed: a worker that never calls it
    (scikit-learn's models) never imports dpviz."""
    from dpviz.evaluation.peers import patch_sklearn_for_diffprivlib

    return patch_sklearn_for_diffprivlib()


def _sweep_dpviz(est, X_train, y_train, X_test, y_test) -> list[float]:
    """The app's sweep path (``dpviz.evaluation.sweep._fold_rows``): per rung of the split
    histograms' ε (one for uniform split points, three over this grid for quantile ones)
    fit once, encode and route the test records once (as predict encodes them), then
    release the leaves at every ε of the rung (each release replacing the last,
    unpublished) and count every ε's votes of the routed records in one pass
    (``release_votes``)."""
    from dpviz.evaluation.sweep import release_votes, split_rungs
    from dpviz.models.forest.voting import vote_labels
    from dpviz.tabular.inputs import prediction_data

    accuracy = []
    for epsilons in split_rungs(est, est.schema, SWEEP_EPSILONS):
        est.set_params(epsilon=epsilons[0])
        est.fit(X_train, y_train)
        # The test records encoded as predict encodes them (the same array in, the same
        # work; until this pass the sweep went through a DataFrame, ~25 ms more).
        routed = est.route_records(prediction_data(est, X_test))
        # The test labels as class indices, as the app's sweep holds them.
        codes = np.searchsorted(est.classes_.astype(np.int64), y_test)
        points = [(est.mechanism, eps) for eps in epsilons]
        for _, votes, _, _ in release_votes(est, routed, points):
            # Each ε's predictions as predict makes them (the argmax of the votes).
            pred = vote_labels(votes)
            accuracy.append(np.count_nonzero(pred == codes) / len(codes))
    return accuracy


def _sweep_refit(factory, X_train, y_train, X_test, y_test) -> list[float]:
    """diffprivlib cannot reuse a fitted forest for another ε: one fit + predict per ε."""
    accuracy = []
    for eps in SWEEP_EPSILONS:
        est = factory().set_params(epsilon=eps)
        est.fit(X_train, y_train)
        pred = est.predict(X_test)
        accuracy.append(float(np.mean(np.asarray(pred).astype(np.int64) == y_test)))
        del est, pred
    return accuracy


def run_worker(spec: dict) -> dict:
    meta = json.loads((Path(spec["dir"]) / "meta.json").read_text())
    model, reps, cap = spec["model"], spec["reps"], spec["max_fit_seconds"]
    factory = _make_factory(model, meta)
    source_hash = dpviz_source_hash()  # the dpviz this worker imported (if it did)
    folder = Path(spec["dir"])
    X_train = np.load(folder / "X_train.npy")
    y_train = np.load(folder / "y_train.npy")
    if spec.get("fit_rows"):
        X_train, y_train = X_train[: spec["fit_rows"]], y_train[: spec["fit_rows"]]
    X_test = np.load(folder / "X_test.npy")
    y_test = np.load(folder / "y_test.npy")

    # Warm-up (not measured): 2 trees on a small slice, so that lazy imports and first-call
    # set-up costs land neither in the first timed fit nor in the memory peak.
    if model in DPVIZ_MODELS:  # dpviz's compiled kernels load (from their cache) here
        from dpviz.compiled import kernels as kernels

        kernels.get(wait=True)
    warm = factory().set_params(n_estimators=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.fit(X_train[:2000], y_train[:2000]).predict(X_test[:200])
        if model in DPVIZ_MODELS:  # the sweep path's own calls (encode, route, votes)
            _sweep_dpviz(warm, X_train[:2000], y_train[:2000], X_test[:200], y_test[:200])
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
        if fit_s[-1] > cap:
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
        # One evaluation = fit + predict of the same repetition.
        "eval_median": statistics.median(f + p for f, p in zip(fit_s, predict_s)),
        "accuracy": accuracy[0],
        "accuracy_all_reps": accuracy,
        "memory": memory,
        "warnings": sorted(set(caught)),
        "loadavg_after_fit_predict": os.getloadavg(),
        "dpviz_source_sha256": source_hash,
    }
    if core_fit_s:
        out["fit_seconds_internal"] = core_fit_s  # dpviz's own fit_seconds_ (after encoding)
    out["sweep"] = run_sweep_measurement(spec, factory, out, X_train, y_train, X_test, y_test)
    if spec.get("target_fit_rows"):
        # Target check: fit on the first 1,000,000 training rows (a random sample of the
        # dataset, because train_test_split shuffles).
        rows = spec["target_fit_rows"]
        X_t, y_t = X_train[:rows], y_train[:rows]
        full, full_cpu = [], []
        for _ in range(reps):
            est = factory()
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            est.fit(X_t, y_t)
            full.append(time.perf_counter() - t0)
            full_cpu.append(time.process_time() - c0)
            del est
        out["full_fit_rows"] = len(y_t)
        out["full_fit_seconds"] = full
        out["full_fit_median"] = statistics.median(full)
        out["full_fit_cpu_seconds"] = full_cpu
        out["full_fit_cpu_median"] = statistics.median(full_cpu)
    if spec.get("threadpools"):
        from threadpoolctl import threadpool_info

        out["threadpool_info"] = [
            {k: v for k, v in info.items() if k != "filepath"} for info in threadpool_info()
        ]
    out["loadavg_end"] = os.getloadavg()
    return out


def run_sweep_measurement(spec, factory, out, X_train, y_train, X_test, y_test) -> dict:
    """The cost of a 20-point ε curve (train split → test accuracy at each ε)."""
    model, cap = spec["model"], spec["max_fit_seconds"]
    if spec.get("skip_sweep"):
        return {"kind": "20 × (fit + predict)", "run": False, "reason": "not run (--speed)"}
    if model in NONPRIVATE:
        # Not private: the curve is flat, one fit + predict gives it. Measured above (same
        # repetitions); the peak is the fit peak, or the RSS kept after the fit plus the
        # predict peak, whichever is higher.
        fit_m, pred_m = out["memory"]["fit"], out["memory"]["predict"]
        kept = pred_m["baseline_rss_mib"] - fit_m["baseline_rss_mib"]
        return {
            "kind": "one fit + predict (ε-independent)",
            "run": True,
            "reps": out["reps"],
            "seconds": [f + p for f, p in zip(out["fit_seconds"], out["predict_seconds"])],
            "median": out["eval_median"],
            "cpu_seconds": [
                f + p for f, p in zip(out["fit_cpu_seconds"], out["predict_cpu_seconds"])
            ],
            "cpu_median": statistics.median(
                f + p for f, p in zip(out["fit_cpu_seconds"], out["predict_cpu_seconds"])
            ),
            "memory": {
                "peak_mib": max(fit_m["peak_mib"], kept + pred_m["peak_mib"]),
                "exact": fit_m["exact"] and pred_m["exact"],
                "derived_from": "fit and predict peaks of repetition 1",
            },
            "accuracy": [out["accuracy"]],
        }
    if model == "diffprivlib" and out["fit_median"] > spec["max_sweep_fit_seconds"]:
        return {
            "kind": "20 × (fit + predict)",
            "run": False,
            "reason": (
                f"not run (median fit {out['fit_median']:.1f} s > cap "
                f"{spec['max_sweep_fit_seconds']:g} s)"
            ),
        }
    times, cpu, acc = [], [], []
    meter = PeakMeter()
    memory = None
    for rep in range(spec["reps"]):
        gc.collect()
        if rep == 0:
            meter.start()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, t0 = time.process_time(), time.perf_counter()
            if model in DPVIZ_MODELS:
                acc = _sweep_dpviz(factory(), X_train, y_train, X_test, y_test)
            else:
                acc = _sweep_refit(factory, X_train, y_train, X_test, y_test)
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        if rep == 0:
            memory = meter.stop()
        if times[-1] > cap:
            break  # too slow to repeat
    return {
        "kind": "fit once + 20 × relabel" if model in DPVIZ_MODELS else "20 × (fit + predict)",
        "run": True,
        "reps": len(times),
        "seconds": times,
        "median": statistics.median(times),
        "cpu_seconds": cpu,
        "cpu_median": statistics.median(cpu),
        "memory": memory,
        "epsilons": SWEEP_EPSILONS,
        "accuracy": acc,
    }


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


def dpviz_source_hash() -> str:
    """sha256 of dpviz/**/*.py: each worker records it, so that a dpviz edited while the
    benchmark runs (the working tree may be shared) shows up in the results. (Until issue
    15 it read dpviz/*.py only, which since issue 16's move holds none of the models.)"""
    src = hashlib.sha256()
    for path in sorted((ROOT / "dpviz").rglob("*.py")):
        name = path.relative_to(ROOT / "dpviz").as_posix()
        src.update(name.encode() + b"\0" + path.read_bytes())
    return src.hexdigest()


def machine_info() -> dict:
    import diffprivlib
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
        "dpviz_source_sha256": dpviz_source_hash(),
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
        for model in [m for m in TABLE_ORDER if m in runs]:
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


def markdown_sweep(results: dict) -> str:
    lines = [
        "| dataset | train rows | model | what is timed | reps | sweep s | other/dpviz "
        "| sweep ÷ (fit + predict) | sweep peak MiB | sweep CPU s | test accuracy over ε |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case in results["cases"]:
        runs = case["runs"]
        base = runs["dpviz"]["sweep"]
        for model in MODELS:
            r = runs[model]
            sw = r["sweep"]
            head = f"| {case['dataset']} | {case['n_train']:,} | {model} | {sw['kind']} "
            if not sw["run"]:
                lines.append(head + f"| 0 | {sw['reason']} | — | — | — | — | — |")
                continue
            ratio = None if model == "dpviz" else sw["median"] / base["median"]
            per_eval = "—" if model in NONPRIVATE else f"{sw['median'] / r['eval_median']:.2f}"
            acc = sw["accuracy"]
            acc_text = f"{acc[0]:.3f}" if len(acc) == 1 else f"{min(acc):.3f}–{max(acc):.3f}"
            lines.append(
                head + f"| {sw['reps']} | {_fmt_s(sw['median'])} | {_fmt_ratio(ratio)} "
                f"| {per_eval} | {_fmt_mem(sw['memory'])} | {_fmt_s(sw['cpu_median'])} "
                f"| {acc_text} |"
            )
    return "\n".join(lines)


def evaluate_targets(results: dict) -> dict:
    vs_dpl, vs_et, vs_rf, sweep = {}, {}, {}, {}
    full_fit = None
    for case in results["cases"]:
        key = f"{case['dataset']}-{case['n_samples']:,}"
        runs = case["runs"]
        base = runs["dpviz"]["fit_median"]
        vs_dpl[key] = runs["diffprivlib"]["fit_median"] / base
        vs_et[key] = runs["extratrees"]["fit_median"] / base
        vs_rf[key] = runs["randomforest"]["fit_median"] / base
        dp = runs["dpviz"]
        sweep[key] = {
            "ratio": dp["sweep"]["median"] / dp["eval_median"],
            "cpu_ratio": dp["sweep"]["cpu_median"]
            / statistics.median(
                f + p for f, p in zip(dp["fit_cpu_seconds"], dp["predict_cpu_seconds"])
            ),
        }
        if "full_fit_median" in dp:
            full_fit = {
                "dataset": key,
                "rows": dp["full_fit_rows"],
                "n_features": case["n_features"],
                "seconds_median": dp["full_fit_median"],
                "cpu_seconds_median": dp["full_fit_cpu_median"],
                "met": dp["full_fit_median"] < TARGET_1M_SECONDS,
            }

    def target(ratios, goal):
        return {
            "target": goal,
            "ratios": ratios,
            "met_on": [k for k, v in ratios.items() if v >= goal],
            "missed_on": [k for k, v in ratios.items() if v < goal],
        }

    return {
        "fit_vs_diffprivlib": target(vs_dpl, TARGET_VS_DIFFPRIVLIB),
        "fit_vs_extratrees": target(vs_et, TARGET_VS_EXTRATREES),
        "fit_vs_randomforest_no_target": vs_rf,
        "sweep_over_one_evaluation": {
            "target": TARGET_SWEEP_RATIO,
            "ratios": sweep,
            "met_on": [k for k, v in sweep.items() if v["ratio"] <= TARGET_SWEEP_RATIO],
            "missed_on": [k for k, v in sweep.items() if v["ratio"] > TARGET_SWEEP_RATIO],
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
    rf = t["fit_vs_randomforest_no_target"]
    worst = min(rf.items(), key=lambda kv: kv[1])
    out.append(
        f"- (no target) dpviz fit vs RandomForest: lowest ratio {worst[1]:.1f}× on {worst[0]}"
    )
    sw = t["sweep_over_one_evaluation"]
    worst = max(sw["ratios"].items(), key=lambda kv: kv[1]["ratio"])
    out.append(
        f"- dpviz 20-point ε sweep ≤ {sw['target']:g}× one evaluation (fit + predict): "
        + ("MET on all datasets" if not sw["missed_on"] else "NOT met on all datasets")
        + f" (highest {worst[1]['ratio']:.2f}× wall, {worst[1]['cpu_ratio']:.2f}× CPU, "
        f"on {worst[0]}"
        + (f"; missed on {', '.join(sw['missed_on'])}" if sw["missed_on"] else "")
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
            f"dpviz, first {f['rows']:,} training rows of {f['dataset']})"
        )
    return "\n".join(out)


def speed_ratios(results: dict) -> dict:
    """Issue 15's ratios, each from runs of one benchmark invocation (medians)."""
    out = {"fit_vs_diffprivlib": {}, "predict": {}, "sweep": {}}
    for case in results["cases"]:
        key = f"{case['n_train']:,} train / {case['n_test']:,} test rows"
        runs = case["runs"]
        for name in [m for m in DPVIZ_MODELS if m in runs]:
            dp = runs[name]
            # The label forest's keys as before; the count forest's carry its name.
            at = key if name == "dpviz" else f"{key}, {name} (laplace_counts)"
            out["fit_vs_diffprivlib"][at] = runs["diffprivlib"]["fit_median"] / dp["fit_median"]
            out["predict"][at] = {
                m: runs[m]["predict_median"] / dp["predict_median"]
                for m in runs
                if m not in DPVIZ_MODELS
            }
            sweep = dp["sweep"]
            out["sweep"][at] = {
                "sweep_over_fit_predict": sweep["median"] / dp["eval_median"],
                "sweep_peak_over_predict_peak": sweep["memory"]["peak_mib"]
                / max(dp["memory"]["predict"]["peak_mib"], 1e-9),
                "sweep_peak_mib": sweep["memory"]["peak_mib"],
                "predict_peak_mib": dp["memory"]["predict"]["peak_mib"],
            }
    return out


def speed_text(speed: dict) -> str:
    lines = []
    for key, ratio in speed["fit_vs_diffprivlib"].items():
        verdict = "MET" if ratio >= TARGET_VS_DIFFPRIVLIB else "NOT met"
        lines.append(
            f"- fit ≥ {TARGET_VS_DIFFPRIVLIB:g}× faster than diffprivlib, {key}: "
            f"{ratio:.1f}× ({verdict})"
        )
    for key, ratios in speed["predict"].items():
        for model, ratio in ratios.items():
            verdict = "MET" if ratio >= TARGET_PREDICT_VS_PEERS else "NOT met"
            lines.append(
                f"- predict ≥ {TARGET_PREDICT_VS_PEERS:g}× faster than {model}, {key}: "
                f"{ratio:.2f}× ({verdict})"
            )
    for key, s in speed["sweep"].items():
        lines.append(
            f"- 20-ε sweep ≤ {TARGET_SPEED_SWEEP:g}× one fit + predict, {key}: "
            f"{s['sweep_over_fit_predict']:.2f}× "
            f"({'MET' if s['sweep_over_fit_predict'] <= TARGET_SPEED_SWEEP else 'NOT met'}); "
            f"peak {s['sweep_peak_mib']:.0f} MiB = {s['sweep_peak_over_predict_peak']:.2f}× "
            f"predict's {s['predict_peak_mib']:.0f} MiB "
            f"({'MET' if s['sweep_peak_over_predict_peak'] <= TARGET_SWEEP_MEMORY else 'NOT met'}"
            f" ≤ {TARGET_SWEEP_MEMORY:g}×)"
        )
    return "\n".join(lines)


# --- driver ---------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="SynthA and SynthF-30k, 1 rep")
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    parser.add_argument("--reps", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument(
        "--max-fit-seconds",
        type=float,
        default=120.0,
        help="stop repeating a fit (or a sweep) once one takes longer than this (default 120)",
    )
    parser.add_argument(
        "--max-sweep-fit-seconds",
        type=float,
        default=60.0,
        help="do not run diffprivlib's 20-fit sweep when its median fit takes longer "
        "than this (default 60)",
    )
    parser.add_argument(
        "--speed",
        action="store_true",
        help="issue 15's side-by-side ratios: SynthF at 300k and 3M rows, dpviz, diffprivlib "
        "and scikit-learn's RandomForest (fitted on ≤ 240k rows)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return 0

    cases = SPEED_CASES if args.speed else QUICK_CASES if args.quick else FULL_CASES
    models = SPEED_MODELS if args.speed else MODELS
    reps = args.reps or (1 if args.quick else 3)
    out = args.out or ROOT / "bench" / "results" / (
        "core-speed.json" if args.speed else "core-quick.json" if args.quick else "core.json"
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
            "sweep_epsilons": SWEEP_EPSILONS,
            "seed": SEED,
            "test_size": TEST_SIZE,
            "reps": reps,
            "max_fit_seconds": args.max_fit_seconds,
            "max_sweep_fit_seconds": args.max_sweep_fit_seconds,
            "n_jobs": 1,
        },
        "cases": [],
    }
    wall = time.perf_counter()
    first = True
    with tempfile.TemporaryDirectory(prefix="dpviz-bench-") as tmp:
        for name, n in cases:
            meta = prepare_case(name, n, Path(tmp))
            print(
                f"[{name} n={n:,} depth={meta['depth']}] load {os.getloadavg()[0]:.2f}",
                file=sys.stderr,
                flush=True,
            )
            case = {k: v for k, v in meta.items() if k not in ("schema", "dir")}
            case["loadavg_before"] = os.getloadavg()
            case["runs"] = {}
            for model in models:
                spec = {
                    "dir": meta["dir"],
                    "model": model,
                    "reps": reps,
                    "max_fit_seconds": args.max_fit_seconds,
                    "max_sweep_fit_seconds": args.max_sweep_fit_seconds,
                    "target_fit_rows": (
                        TARGET_1M_ROWS
                        if model == "dpviz" and meta["n_train"] >= TARGET_1M_ROWS
                        else None
                    ),
                    "threadpools": first,
                }
                if args.speed:
                    spec["target_fit_rows"] = None
                    spec["skip_sweep"] = model == "diffprivlib"
                    if model == "randomforest" and meta["n_train"] > SPEED_RF_FIT_ROWS:
                        spec["fit_rows"] = SPEED_RF_FIT_ROWS
                first = False
                t0 = time.perf_counter()
                res = launch_worker(spec, timeout=4 * 3600)
                res["worker_wall_seconds"] = time.perf_counter() - t0
                if "threadpool_info" in res:
                    results["threadpool_info"] = res.pop("threadpool_info")
                case["runs"][model] = res
                sw = res["sweep"]
                print(
                    f"  {model:12s} reps={res['reps']} fit={res['fit_median']:.3f}s "
                    f"predict={res['predict_median']:.3f}s "
                    + (
                        f"sweep={sw['median']:.3f}s (reps={sw['reps']}) "
                        if sw["run"]
                        else "sweep not run "
                    )
                    + f"mem={res['memory']['fit']['peak_mib']:.1f}MiB acc={res['accuracy']:.3f} "
                    f"worker {res['worker_wall_seconds']:.0f}s load {os.getloadavg()[0]:.2f}"
                    + (f" warnings={res['warnings']}" if res["warnings"] else ""),
                    file=sys.stderr,
                    flush=True,
                )
            results["cases"].append(case)
    results["wall_seconds"] = time.perf_counter() - wall
    results["loadavg_end"] = os.getloadavg()
    hashes = {results["machine"]["dpviz_source_sha256"], dpviz_source_hash()} | {
        case["runs"]["dpviz"]["dpviz_source_sha256"] for case in results["cases"]
    }
    results["dpviz_source_changed_during_run"] = len(hashes) > 1
    if args.speed:
        results["speed"] = speed_ratios(results)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2))
        print(markdown(results))
        print()
        print(speed_text(results["speed"]))
        return 0
    results["targets"] = evaluate_targets(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))

    print(markdown(results))
    print()
    print(markdown_sweep(results))
    print()
    print(targets_text(results["targets"]))
    if results["dpviz_source_changed_during_run"]:
        print(
            "- WARNING: dpviz's source changed during the run (the dpviz workers imported "
            "different versions); the dpviz rows do not come from one version"
        )
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
