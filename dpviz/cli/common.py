"""What every command group shares: argparse types that refuse a bad value in one line,
the option groups several commands take (the CSV, one algorithm and its parameters, the
seeds, a Dask cluster), the warnings a setting earns and small helpers.

Nothing here reads the records; the noise seed's warning says when a result carries no
privacy guarantee (replayable noise, opt-in).
"""

from __future__ import annotations

import argparse
import math
import sys
from contextlib import nullcontext

import numpy as np

from dpviz.evaluation import defaults
from dpviz.models.forest.estimator import AUTO_TREES
from dpviz.models.forest.sizing import SPLIT_CHOICES
from dpviz.models.objective import HELP as OBJECTIVE_HELP
from dpviz.models.objective import OBJECTIVES
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.models.trees.depth import MAX_FEATURES, MAX_REPEATS
from dpviz.privacy.mechanisms import get_mechanism, valid_epsilon
from dpviz.privacy.noise import NOT_PRIVATE_NOTE

__all__ = [
    "EPSILON_SENSIBLE",
    "MAX_EPSILON",
    "NOISE_SEED_HELP",
    "CliError",
    "cluster_args",
    "cluster_client",
    "data_args",
    "depth_rule",
    "epsilon_float",
    "features_int",
    "int_at_least",
    "int_between",
    "jobs_int",
    "json_safe",
    "model_args",
    "model_params",
    "objective_arg",
    "positive_int",
    "repeats_int",
    "seed_args",
    "seed_int",
    "split_list",
    "tree_count",
    "tree_item",
    "warn_algorithm",
    "warn_epsilon",
    "warn_mechanism",
    "warn_noise_seed",
    "workers_int",
]


class CliError(Exception):
    """A user error: reported as one line, exit status 2."""


def int_at_least(low: int):
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


def int_between(low: int, high: int, hint: str = ""):
    """An argparse type: a whole number from ``low`` to ``high``."""
    at_least = int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(
                f"must be at most {high:,}, got {value:,}" + (f"; {hint}" if hint else "")
            )
        return value

    return parse


positive_int = int_at_least(1)


def tree_item(text: str) -> int | str:
    """One item of a comma-separated tree-count list: "auto" or a whole number (the
    sweep's grid says what a count must be)."""
    return AUTO_TREES if text.strip() == AUTO_TREES else int(text)


def tree_count(text: str) -> int | str:
    """An argparse type: "auto" or a whole number ≥ 1 (a forest's tree count)."""
    return AUTO_TREES if text.strip() == AUTO_TREES else positive_int(text)


# Seeds feed numpy's SeedSequence and 64-bit hashes: any whole number below 2^63.
seed_int = int_between(0, 2**63 - 1)
repeats_int = int_between(1, MAX_REPEATS, "repeat fewer times")
features_int = int_between(0, MAX_FEATURES)
workers_int = int_between(1, 32, "a local cluster of more workers than cores only slows down")
jobs_int = int_between(-1, 64)


# Above this no noise is left to draw (e^-ε underflows long before): refused, not run.
MAX_EPSILON = 1e6


