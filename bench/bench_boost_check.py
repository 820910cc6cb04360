"""DPBoost's held-out check as a sign test, and a hard floor: measured, not built (issue 28).

DPBoost (the default preset) holds out a cell of records from its last ensemble and
releases one noisy count, the gain G of trusting the trees over the prior on that cell; the
trees are trusted when G̃ > ln(1000)/ε_t. That bar covers the noise, not the sampling: on
data without signal G spreads as √(the records where the two disagree). When the check
fails, the trees keep a small weight w_floor (``check.check_weights``). Two variants,
each paired with main on the same folds and the same replayable noise:

- ``sign<z>``: the random-split mode's sign test (``randomsplit``): W (trees right, prior
  wrong) and L (the other way round) released at the same ε_t (a record adds to at most
  one: L1 sensitivity 1, so the pair costs what G cost), trusted when
  W̃ − L̃ > ln(1000)/ε_t + z·√max(W̃ + L̃, 0);
- ``hard``: where the check fails, every record gets the released prior's first class
  (``predict_proba`` unchanged); ``hard-sign<z>`` both.

Noise is replayable (seed 1000·run + fold), NOT private: a measurement only. Prints, per
set and ε, the mean gap to the training fold's majority (accuracy points), the worst run's
five-fold mean and the runs more than 0.5 below.

    python bench/bench_boost_check.py votes magic_gamma:cls=650/600:perm --epsilons 5 10 \\
        --runs 4 --variants main hard sign1 hard-sign2 --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import warnings
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR
from bench.utility.paired import class_indices, paired_folds, paired_model
from dpviz.models.boosting import check


def sign_check(z: float):
    """``held_out_check`` with the sign test's bar (module docstring); same signature."""

    def held_out_check(raw, prior, y, weights, epsilon, rng, keep_prior=False):
        trust, floor = weights

        def correct(w: float) -> np.ndarray:
            return check.classify((1 if keep_prior else 1 - w) * prior + w * raw) == y

        right, floored = correct(trust), correct(floor)
        wins = int(np.sum(right & ~floored)) + int(rng.discrete_laplace(epsilon, 1)[0])
        losses = int(np.sum(floored & ~right)) + int(rng.discrete_laplace(epsilon, 1)[0])
        bar = check.CHECK_THRESHOLD / epsilon + z * math.sqrt(max(wins + losses, 0))
        return wins - losses, bool(wins - losses > bar)

    return held_out_check


def parse(variant: str) -> tuple[bool, float | None]:
    """(hard floor?, the sign test's z or None) of a variant name."""
    hard = variant.startswith("hard")
    rest = variant.removeprefix("hard").removeprefix("-")
    if variant == "main" or rest == "":
        return hard, None
    if not rest.startswith("sign"):
        raise ValueError(f"unknown variant {variant!r}: main, hard, sign<z>, hard-sign<z>")
    return hard, float(rest.removeprefix("sign"))


def gaps(name: str, epsilon: float, runs: int, variants: list[str], datasets_dir: Path):
    """Per variant, the five-fold mean gap to the majority of every run (points)."""
    per = {v: [[] for _ in range(runs)] for v in variants}
    for run, fold, data, train, test in paired_folds(name, runs, datasets_dir):
        y = data.y
        majority = np.bincount(y[train], minlength=data.n_classes).argmax()
        for variant in variants:
            hard, z = parse(variant)
            model = paired_model("dpboost", epsilon, data, run, fold)
            patch = (
                mock.patch("dpviz.models.boosting.estimator.held_out_check", sign_check(z))
                if z is not None
                else contextlib.nullcontext()
            )
            with patch:
                model.fit(data.features.iloc[train], data.labels()[train])
            pred = class_indices(data, model.predict(data.features.iloc[test]))
            if hard and model.check_passed_ is False:
                first = model.classes_[int(np.argmax(np.clip(model.prior_counts_, 0, None)))]
                pred = np.full(len(test), class_indices(data, [first])[0])
            gap = 100 * (np.mean(pred == y[test]) - np.mean(y[test] == majority))
            per[variant][run].append(gap)
    return {v: [float(np.mean(g)) for g in per[v]] for v in variants}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="set names or bench_standins specs")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[10.0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--variants", nargs="+", default=["main", "hard", "sign2"])
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args()
    for variant in args.variants:
        parse(variant)  # refuse a bad name before any fit
    warnings.simplefilter("ignore")
    for name in args.sets:
        for eps in args.epsilons:
            result = gaps(name, eps, args.runs, args.variants, args.datasets_dir)
            cells = [
                f"{v}: {np.mean(r):+.2f} (worst {min(r):+.2f}, {sum(g < -0.5 for g in r)} below)"
                for v, r in result.items()
            ]
            print(f"{name} ε={eps:g} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
