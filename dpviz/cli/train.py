"""Commands that release or use a model file: ``train`` (fit any algorithm of the
registry and write its released JSON), ``predict`` (a model file on new rows) and
``update`` (a new batch of records added to a count model, jpw).

The model file holds the ledger's releases only; ``--ledger`` books each release in the
session ledger. What reading and predicting find in the records (notes, counts of
missing values) is said on stderr, for the user only.
"""

from __future__ import annotations

import dataclasses
import io
import secrets
import sys
from pathlib import Path

import pandas as pd

from dpviz.cli.common import (
    NOISE_SEED_HELP,
    cluster_client,
    data_args,
    model_args,
    model_params,
    objective_arg,
    seed_int,
    split_list,
    warn_algorithm,
    warn_epsilon,
    warn_noise_seed,
)
from dpviz.cli.reading import load_data
from dpviz.cli.work import check_forest_work
from dpviz.models.files.load import (
    INFERRED_REFUSAL,
    ReleasedBoost,
    ReleasedForest,
    load_model,
    release,
)
from dpviz.models.objective import describe_cut
from dpviz.models.registry import get_algorithm
from dpviz.privacy.schema import DECLARED_BY_SCHEMA_OPTION, MISSING, Schema
from dpviz.privacy.session_ledger import Release, append_jsonl, lineage_of, read_jsonl
from dpviz.tabular.encode import encode, read_csv, sniff_delimiter
from dpviz.tabular.outputs import check_outputs, csv_text, write_csv, write_text

__all__ = ["LEDGER_HELP", "add_parsers", "cmd_predict", "cmd_train", "cmd_update"]


LEDGER_HELP = (
    "append this release (the file, its ledger's ε and words) as one JSON line to FILE, "
    "the session ledger; the total over its lines is printed. Use one file per dataset"
)


def _session_ledger(args) -> None:
    """Read ``--ledger`` before any work: a damaged file is said now, not after a fit."""
    if args.ledger and Path(args.ledger).exists():
        read_jsonl(args.ledger)


def _book_release(args, release: Release) -> dict:
    """Append ``release`` to ``--ledger`` and say the session's total (stderr)."""
    append_jsonl(args.ledger, release)
    session = read_jsonl(args.ledger)
    print(f"note: {args.ledger}: {session.total_text()}", file=sys.stderr)
    total = session.epsilon
    return {
        "file": str(args.ledger),
        "releases": len(session.releases),
        "epsilon_total": None if total is None else float(total),
    }


def cmd_train(args) -> dict:
    """``train``: fit an algorithm and write its released model file, the ledger's
    releases only (ε-DP as the ledger says; NOT private under ``--noise-seed`` or an
    inferred schema); with ``--ledger``, book the release in the session ledger."""
    check_outputs([args.data, args.schema], {"--out": args.out, "--ledger": args.ledger})
    _session_ledger(args)
    warn_epsilon(args.epsilon)
    params = model_params(args)
    warn_algorithm(args.algorithm, params)
    warn_noise_seed(args)
    algorithm = get_algorithm(args.algorithm)
    if args.scheduler or args.local_cluster:
        if not algorithm.forest_family:
            raise ValueError(
                f"training on a cluster is for the forest family (fletcher_islam, jpw); "
                f"train {args.algorithm} without --scheduler / --local-cluster"
            )
        model, n_records = _train_on_cluster(args, algorithm, params)
    else:
        _, schema, encoded = load_data(args)
        if schema.inferred and not args.values_public:
            raise ValueError(
                INFERRED_REFUSAL + "; or pass --values-public to declare the inferred values "
                "public"
            )
        model = algorithm.make(
            args.epsilon,
            random_state=args.seed,
            schema=schema,
            noise_seed=args.noise_seed,
            **params,
        )
        check_forest_work(model, schema)
        model.fit_encoded(encoded, schema)
        n_records = encoded.n_records
    released = release(model, args.algorithm, values_public=args.values_public)
    write_text(args.out, released.to_json())
    ledger = model.ledger_
    declaration = model.schema_.declaration
    booked = {}
    if args.ledger:
        # A new model: a lineage of its own (a public random name), which `update` extends.
        lineage = f"{Path(args.out).name}#{secrets.token_hex(4)}"
        what = f"Released model ({args.algorithm}, ε = {args.epsilon:g})"
        entry = Release.from_ledger(
            "model", what, str(args.out), ledger, lineage=lineage, dataset=str(args.data)
        )
        booked = {"session_ledger": _book_release(args, entry)}
    return {
        **booked,
        **({"schema_declaration": declaration} if declaration else {}),
        "model": str(args.out),
        "algorithm": args.algorithm,
        "kind": released.meta["kind"],
        # the depth the fit used: resolved (greedy "auto", DPBoost grown at large ε)
        "depth": int(getattr(model, "depth_", getattr(model, "max_depth_", 0))),
        "n_records": n_records,
        "fit_seconds": model.fit_seconds_,
        "privacy": {
            "epsilon_total": ledger.epsilon_total,
            "private": ledger.private,
            "summary": ledger.describe(),
        },
        **_floor_summary(model),
        **({"decision": cut} if (cut := describe_cut(model)) else {}),
    }


