"""Paired comparison of the default forest's size below ε = 1 on small stand-ins (issue 28).

For each stand-in (``bench/bench_standins.py`` syntax: ``magic_gamma:570``, ``car:perm``, …)
and run r the stand-in is drawn with seed r and split into ``StratifiedKFold(5, shuffle,
r)``; on each fold every law (tree count, depth, the count it reads or the leaf release
below ε = 1, patched in-process into the estimator) fits with the same structure seed and
the same noise seed, so the laws differ by their settings only; diffprivlib's DecisionTree
and RandomForest (the bar of issue 28) fit once per fold with fresh noise. Replayable
noise: NOT private, a benchmark only.

Prints, per stand-in and law, accuracy and binary AUC (means over runs × folds), the mean
gap to the fold's majority class, and in how many runs (5-fold means) the forest is at
least the best diffprivlib model less 0.5 points; writes one row per (run, fold, method).

    python bench/bench_small_size.py magic_gamma:570 votes car:perm --epsilon 0.1 \\
        --runs 8 --laws main t1 c2 --out /tmp/size.csv --datasets-dir ../shared/datasets
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, load_dataset
from bench.utility.methods import build
from dpviz.models.forest import estimator, sizing
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import MAX_DEPTH, records_depth

PEER_METHODS = ("diffprivlib_dt", "diffprivlib_rf")
_MAIN_DEPTH = sizing.forest_depth

# A law: "main" (sizing.py as it stands) or "+"-joined changes of it: ``t<k>`` at least k
# trees (SMALL_MIN_TREES), ``r<m>`` m signal records a tree (SMALL_RECORDS_PER_TREE),
# ``c<x>`` leaves of x signal records (depth records_depth(signal records a tree / x);
# x a decimal such as 0.5),
# ``f<d>`` a depth of at least d, ``s<x>`` a record-count share x of ε
# (estimator.DEPTH_COUNT_SHARE), ``decl`` the true training size declared (NOT a private
# fit: it measures what the noisy count costs), ``z<x>`` below ε = 1 the size read from
# the noisy count less x of its noise's standard deviations (√2/ε_count).
# ``oracle`` the size reads the true training size while the noisy count is still drawn
# and its ε spent (NOT private: it separates the count's noise from its ε).
# ``half`` with ``z``: the size reads at least half the noisy count. ``merged`` (NOT a
# private fit, a what-if): declared_n = the true size plus the noise of a sum of k class
# counts at (ε/4 + 5% of ε), what a count read from a class prior released before the
# trees (and taking the count's share) would give; no separate count is spent.
# ``g125`` below ε = 1 the signal scale s rounded down to 1, 2 or 5 times a power of ten
# instead of a power of ten (sizing.signal_scale: s = 0.5 at ε = 0.7, not 0.1).
# ``pf`` leaves released by permute-and-flip (one label a leaf, mechanism="permute_flip"),
# as diffprivlib's trees release theirs.
MAIN = dict(
    t=3,
    r=50,
    c=None,
    f=0,
    s=0.05,
    decl=False,
    z=0.0,
    oracle=False,
    half=False,
    merged=False,
    pf=False,
    g125=False,
)
_TRUE_N = [0]
_MAIN_SIGNAL = sizing.signal_records
_MAIN_SUGGEST = sizing.suggest_trees
_MAIN_SCALE = sizing.signal_scale


def _rung_scale(epsilon):
    """sizing.signal_scale on the 1-2-5 grid: the largest of 1, 2, 5 × 10^k ≤ ε, 1 from
    ε = 1 up."""
    if epsilon is None or float(epsilon) >= 1.0:
        return 1.0
    decade = 10.0 ** math.floor(math.log10(float(epsilon)) + 1e-9)
    return max(m * decade for m in (1, 2, 5) if m * decade <= float(epsilon) * (1 + 1e-9))


def parse_law(law: str) -> dict:
    """The settings of ``law`` (see above)."""
    spec = dict(MAIN)
    for part in law.split("+"):
        if part == "main":
            continue
        if part in ("decl", "oracle", "half", "merged", "pf", "g125"):
            spec[part] = True
        elif part[0] in "trcfsz" and part[1:]:
            kind = int if part[0] in "trf" else float
            spec[part[0]] = kind(part[1:])
        else:
            raise ValueError(f"unknown law part {part!r}")
    return spec


def set_law(law: str) -> dict:
    """Patch the estimator's sizing to ``law``; returns its settings."""
    spec = parse_law(law)
    sizing.SMALL_MIN_TREES, sizing.SMALL_RECORDS_PER_TREE = spec["t"], spec["r"]
    estimator.DEPTH_COUNT_SHARE = spec["s"]
    estimator.signal_records, estimator.suggest_trees = _MAIN_SIGNAL, _MAIN_SUGGEST
    sizing.signal_scale = _rung_scale if spec["g125"] else _MAIN_SCALE
    if spec["oracle"]:
        estimator.signal_records = lambda n, eps: _MAIN_SIGNAL(_TRUE_N[0], eps)
        estimator.suggest_trees = lambda n, split="disjoint", eps=None: _MAIN_SUGGEST(
            _TRUE_N[0], split, eps
        )
    elif spec["z"]:

        def low(n, epsilon):
            if n is None or sizing.signal_scale(epsilon) >= 1:
                return n
            sd = 2**0.5 / (spec["s"] * float(epsilon))
            return max(1, int(n - spec["z"] * sd), n // 2 if spec["half"] else 1)

        estimator.signal_records = lambda n, eps: _MAIN_SIGNAL(low(n, eps), eps)
        estimator.suggest_trees = lambda n, split="disjoint", eps=None: _MAIN_SUGGEST(
            low(n, eps), split, eps
        )
    leaf, floor = spec["c"], spec["f"]
    if leaf is None and not floor:
        estimator.forest_depth = _MAIN_DEPTH
        return spec

    def depth(rule, n_continuous, n_discrete, *, n_records, branching, n_trees, epsilon):
        if rule == "records" and n_records is not None and sizing.signal_scale(epsilon) < 1:
            per_tree = max(1, int(n_records) // max(1, n_trees or 1))
            d = records_depth(max(1, int(per_tree / (leaf or 1.0))), branching, MAX_DEPTH)
            return max(d, min(floor, MAX_DEPTH))
        return _MAIN_DEPTH(
            rule,
            n_continuous,
            n_discrete,
            n_records=n_records,
            branching=branching,
            n_trees=n_trees,
            epsilon=epsilon,
        )

    estimator.forest_depth = depth
    return spec


def _auc(y_true: np.ndarray, proba: np.ndarray) -> float:
    if proba.shape[1] != 2 or len(np.unique(y_true)) < 2:
        return np.nan
    return float(roc_auc_score(y_true == 1, proba[:, 1]))


def run(spec: str, epsilon: float, runs: int, laws: list[str], folder: Path) -> list[dict]:
    """One row per (run, fold, method) on stand-in ``spec``."""
    rows = []
    for r in range(runs):
        name, frame = standin(spec, r, folder)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the benchmark declares the schema public
            data = load_dataset(name, frame=frame)
        X, labels = data.features, data.labels()
        index = {c: i for i, c in enumerate(data.schema.classes)}
        folds = StratifiedKFold(5, shuffle=True, random_state=r).split(X, data.y)
        for f, (train, test) in enumerate(folds):
            majority = np.bincount(data.y[train]).argmax()
            base = dict(spec=spec, run=r, fold=f, majority=np.mean(data.y[test] == majority))
            for method in PEER_METHODS:
                fitted = build(method, epsilon, data, train, None)
                acc = np.mean(fitted.predict(test) == data.y[test])
                auc = _auc(data.y[test], fitted.proba(test))
                rows.append(dict(base, method=method, acc=acc, auc=auc, trees=0, depth=0))
            seed = 1000 * r + f
            for law in laws:
                settings = set_law(law)
                model = get_algorithm("fletcher_islam").make(
                    epsilon, random_state=seed, schema=data.schema, noise_seed=7 + seed
                )
                _TRUE_N[0] = len(train)
                if settings["decl"]:
                    model.set_params(declared_n=len(train))
                if settings["pf"]:
                    model.set_params(mechanism="permute_flip")
                if settings["merged"]:
                    q = np.exp(-0.3 * epsilon)
                    rng = np.random.default_rng(7 + seed)
                    k = data.n_classes
                    noise = (rng.geometric(1 - q, k) - rng.geometric(1 - q, k)).sum()
                    model.set_params(declared_n=max(1, int(len(train) + noise)))
                model.fit(X.iloc[train], labels[train])
                pred = np.array([index[str(c)] for c in model.predict(X.iloc[test])])
                order = [index[str(c)] for c in model.classes_]
                proba = np.zeros((len(test), data.n_classes))
                proba[:, order] = model.predict_proba(X.iloc[test])
                rows.append(
                    dict(
                        base,
                        method=law,
                        acc=float(np.mean(pred == data.y[test])),
                        auc=_auc(data.y[test], proba),
                        trees=model.n_estimators_,
                        depth=model.depth_,
                    )
                )
    set_law("main")
    return rows


def summary(rows: pd.DataFrame, laws: list[str]) -> pd.DataFrame:
    """Per stand-in and law: accuracy, AUC, gap to the majority, wins over the best
    diffprivlib model (run means, within 0.5 points), size."""
    per_run = rows.groupby(["spec", "method", "run"])[["acc", "auc", "majority"]].mean()
    per_run = per_run.reset_index()
    peers = per_run[per_run.method.isin(PEER_METHODS)].groupby(["spec", "run"]).acc.max()
    out = []
    for (spec, method), group in per_run.groupby(["spec", "method"], sort=False):
        best = peers.loc[spec].reindex(group.run).to_numpy()
        sizes = rows[(rows.spec == spec) & (rows.method == method)]
        out.append(
            dict(
                spec=spec,
                method=method,
                acc=100 * group.acc.mean(),
                auc=100 * group.auc.mean(),
                gap=100 * (group.acc - group.majority).mean(),
                below=int(((group.acc - group.majority) < -0.005).sum()),
                wins=int((group.acc.to_numpy() >= best - 0.005).sum()),
                runs=len(group),
                size=f"{sizes.trees.mean():.1f}x{sizes.depth.mean():.1f}",
            )
        )
    return pd.DataFrame(out).round(2)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("standins", nargs="+")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--laws", nargs="+", default=["main", "t1"])
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # inferred schemas: declared public for a benchmark
    rows: list[dict] = []
    for spec in args.standins:
        new = run(spec, args.epsilon, args.runs, args.laws, args.datasets_dir)
        rows += new
        pd.DataFrame(rows).to_csv(args.out, index=False)
        print(summary(pd.DataFrame(new), args.laws).to_string(), flush=True)
    table = summary(pd.DataFrame(rows), args.laws)
    print("| " + " | ".join(table.columns) + " |")
    print("|---" * len(table.columns) + "|")
    for row in table.itertuples(index=False):
        print("| " + " | ".join(str(v) for v in row) + " |")


if __name__ == "__main__":
    main()
