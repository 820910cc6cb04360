"""Stand-ins for small or signal-free validation sets, made from the shared sets (issue 28).

Issue 28's protocol chooses rules on the 11 shared sets only; the validation group's
failures (penguins: 344 rows, three classes of 44 / 36 / 20%; smarket: 1,250 rows at
52 / 48% and no signal) need stand-ins of the same shape. A stand-in is a shared set
changed by a chain of ``:``-separated steps, applied in order:

- ``cls=152/124/68``: keep that many records of the largest, second, … class (drawn at
  random), drop the other classes;
- ``pos=0.06``: a two-class set diluted to that share of its smaller class (records of
  it dropped at random);
- ``350``: a stratified random subset of that many rows;
- ``cols=safety/buying``: keep only those feature columns (the label too): few distinct
  records, each repeated with mixed labels, as in survey and shelf-price data;
- ``perm``: the labels permuted at random (no signal left);
- ``rare_first``: the labels renamed so that the rarest class sorts first (class index 0)
  and the largest last: the same data, the classes' indices reversed;
- ``perm=0.9``: the labels of a random 90% of the records permuted among them (the class
  shares kept, a tenth of the signal left: detectable in a leaf's counts, often too weak
  to move its majority).

``wall_robot:cls=152/124/68`` is penguins' shape with wall_robot's signal,
``magic_gamma:cls=650/600:perm`` smarket's. Each run draws its stand-in (seed = run) and
its 5 stratified folds from the run's seed, and fits with fresh secret noise (registry
defaults, or ``--params``). Prints per stand-in and ε the mean over runs of the 5-fold
gap to the training fold's majority class (accuracy, or macro-F1 with ``--objective
macro_f1``), the worst run and the runs more than 0.5 points below. ``--peers`` adds
diffprivlib's DecisionTree and RandomForest (issue 28's bar) on the same draws and folds
(fresh noise, the schema's public bounds, through dpviz.evaluation.peers' shim) and, per
stand-in and ε, in how many runs the algorithm is at least the better of the two less 0.5.

    python bench/bench_standins.py jpw wall_robot:cls=152/124/68 car:perm \\
        --datasets-dir ../shared/datasets --epsilons 0.1 --runs 8 \\
        [--params '{"n_estimators": 10}'] [--objective macro_f1] [--peers]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold, train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR, load_dataset
from bench.utility.methods import build
from dpviz.models.registry import get_algorithm
from dpviz.tabular.encode import read_csv

# diffprivlib's tree models: the bar of issue 28 at small ε (``--peers``).
PEERS = ("diffprivlib_dt", "diffprivlib_rf")


def standin(spec: str, seed: int, datasets_dir: Path = DATASETS_DIR) -> tuple[str, pd.DataFrame]:
    """The shared set ``spec`` names, changed by its steps (module docstring), drawn with
    ``seed``: (the set's name, the frame)."""
    name, *steps = spec.split(":")
    frame = read_csv(Path(datasets_dir) / f"{name}.csv")
    rng = np.random.default_rng(1000 + seed)
    for step in steps:
        labels = frame["label"].to_numpy()
        order = frame["label"].value_counts().index
        if step == "perm":
            frame = frame.assign(label=rng.permutation(labels))
        elif step.startswith("perm="):
            chosen = rng.choice(
                len(labels), int(round(float(step[5:]) * len(labels))), replace=False
            )
            mixed = labels.copy()
            mixed[chosen] = rng.permutation(labels[chosen])
            frame = frame.assign(label=mixed)
        elif step.startswith("cls="):
            wanted = [int(v) for v in step[4:].split("/")]
            if len(wanted) > len(order):
                raise ValueError(f"{spec}: {name} has only {len(order)} classes")
            keep = [
                rng.choice(np.flatnonzero(labels == c), k, replace=False)
                for c, k in zip(order, wanted)
            ]
            frame = frame.iloc[np.sort(np.concatenate(keep))]
        elif step.startswith("pos="):
            if len(order) != 2:
                raise ValueError(f"{spec}: pos= needs two classes")
            share = float(step[4:])
            minority = np.flatnonzero(labels == order[-1])
            keep = int(round(share * (len(labels) - len(minority)) / (1 - share)))
            drop = rng.choice(minority, max(len(minority) - keep, 0), replace=False)
            frame = frame.drop(frame.index[drop])
        elif step.startswith("cols="):
            kept = step[5:].split("/")
            unknown = sorted(set(kept) - set(frame.columns))
            if unknown:
                raise ValueError(f"{spec}: {name} has no column {unknown[0]!r}")
            frame = frame[[*kept, "label"]]
        elif step == "rare_first":
            # The same records, the labels renamed so that the classes sort from the
            # rarest to the largest (class index 0 the rarest): a rule that reads "class
            # 0" for "the majority" shows as a difference from the unrenamed set.
            rank = {label: f"c{i}_{label}" for i, label in enumerate(reversed(order))}
            frame = frame.assign(label=frame["label"].map(rank))
        elif step.isdigit():
            if len(frame) > int(step):
                frame, _ = train_test_split(
                    frame, train_size=int(step), stratify=frame["label"], random_state=seed
                )
        else:
            raise ValueError(f"{spec}: unknown step {step!r}")
    return name, frame.reset_index(drop=True)


def run_gaps(
    algorithm: str,
    spec: str,
    epsilon: float,
    seed: int,
    params: dict,
    objective: str,
    datasets_dir: Path = DATASETS_DIR,
) -> float:
    """The 5-fold mean gap (points) to the training fold's majority class of one run.
    ``algorithm``: a registry name, or one of :data:`PEERS` (``params`` and the objective
    are dpviz's: a peer ignores them and predicts its most probable class)."""
    name, frame = standin(spec, seed, datasets_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the benchmark declares the inferred schema public
        data = load_dataset(name, frame=frame)
    labels = data.labels()
    gaps = []
    splitter = StratifiedKFold(5, shuffle=True, random_state=seed)
    for fold, (train, test) in enumerate(splitter.split(data.y, data.y)):
        if algorithm in PEERS:
            fitted = build(algorithm, epsilon, data, train, None)
            predicted = np.asarray(data.schema.classes, dtype=object)[fitted.predict(test)]
        else:
            model = get_algorithm(algorithm).make(
                epsilon,
                random_state=seed * 1_000_003 + fold,
                schema=data.schema,
                objective=objective,
            )
            model.set_params(**params)
            model.fit(data.features.iloc[train], labels[train])
            predicted = model.predict(data.features.iloc[test])
        majority = pd.Series(labels[train]).value_counts().idxmax()
        constant = np.full(len(test), majority, dtype=object)
        if objective == "macro_f1":
            hit = f1_score(labels[test], predicted, average="macro")
            base = f1_score(labels[test], constant, average="macro")
        else:
            hit, base = np.mean(predicted == labels[test]), np.mean(constant == labels[test])
        gaps.append(100 * (hit - base))
    return float(np.mean(gaps))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("algorithm")
    parser.add_argument("standins", nargs="+")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--params", default="{}", help="JSON of parameters to set")
    parser.add_argument("--objective", default="accuracy")
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--peers", action="store_true", help="add diffprivlib DT and RF")
    args = parser.parse_args(argv)
    params = json.loads(args.params)
    methods = [args.algorithm, *(PEERS if args.peers else ())]
    rows = []
    for spec in args.standins:
        for eps in args.epsilons:
            seeds = range(args.first_seed, args.first_seed + args.runs)
            gaps = {
                m: [
                    run_gaps(m, spec, eps, s, params, args.objective, args.datasets_dir)
                    for s in seeds
                ]
                for m in methods
            }
            # The majority is the same per run for every method: gaps compare directly.
            best = np.max([gaps[m] for m in PEERS], axis=0) if args.peers else None
            for method in methods:
                row = {
                    "stand-in": spec,
                    "method": method,
                    "ε": eps,
                    "mean gap": round(float(np.mean(gaps[method])), 2),
                    "worst run": round(min(gaps[method]), 2),
                    "runs < −0.5": f"{sum(g < -0.5 for g in gaps[method])} of {args.runs}",
                }
                if best is not None:
                    wins = int(np.sum(np.asarray(gaps[method]) >= best - 0.5))
                    row["runs ≥ best peer − 0.5"] = f"{wins} of {args.runs}"
                rows.append(row)
                print(rows[-1], flush=True)
    print("| " + " | ".join(rows[0]) + " |")
    print("|---" * len(rows[0]) + "|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row.values()) + " |")


if __name__ == "__main__":
    main()
