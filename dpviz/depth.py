"""Depth rules for random decision trees (SPEC §2)."""

from __future__ import annotations

import math

DEPTH_RULES = ("theorem2", "half", "full", "jpw")


def theorem2_depth(n_continuous: int, n_discrete: int) -> int:
    """Fletcher & Islam 2017, Theorem 2 as used for their Table 4.

    With s continuous features, t is the smallest t >= 0 with
    s * ((s - 1) / s) ** t < s / 2; the depth is t + 1 + floor(r / 2).
    """
    s, r = n_continuous, n_discrete
    if s == 0:
        return max(1, r // 2)
    t = 0
    # Exact rational comparison: 2 * (s - 1)**t < s**t, so no rounding decides a row.
    while 2 * (s - 1) ** t >= s**t:
        t += 1
    return t + 1 + r // 2


def jpw_depth(n_records: int, branching: list[int]) -> int:
    """Jagannathan et al. 2012: min(floor(m/2), floor(log_b n) - 1), b = mean branching.

    ``n_records`` is itself private; callers using this rule must say so.
    """
    m = len(branching)
    b = sum(branching) / m
    if n_records < 1:
        raise ValueError("the jpw depth rule needs at least one record")
    log_n = math.floor(math.log(n_records) / math.log(b)) if b > 1 else m
    return max(1, min(m // 2, log_n - 1))


def check_rule(rule: str | int) -> None:
    """Raise ValueError unless ``rule`` names a depth rule or is a positive integer."""
    resolve_depth(rule, 1, 1, n_records=2, branching=[2, 2])


def resolve_depth(
    rule: str | int,
    n_continuous: int,
    n_discrete: int,
    *,
    n_records: int | None = None,
    branching: list[int] | None = None,
) -> int:
    """Depth given by ``rule``: one of DEPTH_RULES or a positive integer."""
    m = n_continuous + n_discrete
    if m < 1:
        raise ValueError("a tree needs at least one feature")
    if isinstance(rule, bool):
        raise ValueError("depth must be a rule name or a positive integer")
    if isinstance(rule, int | float) or (isinstance(rule, str) and rule.strip().isdigit()):
        depth = int(rule)
        if depth != float(rule) or depth < 1:
            raise ValueError(f"a fixed depth must be a positive integer, got {rule!r}")
        return depth
    if rule == "theorem2":
        return theorem2_depth(n_continuous, n_discrete)
    if rule == "half":
        return max(1, m // 2)
    if rule == "full":
        return m
    if rule == "jpw":
        if n_records is None or branching is None:
            raise ValueError("the jpw depth rule needs the record count and the branching")
        return jpw_depth(n_records, branching)
    raise ValueError(
        f"unknown depth rule {rule!r}; use one of {', '.join(DEPTH_RULES)} or a positive integer"
    )
