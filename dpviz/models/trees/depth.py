"""Depth rules for random decision trees (SPEC §2)."""

from __future__ import annotations

import math

DEPTH_RULES = ("records", "theorem2", "half", "full", "jpw")
# The rules that read the (private) record count: a declared one, or a noisy one.
COUNTED_RULES = ("jpw", "records")
# No forest in dpviz is deeper. A binary tree of depth 40 has 2^40 ≈ 10^12 leaves: over
# ten thousand times the rows the largest file dpviz reads (200 MB) can hold, so no data
# can fill a deeper tree; the extra levels only cost time. A rule that asks for more is
# capped here (and the CLI says so); a fixed depth above it is refused.
MAX_DEPTH = 40
# Features the depth rules accept (the widest data dpviz could ever read is far below).
MAX_FEATURES = 1_000_000


def theorem2_depth(n_continuous: int, n_discrete: int) -> int:
    """Fletcher & Islam 2017, Theorem 2 as used for their Table 4.

    With s continuous features, t is the smallest t >= 0 with
    s * ((s - 1) / s) ** t < s / 2; the depth is t + 1 + floor(r / 2).
    """
    s, r = n_continuous, n_discrete
    if s == 0:
        return max(1, r // 2)
    # t is about ln 2 / ln(s / (s − 1)); the exact rational test 2·(s − 1)^t < s^t then
    # settles the neighbours, so no rounding decides a row and wide data never loops.
    x = 0.0 if s == 1 else math.log(2) / -math.log1p(-1 / s)
    if s > 100_000:
        # Integers that wide would be too large to compare; x is not near a whole number
        # there (its fraction moves by ~1/(2s) per s), so the smallest t > x is exact.
        return math.floor(x) + 2 + r // 2
    guess = max(0, math.floor(x) - 1)
    t = guess
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


def records_depth(records_per_tree: int, branching: list[int], cap: int) -> int:
    """⌊log_b(records per tree)⌋ with b the mean branching, between 1 and ``cap``.

    A tree that deep has about as many leaves as records, so a leaf's noisy counts hold
    a record or more rather than noise alone; more depth splits the evidence thinner
    than the noise (measured: on the six binary benchmark sets at ε = 1 it ranks as well
    as the best fixed depth per dataset, 86 mean AUC against 80 with ``theorem2``).
    ``records_per_tree`` is itself private; callers say where it comes from."""
    b = sum(branching) / len(branching)
    if records_per_tree < 1:
        raise ValueError("the records depth rule needs at least one record per tree")
    depth = math.floor(math.log(records_per_tree) / math.log(b)) if b > 1 else cap
    return max(1, min(cap, depth))


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
    n_trees: int | None = None,
) -> int:
    """Depth given by ``rule``: one of DEPTH_RULES or a positive integer. ``n_trees``:
    the trees that share the records disjointly (None: every tree reads all of them).

    A rule's depth is capped at :data:`MAX_DEPTH` (:func:`depth_cap_note` says so); a
    fixed depth above it is refused."""
    depth = uncapped_depth(
        rule, n_continuous, n_discrete, n_records=n_records, branching=branching, n_trees=n_trees
    )
    return min(depth, MAX_DEPTH)


def depth_cap_note(rule: str | int, n_continuous: int, n_discrete: int, **kwargs) -> str | None:
    """The sentence that says a rule's depth was capped at :data:`MAX_DEPTH`, or None."""
    depth = uncapped_depth(rule, n_continuous, n_discrete, **kwargs)
    if depth <= MAX_DEPTH:
        return None
    return (
        f"the {rule} depth rule gives depth {depth} for {n_continuous} continuous and "
        f"{n_discrete} discrete features; dpviz caps it at {MAX_DEPTH}: a tree that deep has "
        f"2^{MAX_DEPTH} leaves, more than any data dpviz reads can fill"
    )


def uncapped_depth(
    rule: str | int,
    n_continuous: int,
    n_discrete: int,
    *,
    n_records: int | None = None,
    branching: list[int] | None = None,
    n_trees: int | None = None,
) -> int:
    """Depth given by ``rule`` before the :data:`MAX_DEPTH` cap."""
    m = n_continuous + n_discrete
    if m < 1:
        raise ValueError("a tree needs at least one feature")
    if n_continuous < 0 or n_discrete < 0 or m > MAX_FEATURES:
        raise ValueError(
            f"feature counts must be from 0 to {MAX_FEATURES:,} in all, got "
            f"{n_continuous} continuous and {n_discrete} discrete"
        )
    if isinstance(rule, bool):
        raise ValueError("depth must be a rule name or a positive integer")
    if isinstance(rule, int | float) or (isinstance(rule, str) and rule.strip().isdigit()):
        try:
            depth = int(rule)
        except (ValueError, OverflowError):
            raise ValueError(f"a fixed depth must be a positive integer, got {rule!r}") from None
        if depth != rule and str(depth) != str(rule).strip() or depth < 1:
            raise ValueError(f"a fixed depth must be a positive integer, got {rule!r}")
        if depth > MAX_DEPTH:
            raise ValueError(
                f"a fixed depth must be at most {MAX_DEPTH}, got {depth}: a tree that deep has "
                f"2^{MAX_DEPTH} leaves, more than any data can fill; lower --depth"
            )
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
    if rule == "records":
        if n_records is None or branching is None:
            raise ValueError("the records depth rule needs the record count and the branching")
        per_tree = max(1, n_records // max(1, n_trees or 1))
        return records_depth(per_tree, branching, theorem2_depth(n_continuous, n_discrete))
    raise ValueError(
        f"unknown depth rule {rule!r}; use one of {', '.join(DEPTH_RULES)} or a positive integer"
    )


# Work limits for one command on a shared 2-core server (calibrated under load: adult,
# 45k rows × 14 features, 100 shared trees of depth 9, 5 folds routed 2·10^8
# (record, tree, level) steps in ~3 s, ~15 ns each; each continuous feature adds the
# copy of a node's sub-domain, ~3 ns per feature).
MAX_WORK_SECONDS = 3600.0
MAX_REPEATS = 100


def forest_work_seconds(
    n_records: int,
    n_continuous: int,
    n_trees: int,
    depth: int,
    *,
    data_split: str = "disjoint",
    folds: int = 1,
    repeats: int = 1,
) -> float:
    """Rough seconds of routing a cross-validated forest costs, from public sizes.

    Each fold fits on (folds − 1)/folds of the records (every tree sees them all when
    ``data_split`` is "shared", one tree each when "disjoint") and predicts the rest
    through every tree; every (record, tree) pair walks ``depth`` levels.
    """
    train = n_records * (folds - 1) / max(folds, 1) if folds > 1 else n_records
    fit_pairs = train * (n_trees if data_split == "shared" else 1)
    predict_pairs = n_records * n_trees
    steps = repeats * (max(folds, 1) * fit_pairs + predict_pairs) * depth
    return steps * (15 + 3 * n_continuous) * 1e-9


def check_work(seconds: float, knobs: str) -> None:
    """Refuse work estimated above :data:`MAX_WORK_SECONDS`, naming the knobs to turn."""
    if seconds > MAX_WORK_SECONDS:
        raise ValueError(
            f"this would take about {seconds / 3600:,.1f} hours on a 2-core server (the limit "
            f"is {MAX_WORK_SECONDS / 3600:g} h); lower {knobs}"
        )
