"""What the Data page does: read an upload (decimal commas and NA cells converted, with
notes), choose the columns to keep (IDs and free text left out by default) and the label,
settle the public schema (uploaded, inferred or edited; missing-value rules; a
declaration) and report missing and out-of-domain values.

Privacy (SPEC §1): the class list and the feature domains must be public knowledge.
A schema inferred from the records voids the guarantee; :func:`choose_schema` marks it
``inferred`` unless it came from an uploaded schema file or the user declares the
(edited) schema public. ``Schema.declaration`` (sidebar, ledger text, model file,
report) then holds only who declared it, in a fixed sentence; which features still
equal the data's own range is read from the records and shown to the data owner only
(:data:`NOT_PRIVATE_CHECK`), never written into a released file.
The data report reads the raw records: it is for the data owner, NOT private.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpviz.app.support import (
    INFERRED_SCHEMA_WARNING,
    PreparedData,
    frame_id,
    read_uploaded_csv,
)
from dpviz.privacy.schema import (
    DECLARED_BY_SCHEMA_UPLOAD,
    DECLARED_ON_DATA_PAGE,
    MISSING,
    Feature,
    Schema,
    as_text,
    infer_feature,
    infer_schema,
)
from dpviz.tabular.columns import PEOPLE_REASON, people_columns, suggest_drops
from dpviz.tabular.encode import (
    Progress,
    as_numbers,
    numeric_suspects,
    to_numbers,
)

TABLE_COLUMNS = ("use", "feature", "type", "min", "max", "values")
PUBLISHED_COLUMNS = ("column", "type", "published", "personal data")
# A value list longer than this is shown cut, with the number of values left out.
PUBLISHED_SHOWN = 50
COLUMN_TABLE = ("keep", "column", "suggestion", "missing", "distinct", "example")
MISSING_HELP = (
    "A continuous feature either drops the row in training (the default; "
    "prediction then uses the domain's midpoint) or, when chosen here, keeps it and sends "
    "the missing value to the lower branch of every split on that feature (the value is "
    "set to the public min, in training and in prediction alike). A discrete feature keeps "
    f"missing cells as the category {MISSING!r} when its value list names it (inferred "
    "lists do when the column has empty cells). These are public rules you choose, not "
    "facts read from the data: they do not change the privacy guarantee."
)
KINDS = ("continuous", "discrete")
EDITOR_NOTE = (
    "Cells prefilled from the file were read off the records. Replace them with public "
    "bounds, or leave them and accept that the guarantee is void. A blank min/max or value "
    "list is filled from the data (inferred). Lists are comma-separated; quote a value that "
    'holds a comma: "Boston, MA", "Austin, TX".'
)
ROUND_HELP = (
    "Widens each continuous feature's filled range to round numbers on a 1-2-5 step (17.3 "
    "to 79.6 becomes 10 to 80), so the bounds no longer equal the data's own min and max. "
    "Rounded bounds still came from the records: declare them public only if you would "
    "have written them without looking."
)
# A header whose cells are mostly numbers is probably the first data row.
HEADER_NUMERIC_SHARE = 0.5
DECLARED_NOTE = (
    "Public schema: you declared the class list and the domains below public knowledge "
    "(written or checked without reading them off these records)."
)
UPLOADED_NOTE = "Public schema: the schema file you uploaded ({name})."
DECLARATION_PROMPT = (
    "I declare the class list and every domain public knowledge: I wrote or checked them "
    "without reading them off these records."
)
# The label of every check that compares the schema with the records (screen, stderr).
NOT_PRIVATE_CHECK = "not private: read from your records, for you only"


@dataclass
class Upload:
    """A parsed CSV upload. Raw records: kept in one session's state only."""

    name: str
    frame: pd.DataFrame
    frame_id: str
    size: int
    header_warning: str | None = None
    notes: tuple[str, ...] = ()  # what reading changed (decimal commas, NA cells)


