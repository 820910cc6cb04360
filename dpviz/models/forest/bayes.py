"""A naive Bayes score from the forest's released split tables, blended into its votes.

Privacy role: post-processing only, no ε. The default forest releases, when the data has
a continuous feature, a noisy class × cell table of every feature
(:func:`~dpviz.models.forest.splits.noisy_tables`, booked in the ledger as the split
release); this module reads those released counts, public ε and the schema, and the
records being predicted. Nothing here reads a training record.

A record's naive Bayes log-likelihood of class c is Σ_j log P̃(cell_j | c), P̃ each
feature's released counts of class c clipped at 0 plus :data:`TABLE_PSEUDO_SCALES` noise
scales (d/ε_split) of pseudo-counts per cell, so that cells of noise alone say about
nothing. The forest's two-class votes are then exp(score + w·NB) with w =
:func:`table_weight`: the tables know the features' margins well at ε = 1 (ε_split = 0.2
of it), and less, relative to the leaves, the larger ε (they stay at 0.2).
"""

from __future__ import annotations

import numpy as np

from dpviz.models.forest.splits import SPLIT_BINS, TableLayout

# Pseudo-counts per cell, in noise scales d/ε_split of one noisy count.
TABLE_PSEUDO_SCALES = 1.0


def table_weight(epsilon: float, split_epsilon: float, n_classes: int) -> float:
    """w, the naive Bayes term's weight in a two-class forest's log-odds:
    ε_split/(ε − ε_split), the tables' ε over the rest of the budget; 0 without tables,
    and for more than two classes. Public: ε, ε_split and k."""
    epsilon, split_epsilon = float(epsilon), float(split_epsilon)
    if n_classes != 2 or not split_epsilon > 0 or not epsilon > split_epsilon:
        return 0.0
    return split_epsilon / (epsilon - split_epsilon)


def log_likelihoods(noisy: np.ndarray, layout: TableLayout, split_epsilon: float) -> np.ndarray:
    """(k, cells) log P̃(cell | c), each feature's block normalised per class, from the
    released ``noisy`` tables: counts clipped at 0 plus :data:`TABLE_PSEUDO_SCALES`·d/ε_split
    per cell. Post-processing of the split release."""
    pseudo = TABLE_PSEUDO_SCALES * layout.n_features / float(split_epsilon)
    kept = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None) + pseudo
    stops = np.cumsum(layout.widths)
    out = np.empty_like(kept)
    for start, stop in zip(stops - layout.widths, stops):
        block = kept[:, start:stop]
        out[:, start:stop] = np.log(block) - np.log(block.sum(axis=1, keepdims=True))
    return out


def table_scores(
    loglik: np.ndarray,
    continuous: np.ndarray,
    discrete: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    layout: TableLayout,
) -> np.ndarray:
    """(records, k) naive Bayes log-likelihoods Σ_j log P̃(cell_j | c) of encoded records,
    each feature's cell found as :func:`~dpviz.models.forest.splits.class_tables` counts a
    training record; an unknown discrete value adds nothing. One feature at a time: a
    large upload's (records, d) cells would not fit in memory. Post-processing of the
    split release, public domains and the records predicted."""
    scale = SPLIT_BINS / np.where(highs > lows, highs - lows, 1.0)
    starts = np.cumsum(layout.widths) - layout.widths
    # Column -1 of the padded table is 0: an unknown cell says nothing.
    padded = np.hstack([loglik, np.zeros((loglik.shape[0], 1))]).T
    out = np.zeros((len(continuous), loglik.shape[0]))
    for j in range(layout.n_continuous):
        z = np.nan_to_num((continuous[:, j] - lows[j]) * scale[j], nan=0.0)
        out += padded[starts[j] + np.clip(z, 0, SPLIT_BINS - 1).astype(np.int64)]
    for i, values in enumerate(layout.n_values):
        code = discrete[:, i]
        j = layout.n_continuous + i
        out += padded[np.where((code >= 0) & (code < values), starts[j] + code, -1)]
    return out


def blend_votes(votes: np.ndarray, scores: np.ndarray, weight: float) -> np.ndarray:
    """Votes exp(log votes + w·NB), rescaled so that each record's largest is 1, where
    votes ∝ exp(score) (a count forest's, :func:`~.scoring.count_votes`). ``scores``
    (records, k), w = ``weight``. Post-processing."""
    with np.errstate(divide="ignore"):  # a vote of 0 stays 0
        log = np.log(votes)
    log += weight * scores
    log -= log.max(axis=1, keepdims=True)
    return np.exp(log, out=log)
