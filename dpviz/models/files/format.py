"""The container every dpviz model file shares (behind :mod:`dpviz.models.files.load`).

Its format names and version, the size limits of an export and of a file read back,
bounded reading and compact writing (:class:`ReleasedFile`, the base of the three released
models), the checks every reader runs on the document (format, version, schema, classes,
feature order) and the value checks the readers build on (whole numbers, finite numbers,
rows of noisy counts, node lists that form a tree).
"""

from __future__ import annotations

import json
import math
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from dpviz.models.objective import ACCURACY, check_objective, decide
from dpviz.models.trees.depth import MAX_DEPTH
from dpviz.models.trees.features import feature_order
from dpviz.models.trees.space import EXPORT_FRONTIER_BYTES as EXPORT_FRONTIER_BYTES
from dpviz.models.trees.space import MAX_EXPORT_NODES as MAX_EXPORT_NODES
from dpviz.models.trees.space import export_node_limit as export_node_limit
from dpviz.models.trees.threshold import NEVER
from dpviz.privacy.noise import NOT_PRIVATE_NOTE
from dpviz.privacy.safe_json import parse_json, read_bounded
from dpviz.privacy.schema import Schema
from dpviz.privacy.signing import NOT_VERIFIED, NOT_VERIFIED_NOTE, signature, unverified_reason
from dpviz.tabular.outputs import write_text

FORMAT = "dpviz-forest"
TREE_FORMAT = "dpviz-tree"
BOOST_FORMAT = "dpviz-boost"
KINDS = {FORMAT: "forest", TREE_FORMAT: "greedy tree", BOOST_FORMAT: "boosted trees"}
# The registry algorithms each format holds (a file naming another is not dpviz's).
ALGORITHMS_OF = {
    FORMAT: ("fletcher_islam", "jpw"),
    TREE_FORMAT: ("friedman_schuster", "dpea"),
    BOOST_FORMAT: ("dpboost",),
}
FORMAT_VERSION = 1
REPLAYABLE = f"replayable from a seed ({NOT_PRIVATE_NOTE})"
# The export limits (MAX_EXPORT_NODES, export_node_limit) live with the trees, since a
# release draws every leaf within them; the model files name them from here.
# The largest model file dpviz reads: an export of MAX_EXPORT_NODES nodes is ~100 MB.
MAX_MODEL_BYTES = 256 * 2**20


def dpviz_version() -> str:
    try:
        return version("dpviz")
    except PackageNotFoundError:
        return "0.1.0"


def noise_mode(model) -> str:
    """ "secret" (fresh OS secret, never stored) or the NOT-private replayable label."""
    return "secret" if model.noise_seed is None else REPLAYABLE


# --- reading and writing ----------------------------------------------------------------------


def read_bytes(path: str | Path) -> bytes:
    """A model file's bytes (``ValueError`` if missing, a folder or over the size limit;
    a device or pipe is read no further than the limit)."""
    return read_bounded(path, MAX_MODEL_BYTES, "model file")


def parse_document(text: str | bytes) -> Any:
    """The parsed model file: bounded in size and nesting, UTF-8 (a BOM is fine)."""
    return parse_json(text, "the model file", max_bytes=MAX_MODEL_BYTES)