@dataclass
class UploadWorkspace:
    """The upload and the schema choices made for it on the Data page."""

    upload: Upload
    file_id: str = ""  # the uploader's id of the CSV, to notice a new upload
    schema_file: Schema | None = None
    schema_name: str = ""
    schema_file_id: str = ""
    edits: pd.DataFrame | None = None
    classes: str | None = None
    edits_for: tuple = ()
    edit_version: int = 0  # bumped on every applied edit, to reset the editor widget
    keep: dict[str, bool] | None = None  # the Columns table's choices; None: suggestions
    numbers: tuple[str, ...] = ()  # columns read as numbers (other cells become missing)
    _suggested: dict = field(default_factory=dict, repr=False)  # label -> suggest_drops

    def suggestions(self, label: str) -> dict[str, str]:
        """:func:`dpviz.tabular.columns.suggest_drops` for this label (computed once)."""
        if label not in self._suggested:
            self._suggested[label] = suggest_drops(self.upload.frame, label)
        return self._suggested[label]

    def people(self, label: str) -> dict[str, str]:
        """The suggested drops that look like personal data (names, e-mail addresses,
        phone numbers, postal addresses), with the reason."""
        return {c: r for c, r in self.suggestions(label).items() if r.startswith(PEOPLE_REASON)}

    def drops(self, label: str) -> list[str]:
        """The columns left out: the user's choice, else the suggested ones (never the
        label)."""
        frame = self.upload.frame
        if self.keep is None:
            return list(self.suggestions(label))
        return [c for c in frame.columns if c != label and not self.keep.get(c, True)]

    def applied_edits(self, label: str) -> tuple[pd.DataFrame | None, str | None]:
        """The schema edits made for this label and schema file, if any."""
        if self.edits_for == (label, self.schema_file_id):
            return self.edits, self.classes
        return None, None


def read_upload(name: str, data: bytes, progress: Progress | None = None) -> Upload:
    """Parse an uploaded CSV (``ValueError`` with a message for the user if unusable);
    ``progress(fraction, message)`` hears about each step of reading."""
    try:
        frame = read_uploaded_csv(data, progress)
    except ValueError as exc:
        raise ValueError(f"Could not read {name}: {exc}") from None
    notes = tuple(frame.attrs.get("read_notes", ()))
    return Upload(name, frame, frame_id(frame), len(data), header_warning(frame.columns), notes)


# --- column roles: which columns to keep ---------------------------------------------------


def column_table(
    frame: pd.DataFrame, label: str, drops=None, suggestions: dict | None = None
) -> pd.DataFrame:
    """One row per column other than the label: keep it?, the suggestion and why, its
    missing and distinct counts, an example value (reads the records: NOT private)."""
    if suggestions is None:
        suggestions = suggest_drops(frame, label)
    drops = set(suggestions if drops is None else drops)
    rows = []
    for name in frame.columns:
        if name == label:
            continue
        column = frame[name]
        present = column.dropna()
        rows.append(
            {
                "keep": name not in drops,
                "column": str(name),
                "suggestion": f"drop — {suggestions[name]}" if name in suggestions else "keep",
                "missing": int(column.isna().sum()),
                "distinct": int(present.nunique()),
                "example": str(present.iloc[0]) if len(present) else "",
            }
        )
    return pd.DataFrame(rows, columns=list(COLUMN_TABLE))


def working_frame(upload: Upload, workspace: UploadWorkspace, label: str) -> pd.DataFrame:
    """The upload as the schema sees it: columns read as numbers on request, dropped
    columns removed."""
    frame = as_numbers(upload.frame, workspace.numbers)
    drops = [c for c in workspace.drops(label) if c in frame.columns]
    return frame.drop(columns=drops) if drops else frame


def suspects(frame: pd.DataFrame, numbers=()) -> dict[str, str]:
    """Columns that would be discrete with many numeric-looking values (see
    :func:`dpviz.tabular.encode.numeric_suspects`), except those already read as numbers."""
    return {k: v for k, v in numeric_suspects(frame).items() if k not in set(numbers)}


