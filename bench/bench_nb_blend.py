"""The default forest blended with a naive Bayes score from its OWN released split tables
(issue 28): the same release scored with and without the naive Bayes term.

Each run r draws 5 stratified folds from seed r and fits the default forest once per fold
(replayable noise seed and random_state 100·r + fold: NOT private, a paired benchmark
only). The fit's noisy class × cell tables (``splits.noisy_tables``, the booked split
release) are captured as released; the naive Bayes log-likelihood ratio of a test record
is NB = Σ_features log(P̃(cell | 1) / P̃(cell | 0)), P̃ from the noisy counts clipped at 0
plus ``a`` noise scales (d/ε_split) of pseudo-counts per cell. A weight w scores the
record lf + w·NB, lf the forest's log-odds (logit of predict_proba); its class is
lf + w·NB > 0 (the forest's own decision where its floor did not trust the trees). A
negative weight stands for the rule :func:`table_weight` (ε_split/(ε − ε_split)), built
in 26c088d and reverted (not kept: bench/README "Issue 28: a naive-Bayes score"); a
build's own term is off throughout.

Prints one line per set, ε, run: AUC % and accuracy % per weight, and writes every fold's
numbers to ``--out`` (CSV) so that weight rules can be read off the grid.

    nice -n 10 python bench/bench_nb_blend.py adult bank_marketing magic_gamma \\
        --epsilon 1 --runs 0 1 --datasets-dir /work/shared/datasets --out /tmp/nb.csv
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.forest.splits as splits
import dpviz.models.forest.voting as voting
from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, VALIDATION_DIR, group_of, load_dataset
from dpviz.models.forest.estimator import DPRandomForestClassifier

WEIGHTS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.25, 0.5)


def _captured():
    """Wrap ``splits.noisy_tables`` so that the last release's noisy tables are kept."""
    kept = {}
    original = splits.noisy_tables

    def noisy_tables(tables, layout, epsilon, source):
        kept["noisy"] = original(tables, layout, epsilon, source)
        return kept["noisy"]

    splits.noisy_tables = noisy_tables
    return kept


def cells_of(data, rows, layout) -> np.ndarray:
    """(records, d) cell index of each feature within its own table block (-1: unknown)."""
    out = []
    for j, f in enumerate(data.schema.continuous):
        width = f.high - f.low if f.high > f.low else 1.0
        z = (data.continuous[rows, j] - f.low) * (splits.SPLIT_BINS / width)
        out.append(np.clip(z, 0, splits.SPLIT_BINS - 1).astype(np.int64))
    for j, values in enumerate(layout.n_values):
        code = data.discrete[rows, j]
        out.append(np.where((code >= 0) & (code < values), code, -1))
    return np.stack(out, axis=1)


def nb_ratio(
    noisy, layout, cells, split_eps: float, a: float, keep=None, shrink: bool = False
) -> np.ndarray:
    """Σ_j log P̃(cell_j | 1)/P̃(cell_j | 0) from the noisy tables (two classes), over
    the features ``keep`` marks (all by default). ``shrink``: each cell's log-ratio r is
    multiplied by its feature's positive-part James–Stein factor max(0, 1 − m/Σ r²/v) over
    the feature's m cells, v a cell's delta-method variance from the released counts
    (sampling ≈ the count, noise 2b² for scale b = d/ε_split): a feature whose ratios
    are no larger than their noise says nothing."""
    d = layout.n_features
    scale = d / split_eps
    clipped = np.clip(noisy.astype(np.float64), 0, None)
    t = clipped + a * scale
    stops = np.cumsum(layout.widths)
    out = np.zeros(len(cells))
    for j, (start, stop) in enumerate(zip(stops - layout.widths, stops)):
        block = t[:, start:stop]
        logp = np.log(block / block.sum(axis=1, keepdims=True))
        ratio = logp[1] - logp[0]
        if shrink:
            counts = clipped[:, start:stop]
            var = ((counts + 2 * scale**2) / block**2).sum(axis=0)
            stat = float(np.sum(ratio**2 / var))
            ratio = ratio * max(0.0, 1.0 - len(ratio) / stat) if stat > 0 else 0 * ratio
        known = (cells[:, j] >= 0) & (keep is None or bool(keep[j]))
        out[known] += ratio[cells[known, j]]
    return out


def table_weight(epsilon: float, split_epsilon: float, n_classes: int) -> float:
    """The rule measured (built in 26c088d as ``bayes.table_weight``, not kept):
    ε_split/(ε − ε_split), 0 without tables or for more than two classes."""
    if n_classes != 2 or not split_epsilon > 0 or not epsilon > split_epsilon:
        return 0.0
    return split_epsilon / (epsilon - split_epsilon)