def _floor_summary(model) -> dict:
    """The floor test's decision for the summary (public: it reads only the release),
    empty where the model runs none or, read back from a file, does not carry the test's
    statistic (greedy trees and DPBoost files: only forest files do)."""
    outcome = getattr(model, "floor_outcome", None)
    outcome = outcome() if outcome is not None else None
    if outcome is None:
        return {}
    return {
        "floor": {
            "test": outcome.test,
            "statistic": outcome.statistic,
            "bar": outcome.bar,
            "trusted": outcome.trusted,
            "summary": outcome.describe(),
        }
    }


def _train_on_cluster(args, algorithm, params):
    """Fit partition by partition on Dask: the CSV is never loaded whole."""
    from dpviz.distributed import fit_dask, read_dask

    if not args.schema:
        raise ValueError("training on a cluster needs a public schema: pass --schema")
    schema = Schema.load(args.schema)
    # The same fixed declaration as a --schema file read whole (see dpviz.cli.reading).
    declaration = "" if schema.inferred else DECLARED_BY_SCHEMA_OPTION
    schema = dataclasses.replace(schema, declaration=declaration)
    ddf = read_dask(args.data, schema)
    missing = [c for c in [*schema.feature_names, schema.label] if c not in ddf.columns]
    if missing:
        raise ValueError(f"{args.data} lacks the schema's columns: {', '.join(missing[:10])}")
    model = algorithm.make(
        args.epsilon, random_state=args.seed, schema=schema, noise_seed=args.noise_seed, **params
    )
    check_forest_work(model, schema)
    with cluster_client(args):
        fit_dask(model, ddf, schema, data_path=args.data)
    for message in model.encoding_report_.messages():
        print(f"note: {message}", file=sys.stderr)
    return model, model.n_train_records_


def cmd_predict(args) -> dict:
    """Predict every row of ``--data`` (none is dropped), the ``--id`` columns first."""
    check_outputs([args.model, args.data], {"--out": args.out})
    model = load_model(args.model)
    _note_claim(model)
    frame = read_csv(args.data, min_columns=1)
    for note in frame.attrs.get("read_notes", ()):
        print(f"note: {note}", file=sys.stderr)
    outputs = ["prediction", *(f"proba[{c}]" for c in model.classes_)]
    ids = _id_columns(args, frame, outputs)
    encoded = encode(frame, model.schema, training=False)
    for message in _prediction_notes(model, frame, encoded):
        print(f"note: {message}", file=sys.stderr)
    floor = _floor_summary(model)
    if floor and not floor["floor"]["trusted"]:
        # Said before the predictions: every one of them is the fall-back's answer.
        print(f"note: {floor['floor']['summary']}", file=sys.stderr)
    proba = model.predict_proba(frame)
    predictions = model.predict(frame, args.objective)
    out = _ids_as_written(args.data, frame, ids)
    out["prediction"] = predictions
    for i, c in enumerate(model.classes_):
        out[f"proba[{c}]"] = proba[:, i]
    if args.out:
        write_csv(args.out, out)
    elif not args.json:
        sys.stdout.write(csv_text(out))
    return {
        "n_records": len(out),
        "out": args.out,
        "id_columns": ids,
        "predictions": predictions.tolist()[:10],
        **floor,
    }


