"""The default forest's accuracy cut (issue 28): the same folds and noise before and after.

From ε = 1 up a two-class count forest books a noisy histogram of its checked records'
out-of-bag scores per class (5% of ε, taken from the leaves) and cuts class 1's score
where that histogram's accuracy beats the argmax's by ``CUT_Z`` noise standard deviations
(``dpviz.models.forest.score_histogram``). Each fold is fitted twice with the same public
seed and replayable noise seed 1000·run + fold (NOT private): ``before``, the histogram
switched off (``score_histogram.applies`` patched to the ``macro_f1`` objective only:
the law before the cut), and the library's fit. Printed per set and ε: the accuracy of
``before``, of the library's ``predict``, of the argmax of the same release, of the cut
at each ``--zs`` (``CUT_Z`` patched; the library's is marked), and of the test fold's best
cut (an upper bound that reads the test labels).

    OMP_NUM_THREADS=1 python bench/bench_accuracy_cut.py magic_gamma adult bank_marketing \\
        --epsilons 1 10 --runs 2 --datasets-dir /work/shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.forest.score_histogram as score_histogram
from bench.utility.data import DATASETS_DIR
from bench.utility.paired import class_indices, paired_folds, paired_model
from dpviz.models.objective import MACRO_F1


def _macro_f1_only(applies):
    def patched(model) -> bool:
        return getattr(model, "objective", None) == MACRO_F1 and applies(model)

    return patched


def _cuts(model, zs) -> dict[str, float | None]:
    """The cut at each z (``CUT_Z`` patched) from the release's own histogram."""
    out = {}
    original = score_histogram.CUT_Z
    try:
        for z in zs:
            score_histogram.CUT_Z = z
            out[f"z{z:g}"] = model.decision_threshold_
    finally:
        score_histogram.CUT_Z = original
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--zs", type=float, nargs="+", default=[2.0, 3.0, 4.0])
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    original = score_histogram.applies
    for name in args.sets:
        for eps in args.epsilons:
            acc: dict[str, list[float]] = {}
            used = 0
            for run, fold, data, train, test in paired_folds(name, args.runs, args.datasets_dir):
                y, X_test = data.y[test], data.features.iloc[test]
                X, labels = data.features.iloc[train], data.labels()[train]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    score_histogram.applies = _macro_f1_only(original)
                    try:
                        before = paired_model("fletcher_islam", eps, data, run, fold).fit(
                            X, labels
                        )
                        acc.setdefault("before", []).append(
                            np.mean(class_indices(data, before.predict(X_test)) == y)
                        )
                    finally:
                        score_histogram.applies = original
                    model = paired_model("fletcher_islam", eps, data, run, fold).fit(X, labels)
                pred = class_indices(data, model.predict(X_test))
                acc.setdefault(f"after (z={score_histogram.CUT_Z:g})", []).append(
                    np.mean(pred == y)
                )
                used += model.decision_threshold_ is not None
                p1 = model.predict_proba(X_test)[:, 1]
                acc.setdefault("argmax", []).append(np.mean((p1 > 0.5) == (y == 1)))
                for key, cut in _cuts(model, args.zs).items():
                    rule = (p1 > 0.5) if cut is None else (p1 >= cut)
                    acc.setdefault(key, []).append(np.mean(rule == (y == 1)))
                best = max(np.r_[np.unique(p1), 2.0], key=lambda t: np.mean((p1 >= t) == (y == 1)))
                acc.setdefault("oracle", []).append(np.mean((p1 >= best) == (y == 1)))
            text = " ".join(f"{k}={100 * np.mean(v):.2f}" for k, v in acc.items())
            print(f"{name} eps={eps:g} cut used in {used} folds: {text}", flush=True)


if __name__ == "__main__":
    main()
