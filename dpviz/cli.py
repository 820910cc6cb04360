"""Command line: ``python -m dpviz <command>``.

Errors print one line ``error: ...`` on stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import secrets
import shlex
import sys
import warnings
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.evaluation import defaults
from dpviz.evaluation.cross_validation import cross_validate
from dpviz.evaluation.reproduce import FIGURES, reproduce, to_markdown
from dpviz.evaluation.sweep import SweepCancelled, SweepGrid, reference_costs, run_sweep
from dpviz.models.columns import PEOPLE_REASON, guess_label, suggest_drops
from dpviz.models.data import _sniff_delimiter, encode, numeric_suspects, read_csv
from dpviz.models.depth import (
    COUNTED_RULES,
    DEPTH_RULES,
    MAX_FEATURES,
    MAX_REPEATS,
    check_work,
    depth_cap_note,
    forest_work_seconds,
    resolve_depth,
)
from dpviz.models.files import (
    INFERRED_REFUSAL,
    ReleasedBoost,
    ReleasedForest,
    check_forest_export,
    load_model,
    release,
)
from dpviz.models.forest import AUTO_TREES, DATA_SPLITS, DPRandomForestClassifier
from dpviz.models.objective import ACCURACY, OBJECTIVES
from dpviz.models.objective import HELP as OBJECTIVE_HELP
from dpviz.models.outputs import check_outputs, csv_text, write_csv, write_text
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.models.sizing import suggest_trees
from dpviz.privacy.audit import audit
from dpviz.privacy.mechanisms import _check_epsilon, get_mechanism, smooth_sensitivity
from dpviz.privacy.noise import NOT_PRIVATE_NOTE
from dpviz.privacy.schema import (
    DECLARED_BY_SCHEMA_OPTION,
    MAX_CLASSES,
    MISSING,
    PrivacyLeakWarning,
    Schema,
    infer_schema,
)
from dpviz.privacy.session_ledger import Release, append_jsonl, lineage_of, read_jsonl


class CliError(Exception):
    """A user error: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise CliError(message)


