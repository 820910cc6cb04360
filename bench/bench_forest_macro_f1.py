"""The default forest's macro_f1 threshold with and without its score histogram (issue 28).

From ε = 1 up the default forest with ``objective="macro_f1"`` books a noisy histogram of
its checked records' out-of-bag scores and answers the rarer class for 1.25 times its
released share (:mod:`dpviz.models.forest.score_histogram`). ``off`` switches that
release off (``score_histogram.applies`` patched to False): the threshold is then read
from the leaves alone, as before, and the leaves keep the histogram's 5% of ε. Both run
on the same folds with the same replayable noise (seed 1000·run + fold, NOT private: a
measurement only). Sets are shared or validation names or ``bench_standins`` specs
(``:rare_first`` makes class 1 the majority).

Prints per set and ε: the mean macro-F1 gap to the training majority's (points), each
run's five-fold mean, the share of test records answered with the minority class and
the accuracy gap to the majority.

    python bench/bench_forest_macro_f1.py bank_marketing magic_gamma:cls=9200/800:perm \\
        --epsilons 1 10 --runs 2 --modes off on --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
from sklearn.metrics import f1_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR
from bench.utility.paired import class_indices, paired_folds, paired_model
from dpviz.models.forest import score_histogram

MODES = ("off", "on")


def run(name: str, epsilon: float, runs: int, mode: str, datasets_dir: Path) -> dict:
    """Per-fold macro-F1 gaps, minority-answer shares and accuracy gaps (points, %)."""
    out = {"gap": [], "minority": [], "accuracy": []}
    patch = (
        mock.patch.object(score_histogram, "applies", lambda model: False)
        if mode == "off"
        else mock.patch.object(score_histogram, "applies", score_histogram.applies)
    )
    with patch:
        for run, fold, data, train, test in paired_folds(name, runs, datasets_dir):
            y = data.y
            model = paired_model("fletcher_islam", epsilon, data, run, fold, objective="macro_f1")
            model.fit(data.features.iloc[train], data.labels()[train])
            pred = class_indices(data, model.predict(data.features.iloc[test]))
            majority = np.bincount(y[train], minlength=data.n_classes).argmax()
            base = np.full(len(test), majority)
            out["gap"].append(
                100
                * (
                    f1_score(y[test], pred, average="macro")
                    - f1_score(y[test], base, average="macro")
                )
            )
            out["minority"].append(100 * np.mean(pred != majority))
            out["accuracy"].append(100 * (np.mean(pred == y[test]) - np.mean(base == y[test])))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="set names or bench_standins specs")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name in args.sets:
        for eps in args.epsilons:
            cells = []
            for mode in args.modes:
                r = run(name, eps, args.runs, mode, args.datasets_dir)
                per_run = [np.mean(r["gap"][i * 5 : (i + 1) * 5]) for i in range(args.runs)]
                cells.append(
                    f"{mode}: {np.mean(r['gap']):+.2f} (runs "
                    + " / ".join(f"{g:+.2f}" for g in per_run)
                    + f"; minority {np.mean(r['minority']):.1f}%, accuracy "
                    f"{np.mean(r['accuracy']):+.2f})"
                )
            print(f"{name} ε={eps:g} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
