"""A forest's work and depth before it runs: the depth a rule gives on a schema, the
tree count "auto" gives, a note when a rule's depth is capped, and the refusal of a
forest whose file could not list it.

The record count used here (jpw's rule, "auto" trees) is the user's own file's, for the
user's estimate only: it is not released.
"""

from __future__ import annotations

import sys

from dpviz.models.files.load import check_forest_export
from dpviz.models.forest.estimator import AUTO_TREES, DPRandomForestClassifier
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import COUNTED_RULES, depth_cap_note, resolve_depth
from dpviz.privacy.schema import Schema

__all__ = ["check_forest_work", "estimate_depth", "note_depth", "resolved_trees"]


def estimate_depth(rule, schema: Schema, n_records: int) -> int:
    """The depth a forest rule gives, for a work estimate (jpw from the row count)."""
    s, r = len(schema.continuous), len(schema.discrete)
    branching = [2] * s + [len(f.values) for f in schema.discrete]
    return resolve_depth(rule, s, r, n_records=max(1, n_records), branching=branching)


def resolved_trees(trees, n_records: int, algorithm: str = "fletcher_islam") -> int:
    """A tree count, "auto" read as the most ``algorithm`` grows on ``n_records`` records
    (its count at ε ≥ 1), for a work estimate."""
    if trees != AUTO_TREES:
        return int(trees)
    return get_algorithm(algorithm).make(1.0, n_estimators=AUTO_TREES).tree_count(n_records)


def note_depth(algorithm: str, rule, schema: Schema) -> None:
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


def check_forest_work(model, schema: Schema) -> None:
    """Before fitting a forest for export: refuse one whose file could not list it."""
    if isinstance(model, DPRandomForestClassifier):
        depth = _rule_depth(model, schema)
        if depth is not None:
            check_forest_export(schema, depth, model.tree_count())
