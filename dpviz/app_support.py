"""What the app's home page does, without streamlit, so that it is unit-tested here.

``app.py`` only turns widgets into calls of these functions and renders what they
return. Uploaded files arrive as bytes: ``read_uploaded_csv`` and
``read_uploaded_schema`` raise ``ValueError`` with a message to show the user.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go

from .data import encode, read_csv
from .demos import DEMOS, load_demo
from .evaluation import cross_validate
from .figures import accuracy_bar_figure, flip_probability_figure
from .forest import DPRandomForestClassifier
from .mechanisms import MECHANISMS
from .schema import PrivacyLeakWarning, Schema, infer_schema

REFERENCE_MECHANISM = "none"
LABEL_GUESSES = ("label", "class", "target", "y", "diagnosis", "outcome")
INFERRED_SCHEMA_WARNING = (
    "No schema was uploaded, so the class list and every feature's domain (min/max, value "
    "list) were inferred from the uploaded records themselves. That reads the raw data "
    "without noise and can reveal an individual's value (for example the largest one), "
    "so the differential-privacy guarantee is VOID: whatever ε you choose, the model is "
    "NOT ε-DP. Upload a schema JSON written from public knowledge for a real guarantee."
)
NOT_PRIVATE_DIAGNOSTICS = "not private (computed from the raw data)"


@dataclass(frozen=True)
class PreparedData:
    """Records and schema ready to train on, and where the schema came from."""

    name: str
    frame: pd.DataFrame
    schema: Schema
    schema_note: str  # why the schema is public, or INFERRED_SCHEMA_WARNING

    @property
    def schema_public(self) -> bool:
        return not self.schema.inferred


def read_uploaded_csv(data: bytes) -> pd.DataFrame:
    """An uploaded CSV's bytes as a DataFrame of text (``ValueError`` if unusable)."""
    if not isinstance(data, bytes | bytearray):
        raise ValueError("no file content was received; upload the CSV again")
    return read_csv(bytes(data))


def read_uploaded_schema(data: bytes) -> Schema:
    """An uploaded schema JSON's bytes as a Schema (``ValueError`` if unusable)."""
    try:
        text = bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the schema file is not UTF-8 text; it should be a JSON file") from None
    return Schema.from_json(text)


def guess_label(columns: Sequence[str]) -> str:
    """A likely label column: a conventional name if present, else the last column."""
    lower = {str(c).lower(): str(c) for c in columns}
    for name in LABEL_GUESSES:
        if name in lower:
            return lower[name]
    return str(columns[-1])


def prepare_demo(demo_id: str) -> PreparedData:
    frame, schema = load_demo(demo_id)
    demo = DEMOS[demo_id]
    return PreparedData(demo.title, frame, schema, "Public schema: " + demo.schema_public_because)


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
        return PreparedData(name, frame, schema, "Public schema: the schema file you uploaded.")
    inferred = infer_schema(frame, label, warn=False)
    return PreparedData(name, frame, inferred, INFERRED_SCHEMA_WARNING)


@dataclass
class HomeRun:
    """Everything the home page shows after "Train"."""

    dataset: str
    result: dict
    reference: dict
    leaf_epsilon: float
    n_leaves: int
    schema_public: bool
    encoding_messages: list[str] = field(default_factory=list)
    accuracy_figure: go.Figure | None = None
    flip_figure: go.Figure | None = None

    @property
    def private(self) -> bool:
        return bool(self.result["privacy"]["private"])

    @property
    def privacy_summary(self) -> str:
        return self.result["privacy"]["summary"]

    def metric(self, key: str) -> tuple[str, str]:
        """(value, delta) texts for a metric card: DP mean ± std, and the change from the
        no-privacy reference in percentage points."""
        run, ref = self.result[key], self.reference[key]
        value = f"{100 * run['mean']:.1f}% ± {100 * run['std']:.1f}"
        delta = f"{100 * (run['mean'] - ref['mean']):+.1f} pts vs no privacy"
        return value, delta

    def diagnostics(self) -> dict[str, str]:
        """Leaf diagnostics as card texts: NOT private. Flipped = non-empty leaves whose
        released label is not a true majority (sampled); expected = the exact probability
        averaged over those leaves; smooth sensitivity = mean e^(-jε) (Fig. 5b)."""
        r = self.result
        return {
            "Tree depth": f"{r['depth']}",
            # e.g. 99.9987% at depth 22: never round a few non-empty leaves up to 100%
            "Empty leaves": f"{r['empty_leaf_pct']:.{1 if r['empty_leaf_pct'] < 99.9 else 4}f}%",
            "Flipped leaves": f"{r['flipped_leaf_pct']:.1f}%",
            "Expected flips": f"{r['expected_flip_pct']:.1f}%",
            "Smooth sensitivity": f"{r['mean_smooth_sensitivity']:.3g}",
        }


def train_and_evaluate(
    data: PreparedData,
    *,
    mechanism: str,
    epsilon: float,
    n_estimators: int,
    folds: int = 3,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> HomeRun:
    """Cross-validate the DP forest and the ``none`` reference, fit one forest on all
    records for the leaf diagnostics, and build the figures."""
    say = progress or (lambda _msg: None)
    if mechanism not in MECHANISMS:
        raise ValueError(f"unknown mechanism {mechanism!r}")
    encoded = encode(data.frame, data.schema, training=True)
    settings = dict(n_estimators=int(n_estimators), folds=int(folds), seed=seed)
    say(f"cross-validating {mechanism} at ε = {epsilon:g} ({folds} folds)")
    result = cross_validate(encoded, data.schema, epsilon=epsilon, mechanism=mechanism, **settings)
    say("cross-validating the no-privacy reference (mechanism none)")
    reference = cross_validate(
        encoded, data.schema, epsilon=epsilon, mechanism=REFERENCE_MECHANISM, **settings
    )
    say("fitting one forest on all records for the leaf diagnostics")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = DPRandomForestClassifier(
            epsilon=epsilon, n_estimators=int(n_estimators), mechanism=mechanism, random_state=seed
        ).fit_encoded(encoded, data.schema)
    leaves = model.leaf_table(path_rules=False)
    return HomeRun(
        dataset=data.name,
        result=result,
        reference=reference,
        leaf_epsilon=model.tree_epsilon_,
        n_leaves=len(leaves),
        schema_public=data.schema_public,
        encoding_messages=encoded.report.messages(),
        accuracy_figure=accuracy_bar_figure(result, reference),
        flip_figure=flip_probability_figure(leaves, model.tree_epsilon_, trained=mechanism),
    )