def _int_at_least(low: int):
    """An argparse type: a whole number ≥ ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
        return value

    return parse


def _int_between(low: int, high: int, hint: str = ""):
    """An argparse type: a whole number from ``low`` to ``high``."""
    at_least = _int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(
                f"must be at most {high:,}, got {value:,}" + (f"; {hint}" if hint else "")
            )
        return value

    return parse


_positive_int = _int_at_least(1)


def _tree_item(text: str) -> int | str:
    return AUTO_TREES if text.strip() == AUTO_TREES else int(text)


def _tree_count(text: str) -> int | str:
    """An argparse type: "auto" or a whole number ≥ 1 (a forest's tree count)."""
    return AUTO_TREES if text.strip() == AUTO_TREES else _positive_int(text)


# Seeds feed numpy's SeedSequence and 64-bit hashes: any whole number below 2^63.
_whole = _int_between(0, 2**63 - 1)
_repeats = _int_between(1, MAX_REPEATS, "repeat fewer times")
_n_features = _int_between(0, MAX_FEATURES)
_workers = _int_between(1, 32, "a local cluster of more workers than cores only slows down")
_n_jobs = _int_between(-1, 64)


# Above this no noise is left to draw (e^-ε underflows long before): refused, not run.
MAX_EPSILON = 1e6


def _epsilon(text: str) -> float:
    try:
        value = _check_epsilon(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > MAX_EPSILON:
        raise argparse.ArgumentTypeError(
            f"ε = {value:g} is above {MAX_EPSILON:g}: no noise is left and the ε means nothing; "
            "use the non-private references (ε = ∞) for a noise-free comparison"
        )
    return value


EPSILON_SENSIBLE = (1e-3, 1e2)


def _warn_epsilon(epsilon: float) -> None:
    """Say what an ε outside [1e-3, 1e2] means: a guarantee in name only, or pure noise."""
    low, high = EPSILON_SENSIBLE
    if epsilon > high:
        print(
            f"warning: ε = {epsilon:g} is a guarantee in name only: one person may make any "
            f"output up to e^{epsilon:g} times more likely (e^100 ≈ 10^43 already bounds "
            f"nothing); the noise is negligible. Sensible values lie in [{low:g}, {high:g}]",
            file=sys.stderr,
        )
    elif epsilon < low:
        print(
            f"warning: ε = {epsilon:g} makes the noise swamp every count: the released "
            f"outputs are (almost) pure noise and the model learns nothing. Sensible values "
            f"lie in [{low:g}, {high:g}]",
            file=sys.stderr,
        )


def _depth_rule(text: str) -> str | int:
    return int(text) if text.strip().lstrip("-").isdigit() else text


def _emit(result: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(_json_safe(result)))
        return
    _emit_lines(result, "")


def _emit_lines(result: dict, prefix: str) -> None:
    """One line per entry; nested entries as ``outer.inner``, a mean ± std on one line."""
    for key, value in result.items():
        name = prefix + key
        if isinstance(value, dict) and {"mean", "std"} <= value.keys():
            print(f"{name:>26}: {value['mean']:.4f} ± {value['std']:.4f}")
        elif isinstance(value, dict):
            _emit_lines(value, name + ".")
        else:
            print(f"{name:>26}: {value}")


def _json_safe(value):
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_data(args) -> pd.DataFrame:
    """The CSV of ``--data`` with ``--drop`` columns removed; says what reading changed
    (decimal commas, NA cells) on stderr."""
    frame = read_csv(args.data)
    for note in frame.attrs.get("read_notes", ()):
        print(f"note: {note}", file=sys.stderr)
    text = getattr(args, "drop", None)
    drop = _split_list(text, str, "--drop") if text is not None else []
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


def _load_data(args) -> tuple:
    frame = _read_data(args)
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
    keep = _split_list(args.keep, str, "--keep") if getattr(args, "keep", None) else []
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


def _warn_mechanism(name: str) -> None:
    mech = get_mechanism(name)
    if not mech.private:
        print(
            f"warning: mechanism {name} is NOT differentially private: {mech.description}",
            file=sys.stderr,
        )


def cmd_depth(args) -> dict:
    note = depth_cap_note(args.rule, args.continuous, args.discrete)
    if note:
        print(f"note: {note}", file=sys.stderr)
    depth = resolve_depth(args.rule, args.continuous, args.discrete)
    print(depth)
    return {}


def cmd_mechanism(args) -> dict:
    _warn_epsilon(args.epsilon)
    mech = get_mechanism(args.name)
    counts = np.asarray([_parse_counts(args.counts)])
    _warn_mechanism(mech.id)
    return {
        "mechanism": mech.id,
        "probabilities": mech.probabilities(counts, args.epsilon)[0].tolist(),
        "smooth_sensitivity": float(smooth_sensitivity(counts, args.epsilon)[0]),
        "flip_probability": float(mech.flip_probability(counts, args.epsilon)[0]),
        "private": mech.private,
    }


def _parse_counts(text: str) -> list[int]:
    try:
        counts = [int(v) for v in text.split(",")]
    except ValueError:
        raise ValueError(
            f"--counts must be whole numbers separated by commas, got {text!r}"
        ) from None
    if len(counts) < 2 or min(counts) < 0:
        raise ValueError("--counts needs at least two non-negative counts, e.g. 5,10")
    if len(counts) > MAX_CLASSES:
        raise ValueError(f"--counts lists {len(counts)} classes; at most {MAX_CLASSES}")
    if max(counts) > MAX_COUNT:
        raise ValueError(
            f"--counts must be at most {MAX_COUNT:,} each (a leaf never holds more records)"
        )
    return counts


# A leaf's count: above 10^12 records no dataset dpviz reads could reach it, and the
# float64 formulas of the mechanisms stay exact below 2^53.
MAX_COUNT = 10**12


def cmd_audit(args) -> dict:
    """``audit --mechanism``: the exact audit of a leaf mechanism's formula.
    ``audit --release``: the empirical audit of an algorithm's whole release
    (:func:`dpviz.evaluation.release_audit.audit_release`): a lower bound on ε that can refute the
    ledger's ε, never prove it."""
    if args.release is None:
        extra = [f"--{n}" for n in ("runs", "confidence", "seed") if getattr(args, n) is not None]
        extra += ["--sharpened"] if args.sharpened else []
        if extra:
            raise CliError(f"{', '.join(extra)} apply to --release only")
        if args.epsilon is None:
            raise CliError("the following arguments are required: --epsilon")
        classes = 2 if args.classes is None else args.classes
        max_count = 40 if args.max_count is None else args.max_count
        result = audit(args.mechanism, args.epsilon, classes, max_count)
        _warn_mechanism(args.mechanism)
        return result.to_dict()
    if args.classes is not None or args.max_count is not None:
        raise CliError("--classes and --max-count apply to --mechanism only")
    from dpviz.evaluation.release_audit import audit_release

    found = audit_release(
        args.release,
        epsilon=1.0 if args.epsilon is None else args.epsilon,
        n_runs=args.runs,
        confidence=0.95 if args.confidence is None else args.confidence,
        random_state=0 if args.seed is None else args.seed,
        sharpened=args.sharpened,
    )
    if found.consistent is None:
        verdict = "no proven ε to check: the ledger claims none"
    elif found.consistent:
        verdict = (
            "consistent: the lower bound does not exceed the ledger's ε (an empirical bound "
            "can only refute a claim, never prove privacy)"
        )
    else:
        verdict = (
            f"REFUTED: with confidence {found.confidence:g} the release leaks more than the "
            "ledger's ε between two neighbouring datasets"
        )
        print(
            f"warning: {found.algorithm}: empirical lower bound {found.lower_bound:.3f} exceeds "
            f"the ledger's ε = {found.ledger_epsilon:g}",
            file=sys.stderr,
        )
    result = {
        "algorithm": found.algorithm,
        "epsilon": found.epsilon,
        "ledger_epsilon": found.ledger_epsilon,
        "lower_bound": round(found.lower_bound, 6),
        "consistent": found.consistent,
        "verdict": verdict,
        "event": found.event,
        "hits_d": found.hits_d,
        "hits_d_prime": found.hits_d_prime,
        "n_runs": found.n_runs,
        "confidence": found.confidence,
        "claimed_pair_loss": found.claimed_pair_loss,
        "reads": found.reads,
        "params": found.params,
        "sharpened": found.sharpened,
        "seconds": round(found.seconds, 3),
    }
    if args.json:
        result["events"] = found.to_dict()["events"]
    return result


def _model_params(args) -> dict:
    """The algorithm's parameters the user set; the registry supplies the rest."""
    given = {
        "n_estimators": args.trees,
        "depth": args.depth,
        "mechanism": args.mechanism,
        "data_split": args.split,
        "max_depth": args.max_depth,
        "steps": args.steps,
        "n_bins": args.bins,
        "objective": args.objective,
    }
    params = {k: v for k, v in given.items() if v is not None}
    params.update(_extra_params(args))
    get_algorithm(args.algorithm).make(args.epsilon, **params)
    return params


def _extra_params(args) -> dict:
    """``--param NAME=VALUE`` for any registry parameter, read as its default's type."""
    algorithm = get_algorithm(args.algorithm)
    known = {p.name: p for p in algorithm.parameters}
    out = {}
    for text in getattr(args, "param", None) or []:
        name, sep, raw = text.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not name:
            raise ValueError(f"--param takes NAME=VALUE, e.g. learning_rate=0.1; got {text!r}")
        if name not in known:
            raise ValueError(
                f"{algorithm.id} has no parameter {name!r}; it takes " + ", ".join(known)
            )
        default = known[name].default
        try:
            if isinstance(default, bool):
                if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value = raw.lower() in ("true", "1", "yes")
            elif isinstance(default, int):
                value = int(raw)
            elif isinstance(default, float):
                value = float(raw)
            else:
                value = _depth_rule(raw) if raw.strip().lstrip("-").isdigit() else raw
        except ValueError:
            kind = type(default).__name__
            raise ValueError(f"--param {name} must be a {kind}, got {raw!r}") from None
        out[name] = value
    return out


def cmd_evaluate(args) -> dict:
    _warn_epsilon(args.epsilon)
    params = _model_params(args)
    _warn_algorithm(args.algorithm, params)
    _warn_noise_seed(args)
    _, schema, encoded = _load_data(args)
    _note_depth(args.algorithm, params.get("depth"), schema)
    _check_evaluate_work(args, encoded, schema, params)
    progress = None
    if not args.json and sys.stderr.isatty():

        def progress(done, total, message):
            print(f"\r{message} ({done}/{total})", end="", file=sys.stderr)

    with _cluster(args) as client:
        result = cross_validate(
            encoded,
            schema,
            folds=args.folds,
            repeats=args.repeats,
            seed=args.seed,
            noise_seed=args.noise_seed,
            progress=progress,
            epsilon=args.epsilon,
            algorithm=args.algorithm,
            client=client,
            **params,
        )
    result["encoding"] = encoded.report.messages()
    return result


def _cluster(args):
    """The Dask client the user asked for (--scheduler / --local-cluster), or None."""
    if getattr(args, "scheduler", None) or getattr(args, "local_cluster", None):
        from dpviz.distributed import dask_client

        return dask_client(
            args.scheduler, args.local_cluster, dashboard=getattr(args, "dashboard", False)
        )
    return nullcontext(None)


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
    check_outputs([args.data, args.schema], {"--out": args.out, "--ledger": args.ledger})
    _session_ledger(args)
    _warn_epsilon(args.epsilon)
    params = _model_params(args)
    _warn_algorithm(args.algorithm, params)
    _warn_noise_seed(args)
    algorithm = get_algorithm(args.algorithm)
    if args.scheduler or args.local_cluster:
        if not algorithm.forest_family:
            raise ValueError(
                f"training on a cluster is for the forest family (fletcher_islam, jpw); "
                f"train {args.algorithm} without --scheduler / --local-cluster"
            )
        model, n_records = _train_on_cluster(args, algorithm, params)
    else:
        _, schema, encoded = _load_data(args)
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
        _check_forest_work(model, schema)
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
        "depth": int(getattr(model, "depth_", getattr(model, "max_depth", 0))),
        "n_records": n_records,
        "fit_seconds": model.fit_seconds_,
        "privacy": {
            "epsilon_total": ledger.epsilon_total,
            "private": ledger.private,
            "summary": ledger.describe(),
        },
    }


def _estimate_depth(rule, schema: Schema, n_records: int) -> int:
    """The depth a forest rule gives, for a work estimate (jpw from the row count)."""
    s, r = len(schema.continuous), len(schema.discrete)
    branching = [2] * s + [len(f.values) for f in schema.discrete]
    return resolve_depth(rule, s, r, n_records=max(1, n_records), branching=branching)


def _check_evaluate_work(args, encoded, schema: Schema, params: dict) -> None:
    """Refuse a forest cross-validation estimated to run for hours, before it starts."""
    algo = get_algorithm(args.algorithm)
    if not algo.forest_family:
        return
    defaults = algo.defaults()
    rule = params.get("depth", defaults.get("depth", "theorem2"))
    seconds = forest_work_seconds(
        encoded.n_records,
        len(schema.continuous),
        _resolved_trees(
            params.get("n_estimators", defaults.get("n_estimators")), encoded.n_records
        ),
        _estimate_depth(rule, schema, encoded.n_records),
        data_split=params.get("data_split", defaults.get("data_split", "disjoint")),
        folds=args.folds,
        repeats=args.repeats,
    )
    check_work(seconds, "--repeats, --folds, --trees or --depth, or use fewer rows")


def _resolved_trees(trees, n_records: int) -> int:
    """A tree count, "auto" read as the count it gives ``n_records`` records."""
    return suggest_trees(n_records).n_estimators if trees == AUTO_TREES else int(trees)


def _note_depth(algorithm: str, rule, schema: Schema) -> None:
    """A note when a forest's depth rule is capped at MAX_DEPTH on this schema."""
    algo = get_algorithm(algorithm)
    if not algo.forest_family:
        return
    rule = algo.defaults().get("depth", "theorem2") if rule is None else rule
    if rule not in COUNTED_RULES:
        note = depth_cap_note(rule, len(schema.continuous), len(schema.discrete))
        if note:
            print(f"note: {note}", file=sys.stderr)


def _rule_depth(model, schema: Schema) -> int | None:
    """The depth a forest's rule gives on ``schema`` (None for the data-read jpw rule);
    prints a note when the rule's depth is capped."""
    rule = getattr(model, "depth", None)
    if rule is None or rule in COUNTED_RULES or not hasattr(model, "n_estimators"):
        return None
    s, r = len(schema.continuous), len(schema.discrete)
    note = depth_cap_note(rule, s, r)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return resolve_depth(rule, s, r)


def _check_forest_work(model, schema: Schema) -> None:
    """Before fitting a forest for export: refuse one whose file could not list it."""
    if isinstance(model, DPRandomForestClassifier):
        depth = _rule_depth(model, schema)
        if depth is not None:
            check_forest_export(schema, depth, model.tree_count())


def _train_on_cluster(args, algorithm, params):
    """Fit partition by partition on Dask: the CSV is never loaded whole."""
    from dpviz.distributed import fit_dask, read_dask

    if not args.schema:
        raise ValueError("training on a cluster needs a public schema: pass --schema")
    schema = Schema.load(args.schema)
    # The same fixed declaration as a --schema file read whole (see _declared).
    declaration = "" if schema.inferred else DECLARED_BY_SCHEMA_OPTION
    schema = dataclasses.replace(schema, declaration=declaration)
    ddf = read_dask(args.data, schema)
    missing = [c for c in [*schema.feature_names, schema.label] if c not in ddf.columns]
    if missing:
        raise ValueError(f"{args.data} lacks the schema's columns: {', '.join(missing[:10])}")
    model = algorithm.make(
        args.epsilon, random_state=args.seed, schema=schema, noise_seed=args.noise_seed, **params
    )
    _check_forest_work(model, schema)
    with _cluster(args):
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
    }


