"""The greedy trees' no-signal floor, paired: each fit with and without it (issue 28).

Fits Friedman–Schuster and DPEA on shared-set stand-ins (``bench/bench_standins.py``'s
specs: ``magic_gamma:cls=650/600:perm`` is smarket's shape) or on plain sets, each fold
twice under the same replayable noise seed: once as released (the floor of
``dpviz.models.greedy.floor``) and once with the floor switched off. Everything but the
floor is then the same draw, so the difference is the floor's alone. Replayable noise is
NOT private: a benchmark only. Prints per stand-in, algorithm and ε the mean over runs of
the 5-fold gap to the training fold's majority class (points), the worst run, the share
of folds whose leaves were trusted, the runs more than 0.5 points below the majority, and
the mean binary AUC (equal by construction: the fall-back keeps the ranking).

    python bench/bench_greedy_floor.py magic_gamma:cls=650/600:perm car:perm \\
        --epsilons 0.1 1 10 --runs 8 --first-seed 100 --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.greedy.estimator as greedy_estimator
from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, load_dataset
from dpviz.models.registry import get_algorithm

ALGORITHMS = ("friedman_schuster", "dpea")


def standin_folds(spec: str, run: int, datasets_dir: Path):
    """Run ``run``'s stand-in and its 5 stratified folds: yields (data, labels, fold,
    train, test, the training fold's majority class, that class's test accuracy)."""
    name, frame = standin(spec, run, datasets_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the benchmark declares the inferred schema public
        data = load_dataset(name, frame=frame)
    labels = data.labels()
    folds = StratifiedKFold(5, shuffle=True, random_state=run).split(data.y, data.y)
    for fold, (train, test) in enumerate(folds):
        majority = pd.Series(labels[train]).value_counts().idxmax()
        yield data, labels, fold, train, test, majority, np.mean(labels[test] == majority)


def fit_greedy(algorithm: str, eps: float, data, train, run: int, fold: int, floor: bool):
    """The greedy tree of ``algorithm`` on the training rows with its floor on or off
    (replayable noise seed run·1000 + fold: NOT private, a benchmark only)."""
    released = greedy_estimator.floor_applies
    greedy_estimator.floor_applies = released if floor else (lambda *args: False)
    try:
        model = get_algorithm(algorithm).make(
            eps, schema=data.schema, noise_seed=run * 1000 + fold
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(data.features.iloc[train], data.labels()[train])
    finally:
        greedy_estimator.floor_applies = released
    return model


def fold_rows(spec: str, run: int, epsilons, datasets_dir: Path) -> list[dict]:
    """One row per fold, algorithm and ε of run ``run``: the gap to the majority (and the
    binary AUC) with the floor (``floor``) and without it (``plain``)."""
    rows = []
    for data, labels, fold, train, test, _, base in standin_folds(spec, run, datasets_dir):
        for algorithm in ALGORITHMS:
            for eps in epsilons:
                row = {"spec": spec, "algorithm": algorithm, "ε": eps, "run": run, "fold": fold}
                for variant in ("plain", "floor"):
                    model = fit_greedy(algorithm, eps, data, train, run, fold, variant == "floor")
                    X_test = data.features.iloc[test]
                    row[variant] = 100 * (np.mean(model.predict(X_test) == labels[test]) - base)
                    if len(model.classes_) == 2 and len(set(labels[test])) == 2:
                        truth = labels[test] == model.classes_[1]
                        row[f"{variant}_auc"] = 100 * roc_auc_score(
                            truth, model.predict_proba(X_test)[:, 1]
                        )
                    if variant == "floor":
                        signal, bar = model.floor_signal_, model.floor_bar_
                        row["trusted"] = signal is None or signal >= bar
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("standins", nargs="+")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, help="CSV of every fold")
    args = parser.parse_args(argv)
    rows = [
        row
        for spec in args.standins
        for run in range(args.first_seed, args.first_seed + args.runs)
        for row in fold_rows(spec, run, args.epsilons, args.datasets_dir)
    ]
    folds = pd.DataFrame(rows)
    if args.out:
        folds.to_csv(args.out, index=False)
    keys = ["spec", "algorithm", "ε"]
    runs = folds.groupby([*keys, "run"]).mean(numeric_only=True)
    table = runs.groupby(keys).agg(
        plain=("plain", "mean"),
        floor=("floor", "mean"),
        plain_worst=("plain", "min"),
        floor_worst=("floor", "min"),
        trusted=("trusted", "mean"),
    )
    table["plain < −0.5"] = (runs["plain"] < -0.5).groupby(keys).sum()
    table["floor < −0.5"] = (runs["floor"] < -0.5).groupby(keys).sum()
    if "plain_auc" in runs:
        table["AUC plain"] = runs.groupby(keys)["plain_auc"].mean()
        table["AUC floor"] = runs.groupby(keys)["floor_auc"].mean()
    table = table.round(2).reset_index()
    print("| " + " | ".join(str(c) for c in table.columns) + " |")
    print("|---" * len(table.columns) + "|")
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
