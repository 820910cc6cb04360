"""DPEA's Metropolis sampler over subtrees of three or more layers (the paper's Algorithm 3).

Privacy role: it reads the data (each proposal's acceptance compares subtree
scores), and its chain's stationary law is the exponential mechanism, but a chain of
finite length only approximates that law: a step sampled here carries NO proven ε, and
the greedy tree's ledger books it as "approximate" (unbounded ε). Every draw comes from
the fit's :class:`~dpviz.privacy.noise.SecureGenerator` (``Rng``).

Also the padded layout of a subtree (:func:`_layout`), shared with the exact sampler
and the expansion of the chosen subtrees into the tree.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.greedy.score import leaf_score
from dpviz.models.trees.draws import Rng

MAX_MCMC_CELLS = 20_000_000  # frontier nodes × padded subtree positions


# What draws the data-dependent randomness: a SecureGenerator when fitting; the samplers
# also take a seeded numpy Generator (tests of their law only: replayable).
def _layout(width: int, layers: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded positions of the internal nodes of a (layers+1)-layer subtree.

    Every node gets ``width`` = the widest feature's child slots; level l holds
    width**l positions, numbered level after level, and a position's ``path`` (its
    index within its level) spells its child values in base ``width``. A padded
    feature array holds per position a feature, -1 (a leaf: no feature left) or -2
    (no such node). Returns (offsets of the levels, level and path per position)."""
    sizes = width ** np.arange(layers, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    level = np.repeat(np.arange(layers), sizes)
    return offsets, level, np.arange(offsets[-1]) - offsets[level]


def mcmc_subtrees(
    record_node: np.ndarray,
    codes: np.ndarray,
    y: np.ndarray,
    used: np.ndarray,
    n_values: np.ndarray,
    k: int,
    layers: int,
    scale: float,
    n_steps: int,
    rng: Rng,
    beta: float = 0.0,
) -> tuple[np.ndarray, int, int]:
    """Metropolis chains (DPEA's Algorithm 3), one per frontier node, run side by side.

    The target is the exponential mechanism over the node's (layers+1)-layer subtrees,
    P(s) ∝ exp(``scale`` · score(s)) with scale = ε'/(2Δ) — score the max operator plus
    ``beta`` · Gini, Δ = 1 + 2β (:mod:`~dpviz.models.greedy.score`) — the candidate space
    of :func:`enumerate_subtrees`. A chain starts from a random subtree; a proposal
    picks one internal node uniformly and gives it a uniformly drawn other allowed
    feature g in place of f; below it, f and g swap wherever they occur, so each path
    stays valid and the move is its own inverse. When f and g have the same number of
    values (e.g. continuous features, all cut into ``n_bins``) that proposal is
    symmetric and the acceptance is min(1, exp(scale·Δscore)). Otherwise, at the node
    and wherever f and g swapped, children vanish or appear (drawn uniformly, top
    down), and the acceptance carries the Hastings factor of the internal-node counts
    and of those draws, so the stationary law is still exactly the mechanism.

    Unlike the paper, which also stops once a buffer of recent scores varies little,
    every chain runs exactly ``n_steps`` proposals (a stopping rule read from the
    scores would depend on the data). The output after ``n_steps`` proposals is only
    approximately the mechanism's law: NOT proven DP ("approximate").

    Scores are recomputed only for the records below the changed node, from each
    record's leaf slot (its path to the subtree's bottom), in numpy.

    Returns
    -------
    feat : ndarray of shape (n_nodes, n_positions)
        The padded subtrees (see :func:`_layout`).
    proposed, accepted : int
        Proposals made (chains with an alternative) and accepted.
    """
    n_chains, m = used.shape
    width = int(n_values.max())
    offsets, level, path = _layout(width, layers)
    n_pos, span = int(offsets[-1]), width**layers
    if n_chains * max(n_pos, m) > MAX_MCMC_CELLS:
        raise ValueError(
            f"the MCMC over {layers}-layer subtrees of {n_chains:,} nodes needs too much "
            "memory; lower steps, n_bins or max_depth"
        )
    free = m - used.sum(axis=1)
    # ancestor[j, q]: the path of position q's ancestor on level j (-1 below q's level)
    depth_up = level[None, :] - np.arange(layers + 1)[:, None]
    ancestor = np.where(depth_up >= 0, path[None, :] // width ** np.maximum(depth_up, 0), -1)
    feat = np.full((n_chains, n_pos), -2, dtype=np.int64)
    n_internal = _settle(
        feat, np.ones(feat.shape, dtype=bool), used, free, n_values, offsets, rng
    )[2]
    key = record_node * span + _leaf_slots(feat, record_node, codes, offsets, width)
    rows = np.arange(n_chains)
    proposed = accepted = 0
    for _ in range(n_steps):
        node = _uniform_true(feat >= 0, rng)
        lv, pth = level[node], path[node]
        old = feat[rows, node]
        allowed = ~used
        for j in range(layers - 1):
            above = lv > j
            anc = feat[rows, offsets[j] + ancestor[j, node]]
            allowed[rows[above], anc[above]] = False
        allowed[rows, old] = False
        new = _uniform_true(allowed, rng)
        live = np.flatnonzero(new >= 0)
        if not len(live):
            continue
        n_live = len(live)
        lv, pth, old, new = lv[live], pth[live], old[live], new[live]
        cand = feat[live]
        cand[np.arange(n_live), node[live]] = new
        desc = (ancestor[lv] == pth[:, None]) & (level[None, :] > lv[:, None])
        cand = np.where(
            desc & (cand == old[:, None]),
            new[:, None],
            np.where(desc & (cand == new[:, None]), old[:, None], cand),
        )
        log_ratio = np.zeros(n_live)
        n_after = n_internal[live]
        if (n_values[old] != n_values[new]).any():
            # Widths changed (at the node and wherever f, g swapped): children vanish
            # or appear. Hastings factor: node counts and the draws of either side.
            log_new, log_removed, n_new, n_removed = _settle(
                cand, desc, used[live], free[live], n_values, offsets, rng
            )
            n_after = n_after - n_removed + n_new
            log_ratio += np.log(n_internal[live]) - np.log(n_after) + log_removed - log_new
        # Records below the changed node: a contiguous range of leaf-slot keys.
        reach = width ** (layers - lv)
        low = np.zeros(n_chains, dtype=np.int64)
        high = np.zeros(n_chains, dtype=np.int64)
        low[live] = live * span + pth * reach
        high[live] = low[live] + reach
        idx = np.flatnonzero((key >= low[record_node]) & (key < high[record_node]))
        which = np.zeros(n_chains, dtype=np.int64)
        which[live] = np.arange(n_live)
        owner = which[record_node[idx]]
        new_slots = _leaf_slots(cand, owner, codes[idx], offsets, width)
        old_slots = key[idx] - record_node[idx] * span
        change = _score_change(owner, old_slots, new_slots, y[idx], n_live, k, span, beta)
        log_ratio += scale * change
        take = rng.random(n_live) < np.exp(np.minimum(log_ratio, 0.0))
        feat[live[take]] = cand[take]
        n_internal[live[take]] = n_after[take]
        moved = take[owner]
        key[idx[moved]] = record_node[idx[moved]] * span + new_slots[moved]
        proposed += n_live
        accepted += int(take.sum())
    return np.where(feat < -1, -1, feat), proposed, accepted


def _settle(feat, region, used, free, n_values, offsets, rng) -> tuple[np.ndarray, ...]:
    """Make the positions in ``region`` consistent, top down, in place: a position
    exists iff it is the root or its parent splits on a feature with that many values.
    Positions that stop existing are removed (-2); new ones get a uniformly drawn
    allowed feature (-1 where none is left). Returns per row the log-probabilities of
    drawing the new and the removed internal nodes that way, and their numbers."""
    n_rows = len(feat)
    width = int(n_values.max())
    log_new, log_removed = np.zeros(n_rows), np.zeros(n_rows)
    n_new, n_removed = np.zeros(n_rows, dtype=np.int64), np.zeros(n_rows, dtype=np.int64)
    for lv in range(len(offsets) - 1):
        block = feat[:, offsets[lv] : offsets[lv + 1]]  # a view: edits reach feat
        inside = region[:, offsets[lv] : offsets[lv + 1]]
        if lv:
            local = np.arange(width**lv)
            parent = feat[:, offsets[lv - 1] + local // width]
            should = (parent >= 0) & (local % width < n_values[np.maximum(parent, 0)])
        else:
            should = np.ones(block.shape, dtype=bool)
        log_options = np.log(np.maximum(free - lv, 1))
        removed = inside & ~should & (block >= 0)
        log_removed -= log_options * removed.sum(axis=1)
        n_removed += removed.sum(axis=1)
        block[inside & ~should] = -2
        rows, cols = np.nonzero(inside & should & (block == -2))
        if not len(rows):
            continue
        allowed = ~used[rows]
        for j in range(lv):
            anc = feat[rows, offsets[j] + cols // width ** (lv - j)]
            allowed[np.arange(len(rows)), anc] = False
        drawn = _uniform_true(allowed, rng)
        block[rows, cols] = drawn
        log_new -= np.bincount(rows[drawn >= 0], minlength=n_rows) * log_options
        n_new += np.bincount(rows[drawn >= 0], minlength=n_rows)
    return log_new, log_removed, n_new, n_removed


def _leaf_slots(feat, owner, codes, offsets, width) -> np.ndarray:
    """Each record's leaf slot at the bottom of its owner's padded subtree (a record
    stopped early by a leaf takes the slot of that leaf's first descendant)."""
    slot = np.zeros(len(owner), dtype=np.int64)
    rows = np.arange(len(owner))
    for lv in range(len(offsets) - 1):
        f = feat[owner, offsets[lv] + slot]
        value = codes[rows, np.maximum(f, 0)]
        slot = slot * width + np.where(f >= 0, value, 0)
    return slot


def _score_change(owner, old_slot, new_slot, y, n_owners, k, span, beta=0.0) -> np.ndarray:
    """Per owner, the score (max operator plus ``beta`` · Gini) of these records grouped
    by ``new_slot`` minus grouped by ``old_slot``."""
    key = np.concatenate([owner * span + old_slot, (owner + n_owners) * span + new_slot])
    labels = np.tile(y, 2)
    if 2 * n_owners * span * k <= 8 * len(key) + 1024:  # few slots: count them directly
        counts = np.bincount(key * k + labels, minlength=2 * n_owners * span * k)
        counts = counts.reshape(2 * n_owners * span, k)
        if beta:
            best = leaf_score(counts, beta)
        else:
            best = counts[:, 0]
            for c in range(1, k):  # max over the few classes: cheaper than a reduction
                best = np.maximum(best, counts[:, c])
        per = best.reshape(2 * n_owners, span).astype(np.float64) @ np.ones(span)
        return per[n_owners:] - per[:n_owners]
    groups, inverse = np.unique(key, return_inverse=True)
    counts = np.bincount(inverse * k + labels, minlength=len(groups) * k)
    best = leaf_score(counts.reshape(-1, k), beta)
    sign = np.where(groups < n_owners * span, -1.0, 1.0)
    per = np.bincount(groups // span, weights=sign * best, minlength=2 * n_owners)
    return per[:n_owners] + per[n_owners:]


def _uniform_true(mask: np.ndarray, rng: Rng) -> np.ndarray:
    """Per row, the column of a uniformly drawn True entry (-1 for a row with none)."""
    count = mask.sum(axis=1)
    r = np.floor(rng.random(len(mask)) * count).astype(np.int64)
    pick = np.argmax(np.cumsum(mask, axis=1) > r[:, None], axis=1)
    return np.where(count > 0, pick, -1)