def column_hint(message: str, columns) -> str:
    """Append, to an error naming a column, how to drop that column on the page."""
    if "no features besides the label" in message:
        return (
            f"{message}: every other column is left out. Remove at least one from "
            "'Leave out these columns' above."
        )
    for name in columns:
        if f"{str(name)!r}" in message:
            return (
                f"{message}. To leave {str(name)!r} out, add it to 'Leave out these "
                "columns' above."
            )
    return message


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def header_warning(columns) -> str | None:
    """A warning when the first row looks like data rather than column names."""
    names = [str(c) for c in columns]
    numeric = [c for c in names if _is_number(c)]
    if names and len(numeric) / len(names) >= HEADER_NUMERIC_SHARE:
        shown = ", ".join(numeric[:5])
        return (
            f"The first row looks like data, not column names ({shown} are numbers). "
            "dpviz reads the first row as the header: if the file has none, add a header "
            "row naming the columns and upload it again."
        )
    return None


# --- the schema table --------------------------------------------------------------------


def schema_table(schema: Schema, columns=None) -> pd.DataFrame:
    """The schema as an editable table: one row per column other than the label.

    ``columns`` (the file's columns) adds unused columns as rows with ``use`` unticked.
    """
    rows = [
        {
            "use": True,
            "feature": f.name,
            "type": f.kind,
            "min": f.low if f.kind == "continuous" else None,
            "max": f.high if f.kind == "continuous" else None,
            "values": join_list(f.values) if f.kind == "discrete" else "",
        }
        for f in schema.features
    ]
    known = set(schema.feature_names) | {schema.label}
    for c in columns if columns is not None else ():
        if str(c) not in known:
            rows.append(
                {
                    "use": False,
                    "feature": str(c),
                    "type": "continuous",
                    "min": None,
                    "max": None,
                    "values": "",
                }
            )
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return table.astype({"min": "float64", "max": "float64"})


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


# One entry of a comma-separated list: "double-quoted" (a comma inside is kept, "" is a
# quote) or plain text up to the next comma; the comma or the end of the text follows.
_ENTRY = re.compile(r'\s*(?:"((?:[^"]|"")*)"|([^,]*?))\s*(,|$)', re.DOTALL)


def split_list(text) -> tuple[str, ...]:
    """Comma-separated text as a tuple of non-empty entries, CSV-style: an entry in
    double quotes keeps its commas and spaces (``"Boston, MA", "Austin, TX"``; ``""``
    inside quotes is a quote); plain entries are stripped. :func:`join_list` writes it."""
    if _blank(text):
        return ()
    text, out, pos = str(text), [], 0
    while True:
        # Always matches: the plain alternative takes any text up to a comma or the end.
        entry = _ENTRY.match(text, pos)
        quoted, plain, comma = entry.groups()
        value = quoted.replace('""', '"') if quoted is not None else plain
        if value.strip():
            out.append(value)
        if not comma:
            return tuple(out)
        pos = entry.end()


def join_list(values) -> str:
    """Values as the comma-separated text :func:`split_list` reads back: an entry holding
    a comma or a quote, or with spaces at either end, is double-quoted."""
    return ", ".join(_quoted(str(v)) for v in values)


def _quoted(value: str) -> str:
    if "," in value or '"' in value or value != value.strip():
        return '"' + value.replace('"', '""') + '"'
    return value


def nice_step(span: float) -> float:
    """The smallest step on the 1-2-5 ladder (…, 0.5, 1, 2, 5, 10, 20, …) that cuts
    ``span`` into at most 10 parts (1 for a span of 0)."""
    if not span > 0:
        return 1.0
    target = span / 10
    power = 10.0 ** math.floor(math.log10(target))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= target * (1 - 1e-12))


def round_outwards(low: float, high: float) -> tuple[float, float]:
    """``[low, high]`` widened to multiples of a 1-2-5 step (:func:`nice_step` of the
    span, or of the value itself when ``low == high``): a range that always contains the
    original one and reads as a round, public-looking domain (``[17.3, 79.6]`` →
    ``[10, 80]``).

    Privacy: the result is still computed from the given bounds. When those were read
    off the records it reveals less (only the scale of the data), but it is not public
    knowledge until a person declares it so.
    """
    step = nice_step(high - low if high > low else abs(low))
    # Round the step's decimals away so 0.1 + 0.2 noise does not show up as 0.30000000004.
    decimals = max(0, -math.floor(math.log10(step)))
    low_steps, high_steps = _steps(low, step), _steps(high, step)
    rounded = (
        round(math.floor(low_steps) * step, decimals),
        round(math.ceil(high_steps) * step, decimals),
    )
    return rounded[0] + 0.0, rounded[1] + 0.0  # + 0.0 turns -0.0 into 0.0