def _without_library_term() -> None:
    """The library's own naive Bayes term (``voting.table_term`` of the build in 26c088d,
    absent from main) off: ``lf`` is the trees' log-odds alone, and every weight is the
    bench's."""
    if hasattr(voting, "table_term"):
        voting.table_term = lambda model: None


def _relevant(model, layout) -> np.ndarray:
    """The features whose released relevance stands above chance: split-draw weight
    above its uniform share (splits.feature_weights; post-processing)."""
    floor = (1 - splits.RELEVANCE_MIX) / layout.n_features
    return model.splits_.weights > floor + 1e-12


def _data(spec: str, seed: int, datasets_dir: Path):
    """A shared or validation set, or a stand-in (``bench_standins`` spec, drawn with
    ``seed``)."""
    if ":" in spec:
        name, frame = standin(spec, seed, datasets_dir)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_dataset(name, frame=frame)
    folder = VALIDATION_DIR if group_of(spec) == "validation" else datasets_dir
    return load_dataset(spec, folder, group=group_of(spec))


def run(name, eps, seeds, datasets_dir, a_values, weights=WEIGHTS, gates=(False,)) -> list[dict]:
    """``gates``: False (every feature), True (relevant features only) or "shrink" (every
    feature, each cell's ratio shrunk by its noise: :func:`nb_ratio`)."""
    kept = _captured()
    _without_library_term()
    rows = []
    for seed in seeds:
        data = _data(name, seed, datasets_dir)
        layout = splits.TableLayout.of(data.schema)
        folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(data.y, data.y)
        for fold, (train, test) in enumerate(folds):
            noise = 100 * seed + fold
            model = DPRandomForestClassifier(
                epsilon=eps, schema=data.schema, noise_seed=noise, random_state=noise
            )
            kept.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(data.features.iloc[train], data.labels()[train])
                p = np.clip(model.predict_proba(data.features.iloc[test])[:, 1], 1e-12, 1 - 1e-12)
                own = model.predict(data.features.iloc[test]) == data.labels()[test]
            y = data.y[test]
            lf = np.log(p) - np.log1p(-p)
            trusted = bool(getattr(model, "floor_trusted_", True))
            base = dict(
                set=name, eps=eps, seed=seed, fold=fold, split_eps=model.split_epsilon_,
                leaf_eps=model.tree_epsilon_, trees=model.n_estimators_, trusted=trusted,
                n_train=len(train), d=layout.n_features, acc_own=100 * own.mean(),
            )  # fmt: skip
            cells = cells_of(data, test, layout)
            for a, gate in itertools.product(a_values, gates):
                nb = 0.0
                if "noisy" in kept:
                    keep = _relevant(model, layout) if gate is True else None
                    nb = nb_ratio(
                        kept["noisy"],
                        layout,
                        cells,
                        model.split_epsilon_,
                        a,
                        keep,
                        shrink=gate == "shrink",
                    )
                for w in weights:
                    # w < 0: the rule (table_weight), reported as w = -1.
                    rule = table_weight(eps, model.split_epsilon_, 2)
                    score = lf + (rule if w < 0 else w) * nb
                    right = (score > 0) == (y == 1) if trusted else own
                    rows.append(
                        dict(base, a=a, gate=gate, w=w, auc=100 * roc_auc_score(y, score),
                             acc=100 * np.mean(right))
                    )  # fmt: skip
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    parser.add_argument("--runs", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--a", type=float, nargs="+", default=[3.0])
    parser.add_argument("--gate", action="store_true", help="also: relevant features only")
    parser.add_argument("--shrink", action="store_true", help="also: cells shrunk by noise")
    parser.add_argument("--weights", type=float, nargs="+", default=list(WEIGHTS))
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    for eps in args.epsilon:
        for name in args.sets:
            for seed in args.runs:
                gates = (False,) + ((True,) if args.gate else ())
                gates += ("shrink",) if args.shrink else ()
                rows = run(name, eps, [seed], args.datasets_dir, args.a, args.weights, gates)
                frame = pd.DataFrame(rows)
                header = not args.out.exists()
                frame.to_csv(args.out, mode="a", header=header, index=False)
                summary = frame.groupby(["a", "gate", "w"], sort=False)[["auc", "acc"]].mean()
                tags = {"shrink": "s", True: "g"}
                text = " ".join(
                    f"a{a:g}{tags.get(g, '')}w{w:g}={r.auc:.1f}/{r.acc:.1f}"
                    for (a, g, w), r in summary.iterrows()
                )
                print(f"{name} eps={eps:g} run={seed} {text}", flush=True)


if __name__ == "__main__":
    main()
