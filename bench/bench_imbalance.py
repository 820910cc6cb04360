"""The default forest's sizing on imbalanced two-class data (issue 28, ε ≥ 1): AUC paired.

Issue 28 asks the default forest (``fletcher_islam``) at ε = 1 for a mean binary AUC at
least DP-EBM's; the gap sits on imbalanced sets with many discrete features, where a
leaf holds a few minority records against noise of sd ≈ 2 counts. This bench measures
whether another tree count or depth ranks better there, on stand-ins made from the
shared sets (``bench_standins.py`` specs, e.g. ``adult:pos=0.06:6000``) and on the
shared binary sets themselves (the check that balanced data does not lose).

Each run r draws its stand-in (seed r) and 5 stratified folds (seed r); on every fold
every variant below is fitted with fresh secret noise and scored by test AUC, so the
variants share the folds and differ by their own noise only. A variant is

- ``base``: the registry default (``n_estimators="auto"``, ``depth="records"``);
- ``T<k>``: ``n_estimators=k`` (the records depth then sized for k trees);
- ``d<±j>``: the records depth moved by j (through ``forest_depth``, in process);
- ``T<k>d<±j>``: both;
- ``oracle<m>`` (EXPERIMENT ONLY, reads the TRUE minority count of the training fold):
  the most trees of 25, 10, 5, 3 and the deepest records-rule depth such that every
  leaf expects at least m minority records (minority per tree / mean branching^depth
  ≥ m), depth at least 1 and at most the records rule's;
- ``shared<k>``: ``data_split="shared"`` with k trees (every tree reads every record).

``--peers`` adds DP-EBM (bench.utility.methods.build, δ = 1e-5, fresh noise) on the same
folds. Prints, per set and ε, each variant's mean AUC over runs × folds, its mean paired
difference to ``base`` and that difference's standard error over the runs' 5-fold means.

    PYTHONPATH=$PWD nice -n 5 python bench/bench_imbalance.py adult:pos=0.06:6000 \\
        --datasets-dir /work/shared/datasets --epsilons 1 10 --runs 4 --peers \\
        --variants base T5 T10 T25 d-1 d+1 oracle3 --out /tmp/imb/x.csv
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, load_dataset
from bench.utility.methods import build
from dpviz.models.forest import estimator as forest_estimator
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import MAX_DEPTH, records_depth

ORACLE_TREES = (25, 10, 5, 3)


@contextlib.contextmanager
def depth_offset(offset: int):
    """The forest's depth rule moved by ``offset`` levels (between 1 and MAX_DEPTH)."""
    original = forest_estimator.forest_depth
    if offset == 0:
        yield
        return

    def moved(*args, **kwargs):
        return max(1, min(MAX_DEPTH, original(*args, **kwargs) + offset))

    forest_estimator.forest_depth = moved
    try:
        yield
    finally:
        forest_estimator.forest_depth = original


def branching_of(schema) -> list[int]:
    return [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]


