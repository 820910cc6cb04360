"""DPBoost's random-split mode (``random_``) against the model without it (issue 28, h-rmode).

Paired: each fold fits DPBoostClassifier (registry defaults, the dataset's schema) with the
replayable noise seed 1000·seed + fold twice or more, once as the branch fits it ("mode")
and once with the mode switched off ("main": ``randomsplit.applies`` returns False, which
is main's model bit for bit), plus any variants: ``hold0.2`` (that share held out for the
check), ``z0.5`` (the check's sign-test z at every ε), ``nocheck`` (the check's outcome ignored),
``force`` (the mode on whatever n̂; ``force:T10d3`` with a second variant), ``above5``
(the mode from ε = 5 up on any n̂, in place of the grown model; ``above5:T50d5``),
``below5`` (the mode below ε = 5 only, as before it ran on mid-sized data from 5 up), ``T30d4``
(those sizes at every ε), ``lr0.5``, ``lam5``, ``bins64``. ``NAME:perm`` permutes the
labels (seeded by the run seed): a no-signal stand-in. Replayable noise: NOT private, a
benchmark only. Prints per dataset, ε and seed the 5-fold mean accuracy %, the training
folds' majority rate and in how many folds the mode was on.

    OMP_NUM_THREADS=1 nice -n 10 python bench/bench_random_mode.py pendigits car:perm \\
        --epsilons 0.3 1 --seeds 0 1 --variants main mode hold0.2 T10d3 \\
        --datasets-dir /work/shared/datasets
"""

from __future__ import annotations

import argparse
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR, VALIDATION_DIR, group_of, load_dataset
from dpviz.models.boosting import estimator, randomsplit
from dpviz.models.boosting.estimator import DPBoostClassifier


@contextmanager
def variant(name: str):
    """The module settings of one variant (see the module docstring), restored after."""
    patches = _patches(name)
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in patches:
            p.stop()


def _patches(name: str) -> list:
    patches = []
    if name == "main":
        patches.append(mock.patch.object(randomsplit, "applies", lambda *a: False))
    elif name.startswith("force"):  # on whenever the public conditions allow; "force:V"
        patches.append(mock.patch.object(randomsplit, "RANDOM_RECORDS", 0))
        patches.append(mock.patch.object(randomsplit, "RANDOM_RATE", 0.0))
        for part in name.split(":")[1:]:
            patches.extend(_patches(part))
    elif name.startswith("above5"):  # the mode from ε = 5 up on any n̂: no grown model
        patches.append(mock.patch.object(estimator, "grows", lambda *a: False))
        for part in name.split(":")[1:]:
            patches.extend(_patches(part))
    elif name == "below5":  # the mode below ε = 5 only (main before the sign test)
        applies = randomsplit.applies
        below = lambda model, *a: float(model.epsilon) < 5 and applies(model, *a)  # noqa: E731
        patches.append(mock.patch.object(randomsplit, "applies", below))
    elif name.startswith("hold"):
        patches.append(mock.patch.object(randomsplit, "HOLDOUT", float(name[4:])))
    elif name.startswith("z"):
        z = float(name[1:])
        patches.append(mock.patch.object(randomsplit, "check_z", lambda epsilon: z))
    elif name == "nocheck":  # the check always passes (the trees' weight 1)
        patches.append(mock.patch.object(randomsplit, "CHECK_WEIGHTS", (1.0, 1.0)))
    elif name.startswith("T"):
        trees, depth = name[1:].split("d")
        steps = ((0.0, int(trees), int(depth)),)
        patches.append(mock.patch.object(randomsplit, "RANDOM_STEPS", steps))
    elif name.startswith("lr"):
        patches.append(mock.patch.object(randomsplit, "RANDOM_RATE_ETA", float(name[2:])))
    elif name.startswith("lam"):
        patches.append(mock.patch.object(randomsplit, "RANDOM_LAMBDA", float(name[3:])))
    elif name.startswith("bins"):
        bins = randomsplit.RANDOM_SPLITS.__class__
        preset = bins(**{**randomsplit.RANDOM_SPLITS.__dict__, "n_bins": int(name[4:])})
        patches.append(mock.patch.object(randomsplit, "RANDOM_SPLITS", preset))
    elif name != "mode":
        raise ValueError(f"unknown variant {name!r}")
    return patches


def fit_score(data, labels, eps, train, test, noise, name) -> tuple[float, bool]:
    """One variant's accuracy % on ``test`` and whether the mode was on."""
    with variant(name), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPBoostClassifier(epsilon=eps, schema=data.schema, noise_seed=noise)
        model.fit(data.features.iloc[train], labels[train])
        accuracy = 100 * float(np.mean(model.predict(data.features.iloc[test]) == labels[test]))
    return accuracy, bool(model.random_)


def load(spec: str, seed: int, datasets_dir: Path):
    """The dataset of ``spec`` and its labels (permuted, seeded by ``seed``, for ``:perm``)."""
    name, *steps = spec.split(":")
    group = group_of(name)
    data = load_dataset(
        name, VALIDATION_DIR if group == "validation" else datasets_dir, group=group
    )
    labels, y = data.labels(), data.y
    if "perm" in steps:
        order = np.random.default_rng(2000 + seed).permutation(len(y))
        labels, y = labels[order], y[order]
    return data, labels, y


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    parser.add_argument("--variants", nargs="+", default=["main", "mode"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    rows = []
    for spec in args.datasets:
        for seed in args.seeds:
            data, labels, y = load(spec, seed, args.datasets_dir)
            splits = StratifiedKFold(args.folds, shuffle=True, random_state=seed)
            for fold, (train, test) in enumerate(splits.split(y, y)):
                majority = np.bincount(y[train]).argmax()
                for eps in args.epsilons:
                    row = {"dataset": spec, "eps": eps, "seed": seed, "fold": fold}
                    row["majority"] = 100 * float(np.mean(y[test] == majority))
                    for name in args.variants:
                        acc, on = fit_score(
                            data, labels, eps, train, test, 1000 * seed + fold, name
                        )
                        row[name] = acc
                        row[f"on:{name}"] = on
                    rows.append(row)
            print(f"done {spec} seed {seed}", file=sys.stderr, flush=True)
    frame = pd.DataFrame(rows).drop(columns="fold")
    table = frame.groupby(["dataset", "eps", "seed"]).mean()
    on = [c for c in table.columns if c.startswith("on:")]
    table[on] = table[on] * args.folds
    print(table.round(1).to_string())


if __name__ == "__main__":
    main()
