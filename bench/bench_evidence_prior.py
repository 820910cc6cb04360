"""The prior a small-ε forest's leaf evidence is measured against, and binary AUC (issue 28).

At a leaf ε of about 0.06 (the default forest at ε = 0.1) a leaf's released counts are
mostly noise, and :func:`dpviz.models.forest.scoring.count_values` shrinks them towards the
released class prior with α·π_c pseudo-records. For a class of 6–12% that is a few
pseudo-records, so the log share of a leaf whose noisy minority count was clipped to 0 is
far below the rest. This script scores the SAME release (a fixed replayable noise seed: NOT
private) three ways — the released prior (main), its square root renormalised, and the
uniform prior — and prints the 5-fold binary AUC and accuracy per stand-in
(``bench/bench_standins.py`` specs), averaged over runs (run r: stand-in and folds from seed r,
noise seed 100·r + fold).

    python bench/bench_evidence_prior.py adult:pos=0.12:2400 magic_gamma:pos=0.06:4000 \\
        --epsilon 0.1 --runs 4 --datasets-dir ../shared/datasets
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

import dpviz.models.forest.voting as voting
from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, load_dataset
from dpviz.models.registry import get_algorithm

RELEASED = voting.count_prior


def _sqrt_prior(prior_counts, n_classes: int) -> np.ndarray:
    shares = np.sqrt(RELEASED(prior_counts, n_classes))
    return shares / shares.sum()


def _uniform_prior(prior_counts, n_classes: int) -> np.ndarray:
    return np.full(n_classes, 1.0 / n_classes)


TARGETS = {"released": RELEASED, "sqrt": _sqrt_prior, "uniform": _uniform_prior}


def run(spec: str, epsilon: float, seed: int, datasets_dir: Path) -> list[tuple]:
    """(spec, run, fold, target, AUC %, accuracy %) of one run's five folds."""
    name, frame = standin(spec, seed, datasets_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the benchmark declares the inferred schema public
        data = load_dataset(name, frame=frame)
    labels, y = data.labels(), data.y
    index = {c: i for i, c in enumerate(data.schema.classes)}
    rows = []
    splitter = StratifiedKFold(5, shuffle=True, random_state=seed)
    for fold, (train, test) in enumerate(splitter.split(y, y)):
        for target, prior_of in TARGETS.items():
            voting.count_prior = prior_of
            try:
                model = get_algorithm("fletcher_islam").make(
                    epsilon, random_state=seed * 1_000_003 + fold, schema=data.schema
                )
                model.set_params(noise_seed=100 * seed + fold)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # replayable noise: NOT private
                    model.fit(data.features.iloc[train], labels[train])
                    proba = model.predict_proba(data.features.iloc[test])
                    predicted = model.predict(data.features.iloc[test])
            finally:
                voting.count_prior = RELEASED
            order = [index[str(c)] for c in model.classes_]
            auc = roc_auc_score(y[test] == 1, proba[:, order.index(1)])
            hit = np.mean(np.array([index[str(c)] for c in predicted]) == y[test])
            rows.append((spec, seed, fold, target, 100 * auc, 100 * hit))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("standins", nargs="+", help="two-class stand-ins")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    rows = [
        row
        for spec in args.standins
        for seed in range(args.runs)
        for row in run(spec, args.epsilon, seed, args.datasets_dir)
    ]
    table = pd.DataFrame(rows, columns=["standin", "run", "fold", "target", "auc", "accuracy"])
    means = table.groupby(["standin", "target"])[["auc", "accuracy"]].mean().unstack("target")
    print(means.round(1).to_string())


if __name__ == "__main__":
    main()
