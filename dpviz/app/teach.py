"""What the Teach page does besides calling ``dpviz.evaluation.teach``: the paper's tables beside
the printed values, and choosing the dataset a tree grows on.

No streamlit here, so that everything is unit-tested. Everything but
:func:`walkthrough_for` is computed from toy counts: no data read. The walk-through reads
real records when the session's dataset is small enough; its steps mark the NOT-private
parts (see :func:`dpviz.evaluation.teach.tree_walkthrough`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpviz.app.support import PreparedData
from dpviz.evaluation.resources import reference_file
from dpviz.evaluation.teach import (
    PLAYGROUND_MECHANISMS,
    TreeWalkthrough,
    compare_with_printed,
    majority_probability_table,
    mechanism_label,
    smooth_sensitivity_table,
    tiny_demo,
    tree_walkthrough,
)

# The papers' printed values ship inside the package (dpviz/reference); an install that
# lacks them shows the tables without them.
REFERENCE_CSV = reference_file("mechanism_tables.csv")
# Table 6 with the addendum's recommended mechanism added as a column (not in the paper).
TABLE6_SHOWN = ("smooth_em", "count_em", "permute_flip")
# The walk-through draws every node and lists every leaf: past this many records it
# still works but a single tree's leaves say little about so many rows, and the tiny
# demo teaches better; past the node limit the tree cannot be drawn at all.
WALK_MAX_RECORDS = 50_000
WALK_MAX_NODES = 63
WALK_MECHANISMS = tuple(m for m in PLAYGROUND_MECHANISMS if m != "laplace_counts")
DIGITS = 6  # significant digits shown for dpviz's values: more than any printed value


def reference_csv(path: Path | None = None) -> Path | None:
    """The printed values' CSV when it exists (``REFERENCE_CSV`` by default), else None."""
    path = REFERENCE_CSV if path is None else Path(path)
    return path if path is not None and path.is_file() else None


def _fmt(value: float) -> str:
    return f"{value:.{DIGITS}g}"


def _printed(reference: Path | None) -> pd.DataFrame | None:
    return None if reference is None else compare_with_printed(reference)


def table2_view(reference: Path | None = None) -> pd.DataFrame:
    """The paper's Table 2 (smooth sensitivity e^(−jε)) computed by dpviz, one row per
    gap j; beside each ε's column ("ε = 0.1 · dpviz") the value the paper prints
    ("ε = 0.1 · printed"), when ``reference`` is given.

    Values are text (6 significant digits for dpviz, the paper's own digits for the
    print) because they span 1 to 1e-218.
    """
    live = smooth_sensitivity_table()
    out = pd.DataFrame({"gap j": live["j"]})
    printed = _printed(reference)
    for column in live.columns[1:]:
        out[f"{column} · dpviz"] = [_fmt(v) for v in live[column]]
        if printed is not None:
            eps = float(column.split("=")[1])
            rows = printed[printed["table"] == "Table2"]
            rows = rows[rows["epsilon"].astype(float) == eps]
            by_j = dict(zip(rows["j_or_counts"].astype(int), rows["printed"]))
            out[f"{column} · printed"] = [by_j.get(int(j), "—") for j in live["j"]]
    return out


def table6_view(reference: Path | None = None) -> pd.DataFrame:
    """The addendum's Table 6 (Pr(B) in % at ε = 0.1 for six count pairs) computed by
    dpviz for ``TABLE6_SHOWN``, one column per mechanism named with its badge (e.g.
    "smooth_em (NOT DP) · dpviz"); beside the two mechanisms the addendum prints, its
    values ("… · printed"), when ``reference`` is given. ``permute_flip`` is dpviz's
    addition."""
    live = majority_probability_table(mechanisms=TABLE6_SHOWN)
    out = pd.DataFrame({"f_A": live["f_A"], "f_B": live["f_B"], "j": live["gap_j"]})
    printed = _printed(reference)
    for m in TABLE6_SHOWN:
        name = mechanism_label(m)
        out[f"{name} · dpviz"] = [f"{v:.4g}" for v in live[f"P(B) {m} (%)"]]
        if printed is None:
            continue
        rows = printed[printed["quantity"] == f"P(B)_{m}_pct"]
        if rows.empty:
            continue
        by_pair = {}
        for text, value in zip(rows["j_or_counts"], rows["printed"]):
            pair = dict(part.split("=") for part in text.split(";"))
            by_pair[(int(pair["fA"]), int(pair["fB"]))] = value
        out[f"{name} · printed"] = [
            by_pair.get((int(a), int(b)), "—") for a, b in zip(live["f_A"], live["f_B"])
        ]
    return out


