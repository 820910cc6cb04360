"""Reading CSV files (any common delimiter, decimal commas, thousands separators, R's NA)
and encoding records against a public schema (with its public missing-value rules)."""

from __future__ import annotations

import codecs
import csv
import io
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from dpviz.privacy.schema import MISSING, Schema, as_text, missing_label
from dpviz.tabular import cell_formats as _cell_formats
from dpviz.tabular.ranges import clip_columns
from dpviz.tabular.ranges import column_ranges as _column_ranges

MAX_UPLOAD_BYTES = 200 * 1024 * 1024
_SNIFF_BYTES = 64 * 1024


# Files from this size on are parsed by pyarrow into Arrow-backed text columns (about a
# fifth of the memory of Python strings, and ten times faster); smaller files take
# pandas' parser, whose messages the bad-input corpus pins. Both give text cells with
# NaN for empty ones.
ARROW_FROM_BYTES = 16 * 1024 * 1024
# pandas' text dtype backed by Arrow, with NaN (not pd.NA) for missing cells, so that
# code written for object columns of str keeps working.
ARROW_TEXT = pd.StringDtype("pyarrow", na_value=np.nan)
# Bytes per cell beyond its text: Arrow's 8-byte offset and validity bit; a Python str
# object and its pointer; the encoded float64 or int32 copy that training makes.
_ARROW_CELL, _OBJECT_CELL, _ENCODED_CELL = 9, 60, 8

Progress = Callable[[float, str], None]


def frame_memory(n_rows: int, n_columns: int, text_bytes: int, *, arrow: bool = True) -> int:
    """Bytes a session needs for an upload of ``n_rows`` × ``n_columns`` cells holding
    ``text_bytes`` of text: the frame of text cells (Arrow-backed or Python strings)
    plus the encoded copy that training makes. An estimate from public sizes."""
    cells = n_rows * n_columns
    per_cell = (_ARROW_CELL if arrow else _OBJECT_CELL) + _ENCODED_CELL
    return int(text_bytes + cells * per_cell)


def check_memory(
    n_rows: int,
    n_columns: int,
    text_bytes: int,
    budget: int | None,
    *,
    arrow: bool = True,
    when: str = "",
) -> None:
    """Refuse (``ValueError``) an upload whose :func:`frame_memory` exceeds ``budget``."""
    if budget is None:
        return
    need = frame_memory(n_rows, n_columns, text_bytes, arrow=arrow)
    if need > budget:
        raise ValueError(
            f"{n_rows:,} rows × {n_columns} columns would need about {need / 2**30:.1f} GB "
            f"of memory{when}; the limit per session is {budget / 2**30:.1f} GB. Upload a "
            "sample of the rows or fewer columns, or train with the CLI "
            "(`python -m dpviz train --local-cluster 2`, which reads the file in partitions)"
        )


