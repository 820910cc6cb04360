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

# Names of label columns, best first (most specific first: seaborn's titanic has both
# "survived" and a "class" feature). Matched on the whole name or on every word of it
# (is_fraud, target_class), case and accents ignored; common French, German, Spanish,
# Italian, Dutch and Portuguese words for label, target, class and result included.
TARGET_NAMES = (
    "label", "labels", "target", "y", "outcome", "response", "survived", "diagnosis",
    "churn", "churned", "attrition", "fraud", "fraudulent", "approved", "species", "class",
    "etiqueta", "etiquette", "etichetta", "cible", "objetivo", "ziel", "zielvariable",
    "doel", "alvo", "classe", "klasse", "clase", "especie", "espece", "resultado",
    "resultat", "ergebnis", "risultato", "uitkomst",
)  # fmt: skip
# Target names that well-known files also use for a feature (bank marketing's "default",
# German credit's "status", a census "income"): they win only after the last column.
AMBIGUOUS_TARGET_NAMES = (
    "default", "status", "result", "quality", "income", "decision", "disease", "spam",
    "risk", "grade", "category", "variety", "rating", "exited", "readmitted",
    "subscribed", "converted", "purchased", "claim",
)  # fmt: skip
# Words around a target name that keep it one: is_fraud, y_true, fraud_flag, churn_yn.
TARGET_FILLERS = (
    "is", "has", "was", "did", "the", "true", "yn", "flag", "binary", "final", "var",
)  # fmt: skip
# Words of columns a data owner does not mean as the label: demographic attributes (a
# model that predicts them profiles people). Guessed only when nothing else qualifies.
DEMOGRAPHIC_WORDS = (
    "gender", "sex", "race", "ethnicity", "ethnic", "age", "nationality", "native",
    "citizenship", "marital", "married", "religion", "religious", "disability",
    "orientation", "pregnant", "genero", "sexe", "geschlecht", "sesso", "geslacht",
    "edad", "alter", "idade", "leeftijd", "raza", "raca", "rasse", "etnia", "ethnie",
    "nacionalidad", "nationalite", "nazionalita", "nacionalidade", "religione",
    "religiao", "civil", "familienstand",
)  # fmt: skip
# Whole names of date columns, passed over likewise (penguins end with "year").
DATE_NAMES = ("year", "month", "day", "date", "week", "time", "timestamp", "datetime")
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


def _plain_words(name) -> list[str]:
    """:func:`_words` with accents dropped: ``Géschlecht`` -> geschlecht."""
    text = unicodedata.normalize("NFKD", str(name).replace("ß", "ss"))
    return _words(text.encode("ascii", "ignore").decode())


def _people_by_name(name) -> str:
    """What people-like values a column's name announces ("" for none)."""
    words = _plain_words(name)
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
    """The number of distinct values when 2..GUESS_MAX_CLASSES and each repeats on
    average (a column of 20 distinct values in 20 rows holds no classes), else 0."""
    k = int(column.nunique(dropna=True))
    return k if 2 <= k <= GUESS_MAX_CLASSES and 2 * k <= column.count() else 0


def _is_text(column: pd.Series) -> bool:
    present = pd.Series(column.dropna().unique(), dtype=object)
    return bool(len(present)) and pd.to_numeric(present, errors="coerce").isna().any()


def _target_rank(words: list[str], names: tuple[str, ...]) -> int | None:
    """Rank in ``names`` of a column name's words when they name a target: the whole
    name (``Class``, ``Zielvariable``) or target words with fillers only (``is_fraud``,
    ``target_class``: best rank of its words, after every whole name); else None."""
    joined = "".join(words)
    if joined in names:
        return names.index(joined)
    core = [w for w in words if w not in TARGET_FILLERS]
    known = TARGET_NAMES + AMBIGUOUS_TARGET_NAMES
    if core and all(w in known for w in core) and any(w in names for w in core):
        return len(names) + min(names.index(w) for w in core if w in names)
    return None


def _not_label(name, drops: set) -> bool:
    """A column the guess passes over while anything else qualifies: suggested drops
    (IDs, personal data, free text), ID or personal-data names, demographic attributes
    (:data:`DEMOGRAPHIC_WORDS`) and dates (:data:`DATE_NAMES`)."""
    words = _plain_words(name)
    return (
        name in drops
        or "".join(words) in ID_NAMES + DATE_NAMES
        or any(w in ID_WORDS or w in DEMOGRAPHIC_WORDS for w in words)
        or bool(_people_by_name(name))
    )


def guess_label(frame: pd.DataFrame | Iterable[str], drops: Iterable[str] = ()) -> str:
    """A likely label column, read from the data (a guess: the user must check it).

    In order: a column named like a target (:data:`TARGET_NAMES`, whole name before
    target words with fillers such as ``is_fraud``, earlier in the list first, a later
    column on a tie) with 2..``GUESS_MAX_CLASSES`` values (``label``, ``target`` and
    ``class`` with any number); else the last column with 2..``GUESS_MAX_CLASSES``
    values (exports usually put the target last); else a column with an ambiguous
    target name (:data:`AMBIGUOUS_TARGET_NAMES`, such as ``income`` or ``status``);
    else one with a target word anywhere in its name (``default.payment.next.month``);
    else the last such text column, else the last such column. Suggested drops, ID and
    personal-data names, demographic attributes (``gender``, ``race``, ``age``, …) and
    dates are passed over unless nothing else has 2..``GUESS_MAX_CLASSES`` values;
    then the last kept column. A list of names (no data) uses the names only.
    Reads the records (distinct counts): for the data owner, never released.
    """
    if not isinstance(frame, pd.DataFrame):
        columns = [str(c) for c in frame]
        frame = pd.DataFrame({c: ["a", "b"] * 2 for c in columns}, columns=columns)
    dropped = set(drops)
    columns = list(frame.columns)
    kept = [c for c in columns if c not in dropped] or columns
    low = {name: _low_cardinality(frame[name]) for name in columns}
    candidates = [c for c in columns if low[c] and not _not_label(c, dropped)]
    # A column called "label" is meant as the label even with one class or many (the
    # schema then says why it cannot be used), and even if suggested as a drop.
    always = {"label", "target", "class"}
    named = [c for c in columns if "".join(_plain_words(c)) in always]
    last = kept[-1]
    tiers = (
        lambda: _best_named(set(candidates) | set(named), columns, TARGET_NAMES),
        lambda: last if last in candidates else None,
        lambda: _best_named(candidates, columns, AMBIGUOUS_TARGET_NAMES),
        lambda: _best_named(candidates, columns, TARGET_NAMES + AMBIGUOUS_TARGET_NAMES, True),
        lambda: next((c for c in reversed(candidates) if _is_text(frame[c])), None),
        lambda: candidates[-1] if candidates else None,
        lambda: next((c for c in reversed(kept) if low[c]), None),
    )
    for tier in tiers:
        found = tier()
        if found is not None:
            return str(found)
    return str(last)


def _best_named(names: Iterable, columns: list, targets: tuple[str, ...], anywhere=False):
    """The column of ``names`` whose name ranks best in ``targets`` (a later column on a
    tie); ``anywhere``: a target word anywhere in the name counts. None if none."""
    best, best_key = None, None
    for name in names:
        words = _plain_words(name)
        if anywhere:
            hits = [targets.index(w) for w in words if w in targets]
            rank = min(hits) if hits else None
        else:
            rank = _target_rank(words, targets)
        key = (rank, -columns.index(name))
        if rank is not None and (best_key is None or key < best_key):
            best, best_key = name, key
    return best
