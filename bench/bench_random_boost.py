"""Boosting random-split trees that read every record, ε/T per tree on the leaves (issue 28).

Splits cost no ε when they are drawn from public randomness: a feature uniformly at random
and a threshold either uniform in the feature's PUBLIC schema range ("uni") or drawn from a
noisy histogram of each continuous feature ("q": 128 equal-width public cells, Laplace
counts at 0.05·ε over all s features, the share DPBoost's grown model books for its bin
edges). Every tree is a complete tree of depth D over ALL training records; its leaves
release, with Laplace noise at ε_t = (ε − ε_q)/T (sequential composition, add/remove-one):

* the clipped gradient sums: softmax p − y (L1 norm ≤ 2 per record, one shared K-vector per
  leaf), binary p − y (|g| ≤ 1);
* a denominator, by mode: ``count`` — a noisy leaf count at a ``share`` of ε_t (Newton
  bound κ·count: κ = 1/4 binary, 1/2 softmax); ``cmax`` — the same noisy count floored
  at n̂/2^D (n̂ as in ``bound``); ``hess`` — a noisy hessian sum at a
  ``share`` of ε_t (p(1−p) per record, L1 ≤ 1/4 binary, ≤ 1 softmax); ``bound`` — no
  per-leaf denominator: κ · n̂/2^D from one noisy total count n̂ at 0.01·ε (so all of ε_t
  goes to the gradients); ``mass`` — as ``bound`` but κ · n̂ · (the leaf's share of the
  records estimated from the released histograms as if features were independent,
  floored at 1/(4·2^D)): post-processing, no ε beyond ``bound``'s.

Leaf value = −lr · G / (H + λ). The model starts at zero scores (public). Compared on the
same stratified folds with main's DPBoost (replayable noise seed 1000·seed + fold, as
bench/bench_boost_full_trees.py), the booster's noise-free twin and HistGradientBoosting.
The booster's noise is replayable from 1000·seed + fold: NOT private, a benchmark only.
Accuracy %.

    python bench/bench_random_boost.py pendigits magic_gamma adult --epsilon 10 \\
        --settings uni:T100:d6 q:T200:d6:count0.3 --twins --main --hgb \\
        --datasets-dir /work/shared/datasets

A setting is colon-separated: "uni" or "q", then Tn (trees), dn (depth), lrX (learning
rate, default 0.3), lamX (λ, default 1), and the denominator mode with its share of ε_t
(count0.3, cmax0.1, hess0.3, bound, mass; default count0.3).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.utility.data import DATASETS_DIR, VALIDATION_DIR, group_of, load_dataset
from dpviz.models.boosting.estimator import DPBoostClassifier

CELLS = 128  # equal-width public cells of the noisy histogram ("q" thresholds)
EDGE_SHARE = 0.05  # the histogram's share of ε, as DPBoost's grown model books it
TOTAL_SHARE = 0.01  # the noisy total count's share of ε ("bound" mode only)


@dataclass(frozen=True)
class Setting:
    """One booster: threshold source, trees, depth, learning rate, λ, denominator."""

    thresholds: str = "uni"
    trees: int = 100
    depth: int = 6
    lr: float = 0.3
    lam: float = 1.0
    denom: str = "count"
    share: float = 0.3

    @classmethod
    def parse(cls, text: str) -> Setting:
        """``uni:T100:d6:lr0.3:lam1:count0.3`` (any order after the threshold source)."""
        source, *parts = text.split(":")
        fields: dict = {"thresholds": source}
        for part in parts:
            for key, name, cast in (
                ("T", "trees", int),
                ("d", "depth", int),
                ("lr", "lr", float),
                ("lam", "lam", float),
            ):
                if part.startswith(key) and part[len(key) :].replace(".", "").isdigit():
                    fields[name] = cast(part[len(key) :])
                    break
            else:
                for mode in ("cmax", "count", "hess", "bound", "mass"):
                    if part.startswith(mode):
                        fields["denom"] = mode
                        fields["share"] = float(part[len(mode) :] or 0.0)
        return cls(**fields)


def public_matrix(data) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Continuous values and discrete codes as floats, the schema's public bounds, and the
    number of continuous columns (they come first)."""
    s = data.schema
    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    low = [f.low for f in s.continuous] + [0.0] * len(s.discrete)
    high = [f.high for f in s.continuous] + [len(f.values) - 1.0 for f in s.discrete]
    return X, np.array(low, float), np.array(high, float), len(s.continuous)


