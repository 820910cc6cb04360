"""What a model file may claim (behind :mod:`dpviz.models.files.load`).

A file's parameters are checked for type, bounds and agreement with what it lists, and its
privacy statement is never trusted: it is recomputed from the file's algorithm, mechanism,
ε and structure (the ledger) and a file that declares anything else is refused.
"""

from __future__ import annotations

import math
from typing import Any

from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.files.format import REPLAYABLE, number_in, whole
from dpviz.models.forest.estimator import build_ledger
from dpviz.models.forest.floor import halves_epsilon
from dpviz.models.forest.ledger import RECORD_SPLITS, batch_epsilons
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.trees.depth import MAX_DEPTH
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import get_mechanism
from dpviz.privacy.schema import Schema
from dpviz.privacy.signing import NOT_VERIFIED_NOTE


def check_forest_meta(meta: dict, n_trees: int) -> None:
    """The forest's parameters: types, bounds, and agreement with the trees listed."""
    from dpviz.models.forest.estimator import MAX_TREES

    if not isinstance(meta["mechanism"], str):
        raise ValueError("the model's 'mechanism' must be a mechanism name")
    mech = get_mechanism(meta["mechanism"])
    if meta["releases"] != mech.releases:
        raise ValueError(
            f"the model says it releases {meta['releases']} but mechanism {mech.id} releases "
            f"{mech.releases}"
        )
    eps = number_in(meta, "epsilon", 1e-300, 1e300)
    meta.setdefault("n_estimators", n_trees)
    whole(meta["n_estimators"], "n_estimators", low=1, high=MAX_TREES)
    if meta["n_estimators"] != n_trees:
        raise ValueError(f"the model claims {meta['n_estimators']:,} trees but lists {n_trees:,}")
    whole(meta.get("depth"), "depth", low=1, high=MAX_DEPTH)
    meta.setdefault("data_split", "disjoint")
    if meta["data_split"] not in RECORD_SPLITS:
        raise ValueError(f"the model's 'data_split' must be one of {', '.join(RECORD_SPLITS)}")
    for name in ("schema_inferred",):
        if name in meta and type(meta[name]) is not bool:
            raise ValueError(f"the model's {name!r} must be true or false")
    whole(meta.get("n_batches", 1), "n_batches", low=1, high=10**6)
    # A file that does not say its noise was secret is booked as replayable (NOT private).
    if meta.get("noise", REPLAYABLE) not in ("secret", REPLAYABLE):
        raise ValueError("the model's 'noise' must say 'secret' or that it is replayable")
    spent = (
        number_in(meta, "depth_count_epsilon", 0, eps, 0.0)
        + number_in(meta, "split_epsilon", 0, eps, 0.0)
        + number_in(meta, "prior_epsilon", 0, eps, 0.0)
        + number_in(meta, "check_epsilon", 0, eps, 0.0)
        + number_in(meta, "threshold_epsilon", 0, eps, 0.0)
    )
    if spent >= eps:
        raise ValueError(
            "the model's record-count, split-histogram, prior, check and score-histogram "
            "budgets leave nothing for the trees"
        )
    trusted = meta.setdefault("floor_trusted", True)
    if type(trusted) is not bool:
        raise ValueError("the model's 'floor_trusted' must be true or false")
    if not trusted and not meta.get("check_epsilon"):
        raise ValueError(
            "the model falls back on its prior ('floor_trusted' false) without a check"
        )
    for field in ("floor_check", "floor_disagreements"):
        check = meta.get(field)
        if check is not None and type(check) is not int:
            raise ValueError(f"the model's {field!r} must be a whole number or null")
    split = meta.get("data_split")
    expected = eps - spent
    if split == "shared":
        expected /= n_trees
    elif split == "halves":
        expected = halves_epsilon(expected, n_trees)
    # A file that does not state its per-tree ε (hand-written, or older) reads as the rest.
    meta.setdefault("tree_epsilon", expected)
    if not math.isclose(number_in(meta, "tree_epsilon", 0, eps), expected, rel_tol=1e-9):
        raise ValueError(
            f"the model's per-tree ε {meta['tree_epsilon']!r} does not follow from its ε, "
            f"trees and data split (that gives {expected:g})"
        )


