"""A sweep's points: the leaves of one structure released at every (mechanism, ε), their
votes counted together, and each point's NOT-private leaf diagnostics; algorithms that
read the data to grow are refitted per ε instead.

Privacy role: each point is a release of the fold model (fresh noise unless a noise seed
makes it replayable, NOT private); the diagnostics beside it read TRUE leaf counts and
are NOT private, for the data owner.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpviz.compiled import kernels
from dpviz.evaluation.metrics import score
from dpviz.evaluation.sweep_grid import BUDGET_COLUMNS, DIAGNOSTICS, SERIES_DP, SweepGrid
from dpviz.models.forest.estimator import DPRandomForestClassifier, RoutedRecords
from dpviz.models.forest.voting import record_free_votes
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.registry import get_algorithm
from dpviz.models.trees import passes
from dpviz.models.trees.votes import matrix_value_sums, packed_label_votes
from dpviz.privacy.mechanisms import ABSTAIN, gap, get_mechanism, is_majority


def release_votes(
    model: DPRandomForestClassifier,
    routed: RoutedRecords,
    points: Sequence[tuple[str, float]],
    describe: Callable[[DPRandomForestClassifier], dict] | None = None,
    *,
    fitted: bool = False,
):
    """Release ``model``'s leaves at each (mechanism, ε) of ``points`` in turn and yield
    ``((mechanism, ε), votes, seconds, describe(model))`` per point, in order.

    Each release replaces the previous one unpublished (:meth:`release_instead`: the
    ledger books only the last, and no noise serves two points); ``describe`` reads the
    model while it holds that point's release. A label point's votes on ``routed`` are
    its leaf outputs counted over the routing plus a term that does not depend on the
    record (the class prior: the votes of a record no tree reaches); a count point's
    are a per-record function of its leaves' evidence summed over the routing
    (:func:`dpviz.models.forest.estimator.count_votes`). So the outputs of
    every point are kept (bytes per leaf) and, when the routing is a compact matrix and
    the compiled kernels are loaded, counted together: label releases in one pass over
    the matrix (:func:`dpviz.models.trees.votes.packed_label_votes`), noisy counts a few
    points a pass; otherwise each point's votes are counted at its release.
    ``seconds``: the point's release plus its share of the counting passes.

    ``fitted``: the model's release is its fit's, which nothing has read yet; when the
    first point has its (mechanism, ε), that release is the point's (a release drawn
    afresh like any other, and the one a plain fit at that point gives) instead of
    being discarded for another draw of the same law (under a noise seed, the same
    draw: replayable noise is named by mechanism and ε)."""
    k = len(model.classes_)
    local = routed.local
    batched = (
        local is not None
        and local.flags.c_contiguous
        and kernels.get(wait=local.size >= passes.COMPILED_FROM_VISITS) is not None
    )
    kept = []  # (point, votes or None, labels, noisy counts, record-free term, seconds, info)
    for index, (mech, eps) in enumerate(points):
        start = time.perf_counter()
        if not (fitted and index == 0 and _holds(model, mech, eps)):
            model.release_instead(eps, mech)
        info = describe(model) if describe is not None else None
        if batched:
            outputs = model._outputs_of(routed)
            noisy = None
            if outputs.noisy_counts is not None:
                # A count forest sums its leaves' evidence and scores the sums; ``base``
                # then holds how to score them.
                noisy, base = model.count_scoring(outputs.noisy_counts)
            else:  # the record-free term: the prior's votes
                base = record_free_votes(model)
            item = (None, outputs.labels, noisy, base)
        else:
            item = (model.votes(routed), None, None, None)
        kept.append(((mech, eps), *item, time.perf_counter() - start, info))
    if not batched:
        for point, votes, _, _, _, seconds, info in kept:
            yield point, votes, seconds, info
        return
    start = time.perf_counter()
    # counted[i](base): point i's votes plus the record-free term ``base``.
    counted: dict[int, Callable[[np.ndarray], np.ndarray]] = {}
    labelled = [i for i, item in enumerate(kept) if item[3] is None]
    votes_of = packed_label_votes(local, routed.offsets, [kept[i][2] for i in labelled], k)
    for r, i in enumerate(labelled):
        if votes_of is not None:
            counted[i] = lambda base, r=r: votes_of(r, base)
        else:  # more classes than a word's fields hold: the model's own count per point
            counted[i] = lambda base, i=i: (
                DPRandomForestClassifier._label_votes(routed, kept[i][2], k) + base
            )
    noisy = [i for i, item in enumerate(kept) if item[3] is not None]
    # Noisy counts: each leaf's evidence (k columns and a tree count), summed in tree
    # order as model.votes does, a few points per pass so that the output stays within
    # a few (records, k + 1) arrays (2k + 1 with the squared evidence of trees that all
    # read every record); then scored per point (``base``: count_votes).
    width = kept[noisy[0]][3].shape[1] if noisy else k + 1
    group = max(1, 4 // max(1, width // 2))
    for g in range(0, len(noisy), group):
        part = noisy[g : g + group]
        values = np.concatenate([kept[i][3] for i in part], axis=1)
        sums = matrix_value_sums(local, values, routed.offsets)
        for j, i in enumerate(part):
            counted[i] = lambda score, sums=sums, j=j: score(sums[:, j * width : (j + 1) * width])
    share = (time.perf_counter() - start) / len(kept)
    for i, (point, _, _, _, base, seconds, info) in enumerate(kept):
        begin = time.perf_counter()
        votes = counted[i](base)
        yield point, votes, seconds + share + time.perf_counter() - begin, info


def _holds(model: DPRandomForestClassifier, mechanism: str, epsilon: float) -> bool:
    """Whether ``model``'s only release is at (``mechanism``, ``epsilon``)."""
    return (
        len(getattr(model, "_releases", ())) == 1
        and getattr(model, "n_batches_", 1) == 1
        and model.mechanism == mechanism
        and float(model.epsilon) == float(epsilon)
    )


