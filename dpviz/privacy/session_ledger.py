"""The ε odometer's accounting: every file released from one dataset, summed exactly.

A *release* is a file that leaves dpviz: a downloaded or exported model, a relabelled or
updated model, a report, a table. Each carries the ledger of what it holds
(:class:`~dpviz.privacy.ledger.PrivacyLedger`, or its ``to_dict()`` as a model file
states it). What the data owner sees on screen is not a release: only files are.

Composition. Releases from one dataset read overlapping records, so their costs add up
(sequential composition, add/remove-one neighbours, pure ε-DP). Two files of one model
*lineage* (a model and its relabels or updates) are the exception: a relabelled model's
ledger already books every earlier release of the same leaves and the trees they share,
so the lineage costs the largest ledger among its files, not their sum; a second copy
of the same file costs nothing more (a fitted model is one release). A release whose
ledger has no proof (a NOT-DP mechanism, replayable noise, an inferred schema, numbers
read from the records without noise) leaves the session with NO guarantee.

Sums are exact: each ε is rounded up to 12 significant digits (:func:`exact`: the
decimal it was typed as, never less than the ledger states) and added as a
:class:`fractions.Fraction`, so 0.1 + 0.2 is 0.3 and a total compares with a budget
without rounding.

Privacy: this module only post-processes ledgers and public labels (file names, the
dataset's public name, times); it never reads records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpviz.privacy.ledger import PrivacyLedger

# What a release is, in the words the sidebar and the report use.
KINDS = {
    "model": "released model",
    "relabel": "relabelled model (fresh noise)",
    "update": "updated model (a new batch)",
    "report": "report",
    "table": "table",
    "schema": "schema",
}
NOT_PRIVATE_TEXT = "NOT private: no ε covers it"
LEDGER_FORMAT = "dpviz session ledger v1"
DIGITS = 12  # significant digits each ε is rounded up to before it is added exactly


def exact(epsilon: float) -> Fraction:
    """``epsilon`` as an exact decimal: the shortest decimal that reads back as it,
    rounded UP to :data:`DIGITS` significant digits.

    Budgets and ε are typed as decimals, but a ledger's float arithmetic leaves a few
    units in the last place (0.5 − 0.05 − 0.2 − 0.08 + … sums to 0.49999999999999994):
    rounding up to 12 digits gives back the decimal (0.5) and never states less than
    the ledger's decimal, so sums and budget checks are exact and on the safe side."""
    value = float(epsilon)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"an ε to add up must be a finite number ≥ 0, got {epsilon!r}")
    if value == 0:
        return Fraction(0)
    with localcontext() as ctx:
        ctx.prec, ctx.rounding = DIGITS, ROUND_CEILING
        # The shortest decimal that reads back as ``value`` (0.2, not 0.2000…111), then
        # rounded up when it is longer than DIGITS.
        return Fraction(+Decimal(repr(value)))


def stamped(release: Release, dataset: str = "") -> Release:
    """``release`` with a time (now, UTC) and ``dataset`` filled in when missing."""
    return replace(
        release,
        time=release.time or datetime.now(UTC).isoformat(timespec="seconds"),
        dataset=release.dataset or dataset,
    )


