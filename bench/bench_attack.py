"""The membership attack on 30,000 rows: wall time per algorithm at its defaults.

Issue 30's measure: SynthA (10 informative features) at 30,000 rows, ε = 1, the registry
defaults of each algorithm (what the Audit page attacks before a model is trained), the
DP model and the non-private reference fitted on the ~15,000 members and all 30,000
records scored. Medians of ``--repeats`` runs, in one run, with the load average; also
the page's progress updates (how many, and the longest gap between two).

    python bench/bench_attack.py --rows 30000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from dpviz.evaluation.attack import membership_attack
from dpviz.evaluation.synthetic import make_synth
from dpviz.models.registry import ALGORITHMS
from dpviz.tabular.encode import encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    args = parser.parse_args()
    frame, schema = make_synth("SynthA", n_samples=args.rows, seed=0)
    encoded = encode(frame, schema)
    # One warm-up attack: the compiled kernels load once per process, as in the app.
    membership_attack(encoded, schema)
    print(f"load average before: {os.getloadavg()}")
    print("| algorithm | median s | runs (s) | progress updates | longest gap s | AUC DP / ref |")
    print("|---|---|---|---|---|---|")
    for algorithm in args.algorithms.split(","):
        times, gaps, counts = [], [], []
        for _ in range(args.repeats):
            stamps = []
            start = time.perf_counter()
            result = membership_attack(
                encoded,
                schema,
                algorithm=algorithm,
                progress=lambda _f, _m, stamps=stamps: stamps.append(time.perf_counter()),
            )
            times.append(time.perf_counter() - start)
            marks = [start, *stamps]
            gaps.append(max(b - a for a, b in zip(marks, marks[1:], strict=False)))
            counts.append(len(stamps))
        print(
            f"| {algorithm} | {statistics.median(times):.2f} | "
            f"{', '.join(f'{t:.2f}' for t in times)} | {counts[0]} | {max(gaps):.2f} | "
            f"{result.dp.auc:.3f} / {result.reference.auc:.3f} |"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