def check_prior(meta: dict[str, Any], k: int) -> float:
    """The weight of a forest's class prior (0 without one), its counts checked."""
    prior = meta.get("prior_counts")
    if prior is None:
        return 0.0
    if not isinstance(prior, list) or len(prior) != k or not all(type(v) is int for v in prior):
        raise ValueError(f"the model's 'prior_counts' must be {k} whole numbers")
    weight = meta.get("prior_weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight < 1e9:
        raise ValueError("the model's 'prior_weight' must be a number ≥ 0")
    return float(weight)


def note_claim(ledger: PrivacyLedger, meta: dict) -> PrivacyLedger:
    """``ledger`` with the note of a privacy claim this installation does not vouch for
    (``meta`` marked ``"claim"``), so that the guarantee text says so."""
    if "claim" in meta:
        ledger.notes.append(
            NOT_VERIFIED_NOTE[:1].upper()
            + NOT_VERIFIED_NOTE[1:]
            + ": the file is not one dpviz signed here and nobody edited since, so its ε, "
            "its noise mode, its schema's status and its leaves are the file's word only."
        )
    return ledger


def forest_ledger(meta: dict) -> PrivacyLedger:
    """The ledger a forest file's own parameters give (never the file's claim)."""
    ledger = build_ledger(
        meta["mechanism"],
        float(meta["epsilon"]),
        int(meta["n_estimators"]),
        meta.get("data_split", "disjoint"),
        schema_inferred=bool(meta.get("schema_inferred", False)),
        n_batches=int(meta.get("n_batches", 1)),
        replayable=meta.get("noise") != "secret",
        depth_count_epsilon=float(meta.get("depth_count_epsilon", 0.0)),
        split_epsilon=float(meta.get("split_epsilon", 0.0)),
        prior_epsilon=float(meta.get("prior_epsilon", 0.0)),
        check_epsilon=float(meta.get("check_epsilon", 0.0)),
        threshold_epsilon=float(meta.get("threshold_epsilon", 0.0)),
        earlier_releases=earlier_releases(meta),
    )
    return note_claim(ledger, meta)


def earlier_releases(meta: dict) -> list[tuple[str, float]]:
    """A forest file's earlier releases of the same leaves, as (mechanism, ε) pairs
    (``ValueError`` for anything else)."""
    listed = meta.get("earlier_releases", [])
    if not isinstance(listed, list) or len(listed) > 10_000:
        raise ValueError("the model's 'earlier_releases' must be a list of [mechanism, ε]")
    out = []
    for item in listed:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise ValueError("each of the model's 'earlier_releases' must be [mechanism, ε]")
        mech = get_mechanism(item[0])
        eps = item[1]
        if type(eps) not in (int, float) or not 0 < eps < 1e300:
            raise ValueError("an earlier release's ε must be a positive number")
        out.append((mech.id, float(eps)))
    return out


def estimator_ledger(meta: dict, schema: Schema, kind: str) -> PrivacyLedger:
    """The ledger a greedy-tree or DPBoost file's parameters give, by the estimator's own
    rule (an unfitted estimator with those parameters, the fitted depth set)."""
    params = meta.get("params")
    if not isinstance(params, dict):
        raise ValueError("the model file lacks its 'params' (the algorithm's parameters)")
    estimator = DPDecisionTreeClassifier() if kind == "tree" else DPBoostClassifier()
    known = estimator.get_params()
    given = {k: v for k, v in params.items() if k in known and k not in ("schema",)}
    if kind == "tree":
        # A tree file written before split_points existed cut at equal widths.
        given.setdefault("split_points", "uniform")
    if kind == "boost" and "objective" in meta:
        # DPBoost's macro_f1 threshold is a booked release: the file's objective says
        # whether its ledger has one.
        given["objective"] = meta["objective"]
    eps = number_in(meta, "epsilon", 1e-300, 1e300)
    if given.get("epsilon", eps) != eps:
        raise ValueError("the model's 'epsilon' and its parameters' disagree")
    replayable = meta.get("noise") != "secret"
    # A file that does not say its noise was secret is booked as replayable (NOT private).
    if meta.get("noise", REPLAYABLE) not in ("secret", REPLAYABLE):
        raise ValueError("the model's 'noise' must say 'secret' or that it is replayable")
    try:
        estimator.set_params(**{**given, "epsilon": eps, "noise_seed": 0 if replayable else None})
        estimator._validate_params()
        estimator.schema_ = schema
        if kind == "tree":
            estimator.depth_ = whole(meta.get("max_depth"), "max_depth", low=0, high=MAX_DEPTH)
        elif kind == "boost" and meta.get("random_splits") is True:
            # The random-split mode (from the noisy class histogram's total): its
            # edges' histograms and T sequential trees on every record.
            estimator.random_ = True
        elif "bin_edges" in meta or meta.get("loss") == "logistic":
            # Released bin edges or the log-loss: the grown model, which books the
            # edges' noisy histograms and its Newton leaves.
            estimator.grown_ = True
        elif kind == "boost" and meta.get("small_macro_f1") is True:
            # macro_f1's one small tree, chosen from the noisy class histogram's total
            # (or below ε = 1 from the parameters, which the estimator's rule reads too).
            estimator.small_ = True
        inferred = meta.get("schema_inferred", False)
        if type(inferred) is not bool:
            raise ValueError("the model's 'schema_inferred' must be true or false")
        return note_claim(estimator.privacy_ledger(inferred), meta)
    except (TypeError, KeyError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        raise ValueError(f"the model's parameters are not valid ({exc})") from None


def privacy_statement(ledger: PrivacyLedger) -> dict:
    """What a file states about its privacy: the ledger's ε, whether private, its summary."""
    return {
        "epsilon_total": ledger.epsilon_total,
        "private": ledger.private,
        "summary": ledger.describe(),
    }


def verified_privacy(meta: dict, ledger: PrivacyLedger) -> dict:
    """The privacy statement recomputed from the file's algorithm, mechanism, ε and
    structure; a file that declares anything else is refused."""
    declared = meta.get("privacy")
    if not isinstance(declared, dict) or not {"epsilon_total", "private"} <= declared.keys():
        raise ValueError("the model file lacks its privacy statement ('privacy')")
    claimed_eps, claimed_private = declared["epsilon_total"], declared["private"]
    total = ledger.epsilon_total
    same_eps = (claimed_eps is None and total is None) or (
        total is not None
        and not isinstance(claimed_eps, bool)
        and isinstance(claimed_eps, int | float)
        and math.isclose(claimed_eps, total, rel_tol=1e-9, abs_tol=1e-12)
    )
    if type(claimed_private) is not bool or claimed_private != ledger.private or not same_eps:
        said = f"ε = {claimed_eps!r}" if claimed_private is True else "no guarantee"
        truth = f"ε = {total:g}" if total is not None else "NO privacy guarantee"
        raise ValueError(
            f"the model file claims {said}, but its algorithm, mechanism, ε and structure "
            f"give {truth}: the file was edited; dpviz refuses a model whose privacy claim "
            "is not its own"
        )
    return privacy_statement(ledger)


def batch_list(meta: dict, ledger: PrivacyLedger) -> list[dict]:
    """A forest's batches as its file lists them: each batch's number and the ε it spent
    (None without a guarantee), from the parameters and ``ledger`` (its total)."""
    structure = float(meta.get("depth_count_epsilon", 0.0)) + float(meta.get("split_epsilon", 0.0))
    epsilons = batch_epsilons(ledger.epsilon_total, int(meta.get("n_batches", 1)), structure)
    return [{"batch": b + 1, "epsilon": e} for b, e in enumerate(epsilons)]


def verified_batches(meta: dict, ledger: PrivacyLedger) -> list[dict]:
    """The batch list recomputed from the file's parameters; a file that lists other
    batches is refused (a file without the list, from before it, gets it)."""
    truth = batch_list(meta, ledger)
    declared = meta.get("batches", truth)
    same = (
        isinstance(declared, list)
        and len(declared) == len(truth)
        and all(map(_same_batch, declared, truth))
    )
    if not same:
        raise ValueError(
            "the model file's batch list ('batches') does not follow from its ε, budgets and "
            f"n_batches ({len(truth)} batch(es), batch 1 ε = {truth[0]['epsilon']}): the file "
            "was edited; dpviz refuses a model whose privacy claim is not its own"
        )
    return truth


def _same_batch(said: Any, true: dict) -> bool:
    if not isinstance(said, dict) or said.keys() != true.keys():
        return False
    if type(said["batch"]) is not int or said["batch"] != true["batch"]:
        return False
    eps, expected = said["epsilon"], true["epsilon"]
    if expected is None:
        return eps is None
    return type(eps) in (int, float) and math.isclose(eps, expected, rel_tol=1e-9, abs_tol=1e-12)
