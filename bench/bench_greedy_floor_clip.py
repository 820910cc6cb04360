"""The greedy trees' floor statistic with and without the clip of n̂, paired (issue 28).

Fits Friedman–Schuster and DPEA once per fold with the floor switched off (replayable
noise seed run·1000 + fold; NOT private, a benchmark only) and scores that one release
under three versions of the floor's statistic (``dpviz.models.greedy.floor``):

- ``clip``: each group's n̂ = Σ c̃ clipped at 0 in the deviation and the sampling term,
  and the pooled shares from counts clipped at 0 (h-floor2's statistic);
- ``unclip``: the deviation taken around the unclipped n̂ (its noise mean is then exactly
  v·(k − 2 + k·Σp²)), the rest as ``clip``;
- ``unclip_all``: n̂ unclipped in the sampling term as well, and the pooled shares from the
  unclipped counts (clipped at 0 per class after pooling);
- ``pooled``: ``unclip_all`` with the noise mean of deviations around shares pooled from
  the groups themselves: Σ_g c·(v_g·(1 − 2·w_g) + w_g²·Σ_h v_h), c = k − 2 + k·Σp², w_g =
  n̂_g/N̂ (clipped at 0); exact to first order in the noise. This is the library's
  statistic since h-gfloor3 (the ``library_X`` / ``library_bar`` columns: the
  library's own ``leaf_signal``, equal to ``clip``'s on main's code).

For each version the tree is trusted when X ≥ bar at some depth, else it answers the
floor's fall-back (``apply_floor``'s) — post-processing of the same release, so the
versions differ in the floor's decision only. Also kept per fold: the tree's depth and
whether the fall-back's class (the root's shares, with the report-noisy-max class below
ε = 0.8; at depth 0 the tree's own class) is the training fold's majority.

Prints per spec, algorithm and ε the mean over runs of the 5-fold gap to the majority
(points) without the floor and under each version, the runs more than 0.5 points below,
and the share of folds trusted.

    python bench/bench_greedy_floor_clip.py magic_gamma:cls=650/600:perm car \\
        --epsilons 0.1 1 10 --runs 4 --first-seed 100 --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.greedy.estimator as greedy_estimator
import dpviz.models.greedy.floor as floor
from bench.bench_greedy_floor import ALGORITHMS, fit_greedy, standin_folds
from bench.utility.data import DATASETS_DIR
from dpviz.models.greedy.grow import GrownTree
from dpviz.models.greedy.leaves import node_shares
from dpviz.models.trees.floor import floor_scores

VERSIONS = ("clip", "unclip", "unclip_all", "pooled")


def signal(counts, variance, z, version):
    """(X, bar) of one partition under ``version`` (module docstring)."""
    counts = np.asarray(counts, dtype=np.float64)
    k = counts.shape[1]
    raw = counts.sum(axis=1)
    clipped = np.maximum(raw, 0.0)
    if version in ("unclip_all", "pooled"):
        pooled = np.clip(counts.sum(axis=0), 0.0, None)
    else:
        pooled = np.clip(counts, 0.0, None).sum(axis=0)
    shares = pooled / pooled.sum() if pooled.sum() > 0 else np.full(k, 1.0 / k)
    purity = float(np.sum(shares**2))
    centre = clipped if version == "clip" else raw
    deviation = counts - centre[:, None] * shares[None, :]
    variance = np.asarray(variance, dtype=np.float64)
    noise = variance * (k - 2 + k * purity)
    if version == "pooled" and clipped.sum() > 0:
        # The pooled shares are the groups' own: a group of weight w loses 2·w of its
        # noise and carries w² of everyone's (first order in the noise).
        w = clipped / clipped.sum()
        mean = (k - 2 + k * purity) * (variance * (1 - 2 * w) + w**2 * variance.sum())
    else:
        mean = noise
    size = raw if version in ("unclip_all", "pooled") else clipped
    total = float(size.sum())
    inside = np.clip(1.0 - size / total, 0.0, None) if total > 0 else np.zeros_like(size)
    sampling = size * inside * (1.0 - purity)
    excess = float(np.sum((deviation**2).sum(axis=1) - mean))
    spread = math.sqrt(
        5.0 * float(np.sum(noise**2))
        + floor.FLOOR_SELECTION**2 * 2.0 * float(np.sum(sampling**2)) / max(k - 1, 1)
    )
    return excess, floor.FLOOR_SELECTION * float(sampling.sum()) + z * spread


def tree_signal(tree: GrownTree, noisy: np.ndarray, version: str) -> tuple[float, float]:
    """``floor.leaf_signal`` with the partition statistic of ``version``."""
    saved = floor.partition_signal
    floor.partition_signal = lambda c, v, z=floor.FLOOR_Z: signal(c, v, z, version)
    try:
        return floor.leaf_signal(tree, noisy)
    finally:
        floor.partition_signal = saved


def fold_rows(spec: str, run: int, epsilons, datasets_dir: Path) -> list[dict]:
    released = greedy_estimator.floor_applies
    rows = []
    for data, labels, fold, train, test, majority, base in standin_folds(spec, run, datasets_dir):
        X_test = data.features.iloc[test]
        for algorithm in ALGORITHMS:
            for eps in epsilons:
                model = fit_greedy(algorithm, eps, data, train, run, fold, floor=False)
                tree_model = getattr(model, "model_", model)
                tree_model = getattr(tree_model, "estimator_", tree_model)
                plain = 100 * (np.mean(model.predict(X_test) == labels[test]) - base)
                row = {
                    "spec": spec,
                    "algorithm": algorithm,
                    "ε": eps,
                    "run": run,
                    "fold": fold,
                    "depth": tree_model.depth_,
                    "plain": plain,
                }
                classes = np.asarray(tree_model.classes_)
                k = len(classes)
                first = tree_model.root_class_ if tree_model.budget_.pick else None
                applies = tree_model.depth_ > 0 and released(
                    tree_model.objective, tree_model.fallback, len(tree_model.leaf_nodes_)
                )
                if tree_model.depth_ == 0:
                    row["fallback_right"] = float(classes[tree_model.leaf_labels_[0]] == majority)
                for version in VERSIONS:
                    row[version] = plain
                    row[f"{version}_trusted"] = True
                if applies:
                    tree = GrownTree(
                        **{f.name: getattr(tree_model, f"{f.name}_") for f in fields(GrownTree)}
                    )
                    noisy = tree_model.leaf_noisy_counts_
                    root = node_shares(tree, noisy, k, first)[0]
                    row["fallback_right"] = float(classes[int(np.argmax(root))] == majority)
                    floored = copy.copy(tree_model)
                    floored.leaf_proba_ = floor_scores(tree_model.leaf_proba_, root)
                    floored.leaf_labels_ = np.full(
                        len(floored.leaf_proba_), int(np.argmax(root)), dtype=np.int64
                    )
                    fallback = 100 * (np.mean(floored.predict(X_test) == labels[test]) - base)
                    row["library_X"], row["library_bar"] = floor.leaf_signal(tree, noisy)
                    for version in VERSIONS:
                        excess, bar = tree_signal(tree, noisy, version)
                        row[f"{version}_X"], row[f"{version}_bar"] = excess, bar
                        if excess < bar:
                            row[version] = fallback
                            row[f"{version}_trusted"] = False
                rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("standins", nargs="+")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, help="CSV of every fold")
    parser.add_argument("--summary", action="store_true", help="summarise the CSVs given")
    args = parser.parse_args(argv)
    if args.summary:
        summarise(pd.concat([pd.read_csv(path) for path in args.standins]))
        return
    rows = []
    for spec in args.standins:
        for run in range(args.first_seed, args.first_seed + args.runs):
            rows.extend(fold_rows(spec, run, args.epsilons, args.datasets_dir))
            if args.out:
                pd.DataFrame(rows).to_csv(args.out, index=False)
    summarise(pd.DataFrame(rows))


def summarise(folds: pd.DataFrame) -> None:
    keys = ["spec", "algorithm", "ε"]
    folds = folds.assign(fallback_right=folds["fallback_right"].astype(float))
    runs = folds.groupby([*keys, "run"]).mean(numeric_only=True)
    table = runs.groupby(keys).agg(plain=("plain", "mean"))
    table["plain<"] = (runs["plain"] < -0.5).groupby(keys).sum()
    for version in VERSIONS:
        table[version] = runs.groupby(keys)[version].mean()
        table[f"{version}<"] = (runs[version] < -0.5).groupby(keys).sum()
        table[f"{version}_tr"] = runs.groupby(keys)[f"{version}_trusted"].mean()
    table["depth0"] = (folds["depth"] == 0).groupby([folds[k] for k in keys]).mean()
    table["fb_right"] = runs.groupby(keys)["fallback_right"].mean()
    table = table.round(2).reset_index()
    print("| " + " | ".join(str(c) for c in table.columns) + " |")
    print("|---" * len(table.columns) + "|")
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
