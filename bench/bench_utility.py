"""Utility benchmark (issue 13): dpviz's algorithms against private and non-private peers.

Every algorithm of ``dpviz.models.registry.ALGORITHMS`` at its registry defaults (default
mechanism, fresh secret noise per fit: what a user gets) is scored beside

* diffprivlib 0.6 — RandomForestClassifier, DecisionTreeClassifier (their defaults:
  10 trees / depth 5), LogisticRegression and GaussianNB, each with the schema's bounds and
  integer labels (no ``PrivacyLeakWarning``);
* interpret's DP-EBM (``DPExplainableBoostingClassifier``, (ε, δ = 1e-5)-DP, binary only);
* DPBoost's non-private twin (DPBoost at ε = 10⁶), scikit-learn's HistGradientBoosting
  (not private) and the majority class (the training fold's most frequent class),

on two groups of real datasets (issue 28's protocol against tuning): the 11 shared UCI
sets the project develops on (``../shared/datasets``, ``--group shared``) and the held-out
validation sets (``data/validation``, ``--group validation``; nothing is tuned on them), at
each ε of ``--epsilons``, with scikit-learn's ``StratifiedKFold(shuffle=True,
random_state=seed)`` for each of ``--seeds`` (other folds, other structure, other noise).
The two groups and the seeds are reported separately, each with the default forest's
wins / ties / losses against the best diffprivlib model. Metrics come from
``dpviz.evaluation.metrics``: accuracy and macro-F1 of ``predict`` (macro over every schema class),
ROC AUC of ``predict_proba`` (binary: the rarer training class is positive; more classes:
macro one-vs-rest over the classes in the test fold).

Privacy of the benchmark itself: the schema (class list, feature domains) is inferred from
the whole file, as ``dpviz.evaluation.reproduce`` does, and treated as public for every
method alike.
Only the public randomness (folds, subsampling, dpviz's ``random_state``, HistGradientBoosting)
is seeded; dpviz, diffprivlib and DP-EBM draw fresh noise in every fit, so two runs differ
by the noise — the ± columns show how much.

Usage::

    python bench/bench_utility.py                      # both groups, seeds 0 and 1, 5 folds
    python bench/bench_utility.py --group validation --seeds 0 --methods fletcher_islam
    python bench/bench_utility.py --max-rows 3000 --folds 2 --datasets car adult
    python bench/bench_utility.py --tables bench/results/utility.csv   # tables from CSVs
    python bench/bench_utility.py --objective macro_f1 --methods fletcher_islam jpw

``--objective accuracy|balanced_accuracy|macro_f1`` is what dpviz's estimators predict for
(their ``objective=``: post-processing of each release, no ε); diffprivlib, DP-EBM and
HistGB have no such parameter and keep their argmax. Every row records the run's objective,
the report keeps objectives apart, and a macro_f1 run adds issue 28's check: macro-F1 above
the majority's on every binary set with < 15% minority.

Writes one row per (group, seed, dataset, fold, method, ε) to ``--out`` (CSV), then prints
the markdown tables and the issues' must-hold checks (also written beside the CSV as
``.md``). A peer that fails to import or raises is recorded with its error in the row and
shown in the table.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The parts live in bench/utility/; the names the tests and other scripts use are here too.
from bench.utility.checks import (  # noqa: E402
    LARGE_ROWS,
    checks,
    checks_markdown,
    group_checks,
    imbalanced_sets,
    objective_checks,
)
from bench.utility.data import (  # noqa: E402
    DATASETS_DIR,
    DEFAULT_DATASETS,
    GROUPS,
    VALIDATION_DIR,
    Dataset,
    group_of,
    load_dataset,
    validation_datasets,
)
from bench.utility.methods import (  # noqa: E402
    DIFFPRIVLIB,
    DPEBM_DELTA,
    LABELS,
    PEERS,
    REFERENCES,
    TWIN_EPSILON,
    Fitted,
    all_methods,
    build,
    is_private,
)
from bench.utility.report import normalise, report_markdown, summary_markdown  # noqa: E402
from bench.utility.run import (  # noqa: E402
    COLUMNS,
    DEFAULT_EPSILONS,
    machine,
    run_benchmark,
    run_fold,
)
from bench.utility.tables import (  # noqa: E402
    TIE_POINTS,
    accuracy_markdown,
    overview_markdown,
    summarise,
    to_markdown,
    versus_diffprivlib,
    versus_markdown,
)
from dpviz.models.objective import ACCURACY, OBJECTIVES  # noqa: E402
from dpviz.models.objective import HELP as OBJECTIVE_HELP  # noqa: E402

__all__ = [
    "COLUMNS",
    "DATASETS_DIR",
    "DEFAULT_DATASETS",
    "DEFAULT_EPSILONS",
    "DIFFPRIVLIB",
    "DPEBM_DELTA",
    "GROUPS",
    "LABELS",
    "LARGE_ROWS",
    "PEERS",
    "REFERENCES",
    "TIE_POINTS",
    "TWIN_EPSILON",
    "VALIDATION_DIR",
    "Dataset",
    "Fitted",
    "accuracy_markdown",
    "all_methods",
    "build",
    "checks",
    "checks_markdown",
    "group_checks",
    "group_of",
    "imbalanced_sets",
    "is_private",
    "load_dataset",
    "machine",
    "main",
    "normalise",
    "objective_checks",
    "overview_markdown",
    "report_markdown",
    "run_benchmark",
    "run_fold",
    "summarise",
    "summary_markdown",
    "to_markdown",
    "validation_datasets",
    "versus_diffprivlib",
    "versus_markdown",
]


# --- CLI ------------------------------------------------------------------------------


def _datasets_for(args) -> list[tuple[str, str, Path]]:
    """(group, name, folder) of every dataset to run: the groups of ``--group``, narrowed
    to ``--datasets`` when given (names of either group)."""
    groups = GROUPS if args.group == "both" else (args.group,)
    chosen = {
        "shared": [(n, args.datasets_dir) for n in DEFAULT_DATASETS],
        "validation": [(n, args.validation_dir) for n in validation_datasets(args.validation_dir)],
    }
    out = [(g, n, d) for g in groups for n, d in chosen[g]]
    if args.datasets is not None:
        known = {n for _, n, _ in out}
        unknown = [n for n in args.datasets if n not in known]
        if unknown:
            raise SystemExit(
                f"dataset {unknown[0]!r} is not in --group {args.group}: choose from "
                + ", ".join(sorted(known))
            )
        out = [t for t in out if t[1] in args.datasets]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--group",
        choices=("shared", "validation", "both"),
        default="both",
        help="the 11 shared development sets, the held-out validation sets, or both",
    )
    parser.add_argument("--datasets", nargs="+", default=None, help="default: the whole group")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--validation-dir", type=Path, default=VALIDATION_DIR)
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(DEFAULT_EPSILONS))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument(
        "--methods", nargs="+", default=None, help=f"default: all of {' '.join(all_methods())}"
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="stratified random subset of larger datasets (default: all rows)",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0, 1],
        help="one run per seed: its folds and public randomness (default: 0 1)",
    )
    parser.add_argument("--seed", type=int, default=None, help="one seed (same as --seeds S)")
    parser.add_argument("--jobs", type=int, default=1, help="folds run in parallel")
    parser.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=ACCURACY,
        help=OBJECTIVE_HELP + "; diffprivlib, DP-EBM and HistGB keep their argmax",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "utility.csv")
    parser.add_argument(
        "--tables", type=Path, nargs="+", help="only print the tables of existing CSVs"
    )
    args = parser.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else args.seeds

    if args.tables is not None:
        frames = []
        for path in args.tables:
            # A CSV from before issue 28 has no seed column: its name says it (…seed1.csv).
            found = re.search(r"seed(\d+)", path.stem)
            frames.append(normalise(pd.read_csv(path), int(found.group(1)) if found else 0))
        print(report_markdown(pd.concat(frames, ignore_index=True)))
        return 0

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    log(machine())
    start = time.perf_counter()
    runs = []
    for seed in seeds:
        datasets = [
            load_dataset(name, folder, args.max_rows, seed, group=group)
            for group, name, folder in _datasets_for(args)
        ]
        runs.append(
            run_benchmark(
                datasets,
                methods=args.methods,
                epsilons=args.epsilons,
                folds=args.folds,
                seed=seed,
                n_jobs=args.jobs,
                log=log,
                objective=args.objective,
            )
        )
        # Written after every seed: a run stopped later keeps the seeds it finished.
        results = pd.concat(runs, ignore_index=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        results.to_csv(args.out, index=False)
        log(f"seed {seed} done after {time.perf_counter() - start:.0f} s; {machine()}")
    text = report_markdown(results)
    args.out.with_suffix(".md").write_text(f"Machine: {machine()}\n\n" + text)
    print(text)
    log(f"done in {time.perf_counter() - start:.0f} s; wrote {args.out}; {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
