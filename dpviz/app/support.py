"""Datasets the app works on: bundled demos and uploaded CSVs, each with its schema.

No streamlit here, so that everything is unit-tested. Uploaded files arrive as bytes:
``read_uploaded_csv`` and ``read_uploaded_schema`` raise ``ValueError`` with a message
to show the user. Privacy: a :class:`PreparedData` holds raw records; it lives in one
browser session's state only and is never cached across sessions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from dpviz.evaluation.demos import DEMOS, load_demo
from dpviz.privacy.schema import Schema, infer_schema
from dpviz.tabular.columns import guess_label as _guess_label
from dpviz.tabular.encode import (
    ARROW_TEXT,
    EncodedData,
    Progress,
    encode,
    parsed_numbers,
    read_csv,
)

INFERRED_SCHEMA_WARNING = (
    "No schema was uploaded, so the class list and every feature's domain (min/max, value "
    "list) were inferred from the uploaded records themselves. That reads the raw data "
    "without noise and can reveal an individual's value (for example the largest one), "
    "so the differential-privacy guarantee is VOID: whatever ε you choose, the model is "
    "NOT ε-DP. Upload a schema JSON written from public knowledge for a real guarantee."
)
NOT_PRIVATE_DIAGNOSTICS = "not private (computed from the raw data)"
# The largest upload, in MB. .streamlit/config.toml sets the same server.maxUploadSize
# (a test checks they agree); this copy also guards files that bypass the browser.
UPLOAD_LIMIT_MB = 200
# The memory one session's upload may take (its text frame and the encoded copy that
# training makes, :func:`dpviz.tabular.encode.frame_memory`): two large uploads at once must not
# take the server down. A 150 MB, 3.3 M-row, 15-column file is estimated at 0.9 GB (its
# Arrow-backed frame measured 0.5 GB).
SESSION_MEMORY_BUDGET = 3 * 2**30


@dataclass(frozen=True, eq=False)
class PreparedData:
    """Records and schema ready to train on, and where the schema came from.

    ``frame_id`` names the records (a content hash, or ``demo:<id>``) so that the app
    can tell whether a model was trained on the current dataset.
    """

    name: str
    frame: pd.DataFrame
    schema: Schema
    schema_note: str  # why the schema is public, or INFERRED_SCHEMA_WARNING
    frame_id: str = ""
    source: str = "upload"
    # Checks of the schema against the records (a range equal to the data's min and
    # max): NOT private, shown to the data owner on screen and never released.
    owner_warnings: tuple[str, ...] = ()

    @property
    def schema_public(self) -> bool:
        return not self.schema.inferred

    @property
    def fingerprint(self) -> tuple:
        """Equal for the same records with the same schema (and the same public status)."""
        return (self.frame_id or str(id(self.frame)), self.schema, self.schema.inferred)

    def training_records(self) -> EncodedData:
        """The records encoded for training (:func:`~dpviz.tabular.encode.encode`), made
        once and kept with this dataset, read-only: the Data page's report, Train, Curves,
        Negotiate, peers and the attack share one encoding instead of parsing the text
        cells again on every click. ``ValueError`` (not kept) when no row is usable."""
        kept = self.__dict__.get("_training")
        if kept is None:
            # Continuous columns of a large upload parsed by pyarrow at once (same encoding).
            frame = parsed_numbers(self.frame, [f.name for f in self.schema.continuous])
            kept = encode(frame, self.schema, training=True)
            for values in (kept.continuous, kept.discrete, kept.y):
                values.flags.writeable = False
            # A frozen dataclass: the cache is not a field, so equality and repr ignore it.
            object.__setattr__(self, "_training", kept)
        return kept

    def keep_encoding_of(self, other: PreparedData) -> None:
        """Take over ``other``'s training encoding when it describes the same records
        under the same schema (the Data page makes a new dataset object on each run)."""
        kept = other.__dict__.get("_training")
        if kept is not None and other.fingerprint == self.fingerprint:
            object.__setattr__(self, "_training", kept)


def frame_id(frame: pd.DataFrame) -> str:
    """A content hash of a DataFrame (values and column names)."""
    if len(frame.columns) and all(dtype == ARROW_TEXT for dtype in frame.dtypes):
        # A large upload (Arrow-backed text): hash each column's distinct values and
        # codes, which pyarrow finds without turning 50 million cells into Python str.
        digest = hashlib.sha1(b"arrow")
        for name in frame.columns:
            cells = pd.Categorical(frame[name])
            digest.update(pd.util.hash_array(cells.categories.to_numpy(dtype=object)).tobytes())
            digest.update(cells.codes.tobytes())
    else:
        digest = hashlib.sha1(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    digest.update("\x1f".join(map(str, frame.columns)).encode())
    return digest.hexdigest()[:16]


def read_uploaded_csv(data: bytes, progress: Progress | None = None) -> pd.DataFrame:
    """An uploaded CSV's bytes as a DataFrame of text (``ValueError`` if unusable: empty,
    binary, not UTF-8, one column, no data rows, over ``UPLOAD_LIMIT_MB``, or needing
    more than ``SESSION_MEMORY_BUDGET``, ...). ``progress(fraction, message)`` hears
    about each step of reading."""
    if not isinstance(data, bytes | bytearray):
        raise ValueError("no file content was received; upload the CSV again")
    return read_csv(
        data if isinstance(data, bytes) else bytes(data),
        max_bytes=int(UPLOAD_LIMIT_MB * 2**20),
        memory_budget=int(SESSION_MEMORY_BUDGET),
        progress=progress,
    )


def read_uploaded_schema(data: bytes) -> Schema:
    """An uploaded schema JSON's bytes as a Schema (``ValueError`` if unusable)."""
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the schema file is not UTF-8 text; it should be a JSON file") from None
    return Schema.from_json(text)


def guess_label(columns: Sequence[str] | pd.DataFrame, drops: Sequence[str] = ()) -> str:
    """A likely label column (:func:`dpviz.tabular.columns.guess_label`): a low-cardinality
    column named like a target, read from the data when a DataFrame is given."""
    return _guess_label(columns, drops)


def prepare_demo(demo_id: str) -> PreparedData:
    """A bundled demo with its public schema (public data: safe to cache)."""
    frame, schema = load_demo(demo_id)
    demo = DEMOS[demo_id]
    return PreparedData(
        demo.title,
        frame,
        schema,
        "Public schema: " + demo.schema_public_because,
        frame_id=f"demo:{demo_id}",
        source="demo",
    )


def prepare_upload(
    frame: pd.DataFrame, label: str, schema: Schema | None = None, name: str = "upload"
) -> PreparedData:
    """Pair uploaded records with the uploaded schema, or infer one (void guarantee)."""
    if label not in frame.columns:
        raise ValueError(f"label column {label!r} is not in the file")
    if schema is not None:
        if schema.label != label:
            raise ValueError(
                f"the schema names {schema.label!r} as the label but {label!r} is selected; "
                "choose the schema's label column or fix the schema"
            )
        missing = [f for f in schema.feature_names if f not in frame.columns]
        if missing:
            raise ValueError("the file lacks the schema's columns: " + ", ".join(missing[:10]))
        return PreparedData(
            name, frame, schema, "Public schema: the schema file you uploaded.", frame_id(frame)
        )
    inferred = infer_schema(frame, label, warn=False)
    return PreparedData(name, frame, inferred, INFERRED_SCHEMA_WARNING, frame_id(frame))