def noisy_cells(X, low, high, n_cont, eps, rng) -> np.ndarray:
    """The "q" release: per continuous feature, its 128 equal-width public cells counted,
    Laplace noise at eps/s each (L1 sensitivity s), clipped at 0 (post-processing).
    Returns (s, CELLS) weights."""
    width = np.where(high[:n_cont] > low[:n_cont], high[:n_cont] - low[:n_cont], 1.0)
    cells = np.floor((X[:, :n_cont] - low[:n_cont]) / width * CELLS).astype(np.int64)
    cells = np.clip(cells, 0, CELLS - 1) + np.arange(n_cont) * CELLS
    counts = np.bincount(cells.ravel(), minlength=n_cont * CELLS).astype(float)
    counts += rng.laplace(0.0, n_cont / eps, counts.shape)
    return np.clip(counts, 0.0, None).reshape(n_cont, CELLS)


def draw_splits(setting, low, high, n_cont, weights, rng):
    """One tree's random splits (public randomness + released weights only): a feature
    per internal node, uniformly; a threshold uniform in its public range, or (``q``,
    continuous features) inside a cell drawn in proportion to the noisy counts."""
    nodes = 2**setting.depth - 1
    feats = rng.integers(0, len(low), nodes)
    u = rng.random(nodes)
    thr = low[feats] + u * (high[feats] - low[feats])
    if setting.thresholds == "q" and weights is not None:
        for j in np.unique(feats[feats < n_cont]):
            at = np.flatnonzero(feats == j)
            w = weights[j]
            p = w / w.sum() if w.sum() > 0 else np.full(CELLS, 1.0 / CELLS)
            cell = rng.choice(CELLS, at.size, p=p)
            span = (high[j] - low[j]) / CELLS
            thr[at] = low[j] + (cell + rng.random(at.size)) * span
    return feats, thr


def right_share(feats, thr, low, high, weights) -> np.ndarray:
    """Each node's estimated share of its records going right (thr < x): from the
    released cell weights (``q``, continuous features; linear inside a cell), else the
    share of the public range above the threshold. Post-processing only."""
    span = np.where(high[feats] > low[feats], high[feats] - low[feats], 1.0)
    share = np.clip((high[feats] - thr) / span, 0.0, 1.0)
    if weights is not None:
        n_cont = len(weights)
        cdf = np.cumsum(weights, axis=1) / np.maximum(weights.sum(axis=1, keepdims=True), 1e-12)
        cdf = np.hstack([np.zeros((n_cont, 1)), cdf])
        cont = feats < n_cont
        pos = (thr[cont] - low[feats[cont]]) / span[cont] * CELLS
        pos = np.clip(pos, 0.0, CELLS - 1e-9)
        cell = pos.astype(np.int64)
        f = feats[cont]
        below = cdf[f, cell] + (pos - cell) * (cdf[f, cell + 1] - cdf[f, cell])
        share[cont] = 1.0 - below
    return share


def leaf_mass(feats, thr, low, high, weights, depth) -> np.ndarray:
    """Each leaf's estimated share of the records: the product of the path's shares, as
    if features were independent (post-processing of released values)."""
    right = right_share(feats, thr, low, high, weights)
    mass = np.ones(1)
    for level in range(depth):
        nodes = np.arange(2**level) + 2**level - 1
        mass = np.column_stack([mass * (1 - right[nodes]), mass * right[nodes]]).ravel()
    return mass


