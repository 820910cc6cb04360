"""Column roles of an uploaded CSV: which columns to drop (IDs, row indexes, free text)
and which one is probably the label. Used by the Data page and the CLI's ``info``.

These suggestions read the raw records (distinct counts, orderings): they help the data
owner set up the schema and are never released. Nothing here decides a public domain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from dpviz.privacy.schema import MAX_DISCRETE_VALUES

# Names of label columns, best first: an exact name beats a word inside a longer name.
TARGET_NAMES = (
    "label",
    "target",
    "class",
    "y",
    "outcome",
    "survived",
    "default",
    "diagnosis",
    "species",
    "income",
    "churn",
    "response",
    "result",
    "fraud",
    "spam",
    "approved",
    "decision",
    "disease",
    "variety",
    "category",
    "grade",
    "quality",
)
# Names of identifier or row-index columns (R's write.csv writes "rownames" or "").
ID_NAMES = ("id", "rownames", "rowname", "row", "index", "idx", "key", "uid", "uuid", "")
# Words that make a column name an identifier's: PassengerId, customer_id, row_uuid.
ID_WORDS = ("id", "uuid", "guid", "rownames")
# A label has at most this many classes to be guessed (MAX_CLASSES allows more).
GUESS_MAX_CLASSES = 20
# A text column with more distinct values than this share of its rows is free text.
FREE_TEXT_SHARE = 0.5
FREE_TEXT_MIN_VALUES = 50
# Below this many rows "every value distinct" says little: no ID suggestion from it.
ID_MIN_ROWS = 20


def _words(name: str) -> list[str]:
    """``passengerClass`` -> passenger, class; ``default.payment`` -> default, payment."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _is_unnamed(name: str) -> bool:
    return str(name).startswith("Unnamed:") or str(name).strip() == ""


def suggest_drops(frame: pd.DataFrame, label: str | None = None) -> dict[str, str]:
    """Columns to drop by default, each with the reason to show.

    ID-like: an unnamed first column or one named like an ID (``id``, ``rownames``,
    ``PassengerId``, ``customer_id``) with over half its values distinct (or first, with
    many values); integers that are a permutation of a run (a row index, 1..N);
    mostly-text values, each on one row. Free text (or mixed text and numbers): not all
    numbers, with more than ``FREE_TEXT_SHARE`` of its filled cells distinct (and over
    ``FREE_TEXT_MIN_VALUES`` values), or more values than a discrete feature may have.
    The label is never suggested.
    """
    out: dict[str, str] = {}
    n = len(frame)
    for position, name in enumerate(frame.columns):
        if name == label:
            continue
        column = frame[name].dropna()
        if column.empty:
            out[str(name)] = "empty: every cell is missing"
            continue
        # Parse the distinct values only (a category column has a handful).
        distinct = pd.Series(column.unique(), dtype=object)
        n_distinct = len(distinct)
        all_distinct = n_distinct == len(column) == n
        numbers = pd.to_numeric(distinct, errors="coerce")
        numeric = not numbers.isna().any()
        integers = numeric and bool(np.all(np.floor(numbers) == numbers))
        # Mostly numbers with a few text values is a numeric column to fix, not text.
        text_share = float(numbers.isna().mean())
        named_id = (
            _is_unnamed(name)
            or str(name).strip().lower() in ID_NAMES
            or any(w in ID_WORDS for w in _words(name))  # PassengerId, customer_id
        )
        mostly_distinct = n_distinct > FREE_TEXT_SHARE * len(column)
        if named_id and (mostly_distinct or position == 0) and n_distinct > GUESS_MAX_CLASSES:
            out[str(name)] = "ID-like: a row name or index column, not a property of the record"
        elif integers and all_distinct and n > 1 and numbers.max() - numbers.min() == n - 1:
            out[str(name)] = (
                f"ID-like: the integers {numbers.min():g}…{numbers.max():g}, each once "
                "(a row number)"
            )
        elif not numeric and text_share >= 0.5 and all_distinct and n >= ID_MIN_ROWS:
            out[str(name)] = "ID-like: every row has its own value (a name or identifier)"
        elif not numeric and (
            n_distinct > MAX_DISCRETE_VALUES
            or (n_distinct > FREE_TEXT_MIN_VALUES and n_distinct > FREE_TEXT_SHARE * len(column))
        ):
            # Many rare categories: a tree branching on them has a child per value.
            kind = "free text" if text_share >= 0.5 else "mixed text and numbers"
            out[str(name)] = (
                f"{kind}: {n_distinct:,} distinct values in {len(column):,} filled cells "
                "(too many rare categories to learn from)"
                + (
                    "; if it is a measurement, keep it and read it as numbers"
                    if text_share < 0.5
                    else ""
                )
            )
    return out


def _low_cardinality(column: pd.Series) -> int:
    """The number of distinct values when 2..GUESS_MAX_CLASSES, else 0."""
    k = int(column.dropna().nunique())
    return k if 2 <= k <= GUESS_MAX_CLASSES else 0


def _is_text(column: pd.Series) -> bool:
    present = pd.Series(column.dropna().unique(), dtype=object)
    return bool(len(present)) and pd.to_numeric(present, errors="coerce").isna().any()


def guess_label(frame: pd.DataFrame | Iterable[str], drops: Iterable[str] = ()) -> str:
    """A likely label column, read from the data (a guess: the user must check it).

    Best: a column with 2..``GUESS_MAX_CLASSES`` values named like a target (exact
    name before a word of the name, earlier in :data:`TARGET_NAMES` first; text
    before numbers). Else the last such text column, else the last low-cardinality
    column, else the last column. A list of names (no data) uses the names only.
    """
    if not isinstance(frame, pd.DataFrame):
        columns = [str(c) for c in frame]
        frame = pd.DataFrame({c: ["a", "b"] for c in columns}, columns=columns)
    dropped = set(drops)
    columns = list(frame.columns)
    rank = {name: i for i, name in enumerate(TARGET_NAMES)}
    best, best_key = None, None
    text_low, any_low = None, None
    for position, name in enumerate(columns):
        lower = str(name).strip().lower()
        if name in dropped and lower not in ("label", "target", "class"):
            continue
        k = _low_cardinality(frame[name])
        text = _is_text(frame[name])
        if lower in rank and (k or lower in ("label", "target", "class")):
            # A column called "label" is meant as the label even with one class (the
            # schema then says why it cannot be used).
            key = (0, rank[lower], not text, position)
            if best_key is None or key < best_key:
                best, best_key = name, key
            continue
        if not k:
            continue
        any_low = name
        if text:
            text_low = name
        words = _words(name)
        hits = [rank[w] for w in words if w in rank]
        if not hits:
            continue
        key = (1, min(hits), not text, position)
        if best_key is None or key < best_key:
            best, best_key = name, key
    kept = [c for c in columns if c not in dropped] or columns
    return str(best or text_low or any_low or kept[-1])