def check_document(doc: Any, expected: str, required: tuple[str, ...]) -> tuple[dict, Schema]:
    """The checks every model file passes: format, version, schema, classes, features."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt != expected:
        if isinstance(fmt, str) and fmt in KINDS:
            raise ValueError(
                f"this is a dpviz {KINDS[fmt]} model ('format': '{fmt}'), not a "
                f"{KINDS[expected]}; read it with dpviz.load_model"
            )
        raise ValueError(f"this is not a dpviz model file (no 'format': '{expected}')")
    if type(doc.get("version")) is not int or doc.get("version") != FORMAT_VERSION:
        raise ValueError(
            f"model format version {doc.get('version')!r} is not supported "
            f"(this dpviz reads version {FORMAT_VERSION})"
        )
    missing = [k for k in ("schema", "classes", "feature_order", *required) if k not in doc]
    if missing:
        raise ValueError("the model file lacks: " + ", ".join(missing))
    known = ALGORITHMS_OF[expected]
    if doc.get("algorithm", known[0]) not in known:
        raise ValueError(
            f"the model's 'algorithm' {doc['algorithm']!r} is not one a dpviz {KINDS[expected]} "
            f"file holds ({', '.join(known)})"
        )
    schema = Schema.from_dict(doc["schema"])
    if not isinstance(doc["classes"], list):
        raise ValueError("the model's 'classes' must be a list of class names")
    if [str(c) for c in doc["classes"]] != list(schema.classes):
        raise ValueError("the model's class list does not match its schema")
    if doc["feature_order"] != feature_order(schema):
        raise ValueError("the model's feature order does not match its schema")
    return doc, schema


def document_json(fmt: str, schema: Schema, meta: dict, body: dict) -> str:
    """The file's text: format, version, writer, schema, then ``meta`` and ``body``, and
    this installation's signature of all of them (:mod:`dpviz.privacy.signing`), unless
    ``meta`` has a ``claim`` field (a claim not verified: such a file is never signed)."""
    document = {
        "format": fmt,
        "version": FORMAT_VERSION,
        "dpviz_version": dpviz_version(),
        "schema": schema.to_dict(),
        **{k: v for k, v in meta.items() if k != "signature"},
        **body,
    }
    if "claim" in document:
        document["claim"] = NOT_VERIFIED
    else:
        document["signature"] = signature(document)
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


class ReleasedFile:
    """What every released model shares: its file's text, saving, reading, ``predict``.

    A subclass names its ``format`` and its ``body`` (the key, and the attribute, of what
    the file lists besides its parameters), and defines ``from_document`` (the checks of a
    parsed file) and ``predict_proba``.
    """

    format: ClassVar[str]
    body: ClassVar[str]
    meta: dict[str, Any]
    schema: Schema
    classes_: np.ndarray
    # Why the privacy claim is not verified (set when a file is read), or None.
    claim_reason: str | None = None

    @property
    def claim_verified(self) -> bool:
        """Whether this installation vouches for the privacy claim: the model was released
        here, or read from a file this installation signed and nobody edited since. An
        unverified model still predicts; its files are written unsigned and marked."""
        return "claim" not in self.meta

    @property
    def claim_note(self) -> str | None:
        """The note every view of an unverified model shows (None when verified)."""
        if self.claim_verified:
            return None
        return NOT_VERIFIED_NOTE + (f" ({self.claim_reason})" if self.claim_reason else "")

    def to_json(self) -> str:
        return document_json(
            self.format, self.schema, self.meta, {self.body: getattr(self, self.body)}
        )

    def save(self, path: str | Path) -> None:
        write_text(path, self.to_json())

    @classmethod
    def from_json(cls, text: str | bytes) -> Self:
        """Parse and validate a model file; any defect is a ValueError saying what is wrong."""
        return cls.from_document(parse_document(text))

    @classmethod
    def load(cls, path: str | Path) -> Self:
        return cls.from_json(read_bytes(path))

    @classmethod
    def meta_of(cls, doc: dict) -> tuple[dict[str, Any], str | None]:
        """A checked document's parameters (all but the container's keys, the signature and
        the body) and why its privacy claim is not verified (None when it is). An
        unverified document's parameters carry ``"claim": "not verified"``."""
        reason = unverified_reason(doc)
        skip = ("format", "version", "schema", "signature", "claim", cls.body)
        meta = {k: v for k, v in doc.items() if k not in skip}
        # A file written before objectives existed predicts as it did: accuracy.
        check_objective(meta.get("objective", ACCURACY))
        if meta.get("decision_threshold") is not None:
            number_in(meta, "decision_threshold", 0.0, NEVER)
        if reason is not None:
            meta["claim"] = NOT_VERIFIED
        return meta, reason

    @property
    def objective(self) -> str:
        """What ``predict`` optimises (the file's public setting; "accuracy" in a file
        that names none)."""
        return self.meta.get("objective", ACCURACY)

    @property
    def decision_prior(self) -> np.ndarray:
        """The class prior the objective weighs by: the file's ``decision_prior``
        (post-processing of its released counts), uniform (public) if it has none."""
        k = len(self.classes_)
        prior = self.meta.get("decision_prior")
        return np.full(k, 1.0 / k) if prior is None else np.asarray(prior, dtype=np.float64)

    @property
    def decision_threshold(self) -> float | None:
        """The threshold on class 1's score the file's own objective cuts at (``macro_f1``,
        or the default forest's ``accuracy`` cut; post-processing of its release), None
        where it has none."""
        value = self.meta.get("decision_threshold")
        return None if value is None else float(value)

    def decision_scores(self, X) -> np.ndarray:
        """The per-class scores the objective weighs (``predict_proba`` unless a format
        says otherwise)."""
        return self.predict_proba(X)

    def predict(self, X, objective: str | None = None) -> np.ndarray:
        """Each record's class under ``objective`` (default: the file's own), as the
        fitted estimator predicts it: post-processing of the release."""
        objective = check_objective(self.objective if objective is None else objective)
        # The threshold was computed for the file's own objective only.
        threshold = self.decision_threshold if objective == self.objective else None
        if objective == ACCURACY and threshold is None:
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        scores = self.decision_scores(X)
        return self.classes_[decide(scores, self.decision_prior, objective, threshold)]


