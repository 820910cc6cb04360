"""Currency, unit and date cells read as numbers, for :func:`dpviz.tabular.encode.read_csv`.

A column whose filled cells are mostly amounts with one currency sign or code
(``€5.914,00``, ``$1,234.50``, ``1.234,50 €``, ``EUR 12``, ``-$3.20``, ``(1,234.00)``) or
numbers with one unit (``12 %``, ``3,5 kg``) is read without the sign or unit; a column of
dates (``2020-01-31``, ``31.01.2020``, ``1/31/2020``, ``2020-01-31T08:30``) as days since
1970-01-01. Each column's distinct cells are parsed once, vectorised (pyarrow's regular
expressions, pandas' ``to_datetime`` with an explicit format), and mapped back to its
cells by their codes. Reading describes the data owner's own file: nothing here is
released, and a feature's public domain still comes from the schema.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# A number written with a decimal comma and optional dot (or space) thousands groups:
# 39,1 / -1.234,5 / 1234. Or with a decimal point and comma groups: 1,234.5 / 12.
# (The no-break space is a literal character: pyarrow's RE2 has no \u escape.)
DECIMAL_COMMA = r"[+-]?(?:\d{1,3}(?:[. " "\u00a0" r"]\d{3})+|\d+)(?:,\d+)?"
COMMA_GROUPS = r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# The signs and units that are stripped: a short explicit list, so that codes such as
# "A12" stay text. Currencies come before or after the amount, units after it.
CURRENCIES = ("€", "$", "£", "¥", "EUR", "USD", "GBP", "CHF", "JPY")
UNITS = ("%", "‰", "kg", "g", "km", "m", "cm", "mm", "h", "min", "s")
PERCENT = {"%": 100, "‰": 1000}
# A column converts when at least this share of its filled cells (other than missing
# tokens such as NA) parses; the others become missing and are counted ...
MOSTLY = 0.9
# ... and, for signs and units, at least this share carries the one sign or unit.
AFFIXED_SHARE = 0.5
# Cells a column's first look reads (evenly spaced): a column of names costs no parse.
_SAMPLE = 2000
EPOCH = pd.Timestamp("1970-01-01")


def _alternatives(words) -> str:
    # Longest first, so that "min" is not read as "m" followed by "in".
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SPACE = "[\\s\u00a0]*"
_AFFIXED = (
    rf"^(?P<open>\(?)(?P<sign>[-+]?){_SPACE}(?P<pre>(?:{_alternatives(CURRENCIES)})?)"
    rf"{_SPACE}(?P<sign2>[-+]?){_SPACE}(?P<num>\d(?:[\d., "
    "\u00a0"
    r"]*\d)?)"
    rf"{_SPACE}(?P<post>(?:{_alternatives(CURRENCIES + UNITS)})?)(?P<close>\)?)$"
)
# An ISO timestamp (with or without seconds; a date alone among them reads as midnight).
_ISO_TIME = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
# Date formats: (name in notes, cell shape, pandas format; None: day/month order decided
# from the values). ISO8601 reads timestamps with or without seconds.
DATE_FORMATS = (
    ("yyyy-mm-dd", r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d"),
    ("yyyy-mm-ddThh:mm[:ss]", _ISO_TIME, "ISO8601"),
    ("dd.mm.yyyy", r"\d{1,2}\.\d{1,2}\.\d{4}", "%d.%m.%Y"),
    ("slashes", r"(?P<first>\d{1,2})/(?P<second>\d{1,2})/\d{4}", None),
)


def _looks(column: pd.Series, shape: str) -> float:
    """The share of a sample of the column's filled cells that fully match ``shape``."""
    # Sampled before dropping empty cells: no pass over a million cells.
    sample = column.iloc[:: max(1, len(column) // _SAMPLE)].dropna()
    if sample.empty:
        return 0.0
    found = pc.match_substring_regex(pa.array(sample.astype(str)), f"^(?:{shape})$")
    return pc.mean(found).as_py()


class _Distinct:
    """A column's distinct cells (``values``: missing tokens such as NA as nulls, which
    parse as nothing), the number of cells of each, and the codes that map them back."""

    def __init__(self, column: pd.Series, missing_tokens):
        self.column = column
        self.codes, uniques = pd.factorize(column)
        self.originals = pa.array(np.asarray(uniques, dtype=object), type=pa.large_string())
        self.token = pc.is_in(self.originals, value_set=pa.array(list(missing_tokens)))
        self.token = self.token.to_numpy(zero_copy_only=False)
        self.values = pc.if_else(self.token, pa.scalar(None, pa.large_string()), self.originals)
        self.counts = np.bincount(self.codes[self.codes >= 0], minlength=len(self.originals))
        self.total = int(self.counts[~self.token].sum())  # cells there are to read

    def cells(self, converted: pa.Array) -> pd.Series:
        """Each cell's converted text (NaN for empty cells and cells that did not
        parse), in the column's text dtype."""
        column = self.column
        taken = pc.take(converted, pa.array(self.codes, mask=self.codes < 0))
        if isinstance(column.dtype, pd.StringDtype):  # Arrow-backed: no Python strings
            text = taken.to_pandas(types_mapper=lambda _t: column.dtype).array
        else:
            text = taken.to_numpy(zero_copy_only=False)
            text[~_flags(pc.is_valid(taken))] = np.nan  # missing cells are NaN, as read
        return pd.Series(text, index=column.index, name=column.name, dtype=column.dtype)

    def lost(self, ok: np.ndarray) -> str:
        """The note's tail counting the filled cells that became missing: missing
        tokens (``NA``) and cells that did not parse, with examples."""
        tail = ""
        token = self.token & (self.counts > 0)
        if token.any():
            listed = ", ".join(repr(v) for v in self.originals.filter(token).to_pylist())
            n = int(self.counts[token].sum())
            tail += f"; {n:,} {'cell' if n == 1 else 'cells'} {listed} read as missing values"
        lost = ~ok & ~self.token & (self.counts > 0)
        if lost.any():
            shown = ", ".join(repr(v) for v in self.originals.filter(lost)[:3].to_pylist())
            tail += (
                f"; {int(self.counts[lost].sum()):,} other cells that do not read so became "
                f"missing values (such as {shown})"
            )
        return tail


def _flags(condition: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, null as False."""
    return pc.fill_null(condition, False).to_numpy(zero_copy_only=False)


def _matches(values: pa.Array, shape: str) -> np.ndarray:
    return _flags(pc.match_substring_regex(values, f"^(?:{shape})$"))


def _plain(numbers: pa.Array, counts: np.ndarray, file_comma: bool) -> tuple[pa.Array, bool]:
    """Numbers (text, null where absent) in plain notation, null where they do not
    follow the column's convention, and whether that convention is the decimal comma.
    The decision is :func:`dpviz.tabular.encode.normalise_numbers`' own: decimal commas
    when more cells read so, comma thousands when more read so, the file's convention
    when both read alike (``1,234``)."""
    comma, groups = _matches(numbers, DECIMAL_COMMA), _matches(numbers, COMMA_GROUPS)
    in_comma, in_groups = counts[comma].sum(), counts[groups].sum()
    decimal_comma = bool(in_comma > in_groups or (in_comma == in_groups and file_comma))
    null = pa.scalar(None, numbers.type)
    if decimal_comma:
        plain = pc.replace_substring_regex(numbers, "[. \u00a0]", "")
        return pc.if_else(comma, pc.replace_substring(plain, ",", "."), null), True
    return pc.if_else(groups, pc.replace_substring(numbers, ",", ""), null), False


def affixed_numbers(
    name: str, column: pd.Series, file_comma: bool, missing_tokens
) -> tuple[pd.Series, str] | None:
    """``column`` read without its one currency sign (or code) or unit, in plain
    notation (text), and the note saying so; None when its filled cells are not mostly
    (:data:`MOSTLY`) such numbers. ``file_comma``: the file writes decimals with commas
    (decides ``€1,234``). Percentages keep the number as written (``12 %`` is 12)."""
    if _looks(column, _AFFIXED) < AFFIXED_SHARE:
        return None
    cells = _Distinct(column, missing_tokens)
    parts = pc.extract_regex(cells.values, _AFFIXED)
    matched = _flags(pc.is_valid(parts))
    names = ("open", "sign", "pre", "sign2", "post", "close")
    field = {f: pc.struct_field(parts, f) for f in names}
    part = {f: ~_flags(pc.not_equal(v, "")) for f, v in field.items()}  # each part absent?
    parens = ~part["open"] & ~part["close"]
    affix = pc.if_else(part["pre"], field["post"], field["pre"])
    ok = (
        matched
        & (part["open"] == part["close"])
        & (part["pre"] | part["post"])
        & ~(parens & ~(part["sign"] & part["sign2"]))
    )
    bare = part["pre"] & part["post"]
    used = pc.unique(affix.filter(ok & ~bare)).to_pylist()
    if len(used) != 1:
        return None  # no sign, or several (amounts in € and $ do not compare)
    used = used[0]
    with_affix = ok & _flags(pc.equal(affix, used))
    ok &= bare | with_affix  # a bare number counts, another unit does not
    if cells.counts[with_affix].sum() < AFFIXED_SHARE * cells.total:
        return None
    numbers = pc.if_else(ok, pc.struct_field(parts, "num"), pa.scalar(None, pa.large_string()))
    plain, decimal_comma = _plain(numbers, cells.counts, file_comma)
    ok &= _flags(pc.is_valid(plain))
    if cells.counts[ok].sum() < MOSTLY * cells.total:
        return None
    negative = (
        parens | _flags(pc.equal(field["sign"], "-")) | _flags(pc.equal(field["sign2"], "-"))
    )
    dash, empty = pa.scalar("-", plain.type), pa.scalar("", plain.type)
    minus = pc.binary_join_element_wise(dash, plain, empty)
    plain = pc.if_else(negative, minus, plain)
    # The longest amount as the example: it shows the thousands separator if any.
    length = pc.utf8_length(cells.originals).to_numpy(zero_copy_only=False)
    shown = int(np.argmax(np.where(with_affix & ok, length, -1)))
    before, after = cells.originals[shown].as_py(), plain[shown].as_py()
    what = f"amounts in {used!r}" if used in CURRENCIES else f"numbers with the unit {used!r}"
    how = " written with decimal commas" if decimal_comma else ""
    kept = (
        f", as written ({before!r} as {after}, not divided by {PERCENT[used]})"
        if used in PERCENT
        else f" ({before!r} as {after})"
    )
    note = f"column {name!r} holds {what}{how}: read as numbers without {used!r}{kept}"
    return cells.cells(plain), note + cells.lost(ok)


def date_numbers(
    name: str, column: pd.Series, day_first: bool, missing_tokens
) -> tuple[pd.Series, str] | None:
    """``column`` of dates as days since 1970-01-01 (text; timestamps keep the fraction
    of a day), and the note naming the format; None when its filled cells are not mostly
    (:data:`MOSTLY`) dates of one format. ``d/m/yyyy`` or ``m/d/yyyy`` is decided by a
    part above 12, else ``day_first`` is assumed (and the note says so)."""
    shapes = [_looks(column, shape) for _, shape, _ in DATE_FORMATS]
    best = int(np.argmax(shapes))
    if shapes[best] < AFFIXED_SHARE:
        return None
    label, shape, fmt = DATE_FORMATS[best]
    cells = _Distinct(column, missing_tokens)
    matched = _matches(cells.values, shape)
    if cells.counts[matched].sum() < MOSTLY * cells.total:
        return None
    assumed = ""
    if fmt is None:
        parts = pc.extract_regex(cells.values.filter(matched), f"^{shape}$")
        first, second = (
            pc.max(pc.cast(pc.struct_field(parts, f), pa.int64())).as_py() > 12
            for f in ("first", "second")
        )
        if first and second:
            return None  # both orders occur: not one date format
        day_first = first or (day_first and not second)
        if not (first or second):
            assumed = " assumed: no part is above 12 to tell the day from the month" + (
                ", and the file writes numbers the European way" if day_first else ""
            )
        fmt, label = ("%d/%m/%Y", "dd/mm/yyyy") if day_first else ("%m/%d/%Y", "mm/dd/yyyy")
    text = pd.Series(cells.values.to_pandas()).where(matched)
    stamps = pd.to_datetime(text, format=fmt, errors="coerce")
    days = ((stamps - EPOCH) / pd.Timedelta(days=1)).to_numpy(dtype=np.float64)
    ok = ~np.isnan(days)
    if cells.counts[ok].sum() < MOSTLY * cells.total:
        return None
    whole = bool(np.all(days[ok] == np.floor(days[ok])))
    numbers = pa.array(days, mask=~ok)
    converted = pc.cast(pc.cast(numbers, pa.int64()) if whole else numbers, pa.large_string())
    shown = int(np.flatnonzero(ok)[0])
    note = (
        f"column {name!r} holds dates ({label}{assumed}): read as days since 1970-01-01 "
        f"({cells.originals[shown].as_py()!r} as {converted[shown].as_py()})"
    )
    return cells.cells(converted), note + cells.lost(ok)
