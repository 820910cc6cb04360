"""The ε of a model's noisy class prior, shared by every family that releases one.

Privacy role: a function of public numbers only (ε, the user's share, and a record count
that is public or already released and booked): it sets the ε a prior's release gets and
releases nothing itself (the releases are in each family's budget and release modules).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

# The prior's ε is at least prior_share·PRIOR_FLOOR and at most PRIOR_MAX_SHARE·ε.
PRIOR_FLOOR = PRIOR_MAX_SHARE = 0.8
# ... and, when the record count n̂ is known (declared, or the depth rule's noisy count),
# that floor drops to the power of two nearest PRIOR_RECORDS/n̂ where this is smaller
# (see prior_epsilon).
PRIOR_RECORDS = 150.0


def prior_epsilon(
    epsilon: float,
    share: float,
    max_share: float = PRIOR_MAX_SHARE,
    n_records: float | None = None,
) -> float:
    """ε of the noisy class histogram: ``share`` of ε, but never less than a floor nor
    more than ``max_share`` (80%) of ε; 0 when ``share`` is 0. The floor is
    ``share``·``max_share`` (0.08 for the default share), or with a record count
    ``n_records`` (declared, or a noisy count already booked) the smaller of that and
    max(``share``·ε, the power of two nearest :data:`PRIOR_RECORDS`/n̂ on a log scale). The
    power of two keeps the prior's ε, which the ledger and reports print, from telling n̂ more
    closely than the depth rule's tree depth already does (to a factor of two).

    Small data at small ε is where a wrong prior costs most: on 348 records with a
    lead of 78, the histogram at ε = 0.08 names the wrong majority with probability
    ≈ 0.4% (at ε = 0.05: ≈ 3%), and the leaves' share of 0.1 is noise there anyway.
    A lead is a share of the records, so large data needs less: with the floor at
    about 150/n̂ the default forest at ε = 0.1 keeps 0.06 for the leaves of pendigits
    instead of 0.005 (accuracy 10.4% → 30–40%, mushroom 54.8% → 90%; README "The
    forest").
    Public: ε, the share and a count that is public or already released."""
    if share <= 0:
        return 0.0
    floor = decimal_times(share, max(epsilon, max_share))
    if n_records:
        floor = min(floor, max(decimal_times(share, epsilon), prior_floor(n_records)))
    return min(decimal_times(max_share, epsilon), floor)


def decimal_times(a: float, b: float) -> float:
    """a·b in decimal arithmetic: the shares and ε a user types are decimals, and the
    printed budget must be 0.08 for 0.1 × 0.8, not 0.08000000000000002."""
    return _decimal_product(float(a), float(b))


@functools.lru_cache(maxsize=1024)
def _decimal_product(a: float, b: float) -> float:
    # Kept per (a, b): a sweep asks for the same few budget shares at every point.
    return float(Fraction(repr(a)) * Fraction(repr(b)))


def prior_floor(n_records: float | None) -> float:
    """The ε a prior needs for the record count ``n_records``: the power of two nearest
    :data:`PRIOR_RECORDS`/n̂ on a log scale (as :func:`prior_epsilon` floors it), or ∞
    without a count (nothing known, nothing to spare). Public: a count that is public or
    already released."""
    if not n_records:
        return math.inf
    return 2.0 ** round(math.log2(PRIOR_RECORDS / float(n_records)))
