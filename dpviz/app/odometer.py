"""The ε odometer's app logic: which download is which release, relabelling a trained
model with fresh noise, and the sidebar's words. No streamlit.

A *release* is a file the app lets leave: each download button names the
:class:`~dpviz.privacy.session_ledger.Release` it makes, and the click books it in the
dataset's :class:`~dpviz.privacy.session_ledger.SessionLedger` (held by
:class:`~dpviz.app.session.AppState`). Model files carry the model's own ledger; tables
and reports of held-out scores or true counts are NOT private (no ε covers them) and
are booked so; a declared schema is public input (ε = 0).

Privacy: what the data owner sees on screen is not a release (:data:`NOT_RELEASES`).
Relabelling draws the leaves again with fresh secret noise (or the replayable noise the
run opted into, which its ledger says is NOT private); its ledger books the earlier
release of the same leaves, so the relabelled file's ε includes the first one.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dpviz.app.support import PreparedData
from dpviz.models.files.load import release as export_release
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.schema import Schema
from dpviz.privacy.session_ledger import Release, SessionLedger

NOT_RELEASES = (
    "Only downloaded files are releases and count here. What you see on screen (the "
    "curves, trees, leaves, scores and diagnostics) is seen only by you, the data owner, "
    "and is not a release; sharing a screenshot of it is."
)
BUDGET_HELP = (
    "The total ε you allow the files released from this dataset in this session. A "
    "download that would pass it asks you to confirm first. Empty: no budget."
)
HELD_OUT = "scores on held-out records, computed without noise"
TRUE_COUNTS = "true per-leaf counts and flip flags, read from the records without noise"


def dataset_key(data: PreparedData) -> str:
    """Which records ``data`` holds, kept in memory only (never written to a file): an
    upload's content hash before columns were dropped or retyped (the same people
    whatever columns are kept), or ``demo:<id>``."""
    key = data.frame_id or f"frame:{id(data.frame)}"
    return key if key.startswith("demo:") else key.split(".")[0]


def not_private_table(what: str, file: str, why: str) -> Release:
    """A downloaded table or report of numbers read from the records (``why``)."""
    kind = "report" if file.endswith(".html") else "table"
    return Release.not_private(kind, what, file, why)


def schema_release(schema: Schema, file: str) -> Release:
    """The schema JSON: public input when declared (ε = 0); read from the records
    without noise when inferred (NOT private)."""
    if schema.inferred:
        return Release.not_private(
            "schema",
            "Schema (inferred)",
            file,
            "class list and feature ranges read from the records without noise",
        )
    return Release(
        "schema", "Schema (declared)", file, 0.0, "The public schema you declared: ε = 0."
    )


def report_release(file: str, chosen: float) -> Release:
    """The decision report: its candidates and curves are held-out scores (NOT private);
    the ledger it quotes is the chosen configuration's plan, which spends nothing."""
    return Release.not_private(
        "report",
        f"Decision report (chosen ε = {chosen:g})",
        file,
        f"its candidates table and curves are {HELD_OUT}",
    )


def model_release(
    ledger: PrivacyLedger, what: str, file: str, lineage: str, kind: str = "model"
) -> Release:
    """A model file: its own ledger, in the model ``lineage`` ("model 1")."""
    return Release.from_ledger(kind, what, file, ledger, lineage=lineage)


def run_release(run: Any, lineage: str) -> Release:
    """The Train page's released model (a ``dpviz.app.train.TrainRun``) as a release."""
    s = run.settings
    return model_release(
        run.model.ledger_,
        f"Released model ({lineage}: {s.algorithm}, ε = {s.epsilon:g})",
        f"dpviz_{s.algorithm}.json",
        lineage,
    )


# --- relabelling -----------------------------------------------------------------------


def can_relabel(model: Any) -> bool:
    """Whether ``model`` can release its leaves again (the forests: fletcher_islam, jpw)."""
    return callable(getattr(model, "relabel", None))


