"""The default forest's accuracy cut (issue 28): the same folds and noise before and after.

From ε = 1 up a two-class count forest books a noisy histogram of its checked records'
out-of-bag scores per class (5% of ε, taken from the leaves) and cuts class 1's score
where that histogram's accuracy beats the argmax's by ``CUT_Z`` noise standard deviations
(``dpviz.models.forest.score_histogram``). Each fold is fitted twice with the same public
seed and replayable noise seed 1000·run + fold (NOT private): ``before``, the histogram
switched off (``score_histogram.applies`` patched to the ``macro_f1`` objective only:
the law before the cut), and the library's fit. Printed per set and ε: the accuracy (or,
with ``--objective balanced_accuracy``, the balanced accuracy) of ``before``, of the
library's ``predict``, of its predictions with ``CUT_Z`` patched to each ``--zs``, and of
the test fold's best cut (an upper bound that reads the test labels).

    OMP_NUM_THREADS=1 python bench/bench_accuracy_cut.py magic_gamma adult bank_marketing \\
        --epsilons 1 10 --runs 2 --datasets-dir /work/shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.forest.score_histogram as score_histogram
from bench.utility.data import DATASETS_DIR
from bench.utility.paired import class_indices, paired_folds, paired_model
from dpviz.models.objective import MACRO_F1


def _macro_f1_only(applies):
    def patched(model) -> bool:
        return getattr(model, "objective", None) == MACRO_F1 and applies(model)

    return patched


def _predictions_at(model, X, zs) -> dict[str, np.ndarray]:
    """The model's predictions with ``CUT_Z`` patched to each z (its own cut, or its
    objective's rule where none passes)."""
    out = {}
    original = score_histogram.CUT_Z
    try:
        for z in zs:
            score_histogram.CUT_Z = z
            out[f"z{z:g}"] = model.predict(X)
    finally:
        score_histogram.CUT_Z = original
    return out


def best_cut_score(p1: np.ndarray, y: np.ndarray, objective: str) -> float:
    """The test fold's best cut's accuracy or balanced accuracy over every cut on its
    own scores (an upper bound that reads the test labels), all cuts at once."""
    cuts = np.r_[np.unique(p1), 2.0]
    scores = [np.sort(p1[y == c]) for c in (0, 1)]
    # Records of each class at or above each cut.
    above = [len(v) - np.searchsorted(v, cuts, side="left") for v in scores]
    n0, n1 = len(scores[0]), len(scores[1])
    tp, tn = above[1], n0 - above[0]
    if objective == "accuracy":
        return float(np.max((tp + tn) / len(y)))
    return float(np.max((tp / max(n1, 1) + tn / max(n0, 1)) / 2))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--zs", type=float, nargs="+", default=[2.0, 3.0, 4.0])
    parser.add_argument(
        "--objective", choices=["accuracy", "balanced_accuracy"], default="accuracy"
    )
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    metric = accuracy_score if args.objective == "accuracy" else balanced_accuracy_score
    original = score_histogram.applies
    for name in args.sets:
        for eps in args.epsilons:
            scores: dict[str, list[float]] = {}
            used = 0
            for run, fold, data, train, test in paired_folds(name, args.runs, args.datasets_dir):
                y, X_test = data.y[test], data.features.iloc[test]
                X, labels = data.features.iloc[train], data.labels()[train]
                params = {"objective": args.objective}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    score_histogram.applies = _macro_f1_only(original)
                    try:
                        before = paired_model("fletcher_islam", eps, data, run, fold, **params)
                        before.fit(X, labels)
                        before_pred = class_indices(data, before.predict(X_test))
                    finally:
                        score_histogram.applies = original
                    model = paired_model("fletcher_islam", eps, data, run, fold, **params)
                    model.fit(X, labels)
                scores.setdefault("before", []).append(metric(y, before_pred))
                pred = class_indices(data, model.predict(X_test))
                scores.setdefault(f"after (z={score_histogram.CUT_Z:g})", []).append(
                    metric(y, pred)
                )
                used += model.decision_threshold_ is not None
                for key, at_z in _predictions_at(model, X_test, args.zs).items():
                    scores.setdefault(key, []).append(metric(y, class_indices(data, at_z)))
                p1 = model.predict_proba(X_test)[:, 1]
                scores.setdefault("oracle", []).append(best_cut_score(p1, y, args.objective))
            text = " ".join(f"{k}={100 * np.mean(v):.2f}" for k, v in scores.items())
            print(
                f"{name} eps={eps:g} {args.objective}: cut used in {used} folds: {text}",
                flush=True,
            )


if __name__ == "__main__":
    main()
