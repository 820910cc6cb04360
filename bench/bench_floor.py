"""The floor on data with little or no signal (issue 28): accuracy minus the majority.

Six standard-normal features clipped to the public domain [−5, 5], 30% positives whose
log-odds move by ``signal`` per unit of the first feature; 3 data seeds × 5 stratified
folds, fresh secret noise in every fit (registry defaults). Prints, per data kind and ε,
the mean gap to the training fold's majority class in points and each seed's 5-fold mean.

    python bench/bench_floor.py [algorithm] [ε,ε,…]     # default: fletcher_islam 1,3,10,1e6
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpviz.models.registry import get_algorithm
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    tuple(Feature(f"f{j}", "continuous", low=-5.0, high=5.0) for j in range(6)),
)
# (signal, records): none, weak, none on more records, clear.
KINDS = ((0.0, 800), (0.3, 800), (0.0, 3000), (1.0, 800))


def records(n: int, signal: float, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` records, 30% "yes", log-odds + ``signal``·f0."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 6))
    logit = np.log(0.3 / 0.7) + signal * x[:, 0]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame(np.clip(x, -5, 5), columns=[f"f{j}" for j in range(6)]), y


def gaps(algorithm: str, epsilon: float, signal: float, n: int) -> list[float]:
    """Per data seed, the 5-fold mean of accuracy − majority rate, in points."""
    out = []
    for seed in range(3):
        frame, y = records(n, signal, seed)
        folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(frame, y)
        fold_gaps = []
        for fold, (train, test) in enumerate(folds):
            model = get_algorithm(algorithm).make(
                epsilon, random_state=1000 * seed + fold, schema=SCHEMA
            )
            model.fit(frame.iloc[train], y[train])
            majority = pd.Series(y[train]).value_counts().idxmax()
            hit = np.mean(model.predict(frame.iloc[test]) == y[test])
            fold_gaps.append(100 * (hit - np.mean(y[test] == majority)))
        out.append(float(np.mean(fold_gaps)))
    return out


def main() -> None:
    algorithm = sys.argv[1] if len(sys.argv) > 1 else "fletcher_islam"
    epsilons = [float(e) for e in (sys.argv[2] if len(sys.argv) > 2 else "1,3,10,1e6").split(",")]
    for signal, n in KINDS:
        for epsilon in epsilons:
            runs = gaps(algorithm, epsilon, signal, n)
            print(
                f"{algorithm} signal={signal} n={n} ε={epsilon:g}: mean gap "
                f"{np.mean(runs):+.2f} (seeds {', '.join(f'{g:+.2f}' for g in runs)})",
                flush=True,
            )


if __name__ == "__main__":
    main()
