"""The greedy trees' bins, paired: equal widths against noisy quantiles (issue 28).

For each set (a shared or validation set by name, or a stand-in spec of
:mod:`bench.bench_standins`), ε and run r, a greedy tree is fitted twice on each of 5
stratified folds (seed r) with the same replayable noise seed 1000·r + fold, once with
``split_points="uniform"`` (the default) and once with ``"quantile"`` (replayable noise:
NOT private, a benchmark only). Prints per set and ε the 5-fold means of the accuracy gap
to the training fold's majority class and of the binary AUC, uniform → quantile, and the
mean paired change with its standard error over the runs. The quantile fit draws its
histograms first, so the two fits' later noise differs: the pairing removes the folds'
and the data's variation, not the noise's.

    python bench/bench_greedy_bins.py friedman_schuster adult wall_robot adult:2000 \\
        --epsilons 1 10 --runs 6 --datasets-dir ../shared/datasets
    python bench/bench_greedy_bins.py dpea diamonds hmda --epsilons 1 10 --runs 6 \\
        --datasets-dir data/validation
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_standins import standin
from bench.utility.data import group_of, load_dataset
from dpviz.models.registry import get_algorithm

VARIANTS = ("uniform", "quantile")


def _data(spec: str, run: int, folder: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if ":" in spec:
            name, frame = standin(spec, run, folder)
            return load_dataset(name, frame=frame)
        return load_dataset(spec, folder, group=group_of(spec, folder))


def one_run(method: str, spec: str, epsilon: float, run: int, folder: Path) -> np.ndarray:
    """(variant, [gap, AUC]) means over the 5 folds of run ``run``."""
    data = _data(spec, run, folder)
    labels = data.labels()
    out = np.zeros((len(VARIANTS), 2))
    folds = StratifiedKFold(5, shuffle=True, random_state=run).split(data.y, data.y)
    for fold, (train, test) in enumerate(folds):
        majority = np.bincount(data.y[train]).argmax()
        for v, split_points in enumerate(VARIANTS):
            model = get_algorithm(method).make(
                epsilon,
                schema=data.schema,
                noise_seed=1000 * run + fold,
                split_points=split_points,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data.features.iloc[train], labels[train])
                index = {str(c): i for i, c in enumerate(data.schema.classes)}
                pred = np.array([index[str(c)] for c in model.predict(data.features.iloc[test])])
                proba = model.predict_proba(data.features.iloc[test])
            gap = np.mean(pred == data.y[test]) - np.mean(data.y[test] == majority)
            auc = roc_auc_score(data.y[test], proba[:, 1]) if data.n_classes == 2 else np.nan
            out[v] += np.array([gap, auc]) * 100 / 5
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", choices=["friedman_schuster", "dpea"])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--datasets-dir", type=Path, default=Path("../shared/datasets"))
    args = parser.parse_args(argv)
    for spec in args.sets:
        for eps in args.epsilons:
            runs = np.stack(
                [one_run(args.method, spec, eps, r, args.datasets_dir) for r in range(args.runs)]
            )
            change = runs[:, 1] - runs[:, 0]
            se = change.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else [np.nan] * 2
            mean = runs.mean(axis=0)
            print(
                f"{spec:28s} ε={eps:<5g} gap {mean[0, 0]:6.2f} → {mean[1, 0]:6.2f} "
                f"({change[:, 0].mean():+.2f}, se {se[0]:.2f})  AUC {mean[0, 1]:6.2f} → "
                f"{mean[1, 1]:6.2f} ({change[:, 1].mean():+.2f}, se {se[1]:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
