"""Could the default (disjoint) forest use Private-RDT's leaf floor below the out-of-bag
check's ε? Measures the leaf signal statistic on its releases (issue 28).

For each stand-in (``bench/bench_standins.py``'s specs), run and fold, fits the default
forest at each ε (replayable noise seed run·1000 + fold: NOT private, a benchmark only) and
takes, per tree over the released counts of EVERY leaf,
:func:`~dpviz.models.trees.floor.partition_terms` (X_t, s_t, σ_t): the mean over the trees
of u_t = (X_t − s_t)/σ_t (Private-RDT's statistic) and the pooled z = Σ(X_t − s_t)/√Σσ_t².
Prints per stand-in and ε their mean / min / max, the tree count and the gap of the
forest's accuracy to the training fold's majority class (points). A floor needs the
statistics of sets without signal to stay below those of sets with it.

    python bench/bench_disjoint_floor.py magic_gamma:cls=650/600:perm tic_tac_toe car \\
        --epsilons 0.5 1 1.5 --runs 2 --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_greedy_floor import standin_folds
from bench.utility.data import DATASETS_DIR
from dpviz.models.forest import release
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.floor import partition_terms


def leaf_statistics(model) -> tuple[float, float]:
    """(mean u_t, pooled z) of a fitted forest's released counts of every leaf."""
    release.complete_release(model)
    keys, tree = release.leaf_space_trees(model)
    position = model._trained(keys)
    trained = position >= 0
    noisy = np.empty((len(keys), len(model.classes_)), dtype=np.float64)
    noisy[trained] = model.leaf_noisy_counts_[position[trained]]
    noisy[~trained] = release.empty_outputs(model, keys[~trained]).noisy_counts
    q = math.exp(-model.tree_epsilon_)
    variance = 2 * q / (1 - q) ** 2
    terms = np.array([partition_terms(noisy[tree == t], variance) for t in np.unique(tree)])
    excess, sampling, spread = terms.T
    u = np.where(spread > 0, (excess - sampling) / np.where(spread > 0, spread, 1), 0.0)
    return float(u.mean()), float((excess - sampling).sum() / math.sqrt((spread**2).sum()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 1.5])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    rows = []
    for spec in args.specs:
        for run in range(args.runs):
            folds = standin_folds(spec, 100 + run, args.datasets_dir)
            for data, labels, fold, train, test, _, majority in folds:
                for eps in args.epsilons:
                    model = get_algorithm("fletcher_islam").make(
                        eps, schema=data.schema, noise_seed=run * 1000 + fold, random_state=run
                    )
                    model.fit(data.features.iloc[train], labels[train])
                    u, z = leaf_statistics(model)
                    accuracy = np.mean(model.predict(data.features.iloc[test]) == labels[test])
                    gap = 100 * (accuracy - majority)
                    rows.append(
                        {"spec": spec, "eps": eps, "u": u, "z": z,
                         "trees": model.n_estimators_, "gap": gap}
                    )  # fmt: skip
    by = pd.DataFrame(rows).groupby(["spec", "eps"])
    table = pd.concat(
        [
            by["u"].agg(["mean", "min", "max"]).add_prefix("u_"),
            by["z"].agg(["mean", "min", "max"]).add_prefix("z_"),
            by["trees"].mean(),
            by["gap"].agg(["mean", "min"]).add_prefix("gap_"),
        ],
        axis=1,
    )
    print(table.round(2).to_string())


if __name__ == "__main__":
    main()
