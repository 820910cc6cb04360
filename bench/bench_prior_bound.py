"""What answering one class costs at small ε, whatever the trees do (issue 28's floor).

A model that answers a single class for every record can do no better, under ε-DP, than
choose that class privately from the training fold's class counts. Permute-and-flip
(McKenna & Sheldon 2020) over the counts, with all of ε spent on the choice, is the
mechanism used here: counts are monotone under add/remove-one neighbours, so it accepts
class r with probability exp(ε·(n_r − n_max)) in a uniformly random order. Its expected
test accuracy is computed exactly (every order enumerated) on each fold and compared with
the training fold's majority class on the test fold: the gap a floor pays for its class
choice alone, before any ε goes to trees.

    python bench/bench_prior_bound.py penguins smarket --epsilons 0.1 1
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR, VALIDATION_DIR, load_dataset


def permute_and_flip(counts, epsilon: float) -> np.ndarray:
    """Each class's probability of being chosen, exact over every order of the classes
    (at most 8 classes: 8! orders)."""
    if len(counts) > 8:
        raise ValueError(f"{len(counts)} classes: exact enumeration is kept to at most 8")
    top = max(counts)
    accept = [math.exp(epsilon * (n - top)) for n in counts]
    probs = np.zeros(len(counts))
    for order in itertools.permutations(range(len(counts))):
        stay = 1.0
        for r in order:
            probs[r] += stay * accept[r]
            stay *= 1.0 - accept[r]
    return probs / math.factorial(len(counts))


def fold_gaps(y: np.ndarray, n_classes: int, epsilon: float, seeds) -> list[float]:
    """Per fold (5 stratified folds of each seed), accuracy points of the private class
    choice less the training majority's, on the test fold."""
    gaps = []
    for seed in seeds:
        folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(y, y)
        for train, test in folds:
            counts = np.bincount(y[train], minlength=n_classes)
            shares = np.bincount(y[test], minlength=n_classes) / len(test)
            chosen = permute_and_flip(counts.tolist(), epsilon) @ shares
            gaps.append(100 * (chosen - shares[np.argmax(counts)]))
    return gaps


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", help="shared or validation sets")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    print("| dataset | ε | mean gap | worst fold |\n|---|---:|---:|---:|")
    for name in args.datasets:
        shared = (Path(args.datasets_dir) / f"{name}.csv").exists()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the benchmark declares the inferred schema
            data = load_dataset(name, args.datasets_dir if shared else VALIDATION_DIR)
        for eps in args.epsilons:
            gaps = fold_gaps(data.y, data.n_classes, eps, args.seeds)
            print(f"| {name} | {eps:g} | {np.mean(gaps):+.2f} | {min(gaps):+.2f} |")


if __name__ == "__main__":
    main()
