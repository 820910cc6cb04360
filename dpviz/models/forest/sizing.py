"""Model sizes that fit the data: a tree count from a record count.

With disjoint records each tree of a forest sees 1/τ of the data, so on a few hundred
rows 100 trees leave about 3 records per tree and the noise decides every leaf. The
suggestion keeps at least :data:`RECORDS_PER_TREE` records per tree. A released forest
reads a record count the data owner declares public (``declared_n``) or a noisy count
booked in its ledger (``n_estimators="auto"``), never the true number of rows; the
released tree count then tells the world the data's size only within a factor of about 2
of that count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from dpviz.models.trees.depth import MAX_DEPTH, records_depth, resolve_depth

# Measured with 5-fold CV at ε = 1 (forest, permute-and-flip, theorem-2 depth): 10 trees
# instead of 100 lift votes (348 training rows) from AUC 69 to 81 and tic-tac-toe (766)
# from 57 to 68, while magic (15,216) loses 4 AUC points at 10 trees and holds at 100.
RECORDS_PER_TREE = 150
TREE_STEPS = (10, 25, 50, 100)
# Below ε = 1 a leaf's counts carry about ε·(records) of signal over their noise (the noise
# scale is 1/ε): the trees are sized for ``n·s`` records, s = ε rounded down to a power of
# ten (see :func:`signal_scale`), with these steps as well, at least SMALL_MIN_TREES trees
# and SMALL_RECORDS_PER_TREE of those records per tree. Chosen on the 11 shared sets at
# ε = 0.1 (seed 0, bench/README "Small ε"): one tree per 150 left all-discrete sets
# (tic-tac-toe, car) 2-6 points below the majority, a leaf's noise never averaged out; at
# least 3 shallower trees of 50 kept nursery and votes' gains (+4.5 / +4.6 points over the
# best diffprivlib model) and brought car and tic-tac-toe back to within 1.3 / 2.7.
SMALL_TREE_STEPS = (1, 2, 3, 5)
SMALL_RECORDS_PER_TREE = 50
SMALL_MIN_TREES = 3
# ... and at most this many: below ε = 1 a forest's score is the MEAN of its trees' shrunk
# leaf evidence, so many shallow trees are no more confident than one of them, and on large
# data (adult: 3,617 signal records, 50 trees of depth 2 with its 8-valued features) every
# record got the majority class. Five trees of 720 signal records reach depth 3 there.
# Chosen on the 11 shared sets at ε = 0.1 (seed 0, two runs; bench/README "Small ε, fewer
# trees"): against the best diffprivlib model adult −0.8 → +2.6 / +1.8, magic −5.2 →
# −1.2 / +0.1, pendigits +0.7 → +2.4 / +4.2, nursery +8.6 → +3.3 / +2.3 (5 trees of depth
# 4 instead of 10 of depth 3); at most 3 trees, or one tree, lost more on the small sets.
# Then 5 → 10 (h-forest10; signal records ≥ 500 only: adult, bank, MAGIC, mushroom,
# nursery, pendigits at ε = 0.1) once the evidence scale follows the tree count
# (signal.SIGNAL_TREES), which gives back the confidence the halved leaves lose: paired,
# 8 × 5 folds at ε = 0.1, mean binary AUC +0.8 on the four binary sets, nursery +9.9
# accuracy points, pendigits −1.4, MAGIC −0.6 (bench/README "at most 10 trees").
SMALL_MAX_TREES = 10


@dataclass(frozen=True)
class TreeSuggestion:
    """A tree count and the sentence that explains it."""

    n_estimators: int
    reason: str


def signal_scale(epsilon: float | None) -> float:
    """s = min(1, ε rounded down to a power of ten): the share of the records a forest's
    structure is sized for (:func:`signal_records`). 1 from ε = 1 up (and for None, no ε).

    A leaf's noisy count has noise of scale 1/ε, so below ε = 1 a leaf needs about 1/ε
    records to say as much as one record says at ε = 1, where the ``records`` depth rule and
    the tree count were measured. Rounding to a power of ten keeps the structure one per
    decade of ε, as the split tables' ε is (an ε sweep grows one structure per rung, see
    :func:`dpviz.evaluation.sweep.split_rungs`), and keeps the released tree count and
    depth from telling ε more closely than the user set it. Public: ε only."""
    if epsilon is None or float(epsilon) >= 1.0:
        return 1.0
    return min(1.0, 10.0 ** math.floor(math.log10(float(epsilon)) + 1e-9))


def signal_records(n_records: int, epsilon: float | None) -> int:
    """⌊n·s⌋ (at least 1 when n is), s = :func:`signal_scale`: the records a forest's
    structure is sized for. ``n_records`` is declared public or a booked noisy count."""
    n = int(n_records)
    if n <= 0:
        return n
    return max(1, int(n * signal_scale(epsilon)))


def suggest_trees(
    n_records: int, data_split: str = "disjoint", epsilon: float | None = None
) -> TreeSuggestion:
    """The largest of 10, 25, 50, 100 trees that keeps ``RECORDS_PER_TREE`` records per
    tree (at least 10 trees), for a declared record count; below ε = 1 the largest of 3,
    5 and 10 that keeps :data:`SMALL_RECORDS_PER_TREE` of the n·s records of
    :func:`signal_records` per tree (at least 3, at most :data:`SMALL_MAX_TREES`).

    Parameters
    ----------
    n_records : int
        The number of training records, as declared public by the data owner (or a
        booked noisy count).
    data_split : {"disjoint", "shared"}
        With shared records every tree reads all of them: the paper's 100 trees stay.
    epsilon : float or None
        The forest's ε (public); None sizes as at ε ≥ 1.

    Returns
    -------
    TreeSuggestion
    """
    n = int(n_records)
    if n < 0:
        raise ValueError(f"the record count must be 0 or more, got {n_records!r}")
    if data_split == "shared":
        return TreeSuggestion(100, "every tree reads all records (shared): the paper's 100")
    scale = signal_scale(epsilon)
    if scale < 1.0:
        return _small_epsilon_trees(n, scale)
    fitting = [t for t in TREE_STEPS if n // t >= RECORDS_PER_TREE]
    trees = fitting[-1] if fitting else TREE_STEPS[0]
    per_tree = n // trees
    if trees == TREE_STEPS[-1]:
        why = f"{n:,} records leave {per_tree:,} per tree at the paper's 100 trees"
    else:
        why = (
            f"{n:,} records: {trees} trees keep {per_tree:,} per tree (at least "
            f"{RECORDS_PER_TREE} where the data allows; with 100 trees each would see "
            f"{n // 100:,})"
        )
    return TreeSuggestion(trees, why)


def _small_epsilon_trees(n: int, scale: float) -> TreeSuggestion:
    """Below ε = 1: the largest step keeping SMALL_RECORDS_PER_TREE of the n·s signal
    records per tree, at least max(SMALL_MIN_TREES, 10·s) and at most SMALL_MAX_TREES
    trees."""
    signal = max(1, int(n * scale)) if n > 0 else 0
    steps = tuple(t for t in SMALL_TREE_STEPS + TREE_STEPS if t <= SMALL_MAX_TREES)
    least = min(SMALL_MAX_TREES, max(SMALL_MIN_TREES, int(round(TREE_STEPS[0] * scale))))
    fitting = [t for t in steps if t >= least and signal // t >= SMALL_RECORDS_PER_TREE]
    trees = fitting[-1] if fitting else min(t for t in steps if t >= least)
    why = (
        f"{n:,} records at ε below 1 carry about as much signal per leaf as {signal:,} at "
        f"ε = 1 (noise of scale 1/ε): {trees} tree(s) keep {signal // trees:,} of those per "
        f"tree (at least {SMALL_RECORDS_PER_TREE} where the data allows)"
    )
    return TreeSuggestion(trees, why)


def forest_depth(
    rule: str | int,
    n_continuous: int,
    n_discrete: int,
    *,
    n_records: int | None,
    branching: list[int],
    n_trees: int | None,
    epsilon: float | None,
) -> int:
    """A forest's depth: :func:`~dpviz.models.trees.depth.resolve_depth`, except that below
    ε = 1 the ``records`` rule, sized for the n·s signal records (``n_records``, see
    :func:`signal_records`), is capped at :data:`~dpviz.models.trees.depth.MAX_DEPTH`
    only, not at Theorem 2's depth.

    Why: below ε = 1 a forest has 3 to 10 trees (:func:`suggest_trees`), so the structure's
    resolution comes from each tree's depth, not from averaging many trees. On data with
    few continuous features Theorem 2's cap binds long before the records rule does
    (4 features: depth 4, 16 leaves a tree), and a path can only re-split the same few
    features more finely below it. Chosen on the 11 shared sets at ε = 0.1, where the cap
    bound on wall_robot only (4 continuous features; 5 trees of depth 4 → 6): accuracy
    58.7 → 63.7 over 18 five-fold runs (bench/README "Small ε: no Theorem-2 cap"). From
    ε = 1 up the rule is unchanged. ``n_trees``: the trees that share the records
    disjointly (None: every tree reads all of them). Public: ε and a record count that
    is declared or booked."""
    if rule == "records" and n_records is not None and signal_scale(epsilon) < 1.0:
        per_tree = max(1, int(n_records) // max(1, n_trees or 1))
        return records_depth(per_tree, branching, MAX_DEPTH)
    return resolve_depth(
        rule, n_continuous, n_discrete, n_records=n_records, branching=branching, n_trees=n_trees
    )


# Private-RDT's trees all read every record and split ε between them, so a leaf's noise
# grows with the tree count while averaging τ trees only cuts it by √τ: below ε = 1 fewer
# trees say more. Chosen on the 11 shared sets (5 folds, seeds 0 and 1, bench/README
# "Private-RDT below ε = 1"): 3 trees instead of the paper's 10 at ε = 0.1 lifted mean
# accuracy 53.1 → 58.1 and AUC 61.4 → 65.3 with no shared set below the majority; one
# tree put tic-tac-toe and votes 0.9-1.5 points below it.
SHARED_TREES = 10
SHARED_SMALL_TREES = 3


def shared_tree_count(epsilon: float) -> int:
    """Private-RDT's ``"auto"`` tree count: the paper's :data:`SHARED_TREES` from ε = 1
    up, :data:`SHARED_SMALL_TREES` below. Public: ε only (no record count is read)."""
    return SHARED_TREES if signal_scale(epsilon) >= 1.0 else SHARED_SMALL_TREES


# Records per tree at large ε (``data_split="auto"`` with ``"auto"`` trees; opt-in).
# Disjoint trees each read 1/τ of the records; at large ε a leaf's noise is far below its
# sampling noise, so a tree of few records is what limits the forest, and trees that all
# read many records answer better. From ε = SHARED_FROM, ⌈ε / SHARED_TREE_EPSILON⌉ trees
# (rounded up to even) come in two halves of the records: each record trains the trees
# of its half at 2ε/τ each and is out of the bag of the others, which the floor's check
# reads (floor.halved). Chosen on the 11 shared sets and their stand-ins (paired,
# replayable noise; bench/README "Issue 28: trees that share the records from ε = 5" and
# "two halves"): at ε = 10, 20 trees that all read every record against the disjoint
# forest gave tic-tac-toe +5.7, pendigits +6.0, mushroom +3.2 accuracy points and every
# set but bank marketing (−0.1) a gain; in two halves +0.3 more on average, every
# label-permuted stand-in at its majority; 10 shared trees at ε = 10 (leaf ε 0.85 each)
# put a weak-signal stand-in 0.8 points below its majority; at ε = 3, 10 shared trees
# lost car 4.5 and wall_robot 1.8 points.
SHARED_FROM = 5.0
SHARED_TREE_EPSILON = 0.5
# At most this many (the paper's count): from ε = 50 a leaf's noise is far below a record,
# and ⌈ε/0.5⌉ grew 2,000,000 trees for a reference at ε = 10⁶.
SHARED_TREES_MAX = 100
# The data_split values a forest accepts: "auto" resolves to one of the other two (and
# where it resolves to "shared", the trees come in two halves: floor.halved).
SPLIT_CHOICES = ("auto", "disjoint", "shared")


def resolve_split(data_split: str, n_estimators, epsilon: float) -> str:
    """The records per tree a forest's ``data_split`` means at ``epsilon``: ``"auto"`` is
    ``"shared"`` with ``"auto"`` trees from ε = :data:`SHARED_FROM` up, else
    ``"disjoint"``; the other values are themselves. Public: parameters and ε only."""
    if data_split != "auto":
        return data_split
    if n_estimators == "auto" and float(epsilon) >= SHARED_FROM:
        return "shared"
    return "disjoint"


def auto_shared_trees(epsilon: float) -> int:
    """The tree count of an ``"auto"`` forest whose trees come in two halves of the
    records: ⌈ε / :data:`SHARED_TREE_EPSILON`⌉ rounded up to even (10 at ε = 5, 20 at
    ε = 10, 12 at ε = 5.5), at most :data:`SHARED_TREES_MAX`, in exact decimal arithmetic
    so that ε = 5 gives 10, not 11. Public: ε only."""
    ratio = Fraction(repr(float(epsilon))) / Fraction(repr(SHARED_TREE_EPSILON))
    return min(SHARED_TREES_MAX, 2 * max(1, math.ceil(ratio / 2)))