def agreement(reference: Path | None = None) -> str:
    """One sentence: do dpviz's values agree with every printed one?"""
    if reference is None:
        return (
            "The papers' printed values are not available here (this install of dpviz "
            "lacks dpviz/reference/mechanism_tables.csv), so only dpviz's values are shown."
        )
    table = compare_with_printed(reference)
    counts = {t: int((table["table"] == t).sum()) for t in ("Table2", "Table6")}
    bad = table[~table["agrees"]]
    if bad.empty:
        return (
            f"All {counts['Table2']} printed values of Table 2 and {counts['Table6']} of "
            "Table 6 agree with dpviz to within one unit of their last printed digit."
        )
    where = ", ".join(f"{r.table} {r.j_or_counts} ε = {r.epsilon}" for r in bad.itertuples())
    return f"{len(bad)} printed value(s) differ from dpviz by more than their rounding: {where}."


@dataclass(frozen=True)
class WalkSource:
    """The tree walk-through and where its records came from.

    ``on_session_data`` is True when it grew on the session's dataset (real records:
    its counts and test record are NOT private); ``note`` says which data and why.
    """

    walk: TreeWalkthrough
    dataset: str
    on_session_data: bool
    note: str


def walkthrough_for(
    data: PreparedData | None,
    *,
    depth: int = 2,
    epsilon: float = 1.0,
    mechanism: str = "permute_flip",
    seed: int = 0,
) -> WalkSource:
    """Grow the walk-through's tree on the session's dataset when it is small enough
    (at most ``WALK_MAX_RECORDS`` records and ``WALK_MAX_NODES`` nodes at this depth),
    else on :func:`dpviz.evaluation.teach.tiny_demo`.

    Parameters
    ----------
    data : PreparedData or None
        The session's dataset.
    depth : int, default=2
    epsilon : float, default=1.0
    mechanism : str, default="permute_flip"
    seed : int, default=0
        The tree's seed ("grow another tree" increments it).

    Returns
    -------
    WalkSource

    Raises
    ------
    ValueError
        A bad ε, depth or mechanism (the message is for the user).

    Notes
    -----
    On the session's dataset the leaf counts, true majorities, flip probabilities and
    the test record are NOT private (real records), and ``note`` says so.
    """
    reason = "no dataset is loaded"
    if data is not None:
        if len(data.frame) > WALK_MAX_RECORDS:
            reason = (
                f"{data.name} has {len(data.frame):,} records, more than the "
                f"{WALK_MAX_RECORDS:,} this step-through is meant for"
            )
        else:
            try:
                walk = tree_walkthrough(
                    data.frame,
                    data.schema,
                    depth=depth,
                    epsilon=epsilon,
                    mechanism=mechanism,
                    random_state=seed,
                    max_nodes=WALK_MAX_NODES,
                )
            except ValueError as exc:
                if "too many to draw" not in str(exc):
                    raise
                reason = f"on {data.name} {exc}"
            else:
                note = (
                    f"Grown on the current dataset, {data.name}: the counts, true majorities "
                    "and the test record below are real records and NOT private."
                )
                if not data.schema_public:
                    note += (
                        " Its schema was inferred from the data, so even the structure "
                        "(its split ranges) is NOT private."
                    )
                return WalkSource(walk, data.name, True, note)
    frame, schema = tiny_demo()
    walk = tree_walkthrough(
        frame,
        schema,
        depth=depth,
        epsilon=epsilon,
        mechanism=mechanism,
        random_state=seed,
        max_nodes=WALK_MAX_NODES,
    )
    note = (
        f"Grown on a tiny generated demo (40 students: hours studied and slept, passed or "
        f"not) because {reason}."
    )
    return WalkSource(walk, "tiny demo", False, note)