@dataclass(eq=False)
class Relabel:
    """A trained model's leaves released again at ``epsilon`` with fresh noise.

    ``number`` counts the relabels of the ``lineage`` (1 for the first)."""

    model: Any
    algorithm: str
    epsilon: float
    lineage: str
    number: int

    @cached_property
    def model_json(self) -> str:
        """The relabelled model file (its ledger books the earlier releases)."""
        return export_release(self.model, self.algorithm).to_json()

    @property
    def file_name(self) -> str:
        return f"dpviz_{self.algorithm}_relabel{self.number}.json"

    @property
    def release(self) -> Release:
        return model_release(
            self.model.ledger_,
            f"Relabelled model ({self.lineage}, relabel {self.number} at ε = {self.epsilon:g})",
            self.file_name,
            self.lineage,
            kind="relabel",
        )

    @property
    def summary(self) -> str:
        return self.model.ledger_.describe()


def relabel(model: Any, algorithm: str, epsilon: float, lineage: str, number: int) -> Relabel:
    """A copy of ``model`` whose leaves are released again at ``epsilon`` with fresh
    noise; ``model`` itself (and any file of it) is untouched. ``ValueError`` with a
    message for the user when it cannot be (no relabel for this algorithm, an ε that
    leaves the leaves nothing, a model too large to copy)."""
    if not can_relabel(model):
        raise ValueError(
            f"{algorithm} models cannot be relabelled: train again at the new ε instead"
        )
    copied = copy.deepcopy(model)  # ValueError for a forest too large to copy
    copied.relabel(float(epsilon))
    return Relabel(copied, algorithm, float(epsilon), lineage, number)


# --- the sidebar ------------------------------------------------------------------------


def budget_fraction(ledger: SessionLedger) -> float | None:
    """How much of the budget the session spent (0–1, for a progress bar; None: no
    budget or no guarantee)."""
    if ledger.budget is None or ledger.epsilon is None:
        return None
    return min(1.0, float(ledger.epsilon) / ledger.budget)


def budget_text(ledger: SessionLedger) -> str:
    """The total against the budget, in one line."""
    if ledger.budget is None:
        return "No budget set."
    if ledger.epsilon is None:
        return f"Budget ε = {ledger.budget:g}: passed (a release has no guarantee)."
    left = ledger.budget - float(ledger.epsilon)
    if left < 0:
        return f"Budget ε = {ledger.budget:g}: passed by {-left:g} (you confirmed it)."
    return f"Budget ε = {ledger.budget:g}: ε = {left:g} left."


def confirm_text(ledger: SessionLedger, release: Release) -> str:
    """Why a download asks for confirmation (it would pass the budget)."""
    after = ledger.epsilon_after(release)
    if after is None:
        reason = (
            f"{release.what} carries NO guarantee"
            if not release.private
            else "the session already has no guarantee"
        )
        return (
            f"Past the budget (ε = {ledger.budget:g}): {reason}. Downloading it leaves the "
            "session with no privacy bound. Tick to release it anyway."
        )
    return (
        f"Past the budget: this download takes the session to ε = {float(after):g}, over the "
        f"budget of ε = {ledger.budget:g} for this dataset. Tick to release it anyway."
    )


def release_lines(ledger: SessionLedger) -> list[str]:
    """One markdown line per release: what, the file's ε, what it added."""
    lines = []
    for row in ledger.rows():
        eps = "NOT private" if row["epsilon"] is None else f"ε = {row['epsilon']:g}"
        if row["adds"] is None:
            adds = "voids the guarantee"
        elif row["adds"] == 0 and row["epsilon"]:
            adds = "adds 0 (already counted)"
        else:
            adds = f"adds {row['adds']:g}"
        lines.append(f"{row['number']}. {row['what']} · `{row['file']}` · {eps} · {adds}")
    return lines


def report_rows(ledger: SessionLedger, this_report: Release) -> list[dict[str, Any]]:
    """The session's releases for the decision report, this report last."""
    listed = SessionLedger(ledger.dataset, ledger.budget, [*ledger.releases, this_report])
    rows = listed.rows()
    rows[-1]["what"] += " (this report)"
    return rows