def _id_columns(args, frame: pd.DataFrame, outputs: list[str]) -> list[str]:
    """The ``--id`` columns, checked: each a column of the data, named once, and not a
    name the predictions take."""
    if args.id is None:
        return []
    ids = _split_list(args.id, str, "--id")
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
                sep=_sniff_delimiter(text[:65536]),
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
    _warn_noise_seed(args)
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
    check_outputs([args.data, args.schema], {"--schema-out": args.schema_out})
    frame = _read_data(args)
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
    keep = set(_split_list(args.keep, str, "--keep")) if args.keep else set()
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
    forest_trees = _resolved_trees(
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


def _split_list(text: str, convert, what: str) -> list:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"the {what} list is empty")
    try:
        return [convert(t) for t in items]
    except (ValueError, argparse.ArgumentTypeError):
        raise ValueError(f"could not read the {what} list {text!r}") from None


def _progress_bar(done: int, total: int, message: str) -> None:
    width = 30
    filled = int(width * done / total)
    end = "\n" if done == total else ""
    print(
        f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {message}",
        end=end,
        file=sys.stderr,
        flush=True,
    )


def cmd_sweep(args) -> dict:
    check_outputs([args.data, args.schema], {"--out": args.out, "--summary": args.summary})
    algorithms = _split_list(args.algorithm, str, "--algorithm")
    grid = SweepGrid(
        algorithms=algorithms,
        epsilons=_split_list(args.epsilons, float, "--epsilons"),
        # SweepGrid says what a tree count must be ("auto" or a whole number ≥ 1).
        n_estimators=_split_list(args.trees, _tree_item, "--trees"),
        depths=_split_list(args.depth, _depth_rule, "--depth"),
        mechanisms=_split_list(args.mechanism, str, "--mechanism"),
        data_splits=_split_list(args.split, str, "--split"),
        references=not args.no_references,
        presets={name: {"objective": args.objective} for name in algorithms},
    )
    _warn_noise_seed(args)
    for epsilon in grid.epsilons:
        _warn_epsilon(float(epsilon))
    for name in grid.algorithms:
        if name == "fletcher_islam":
            for mech in grid.mechanisms:
                _warn_mechanism(mech)
        else:
            _warn_algorithm(name, {})
    _, schema, encoded = _load_data(args)
    if "fletcher_islam" in grid.algorithms:
        seconds = 0.0
        for trees, rule, split in grid.structures:
            _note_depth("fletcher_islam", rule, schema)
            seconds += forest_work_seconds(
                encoded.n_records,
                len(schema.continuous),
                _resolved_trees(trees, encoded.n_records),
                _estimate_depth(rule, schema, encoded.n_records),
                data_split=split,
                folds=args.folds,
                repeats=args.repeats,
            )
        check_work(seconds, "--repeats, --folds, --trees or --depth, or use fewer rows")
    with _cluster(args) as client:
        result = run_sweep(
            encoded,
            schema,
            grid,
            client=client,
            folds=args.folds,
            repeats=args.repeats,
            seed=args.seed,
            noise_seed=args.noise_seed,
            n_jobs=args.n_jobs,
            progress=None if args.quiet else _progress_bar,
        )
    write_csv(args.out, result.results)
    if args.summary:
        write_csv(args.summary, result.summary)
    return {
        "results": str(args.out),
        "summary": args.summary,
        "rows": len(result.results),
        "grid_points": grid.n_points,
        "references": reference_costs(result.results),  # what each was, and its cost
    }