def _number(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Release:
    """One file released from a dataset, with the ledger of what it holds.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    what : str
        The file in words ("Released model, fletcher_islam at ε = 1").
    file : str
        Its file name (public: chosen by dpviz or the user).
    epsilon : float or None
        The total ε of the file's ledger; None when the ledger has no proof.
    summary : str
        The file's ledger in words (``PrivacyLedger.describe()``).
    lineage : str, optional
        The model the file is a release of ("model 1"): files of one lineage share
        their ledger's earlier releases, so the lineage costs its largest ledger.
        None: a file of its own, whose ε adds up.
    dataset : str
        The dataset's public name.
    time : str
        When it was released (ISO 8601, UTC; stamped when booked).
    """

    kind: str
    what: str
    file: str
    epsilon: float | None
    summary: str
    lineage: str | None = None
    dataset: str = ""
    time: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown release kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.epsilon is not None:
            exact(self.epsilon)  # a finite ε ≥ 0, or a ValueError

    @property
    def private(self) -> bool:
        return self.epsilon is not None

    @classmethod
    def from_ledger(
        cls, kind: str, what: str, file: str, ledger: PrivacyLedger | Mapping[str, Any], **kw
    ) -> Release:
        """A release of a file whose ledger is ``ledger``: a :class:`PrivacyLedger`, or
        the ``{"epsilon_total", "private", "summary"}`` a model file states."""
        if isinstance(ledger, PrivacyLedger):
            total, private, summary = ledger.epsilon_total, ledger.private, ledger.describe()
        else:
            total, private = ledger.get("epsilon_total"), bool(ledger.get("private"))
            summary = str(ledger.get("summary", ""))
        if total is not None and not math.isfinite(float(total)):
            private = False
        return cls(kind, what, file, float(total) if private else None, summary, **kw)

    @classmethod
    def not_private(cls, kind: str, what: str, file: str, why: str, **kw) -> Release:
        """A file holding numbers read from the records without noise (``why``)."""
        return cls(kind, what, file, None, f"{why}: {NOT_PRIVATE_TEXT}.", **kw)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Release:
        names = cls.__dataclass_fields__
        unknown = set(row) - set(names) - {"adds", "session_epsilon", "private", "number"}
        if unknown:
            raise ValueError(f"a release line has unknown fields: {', '.join(sorted(unknown))}")
        return cls(**{k: row[k] for k in names if k in row})


@dataclass
class SessionLedger:
    """The releases made from one dataset, in order, and an optional budget.

    Parameters
    ----------
    dataset : str
        The dataset's public name.
    budget : float, optional
        The total ε the data owner allows this session to release (None: no budget).
    """

    dataset: str = ""
    budget: float | None = None
    releases: list[Release] = field(default_factory=list)

    # --- the sums ---------------------------------------------------------------------

    @staticmethod
    def _private_total(releases: Iterable[Release]) -> Fraction:
        """Exact ε of the private releases: each lineage its largest ledger, each other
        file its own."""
        lineages: dict[str, Fraction] = {}
        total = Fraction(0)
        for r in releases:
            if r.epsilon is None:
                continue
            if r.lineage is None:
                total += exact(r.epsilon)
            else:
                lineages[r.lineage] = max(lineages.get(r.lineage, Fraction(0)), exact(r.epsilon))
        return total + sum(lineages.values(), Fraction(0))

    @property
    def private_epsilon(self) -> Fraction:
        """Exact ε spent by the releases that carry a proof (0 before any)."""
        return self._private_total(self.releases)

    @property
    def not_private(self) -> list[Release]:
        """Releases without a proof: each voids the session's guarantee."""
        return [r for r in self.releases if not r.private]

    @property
    def epsilon(self) -> Fraction | None:
        """Exact total ε of the session, or None when a release has no proof."""
        return None if self.not_private else self.private_epsilon

    def adds(self, release: Release) -> Fraction | None:
        """What booking ``release`` would add to the total (0 for a copy of a file
        already booked; None: it has no proof)."""
        if not release.private:
            return None
        return self._private_total([*self.releases, release]) - self.private_epsilon

    def epsilon_after(self, release: Release) -> Fraction | None:
        """The session's exact total once ``release`` is booked (None: no guarantee)."""
        if not release.private or self.not_private:
            return None
        return self._private_total([*self.releases, release])

    def passes_budget(self, release: Release) -> bool:
        """True when a budget is set and booking ``release`` would take the session past
        it: it adds ε and the total would exceed the budget, or it has no proof (which
        passes every budget). A copy of a file already booked adds nothing: no."""
        if self.budget is None:
            return False
        if not release.private:
            return True
        after = self.epsilon_after(release)
        return self.adds(release) > 0 and (after is None or after > exact(self.budget))

    # --- booking ----------------------------------------------------------------------

    def book(self, release: Release) -> Release:
        """Add ``release``, stamped with the time and this dataset's name when it has
        none."""
        release = stamped(release, self.dataset)
        self.releases.append(release)
        return release

    def set_budget(self, budget: float | None) -> None:
        """The total ε the data owner allows (None: no budget)."""
        if budget is not None:
            budget = float(budget)
            if not math.isfinite(budget) or budget <= 0:
                raise ValueError(f"a budget must be a positive ε, got {budget:g}")
        self.budget = budget

    # --- in words and as a file -------------------------------------------------------

    def total_text(self) -> str:
        """The total in one line, for the sidebar and the report."""
        spent = self.private_epsilon
        if not self.releases:
            return "Nothing released from this dataset yet: ε = 0."
        if self.not_private:
            n = len(self.not_private)
            files = "file carries" if n == 1 else "files carry"
            return (
                f"NO guarantee: {n} downloaded {files} numbers read from the records "
                f"without noise (or a NOT-DP model). The DP releases alone spent "
                f"ε = {float(spent):g}."
            )
        return f"Total ε = {float(spent):g} over {len(self.releases)} release(s)."

    def rows(self) -> list[dict[str, Any]]:
        """One row per release, with what it added and the running total."""
        rows, seen = [], SessionLedger(self.dataset)
        for number, r in enumerate(self.releases, start=1):
            adds = seen.adds(r)
            seen.book(r)
            rows.append(
                {
                    "number": number,
                    **r.to_dict(),
                    "private": r.private,
                    "adds": _number(adds),
                    "session_epsilon": _number(seen.epsilon),
                }
            )
        return rows

    def to_dict(self) -> dict[str, Any]:
        epsilon = self.epsilon
        return {
            "format": LEDGER_FORMAT,
            "dataset": self.dataset,
            "budget": self.budget,
            "epsilon_total": _number(epsilon),
            "private": epsilon is not None,
            "private_releases_epsilon": float(self.private_epsilon),
            "summary": self.total_text(),
            "composition": (
                "Sequential composition over the releases (add/remove-one neighbours, pure "
                "ε-DP); the files of one model lineage (a model and its relabels) cost the "
                "largest of their ledgers, which already book the earlier releases."
            ),
            "not_releases": (
                "What the data owner sees on screen (curves, trees, leaves, diagnostics) "
                "is not a release; only downloaded or exported files are."
            ),
            "releases": self.rows(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)


# --- the CLI's ledger file: one release per line ------------------------------------------


def append_jsonl(path: str | Path, release: Release) -> None:
    """Append ``release`` to the JSON-lines ledger at ``path`` (created when missing)."""
    line = json.dumps(stamped(release).to_dict(), ensure_ascii=False)
    with open(path, "a", encoding="utf-8") as out:
        out.write(line + "\n")


def read_jsonl(path: str | Path) -> SessionLedger:
    """The releases of a JSON-lines ledger, in order (``ValueError`` on a damaged line)."""
    ledger = SessionLedger()
    text = Path(path).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}: line {number} is not JSON") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}: line {number} is not a release record")
        try:
            ledger.releases.append(Release.from_dict(row))
        except TypeError:
            raise ValueError(f"{path}: line {number} lacks a release's fields") from None
    return ledger


def lineage_of(ledger: SessionLedger, file: str) -> str | None:
    """The lineage of the last release written as ``file`` in ``ledger`` (None if none)."""
    for r in reversed(ledger.releases):
        if r.file == file:
            return r.lineage
    return None