def _point_facts(
    model: DPRandomForestClassifier, private: dict, patterns: LeafPatterns | None = None
) -> tuple[dict, np.ndarray]:
    """A sweep point's leaf diagnostics and the ε its model spent before the leaves
    (:data:`BUDGET_COLUMNS`), and the class prior and threshold its ``objective``
    decides by (each point releases its own noisy prior and leaf counts); notes in
    ``private`` whether its mechanism's release is proven (read from the ledger once per
    mechanism)."""
    if model.mechanism not in private:
        private[model.mechanism] = bool(model.ledger_.private)
    budget = (
        model.depth_count_epsilon_,
        model.split_epsilon_,
        model.prior_epsilon_,
        model.check_epsilon_,
        model.threshold_epsilon_,
    )
    facts = {
        **_leaf_diagnostics(model, patterns),
        **dict(zip(BUDGET_COLUMNS, map(float, budget))),
        "floored": floored(model),
    }
    return facts, (model.decision_prior_, model.decision_threshold_)


def _refit_rows(
    base, train, test, schema, grid: SweepGrid, name, random_state, noise_seed, epsilons=None
):
    """Algorithms whose structure reads the data are fitted again for every ε (of
    ``epsilons``, by default the grid's): each fit is a fresh model."""
    rows = []
    for eps in grid.epsilons if epsilons is None else epsilons:
        model = get_algorithm(name).make(
            eps, random_state=random_state, noise_seed=noise_seed, **grid.presets.get(name, {})
        )
        start = time.perf_counter()
        model.fit_encoded(train, schema)
        seconds = time.perf_counter() - start
        diag = _refit_diagnostics(model)
        rows.append(
            {
                **base,
                "series": SERIES_DP,
                "algorithm": name,
                "mechanism": "laplace_counts",
                "epsilon": float(eps),
                "n_estimators": getattr(model, "n_estimators", 1),
                "depth_rule": str(model.max_depth),
                # "auto" (greedy trees) and DPBoost's depth (grown at large ε) are
                # resolved when fitting: the depth used.
                "depth": getattr(model, "depth_", getattr(model, "max_depth_", model.max_depth)),
                "data_split": "all",
                "records_split": "all",
                **score(
                    test.y,
                    model._proba(test),
                    train.y,
                    len(schema.classes),
                    model._decision(test),
                ),
                **{key: diag[key] for key in DIAGNOSTICS if key in diag},
                "floored": floored(model),
                "fit_seconds": seconds,
                "private": bool(model.ledger_.private),
            }
        )
    return rows


def floored(model) -> float:
    """1 when the model's floor test did not trust its trees (it answers the fall-back),
    0 when they passed, NaN where no test ran (:meth:`floor_outcome`). Public: the test
    reads only the release."""
    outcome = model.floor_outcome()
    return math.nan if outcome is None else float(not outcome.trusted)