def _steps(value: float, step: float) -> float:
    """``value / step``, snapped to a whole number when only rounding error keeps it off
    one (1000.3 / 0.05 is 20005.999999999996 in floating point, not 20006)."""
    steps = value / step
    whole = round(steps)
    return whole if abs(steps - whole) <= 1e-9 * max(1.0, abs(steps)) else steps


def rounded_table(table: pd.DataFrame) -> pd.DataFrame:
    """The schema table with each continuous feature's filled min and max rounded
    outwards (:func:`round_outwards`); blank cells and discrete rows are left as they
    are. A blank side keeps its own blank (filled from the data later, inferred)."""
    out = table.copy()
    for index, row in table.iterrows():
        low, high = row["min"], row["max"]
        if str(row["type"]).strip().lower() != "continuous" or _blank(low) and _blank(high):
            continue
        low_f = float(high if _blank(low) else low)
        high_f = float(low if _blank(high) else high)
        if low_f > high_f:
            continue  # table_to_schema says which to swap
        new_low, new_high = round_outwards(low_f, high_f)
        if not _blank(low):
            out.at[index, "min"] = new_low
        if not _blank(high):
            out.at[index, "max"] = new_high
    return out


def observed_values(column: pd.Series) -> tuple[str, ...]:
    """The distinct values of a column as text, numbers in numeric order, plus the
    missing-value category when some cell is empty (reads the data: inferred)."""
    present = {as_text(v) for v in column.dropna()}
    values = sorted(present, key=lambda t: (0, float(t), t) if _is_number(t) else (1, 0.0, t))
    if column.isna().any():
        values.append(MISSING)
    if not values:
        raise ValueError(f"column {column.name!r} is empty; untick it")
    return tuple(values)


def table_to_schema(
    table: pd.DataFrame, classes, label: str, frame: pd.DataFrame
) -> tuple[Schema, list[str]]:
    """A schema from the edited table, and the features whose blank cells were filled
    from the data (those are inferred: they void the guarantee unless declared public).

    Raises ``ValueError`` with a message naming the row to fix.
    """
    features, filled = [], []
    for row in table.to_dict("records"):
        if not bool(row.get("use", True)):
            continue
        name, kind = str(row["feature"]), str(row["type"]).strip().lower()
        if kind not in KINDS:
            raise ValueError(f"feature {name!r}: type must be continuous or discrete")
        if name not in frame.columns:
            raise ValueError(f"feature {name!r} is not a column of the file")
        if kind == "continuous":
            low, high = row.get("min"), row.get("max")
            if _blank(low) or _blank(high):
                data = infer_feature(name, frame[name], numeric_is_continuous=True)
                if data.kind != "continuous":
                    raise ValueError(
                        f"feature {name!r} holds text, so it cannot be continuous; "
                        "make it discrete"
                    )
                low = data.low if _blank(low) else low
                high = data.high if _blank(high) else high
                filled.append(name)
            features.append(Feature(name, "continuous", float(low), float(high)))
        else:
            values = split_list(row.get("values"))
            if not values:
                values = observed_values(frame[name])
                filled.append(name)
            features.append(Feature(name, "discrete", values=values))
    if not features:
        raise ValueError("no feature is ticked for use; tick at least one")
    classes = split_list(classes) if isinstance(classes, str) else tuple(classes)
    return Schema(label=label, classes=classes, features=tuple(features)), filled


def same_as_data(schema: Schema, frame: pd.DataFrame) -> list[str]:
    """Continuous features whose domain is exactly the data's own min and max: the
    tell-tale of a range read off the records."""
    out = []
    for f in schema.continuous:
        distinct = pd.Series(frame[f.name].dropna().unique(), dtype=object)
        values = pd.to_numeric(distinct, errors="coerce").to_numpy(dtype=np.float64)
        values = values[np.isfinite(values)]
        if len(values) and values.min() == f.low and values.max() == f.high:
            out.append(f.name)
    return out


