"""The privacy ledger: every query on the data, its budget, and how the parts compose.

The total ε shown anywhere in dpviz is computed here, never typed in by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dpviz.privacy.noise import NOT_PRIVATE_NOTE


def _eps(value: float) -> str:
    return "∞ (unbounded)" if math.isinf(value) else f"{value:g}"


@dataclass(frozen=True)
class LedgerEntry:
    """One query: what it released, which records it read, and its ε."""

    query: str
    data: str
    epsilon: float
    private: bool = True


@dataclass
class PrivacyLedger:
    """Queries grouped into parallel groups that compose sequentially.

    Each group holds queries on disjoint parts of the data (parallel composition:
    the group costs its largest ε); the groups read overlapping data, so their costs
    add up (sequential composition). Add/remove-one neighbours, pure ε-DP.
    """

    groups: list[list[LedgerEntry]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    summaries: list[str | None] = field(default_factory=list)

    def add_parallel(self, entries: list[LedgerEntry], summary: str | None = None) -> None:
        """Record queries on pairwise disjoint parts of the data (``summary``: in words)."""
        if not entries:
            raise ValueError("a ledger group needs at least one query")
        self.groups.append(list(entries))
        self.summaries.append(summary)

    def add_sequential(self, entry: LedgerEntry) -> None:
        """Record a query on data that other groups also read."""
        self.groups.append([entry])
        self.summaries.append(None)

    @property
    def entries(self) -> list[LedgerEntry]:
        return [e for group in self.groups for e in group]

    @property
    def private(self) -> bool:
        return bool(self.groups) and all(e.private for e in self.entries)

    @property
    def epsilon_total(self) -> float | None:
        """Proven total ε, or None when some query has no privacy proof."""
        if not self.private:
            return None
        return math.fsum(max(e.epsilon for e in group) for group in self.groups)

    def describe(self) -> str:
        """The ledger in words, for people who are not DP experts."""
        if not self.groups:
            return "No query has read the data yet."
        lines = []
        # Consecutive groups of the same shape (each query's data and ε) are told once,
        # with their count: a ledger of 30 trees reads as one line, not 30.
        runs: list[list] = []  # [group, its summary, repeats, the last group's summary]
        shapes: list[tuple] = []
        for group, summary in zip(self.groups, self.summaries):
            shape = tuple((e.data, e.epsilon) for e in group)
            if runs and shapes[-1] == shape and (len(group) > 1 or summary is None):
                runs[-1][2] += 1
                runs[-1][3] = summary
            else:
                runs.append([group, summary, 1, summary])
                shapes.append(shape)
        for group, summary, repeats, last in runs:
            first = group[0]
            cost = max(e.epsilon for e in group)
            if len(group) > 1:
                said = summary or (
                    f"{len(group)} queries ({first.query}, …) each read a disjoint part of the "
                    f"data and spent up to ε = {_eps(cost)}"
                )
                if repeats > 1:
                    span = f"{said} … {last}" if summary and last else said
                    lines.append(
                        f"{repeats} such groups in turn ({span}), each ε = {_eps(cost)} by "
                        f"parallel composition → together ε = {_eps(repeats * cost)} by "
                        "sequential composition."
                    )
                else:
                    lines.append(f"{said} → together ε = {_eps(cost)} by parallel composition.")
            elif repeats > 1:
                lines.append(
                    f"{repeats} queries ({first.query}, …) each read {first.data} and spent "
                    f"ε = {_eps(cost)} → together ε = {_eps(repeats * cost)} by sequential "
                    "composition."
                )
            else:
                spent = (
                    "an unbounded ε" if first.epsilon == float("inf") else f"ε = {first.epsilon:g}"
                )
                lines.append(f"{first.query} read {first.data} and spent {spent}.")
        if len(runs) > 1:
            lines.append(
                "These parts read overlapping data, so their costs add up "
                "(sequential composition)."
            )
        total = self.epsilon_total
        if total is None:
            lines.append(
                "At least one query has NO differential-privacy proof, so the model carries NO "
                "privacy guarantee."
            )
        else:
            lines.append(f"Total: the released model is {total:g}-differentially private.")
        lines.extend(self.notes)
        return " ".join(line[:1].upper() + line[1:] for line in lines)

    def to_dict(self) -> dict:
        return {
            "epsilon_total": self.epsilon_total,
            "private": self.private,
            "groups": [[e.__dict__ for e in group] for group in self.groups],
            "notes": list(self.notes),
            "summary": self.describe(),
        }


def book_inferred_schema(ledger: PrivacyLedger, inferred: bool) -> None:
    """Book a schema inferred from the data in ``ledger``: the class list and domains were
    read without noise, so the release is NOT private (an unbounded entry). A public
    schema (``inferred=False``) books nothing."""
    if not inferred:
        return
    ledger.add_sequential(
        LedgerEntry(
            "class list and feature domains (inferred from the data)",
            "all records, without noise",
            float("inf"),
            private=False,
        )
    )


def book_noise_mode(ledger: PrivacyLedger, replayable: bool) -> None:
    """Book replayable noise in ``ledger``: anyone who knows its seed can replay the noise
    and subtract it, so the release is NOT private (an unbounded entry and a note).
    Fresh secret noise (``replayable=False``) books nothing."""
    if not replayable:
        return
    ledger.add_sequential(
        LedgerEntry(
            f"noise drawn from a replayable seed ({NOT_PRIVATE_NOTE})",
            "every release",
            float("inf"),
            private=False,
        )
    )
    ledger.notes.append(NOT_PRIVATE_NOTE + ".")
