"""Algorithm benchmark (issue 7): every registry algorithm trains on 30,000 rows at ε = 1.

For each algorithm in ``dpviz.models.registry.ALGORITHMS`` (registry defaults, plus DPEA at
d = 2 and d = 3) and each dataset (SynthF with its public schema; Adult from
``../shared/datasets`` or the bundled ``data/uci``, with an inferred schema), fit on 30,000
rows and score on held-out rows. Fit time is the median of ``--reps`` fits in this process
(wall clock, ``time.perf_counter``, one core); DPEA prints its candidate count (``candidates_``).

Usage: python bench/bench_algorithms.py [--reps 3] [--out bench/results/algorithms.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpviz.evaluation.resources import read_dataset  # noqa: E402
from dpviz.evaluation.synthetic import make_synth  # noqa: E402
from dpviz.models.registry import ALGORITHMS, get_algorithm  # noqa: E402
from dpviz.privacy.schema import infer_schema  # noqa: E402

TRAIN_ROWS = 30_000
TARGET_SECONDS = 10.0


def datasets():
    """(name, train frame, test frame, schema): 30,000 training rows each."""
    frame, schema = make_synth("SynthF", TRAIN_ROWS + 7_500, seed=0)
    yield "SynthF", frame.iloc[:TRAIN_ROWS], frame.iloc[TRAIN_ROWS:], schema
    try:
        frame = read_dataset("adult")  # ../shared/datasets, else the bundled data/uci
    except ValueError as exc:
        print(f"Adult skipped: {exc}", file=sys.stderr)
    else:
        frame = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # benchmark only: the schema is inferred
            schema = infer_schema(frame, "label")
        yield "Adult", frame.iloc[:TRAIN_ROWS], frame.iloc[TRAIN_ROWS:], schema


def variants():
    """(label, algorithm id, parameters) for every registry entry, DPEA at d = 2 and 3."""
    for algorithm in ALGORITHMS.values():
        if algorithm.id == "dpea":
            names = {p.name for p in algorithm.parameters}
            for d in (2, 3):
                if d > 2 and "mcmc_steps" not in names:
                    continue  # d > 2 needs the MCMC sampler
                yield f"dpea d={d}", "dpea", {"steps": d}
        else:
            yield algorithm.id, algorithm.id, {}


def _count(n: int | None) -> str:
    """A candidate count: exact up to 10^12, then in powers of ten (d = 3 has ~10^75)."""
    if n is None:
        return "—"
    return f"{n:,}" if n < 10**12 else f"{Decimal(n):.2e}"  # beyond float range at d = 3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", default="bench/results/algorithms.json")
    args = parser.parse_args()
    rows = []
    for name, train, test, schema in datasets():
        X, y = train.drop(columns=schema.label), train[schema.label]
        X_test, y_test = test.drop(columns=schema.label), test[schema.label]
        for label, algorithm_id, params in variants():
            times, model = [], None
            for _ in range(args.reps):
                model = get_algorithm(algorithm_id).make(
                    1.0, random_state=0, schema=schema, **params
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(X, y)
                    times.append(time.perf_counter() - start)
            accuracy = float((model.predict(X_test) == y_test.astype(str).to_numpy()).mean())
            row = {
                "dataset": name,
                "algorithm": label,
                "fit_s": statistics.median(times),
                "fit_runs_s": times,
                "accuracy": accuracy,
                "test_rows": len(test),
                "candidates": getattr(model, "candidates_", None),
                "mcmc_acceptance": getattr(model, "mcmc_acceptance_", None),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    print("| dataset | algorithm | fit s (median) | test accuracy | candidates | < 10 s |")
    print("|---|---|---:|---:|---:|---|")
    for r in rows:
        candidates = _count(r["candidates"])
        ok = "yes" if r["fit_s"] < TARGET_SECONDS else "NO"
        print(
            f"| {r['dataset']} | {r['algorithm']} | {r['fit_s']:.3f} | {r['accuracy']:.3f} "
            f"| {candidates} | {ok} |"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
