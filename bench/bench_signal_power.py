"""What the default forest's own signal test says at small ε, with and without signal
(issue 28's floor).

For each set (or ``bench_standins`` spec, ``:perm`` for its no-signal twin) and ε, fits the
default forest on 5 stratified folds per run with replayable noise (seed 1000·run + fold,
NOT private: a measurement only) and prints the z-score of
:func:`~dpviz.models.forest.signal.signal_z` on every released leaf (the statistic behind
the evidence scale) next to the fold's accuracy gap to the training majority. Where a set
and its permuted twin give overlapping z, no rule reading the release can answer them
differently.

    python bench/bench_signal_power.py votes votes:perm --epsilon 0.1 --runs 2 \\
        --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR
from bench.utility.paired import class_indices, paired_folds, paired_model
from dpviz.models.forest.scoring import count_prior
from dpviz.models.forest.signal import signal_z


def folds(name: str, epsilon: float, runs: int, datasets_dir: Path):
    """(z, accuracy gap in points) of every fold."""
    out = []
    for run, fold, data, train, test in paired_folds(name, runs, datasets_dir):
        y = data.y
        model = paired_model("fletcher_islam", epsilon, data, run, fold)
        model.fit(data.features.iloc[train], data.labels()[train])
        model.predict(data.features.iloc[:1])  # draws every leaf of the release
        leaves = [model.leaf_noisy_counts_]
        if model._empty_noisy is not None:
            leaves.append(model._empty_noisy)
        prior = count_prior(model.prior_counts_, len(model.classes_))
        z = signal_z(np.concatenate(leaves), prior, model.tree_epsilon_)
        pred = class_indices(data, model.predict(data.features.iloc[test]))
        majority = np.bincount(y[train], minlength=data.n_classes).argmax()
        out.append((z, 100 * (np.mean(pred == y[test]) - np.mean(y[test] == majority))))
    return np.array(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="set names or bench_standins specs")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name in args.sets:
        result = folds(name, args.epsilon, args.runs, args.datasets_dir)
        z, gap = result[:, 0], result[:, 1]
        print(
            f"{name} ε={args.epsilon:g}: z median {np.median(z):+.2f} "
            f"[{z.min():+.2f}, {z.max():+.2f}], accuracy gap {gap.mean():+.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
