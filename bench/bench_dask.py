"""Dask benchmark (issue 8): train on 10,000,000 rows of SynthF with --local-cluster 2.

Measures, in one run:
* the baseline: ``dd.read_parquet(files).sum().compute()`` (and ``dd.read_csv``) on
  a 2-worker local cluster — the whole command (Python start, cluster start, the pass)
  and the pass alone;
* ``python -m dpviz train ... --local-cluster 2`` on the CSV and on the Parquet files:
  the whole command, and the fit alone (its ``fit_seconds``: reading, counting,
  releasing), with the peak resident memory of each worker process (sampled every
  0.2 s with psutil);
* on a 300,000-row sample: the distributed model's JSON equals the in-memory one.

Usage: python bench/bench_dask.py [--rows 10000000] [--dir /tmp/dpviz-dask] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
from sklearn.datasets import make_classification

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpviz.distributed import local_worker_config  # noqa: E402
from dpviz.privacy.schema import Feature, Schema  # noqa: E402

CHUNK = 1_000_000


def write_data(folder: Path, rows: int) -> Schema:
    folder.mkdir(parents=True, exist_ok=True)
    csv, parquet = folder / "synthf.csv", folder / "parquet"
    X, y = make_classification(
        rows, 10, n_informative=5, n_redundant=0, n_repeated=0, n_classes=2, random_state=0
    )
    columns = [f"x{i}" for i in range(10)]
    schema = Schema(
        "label",
        ("0", "1"),
        tuple(
            Feature(c, "continuous", float(np.floor(X[:, i].min())), float(np.ceil(X[:, i].max())))
            for i, c in enumerate(columns)
        ),
    )
    (folder / "schema.json").write_text(schema.to_json())
    if not csv.exists():
        parquet.mkdir(exist_ok=True)
        for start in range(0, rows, CHUNK):
            part = pd.DataFrame(X[start : start + CHUNK], columns=columns)
            part["label"] = y[start : start + CHUNK]
            part.to_csv(csv, mode="a", header=start == 0, index=False)
            part.to_parquet(parquet / f"part-{start // CHUNK:03d}.parquet", index=False)
    return schema


class PeakMemory:
    """Peak RSS of each child process of this one, sampled in a thread."""

    def __init__(self):
        self.peaks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = psutil.Process()
        while not self._stop.is_set():
            for child in me.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                except psutil.Error:
                    continue
                self.peaks[child.pid] = max(self.peaks.get(child.pid, 0), rss)
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def baseline(path: Path, kind: str, dpviz_malloc: bool = False) -> tuple[float, float]:
    """One pass over the data on a 2-worker local cluster: (whole command, pass alone).

    With ``dpviz_malloc`` the workers get the glibc settings that ``--local-cluster``
    gives dpviz's own workers (``dpviz.distributed.LOCAL_WORKER_ENV``), so that both sides of
    the ratio run on equal clusters; without it, Dask's defaults."""
    settings = local_worker_config()
    code = (
        "import time, dask, dask.dataframe as dd\n"
        "from distributed import Client, LocalCluster\n"
        + (f"dask.config.set({settings!r})\n" if dpviz_malloc else "")
        + "c = LocalCluster(n_workers=2, threads_per_worker=1, host='127.0.0.1',\n"
        "                 dashboard_address=None)\n"
        "cl = Client(c); t = time.perf_counter()\n"
        f"df = dd.read_{kind}('{path}')\n"
        "df.sum().compute(); print(time.perf_counter() - t)\n"
        "cl.close(); c.close()\n"
    )
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, float(out.stdout.strip().splitlines()[-1])


def train(path: Path, schema_path: Path, out: Path) -> tuple[float, int, float]:
    cmd = [
        sys.executable,
        "-m",
        "dpviz",
        "train",
        "--data",
        str(path),
        "--label",
        "label",
        "--schema",
        str(schema_path),
        "--epsilon",
        "1",
        "--local-cluster",
        "2",
        "--out",
        str(out),
        "--json",
    ]
    with PeakMemory() as mem:
        start = time.perf_counter()
        done = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
        seconds = time.perf_counter() - start
    workers = sorted(mem.peaks.values())[-2:]  # the two largest: the worker processes
    fit_seconds = json.loads(done.stdout.strip().splitlines()[-1])["fit_seconds"]
    return seconds, max(workers), fit_seconds


def sample_equality(folder: Path) -> bool:
    from dpviz import DPRandomForestClassifier, ReleasedForest
    from dpviz.distributed import fit_dask, read_dask

    schema = Schema.load(folder / "schema.json")
    head = pd.read_csv(folder / "synthf.csv", nrows=300_000, dtype=str)
    head.to_csv(folder / "sample.csv", index=False)
    sample = pd.read_csv(folder / "sample.csv", dtype={"label": str})
    memory = DPRandomForestClassifier(schema=schema, random_state=0, noise_seed=0)
    memory.fit(sample.drop(columns="label"), sample["label"])
    ddf = read_dask(str(folder / "sample.csv"), schema, blocksize="4MB")
    dist = fit_dask(
        DPRandomForestClassifier(schema=schema, random_state=0, noise_seed=0), ddf, schema
    )
    return (
        ReleasedForest.from_estimator(memory).to_json()
        == ReleasedForest.from_estimator(dist).to_json()
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", default="/tmp/dpviz-dask")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench/results/dask.json")
    args = parser.parse_args()
    folder = Path(args.dir)
    write_data(folder, args.rows)
    results = {"rows": args.rows}
    for kind, path in (("csv", folder / "synthf.csv"), ("parquet", folder / "parquet")):
        base = [baseline(path, kind) for _ in range(args.reps)]
        base_dpviz_malloc = [baseline(path, kind, dpviz_malloc=True) for _ in range(args.reps)]
        runs = [
            train(path, folder / "schema.json", folder / f"model-{kind}.json")
            for _ in range(args.reps)
        ]
        results[kind] = {
            "baseline_command_s": float(np.median([b[0] for b in base])),
            "baseline_pass_s": float(np.median([b[1] for b in base])),
            "baseline_dpviz_malloc_pass_s": float(np.median([b[1] for b in base_dpviz_malloc])),
            "train_command_s": float(np.median([r[0] for r in runs])),
            "train_fit_s": float(np.median([r[2] for r in runs])),
            "peak_worker_rss_gb": max(r[1] for r in runs) / 2**30,
        }
        r = results[kind]
        r["ratio_commands"] = r["train_command_s"] / r["baseline_command_s"]
        r["ratio_pass"] = r["train_fit_s"] / r["baseline_pass_s"]
        r["ratio_pass_dpviz_malloc"] = r["train_fit_s"] / r["baseline_dpviz_malloc_pass_s"]
        print(kind, results[kind], flush=True)
    results["sample_300k_byte_equal"] = sample_equality(folder)
    print("300k sample byte-equal:", results["sample_300k_byte_equal"])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
