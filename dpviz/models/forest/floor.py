"""The forest's floor: a booked out-of-bag check of the trees against the class prior.

When the trees carry no usable signal (weak-signal data, where small leaves' sampling
noise misleads the count scoring even without privacy noise), a forest can answer below
the majority class at every ε. The check decides, from one booked release, whether the
trees beat the prior; if they do not, the forest's answers fall back on the prior's
class while its scores keep the trees' ranking.

**The check.** With disjoint trees each training record trains one tree (its public
keyed hash). Its *out-of-bag* answer is the argmax of the votes of the other trees
under the current release. Over the records of the first m trees (m from public values:
the first tree, or enough for about :data:`CHECK_RECORDS` records when a record count n̂
is declared or already released) the check counts

    W = #{records the out-of-bag answer gets right and the prior's class gets wrong}
    L = #{records the prior's class gets right and the out-of-bag answer gets wrong}

and releases both plus independent discrete Laplace noise at ε_c = :data:`CHECK_SHARE`·ε,
from ε = :data:`CHECK_FROM` (1) up for a count mechanism, from :data:`CHECK_FROM_LABELS` (2)
for a label mechanism (:func:`check_from`; below it the check is not run and costs
nothing).
The model keeps (and a file carries) the released gain G̃ = W̃ − L̃ and disagreements
D̃ = W̃ + L̃ (the same two numbers). The trees are trusted when G̃ ≥ z·√max(D̃, 0),
z = :data:`CHECK_Z`: a one-sided sign test on the records where the two answers differ,
whose sampling spread is √D. The rule before, G̃ ≥ 0, let trees without signal through
whenever their true gain was about 0 or more: in 25 of 240 folds of label-permuted
1,250-row shared sets (their true G/√D averages −0.9 with sd 0.75; the test deficit of
such trees averaged 1–3 points); G/√D ≥ 1 held in 3 of the 240. Trees that beat the
prior by g records fall back only while g is within about √D of 0, and then cost at
most those g records (tens of points on mushroom or pendigits are never at risk: their
G/√D is 50–80). z was chosen on the 11 shared sets and label-permuted and
label-diluted 1,250-row copies of four of them (bench/README, "Issue 28: the floor's
check").

Trees that share the records leave no record out of bag. With ``data_split="auto"``
from ε = 5 the trees come in two halves (:func:`halved`): a public keyed hash of each
record's features deals it to one half of the records (:func:`record_halves`), tree t
reads the records of half t mod 2 only, so every record is out of the bag of half of
the trees, whose votes are its out-of-bag answer; the check is the disjoint forest's
(the same two counts, the same bar), on every record or, with a record count, on the
records of one of ⌈n̂ / :data:`CHECK_RECORDS`⌉ hash cells. Private-RDT's leaf test
(:mod:`~dpviz.models.forest.signal`) runs beside it.

**Privacy.** ``epsilon``-DP overall: ε_c is taken from the class prior's share down to
what the record count asks of a prior, the leaves paying any rest
(:func:`~dpviz.models.forest.release.prior_epsilon_of`), so the ledger's total is what the
user asked. Given the release so far (structure, leaves,
prior: adaptive sequential composition), each record's term depends only on that record
(its own tree, or half, is a public hash of its own features, the other trees' leaves and
the prior are released) and adds 1 to at most one of W and L: adding or removing one record moves
the vector (W, L) by at most 1 in L1 norm, and exact discrete Laplace noise at ε_c on
each coordinate makes the release ε_c-DP. The choice and the fall-back scores are
post-processing: with weight w = Δ/(2(1 + Δ)) (Δ the released prior's lead of its first
class over its second) a count forest's scores are (1 − w)·π̂ + w·p̂(x) (a label
forest's prior weight grows instead, :func:`floor_prior_weight`); every class's
one-vs-rest ranking (AUC) is that of p̂, and argmax is the prior's first class for every
record (w/(1 − w) < Δ bounds any difference of p̂). A balanced objective's decision,
argmax p̂_c/π̂_c, is unchanged.

Constants chosen on the 11 shared datasets and synthetic data only (bench/README
"Issue 28").
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

# The fall-back scores, shared with the greedy trees' floor (re-exported here).
from dpviz.models.trees.floor import floor_scores, floor_weight

__all__ = [
    "CHECK_FROM",
    "CHECK_FROM_LABELS",
    "CHECK_RECORDS",
    "CHECK_SHARE",
    "CHECK_STREAM",
    "CHECK_Z",
    "CheckRecords",
    "check_applies",
    "check_counts",
    "check_epsilon",
    "check_threshold",
    "checked_trees",
    "evidence_epsilon",
    "halved",
    "halves_epsilon",
    "halves_of",
    "record_halves",
    "records_split",
    "floor_prior_weight",
    "floor_scores",
    "floor_weight",
    "out_of_bag_records",
    "release_check",
]

# Share of ε the check's release takes, from ε = CHECK_FROM up, out of the class prior's
# share down to what the record count asks of a prior, the leaves paying any rest
# (release.prior_epsilon_of): on large data the default prior's 10% becomes 5%. Without a
# check below ε = 2 the trees' cells fit the training records' chance imbalances on
# no-signal data (nursery:cls=2708/1862/811:perm −2.2 at ε = 1 in 10 of 10 runs, also with
# true majority labels). From ε = 1 it floors five label-permuted stand-ins (worst mean
# −0.42, tic_tac_toe:perm) and costs the eleven shared sets 0.21 accuracy points on average
# at ε = 1 (car −1.05, tic-tac-toe −1.25, the rest within ±0.06; binary AUC unchanged);
# paid by the leaves alone it cost 0.54 and 0.25 AUC points. At ε = 2 it gained 0.11
# points on average over the leaves paying, at ε = 10 nothing (paired, bench/README "the
# out-of-bag check from ε = 1, paid by the prior"). Below ε = 1
# the check costs votes and pendigits 4–9 points (h-hold) and is not run. A forest of
# label votes (permute-and-flip: one vote per tree) keeps ε = 2: at ε = 1 its out-of-bag
# votes are too weak a test, and the demo (SynthA, 10 trees) fell back in folds where its
# trees were worth 30 points (paired, 6 runs: 29.9 → 23.0 over the majority).
CHECK_SHARE = 0.05
CHECK_FROM = 1.0
CHECK_FROM_LABELS = 2.0
# The trees are trusted when the released gain G̃ clears CHECK_Z·√D̃ (D̃ the released
# disagreements: G's sampling spread). Chosen on the shared sets and label-permuted copies
# (bench/README "Issue 28: the floor's check"): the permuted copies' true G/√D reached
# +1.09 at most (240 folds), the real sets' smallest was +2.21 (tic-tac-toe at ε = 2;
# +2.72 at ε = 10). z = 1.5 halved the permuted copies' remaining cost but cost
# tic-tac-toe 0.7 points at ε = 2 (z = 1: 0.4) and label-diluted data with a little
# signal more (bench/README).
CHECK_Z = 1.0
# About this many records are checked when a record count is known (public or booked):
# enough that a 1-point deficit is 100 records, few enough that routing them through
# every tree costs about one prediction of 10,000 records per release.
CHECK_RECORDS = 10_000
# The noise stream of the check within a release (the prior's is 0xC1A55_0000).
CHECK_STREAM = 0xF1_0000
# The hashes of a halved forest (beside the split seed): a record's half, and the cell
# of the records its check reads on large data.
_HALF_SEED = 0x4A1F_0000
_CELL_SEED = 0xCE11_0000


def check_epsilon(epsilon: float) -> float:
    """ε_c = :data:`CHECK_SHARE`·ε in decimal arithmetic (a printed budget of 0.05 for
    ε = 1, not 0.05000000000000001). Public: ε only."""
    return _check_share_of(float(epsilon))


@functools.lru_cache(maxsize=1024)
def _check_share_of(epsilon: float) -> float:
    # Kept per ε: a sweep's point asks for it many times per release.
    return float(Fraction(repr(CHECK_SHARE)) * Fraction(repr(epsilon)))


def checked_trees(n_trees: int, n_records: int | None) -> int:
    """How many trees' records the check reads: all ``n_trees``, or with a record count
    ``n_records`` (declared or released) the fewest that hold about
    :data:`CHECK_RECORDS` records. Public: the tree count and a public or released
    count."""
    if not n_records:
        return n_trees
    return int(min(n_trees, max(1, math.ceil(n_trees * CHECK_RECORDS / float(n_records)))))


def halved(model) -> bool:
    """Whether ``model``'s trees come in two halves of the records: a forest whose
    ``data_split="auto"`` means shared (from ε = 5). Public."""
    return getattr(model, "data_split", None) == "auto" and model.data_split_ == "shared"


def records_split(model) -> str:
    """How ``model``'s trees read the records: ``"halves"`` for a halved forest, else its
    ``data_split_`` (``"disjoint"`` or ``"shared"``). What its ledger and its file state.
    Public."""
    return "halves" if halved(model) else model.data_split_


def record_halves(model, encoded) -> np.ndarray:
    """The half (0 or 1) of each record of ``encoded`` in a halved forest
    (:func:`halves_of` with the model's public split seed)."""
    return halves_of(encoded, model._split_seed)


def halves_of(encoded, split_seed: int) -> np.ndarray:
    """The half (0 or 1) of each record: a keyed hash of the record's features alone
    (public ``split_seed``), so that adding or removing a record moves no other record
    (parallel composition between the halves). Tree t reads the records of half t mod 2.
    Reads the records; nothing is released here."""
    from dpviz.models.forest.assign import hash_trees

    return hash_trees(encoded, 2, int(split_seed) ^ _HALF_SEED)


def halves_epsilon(leaf_epsilon: float, n_trees: int) -> float:
    """A halved forest's ε per tree: the leaves' ε over the trees of the larger half,
    ⌈τ/2⌉ (a record is read by the trees of its half only: sequential composition
    within a half, parallel between them). Public."""
    return float(leaf_epsilon) / ((int(n_trees) + 1) // 2)


def evidence_epsilon(tree_epsilon: float, n_trees: int, halves: bool) -> float:
    """The ε a count forest's evidence gain γ is read at
    (:func:`~dpviz.models.forest.scoring.evidence_gain`): the tree's, or for a halved
    forest the leaves' ε over every tree, as if each tree read every record at ε/τ. Its
    trees read half the records each at twice that ε, and γ at their own ε overstated
    their evidence on imbalanced data (adult at ε = 10: −1.1 accuracy points, AUC
    unchanged; bench/README "two halves"). Public."""
    if not halves:
        return float(tree_epsilon)
    n_trees = int(n_trees)
    return float(tree_epsilon) * ((n_trees + 1) // 2) / n_trees


def check_threshold(disagreements: int) -> float:
    """The released gain the trees must reach: :data:`CHECK_Z`·√max(D̃, 0), D̃ the
    released disagreements (0 when noise takes them below 0: the gain must then be
    at least 0). Public: released values."""
    return CHECK_Z * math.sqrt(max(int(disagreements), 0))


def check_counts(oob_votes: np.ndarray, y: np.ndarray, prior_class: int) -> tuple[int, int]:
    """(W, L): how many records the out-of-bag votes' argmax (ties to the lowest index,
    as predict) gets right where the prior's class ``prior_class`` is wrong, and the
    other way round. Each record adds to at most one of them. Reads the records' TRUE
    classes: released only with noise (:func:`release_check`)."""
    y = np.asarray(y)
    trees = np.argmax(oob_votes, axis=1) == y
    prior = y == prior_class
    return int(np.count_nonzero(trees & ~prior)), int(np.count_nonzero(prior & ~trees))


def release_check(counts: tuple[int, int], epsilon_c: float, generator) -> tuple[int, int, bool]:
    """(released gain G̃ = W̃ − L̃, released disagreements D̃ = W̃ + L̃, whether the trees
    are trusted): ``counts`` (W, L) plus independent exact discrete Laplace noise at
    ``epsilon_c`` from ``generator`` (a :class:`~dpviz.privacy.noise.SecureGenerator`
    of the release); trusted when G̃ ≥ :func:`check_threshold` (D̃)."""
    noise = generator.discrete_laplace(epsilon_c, 2)
    wins, losses = int(counts[0]) + int(noise[0]), int(counts[1]) + int(noise[1])
    gain, disagreements = wins - losses, wins + losses
    return gain, disagreements, gain >= check_threshold(disagreements)


def floor_prior_weight(shares, n_trees: int) -> float:
    """The fall-back for label votes (one vote per tree): the prior's weight B with
    B·Δ > ``n_trees`` (Δ its lead), so that no count of tree votes overturns the prior's
    first class while each class's votes still rank the records (without abstentions
    every record's votes sum to the same). Public: the released prior and the tree
    count."""
    ranked = np.sort(np.asarray(shares, dtype=np.float64))[::-1]
    lead = float(ranked[0] - ranked[1]) if len(ranked) > 1 else 1.0
    # Δ below 1e-4 (a near tie) is floored there: the weight stays finite in a file.
    return (n_trees + 1.0) / max(lead, 1e-4)


def check_from(mechanism: str) -> float:
    """The least ε at which a forest of ``mechanism`` runs the check: :data:`CHECK_FROM`
    for noisy counts, :data:`CHECK_FROM_LABELS` for one label per leaf. Public."""
    from dpviz.privacy.mechanisms import get_mechanism

    return CHECK_FROM if get_mechanism(mechanism).releases == "counts" else CHECK_FROM_LABELS


def check_applies(model, *, any_epsilon: bool = False) -> bool:
    """Whether a forest runs the check: ε ≥ :func:`check_from` and a private mechanism
    (``any_epsilon``: at some ε and mechanism, for the routing a fit keeps for relabels
    and a sweep's points), disjoint trees (a record's own tree is out of its out-of-bag
    votes), at least two trees and a class prior to fall back on. Public: the
    configuration and released or declared values."""
    from dpviz.privacy.mechanisms import get_mechanism

    return (
        (any_epsilon or float(model.epsilon) >= check_from(model.mechanism))
        # A relabel or a sweep's point may release with another mechanism than the fit's.
        and (any_epsilon or get_mechanism(model.mechanism).private)
        and (model.data_split_ == "disjoint" or halved(model))
        and model.n_estimators_ >= 2
        # A prior to fall back on (the mechanism is private): its share, not its ε, which
        # pays for the check (release.prior_epsilon_of).
        and (any_epsilon or float(getattr(model, "prior_share", 0.0)) > 0)
    )


class CheckRecords:
    """The floor check's records (:func:`out_of_bag_records`), routed through every tree
    but their own when a release first runs the check (:meth:`routes`).

    A fit below ε = :func:`check_from` never runs the check, so it does not pay for the
    routing (a third of a default fit's time on 30,000 rows); a relabel or a sweep's
    point from there up routes them once and keeps the result. Reads the
    training data: kept on the model, never released as such. A copy (pickle) holds the
    routing only, never the records (the model routes them first:
    :func:`~dpviz.models.forest.release.prepare_copy`)."""

    __slots__ = ("_checked", "_halves", "_own", "_routes")

    def __init__(self, checked, own: np.ndarray, halves: bool = False):
        self._checked, self._own, self._halves, self._routes = checked, own, halves, None

    def routes(self, model):
        """(routing of the checked records through every tree but their own, their TRUE
        classes), computed on the first call through ``model``'s public trees."""
        if self._routes is None:
            self._routes = _out_of_bag_routes(model, self._checked, self._own, self._halves)
            self._checked = self._own = None  # the records themselves are not kept
        return self._routes

    def __getstate__(self):
        if self._routes is None:
            raise ValueError("route the check's records before copying them (routes)")
        return self._routes

    def __setstate__(self, routes):
        self._checked = self._own = None
        self._routes = routes


def out_of_bag_records(model, encoded) -> CheckRecords | None:
    """The checked records (routed lazily: :class:`CheckRecords`), or None when the check
    does not apply (:func:`check_applies`).

    The checked records are those the public keyed hash deals to the first
    :func:`checked_trees` trees (from the declared or booked record count; without one,
    the first tree's); in a halved forest every record, or with a record count above
    :data:`CHECK_RECORDS` those a keyed hash of their features puts in one of
    ⌈n̂ / CHECK_RECORDS⌉ cells. Reads the training data: kept on the model for the check
    of each release (a relabel, a sweep's point), never released as such."""
    from dpviz.models.forest.assign import hash_trees
    from dpviz.models.forest.records import _rows

    if not check_applies(model, any_epsilon=True):
        return None
    if halved(model):
        half = record_halves(model, encoded)
        n_hat = getattr(model, "depth_n_", None)
        cells = max(1, math.ceil(float(n_hat) / CHECK_RECORDS)) if n_hat else 1
        if cells == 1:
            return CheckRecords(encoded, half, halves=True)
        rows = np.flatnonzero(hash_trees(encoded, cells, model._split_seed ^ _CELL_SEED) == 0)
        return CheckRecords(_rows(encoded, rows), half[rows], halves=True)
    n_trees = model.n_estimators_
    n_hat = getattr(model, "depth_n_", None)
    first = checked_trees(n_trees, n_hat) if n_hat else 1
    own = hash_trees(encoded, n_trees, model._split_seed)
    rows = np.flatnonzero(own < first)
    return CheckRecords(_rows(encoded, rows), own[rows])


def _out_of_bag_routes(model, checked, own: np.ndarray, halves: bool = False):
    """(the out-of-bag routing of the records ``checked``, each out of its own tree
    ``own`` or, in a halved forest, out of the trees of its half ``own``, their TRUE
    classes)."""
    from dpviz.models.forest.records import RoutedRecords

    n_trees = model.n_estimators_
    n = checked.n_records
    if not n:
        empty = np.empty(0, dtype=np.int64)
        return RoutedRecords(0, empty, empty, np.empty(0, np.uint64), empty), checked.y
    routed = model.route_records(checked)
    matrix = routed.leaf_matrix
    if matrix is not None:
        # Each record's own tree points at the silent leaf (one past the last): the
        # check's votes are then one pass over a matrix, the other trees' values added
        # in tree order as the pairs below would add them (the silent one adds nothing).
        oob = np.array(matrix, dtype=np.int32, order="C")
        if halves:  # the trees of a record's own half (t mod 2) read it
            oob[np.arange(n_trees)[:, None] % 2 == own[None, :]] = len(routed.leaf_keys)
        else:
            oob[own, np.arange(n)] = len(routed.leaf_keys)
        return (
            RoutedRecords(n, None, None, routed.leaf_keys, routed.trained, oob, silent=True),
            checked.y,
        )
    # Some pairs abstain: route tree by tree, and keep the pairs of the other trees.
    parts = [model.route_records(checked, np.array([t])) for t in range(n_trees)]
    routed = RoutedRecords.concatenate(parts)
    record, leaf = routed.pair_record, routed.pair_leaf
    sizes = np.array([len(p.pair_leaf) for p in parts])
    tree = np.repeat(np.arange(n_trees), sizes)
    # Each record's own tree (or half) leaves its out-of-bag votes.
    keep = (tree % 2 if halves else tree) != own[record]
    oob = RoutedRecords(n, record[keep], leaf[keep], routed.leaf_keys, routed.trained)
    return oob, checked.y
