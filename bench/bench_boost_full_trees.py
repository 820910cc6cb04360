"""DPBoost's grown model at large ε with trees that read every record (issue 28).

The grown model (:data:`~dpviz.models.boosting.presets.LARGE_EPSILON`: 2 ensembles of 10
trees) gives each tree of an ensemble a disjoint 1/11 of the records. This swaps its sizes
in-process for ensembles of ONE tree (every tree reads every training record; the
ensembles compose sequentially, ε/T each) and compares, on the same 5 stratified folds,
main's grown model, the variants, their noise-free twins (ε = 10⁶) and HistGradientBoosting.
Replayable noise seed 1000·seed + fold: NOT private, a benchmark only. Accuracy %.

    python bench/bench_boost_full_trees.py pendigits magic_gamma --epsilon 10 \\
        --variants 20x1 40x1 --seeds 0 --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR, load_dataset
from dpviz.models.boosting import budget
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.boosting.presets import LARGE_EPSILON


def grown(variant: str):
    """LARGE_EPSILON with "TxE" sizes: T trees in ensembles of E (main: 20x10), optional
    ":dD" depth."""
    sizes, *rest = variant.split(":")
    trees, per = (int(v) for v in sizes.split("x"))
    fields = {"n_estimators": trees, "trees_per_ensemble": per}
    for part in rest:
        if part.startswith("d"):
            fields["max_depth"] = int(part[1:])
        elif part.startswith("lr"):
            fields["learning_rate"] = float(part[2:])
    return dataclasses.replace(LARGE_EPSILON, **fields)


def accuracy(variant: str, eps: float, data, train, test, noise_seed: int) -> float:
    """The default DPBoost at ``eps`` with the grown sizes of ``variant``."""
    kept = budget.LARGE_EPSILON
    budget.LARGE_EPSILON = grown(variant)
    try:
        model = DPBoostClassifier(epsilon=eps, schema=data.schema, noise_seed=noise_seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.features.iloc[train], data.labels()[train])
        assert model.grown_, "the variant must run where the grown model does"
        return 100 * float(np.mean(model.predict(data.features.iloc[test]) == data.labels()[test]))
    finally:
        budget.LARGE_EPSILON = kept


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--variants", nargs="+", default=["20x1", "40x1"])
    parser.add_argument("--twins", action="store_true", help="also each variant at ε = 10⁶")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    variants = ["20x10", *args.variants]
    rows = []
    for name in args.datasets:
        data = load_dataset(name, args.datasets_dir)
        X = np.column_stack([data.continuous, data.discrete]).astype(np.float64)
        for seed in args.seeds:
            splits = StratifiedKFold(args.folds, shuffle=True, random_state=seed)
            for fold, (train, test) in enumerate(splits.split(data.y, data.y)):
                row = {"dataset": name, "seed": seed, "fold": fold}
                hgb = HistGradientBoostingClassifier(random_state=seed).fit(
                    X[train], data.y[train]
                )
                row["HistGB"] = 100 * float(np.mean(hgb.predict(X[test]) == data.y[test]))
                for variant in variants:
                    noise = 1000 * seed + fold
                    row[variant] = accuracy(variant, args.epsilon, data, train, test, noise)
                    if args.twins:
                        row[f"{variant} twin"] = accuracy(variant, 1e6, data, train, test, noise)
                rows.append(row)
                print(row, flush=True)
    table = pd.DataFrame(rows).groupby(["dataset", "seed"]).mean().drop(columns="fold")
    print(table.round(1).to_string())


if __name__ == "__main__":
    main()
