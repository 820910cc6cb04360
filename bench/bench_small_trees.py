"""Paired comparison of the default forest's small-ε tree cap and evidence scale (issue 28).

Every law sees the same folds (``StratifiedKFold(5, shuffle, 200 + run)``), the same
structure seed and the same noise seed; the laws are patched in-process
(``sizing.SMALL_MAX_TREES``, ``signal.SIGNAL_TREES``), so their differences are the laws'
and the noise's, not the folds'. Replayable noise: NOT private, a benchmark only.

    python bench/bench_small_trees.py --epsilon 0.1 --runs 8 --out /tmp/p.csv \\
        --laws main t10 --datasets adult magic_gamma
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.utility.data import DATASETS_DIR, load_dataset
from dpviz.models.forest import signal, sizing
from dpviz.models.registry import get_algorithm

# law: (SMALL_MAX_TREES, SIGNAL_TREES). "main" is the law before h-forest10 (at most 5
# trees: the scale is 1.5 whatever SIGNAL_TREES says); t10 the kept one (scale 1.5·τ/5).
LAWS = {
    "main": (5, 5),
    "t10": (10, 5),
    "t10s15": (10, 10),
    "t10s2": (10, 7.5),
    "t10s4": (10, 3.75),
}


def run(name: str, epsilon: float, runs: int, laws: list[str], folder: Path) -> list[dict]:
    """One row per (run, fold, law) on data set ``name``."""
    data = load_dataset(name, folder)
    X, y = data.features, data.labels().astype(str)
    positive = str(data.schema.classes[-1])
    rows = []
    for r in range(runs):
        folds = StratifiedKFold(5, shuffle=True, random_state=200 + r).split(X, y)
        for f, (train, test) in enumerate(folds):
            for law in laws:
                sizing.SMALL_MAX_TREES, signal.SIGNAL_TREES = LAWS[law]
                seed = 1000 * r + f
                model = get_algorithm("fletcher_islam").make(
                    epsilon, random_state=seed, schema=data.schema, noise_seed=7 + seed
                )
                model.fit(X.iloc[train], y[train])
                pred = np.asarray(model.predict(X.iloc[test])).astype(str)
                auc = np.nan
                classes = [str(c) for c in model.classes_]
                if data.n_classes == 2 and positive in classes:
                    proba = model.predict_proba(X.iloc[test])[:, classes.index(positive)]
                    auc = roc_auc_score(y[test] == positive, proba)
                rows.append(
                    dict(
                        dataset=name,
                        run=r,
                        fold=f,
                        law=law,
                        trees=model.n_estimators_,
                        acc=float(np.mean(pred == y[test])),
                        auc=auc,
                    )
                )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--laws", nargs="+", default=["main", "t10"], choices=list(LAWS))
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # inferred schemas: declared public for a benchmark
    rows: list[dict] = []
    for name in args.datasets:
        rows += run(name, args.epsilon, args.runs, args.laws, args.datasets_dir)
        pd.DataFrame(rows).to_csv(args.out, index=False)
    table = pd.DataFrame(rows).groupby(["dataset", "law"])[["acc", "auc", "trees"]].mean()
    print((table * [100, 100, 1]).round(2).unstack("law").to_string())


if __name__ == "__main__":
    main()
