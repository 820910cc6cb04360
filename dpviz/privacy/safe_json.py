"""Reading JSON that users hand dpviz (schemas, model files) within bounds.

The size and the nesting depth are checked before the parser runs, so a file nested
thousands of levels deep or hundreds of megabytes long is one clear ``ValueError``,
never a ``RecursionError`` or an exhausted machine. A UTF-8 byte-order mark (Windows
editors write one) is accepted.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

# dpviz's own files nest at most 5 levels (a boosted model's tree levels).
MAX_NESTING = 64
BOM = "\ufeff"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def read_bounded(path: str | Path, max_bytes: int, what: str) -> bytes:
    """The bytes of the file at ``path``, reading at most ``max_bytes`` + 1 of them.

    The size a file system reports is not trusted: a device (``/dev/zero``), a pipe or a
    file growing while it is read is cut off after the limit, never read without bound.
    Raises ``ValueError`` naming ``what`` for a missing path, a folder or a file over
    the limit."""
    try:
        with open(path, "rb") as stream:
            data = stream.read(max_bytes + 1)
    except FileNotFoundError:
        raise ValueError(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{str(path)!r} is a folder, not a {what}") from None
    except PermissionError:
        raise ValueError(f"{what} {str(path)!r} cannot be read (permission denied)") from None
    if len(data) > max_bytes:
        raise ValueError(
            f"{what} {str(path)!r} is larger than the limit of {max_bytes:,} bytes — is it "
            "the right file?"
        )
    return data


def nesting_depth(text: str) -> int:
    """How deep brackets nest in ``text``, outside JSON strings."""
    skeleton = _STRING.sub('""', text).encode("utf-8", errors="replace")
    steps = _OPEN[np.frombuffer(skeleton, dtype=np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0))


def decode(data: str | bytes, what: str) -> str:
    """``data`` as text: UTF-8, a leading byte-order mark dropped."""
    if isinstance(data, bytes | bytearray):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{what} is not UTF-8 text (bad byte at position {exc.start}); save it as UTF-8"
            ) from None
    return data[1:] if data.startswith(BOM) else data


def parse_json(
    data: str | bytes,
    what: str,
    *,
    max_bytes: int,
    max_nesting: int = MAX_NESTING,
) -> Any:
    """Parse JSON ``data`` describing ``what`` (e.g. "the model file"), within bounds.

    Raises ``ValueError`` for a file over ``max_bytes``, not UTF-8, nested deeper than
    ``max_nesting`` or not valid JSON, with a message that says which.
    """
    size = len(data.encode("utf-8")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise ValueError(
            f"{what} is {size:,} bytes; the limit is {max_bytes:,} bytes — is it the right file?"
        )
    text = decode(data, what)
    depth = nesting_depth(text)
    if depth > max_nesting:
        raise ValueError(
            f"{what} nests {depth} levels deep; dpviz files nest at most {max_nesting} — "
            "it is not a file dpviz wrote"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not valid JSON ({exc}); it may be truncated") from None
    except (RecursionError, ValueError) as exc:
        # ValueError: an integer of thousands of digits (Python's int-string limit).
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ValueError(f"{what} cannot be read as JSON: {message}") from None