@dataclass(frozen=True)
class SchemaChoice:
    """The schema to train with, whether it counts as public, and what to tell the user."""

    schema: Schema
    note: str
    warnings: tuple[str, ...] = ()
    filled: tuple[str, ...] = ()  # features whose blank cells were filled from the data

    @property
    def public(self) -> bool:
        return not self.schema.inferred


def choose_schema(
    frame: pd.DataFrame,
    label: str,
    *,
    schema_file: Schema | None = None,
    schema_name: str = "schema.json",
    edits: pd.DataFrame | None = None,
    classes=None,
    declared_public: bool = False,
    people: dict[str, str] | None = None,
    published=(),
) -> SchemaChoice:
    """Settle the schema of an upload.

    Base: the uploaded schema file (public) or one inferred from the records (NOT
    public). ``edits`` (a :func:`schema_table`) and ``classes`` replace it; blank cells
    are filled from the data, which counts as inferred. The result is public when it
    came from the file without data fills, or when ``declared_public`` (the user says
    every entry is public knowledge), and in either case only when every feature that
    looks like personal data (``people``: column -> reason, by default
    :func:`dpviz.tabular.columns.people_columns` of ``frame``) is in ``published``: the
    data owner ticked it on its own, since the model file lists its values. Raises
    ``ValueError`` with a message to show.
    """
    if label not in frame.columns:
        raise ValueError(f"label column {label!r} is not in the file")
    if schema_file is not None:
        if schema_file.label != label:
            raise ValueError(
                f"the schema file names {schema_file.label!r} as the label but {label!r} "
                "is selected; choose the schema's label column or fix the schema"
            )
        missing = [f for f in schema_file.feature_names if f not in frame.columns]
        if missing:
            raise ValueError("the file lacks the schema's columns: " + ", ".join(missing[:10]))
        # A file written by `info --schema-out` keeps its "inferred" marks until edited.
        base, public = schema_file, not schema_file.inferred
    else:
        base, public = infer_schema(frame, label, warn=False), False
    schema, filled = base, []
    if edits is not None:
        schema, filled = table_to_schema(
            edits, base.classes if classes is None else classes, label, frame
        )
        public = public and not filled
    elif classes is not None:
        schema = dataclasses.replace(base, classes=split_list(classes))
    if declared_public:
        public = True
    if people is None:
        people = people_columns(frame[schema.feature_names], label)
    unconfirmed = [f for f in schema.feature_names if f in people and f not in set(published)]
    # Class and value lists are named too when nothing but the data supplied them (no
    # schema file, no edits); lists a person wrote or checked are usually known.
    check = data_check(schema, frame, filled, lists=schema_file is None and edits is None)
    warnings = [check] if check else []
    if unconfirmed:
        listed = _listing([f"{c!r} ({people[c]})" for c in unconfirmed])
        warnings.append(
            f"Personal data: {listed}. The model file and report would list its values: "
            "tick 'Publish the values of' for each such column to keep it, or leave it out "
            "in 'Leave out these columns'. Until then the schema is not declared public."
        )
    declaration = ""
    if not public:
        note = INFERRED_SCHEMA_WARNING
        if schema_file is not None and schema_file.inferred:
            note = (
                f"The schema file {schema_name} is marked as inferred from the data (as "
                "`info --schema-out` writes it): the differential-privacy guarantee is VOID. "
                'Check every entry, delete its "inferred" marks and upload it again, or '
                "tick the declaration."
            )
        elif schema_file is not None and filled:
            note = (
                f"Blank domain cells of {', '.join(filled[:5])} were filled from the records, "
                "so part of the schema was inferred from the data: the differential-privacy "
                "guarantee is VOID. Fill them from public knowledge, or tick the declaration."
            )
    elif unconfirmed:
        public = False
        note = (
            f"The schema is NOT declared public: {', '.join(map(repr, unconfirmed))} looks "
            "like personal data and its values are not confirmed for publishing (see the "
            "personal-data warning): the export is refused until then."
        )
    else:
        note = DECLARED_NOTE if declared_public else UPLOADED_NOTE.format(name=schema_name)
        # Who declared, in fixed words: this sentence goes into model files and reports.
        declaration = DECLARED_ON_DATA_PAGE if declared_public else DECLARED_BY_SCHEMA_UPLOAD
    schema = dataclasses.replace(schema, inferred=not public, declaration=declaration)
    return SchemaChoice(schema, note, tuple(warnings), tuple(filled))


