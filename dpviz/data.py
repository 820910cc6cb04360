"""Reading CSV files and encoding records against a public schema."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from .schema import MISSING, Schema, as_text

MAX_UPLOAD_BYTES = 200 * 1024 * 1024
_SNIFF_BYTES = 64 * 1024


def read_csv(
    source: str | Path | IO[bytes] | bytes,
    *,
    max_bytes: int = MAX_UPLOAD_BYTES,
    min_columns: int = 2,
):
    """Read a CSV file into a DataFrame of strings (empty cells become NaN).

    Every cell stays text so that the schema, not pandas, decides which columns are
    numbers. Raises ``ValueError`` with a message a person can act on for files that
    are empty, binary, not UTF-8, too large or not delimited. ``min_columns=1`` accepts
    a single column (records to predict for a one-feature model carry no label).
    """
    raw = _read_bytes(source, max_bytes)
    if not raw.strip():
        raise ValueError("the file is empty: upload a CSV with a header row and data rows")
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise ValueError("the file looks binary (it contains NUL bytes), not a CSV text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ValueError(
            f"the file is not UTF-8 text (bad byte 0x{raw[exc.start]:02X} on line {line}, "
            f"position {exc.start}); save it as UTF-8 CSV and upload it again"
        ) from None
    delimiter = _sniff_delimiter(text[:_SNIFF_BYTES])
    try:
        frame = pd.read_csv(
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
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.shape[1] < min_columns:
        raise ValueError(
            "only one column was found: a classifier needs feature columns and a label "
            "column separated by commas (or semicolons or tabs)"
        )
    # pandas renames a repeated name (x, x -> x, x.1), so look at the header itself.
    first = next(csv.reader(io.StringIO(text[:_SNIFF_BYTES]), delimiter=delimiter), [])
    header = [c.strip() for c in first]
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
    return frame.apply(lambda col: col.str.strip())


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
        raw = path.read_bytes()
    else:
        raw = source.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise ValueError(_too_large(len(raw), max_bytes))
    return raw


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"the file is {_human_size(size)}; the limit is {_human_size(max_bytes)} "
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


def _sniff_delimiter(sample: str) -> str:
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


def encode(frame: pd.DataFrame, schema: Schema, *, training: bool = True) -> EncodedData:
    """Encode a DataFrame against the schema.

    For training, rows without a usable label or continuous value are dropped and
    counted. For prediction every row is kept: a missing continuous value takes the
    domain midpoint and an unknown discrete value makes the tree abstain (code -1).
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

    return _finish(continuous, discrete, y, keep, report, training)


def _labels(labels: pd.Series, schema: Schema, report: EncodingReport, keep: np.ndarray):
    """Class indices of the labels (-1: missing or unknown, dropped), counted."""
    missing = labels.isna().to_numpy()
    report.missing_label = int(missing.sum())
    y = _codes(labels, schema.classes)
    report.unknown_label = int(((y < 0) & ~missing).sum())
    keep &= y >= 0
    return y


def _check_continuous(values, feat, keep, report, training, text=None) -> None:
    """Missing values (dropped for training, the domain midpoint for prediction) and
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
        if training:
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


def _finish(continuous, discrete, y, keep, report, training) -> EncodedData:
    if training:
        if not keep.all():
            continuous, discrete, y = continuous[keep], discrete[keep], y[keep]
        report.clipped = {k: v for k, v in report.clipped.items() if v}
    report.rows_used = int(keep.sum()) if training else len(continuous)
    if training and report.rows_used == 0:
        raise ValueError(
            "no usable rows are left after dropping rows: " + "; ".join(report.messages())
        )
    return EncodedData(continuous, discrete, y, report)


def encode_array(
    X: np.ndarray, y: np.ndarray | None, schema: Schema, *, training: bool = True
) -> EncodedData:
    """:func:`encode` of a numeric array whose columns are the schema's features, all
    continuous, in order: the same records and report without building a DataFrame
    (the estimators' path for arrays; a DataFrame of 2.4M rows costs more than a fit)."""
    if schema.discrete or X.shape[1] != len(schema.continuous):
        raise ValueError("encode_array takes the continuous features of the schema only")
    report = EncodingReport(rows_in=len(X))
    keep = np.ones(len(X), dtype=bool)
    codes = _labels(pd.Series(y), schema, report, keep) if training else None
    continuous = np.asarray(X, dtype=np.float64)
    lows = np.array([f.low for f in schema.continuous])
    highs = np.array([f.high for f in schema.continuous])
    if len(X):
        # Read-only first: clean data (no missing value, all within the domains) is used
        # as it is, row-major (each record's values together, as the kernels read them).
        low, high = continuous.min(axis=0), continuous.max(axis=0)
        if np.isnan(low).any() or (low < lows).any() or (high > highs).any():
            continuous = np.array(continuous)  # a copy: imputed and clipped below
            for j, feat in enumerate(schema.continuous):
                _check_continuous(continuous[:, j], feat, keep, report, training)
    discrete = np.empty((len(X), 0), dtype=np.int32, order="F")
    return _finish(continuous, discrete, codes, keep, report, training)


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
