"""The privacy ledger of a random decision forest, from its configuration alone.

Privacy role: public numbers only (mechanism, ε, τ, data split, depth rule, batches,
earlier releases): :func:`build_ledger` states what each release spent and whether the
whole is ε-DP; it reads no data.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from dpviz.models.forest.floor import halves_epsilon
from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_inferred_schema, book_noise_mode
from dpviz.privacy.mechanisms import get_mechanism

# How the trees read the records, resolved: "auto" is one of these at a given ε
# (floor.records_split).
RECORD_SPLITS = ("disjoint", "shared", "halves")


def build_ledger(
    mechanism: str,
    epsilon: float,
    n_estimators: int,
    data_split: str,
    *,
    schema_inferred: bool,
    n_batches: int = 1,
    depth_count_epsilon: float = 0.0,
    earlier_releases: list[tuple[str, float]] = (),
    replayable: bool = False,
    prior_epsilon: float = 0.0,
    split_epsilon: float = 0.0,
    check_epsilon: float = 0.0,
    threshold_epsilon: float = 0.0,
) -> PrivacyLedger:
    """The privacy ledger of a forest: one query per tree (and per batch of records
    added by ``partial_fit``) on its part of the data, a noisy record count when the
    ``jpw`` or ``records`` depth rule needs one, the split histograms of ``quantile`` split
    points, the floor's out-of-bag check (:mod:`dpviz.models.forest.floor`), and every earlier
    release of the same leaves."""
    mech = get_mechanism(mechanism)
    ledger = PrivacyLedger()
    tau = n_estimators
    leaf_epsilon = decimal_rest(
        epsilon,
        depth_count_epsilon,
        split_epsilon,
        prior_epsilon,
        check_epsilon,
        threshold_epsilon,
    )
    if data_split not in RECORD_SPLITS:
        raise ValueError(
            f"data_split must be one of {RECORD_SPLITS} (resolved), got {data_split!r}"
        )
    eps_t = leaf_epsilon
    if data_split == "shared":
        eps_t = leaf_epsilon / tau
    elif data_split == "halves":
        eps_t = halves_epsilon(leaf_epsilon, tau)
    if not mech.private:
        # A mechanism without a proof has no finite ε to record (smooth_em's exact loss
        # grows without bound with the leaf's gap; none releases the true majority).
        eps_t = float("inf")
    book_inferred_schema(ledger, schema_inferred)
    book_noise_mode(ledger, replayable)
    # The structure (record count, split tables) reads the training data, batch 1, only.
    first = "all records" if n_batches == 1 else "the records of batch 1 (the training data)"
    if depth_count_epsilon > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy record count that sizes the trees (their depth rule or their "
                "count; discrete Laplace)",
                first,
                depth_count_epsilon,
            )
        )
    if split_epsilon > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy class × value tables of every feature: where the trees split "
                "and which features they favour (discrete Laplace)",
                first,
                split_epsilon,
            )
        )
    if prior_epsilon > 0 and n_batches == 1:
        ledger.add_sequential(
            LedgerEntry(
                "noisy class histogram, the prior that noise-only votes fall back on "
                "(discrete Laplace)",
                "all records",
                prior_epsilon,
            )
        )
    elif prior_epsilon > 0:
        # Each batch adds its own class totals with fresh noise: one entry per batch.
        ledger.add_parallel(
            [
                LedgerEntry(
                    f"noisy class histogram of batch {b + 1} (added to the prior; discrete "
                    "Laplace)",
                    f"the records of batch {b + 1}",
                    prior_epsilon,
                )
                for b in range(n_batches)
            ],
            summary=(
                f"The class prior took in each of {n_batches} batches with fresh noise, "
                f"ε = {prior_epsilon:g} each"
            ),
        )
    if check_epsilon > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy out-of-bag gain of the trees over the prior's class (wins and "
                "losses against it): the floor's check, whether the forest answers the "
                "prior (discrete Laplace)",
                first,
                check_epsilon,
            )
        )
    if threshold_epsilon > 0:
        ledger.add_sequential(
            LedgerEntry(
                "noisy histogram of the checked records' out-of-bag "
                "scores: the decision threshold of the objective (per class for accuracy "
                "and balanced_accuracy, macro_f1's in all) (discrete Laplace)",
                first,
                threshold_epsilon,
            )
        )
    for number, (earlier_mech, earlier_eps) in enumerate(earlier_releases, start=1):
        earlier = get_mechanism(earlier_mech)
        ledger.add_sequential(
            LedgerEntry(
                f"earlier release {number} of the same leaves ({earlier.id}, ε = {earlier_eps:g})",
                "all records",
                earlier_eps if earlier.private else float("inf"),
                earlier.private,
            )
        )
    batch_text = [f" of batch {b + 1}" if n_batches > 1 else "" for b in range(n_batches)]
    if data_split == "disjoint":
        share = 100.0 / tau
        ledger.add_parallel(
            [
                LedgerEntry(
                    f"{mech.id} leaf outputs of tree {t + 1}{batch_text[b]}",
                    f"disjoint part {t + 1} of {tau} (~{share:.3g}% of the records)"
                    + batch_text[b],
                    eps_t,
                    mech.private,
                )
                for t in range(tau)
                for b in range(n_batches)
            ],
            summary=(
                f"Each of {tau} trees saw a disjoint ~{share:.3g}% of the records and "
                f"spent ε = {'∞ (unbounded)' if np.isinf(eps_t) else f'{eps_t:g}'} on its "
                f"leaf outputs ({mech.id})"
            ),
        )
    elif data_split == "halves":
        # Trees 2i and 2i + 1 read the two halves (and each batch its own records):
        # parallel within a pair, the pairs compose.
        for first in range(0, tau, 2):
            pair = [t for t in (first, first + 1) if t < tau]
            ledger.add_parallel(
                [
                    LedgerEntry(
                        f"{mech.id} leaf outputs of tree {t + 1}{batch_text[b]}",
                        f"half {t % 2 + 1} of the records (a keyed hash of their features)"
                        + batch_text[b],
                        eps_t,
                        mech.private,
                    )
                    for t in pair
                    for b in range(n_batches)
                ],
                summary=(
                    f"Trees {' and '.join(str(t + 1) for t in pair)} read the two halves of "
                    f"the records, ε = {eps_t:g} each"
                ),
            )
    elif n_batches == 1:
        for t in range(tau):
            ledger.add_sequential(
                LedgerEntry(
                    f"{mech.id} leaf outputs of tree {t + 1}", "all records", eps_t, mech.private
                )
            )
    else:
        for t in range(tau):
            ledger.add_parallel(
                [
                    LedgerEntry(
                        f"{mech.id} leaf counts of tree {t + 1}{batch_text[b]}",
                        f"the records of batch {b + 1}",
                        eps_t,
                        mech.private,
                    )
                    for b in range(n_batches)
                ],
                summary=(
                    f"Tree {t + 1} counted each of {n_batches} disjoint batches of records "
                    f"with fresh noise, ε = {eps_t:g} each"
                ),
            )
    if n_batches > 1:
        structure = depth_count_epsilon + split_epsilon
        ledger.notes.append(batch_note(batch_epsilons(ledger.epsilon_total, n_batches, structure)))
    if not mech.private:
        ledger.notes.append(f"The leaf mechanism {mech.id} is NOT differentially private.")
    return ledger


def batch_epsilons(total: float | None, n_batches: int, structure_epsilon: float) -> list:
    """The ε each batch of records spent, in order (None each when the model has no
    guarantee): batch 1, the training data, the whole ``total``; each later batch, added
    by an update, all but the ``structure_epsilon`` of the record count and split tables,
    which read batch 1 only (its leaf counts and class histogram, and any earlier release
    of the leaves, counted in full)."""
    if total is None:
        return [None] * n_batches
    return [total] + [total - structure_epsilon] * (n_batches - 1)


def batch_note(epsilons: list) -> str:
    """The ledger's note on a model updated with new batches: what each batch spent and
    the composition the total assumes (each person's records in one batch only)."""
    n = len(epsilons)
    head = f"The model was updated {n - 1} time(s) with new batches of records"
    first, later = epsilons[0], epsilons[1]
    if first is None:
        return head + "; it carries no privacy guarantee."
    rest = f"batch 2 ε = {later:g}" if n == 2 else f"batches 2–{n} ε = {later:g} each"
    return (
        f"{head}: batch 1 (the training data) spent ε = {first:g}, {rest}. Each batch is read "
        "only by its own releases, so batches compose in parallel and the total holds for a "
        "person whose records all arrive in one batch (Jagannathan et al. 2012, §V-B). This "
        "assumes each person's records arrive in one batch only: a person whose records are "
        "in several batches (the training data sent again, or one batch sent twice) is "
        "protected only at the sum of those batches' ε, by sequential composition: "
        f"ε = {first + later:g} for batches 1 and 2"
        + (f", ε = {2 * later:g} for two updates." if n > 2 else ".")
    )


def decimal_rest(epsilon: float, *spent: float) -> float:
    """``epsilon`` less every ``spent`` share, in decimal arithmetic on their printed values:
    the ledger then sums to the ε asked for (1 − 0.05 − 0.05 is 0.9, not
    0.8999999999999999). Public numbers only."""
    rest = Decimal(repr(float(epsilon))) - sum(Decimal(repr(float(s))) for s in spent)
    return float(rest)
