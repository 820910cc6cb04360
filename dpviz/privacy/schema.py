"""The public schema: label, class list and each feature's public domain.

Differential privacy protects the records, not the schema: the classes and the
feature domains are assumed public and must come from the user. Inferring them
from the data reads the data without noise and voids the guarantee, so every
inference raises a :class:`PrivacyLeakWarning`.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MISSING = "<missing>"
MAX_CLASSES = 100
MAX_DISCRETE_VALUES = 1000
# A schema file larger than this is not a schema (10^5 features of 1000 values fit).
MAX_SCHEMA_BYTES = 64 * 2**20
# An integer column with at most this many distinct values is inferred as discrete.
DISCRETE_INTEGER_LIMIT = 10
# How a continuous feature treats a missing value (a public rule, the same in training
# and prediction): "drop" drops the row in training (prediction uses the domain's
# midpoint); "low" sets it to the public min, so every split on the feature sends it
# to the lower (left) child and the greedy trees' bins put it in the lowest bin.
MISSING_RULES = ("drop", "low")
INFERRED_NOTE = (
    "Read off the data: NOT public. Check or replace every value from public knowledge, "
    'then delete every "inferred" entry; until then dpviz treats this schema as inferred.'
)

# The only sentences a schema's declaration may hold: who declared the schema public, in
# words fixed before any record is read. A declaration travels into model files, reports
# and the ledger text, so nothing computed from the records (which range equals the data's
# min and max) may enter it (SPEC §1: every released byte is accounted for).
DECLARED_ON_DATA_PAGE = "Declared public by the data owner on the Data page."
DECLARED_BY_SCHEMA_UPLOAD = (
    "Declared public by the data owner, by uploading a schema file on the Data page."
)
DECLARED_BY_SCHEMA_OPTION = "Declared public by the user's --schema file."
DECLARATIONS = ("", DECLARED_ON_DATA_PAGE, DECLARED_BY_SCHEMA_UPLOAD, DECLARED_BY_SCHEMA_OPTION)


class PrivacyLeakWarning(UserWarning):
    """The privacy guarantee does not hold because public facts were read from the data."""


# A continuous domain is cut into equal-width bins and split at thresholds inside it: its
# width must be a finite float holding at least this many distinct steps.
DOMAIN_STEPS = 2**16


def _check_width(name: str, low: float, high: float) -> None:
    """``ValueError`` for a domain too wide for floats (its width overflows) or too narrow
    to cut into :data:`DOMAIN_STEPS` distinct steps."""
    if low == high:
        return
    width = high - low
    if not math.isfinite(width):
        raise ValueError(
            f"feature {name!r}: the domain [{low:g}, {high:g}] is too wide to split (its "
            "width overflows a float); give tighter public bounds or rescale the column"
        )
    if width / DOMAIN_STEPS < np.spacing(max(abs(low), abs(high))):
        raise ValueError(
            f"feature {name!r}: the domain [{low:g}, {high:g}] is too narrow to split (fewer "
            f"than {DOMAIN_STEPS:,} distinct numbers between its bounds); rescale the column "
            "or give wider public bounds"
        )


@dataclass(frozen=True)
class Feature:
    """One feature and its public domain.

    Continuous features carry ``[low, high]``; discrete ones their value list.
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    values: tuple[str, ...] = ()
    missing: str = "drop"

    def __post_init__(self) -> None:
        if self.missing not in MISSING_RULES:
            raise ValueError(
                f"feature {self.name!r}: missing must be one of {', '.join(MISSING_RULES)}, "
                f"not {self.missing!r}"
            )
        if self.kind == "continuous":
            if self.low is None or self.high is None:
                raise ValueError(f"continuous feature {self.name!r} needs a min and a max")
            if not (math.isfinite(self.low) and math.isfinite(self.high)):
                raise ValueError(f"feature {self.name!r}: min and max must be finite numbers")
            if self.low > self.high:
                raise ValueError(
                    f"feature {self.name!r}: min {self.low} is above max {self.high}; swap them"
                )
            _check_width(self.name, float(self.low), float(self.high))
        elif self.kind == "discrete":
            if len(self.values) == 0:
                raise ValueError(f"discrete feature {self.name!r} needs at least one value")
            if len(set(self.values)) != len(self.values):
                raise ValueError(f"discrete feature {self.name!r} lists a value twice")
            if len(self.values) > MAX_DISCRETE_VALUES:
                raise ValueError(
                    f"discrete feature {self.name!r} has {len(self.values)} values; at most "
                    f"{MAX_DISCRETE_VALUES} are supported — drop it or bin it first"
                )
        else:
            raise ValueError(
                f"feature {self.name!r}: type must be 'continuous' or 'discrete', "
                f"not {self.kind!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "continuous":
            out = {"name": self.name, "type": "continuous", "min": self.low, "max": self.high}
            if self.missing != "drop":
                out["missing"] = self.missing
            return out
        return {"name": self.name, "type": "discrete", "values": list(self.values)}


@dataclass(frozen=True)
class Schema:
    """Label column, public class list and public feature domains."""

    label: str
    classes: tuple[str, ...]
    features: tuple[Feature, ...]
    inferred: bool = field(default=False, compare=False)
    # Who declared the schema public, one of DECLARATIONS (data-independent words):
    # carried into model files, the ledger view and the report. Empty: none was made.
    declaration: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if self.declaration not in DECLARATIONS:
            raise ValueError(
                "a schema declaration says only who declared the schema public, in one of "
                "dpviz's fixed sentences (dpviz.privacy.schema.DECLARATIONS); nothing read "
                "from the records may go into it"
            )
        if len(self.classes) < 2:
            raise ValueError(
                f"label {self.label!r} needs at least 2 classes, got {len(self.classes)}; "
                "a classifier cannot learn from one class"
            )
        if len(self.classes) > MAX_CLASSES:
            raise ValueError(
                f"label {self.label!r} has {len(self.classes)} distinct values; dpviz "
                f"classifies into at most {MAX_CLASSES} classes — pick a categorical label "
                "column or bin this one"
            )
        if len(set(self.classes)) != len(self.classes):
            raise ValueError("the class list names a class twice")
        if not self.features:
            raise ValueError("the schema has no features besides the label")
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError("two features have the same name")
        if self.label in names:
            raise ValueError(f"the label {self.label!r} is also listed as a feature")

    @property
    def feature_names(self) -> list[str]:
        return [f.name for f in self.features]

    @property
    def continuous(self) -> list[Feature]:
        return [f for f in self.features if f.kind == "continuous"]

    @property
    def discrete(self) -> list[Feature]:
        return [f for f in self.features if f.kind == "discrete"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form. An inferred schema is marked ``"inferred": true`` at the top
        and on every feature, so that reading the file back keeps it inferred until a
        person removes the marks (see :data:`INFERRED_NOTE`)."""
        out: dict[str, Any] = {
            "label": self.label,
            "classes": list(self.classes),
            "features": [f.to_dict() for f in self.features],
        }
        if self.inferred:
            out = {"inferred": True, "inferred_note": INFERRED_NOTE, **out}
            out["features"] = [{**f, "inferred": True} for f in out["features"]]
        if self.declaration:
            out["declaration"] = self.declaration
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: Any) -> Schema:
        """Build a schema from its JSON form, with messages that say what to fix."""
        if not isinstance(data, dict):
            raise ValueError("a schema must be a JSON object with label, classes and features")
        for key in ("label", "classes", "features"):
            if key not in data:
                raise ValueError(f"the schema has no {key!r} entry")
        if not isinstance(data["classes"], list) or not isinstance(data["features"], list):
            raise ValueError("schema 'classes' and 'features' must be lists")
        features = []
        for i, item in enumerate(data["features"]):
            if not isinstance(item, dict) or "name" not in item or "type" not in item:
                raise ValueError(f"schema feature #{i + 1} needs a 'name' and a 'type'")
            if item["type"] == "continuous":
                try:
                    low, high = float(item["min"]), float(item["max"])
                except (KeyError, TypeError, ValueError):
                    raise ValueError(
                        f"continuous feature {item['name']!r} needs numeric 'min' and 'max'"
                    ) from None
                features.append(
                    Feature(
                        str(item["name"]),
                        "continuous",
                        low,
                        high,
                        missing=str(item.get("missing", "drop")),
                    )
                )
            else:
                if item["type"] != "discrete":
                    raise ValueError(
                        f"feature {item['name']!r}: type must be 'continuous' or 'discrete', "
                        f"not {item['type']!r}"
                    )
                values = item.get("values")
                if not isinstance(values, list):
                    raise ValueError(f"discrete feature {item['name']!r} needs a 'values' list")
                features.append(
                    Feature(
                        str(item["name"]),
                        str(item["type"]),
                        values=tuple(str(v) for v in values or ()),
                    )
                )
        # Any remaining "inferred" mark keeps the whole schema inferred (not public).
        inferred = bool(data.get("inferred")) or any(
            isinstance(item, dict) and bool(item.get("inferred")) for item in data["features"]
        )
        # Any other text (an older dpviz's sentence naming the data's min and max, or
        # a hand edit) is dropped: it would travel into the next model file.
        declaration = data.get("declaration", "")
        return cls(
            label=str(data["label"]),
            classes=tuple(str(c) for c in data["classes"]),
            features=tuple(features),
            inferred=inferred,
            declaration=declaration if declaration in DECLARATIONS else "",
        )

    @classmethod
    def from_json(cls, text: str | bytes, what: str = "the schema") -> Schema:
        """Parse a schema file's text (bounded size and nesting; a UTF-8 BOM is fine)."""
        from dpviz.privacy.safe_json import parse_json

        return cls.from_dict(parse_json(text, what, max_bytes=MAX_SCHEMA_BYTES))

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        from dpviz.privacy.safe_json import read_bounded

        data = read_bounded(path, MAX_SCHEMA_BYTES, "schema file")
        return cls.from_json(data, what=f"schema file {str(path)!r}")


# Label cells that mean "no label" (spreadsheets and pandas write NaN for an empty cell),
# unless a schema lists them as a class.
MISSING_LABELS = ("", "nan")


def missing_label(labels: pd.Series, classes: tuple[str, ...] = ()) -> np.ndarray:
    """Which label cells are missing: empty, blank or a literal "NaN" (any case) that is
    not one of ``classes``."""
    missing = labels.isna().to_numpy()
    # Decided on the distinct cells: a million labels hold a handful of them.
    text = pd.Series(labels.dropna().unique(), dtype=object).astype(str)
    marked = text[text.str.strip().str.lower().isin(MISSING_LABELS) & ~text.isin(classes)]
    if len(marked):
        missing |= labels.astype(str).isin(marked).to_numpy() & ~missing
    return missing


def _is_integer_valued(values: np.ndarray) -> bool:
    return bool(np.all(np.equal(np.floor(values), values)))


def _few_integers(values: np.ndarray) -> bool:
    """Whole numbers with at most ``DISCRETE_INTEGER_LIMIT`` distinct values (a code)."""
    return _is_integer_valued(values) and len(np.unique(values)) <= DISCRETE_INTEGER_LIMIT


def _is_number_dtype(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def infer_feature(name: str, column: pd.Series, *, numeric_is_continuous: bool = False) -> Feature:
    """Infer one feature's type and domain from data (leaks: see PrivacyLeakWarning)."""
    if _is_number_dtype(column.dtype):
        # An array of numbers already (scikit-learn style X): min, max and a cheap
        # integer test at memory speed, no per-cell conversion.
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        values = values[~np.isnan(values)]
        if len(values) and (numeric_is_continuous or not _few_integers(values)):
            if not np.all(np.isfinite(values)):
                raise ValueError(f"column {name!r} holds infinite values; remove them")
            return Feature(name, "continuous", float(values.min()), float(values.max()))
    # The distinct cells decide type and domain: parsing them, not every cell, keeps a
    # category column of a million rows to a handful of conversions.
    present = pd.Series(column.dropna().unique(), dtype=object)
    numeric = pd.to_numeric(present, errors="coerce")
    is_numeric = len(present) > 0 and not numeric.isna().any()
    if is_numeric:
        values = numeric.to_numpy(dtype=np.float64)
        if numeric_is_continuous or not _few_integers(values):
            if not np.all(np.isfinite(values)):
                raise ValueError(f"column {name!r} holds infinite values; remove them")
            return Feature(name, "continuous", float(values.min()), float(values.max()))
    labels = sorted({as_text(v) for v in present}, key=_natural_key)
    if column.isna().any():
        labels.append(MISSING)
    if not labels:
        raise ValueError(f"column {name!r} is empty; drop it")
    return Feature(name, "discrete", values=tuple(labels))


def as_text(value: Any) -> str:
    """Canonical text of a cell, so that 3, 3.0 and "3" name the same category."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _natural_key(text: str) -> tuple[int, float, str]:
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def infer_schema(
    frame: pd.DataFrame,
    label: str,
    *,
    numeric_is_continuous: bool = False,
    warn: bool = True,
) -> Schema:
    """Infer a schema from the data itself.

    This reads the raw data without noise: the class list and the domains it
    returns are not private, and a model trained with them is not ε-DP.
    A :class:`PrivacyLeakWarning` says so unless ``warn=False`` (for callers
    that show their own warning).
    """
    if label not in frame.columns:
        raise ValueError(
            f"label column {label!r} is not in the data; columns are: "
            + ", ".join(map(str, frame.columns[:20]))
        )
    if warn:
        warnings.warn(
            "the schema (class list and feature domains) was inferred from the data. "
            "This reads the raw records without noise, so the model is NOT differentially "
            "private; supply a public schema (--schema) for a real guarantee.",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    labels = frame[label][~missing_label(frame[label])]
    classes = _inferred_classes(label, labels.unique())
    features = tuple(
        infer_feature(str(c), frame[c], numeric_is_continuous=numeric_is_continuous)
        for c in frame.columns
        if c != label
    )
    return Schema(label=str(label), classes=tuple(classes), features=features, inferred=True)


def infer_numeric_schema(
    names: list[str], lows: np.ndarray, highs: np.ndarray, labels: np.ndarray, label: str
) -> Schema:
    """:func:`infer_schema` with ``numeric_is_continuous`` of a table of finite numbers
    with integer ``labels``, from each column's min and max (``lows``, ``highs``, which
    the caller computed anyway): the same schema without a data frame (a scikit-learn
    style fit on 30,000 × 10 spent ~5 ms in the frame's pass). Integers are never a
    missing label. Reads the raw data without noise: NOT private (the caller warns)."""
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise ValueError("infer_numeric_schema takes integer labels")
    classes = _inferred_classes(label, np.unique(labels))
    features = tuple(
        Feature(str(name), "continuous", float(low), float(high))
        for name, low, high in zip(names, lows, highs, strict=True)
    )
    return Schema(label=str(label), classes=tuple(classes), features=features, inferred=True)


def _inferred_classes(label: str, distinct) -> list[str]:
    """The classes of the distinct present labels, in natural order (at least 2, at most
    :data:`MAX_CLASSES`)."""
    classes = sorted({as_text(v) for v in distinct}, key=_natural_key)
    if len(classes) > MAX_CLASSES:
        raise ValueError(
            f"label {label!r} has {len(classes)} distinct values; dpviz classifies into at most "
            f"{MAX_CLASSES} classes — pick a categorical label column or bin this one"
        )
    if len(classes) < 2:
        found = f"only one class ({classes[0]!r})" if classes else "no values"
        raise ValueError(
            f"label {label!r} has {found}; a classifier needs at least 2 classes in the data"
        )
    return classes
