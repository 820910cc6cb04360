"""Commands that look at a mechanism or a configuration's privacy: ``depth``,
``mechanism``, ``audit`` (a leaf mechanism's exact audit, or an empirical lower bound on
an algorithm's whole release) and ``attack`` (a membership-inference attack on the
user's records).

``depth``, ``mechanism`` and ``audit --mechanism`` read no records. ``audit --release``
fits on synthetic neighbouring datasets with fresh secret noise. ``attack`` reads the
CSV's records: its numbers are NOT private, a diagnostic printed for the data owner and
never released.
"""

from __future__ import annotations

import sys

import numpy as np

from dpviz.cli.common import (
    CliError,
    data_args,
    epsilon_float,
    features_int,
    int_between,
    model_args,
    model_params,
    positive_int,
    seed_int,
    warn_algorithm,
    warn_epsilon,
    warn_mechanism,
    warn_noise_seed,
)
from dpviz.cli.reading import load_data
from dpviz.models.registry import ALGORITHMS
from dpviz.models.trees.depth import depth_cap_note, resolve_depth
from dpviz.privacy.audit import audit
from dpviz.privacy.mechanisms import get_mechanism, smooth_sensitivity
from dpviz.privacy.schema import MAX_CLASSES

__all__ = [
    "MAX_COUNT",
    "NOT_PRIVATE_ATTACK",
    "add_parsers",
    "cmd_attack",
    "cmd_audit",
    "cmd_depth",
    "cmd_mechanism",
]


def cmd_depth(args) -> dict:
    """``depth``: the depth a rule gives to a count of features (reads no records)."""
    note = depth_cap_note(args.rule, args.continuous, args.discrete)
    if note:
        print(f"note: {note}", file=sys.stderr)
    depth = resolve_depth(args.rule, args.continuous, args.discrete)
    print(depth)
    return {}


