"""Safe output files: never over an input, never half written, safe in a spreadsheet.

* :func:`check_outputs` refuses an output path that names an input file (resolved
  paths, and the same file through a link), or two outputs that name one file.
* :func:`write_text` and :func:`write_csv` write to a temporary file in the target's
  folder and rename it over the target (``os.replace``), so a failure midway leaves
  the old file, or none, never a truncated one; a FIFO or ``/dev/stdout`` is written
  to as a stream.
* :func:`escape_formulas` prefixes text cells that a spreadsheet would run as a
  formula (``=``, ``+``, ``-``, ``@``, tab, CR) with an apostrophe; numbers, also
  negative ones, stay numbers.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _same_file(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(
    inputs: Iterable[str | Path | None], outputs: dict[str, str | Path | None]
) -> None:
    """Raise ``ValueError`` when an output path names an input file or another output,
    or lies in a folder that does not exist.

    ``outputs`` maps the option name (for the message, e.g. ``--out``) to its path;
    ``None`` entries (options not given) are skipped.
    """
    given_inputs = [Path(p).resolve() for p in inputs if p]
    seen: list[tuple[str, Path]] = []
    for option, raw in outputs.items():
        if not raw:
            continue
        path = Path(raw).resolve()
        if path.is_dir():
            raise ValueError(f"{option} {str(raw)!r} is a folder; give a file name")
        if not path.parent.is_dir():
            # Said before any work: a later output's missing folder must not leave the
            # earlier outputs written and the command failed.
            raise ValueError(f"{option} {str(raw)!r}: its folder does not exist; create it first")
        for source in given_inputs:
            if _same_file(path, source):
                raise ValueError(
                    f"{option} {str(raw)!r} is an input file of this command; writing there "
                    "would destroy it: choose another output file name"
                )
        for other, other_path in seen:
            if _same_file(path, other_path):
                raise ValueError(
                    f"{option} and {other} name the same file {str(raw)!r}; give each its own"
                )
        seen.append((option, path))


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) atomically: temporary file in the same folder, then rename."""
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` atomically: temporary file in the same folder, then rename.

    A target that exists and is not a regular file (a FIFO, ``/dev/stdout``, a terminal)
    is a stream: it is written to as it is, never replaced by a regular file."""
    target = Path(path)
    if target.exists() and not target.is_file():
        with target.open("wb") as stream:
            stream.write(data)
        return
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(f"the folder of {str(path)!r} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # The new file gets the usual permissions, not mkstemp's owner-only 0600.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _escape_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def escape_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose text cells (and column names) cannot start a spreadsheet formula.

    Only text is escaped: numeric columns, negative numbers included, are left as they
    are, and so are text cells that read as a plain number (``"-3.2"``).
    """
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column].dtype):
            values = out[column]
            text = values.map(lambda v: isinstance(v, str))
            numeric = pd.to_numeric(values.where(text), errors="coerce").notna()
            risky = text & ~numeric & values.map(lambda v: _escape_cell(v) is not v)
            if risky.any():
                out[column] = values.astype(object)
                out.loc[risky, column] = "'" + values[risky].astype(str)
    out.columns = [_escape_cell(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out


def csv_text(frame: pd.DataFrame, **kwargs) -> str:
    """``frame`` as CSV text with formula-like text cells escaped (for downloads)."""
    return escape_formulas(frame).to_csv(index=False, **kwargs)


def write_csv(path: str | Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` as CSV, formula-escaped, atomically."""
    write_text(path, csv_text(frame))