def leaves(X, feats, thr, depth) -> np.ndarray:
    """Each record's leaf (0..2^depth−1) of the complete tree, by array ops."""
    node = np.zeros(len(X), dtype=np.int64)
    rows = np.arange(len(X))
    for _ in range(depth):
        node = 2 * node + 1 + (X[rows, feats[node]] > thr[node])
    return node - (2**depth - 1)


def probabilities(scores: np.ndarray) -> np.ndarray:
    """Sigmoid (one column) or softmax scores to per-output probabilities."""
    if scores.shape[1] == 1:
        return 1.0 / (1.0 + np.exp(-scores))
    z = np.exp(scores - scores.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def leaf_sums(leaf, values, n_leaves) -> np.ndarray:
    """Per-leaf sums of each column of ``values`` (bincount over leaf·m + column)."""
    m = values.shape[1]
    index = (leaf[:, None] * m + np.arange(m)).ravel()
    return np.bincount(index, values.ravel(), minlength=n_leaves * m).reshape(n_leaves, m)


def fit(setting, X, y, k, low, high, n_cont, eps, rng) -> list:
    """Boost ``setting.trees`` random-split trees on every record; ``eps`` = inf is the
    noise-free twin. Returns the trees as (feats, thr, leaf values)."""
    m = 1 if k == 2 else k
    target = (y[:, None] == np.arange(k)[None, :]).astype(float)[:, -m:]
    finite = np.isfinite(eps)
    eps_q = EDGE_SHARE * eps if setting.thresholds == "q" and finite else 0.0
    weights = noisy_cells(X, low, high, n_cont, eps_q, rng) if eps_q else None
    if setting.thresholds == "q" and not finite:
        weights = noisy_cells(X, low, high, n_cont, np.inf, rng)
    eps_n = TOTAL_SHARE * eps if setting.denom in ("bound", "cmax", "mass") and finite else 0.0
    n_hat = len(X) + (rng.laplace(0.0, 1.0 / eps_n) if eps_n else 0.0)
    eps_t = (eps - eps_q - eps_n) / setting.trees
    share = 0.0 if setting.denom in ("bound", "mass") else setting.share
    eps_g, eps_h = (1 - share) * eps_t, share * eps_t
    g_sens, kappa = (1.0, 0.25) if m == 1 else (2.0, 0.5)
    h_sens = {"count": 1.0, "cmax": 1.0, "hess": 0.25 if m == 1 else 1.0}.get(setting.denom, 0.0)
    n_leaves = 2**setting.depth
    scores = np.zeros((len(X), m))
    model = []
    for _ in range(setting.trees):
        feats, thr = draw_splits(setting, low, high, n_cont, weights, rng)
        leaf = leaves(X, feats, thr, setting.depth)
        p = probabilities(scores)
        G = leaf_sums(leaf, p - target, n_leaves)
        if finite:
            G += rng.laplace(0.0, g_sens / eps_g, G.shape)
        if setting.denom == "bound":
            H = np.full((n_leaves, 1), kappa * max(n_hat, 1.0) / n_leaves)
        elif setting.denom == "mass":
            mass = leaf_mass(feats, thr, low, high, weights, setting.depth)
            H = kappa * max(n_hat, 1.0) * np.maximum(mass, 0.25 / n_leaves)[:, None]
        else:
            counted = setting.denom in ("count", "cmax")
            stat = np.ones((len(X), 1)) if counted else p * (1 - p)
            H = leaf_sums(leaf, stat, n_leaves)
            if finite:
                H += rng.laplace(0.0, h_sens / eps_h, H.shape)
            if setting.denom == "cmax":  # the noisy count, floored at the mean leaf size
                H = np.maximum(H, max(n_hat, 1.0) / n_leaves)
            H = np.clip(H, 0.0, None) * (kappa if counted else 1.0)
        value = -setting.lr * G / (H + setting.lam)
        scores += value[leaf]
        model.append((feats, thr, value))
    return model


def predict(model, X, depth, k) -> np.ndarray:
    """Class index per row from the summed leaf values."""
    scores = sum(value[leaves(X, feats, thr, depth)] for feats, thr, value in model)
    if k == 2:
        return (scores[:, 0] > 0).astype(int)
    return np.argmax(scores, axis=1)


def booster_accuracy(setting, X, y, k, bounds, eps, train, test, noise) -> float:
    """The booster (or its twin at ``eps`` = inf) fitted on ``train``, scored on ``test``."""
    low, high, n_cont = bounds
    rng = np.random.default_rng(noise)
    model = fit(setting, X[train], y[train], k, low, high, n_cont, eps, rng)
    return 100 * float(np.mean(predict(model, X[test], setting.depth, k) == y[test]))


def main_dpboost(data, eps, train, test, noise) -> float:
    """Main's DPBoostClassifier at ``eps`` (replayable noise)."""
    model = DPBoostClassifier(epsilon=eps, schema=data.schema, noise_seed=noise)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(data.features.iloc[train], data.labels()[train])
    return 100 * float(np.mean(model.predict(data.features.iloc[test]) == data.labels()[test]))


def hist_gb(X, y, seed, train, test) -> float:
    """HistGradientBoosting's accuracy; without early stopping where a class is too rare
    for its stratified validation split (nursery's class of 2 records)."""
    try:
        hgb = HistGradientBoostingClassifier(random_state=seed).fit(X[train], y[train])
    except ValueError:
        hgb = HistGradientBoostingClassifier(random_state=seed, early_stopping=False)
        hgb.fit(X[train], y[train])
    return 100 * float(np.mean(hgb.predict(X[test]) == y[test]))


def run_fold(args, data, settings, seed, fold, train, test) -> dict:
    """One fold's row: HistGB, main's DPBoost, each setting and (optionally) its twin."""
    X, low, high, n_cont = public_matrix(data)
    y, k = data.y, data.n_classes
    row = {"dataset": data.name, "seed": seed, "fold": fold}
    noise = 1000 * seed + fold
    if args.hgb:
        row["HistGB"] = hist_gb(X, y, seed, train, test)
    if args.main:
        row["DPBoost"] = main_dpboost(data, args.epsilon, train, test, noise)
    for text in settings:
        s = Setting.parse(text)
        bounds = (low, high, n_cont)
        row[text] = booster_accuracy(s, X, y, k, bounds, args.epsilon, train, test, noise)
        if args.twins:
            row[f"{text} twin"] = booster_accuracy(s, X, y, k, bounds, np.inf, train, test, noise)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--settings", nargs="+", default=["uni:T100:d6"])
    parser.add_argument("--twins", action="store_true", help="also each setting noise-free")
    parser.add_argument("--main", action="store_true", help="also main's DPBoost")
    parser.add_argument("--hgb", action="store_true", help="also HistGradientBoosting")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--only-folds", nargs="+", type=int, default=None)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    args = parser.parse_args(argv)
    rows = []
    for name in args.datasets:
        group = group_of(name)
        folder = VALIDATION_DIR if group == "validation" else args.datasets_dir
        data = load_dataset(name, folder, group=group)
        for seed in args.seeds:
            splits = StratifiedKFold(args.folds, shuffle=True, random_state=seed)
            for fold, (train, test) in enumerate(splits.split(data.y, data.y)):
                if args.only_folds is None or fold in args.only_folds:
                    rows.append(run_fold(args, data, args.settings, seed, fold, train, test))
                    print(rows[-1], flush=True)
    table = pd.DataFrame(rows).groupby(["dataset", "seed"]).mean().drop(columns="fold")
    print(table.round(1).T.to_string())


if __name__ == "__main__":
    main()