def cmd_mechanism(args) -> dict:
    """``mechanism``: a leaf mechanism's exact output probabilities on given counts
    (reads no records)."""
    warn_epsilon(args.epsilon)
    mech = get_mechanism(args.name)
    counts = np.asarray([_parse_counts(args.counts)])
    warn_mechanism(mech.id)
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
        extra += ["--variant"] if args.variant is not None else []
        if extra:
            raise CliError(f"{', '.join(extra)} apply to --release only")
        if args.epsilon is None:
            raise CliError("the following arguments are required: --epsilon")
        classes = 2 if args.classes is None else args.classes
        max_count = 40 if args.max_count is None else args.max_count
        result = audit(args.mechanism, args.epsilon, classes, max_count)
        warn_mechanism(args.mechanism)
        return result.to_dict()
    if args.classes is not None or args.max_count is not None:
        raise CliError("--classes and --max-count apply to --mechanism only")
    from dpviz.evaluation.release_audit import audit_release

    forest = args.variant in ("macro_f1", "accuracy") and args.release == "fletcher_islam"
    dpboost = args.variant != "accuracy" and args.release == "dpboost"
    if args.variant is not None and not (forest or dpboost):
        raise CliError(
            "--variant audits dpboost's release (grown, macro_f1, random) or "
            "fletcher_islam's score histogram (macro_f1, accuracy), not another's"
        )
    if args.variant is not None and args.sharpened:
        raise CliError("--variant audits the registry defaults, not with --sharpened")
    found = audit_release(
        args.release,
        epsilon=args.epsilon,  # None: 1, or 10 for a --variant (4 for random)
        n_runs=args.runs,
        confidence=0.95 if args.confidence is None else args.confidence,
        random_state=0 if args.seed is None else args.seed,
        sharpened=args.sharpened,
        variant=args.variant,
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
    for part in found.parts:
        if part.refuted:
            verdict += f"; REFUTED: {part.name} leaks more than its claimed noise law allows"
            print(
                f"warning: {found.algorithm}: {part.name}: empirical lower bound "
                f"{part.lower_bound:.3f} exceeds its claimed loss {part.claimed_loss:.3f}",
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
    if found.variant is not None:
        result["variant"] = found.variant
        result["parts"] = [
            {
                "name": p.name,
                "claimed_loss": round(p.claimed_loss, 6),
                "lower_bound": round(p.lower_bound, 6),
                "refuted": p.refuted,
                "event": p.event,
            }
            for p in found.parts
        ]
        if not args.json:  # one line per entry read
            result["parts"] = {
                p.name: f"lower bound {p.lower_bound:.3f} "
                + ("> " if p.refuted else "≤ ")
                + f"claimed {p.claimed_loss:.3f}"
                + (" REFUTED" if p.refuted else "")
                for p in found.parts
            }
    if args.json:
        result["events"] = found.to_dict()["events"]
    return result


def cmd_attack(args) -> dict:
    """``attack``: a membership-inference attack on this configuration over the CSV's
    records (NOT private: a diagnostic for the data owner, printed, never released), and
    with ``--release-audit`` the whole-release audit on a pair built from the schema."""
    from dpviz.app.audit import AuditConfig, attack_verdict, audit_verdict, summary
    from dpviz.evaluation.attack import membership_attack
    from dpviz.evaluation.audit_pair import audit_configuration

    warn_epsilon(args.epsilon)
    params = model_params(args)
    warn_algorithm(args.algorithm, params)
    warn_noise_seed(args)
    _, schema, encoded = load_data(args)
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


def _add_depth(sub) -> None:
    p = sub.add_parser("depth", help="tree depth under a depth rule")
    p.add_argument("--continuous", type=features_int, required=True)
    p.add_argument("--discrete", type=features_int, required=True)
    p.add_argument("--rule", default="theorem2", choices=["theorem2", "half", "full"])
    p.set_defaults(func=cmd_depth)


def _add_mechanism(sub) -> None:
    p = sub.add_parser("mechanism", help="exact output probabilities of a leaf mechanism")
    p.add_argument("--name", required=True)
    p.add_argument("--counts", required=True)
    p.add_argument("--epsilon", type=epsilon_float, required=True)
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
        type=epsilon_float,
        help="budget (required with --mechanism; default 1 with --release, 10 with --variant)",
    )
    p.add_argument(
        "--classes", type=int_between(2, MAX_CLASSES), help="--mechanism: classes (default 2)"
    )
    p.add_argument(
        "--max-count", type=positive_int, help="--mechanism: largest count (default 40)"
    )
    p.add_argument(
        "--runs",
        type=positive_int,
        help="--release: fits per dataset (default: the algorithm's, a few seconds)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        help="--release: joint confidence of the bounds (default 0.95)",
    )
    p.add_argument(
        "--seed",
        type=seed_int,
        help="--release: public seed (tree structure, record→tree hash; default 0); never "
        "the noise",
    )
    p.add_argument(
        "--sharpened",
        action="store_true",
        help="--release: audit the sharpened configuration (one leaf carries the budget) "
        "instead of the registry defaults a user's fit releases",
    )
    p.add_argument(
        "--variant",
        choices=["grown", "macro_f1", "random", "accuracy"],
        help="--release dpboost: audit the model grown for large ε (6,400 records), the "
        "macro_f1 objective's score histogram or the random-split mode (3,000 records of "
        "three classes), on their own pairs, with a bound per booked entry read (default "
        "ε 10; 4 for random); --release fletcher_islam: the score histogram of the "
        "macro_f1 or the default accuracy objective (from ε 1)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_audit)


def _add_attack(sub) -> None:
    p = sub.add_parser(
        "attack",
        help="membership-inference attack on a configuration over your records: ROC AUC "
        "and advantage against the ε-DP bound, beside the non-private reference (NOT "
        "private: a diagnostic)",
    )
    data_args(p)
    model_args(p, cluster=False)
    p.add_argument(
        "--release-audit",
        action="store_true",
        help="also run the whole-release audit of this configuration on a neighbouring "
        "pair built from the schema (a lower bound on ε that can refute the claim)",
    )
    p.add_argument(
        "--runs",
        type=positive_int,
        default=300,
        help="--release-audit: fits per dataset (default 300)",
    )
    p.set_defaults(func=cmd_attack)


def add_parsers(sub) -> None:
    """Add ``depth``, ``mechanism``, ``audit`` and ``attack`` to ``sub``,
    the subparsers of ``python -m dpviz``, in the order --help lists them."""
    for add in (_add_depth, _add_mechanism, _add_audit, _add_attack):
        add(sub)
