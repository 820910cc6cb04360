"""The command that describes a CSV before any training: ``info`` (its schema, feature
types, the depth each rule gives, the columns to leave out).

``info`` reads the records: the inferred schema is NOT private until every entry is
checked against public knowledge, and its suggestions read the raw records; all of it
is for the user, printed or written where ``--schema-out`` says, never released.
"""

from __future__ import annotations

import sys

from dpviz.cli.common import data_args, split_list
from dpviz.cli.reading import drop_option, read_data
from dpviz.cli.work import resolved_trees
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import DEPTH_RULES, resolve_depth
from dpviz.privacy.schema import Schema, infer_schema
from dpviz.tabular.columns import guess_label, suggest_drops
from dpviz.tabular.encode import numeric_suspects
from dpviz.tabular.outputs import check_outputs, write_text

__all__ = ["add_parsers", "cmd_info"]


def _info_without_schema(args, frame, drops, suspects, guessed, problem: str) -> dict:
    """What `info` says of a file whose schema cannot be inferred: its columns, the
    suggestions and the reason (exit 0: describing the file is the command's job)."""
    print(f"warning: no schema could be inferred: {problem}", file=sys.stderr)
    if args.schema_out:
        print("warning: --schema-out not written (no schema)", file=sys.stderr)
    return {
        "n_rows": len(frame),
        "label": args.label,
        "label_guessed": guessed,
        "columns": list(map(str, frame.columns)),
        "schema": None,
        "schema_problem": problem,
        "read_notes": list(frame.attrs.get("read_notes", ())),
        "suggested_drops": drops,
        "suggested_drop_option": drop_option(drops) if drops else "",
        "numeric_suspects": suspects,
    }


def cmd_info(args) -> dict:
    """``info``: the CSV's schema, feature types, depths and suggested drops, read
    from the records: NOT private, for the user (``--schema-out`` marks it inferred)."""
    check_outputs([args.data, args.schema], {"--schema-out": args.schema_out})
    frame = read_data(args)
    guessed = args.label is None
    if guessed:
        # No --label: guess it from the data, and say it is a guess.
        args.label = guess_label(frame, list(suggest_drops(frame)))
        print(f"note: --label not given; guessed {args.label!r} — check it", file=sys.stderr)
    if args.label not in frame.columns:
        raise ValueError(
            f"label column {args.label!r} is not in {args.data}; columns are: "
            + ", ".join(frame.columns[:20])
            + f" (a guess: --label {guess_label(frame, list(suggest_drops(frame)))})"
        )
    drops = suggest_drops(frame, args.label)
    keep = set(split_list(args.keep, str, "--keep")) if args.keep else set()
    kept = frame.drop(columns=[c for c in drops if c not in keep])
    suspects = numeric_suspects(kept)
    # Like train, the inferred schema leaves the suggested columns out; one that still
    # cannot be inferred is described, not fatal: `info` exists to describe the file.
    try:
        schema = Schema.load(args.schema) if args.schema else infer_schema(kept, args.label)
    except ValueError as exc:
        if args.schema:
            raise
        return _info_without_schema(args, frame, drops, suspects, guessed, str(exc))
    if schema.label != args.label:
        raise ValueError(f"the schema's label is {schema.label!r} but --label is {args.label!r}")
    s, r = len(schema.continuous), len(schema.discrete)
    branching = [2] * s + [len(f.values) for f in schema.discrete]
    # The records rule divides the records among the default forest's trees.
    forest_trees = resolved_trees(
        get_algorithm("fletcher_islam").defaults()["n_estimators"], len(frame)
    )
    depths = {
        rule: resolve_depth(
            rule, s, r, n_records=len(frame), branching=branching, n_trees=forest_trees
        )
        for rule in DEPTH_RULES
    }
    if args.schema_out:
        write_text(args.schema_out, schema.to_json())
    return {
        "n_rows": len(frame),
        "label": schema.label,
        "label_guessed": guessed,
        "classes": list(schema.classes),
        "n_continuous": s,
        "n_discrete": r,
        "features": {f.name: f.kind for f in schema.features},
        "schema": schema.to_dict(),
        "schema_inferred": schema.inferred,
        "depth": depths,
        "read_notes": list(frame.attrs.get("read_notes", ())),
        "suggested_drops": drops,
        "suggested_drop_option": drop_option(drops) if drops else "",
        "numeric_suspects": suspects,
        "notes": [
            "the jpw depth uses the record count, which is not private",
            *(
                ["suggested drops and numeric suspects read the raw records: not private"]
                if drops or suspects
                else []
            ),
        ],
    }


def _add_info(sub) -> None:
    p = sub.add_parser("info", help="schema, feature types and depths of a CSV")
    data_args(p, label=False)
    p.add_argument(
        "--schema-out",
        help='write the schema JSON here (an inferred one is marked "inferred": remove '
        "the marks once every entry is checked against public knowledge)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)


def add_parsers(sub) -> None:
    """Add ``info`` to ``sub``,
    the subparsers of ``python -m dpviz``, in the order --help lists them."""
    for add in (_add_info,):
        add(sub)