def _id_columns(args, frame: pd.DataFrame, outputs: list[str]) -> list[str]:
    """The ``--id`` columns, checked: each a column of the data, named once, and not a
    name the predictions take."""
    if args.id is None:
        return []
    ids = split_list(args.id, str, "--id")
    unknown = [c for c in ids if c not in frame.columns]
    if unknown:
        raise ValueError(
            f"--id names {', '.join(map(repr, unknown))}, not a column of {args.data}; "
            "columns are: " + ", ".join(frame.columns[:20])
        )
    twice = next((c for i, c in enumerate(ids) if c in ids[:i]), None)
    if twice is not None:
        raise ValueError(f"--id names {twice!r} twice")
    clash = [c for c in ids if c in outputs]
    if clash:
        raise ValueError(
            f"--id column {clash[0]!r} has the name of an output column; rename it in {args.data}"
        )
    return ids


def _ids_as_written(path: str, frame: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
    """The ``ids`` columns as the file writes them. Reading may rewrite a column (dates
    as day numbers, decimal commas, ``NA`` as missing, said in its notes): such an ID
    column is read again as plain text from the file; from a pipe, which cannot be
    read twice, it stays as read, with a warning."""
    out = frame[ids].copy()
    notes = frame.attrs.get("read_notes", ())
    rewritten = [c for c in ids if any(repr(c) in note for note in notes)]
    if not rewritten:
        return out
    if Path(path).is_file():
        text = Path(path).read_text(encoding="utf-8-sig")
        try:
            raw = pd.read_csv(
                io.StringIO(text),
                sep=sniff_delimiter(text[:65536]),
                dtype=str,
                usecols=rewritten,
                keep_default_na=False,
                na_values=[""],
            )
        except (ValueError, pd.errors.ParserError):
            raw = None
        if raw is not None and len(raw) == len(out):
            for name in rewritten:
                out[name] = raw[name].str.strip().to_numpy()
            return out
    print(
        f"warning: --id column(s) {', '.join(map(repr, rewritten))} are written as read "
        "(see the notes above), not as the file writes them",
        file=sys.stderr,
    )
    return out


def _prediction_notes(model, frame: pd.DataFrame, encoded) -> list[str]:
    """What predicting does with missing and unknown values, per column and in rows
    (the schema's public rules; the counts read the records, for the user only). Every
    row is predicted: none is dropped."""
    report, schema = encoded.report, model.schema
    if isinstance(model, ReleasedForest):
        unknown_route = "the trees that split on it abstain for those rows"
    elif isinstance(model, ReleasedBoost):
        unknown_route = "a split on it sends those rows to its left branch"
    else:
        unknown_route = "at a split on it, the tree gives those rows every class equally"
    notes = []
    for feat in schema.continuous:
        if feat.name in report.imputed:
            notes.append(
                f"{report.imputed[feat.name]} rows had no value for continuous "
                f"{feat.name!r}: predicted at its public domain midpoint "
                f"{0.5 * (feat.low + feat.high):g}"
            )
    for name, n in report.routed_low.items():
        notes.append(
            f"{n} missing values of {name!r} go to its lower branch (set to its public min, "
            "the feature's missing-value rule)"
        )
    for name, n in report.missing_discrete.items():
        notes.append(f"{n} missing values of {name!r} were read as the category {MISSING!r}")
    for name, n in report.unknown_discrete.items():
        notes.append(
            f"{n} rows had a value of {name!r} outside its value list (or none): "
            f"predicted anyway, {unknown_route}"
        )
    for name, n in report.clipped.items():
        notes.append(f"{n} values of {name!r} were outside its public domain and were clipped")
    # Rows, not values: a row missing two features counts once.
    defaulted = frame[schema.feature_names].isna().to_numpy().any(axis=1)
    if encoded.discrete.size:
        defaulted |= (encoded.discrete < 0).any(axis=1)
    if defaulted.any():
        notes.append(
            f"all {len(frame):,} rows predicted (none dropped); {int(defaulted.sum()):,} of "
            "them had a missing or unknown feature value and took the route above"
        )
    return notes


def _note_claim(model) -> None:
    """Say on stderr when this installation does not vouch for a model file's claim."""
    if model.claim_note:
        print(
            f"note: {model.claim_note}: its ε, noise mode and leaves are the file's word only",
            file=sys.stderr,
        )


def cmd_update(args) -> dict:
    """``update``: add a disjoint batch of records to a count model (jpw) with fresh
    noise, ε per batch (the note says who is protected at less); with ``--ledger``,
    book it in the model's lineage."""
    check_outputs([args.model, args.data], {"--out": args.out, "--ledger": args.ledger})
    _session_ledger(args)
    model = load_model(args.model)
    _note_claim(model)
    if not isinstance(model, ReleasedForest):
        raise ValueError(
            f"only forest models that release counts (jpw) can be updated; this is a "
            f"{model.meta.get('kind')} model ({model.meta.get('algorithm')}): retrain it on "
            "the union instead"
        )
    frame = read_csv(args.data)
    if model.schema.label not in frame.columns:
        raise ValueError(f"the new data has no label column {model.schema.label!r}")
    warn_noise_seed(args)
    updated = model.updated(frame, noise_seed=args.noise_seed)
    write_text(args.out, updated.to_json())
    # The ε printed holds per batch: say who is protected at less (the ledger's note).
    batches = updated.meta["batches"]
    if batches[0]["epsilon"] is not None:
        first, later = batches[0]["epsilon"], batches[-1]["epsilon"]
        print(
            f"note: the model is {first:g}-DP for a person whose records are all in one batch "
            f"({len(batches)} batches now). A person whose records are in several batches "
            "(the training data again, or this batch twice) is protected only at the sum of "
            f"their ε: {first + later:g} for the training data and this batch, "
            f"{2 * later:g} for this batch twice",
            file=sys.stderr,
        )
    booked = {}
    if args.ledger:
        # The model's lineage, when the ledger holds the file updated (its ledger books
        # the earlier batches, so the lineage costs its largest ledger, not the sum).
        known = Path(args.ledger).exists() and lineage_of(read_jsonl(args.ledger), str(args.model))
        lineage = known or f"{Path(args.model).name}#{secrets.token_hex(4)}"
        what = f"Updated model (batch {len(batches)} of {Path(args.data).name})"
        entry = Release.from_ledger(
            "update",
            what,
            str(args.out),
            updated.meta["privacy"],
            lineage=lineage,
            dataset=str(args.data),
        )
        booked = {"session_ledger": _book_release(args, entry)}
    return {
        **booked,
        "model": str(args.out),
        "n_records": len(frame),
        "privacy": updated.meta["privacy"],
        "batches": batches,
        "claim": "verified" if updated.claim_verified else "not verified",
    }


def _add_train(sub) -> None:
    p = sub.add_parser(
        "train", help="train any algorithm of the registry and write its released model JSON"
    )
    data_args(p)
    model_args(p)
    p.add_argument("--out", required=True)
    p.add_argument("--ledger", metavar="FILE", help=LEDGER_HELP)
    p.add_argument(
        "--values-public",
        action="store_true",
        help="without --schema: declare the inferred class names, discrete values and "
        "exact min/max public, so that the exported model may list them (it does)",
    )
    p.set_defaults(func=cmd_train)


def _add_predict(sub) -> None:
    p = sub.add_parser("predict", help="predict with a model JSON (any algorithm)")
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--out")
    p.add_argument(
        "--id",
        "--keep-columns",
        dest="id",
        metavar="COL[,COL]",
        help="comma-separated input columns (IDs) written first, beside each prediction",
    )
    objective_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)


def _add_update(sub) -> None:
    p = sub.add_parser("update", help="add a new batch of records to a count model (jpw)")
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True, help="new, labelled records (disjoint from before)")
    p.add_argument("--out", required=True)
    p.add_argument("--noise-seed", type=seed_int, help=NOISE_SEED_HELP)
    p.add_argument("--ledger", metavar="FILE", help=LEDGER_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_update)


def add_parsers(sub) -> None:
    """Add ``train``, ``predict`` and ``update`` to ``sub``,
    the subparsers of ``python -m dpviz``, in the order --help lists them."""
    for add in (_add_train, _add_predict, _add_update):
        add(sub)