# --- value checks -----------------------------------------------------------------------------


def finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def int_array(values) -> np.ndarray:
    """A tree's node list of whole numbers as int64 (TypeError for anything else)."""
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise TypeError("expected a list of whole numbers")
    return np.asarray(values, dtype=np.int64)


def number(value: Any) -> int | float:
    """A released count as read back: whole numbers stay integers."""
    return int(value) if float(value).is_integer() else float(value)


def whole(value: Any, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"the model's {name!r} must be a whole number from {low} to {high}")
    return value


def number_in(meta: dict, name: str, low: float, high: float, default: Any = None) -> float:
    value = meta.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not finite(value):
        raise ValueError(f"the model's {name!r} must be a number")
    if not low <= value <= high:
        raise ValueError(f"the model's {name!r} must be from {low:g} to {high:g}, got {value!r}")
    return float(value)


def prior_row(meta: dict, k: int) -> None:
    """Check a file's ``decision_prior`` (absent, or k positive finite shares)."""
    prior = meta.get("decision_prior")
    if prior is None:
        return
    if (
        not isinstance(prior, list)
        or len(prior) != k
        or not all(type(v) in (int, float) and finite(v) and 0 < v <= 1 for v in prior)
    ):
        raise ValueError(f"the model's 'decision_prior' must be {k} shares in (0, 1]")


def counts_row(value: Any, k: int, where: str) -> np.ndarray:
    try:
        row = np.asarray(value, dtype=np.float64) if isinstance(value, list) else None
    except (TypeError, ValueError, OverflowError):
        row = None
    if row is None or row.shape != (k,) or not np.all(np.isfinite(row)):
        raise ValueError(f"{where}: a leaf's noisy counts are not {k} numbers")
    return row


def check_shape(first_child: np.ndarray, n_children: np.ndarray, depth: Any, where: str) -> None:
    """A tree: every node but the root has exactly one parent, and no path is longer than
    ``depth`` (the file's own claim, itself at most :data:`MAX_DEPTH`)."""
    n = len(first_child)
    if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"the model's 'depth' must be a whole number from 1 to {MAX_DEPTH}")
    parents = np.flatnonzero(n_children > 0)
    width = n_children[parents]
    children = np.repeat(first_child[parents], width) + (
        np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
    )
    if len(children) != n - 1 or not np.array_equal(np.sort(children), np.arange(1, n)):
        raise ValueError(f"{where}: its nodes do not form a tree (a node has two parents or none)")
    level = np.asarray([0])
    for _ in range(depth + 1):
        inner = level[n_children[level] > 0]
        if len(inner) == 0:
            return
        width = n_children[inner]
        level = np.repeat(first_child[inner], width) + (
            np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
        )
    raise ValueError(f"{where}: a path is deeper than the model's depth {depth}")