def epsilon_float(text: str) -> float:
    """An argparse type: a privacy budget ε > 0 (``inf`` for the non-private
    reference), refused above :data:`MAX_EPSILON`."""
    try:
        value = valid_epsilon(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > MAX_EPSILON:
        raise argparse.ArgumentTypeError(
            f"ε = {value:g} is above {MAX_EPSILON:g}: no noise is left and the ε means nothing; "
            "use the non-private references (ε = ∞) for a noise-free comparison"
        )
    return value


EPSILON_SENSIBLE = (1e-3, 1e2)


def warn_epsilon(epsilon: float) -> None:
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


def depth_rule(text: str) -> str | int:
    """A depth rule's name, or a fixed depth when the text is a whole number."""
    return int(text) if text.strip().lstrip("-").isdigit() else text


def split_list(text: str, convert, what: str) -> list:
    """The comma-separated items of ``text``, each read by ``convert``; a ValueError
    naming the option ``what`` when the list is empty or an item unreadable."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ValueError(f"the {what} list is empty")
    try:
        return [convert(t) for t in items]
    except (ValueError, argparse.ArgumentTypeError):
        raise ValueError(f"could not read the {what} list {text!r}") from None


def json_safe(value):
    """``value`` as plain JSON: numpy scalars as Python ones, NaN and ±inf as null."""
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


NOISE_SEED_HELP = (
    "replay the noise from this seed (tests, teaching, the papers' figures): the result is "
    "NOT private, anyone with the seed can subtract the noise. Default: fresh secret noise"
)


def warn_noise_seed(args) -> None:
    """Say on stderr that a ``--noise-seed`` result carries NO privacy guarantee."""
    if getattr(args, "noise_seed", None) is not None:
        print(
            f"warning: --noise-seed {args.noise_seed}: {NOT_PRIVATE_NOTE}; the output carries "
            "NO privacy guarantee",
            file=sys.stderr,
        )


def warn_mechanism(name: str) -> None:
    """Say on stderr when leaf mechanism ``name`` is NOT differentially private."""
    mech = get_mechanism(name)
    if not mech.private:
        print(
            f"warning: mechanism {name} is NOT differentially private: {mech.description}",
            file=sys.stderr,
        )


def warn_algorithm(name: str, params: dict) -> None:
    """Say on stderr when algorithm ``name`` with ``params`` proves no ε-DP (its
    mechanism, an approximate MCMC, or a weaker guarantee)."""
    algorithm = get_algorithm(name)
    mechanism = params.get("mechanism", algorithm.defaults().get("mechanism"))
    if mechanism is not None:
        warn_mechanism(mechanism)
    status = algorithm.status(params)
    if status == "approximate":
        print(
            f"warning: {algorithm.name} is approximate with these settings: its MCMC only "
            "approximates the exponential mechanism, so no ε is proven (NOT DP)",
            file=sys.stderr,
        )
    elif algorithm.privacy != "ε-DP":
        print(f"warning: {algorithm.name} is {algorithm.privacy}", file=sys.stderr)


def model_params(args) -> dict:
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
                value = depth_rule(raw) if raw.strip().lstrip("-").isdigit() else raw
        except ValueError:
            kind = type(default).__name__
            raise ValueError(f"--param {name} must be a {kind}, got {raw!r}") from None
        out[name] = value
    return out


def cluster_client(args):
    """The Dask client the user asked for (--scheduler / --local-cluster), or None."""
    if getattr(args, "scheduler", None) or getattr(args, "local_cluster", None):
        from dpviz.distributed import dask_client

        return dask_client(
            args.scheduler, args.local_cluster, dashboard=getattr(args, "dashboard", False)
        )
    return nullcontext(None)


def seed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--seed",
        type=seed_int,
        default=defaults.SEED,
        help="public seed: folds, tree structure and the record→tree hash; never the noise",
    )
    p.add_argument("--noise-seed", type=seed_int, help=NOISE_SEED_HELP)


def data_args(p: argparse.ArgumentParser, label: bool = True, keep: bool = True) -> None:
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


def cluster_args(p: argparse.ArgumentParser) -> None:
    """Where the work runs: a running Dask scheduler or a local cluster of N workers."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", help="address of a running dask.distributed scheduler")
    group.add_argument(
        "--local-cluster",
        type=workers_int,
        metavar="N",
        help="start N local Dask worker processes for this command",
    )
    p.add_argument(
        "--dashboard",
        action="store_true",
        help="serve the Dask dashboard of a --local-cluster on 127.0.0.1:8787 (off by "
        "default: it shows the task names to anyone on this machine)",
    )


def model_args(p: argparse.ArgumentParser, cluster: bool = True) -> None:
    """One algorithm of the registry and its parameters (evaluate, train, attack)."""
    p.add_argument("--algorithm", default=defaults.ALGORITHM, choices=list(ALGORITHMS))
    p.add_argument("--mechanism", help="leaf mechanism (default: the algorithm's)")
    p.add_argument("--epsilon", type=epsilon_float, required=True)
    p.add_argument("--trees", type=tree_count, help="trees, or auto (default: the algorithm's)")
    p.add_argument("--depth", type=depth_rule, help="depth rule or fixed depth")
    p.add_argument(
        "--split",
        choices=SPLIT_CHOICES,
        help="records per tree: disjoint, shared, or auto (shared from ε = 5 with auto trees)",
    )
    p.add_argument("--max-depth", type=positive_int, help="tree depth D (greedy trees)")
    p.add_argument(
        "--steps",
        type=positive_int,
        help="layers per EM step d (dpea; d > 2 samples by MCMC: approximate, not DP; "
        "its chain length is --param mcmc_steps=N)",
    )
    p.add_argument("--bins", type=positive_int, help="bins per continuous feature")
    objective_arg(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUE",
        help="any other parameter of the algorithm (repeatable), e.g. learning_rate=0.1",
    )
    seed_args(p)
    p.add_argument("--json", action="store_true")
    if cluster:
        cluster_args(p)


def objective_arg(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """``--objective``: what predictions (and the scores of them) optimise."""
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=default,
        help=OBJECTIVE_HELP + ("" if default else " (default: the model's, else accuracy)"),
    )
