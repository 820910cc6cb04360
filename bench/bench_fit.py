"""The default forest's fit against diffprivlib's forest and scikit-learn's ExtraTrees.

Issue 29's measure: 30,000 × 10 synthetic rows, the default ``DPRandomForestClassifier``
as a scikit-learn user calls it (no schema: inferred, NOT private) and with a public
schema; diffprivlib's ``RandomForestClassifier`` and scikit-learn's ``ExtraTreesClassifier``
with the same tree count and depth the dpviz fit chose, one thread each. Medians of
``--repeats`` fits, all in one run, printed as seconds and ratios (peer / dpviz).

    python bench/bench_fit.py --rows 30000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
from bench_core import _patch_sklearn_for_diffprivlib  # dpviz.evaluation.peers' shim

from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.schema import Feature, Schema


def median_seconds(fit, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fit()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--features", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--predict-rows",
        type=int,
        default=0,
        help="also time predict on this many rows against scikit-learn's forest (same size)",
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, args.features)).clip(-5, 5)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=args.rows) > 0).astype(int)
    schema = Schema(
        "label",
        ("0", "1"),
        tuple(Feature(f"x{i}", "continuous", -5.0, 5.0) for i in range(args.features)),
    )
    y_text = y.astype(str)
    warnings.simplefilter("ignore")
    no_schema = DPRandomForestClassifier(epsilon=1.0, random_state=0)
    with_schema = DPRandomForestClassifier(epsilon=1.0, schema=schema, random_state=0)
    no_schema.fit(X, y)  # warm-up: the compiled kernels load once
    trees, depth = no_schema.n_estimators_, no_schema.depth_
    times = {
        "dpviz, no schema": median_seconds(lambda: no_schema.fit(X, y), args.repeats),
        "dpviz, public schema": median_seconds(lambda: with_schema.fit(X, y_text), args.repeats),
    }
    from sklearn.ensemble import ExtraTreesClassifier

    extra = ExtraTreesClassifier(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=0)
    times["ExtraTrees"] = median_seconds(lambda: extra.fit(X, y), args.repeats)
    _patch_sklearn_for_diffprivlib()
    try:
        from diffprivlib.models import RandomForestClassifier as DiffprivlibForest
    except ImportError:
        print("diffprivlib is not installed: pip install -r bench/requirements.txt")
    else:
        bounds = (np.full(args.features, -5.0), np.full(args.features, 5.0))
        peer = DiffprivlibForest(
            n_estimators=trees,
            max_depth=depth,
            epsilon=1.0,
            bounds=bounds,
            classes=[0, 1],
            random_state=0,
            n_jobs=1,
        )
        times["diffprivlib forest"] = median_seconds(lambda: peer.fit(X, y), args.repeats)
    if args.predict_rows:
        from sklearn.ensemble import RandomForestClassifier

        X_new = rng.normal(size=(args.predict_rows, args.features)).clip(-5, 5)
        forest = RandomForestClassifier(
            n_estimators=trees, max_depth=depth, n_jobs=1, random_state=0
        ).fit(X, y)
        no_schema.predict(X_new[:1000])  # warm-up: the routing kernels' first call
        times["dpviz predict"] = median_seconds(lambda: no_schema.predict(X_new), args.repeats)
        times["scikit-learn predict"] = median_seconds(lambda: forest.predict(X_new), args.repeats)
    load = os.getloadavg()[0]
    print(
        f"{args.rows:,} rows × {args.features}, {trees} trees of depth {depth}, "
        f"median of {args.repeats}, load average {load:.1f}"
    )
    for name, seconds in times.items():
        print(f"  {name:22s} {seconds:8.3f} s")
    if "dpviz predict" in times:
        ratio = times["scikit-learn predict"] / times["dpviz predict"]
        print(f"  scikit-learn predict / dpviz predict ({args.predict_rows:,} rows): {ratio:.1f}×")
    for ours in ("dpviz, no schema", "dpviz, public schema"):
        for peer_name in ("ExtraTrees", "diffprivlib forest"):
            if peer_name in times:
                ratio = times[peer_name] / times[ours]
                print(f"  {peer_name} / {ours}: {ratio:.1f}×")


if __name__ == "__main__":
    main()
