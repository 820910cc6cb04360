"""Commands that score configurations by cross-validation: ``evaluate`` (one
configuration), ``sweep`` (a grid of them, beside the non-private references) and
``reproduce`` (a figure of Fletcher & Islam 2017).

Every score is computed from the records: a result for the user, not a release. The
noise is fresh and secret unless ``--noise-seed`` asks for replayable noise (NOT
private, said on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpviz.cli.common import (
    NOISE_SEED_HELP,
    cluster_args,
    cluster_client,
    data_args,
    depth_rule,
    int_between,
    jobs_int,
    json_safe,
    model_args,
    model_params,
    objective_arg,
    positive_int,
    repeats_int,
    seed_args,
    seed_int,
    split_list,
    tree_item,
    warn_algorithm,
    warn_epsilon,
    warn_mechanism,
    warn_noise_seed,
)
from dpviz.cli.reading import load_data
from dpviz.cli.work import estimate_depth, note_depth, resolved_trees
from dpviz.evaluation import defaults
from dpviz.evaluation.cross_validation import cross_validate
from dpviz.evaluation.reproduce import FIGURES, reproduce, to_markdown
from dpviz.evaluation.sweep import SweepGrid, fold_threads, reference_costs, run_sweep
from dpviz.models.forest.sizing import auto_shared_trees, resolve_split
from dpviz.models.objective import ACCURACY
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.models.trees.depth import check_work, forest_work_seconds
from dpviz.privacy.schema import Schema
from dpviz.tabular.outputs import check_outputs, write_csv

__all__ = ["add_parsers", "cmd_evaluate", "cmd_reproduce", "cmd_sweep"]


def cmd_evaluate(args) -> dict:
    """``evaluate``: one configuration cross-validated on the CSV. The scores read the
    records: a result for the user, not a release."""
    warn_epsilon(args.epsilon)
    params = model_params(args)
    warn_algorithm(args.algorithm, params)
    warn_noise_seed(args)
    _, schema, encoded = load_data(args)
    note_depth(args.algorithm, params.get("depth"), schema)
    _check_evaluate_work(args, encoded, schema, params)
    progress = None
    if not args.json and sys.stderr.isatty():

        def progress(done, total, message):
            print(f"\r{message} ({done}/{total})", end="", file=sys.stderr)

    with cluster_client(args) as client:
        result = cross_validate(
            encoded,
            schema,
            folds=args.folds,
            repeats=args.repeats,
            seed=args.seed,
            noise_seed=args.noise_seed,
            progress=progress,
            epsilon=args.epsilon,
            algorithm=args.algorithm,
            client=client,
            threads=fold_threads(args.folds, args.repeats),
            **params,
        )
    result["encoding"] = encoded.report.messages()
    return result


def _check_evaluate_work(args, encoded, schema: Schema, params: dict) -> None:
    """Refuse a forest cross-validation estimated to run for hours, before it starts."""
    algo = get_algorithm(args.algorithm)
    if not algo.forest_family:
        return
    defaults = algo.defaults()
    rule = params.get("depth", defaults.get("depth", "theorem2"))
    trees = params.get("n_estimators", defaults.get("n_estimators"))
    split = params.get("data_split", defaults.get("data_split", "disjoint"))
    # "auto" grows ⌈ε/0.5⌉ trees (at most 100) in two halves from ε = 5: ε's work.
    resolved = resolve_split(split, trees, args.epsilon)
    seconds = forest_work_seconds(
        encoded.n_records,
        len(schema.continuous),
        auto_shared_trees(args.epsilon)
        if split == "auto" and resolved == "shared"
        else resolved_trees(trees, encoded.n_records, args.algorithm),
        estimate_depth(rule, schema, encoded.n_records),
        data_split=resolved,
        folds=args.folds,
        repeats=args.repeats,
    )
    check_work(seconds, "--repeats, --folds, --trees or --depth, or use fewer rows")


def _progress_bar(done: int, total: int, message: str) -> None:
    width = 30
    filled = int(width * done / total)
    end = "\n" if done == total else ""
    print(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message}",
        end=end,
        file=sys.stderr,
        flush=True,
    )


def cmd_sweep(args) -> dict:
    """``sweep``: a grid of configurations on the same folds, beside the non-private
    references; the results CSV is for the user, not a release."""
    check_outputs([args.data, args.schema], {"--out": args.out, "--summary": args.summary})
    algorithms = split_list(args.algorithm, str, "--algorithm")
    grid = SweepGrid(
        algorithms=algorithms,
        epsilons=split_list(args.epsilons, float, "--epsilons"),
        # SweepGrid says what a tree count must be ("auto" or a whole number ≥ 1).
        n_estimators=split_list(args.trees, tree_item, "--trees"),
        depths=split_list(args.depth, depth_rule, "--depth"),
        mechanisms=split_list(args.mechanism, str, "--mechanism"),
        data_splits=split_list(args.split, str, "--split"),
        references=not args.no_references,
        presets={name: {"objective": args.objective} for name in algorithms},
    )
    warn_noise_seed(args)
    for epsilon in grid.epsilons:
        warn_epsilon(float(epsilon))
    for name in grid.algorithms:
        if name == "fletcher_islam":
            for mech in grid.mechanisms:
                warn_mechanism(mech)
        else:
            warn_algorithm(name, {})
    _, schema, encoded = load_data(args)
    if "fletcher_islam" in grid.algorithms:
        seconds = 0.0
        for trees, rule, split in grid.structures:
            note_depth("fletcher_islam", rule, schema)
            seconds += forest_work_seconds(
                encoded.n_records,
                len(schema.continuous),
                resolved_trees(trees, encoded.n_records),
                estimate_depth(rule, schema, encoded.n_records),
                data_split=split,
                folds=args.folds,
                repeats=args.repeats,
            )
        check_work(seconds, "--repeats, --folds, --trees or --depth, or use fewer rows")
    with cluster_client(args) as client:
        result = run_sweep(
            encoded,
            schema,
            grid,
            client=client,
            folds=args.folds,
            repeats=args.repeats,
            seed=args.seed,
            noise_seed=args.noise_seed,
            n_jobs=args.n_jobs,
            progress=None if args.quiet else _progress_bar,
            threads=fold_threads(args.folds, args.repeats, args.n_jobs),
        )
    write_csv(args.out, result.results)
    if args.summary:
        write_csv(args.summary, result.summary)
    return {
        "results": str(args.out),
        "summary": args.summary,
        "rows": len(result.results),
        "grid_points": grid.n_points,
        "references": reference_costs(result.results),  # what each was, and its cost
    }


def cmd_reproduce(args) -> dict:
    """``reproduce``: a figure of Fletcher & Islam 2017 on its datasets, beside the
    paper's numbers."""
    check_outputs([args.reference], {"--out": args.out})
    datasets = None if args.datasets_dir is None else Path(args.datasets_dir)
    if args.out and datasets and Path(args.out).resolve().parent == datasets.resolve():
        raise ValueError(
            f"--out {args.out!r} is in the datasets folder {args.datasets_dir!r}, an input "
            "of this command: choose another folder"
        )
    table = reproduce(
        args.figure,
        reference_csv=None if args.reference is None else Path(args.reference),
        datasets_dir=None if args.datasets_dir is None else Path(args.datasets_dir),
        folds=args.folds,
        repeats=args.repeats,
        generator_seeds=args.generator_seeds,
        n_jobs=args.n_jobs,
        progress=None if args.quiet else _progress_bar,
        noise_seed=args.noise_seed,
    )
    if args.out:
        write_csv(args.out, table)
    if args.json:
        return {"rows": json_safe(table.to_dict(orient="records"))}
    print(to_markdown(table))
    return {}


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="cross-validate a DP forest")
    data_args(p)
    model_args(p)
    p.add_argument("--folds", type=positive_int, default=defaults.TRAIN_FOLDS)
    p.add_argument("--repeats", type=repeats_int, default=1)
    p.set_defaults(func=cmd_evaluate)


