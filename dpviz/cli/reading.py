"""Reading the CSV a command learns from: ``--data`` with ``--drop`` and ``--keep``, the
label checked, the schema loaded (``--schema``, declared public) or inferred (NOT
private), and the records encoded.

What reading finds in the records (notes, suggested drops, data-derived ranges) is said
on stderr, for the user only: nothing read here goes into a released file except the
fixed sentence that declares a ``--schema`` file public.
"""

from __future__ import annotations

import dataclasses
import shlex
import sys

import pandas as pd

from dpviz.cli.common import split_list
from dpviz.privacy.schema import DECLARED_BY_SCHEMA_OPTION, Schema, infer_schema
from dpviz.tabular.columns import PEOPLE_REASON, suggest_drops
from dpviz.tabular.encode import encode, read_csv

__all__ = ["drop_option", "load_data", "read_data"]


def read_data(args) -> pd.DataFrame:
    """The CSV of ``--data`` with ``--drop`` columns removed; says what reading changed
    (decimal commas, NA cells) on stderr."""
    frame = read_csv(args.data)
    for note in frame.attrs.get("read_notes", ()):
        print(f"note: {note}", file=sys.stderr)
    text = getattr(args, "drop", None)
    drop = split_list(text, str, "--drop") if text is not None else []
    unknown = [c for c in drop if c not in frame.columns]
    if unknown:
        raise ValueError(
            f"--drop names {', '.join(map(repr, unknown))}, not a column of {args.data}; "
            "columns are: " + ", ".join(frame.columns[:20])
        )
    if args.label in drop:
        raise ValueError(f"--drop names the label {args.label!r}; drop other columns")
    return frame.drop(columns=drop) if drop else frame


def _with_drop_hint(message: str, frame: pd.DataFrame, label: str) -> str:
    """An inference error, with the ``--drop`` that `info` would suggest."""
    drops = suggest_drops(frame, label)
    if not drops:
        return message
    why = "; ".join(f"{c}: {r}" for c, r in drops.items())
    return f"{message} (suggested: {drop_option(drops)} — {why})"


def drop_option(columns) -> str:
    """``--drop`` with ``columns``, quoted so that it can be pasted into a shell."""
    return f"--drop {shlex.quote(','.join(columns))}"


def load_data(args) -> tuple:
    frame = read_data(args)
    if args.label not in frame.columns:
        raise ValueError(
            f"label column {args.label!r} is not in {args.data}; columns are: "
            + ", ".join(frame.columns[:20])
        )
    if args.schema:
        schema = Schema.load(args.schema)
        if schema.label != args.label:
            raise ValueError(
                f"the schema's label is {schema.label!r} but --label is {args.label!r}"
            )
        frame = _leave_out_suggested(frame, args, schema)
    else:
        frame = _leave_out_suggested(frame, args, None)
        try:
            schema = infer_schema(frame, args.label)
        except ValueError as exc:
            raise ValueError(_with_drop_hint(str(exc), frame, args.label)) from None
    encoded = encode(frame, schema, training=True)
    for message in encoded.report.messages():
        print(f"note: {message}", file=sys.stderr)
    if args.schema:
        schema = _declared(schema, frame, args.schema)
    return frame, schema, encoded


def _leave_out_suggested(frame: pd.DataFrame, args, schema: Schema | None) -> pd.DataFrame:
    """Leave out the columns `info` suggests — personal data (names, e-mail addresses,
    phone numbers, postal addresses: a model lists a discrete feature's values), ID-like,
    free-text and empty columns — unless ``--keep`` names them, as the app's Data page
    does. With a ``--schema`` the schema decides which columns are features, but one that
    uses a personal-data column without ``--keep`` is refused. The judgement reads the
    records: it is said on stderr, for the user only."""
    keep = split_list(args.keep, str, "--keep") if getattr(args, "keep", None) else []
    unknown = [c for c in keep if c not in frame.columns]
    if unknown:
        raise ValueError(
            f"--keep names {', '.join(map(repr, unknown))}, not a column of {args.data}"
        )
    used = set(schema.feature_names) if schema is not None else None
    drop = []
    for name, why in suggest_drops(frame, args.label).items():
        people = why.startswith(PEOPLE_REASON)
        if name in keep:
            print(f"warning: keeping {name!r} (--keep), {why}", file=sys.stderr)
        elif used is not None:
            if name in used and people:
                raise ValueError(
                    f"the schema uses {name!r}: {why}. Remove it from the schema, or pass "
                    f"--keep {shlex.quote(name)} to publish its values"
                )
        else:
            print(
                f"note: left out {name!r} ({why}); pass --keep {shlex.quote(name)} to use it",
                file=sys.stderr,
            )
            drop.append(name)
    return frame.drop(columns=drop) if drop else frame


def _declared(schema: Schema, frame: pd.DataFrame, path: str) -> Schema:
    """A schema file's public status: a file still marked inferred is not public (any
    declaration it carries is dropped); otherwise the schema is declared public by the
    user's ``--schema`` file, in a fixed sentence that goes into the model file. Ranges
    equal to the data's own min and max are named on stderr only: read from the
    records, for the user, never written into a released file."""
    from dpviz.app.data import NOT_PRIVATE_CHECK, data_derived

    if schema.inferred:
        print(
            f'note: {path} is marked "inferred" (as `info --schema-out` writes it): the '
            "model is NOT differentially private until every mark is removed",
            file=sys.stderr,
        )
        return dataclasses.replace(schema, declaration="")
    derived = data_derived(schema, frame, lists=False)
    if derived:
        print(
            f"note ({NOT_PRIVATE_CHECK}): in {path}, {'; '.join(derived)}: if read off these "
            "records, the guarantee is void",
            file=sys.stderr,
        )
    return dataclasses.replace(schema, declaration=DECLARED_BY_SCHEMA_OPTION)