def _refit_diagnostics(model) -> dict:
    """``model.diagnostics_``, faster for a greedy tree: it lists every leaf of the full
    tree (32,768 at depth 5, nearly all empty) and its ``diagnostics_`` computes the exact
    Laplace flip probability of each, ~5 s per fit, then averages over the non-empty
    ones. An empty leaf cannot flip, so computing the non-empty leaves only gives the
    same numbers (a test checks this) about 40 times faster; leaves with equal counts
    share one computation."""
    if not isinstance(model, DPDecisionTreeClassifier):
        return model.diagnostics_
    counts = model.leaf_counts_
    nonempty = counts.sum(axis=1) > 0
    out = {
        "empty_leaf_pct": 100.0 * float(1 - nonempty.mean()),
        "mean_smooth_sensitivity": float("nan"),
    }
    if not nonempty.any():
        return {**out, "flipped_leaf_pct": 0.0, "expected_flip_pct": 0.0}
    counts = counts[nonempty]
    flipped = ~is_majority(counts)[np.arange(len(counts)), model.leaf_labels_[nonempty]]
    # Each leaf at its own ε (a leaf closed early by the stopping rule has more than ε').
    flip = model.flip_probability(counts, model.leaf_epsilon_[nonempty])
    return {
        **out,
        "flipped_leaf_pct": 100.0 * float(flipped.mean()),
        "expected_flip_pct": 100.0 * float(flip.mean()),
    }


def distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(counts, axis=0, return_inverse=True)`` (inverse flat): the same arrays.
    Rows of small non-negative integers are read as one mixed-radix integer each, whose
    order is the rows' lexicographic order, and a 1-d ``unique`` sorts those (0.5 ms
    for 15,000 leaves × 2 classes, against ~5 ms for ``axis=0``'s sort of row records)."""
    counts = np.asarray(counts)
    if counts.ndim == 2 and counts.size and counts.dtype.kind in "iu":
        base = int(counts.max()) + 1
        if int(counts.min()) >= 0 and base ** counts.shape[1] < 2**62:
            key = counts[:, 0].astype(np.int64)
            for j in range(1, counts.shape[1]):
                key = key * base + counts[:, j]
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            return counts[first], inverse.reshape(-1)
    distinct, inverse = np.unique(counts, axis=0, return_inverse=True)
    return distinct, inverse.reshape(-1)


@dataclass(frozen=True)
class LeafPatterns:
    """A structure's TRUE leaf counts (NOT private) grouped into their distinct rows:
    a forest of 15,000 counted leaves holds a few hundred patterns, and every per-leaf
    diagnostic is a function of the row alone. So each sweep point computes it once per
    pattern and reads it back per leaf (``values[inverse]``): the same per-leaf array,
    hence the same mean to the last bit, at a few percent of the cost."""

    counts: np.ndarray
    distinct: np.ndarray
    inverse: np.ndarray
    gap: np.ndarray
    # Flat (leaves × k) mask of each leaf's majority classes (is_majority of its counts).
    majority: np.ndarray

    @classmethod
    def of(cls, counts: np.ndarray) -> LeafPatterns:
        distinct, inverse = distinct_rows(counts)
        majority = is_majority(distinct)[inverse].reshape(-1)
        return cls(counts, distinct, inverse, gap(distinct), majority)

    def flipped(self, labels: np.ndarray) -> np.ndarray:
        """:func:`~dpviz.models.forest.estimator.flipped_labels` of these counts and the
        released ``labels``, the same booleans from the majorities found once per
        structure instead of once per point."""
        labels = np.asarray(labels)
        voted = labels != ABSTAIN
        at = np.arange(len(labels)) * self.distinct.shape[1] + np.where(voted, labels, 0)
        return voted & ~self.majority[at]


def _leaf_diagnostics(
    model: DPRandomForestClassifier, patterns: LeafPatterns | None = None
) -> dict:
    """The per-point leaf diagnostics of :data:`DIAGNOSTICS` (NOT private): the share of
    leaves whose released label is not a true majority, the expected share (the
    mechanism's exact flip probability at the point's ε) and the mean smooth
    sensitivity. ``patterns``: the model's counts grouped (:class:`LeafPatterns`),
    built here when not given or not of these counts."""
    counts = model.leaf_counts_
    if len(counts) == 0:
        return {
            "flipped_leaf_pct": 0.0,
            "expected_flip_pct": 0.0,
            "mean_smooth_sensitivity": math.nan,
        }
    if patterns is None or patterns.counts is not counts:
        patterns = LeafPatterns.of(counts)
    eps = model.tree_epsilon_
    flipped = patterns.flipped(model.leaf_labels_)
    expected = get_mechanism(model.mechanism).flip_probability(patterns.distinct, eps)
    sensitivity = np.exp(-patterns.gap * eps)
    return {
        "flipped_leaf_pct": 100.0 * float(flipped.mean()),
        "expected_flip_pct": 100.0 * float(expected[patterns.inverse].mean()),
        "mean_smooth_sensitivity": float(sensitivity[patterns.inverse].mean()),
    }
