"""Column roles of an uploaded CSV: which columns to drop (personal data such as names,
e-mail addresses, phone numbers and postal addresses; IDs, row indexes, free text) and
which one is probably the label. Used by the Data page and the CLI's ``info`` and
``train``.

These suggestions read the raw records (distinct counts, orderings): they help the data
owner set up the schema and are never released. Nothing here decides a public domain.
"""

from __future__ import annotations

import re
import unicodedata
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

# The reason of every people-like suggestion starts so: keeping such a column needs its
# own confirmation, since a discrete feature's value list is published with the model.
PEOPLE_REASON = "personal data"
# Words of a column name (accents dropped) that say what people-like values it holds:
# English plus common French, German, Spanish, Italian, Dutch and Portuguese words.
PEOPLE_NAME_WORDS = {
    "people's names": (
        "name", "names", "firstname", "lastname", "surname", "forename", "fullname",
        "givenname", "familyname", "nom", "prenom", "nombre", "apellido", "apellidos",
        "vorname", "nachname", "voornaam", "achternaam", "cognome", "nome", "naam",
    ),
    "e-mail addresses": ("email", "mail", "courriel", "correo"),
    "phone numbers": (
        "phone", "telephone", "tel", "mobile", "cellphone", "telefon", "telefono",
        "telefone", "telefoon", "handy",
    ),
    "postal addresses": (
        "address", "street", "zip", "zipcode", "postcode", "postal", "adresse",
        "direccion", "indirizzo", "strasse", "rue", "calle", "plz", "adres", "straat",
        "endereco",
    ),
}  # fmt: skip
_UPPER, _LOWER = "A-ZÀ-ÖØ-Þ", "a-zß-öø-ÿ"
# Cell shapes of people-like values (whole cell, case-sensitive unless said).
_EMAIL = r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}"
# "Anna Rossi", "Rossi, Anna", "Mary J. Smith": 2-4 capitalised words.
_PERSON = rf"[{_UPPER}][{_LOWER}'’-]+,?(?: [{_UPPER}][{_LOWER}'’-]*\.?){{1,3}}"
_PHONE = r"\+?[\d(][\d ()./-]{5,}\d"
_DATE = r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}"
_STREET_WORDS = (
    r"(?i:\b(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|boulevard|blvd|way|court|ct|"
    r"place|pl|square|sq|terrace|close|crescent|rue|calle|via|avenida|laan|straat|weg|"
    r"gasse|platz|str)\b|(?:strasse|straße|weg|gasse|platz|straat|laan)\b)"
)
_POSTCODE = r"[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}|\d{5}-\d{4}"
# A share of the filled cells this large makes a column "mostly" people-like.
PEOPLE_SHARE = 0.5
# Distinct matching values a value shape needs (a handful of "Full Time" is a category).
PEOPLE_MIN_NAMES, PEOPLE_MIN_VALUES = 10, 3
# The value shapes are judged on at most this many evenly spaced cells (a million-row
# column takes tens of milliseconds, not seconds).
PEOPLE_SAMPLE = 20_000


def _words(name: str) -> list[str]:
    """``passengerClass`` -> passenger, class; ``default.payment`` -> default, payment."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _people_by_name(name) -> str:
    """What people-like values a column's name announces ("" for none)."""
    text = unicodedata.normalize("NFKD", str(name).replace("ß", "ss"))
    words = _words(text.encode("ascii", "ignore").decode())
    for what, names in PEOPLE_NAME_WORDS.items():
        if "".join(words) in names or any(w in names for w in words):
            return what
    return ""


def _people_by_values(column: pd.Series) -> str:
    """What most filled cells of a text column look like, if people-like ("" if not):
    e-mail addresses, phone numbers, people's names or postal addresses. Repeated
    values count (a name on many rows is still a name). Vectorised, on at most
    :data:`PEOPLE_SAMPLE` evenly spaced cells."""
    text = column.iloc[:: max(1, len(column) // PEOPLE_SAMPLE)].astype(str).str.strip()
    digits = text.str.count(r"\d")
    phone = (
        text.str.fullmatch(_PHONE)
        & digits.between(7, 15)
        & ~text.str.fullmatch(_DATE)
        & (text.str.contains(r"[ ()./-]") | text.str.match(r"[+0]"))
    )
    street = text.str.contains(r"\b\d{1,5}[A-Za-z]?\b") & text.str.contains(_STREET_WORDS)
    shapes = (
        ("e-mail addresses", text.str.fullmatch(_EMAIL), PEOPLE_MIN_VALUES),
        ("phone numbers", phone, PEOPLE_MIN_VALUES),
        ("people's names (Firstname Lastname)", text.str.fullmatch(_PERSON), PEOPLE_MIN_NAMES),
        ("postal addresses", street | text.str.fullmatch(_POSTCODE), PEOPLE_MIN_VALUES),
    )
    for what, match, minimum in shapes:
        match = match.to_numpy(dtype=bool)
        share = match.mean()
        if share >= PEOPLE_SHARE and text[match].nunique() >= minimum:
            return f"{share:.0%} of its cells look like {what}"
    return ""


def people_columns(frame: pd.DataFrame, label: str | None = None) -> dict[str, str]:
    """Columns that look like personal data, each with the reason (see
    :func:`suggest_drops`); the label is never one. Reads the records: NOT private."""
    out = {}
    for name in frame.columns:
        column = frame[name].dropna()
        if name != label and not column.empty:
            distinct = pd.Series(column.unique(), dtype=object)
            numeric = not pd.to_numeric(distinct, errors="coerce").isna().any()
            why = _people_reason(name, column, len(distinct), numeric)
            if why:
                out[str(name)] = why
    return out


def _people_reason(name, column: pd.Series, n_distinct: int, numeric: bool) -> str:
    """The people-like suggestion for one column's filled cells ("" for none), given
    its number of distinct values and whether they are all numbers."""
    if n_distinct <= 2:
        return ""  # a flag such as has_email publishes no one's data
    by_name = _people_by_name(name)
    if by_name:
        what = f"its name {str(name)!r} says {by_name}"
    else:
        if numeric:
            return ""  # numbers only: no name, e-mail or address, no separated phone
        what = _people_by_values(column)
        if not what:
            return ""
    return (
        f"{PEOPLE_REASON}: {what}; a model that uses it publishes its values (a discrete "
        "feature lists each one), so keeping it needs its own confirmation"
    )


def _is_unnamed(name: str) -> bool:
    return str(name).startswith("Unnamed:") or str(name).strip() == ""


def suggest_drops(frame: pd.DataFrame, label: str | None = None) -> dict[str, str]:
    """Columns to drop by default, each with the reason to show.

    Personal data (reason starting :data:`PEOPLE_REASON`), first: a column named like
    names, e-mail addresses, phone numbers or postal addresses (with more than two
    values), or one whose filled cells are mostly e-mail addresses, phone numbers,
    capitalised "Firstname Lastname" names or street addresses, repeats included.
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
        people = _people_reason(name, column, n_distinct, numeric)
        if people:
            out[str(name)] = people
            continue
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