def read_csv(
    source: str | Path | IO[bytes] | bytes,
    *,
    max_bytes: int = MAX_UPLOAD_BYTES,
    min_columns: int = 2,
    memory_budget: int | None = None,
    progress: Progress | None = None,
):
    """Read a CSV file into a DataFrame of strings (empty cells become NaN).

    Every cell stays text so that the schema, not pandas, decides which columns are
    numbers; numbers written with decimal commas or thousands separators are rewritten
    in plain notation and ``NA``-like cells of number columns become missing
    (:func:`normalise_numbers`), with one note per change in
    ``frame.attrs["read_notes"]``. Raises ``ValueError`` with a message a person can
    act on for files that are empty, binary, not UTF-8, too large or not delimited,
    and, given a ``memory_budget`` in bytes, for files whose frame would need more
    (:func:`frame_memory`, estimated before parsing and checked after).
    ``min_columns=1`` accepts a single column (records to predict for a one-feature
    model carry no label). Files of ``ARROW_FROM_BYTES`` or more are parsed by pyarrow
    into Arrow-backed text columns (``ARROW_TEXT``); ``progress(fraction, message)``
    hears about each step.
    """
    say = progress or (lambda _f, _m: None)
    raw = _read_bytes(source, max_bytes)
    if not raw.strip():
        raise ValueError("the file is empty: upload a CSV with a header row and data rows")
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise ValueError("the file looks binary (it contains NUL bytes), not a CSV text file")
    carriage_returns = b"\r" in raw and b"\n" not in raw
    if carriage_returns:
        # Classic Mac OS line endings (a lone CR): read each CR as a line break.
        raw = raw.replace(b"\r", b"\n")
    # The sample is enough to sniff the delimiter; pyarrow checks the rest is UTF-8,
    # and when it refuses, decoding the whole file below says where the bad byte is.
    sample = raw[: 4 * _SNIFF_BYTES].decode("utf-8-sig", errors="ignore")
    delimiter = sniff_delimiter(sample[:_SNIFF_BYTES])
    # The whole header line, however long: a repeated name far to the right is found too.
    header_line = raw.split(b"\n", 1)[0].decode("utf-8-sig", errors="ignore")
    first = next(csv.reader(io.StringIO(header_line), delimiter=delimiter), [])
    header = [c.strip() for c in first]
    rows = max(raw.count(b"\n") - 1, 1) if memory_budget is not None else 0
    frame = None
    if len(raw) >= ARROW_FROM_BYTES:
        check_memory(rows, len(header), len(raw), memory_budget, when=" once read")
        say(0.1, f"parsing {_human_size(len(raw))} with pyarrow")
        frame = _read_arrow(raw, delimiter, header)
    if frame is None:
        say(0.1, "checking the text encoding")
        text = _decode(raw)
        if len(raw) >= ARROW_FROM_BYTES:
            # pyarrow refused the file: pandas reads it (or says which line is wrong).
            check_memory(
                rows, len(header), len(raw), memory_budget, arrow=False, when=" once read"
            )
        say(0.2, "parsing")
        frame = _read_pandas(text, delimiter)
        del text
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.shape[1] < min_columns:
        raise ValueError(
            "only one column was found: a classifier needs feature columns and a label "
            "column separated by commas (or semicolons or tabs)"
        )
    # pandas renames a repeated name (x, x -> x, x.1), so look at the header itself.
    named = [c for c in header if c]
    if len(set(named)) != len(named):
        dup = next(c for i, c in enumerate(named) if c in named[:i])
        raise ValueError(
            f"the header names column {dup!r} twice; rename one "
            "(or, if the first row is data, add a header row)"
        )
    unnamed = [c for c in frame.columns if c.startswith("Unnamed:")]
    if len(unnamed) == frame.shape[1]:
        raise ValueError("the first row has no column names: the file needs a header row")
    if frame.empty:
        raise ValueError("the file has a header but no data rows")
    arrow = all(dtype == ARROW_TEXT for dtype in frame.dtypes)
    if memory_budget is not None:
        check_memory(len(frame), frame.shape[1], _text_bytes(frame), memory_budget, arrow=arrow)
    if not arrow:  # pyarrow's reader trimmed the cells already
        say(0.6, "trimming spaces around cells")
        frame = frame.apply(lambda col: col.str.strip())
    say(0.75, "checking how numbers are written")
    frame, notes = normalise_numbers(frame, delimiter)
    if carriage_returns:
        cr = "lines end in a lone carriage return (classic Mac OS): read as line breaks"
        notes = [cr, *notes]
    # What reading changed, for the caller to show (CLI notes, the Data page).
    frame.attrs["read_notes"] = notes
    say(1.0, f"read {len(frame):,} rows × {frame.shape[1]} columns")
    return frame


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"the file is not UTF-8 text (bad byte 0x{raw[exc.start]:02X} on line {line}, "
            f"position {exc.start}); save it as UTF-8 CSV and upload it again"
        ) from None


def _read_pandas(text: str, delimiter: str) -> pd.DataFrame:
    try:
        return pd.read_csv(
            io.StringIO(text),
            sep=delimiter,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            skipinitialspace=True,
        )
    except pd.errors.EmptyDataError:
        raise ValueError("the file has no columns: it needs a header row") from None
    except pd.errors.ParserError as exc:
        raise ValueError(_parser_message(str(exc), delimiter)) from None