def cmd_reproduce(args) -> dict:
    check_outputs([args.reference], {"--out": args.out})
    datasets = None if args.datasets_dir is None else Path(args.datasets_dir)
    if args.out and datasets and Path(args.out).resolve().parent == datasets.resolve():
        raise ValueError(
            f"--out {args.out!r} is in the datasets folder {args.datasets_dir!r}, an input "
            "of this command: choose another folder"
        )
    table = reproduce(
        args.figure,
        reference_csv=None if args.reference is None else Path(args.reference),
        datasets_dir=None if args.datasets_dir is None else Path(args.datasets_dir),
        folds=args.folds,
        repeats=args.repeats,
        generator_seeds=args.generator_seeds,
        n_jobs=args.n_jobs,
        progress=None if args.quiet else _progress_bar,
        noise_seed=args.noise_seed,
    )
    if args.out:
        write_csv(args.out, table)
    if args.json:
        return {"rows": _json_safe(table.to_dict(orient="records"))}
    print(to_markdown(table))
    return {}


NOISE_SEED_HELP = (
    "replay the noise from this seed (tests, teaching, the papers' figures): the result is "
    "NOT private, anyone with the seed can subtract the noise. Default: fresh secret noise"
)


def seed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed",
        type=_whole,
        default=defaults.SEED,
        help="public seed: folds, tree structure and the record→tree hash; never the noise",
    )
    p.add_argument("--noise-seed", type=_whole, help=NOISE_SEED_HELP)