def published_values(schema: Schema, people: dict[str, str] | None = None) -> pd.DataFrame:
    """What the model file and report publish of the schema, one row per column: the
    class list, each continuous feature's range and each discrete feature's value list
    (cut after :data:`PUBLISHED_SHOWN` values), with the personal-data reason if any.
    Shown before the declaration, so that value lists are published one column at a
    time and knowingly."""
    people = people or {}
    rows = [{"column": schema.label, "type": "label", "published": _values(schema.classes)}]
    for f in schema.features:
        shown = f"[{f.low:g}, {f.high:g}]" if f.kind == "continuous" else _values(f.values)
        rows.append({"column": f.name, "type": f.kind, "published": shown})
    table = pd.DataFrame(rows, columns=list(PUBLISHED_COLUMNS))
    table["personal data"] = table["column"].map(people).fillna("")
    return table


def _values(values) -> str:
    shown = ", ".join(values[:PUBLISHED_SHOWN])
    more = len(values) - PUBLISHED_SHOWN
    return f"{len(values)} values: {shown}" + (f" … and {more} more" if more > 0 else "")


def _listing(items: list[str], limit: int = 8) -> str:
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def _texts(column: pd.Series) -> set[str]:
    """The distinct filled cells of a column as text (:func:`as_text`)."""
    return {as_text(v) for v in column.dropna().unique()}


def data_derived(
    schema: Schema, frame: pd.DataFrame, filled=(), *, lists: bool = True
) -> list[str]:
    """The parts of a schema that equal what the records show (or were filled from
    them), in words: continuous ranges equal to the data's min and max and, with
    ``lists``, a class list or discrete value list equal to the observed values. What a
    declaration must name."""
    out = []
    labels = _texts(frame[schema.label]) if schema.label in frame else set()
    if lists and len(labels) and set(schema.classes) == set(labels):
        out.append(f"the class list of {schema.label!r} (read from the data)")
    exact = set(same_as_data(schema, frame))
    for f in schema.features:
        if f.kind == "continuous":
            domain = f"{f.name!r} [{f.low:g}, {f.high:g}]"
            if f.name in filled:
                out.append(f"{domain} (filled from the data)")
            elif f.name in exact:
                out.append(f"{domain} (the data's own min and max)")
        elif f.name in filled:
            out.append(f"the values of {f.name!r} (filled from the data)")
        elif lists and set(f.values) - {MISSING} == _texts(frame[f.name]):
            out.append(f"the values of {f.name!r} (read from the data)")
    return out


def data_check(schema: Schema, frame: pd.DataFrame, filled=(), *, lists: bool = True) -> str:
    """The parts of the schema that equal what these records show, as a warning for the
    data owner labelled :data:`NOT_PRIVATE_CHECK` ("" when none do). Shown on screen
    only: it is computed from the records, so no released file or report carries it."""
    derived = data_derived(schema, frame, filled, lists=lists)
    if not derived:
        return ""
    return (
        f"Check ({NOT_PRIVATE_CHECK}): {len(derived)} part(s) of the schema equal what the "
        f"records themselves show: {_listing(derived)}. If they were read off these records "
        "rather than known in advance, the guarantee is void: replace them with public "
        "bounds (for example round ranges outwards)."
    )


@dataclass(frozen=True)
class MissingChoice:
    """The missing-value rule the Data page offers: the continuous features with missing
    cells in this frame (``offered``), those of them whose rule already is the lower
    branch (``preset``, from a schema file), and features without missing cells here whose
    schema rule is the lower branch (``kept``: that rule still holds)."""

    offered: list[str]
    preset: list[str]
    kept: list[str]


