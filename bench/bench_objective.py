"""Why the macro-F1 objective does or does not beat the majority (issue 28; bench/README.md
"the macro-F1 objective on imbalanced sets, measured").

One fit per (set, dpviz algorithm, ε, fold) — folds 0 and 1 of the utility benchmark's
5-fold split for seed 0, ``objective="macro_f1"``, fresh secret noise — then post-processing
of that one release only: the macro-F1 of ``predict`` with the exponent ``a`` of
``dpviz.models.objective`` set to each of 0.5 … 1.25 in turn, the share of records
predicted as the minority class, the number of distinct released minority scores, the
released prior's minority share, and, as a diagnostic that is NOT a rule (it reads the
test labels), the best macro-F1 any threshold on the released minority score reaches on
the test fold ("does any threshold help?").

Usage: ``python bench/bench_objective.py [SET ...] --out objective.csv`` (default: the
shared bank_marketing and adult and the validation caravan, hmda, stackoverflow and taxi,
15,000 rows at most).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sklearn.metrics import f1_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from bench.utility.data import VALIDATION_DIR, load_dataset  # noqa: E402
from dpviz.models import objective  # noqa: E402
from dpviz.models.registry import get_algorithm  # noqa: E402

SHARED = ("bank_marketing", "adult")
VALIDATION = ("caravan", "hmda", "stackoverflow", "taxi")
ALGORITHMS = ("fletcher_islam", "jpw", "friedman_schuster", "dpea", "dpboost")
EXPONENTS = (0.5, 0.75, 0.9, 1.0, 1.25)


def macro_f1(y, pred) -> float:
    return float(f1_score(y, pred, average="macro", labels=[0, 1], zero_division=0))


def best_threshold_f1(y: np.ndarray, score: np.ndarray, minority: int) -> float:
    """The best macro-F1 of "minority where score ≥ t" over every t (cuts only between
    distinct scores), or of predicting the majority everywhere: a diagnostic on the test
    labels, never a rule."""
    order = np.argsort(-score, kind="stable")
    hit = (y[order] == minority).astype(float)
    cut = np.r_[score[order][1:] != score[order][:-1], True]
    tp = np.cumsum(hit)[cut]
    fp = np.arange(1, len(hit) + 1)[cut] - tp
    positives, negatives = hit.sum(), len(hit) - hit.sum()
    fn, tn = positives - tp, negatives - fp
    f1_min = 2 * tp / (2 * tp + fp + fn)
    f1_maj = np.where(2 * tn + fn + fp > 0, 2 * tn / np.maximum(2 * tn + fn + fp, 1), 0.0)
    return max(macro_f1(y, np.full(len(y), 1 - minority)), float(np.max((f1_min + f1_maj) / 2)))


def one_fit(data, train, test, algorithm: str, epsilon: float, fold: int) -> dict:
    """One release and its post-processing at every exponent (see the module docstring)."""
    model = get_algorithm(algorithm).make(
        epsilon, random_state=fold, schema=data.schema, objective="macro_f1"
    )
    model.fit(data.features.iloc[train], data.labels()[train])
    X, y = data.features.iloc[test], data.y[test]
    index = {c: i for i, c in enumerate(data.schema.classes)}
    minority = int(np.argmin(np.bincount(data.y, minlength=2)))
    column = [index[str(c)] for c in model.classes_].index(minority)
    score = model.predict_proba(X)[:, column]
    row = {"algorithm": algorithm, "epsilon": epsilon, "fold": fold}
    row["majority"] = macro_f1(y, np.full(len(y), 1 - minority))
    row["prior_minority"] = float(model.decision_prior_[column])
    row["true_minority"] = float(np.mean(data.y == minority))
    try:
        for a in EXPONENTS:
            objective.EXPONENTS["macro_f1"] = a  # the same release, another exponent
            pred = np.array([index[str(c)] for c in model.predict(X)])
            row[f"f1_a{a:g}"] = macro_f1(y, pred)
            row[f"minority_share_a{a:g}"] = float(np.mean(pred == minority))
    finally:
        objective.EXPONENTS["macro_f1"] = objective.MACRO_F1_EXPONENT
    row["best_threshold_f1"] = best_threshold_f1(y, score, minority)
    row["distinct_scores"] = len(np.unique(np.round(score, 12)))
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="*", help="default: all six")
    parser.add_argument("--datasets-dir", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "objective.csv")
    args = parser.parse_args()
    sets = [(n, args.datasets_dir, "shared") for n in SHARED]
    sets += [(n, VALIDATION_DIR, "validation") for n in VALIDATION]
    sets = [s for s in sets if not args.sets or s[0] in args.sets]
    warnings.simplefilter("ignore")
    rows = []
    for name, folder, group in sets:
        data = load_dataset(name, folder, 15_000, 0, group=group)
        splits = StratifiedKFold(5, shuffle=True, random_state=0).split(data.y, data.y)
        for fold, (train, test) in list(enumerate(splits))[:2]:
            for algorithm in ALGORITHMS:
                for epsilon in (0.1, 1.0, 10.0):
                    with threadpool_limits(1):
                        row = one_fit(data, train, test, algorithm, epsilon, fold)
                    rows.append({"set": name, "group": group, **row})
                    print(name, fold, algorithm, epsilon, round(row["f1_a0.75"], 3), flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(args.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
