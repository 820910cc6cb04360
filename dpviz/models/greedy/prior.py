"""The class of a greedy tree without splits: report-noisy-max with exponential noise.

When the "auto" depth is 0 (few records for the ε: every cell of even one split would
drown in noise) the tree is one leaf and all it can do is answer one class for every
record. Which class is then the whole model, and a wrong one costs the gap between the
two largest classes on every record (penguins at ε = 0.1: 8 points a fold). Releasing
leaf counts and taking their argmax wastes ε there: for two classes g records apart,
discrete Laplace counts at ε swap with probability ≈ ½e^(−εg)(1 + εg/2), report-noisy-max
with exponential noise at the same ε with ½e^(−εg) — the least any ε-DP choice can reach
up to a factor 2 (a neighbour chain of g records turns the answer around). So the rest
of ε after the root histogram (:attr:`~dpviz.models.greedy.budget.Budget.pick`) buys
that choice instead.

**Privacy.** :func:`noisy_max_class` adds independent exponential noise of rate ε (scale
1/ε) to each class count and returns the argmax. Under add/remove-one neighbours one
count moves by one and the others stay: fixing every other class's noisy count, class i
wins iff its noise exceeds a threshold that moves by at most one, and the exponential
law's tail satisfies P(Z > t + 1) ≥ e^(−ε)·P(Z > t); so each outcome's probability
changes by at most a factor e^ε: ε-DP (report-noisy-max, Dwork & Roth, Claim 3.9, with
the one-sided exponential noise of Ding et al. 2021, which equals permute-and-flip).
:func:`constant_leaf` is post-processing of that class and the released root histogram.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.trees.draws import Rng


def noisy_max_class(counts: np.ndarray, epsilon: float, rng: Rng) -> int:
    """The index of the largest of ``counts`` (TRUE class counts) plus independent
    exponential noise of rate ``epsilon``: an ε-DP choice of the majority class (see
    the module docstring). For two classes g records apart the smaller wins with
    probability ½e^(−εg)."""
    u = np.asarray(rng.random(len(counts)), dtype=np.float64)
    # −log(1 − U)/ε for U in [0, 1): Exponential(rate ε), never infinite.
    noise = -np.log1p(-u) / float(epsilon)
    return int(np.argmax(np.asarray(counts, dtype=np.float64) + noise))


def constant_leaf(
    root_counts: np.ndarray, chosen: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The single leaf of a tree without splits, as :func:`~dpviz.models.greedy.leaves.
    release_leaves` returns it: its noisy counts (the root's released histogram: the
    leaf is the root), its class shares and its label ``chosen``.

    The shares are the histogram's clipped at 0 (uniform when none is positive) with
    the chosen class's share swapped with the largest, so that the chosen class is the
    strict argmax (a tie is broken towards it by 10⁻⁹). Post-processing of the released
    histogram and the released class."""
    k = len(root_counts)
    clipped = np.clip(np.asarray(root_counts, dtype=np.float64), 0.0, None)
    total = clipped.sum()
    shares = clipped / total if total > 0 else np.full(k, 1.0 / k)
    top = int(np.argmax(shares))
    shares[[top, chosen]] = shares[[chosen, top]]
    others = np.delete(shares, chosen)
    if len(others) and others.max() >= shares[chosen]:
        shares[chosen] += 1e-9
        shares /= shares.sum()
    noisy = np.asarray(root_counts, dtype=np.int64)[None, :].copy()
    return noisy, shares[None, :], np.array([chosen], dtype=np.int64)