def _add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="cross-validated sweep over a grid of settings")
    data_args(p)
    p.add_argument(
        "--algorithm",
        default=defaults.ALGORITHM,
        help=f"comma-separated, any of {','.join(ALGORITHMS)}: all on the same folds "
        "(--trees, --depth, --mechanism and --split apply to fletcher_islam; the others "
        "run their defaults)",
    )
    p.add_argument("--epsilons", required=True, help="comma-separated, e.g. 0.01,0.1,1,10")
    forest = defaults.forest_parameters()
    p.add_argument(
        "--trees",
        default=str(forest["n_estimators"]),
        help="comma-separated tree counts, or auto (150 records a tree)",
    )
    p.add_argument("--depth", default=forest["depth"], help="comma-separated depth rules")
    p.add_argument("--mechanism", default=forest["mechanism"], help="comma-separated mechanisms")
    p.add_argument(
        "--split", default=forest["data_split"], help="comma-separated: auto,disjoint,shared"
    )
    p.add_argument("--folds", type=positive_int, default=defaults.SWEEP_FOLDS)
    objective_arg(p, default=ACCURACY)
    p.add_argument("--repeats", type=repeats_int, default=1)
    seed_args(p)
    p.add_argument(
        "--n-jobs",
        type=jobs_int,
        default=1,
        help="worker processes for the folds; 1 (the default) runs them on one thread per "
        "core in this process (the same results)",
    )
    p.add_argument(
        "--no-references",
        action="store_true",
        help="skip the non-private references: the ε = ∞ forest, scikit-learn's random "
        "forest and, with dpboost, HistGradientBoosting",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="results CSV (one row per point × fold)")
    p.add_argument("--summary", help="summary CSV (mean and std per point)")
    p.add_argument("--json", action="store_true")
    cluster_args(p)
    p.set_defaults(func=cmd_sweep)


def _add_reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help="re-run a figure of Fletcher & Islam 2017")
    p.add_argument("--figure", required=True, choices=FIGURES)
    p.add_argument("--folds", type=positive_int, default=5)  # the papers'
    p.add_argument("--repeats", type=repeats_int, default=1)
    p.add_argument("--generator-seeds", type=int_between(1, 100), default=3)
    p.add_argument("--noise-seed", type=seed_int, help=NOISE_SEED_HELP)
    p.add_argument(
        "--datasets-dir",
        help="folder with the real datasets (NAME.csv or NAME.csv.gz); default: "
        "../shared/datasets beside the clone, else the clone's bundled data/uci",
    )
    p.add_argument(
        "--reference",
        help="the paper's numbers (fletcher2017_results.csv); default: the package's copy",
    )
    p.add_argument("--n-jobs", type=jobs_int, default=1)
    p.add_argument("--out", help="also write the table as CSV")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reproduce)


def add_parsers(sub) -> None:
    """Add ``evaluate``, ``sweep`` and ``reproduce`` to ``sub``,
    the subparsers of ``python -m dpviz``, in the order --help lists them."""
    for add in (_add_evaluate, _add_sweep, _add_reproduce):
        add(sub)