def _warn_noise_seed(args) -> None:
    if getattr(args, "noise_seed", None) is not None:
        print(
            f"warning: --noise-seed {args.noise_seed}: {NOT_PRIVATE_NOTE}; the output carries "
            "NO privacy guarantee",
            file=sys.stderr,
        )


def _warn_algorithm(name: str, params: dict) -> None:
    algorithm = get_algorithm(name)
    mechanism = params.get("mechanism", algorithm.defaults().get("mechanism"))
    if mechanism is not None:
        _warn_mechanism(mechanism)
    status = algorithm.status(params)
    if status == "approximate":
        print(
            f"warning: {algorithm.name} is approximate with these settings: its MCMC only "
            "approximates the exponential mechanism, so no ε is proven (NOT DP)",
            file=sys.stderr,
        )
    elif algorithm.privacy != "ε-DP":
        print(f"warning: {algorithm.name} is {algorithm.privacy}", file=sys.stderr)


# --- the parser: shared argument groups, then one function per subcommand --------------------


def _data_args(p: argparse.ArgumentParser, label: bool = True, keep: bool = True) -> None:
    """The CSV to read: file, label column, public schema, columns to leave out (and,
    with ``keep``, personal-data columns to use anyway)."""
    p.add_argument("--data", required=True, help="CSV file")
    p.add_argument("--label", required=label, help="label column")
    p.add_argument("--schema", help="public schema JSON (else inferred: NOT private)")
    p.add_argument(
        "--drop",
        help="comma-separated columns to leave out (IDs, names, free text; `info` suggests them)",
    )
    if keep:
        p.add_argument(
            "--keep",
            help="comma-separated columns that `info` suggests leaving out (personal data: "
            "names, e-mail addresses, phone numbers, postal addresses; ID-like; free text) "
            "to use anyway: the model publishes a discrete feature's values. Without it "
            "they are left out",
        )