def missing_choice(frame: pd.DataFrame, schema: Schema) -> MissingChoice:
    """What the Data page offers for missing values of continuous features (reads which
    cells are missing: for the data owner only)."""
    offered = [f.name for f in schema.continuous if frame[f.name].isna().any()]
    low = [f.name for f in schema.continuous if f.missing == "low"]
    return MissingChoice(
        offered=offered,
        preset=[name for name in low if name in offered],
        kept=[name for name in low if name not in offered],
    )


def with_missing_rule(schema: Schema, lower_branch) -> Schema:
    """The schema with missing values of the continuous features in ``lower_branch``
    sent to the lower branch (rule ``"low"``) and those of the others dropping the row.

    A public rule chosen by the user: the schema's public status does not change."""
    chosen = set(lower_branch)
    unknown = chosen - {f.name for f in schema.continuous}
    if unknown:
        raise ValueError(
            f"{', '.join(sorted(map(repr, unknown)))} is not a continuous feature; the "
            "lower-branch rule is for continuous features (a discrete one keeps missing "
            f"cells as the category {MISSING!r})"
        )
    features = tuple(
        dataclasses.replace(f, missing="low" if f.name in chosen else "drop")
        if f.kind == "continuous"
        else f
        for f in schema.features
    )
    return dataclasses.replace(schema, features=features)


def prepare(
    upload: Upload, choice: SchemaChoice, workspace: UploadWorkspace | None = None
) -> PreparedData:
    """The upload (as :func:`working_frame` shapes it) and its schema as the app's
    current dataset."""
    if workspace is None:
        frame, frame_key = upload.frame, upload.frame_id
    else:
        frame = working_frame(upload, workspace, choice.schema.label)
        shape = "|".join([*map(str, frame.columns), "numbers:", *workspace.numbers])
        frame_key = f"{upload.frame_id}.{hashlib.sha1(shape.encode()).hexdigest()[:8]}"
    return PreparedData(
        upload.name,
        frame,
        choice.schema,
        choice.note,
        frame_key,
        "upload",
        owner_warnings=choice.warnings,
    )


# --- the data report (NOT private) --------------------------------------------------------


@dataclass(frozen=True)
class DataReport:
    """Per column: missing values, values outside the public domain, distinct values;
    and what training will drop or clip. Reads the raw records: NOT private."""

    table: pd.DataFrame
    messages: tuple[str, ...]
    rows_used: int | None
    error: str | None = None


def _outside(column: pd.Series, allowed) -> int:
    """How many filled cells of ``column`` name no value in ``allowed`` (as text),
    decided on the distinct cells (a million cells hold a handful of values)."""
    distinct = pd.Series(column.dropna().unique(), dtype=object)
    bad = distinct[~distinct.map(as_text).isin(set(allowed))]
    return int(column.isin(bad).sum()) if len(bad) else 0


def data_report(data: PreparedData) -> DataReport:
    """Describe how the dataset's records fit its schema (see :class:`DataReport`); the
    training encoding it makes is kept with ``data`` for the pages that train."""
    frame, schema = data.frame, data.schema
    rows = []
    for name in [schema.label, *schema.feature_names]:
        column = frame[name]
        missing = int(column.isna().sum())
        if name == schema.label:
            kind, domain = "label", f"{len(schema.classes)} classes"
            outside = _outside(column, schema.classes)
        else:
            feature = next(f for f in schema.features if f.name == name)
            kind = feature.kind
            if kind == "continuous":
                domain = f"[{feature.low:g}, {feature.high:g}]"
                values = to_numbers(column)
                outside = int(((values < feature.low) | (values > feature.high)).sum())
            else:
                domain = f"{len(feature.values)} values"
                known = set(feature.values) - {MISSING}
                outside = _outside(column, known)
        rows.append(
            {
                "column": name,
                "role": "label" if name == schema.label else "feature",
                "type": kind,
                "public domain": domain,
                "missing": missing,
                "outside domain": outside,
                "distinct values": int(column.nunique(dropna=True)),
            }
        )
    table = pd.DataFrame(rows)
    try:
        report = data.training_records().report
    except ValueError as exc:
        return DataReport(table, (), None, str(exc))
    return DataReport(table, tuple(report.messages()), report.rows_used)