def oracle_size(n_train: int, n_minority: int, schema, m: float) -> tuple[int, int]:
    """(trees, depth) so that each leaf expects ≥ m minority records (TRUE counts: an
    experiment, not a release). Most trees first; depth capped by the records rule."""
    branching = branching_of(schema)
    b = sum(branching) / len(branching)
    for trees in ORACLE_TREES:
        per_tree = n_minority / trees
        if per_tree / b >= m or trees == ORACLE_TREES[-1]:
            depth = max(1, int(np.floor(np.log(max(per_tree / m, 1.0)) / np.log(b))))
            cap = records_depth(max(1, n_train // trees), branching, MAX_DEPTH)
            return trees, max(1, min(depth, cap))
    raise AssertionError


def variant_params(name: str, n_train: int, n_minority: int, schema) -> tuple[dict, int]:
    """(parameters to set, depth offset) of a variant name (module docstring)."""
    if name == "base":
        return {}, 0
    if match := re.fullmatch(r"oracle([0-9.]+)", name):
        trees, depth = oracle_size(n_train, n_minority, schema, float(match[1]))
        return {"n_estimators": trees, "depth": depth}, 0
    if match := re.fullmatch(r"shared(\d+)", name):
        return {"data_split": "shared", "n_estimators": int(match[1])}, 0
    if match := re.fullmatch(r"(?:T(\d+))?(?:d([+-]\d+))?", name):
        params = {"n_estimators": int(match[1])} if match[1] else {}
        return params, int(match[2] or 0)
    raise ValueError(f"unknown variant {name!r}")


def fold_auc(model_proba: np.ndarray, y_test: np.ndarray) -> float:
    return 100 * roc_auc_score(y_test, model_proba[:, 1])


def run_one(spec: str, eps: float, seed: int, variants: list[str], peers: bool, ddir: Path):
    name, frame = standin(spec, seed, ddir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_dataset(name, frame=frame)
    if data.n_classes != 2:
        raise ValueError(f"{spec}: two classes needed")
    labels = data.labels()
    classes = list(data.schema.classes)
    rows = []
    splitter = StratifiedKFold(5, shuffle=True, random_state=seed)
    for fold, (train, test) in enumerate(splitter.split(data.y, data.y)):
        counts = np.bincount(data.y[train], minlength=2)
        minority = int(counts.min())
        where = dict(
            spec=spec, eps=eps, run=seed, fold=fold, minority=minority, n_train=len(train)
        )
        for variant in variants:
            params, offset = variant_params(variant, len(train), minority, data.schema)
            model = get_algorithm("fletcher_islam").make(
                eps, random_state=seed * 1_000_003 + fold, schema=data.schema
            )
            model.set_params(**params)
            with depth_offset(offset):
                model.fit(data.features.iloc[train], labels[train])
            proba = model.predict_proba(data.features.iloc[test])
            order = [classes.index(str(c)) for c in model.classes_]
            full = np.zeros((len(test), 2))
            full[:, order] = proba
            rows.append(
                dict(
                    where,
                    variant=variant,
                    auc=fold_auc(full, data.y[test]),
                    trees=model.n_estimators_,
                    depth=model.depth_,
                )
            )
        if peers:
            fitted = build("dp_ebm", eps, data, train, None)
            rows.append(
                dict(where, variant="dp_ebm", auc=fold_auc(fitted.proba(test), data.y[test]))
            )
    return rows


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (spec, ε, variant): mean AUC, mean paired Δ to base, SE of Δ over runs."""
    per_run = frame.groupby(["spec", "eps", "variant", "run"])["auc"].mean().unstack("variant")
    out = []
    for (spec, eps), block in per_run.groupby(level=[0, 1]):
        for variant in block.columns:
            delta = (block[variant] - block["base"]).dropna()
            sizes = frame[(frame.spec == spec) & (frame.eps == eps) & (frame.variant == variant)]
            out.append(
                dict(
                    spec=spec,
                    eps=eps,
                    variant=variant,
                    auc=round(block[variant].mean(), 2),
                    delta=round(delta.mean(), 2),
                    se=round(delta.std(ddof=1) / np.sqrt(len(delta)), 2)
                    if len(delta) > 1
                    else np.nan,
                    runs=len(delta),
                    # DP-EBM has no trees: its sizes are NaN (pandas' median skips them).
                    trees=sizes["trees"].dropna().median() if "trees" in sizes else np.nan,
                    depth=sizes["depth"].dropna().median() if "depth" in sizes else np.nan,
                )
            )
    return pd.DataFrame(out)


def print_markdown(table: pd.DataFrame) -> None:
    print("| " + " | ".join(table.columns) + " |")
    print("|---" * len(table.columns) + "|")
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=["base", "T5", "T10", "T25"])
    parser.add_argument("--peers", action="store_true", help="add DP-EBM on the same folds")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, default=None, help="CSV of every fold's AUC")
    parser.add_argument("--summarise", type=Path, nargs="+", help="only summarise these CSVs")
    args = parser.parse_args(argv)
    if args.summarise:
        print_markdown(summarise(pd.concat([pd.read_csv(p) for p in args.summarise])))
        return
    if "base" not in args.variants:
        args.variants = ["base", *args.variants]
    rows = []
    for spec in args.specs:
        for eps in args.epsilons:
            for seed in range(args.first_seed, args.first_seed + args.runs):
                start = time.perf_counter()
                rows += run_one(spec, eps, seed, args.variants, args.peers, args.datasets_dir)
                print(
                    f"{spec} ε={eps} run {seed}: {time.perf_counter() - start:.1f} s", flush=True
                )
                if args.out:
                    pd.DataFrame(rows).to_csv(args.out, index=False)
    print_markdown(summarise(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