def _cluster_args(p: argparse.ArgumentParser) -> None:
    """Where the work runs: a running Dask scheduler or a local cluster of N workers."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", help="address of a running dask.distributed scheduler")
    group.add_argument(
        "--local-cluster",
        type=_workers,
        metavar="N",
        help="start N local Dask worker processes for this command",
    )
    p.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the Dask dashboard of a --local-cluster on 127.0.0.1:8787 (off by "
        "default: it shows the task names to anyone on this machine)",
    )


def _model_args(p: argparse.ArgumentParser, cluster: bool = True) -> None:
    """One algorithm of the registry and its parameters (evaluate, train, attack)."""
    p.add_argument("--algorithm", default=defaults.ALGORITHM, choices=list(ALGORITHMS))
    p.add_argument("--mechanism", help="leaf mechanism (default: the algorithm's)")
    p.add_argument("--epsilon", type=_epsilon, required=True)
    p.add_argument("--trees", type=_tree_count, help="trees, or auto (default: the algorithm's)")
    p.add_argument("--depth", type=_depth_rule, help="depth rule or fixed depth")
    p.add_argument("--split", choices=DATA_SPLITS, help="disjoint or shared records")
    p.add_argument("--max-depth", type=_positive_int, help="tree depth D (greedy trees)")
    p.add_argument(
        "--steps",
        type=_positive_int,
        help="layers per EM step d (dpea; d > 2 samples by MCMC: approximate, not DP; "
        "its chain length is --param mcmc_steps=N)",
    )
    p.add_argument("--bins", type=_positive_int, help="bins per continuous feature")
    _objective_arg(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="any other parameter of the algorithm (repeatable), e.g. learning_rate=0.1",
    )
    seed_args(p)
    p.add_argument("--json", action="store_true")
    if cluster:
        _cluster_args(p)


def _objective_arg(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--objective``: what predictions (and the scores of them) optimise."""
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=default,
        help=OBJECTIVE_HELP + ("" if default else " (default: the model's, else accuracy)"),
    )


def _add_depth(sub) -> None:
    p = sub.add_parser("depth", help="tree depth under a depth rule")
    p.add_argument("--continuous", type=_n_features, required=True)
    p.add_argument("--discrete", type=_n_features, required=True)
    p.add_argument("--rule", default="theorem2", choices=["theorem2", "half", "full"])
    p.set_defaults(func=cmd_depth)


def _add_mechanism(sub) -> None:
    p = sub.add_parser("mechanism", help="exact output probabilities of a leaf mechanism")
    p.add_argument("--name", required=True)
    p.add_argument("--counts", required=True)
    p.add_argument("--epsilon", type=_epsilon, required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_mechanism)