def _read_arrow(raw: bytes, delimiter: str, header: list[str]) -> pd.DataFrame | None:
    """A large file parsed by pyarrow into Arrow-backed text columns, or None when the
    header is unusual (empty or repeated names) or pyarrow refuses the file: pandas'
    parser then reads it and words the error."""
    named = [c for c in header if c]
    if len(named) != len(header) or len(set(named)) != len(named):
        return None
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(raw[3:] if raw.startswith(codecs.BOM_UTF8) else raw),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(header, pa.large_string()),
                strings_can_be_null=True,
                null_values=[""],
                quoted_strings_can_be_null=True,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError, pa.ArrowTypeError):
        return None
    if table.num_columns != len(header):
        return None
    # Cells are trimmed as pandas' parser and read_csv's strip do for small files; a
    # cell of spaces becomes empty, hence missing.
    columns = {}
    for name, column in zip(header, table.columns):
        trimmed = pc.utf8_trim_whitespace(column)
        columns[name] = pc.if_else(pc.equal(trimmed, ""), pa.scalar(None, trimmed.type), trimmed)
    del table
    frame = pa.table(columns).to_pandas(types_mapper=lambda _t: ARROW_TEXT, self_destruct=True)
    frame.columns = header
    return frame


def to_numbers(column: pd.Series) -> pd.Series:
    """A text column as float64, NaN where a cell is not a number (as
    ``pd.to_numeric(errors="coerce")``). Arrow-backed columns are cast by pyarrow when
    every cell parses (ten times faster); otherwise pandas parses them."""
    if column.dtype == ARROW_TEXT:
        try:
            values = pc.cast(pa.array(column.array), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            values = None
        if values is not None:
            out = values.to_numpy(zero_copy_only=False)
            # pyarrow reads 1e400 as inf where pandas says "not a number": let pandas say.
            if not np.isinf(out).any():
                return pd.Series(out, index=column.index, name=column.name)
    return pd.to_numeric(column, errors="coerce").astype(np.float64)


def parsed_numbers(frame: pd.DataFrame, names) -> pd.DataFrame:
    """The frame with each Arrow-backed text column of ``names`` as float64 where that
    is exact: pyarrow parses every filled cell, none to NaN or infinity. :func:`encode`
    then gives the same result (to_numeric of a float column is the column) without
    parsing text cell by cell; other columns stay text, so encode still names a cell
    that holds text."""
    fixed = {}
    for name in names:
        column = frame[name] if name in frame.columns else None
        if column is None or column.dtype != ARROW_TEXT:
            continue
        try:
            values = pc.cast(pa.array(column.array), pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        out = values.to_numpy(zero_copy_only=False)
        if np.isfinite(out).sum() == len(out) - values.null_count:
            fixed[name] = pd.Series(out, index=column.index, name=name)
    return frame.assign(**fixed) if fixed else frame


def _text_bytes(frame: pd.DataFrame) -> int:
    """The bytes of text a frame holds (exact and cheap for Arrow-backed columns)."""
    total = 0
    for name in frame.columns:
        column = frame[name]
        if column.dtype == ARROW_TEXT:
            total += pa.array(column.array).nbytes
        else:
            total += int(column.str.len().sum())
    return total


# How numbers are written (decimal commas, comma thousands) is decided as for currency
# and unit cells (``_cell_formats``).
_DECIMAL_COMMA, _COMMA_GROUPS = _cell_formats.DECIMAL_COMMA, _cell_formats.COMMA_GROUPS
_THOUSANDS_DOTS = r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d+)"
# Cells that mean "no value" in a column that otherwise holds numbers (R writes NA).
MISSING_TOKENS = ("NA", "N/A", "n/a", "na", "NaN", "nan", "null", "NULL", "None", "?", "-")
_FIRST_LOOK = 1000  # distinct values checked before all of them
_FEW_CELLS = 50  # unreadable distinct cells parsed one by one, to find 1e309


def _reads_as_numbers(values: pd.Series) -> bool:
    # The first values settle most text columns without parsing a million of them.
    return bool(values.size) and all(
        not pd.to_numeric(part, errors="coerce").isna().any()
        for part in (values.iloc[:_FIRST_LOOK], values)
    )


def _not_finite(values: pd.Series) -> np.ndarray:
    """Which distinct cells are numbers no domain can hold: ``inf``, ``-Infinity``, or
    beyond a float (``1e309``). A column that otherwise holds numbers reads them as
    missing, with a note, instead of turning into a category of every value."""
    numbers = pd.to_numeric(values, errors="coerce")
    found = np.isinf(numbers.to_numpy(dtype=np.float64))
    unread = np.flatnonzero(numbers.isna().to_numpy() & ~values.isin(MISSING_TOKENS).to_numpy())
    if 0 < len(unread) <= _FEW_CELLS:  # a few odd cells of a number column, not a text one
        for i in unread:
            try:
                found[i] = math.isinf(float(values.iloc[i]))
            except (TypeError, ValueError):
                pass
    return found


def _all_match(values: pd.Series, pattern: str) -> bool:
    return all(part.str.fullmatch(pattern).all() for part in (values.iloc[:_FIRST_LOOK], values))


def normalise_numbers(frame: pd.DataFrame, delimiter: str = ",") -> tuple[pd.DataFrame, list[str]]:
    """Read locale-formatted numbers as numbers, and R's ``NA`` as missing.

    A column whose every cell is a number written with a decimal comma (``39,1``,
    ``1.234,5``) or with comma thousands groups (``1,234.5``) is rewritten in plain
    notation (``39.1``, ``1234.5``); cells such as ``NA`` or ``?`` in a column that
    otherwise holds numbers become missing. ``1,234`` alone is ambiguous: it is read
    as a decimal comma when the file is ``;``-separated, else as thousands. In a file
    with decimal commas, a number column written like ``3.750`` reads as 3750. A column of
    amounts with one currency sign or code, or of numbers with one unit (``€1.234,50``,
    ``12 %``), is read without it, and a column of dates as days since 1970-01-01
    (:mod:`dpviz.tabular.cell_formats`; a ``;``-separated file or decimal commas elsewhere
    decide ``€1,234`` and ``1/2/2020`` the European way). Returns the frame (text cells,
    as :func:`read_csv`) and one note per change.
    """
    notes = []
    out = {}
    others = []  # text columns: currency, unit or date cells?
    for name in frame.columns:
        column = frame[name]
        present = column.dropna()
        distinct = pd.Series(present.unique(), dtype=object)
        if distinct.empty:
            continue
        infinite = _not_finite(distinct)
        if not infinite.any() and _reads_as_numbers(distinct):
            continue
        missing = distinct.isin(MISSING_TOKENS).to_numpy() | infinite
        tokens, values = distinct[missing], distinct[~missing]
        if values.empty:
            continue
        mapping = None
        if not _reads_as_numbers(values):
            comma = _all_match(values, _DECIMAL_COMMA)
            groups = _all_match(values, _COMMA_GROUPS)
            if comma and (not groups or delimiter == ";"):
                plain = values.str.replace(r"[.\u00a0 ]", "", regex=True).str.replace(",", ".")
                example = values[values.str.contains(",")]
                shown = example.iloc[0] if len(example) else values.iloc[0]
                notes.append(
                    f"column {name!r} uses decimal commas: read as numbers "
                    f"({shown!r} as {plain[values == shown].iloc[0]})"
                )
            elif groups:
                plain = values.str.replace(",", "")
                shown = values[values.str.contains(",")].iloc[0]
                notes.append(
                    f"column {name!r} uses comma thousands separators: read as numbers "
                    f"({shown!r} as {plain[values == shown].iloc[0]})"
                )
            else:
                others.append(name)
                continue
            mapping = dict(zip(values, plain))
        if len(tokens):
            count = int(present.isin(tokens).sum())
            listed = ", ".join(repr(t) for t in tokens)
            notes.append(f"column {name!r}: {count} cells {listed} read as missing values")
        if mapping is None and not len(tokens):
            continue
        replaced = column.where(~column.isin(tokens))
        out[name] = replaced.map(mapping).where(replaced.notna()) if mapping else replaced
    file_comma = delimiter == ";" or any("decimal commas" in n for n in notes)
    for name in others:
        read = _cell_formats.affixed_numbers(name, frame[name], file_comma, MISSING_TOKENS)
        read = read or _cell_formats.date_numbers(name, frame[name], file_comma, MISSING_TOKENS)
        if read:
            out[name] = read[0]
            notes.append(read[1])
    if any("decimal commas" in n for n in notes):
        # The file writes decimals with commas, so in its other number columns a dot
        # followed by groups of three digits ("3.750") is a thousands separator.
        for name in frame.columns:
            if name in out:
                continue
            distinct = pd.Series(frame[name].dropna().unique(), dtype=object)
            dotted = distinct[distinct.str.contains(".", regex=False)]
            if (
                len(dotted)
                and distinct.str.fullmatch(_THOUSANDS_DOTS).all()
                and _reads_as_numbers(distinct)
            ):
                shown = dotted.iloc[0]
                notes.append(
                    f"column {name!r} uses dots as thousands separators, as the file "
                    f"writes decimals with commas: read {shown!r} as {shown.replace('.', '')}"
                )
                out[name] = frame[name].str.replace(".", "", regex=False)
    if out:
        frame = frame.assign(**out)
    return frame, notes


def numeric_suspects(frame: pd.DataFrame, min_values: int = 50) -> dict[str, str]:
    """Columns that would become discrete with more than ``min_values`` distinct values
    although most of those look like numbers: column -> why, and the fix."""
    out = {}
    for name in frame.columns:
        distinct = pd.Series(frame[name].dropna().unique(), dtype=object)
        if len(distinct) <= min_values:
            continue
        numbers = pd.to_numeric(distinct, errors="coerce")
        bad = distinct[numbers.isna()]
        if 0 < len(bad) and numbers.notna().sum() > min_values and len(bad) < len(distinct) / 2:
            shown = ", ".join(repr(v) for v in bad.iloc[:3])
            out[str(name)] = (
                f"column {str(name)!r} has {len(distinct)} distinct values, "
                f"{int(numbers.notna().sum())} of them numbers, but {len(bad)} are not "
                f"(for example {shown}), so it would be read as a discrete feature with "
                f"{len(distinct)} categories. Read it as numbers (the {len(bad)} other "
                "values become missing), or fix those cells in the file."
            )
    return out


def as_numbers(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """The frame with ``columns`` read as numbers: cells that are not become missing."""
    columns = [c for c in columns if c in frame.columns]
    if not columns:
        return frame
    fixed = {
        c: pd.to_numeric(frame[c], errors="coerce").map(lambda v: f"{v!r}", na_action="ignore")
        for c in columns
    }
    return frame.assign(**fixed)


def _read_bytes(source, max_bytes: int) -> bytes:
    if isinstance(source, bytes):
        raw = source
    elif isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise ValueError(f"file {str(path)!r} does not exist")
        if path.is_dir():
            raise ValueError(f"{str(path)!r} is a folder, not a CSV file")
        if path.stat().st_size > max_bytes:
            raise ValueError(_too_large(path.stat().st_size, max_bytes))
        # The reported size is not trusted (a device or a pipe reports 0): read at most
        # one byte past the limit.
        with path.open("rb") as stream:
            raw = stream.read(max_bytes + 1)
    else:
        raw = source.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(_too_large(len(raw), max_bytes, known=False))
    return raw


def _too_large(size: int, max_bytes: int, known: bool = True) -> str:
    """``known``: ``size`` is the file's size, not just how far reading got."""
    what = _human_size(size) if known else f"larger than {_human_size(max_bytes)}"
    return (
        f"the file is {what}; the limit is {_human_size(max_bytes)} "
        "— sample it first, or use the CLI on a machine with more memory"
    )


def _human_size(n: int) -> str:
    if n < 2**10:
        return f"{n} bytes"
    if n < 2**20:
        return f"{n / 2**10:.1f} KB"
    return f"{n / 2**20:.1f} MB"


def _parser_message(error: str, delimiter: str) -> str:
    """Say which line is ragged, instead of pandas' tokenizer message."""
    found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", error)
    if found:
        want, line, saw = found.groups()
        return (
            f"line {line} has {saw} fields but the header has {want}; fix that row, or "
            f"quote values that contain the delimiter {delimiter!r}"
        )
    detail = error.replace("Error tokenizing data. C error: ", "").strip()
    return f"the file is not a well-formed CSV: {detail}"


def sniff_delimiter(sample: str) -> str:
    """The delimiter of a CSV ``sample`` (comma, semicolon, tab or bar; a comma when it
    cannot tell). The last line is left out when the sample cut it short."""
    lines = sample.splitlines()
    if len(lines) > 1 and not sample.endswith("\n"):
        lines = lines[:-1]
    try:
        return csv.Sniffer().sniff("\n".join(lines[:50]), delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


@dataclass
class EncodingReport:
    """What encoding did to the records: rows dropped, values clipped (not private)."""

    rows_in: int = 0
    rows_used: int = 0
    missing_label: int = 0
    unknown_label: int = 0
    missing_continuous: dict[str, int] = field(default_factory=dict)
    missing_discrete: dict[str, int] = field(default_factory=dict)
    unknown_discrete: dict[str, int] = field(default_factory=dict)
    clipped: dict[str, int] = field(default_factory=dict)
    imputed: dict[str, int] = field(default_factory=dict)
    routed_low: dict[str, int] = field(default_factory=dict)

    def messages(self) -> list[str]:
        out = []
        if self.missing_label:
            out.append(f"{self.missing_label} rows had no label and were dropped")
        if self.unknown_label:
            out.append(f"{self.unknown_label} rows had a label outside the class list (dropped)")
        for name, n in self.missing_continuous.items():
            out.append(f"{n} rows had no value for continuous {name!r} and were dropped")
        for name, n in self.missing_discrete.items():
            out.append(f"{n} missing values of {name!r} became the category {MISSING!r}")
        for name, n in self.unknown_discrete.items():
            out.append(f"{n} rows had a value of {name!r} outside its value list (dropped)")
        for name, n in self.clipped.items():
            out.append(f"{n} values of {name!r} were outside its domain and were clipped")
        for name, n in self.imputed.items():
            out.append(f"{n} missing values of {name!r} were set to its domain midpoint")
        for name, n in self.routed_low.items():
            out.append(
                f"{n} missing values of {name!r} go to its lower branch (set to its public "
                "min, the feature's missing-value rule)"
            )
        return out

    def to_dict(self) -> dict:
        return {**self.__dict__, "messages": self.messages()}


@dataclass
class EncodedData:
    """Records as arrays: continuous values, discrete codes and class indices."""

    continuous: np.ndarray
    discrete: np.ndarray
    y: np.ndarray | None
    report: EncodingReport

    @property
    def n_records(self) -> int:
        return self.continuous.shape[0]


def encode(
    frame: pd.DataFrame, schema: Schema, *, training: bool = True, require_rows: bool = True
) -> EncodedData:
    """Encode a DataFrame against the schema.

    For training, rows without a usable label or continuous value are dropped and
    counted. For prediction every row is kept: a missing continuous value takes the
    domain midpoint and an unknown discrete value makes the tree abstain (code -1).
    A continuous feature whose public rule is ``missing="low"`` keeps the row in both:
    its missing values take the domain's min, so every split sends them to the lower
    child (a rule from the schema, not from the data: privacy is unaffected).
    A label cell that is empty or a literal "NaN" (not a declared class) is missing.
    ``require_rows=False`` (one partition of a larger dataset) allows no usable rows.
    """
    missing_cols = [name for name in schema.feature_names if name not in frame.columns]
    if missing_cols:
        raise ValueError(
            "the data lacks the schema's feature columns: " + ", ".join(missing_cols[:10])
        )
    report = EncodingReport(rows_in=len(frame))
    keep = np.ones(len(frame), dtype=bool)
    y = None
    if training:
        if schema.label not in frame.columns:
            raise ValueError(f"label column {schema.label!r} is not in the data")
        y = _labels(frame[schema.label], schema, report, keep)

    # Column-major: each column is filled and checked in one contiguous pass.
    continuous = np.empty((len(frame), len(schema.continuous)), dtype=np.float64, order="F")
    for j, feat in enumerate(schema.continuous):
        text = frame[feat.name]
        # Imputation and clipping work on the copy in ``continuous``: the parsed values
        # may share memory with the caller's frame.
        values = continuous[:, j]
        values[:] = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
        _check_continuous(values, feat, keep, report, training, text)

    discrete = np.empty((len(frame), len(schema.discrete)), dtype=np.int32, order="F")
    for j, feat in enumerate(schema.discrete):
        column = frame[feat.name]
        nan = column.isna().to_numpy()
        codes = _codes(column.fillna(MISSING), feat.values)
        if nan.any() and MISSING in feat.values:
            report.missing_discrete[feat.name] = int(nan.sum())
        unknown = codes < 0
        if unknown.any():
            if training:
                report.unknown_discrete[feat.name] = int((unknown & keep).sum())
                keep &= ~unknown
            else:
                report.unknown_discrete[feat.name] = int(unknown.sum())
        discrete[:, j] = codes

    return _finish(continuous, discrete, y, keep, report, training, require_rows)


def _labels(labels: pd.Series, schema: Schema, report: EncodingReport, keep: np.ndarray):
    """Class indices of the labels (-1: missing or unknown, dropped), counted."""
    missing = missing_label(labels, schema.classes)
    report.missing_label = int(missing.sum())
    y = np.where(missing, -1, _codes(labels, schema.classes)).astype(np.int32)
    report.unknown_label = int(((y < 0) & ~missing).sum())
    keep &= y >= 0
    return y


def _check_continuous(values, feat, keep, report, training, text=None) -> None:
    """Missing values (the public min under ``missing="low"``; else dropped for training,
    the domain midpoint for prediction) and
    values outside the domain (clipped) of one continuous column, in place."""
    nan = np.isnan(values)
    if nan.any():
        bad = nan & text.notna().to_numpy() if text is not None else nan[:0]
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"continuous column {feat.name!r} holds text ({text.iloc[row]!r} in data "
                f"row {row + 1}); fix the value or declare the column discrete"
            )
        if feat.missing == "low":
            report.routed_low[feat.name] = int(nan.sum())
            values[nan] = feat.low
        elif training:
            report.missing_continuous[feat.name] = int((nan & keep).sum())
            keep &= ~nan
        else:
            report.imputed[feat.name] = int(nan.sum())
            values[nan] = 0.5 * (feat.low + feat.high)
    # Without missing values, min and max (no temporaries) tell whether any is outside.
    if len(values) and (nan.any() or values.min() < feat.low or values.max() > feat.high):
        outside = (values < feat.low) | (values > feat.high)
        if outside.any():
            report.clipped[feat.name] = int((outside & keep).sum())
            np.clip(values, feat.low, feat.high, out=values)


def _finish(
    continuous, discrete, y, keep, report, training, require_rows: bool = True
) -> EncodedData:
    if training:
        if not keep.all():
            continuous, discrete, y = continuous[keep], discrete[keep], y[keep]
        report.clipped = {k: v for k, v in report.clipped.items() if v}
    report.rows_used = int(keep.sum()) if training else len(continuous)
    if training and require_rows and report.rows_used == 0:
        raise ValueError(
            "no usable rows are left after dropping rows: " + "; ".join(report.messages())
        )
    return EncodedData(continuous, discrete, y, report)


def encode_array(
    X: np.ndarray,
    y: np.ndarray | None,
    schema: Schema,
    *,
    training: bool = True,
    ranges: tuple[np.ndarray, np.ndarray] | None = None,
) -> EncodedData:
    """:func:`encode` of a numeric array whose columns are the schema's features, all
    continuous, in order: the same records and report without building a DataFrame
    (the estimators' path for arrays; a DataFrame of 2.4M rows costs more than a fit).
    ``ranges``: each column's (min, max) when the caller has them (one pass less)."""
    if schema.discrete or X.shape[1] != len(schema.continuous):
        raise ValueError("encode_array takes the continuous features of the schema only")
    report = EncodingReport(rows_in=len(X))
    keep = np.ones(len(X), dtype=bool)
    codes = None
    if training:
        codes = _integer_labels(y, schema, report, keep)
        if codes is None:
            codes = _text_labels(y, schema, report)
        if codes is None:
            codes = _labels(pd.Series(y), schema, report, keep)
    continuous = np.asarray(X, dtype=np.float64)
    lows = np.array([f.low for f in schema.continuous])
    highs = np.array([f.high for f in schema.continuous])
    if len(X):
        # Read-only first: clean data (no missing value, all within the domains) is used
        # as it is, row-major (each record's values together, as the kernels read them).
        low, high = _column_ranges(continuous) if ranges is None else ranges
        if np.isnan(low).any() or (low < lows).any() or (high > highs).any():
            clipped = None if training else clip_columns(continuous, schema, report)
            if clipped is not None:
                continuous = clipped  # (a prediction's copy, in one compiled pass)
            else:
                continuous = np.array(continuous)  # a copy: imputed and clipped below
                for j, feat in enumerate(schema.continuous):
                    _check_continuous(continuous[:, j], feat, keep, report, training)
    discrete = np.empty((len(X), 0), dtype=np.int32, order="F")
    return _finish(continuous, discrete, codes, keep, report, training)


def _integer_labels(y, schema: Schema, report: EncodingReport, keep: np.ndarray):
    """:func:`_labels` of an integer array, by a lookup table over its value range (no
    hashing of millions of labels); None for other labels or a range too wide."""
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind not in "iu" or not len(y):
        return None
    low, high = int(y.min()), int(y.max())
    if high - low >= 1 << 20:
        return None
    table = np.full(high - low + 1, -1, dtype=np.int32)
    for index, name in enumerate(schema.classes):
        try:
            value = int(name)
        except ValueError:
            continue
        # The class named by this integer's text (as_text: "3" but not "03" or "3.0").
        if str(value) == name and low <= value <= high:
            table[value - low] = index
    codes = table[np.subtract(y, low, dtype=np.int64)]  # no overflow of small types
    report.missing_label = 0  # integers are never empty, blank or "NaN"
    report.unknown_label = int((codes < 0).sum())
    keep &= codes >= 0
    return codes


def _text_labels(y, schema: Schema, report: EncodingReport):
    """:func:`_labels` of a numpy text array whose every label is one of the classes,
    by one comparison per class (pandas' missing-label test and categories took ~5 ms
    of a 30,000-row fit); None when some label is not a class (a missing or unknown
    one: :func:`_labels` counts those)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.dtype.kind != "U" or not len(y):
        return None
    codes = np.full(len(y), -1, dtype=np.int32)
    for index, name in enumerate(schema.classes):
        codes[y == name] = index  # a cell's text is the string itself (as_text)
    if (codes < 0).any():
        return None
    report.missing_label = report.unknown_label = 0
    return codes


def _codes(column: pd.Series, values: tuple[str, ...]) -> np.ndarray:
    """Index of each cell's text in ``values`` (-1 where absent or missing).

    Only the distinct cells are turned into text: a column of a million labels has a
    handful of them."""
    cells = pd.Categorical(column)
    lookup = {v: i for i, v in enumerate(values)}
    index = np.array([lookup.get(as_text(c), -1) for c in cells.categories], dtype=np.int32)
    return np.where(cells.codes >= 0, index[cells.codes] if len(index) else -1, -1).astype(
        np.int32
    )