def _add_audit(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="exact worst-case privacy loss of a leaf mechanism (--mechanism), or an "
        "empirical lower bound on the ε of an algorithm's whole release (--release)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--mechanism", help="leaf mechanism: exact audit of its formula")
    what.add_argument(
        "--release",
        choices=list(ALGORITHMS),
        metavar="ALGORITHM",
        help="algorithm: fit it many times on two neighbouring datasets with fresh secret "
        "noise and bound its ε from below (Clopper–Pearson); can refute the ledger's ε, "
        f"never prove it. One of {', '.join(ALGORITHMS)}",
    )
    p.add_argument(
        "--epsilon",
        type=_epsilon,
        help="budget (required with --mechanism; default 1 with --release)",
    )
    p.add_argument(
        "--classes", type=_int_between(2, MAX_CLASSES), help="--mechanism: classes (default 2)"
    )
    p.add_argument(
        "--max-count", type=_positive_int, help="--mechanism: largest count (default 40)"
    )
    p.add_argument(
        "--runs",
        type=_positive_int,
        help="--release: fits per dataset (default: the algorithm's, a few seconds)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        help="--release: joint confidence of the bounds (default 0.95)",
    )
    p.add_argument(
        "--seed",
        type=_whole,
        help="--release: public seed (tree structure, record→tree hash; default 0); never "
        "the noise",
    )
    p.add_argument(
        "--sharpened",
        action="store_true",
        help="--release: audit the sharpened configuration (one leaf carries the budget) "
        "instead of the registry defaults a user's fit releases",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)


def cmd_attack(args) -> dict:
    """``attack``: a membership-inference attack on this configuration over the CSV's
    records (NOT private: a diagnostic for the data owner, printed, never released), and
    with ``--release-audit`` the whole-release audit on a pair built from the schema."""
    from dpviz.app.audit import AuditConfig, attack_verdict, audit_verdict, summary
    from dpviz.evaluation.attack import membership_attack
    from dpviz.evaluation.audit_pair import audit_configuration

    _warn_epsilon(args.epsilon)
    params = _model_params(args)
    _warn_algorithm(args.algorithm, params)
    _warn_noise_seed(args)
    _, schema, encoded = _load_data(args)
    config = AuditConfig(args.algorithm, args.epsilon, params, args.seed)
    result = membership_attack(
        encoded,
        schema,
        algorithm=config.algorithm,
        epsilon=config.epsilon,
        params=config.params,
        random_state=config.seed,
        noise_seed=args.noise_seed,
    )
    print("note: " + NOT_PRIVATE_ATTACK, file=sys.stderr)
    level, _ = attack_verdict(result)
    if level == "error":
        print(f"warning: {attack_verdict(result)[1]}", file=sys.stderr)
    audit = None
    if args.release_audit:
        audit = audit_configuration(
            schema,
            config.algorithm,
            epsilon=config.epsilon,
            params=config.params,
            n_runs=args.runs,
            random_state=config.seed,
        )
        if audit.consistent is False:
            print(f"warning: {audit_verdict(audit)[1]}", file=sys.stderr)
    return summary(result, audit)


NOT_PRIVATE_ATTACK = (
    "the attack's numbers are computed from the records: NOT private, a diagnostic for "
    "the data owner; an attack within the bound does not prove the claimed ε"
)


def _add_attack(sub) -> None:
    p = sub.add_parser(
        "attack",
        help="membership-inference attack on a configuration over your records: ROC AUC "
        "and advantage against the ε-DP bound, beside the non-private reference (NOT "
        "private: a diagnostic)",
    )
    _data_args(p)
    _model_args(p, cluster=False)
    p.add_argument(
        "--release-audit",
        action="store_true",
        help="also run the whole-release audit of this configuration on a neighbouring "
        "pair built from the schema (a lower bound on ε that can refute the claim)",
    )
    p.add_argument(
        "--runs",
        type=_positive_int,
        default=300,
        help="--release-audit: fits per dataset (default 300)",
    )
    p.set_defaults(func=cmd_attack)


def _add_evaluate(sub) -> None:
    p = sub.add_parser("evaluate", help="cross-validate a DP forest")
    _data_args(p)
    _model_args(p)
    p.add_argument("--folds", type=_positive_int, default=defaults.TRAIN_FOLDS)
    p.add_argument("--repeats", type=_repeats, default=1)
    p.set_defaults(func=cmd_evaluate)


def _add_sweep(sub) -> None:
    p = sub.add_parser("sweep", help="cross-validated sweep over a grid of settings")
    _data_args(p)
    p.add_argument(
        "--algorithm",
        default=defaults.ALGORITHM,
        help=f"comma-separated, any of {','.join(ALGORITHMS)}: all on the same folds "
        "(--trees, --depth, --mechanism and --split apply to fletcher_islam; the others "
        "run their defaults)",
    )
    p.add_argument("--epsilons", required=True, help="comma-separated, e.g. 0.01,0.1,1,10")
    forest = defaults.forest_parameters()
    p.add_argument(
        "--trees",
        default=str(forest["n_estimators"]),
        help="comma-separated tree counts, or auto (150 records a tree)",
    )
    p.add_argument("--depth", default=forest["depth"], help="comma-separated depth rules")
    p.add_argument("--mechanism", default=forest["mechanism"], help="comma-separated mechanisms")
    p.add_argument(
        "--split", default=forest["data_split"], help="comma-separated: disjoint,shared"
    )
    p.add_argument("--folds", type=_positive_int, default=defaults.SWEEP_FOLDS)
    _objective_arg(p, default=ACCURACY)
    p.add_argument("--repeats", type=_repeats, default=1)
    seed_args(p)
    p.add_argument("--n-jobs", type=_n_jobs, default=1)
    p.add_argument(
        "--no-references",
        action="store_true",
        help="skip the non-private references: the ε = ∞ forest, scikit-learn's random "
        "forest and, with dpboost, HistGradientBoosting",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="results CSV (one row per point × fold)")
    p.add_argument("--summary", help="summary CSV (mean and std per point)")
    p.add_argument("--json", action="store_true")
    _cluster_args(p)
    p.set_defaults(func=cmd_sweep)


def _add_reproduce(sub) -> None:
    p = sub.add_parser("reproduce", help="re-run a figure of Fletcher & Islam 2017")
    p.add_argument("--figure", required=True, choices=FIGURES)
    p.add_argument("--folds", type=_positive_int, default=5)  # the papers'
    p.add_argument("--repeats", type=_repeats, default=1)
    p.add_argument("--generator-seeds", type=_int_between(1, 100), default=3)
    p.add_argument("--noise-seed", type=_whole, help=NOISE_SEED_HELP)
    p.add_argument(
        "--datasets-dir",
        help="folder with the real datasets (NAME.csv or NAME.csv.gz); default: "
        "../shared/datasets beside the clone, else the clone's bundled data/uci",
    )
    p.add_argument(
        "--reference",
        help="the paper's numbers (fletcher2017_results.csv); default: the package's copy",
    )
    p.add_argument("--n-jobs", type=_n_jobs, default=1)
    p.add_argument("--out", help="also write the table as CSV")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reproduce)


def _add_train(sub) -> None:
    p = sub.add_parser(
        "train", help="train any algorithm of the registry and write its released model JSON"
    )
    _data_args(p)
    _model_args(p)
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
    _objective_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)


def _add_update(sub) -> None:
    p = sub.add_parser("update", help="add a new batch of records to a count model (jpw)")
    p.add_argument("--model", required=True)
    p.add_argument("--data", required=True, help="new, labelled records (disjoint from before)")
    p.add_argument("--out", required=True)
    p.add_argument("--noise-seed", type=_whole, help=NOISE_SEED_HELP)
    p.add_argument("--ledger", metavar="FILE", help=LEDGER_HELP)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_update)


def _add_info(sub) -> None:
    p = sub.add_parser("info", help="schema, feature types and depths of a CSV")
    _data_args(p, label=False)
    p.add_argument(
        "--schema-out",
        help='write the schema JSON here (an inferred one is marked "inferred": remove '
        "the marks once every entry is checked against public knowledge)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_info)


# The subcommands in the order --help lists them.
SUBCOMMANDS = (
    _add_depth,
    _add_mechanism,
    _add_audit,
    _add_attack,
    _add_evaluate,
    _add_sweep,
    _add_reproduce,
    _add_train,
    _add_predict,
    _add_update,
    _add_info,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m dpviz`` parser: one subparser per subcommand, each naming its
    ``cmd_*`` function as ``func``."""
    parser = _Parser(prog="python -m dpviz", description="Differentially private random forests.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def _join_negative_values(argv: list[str]) -> list[str]:
    """argparse reads "-inf" or "-1e-3" after an option as another option: join them."""
    out, skip = [], False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        negative = nxt[:1] == "-" and (nxt[1:2].isdigit() or nxt[1:] in ("inf", "nan"))
        if arg.startswith("--") and "=" not in arg and negative:
            out.append(f"{arg}={nxt}")
            skip = True
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivacyLeakWarning)
        try:
            args = parser.parse_args(argv)
            result = args.func(args)
        except (CliError, ValueError, OSError, SweepCancelled) as exc:
            _flush_warnings(caught)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(f"error: {message}", file=sys.stderr)
            return 2
        except (OverflowError, ZeroDivisionError, RecursionError) as exc:
            # A safety net: every input is bounded, so this is a bug, but never a traceback.
            _flush_warnings(caught)
            print(
                f"error: cannot compute with these inputs ({type(exc).__name__}: {exc}); use "
                "smaller numbers and please report this",
                file=sys.stderr,
            )
            return 2
        except MemoryError:
            print(
                "error: out of memory; use fewer trees, a smaller depth or fewer rows",
                file=sys.stderr,
            )
            return 2
    _flush_warnings(caught)
    if result:
        _emit(result, getattr(args, "json", False))
    return 0


def _flush_warnings(caught) -> None:
    for w in caught:
        if issubclass(w.category, PrivacyLeakWarning):
            print(f"warning: {w.message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
