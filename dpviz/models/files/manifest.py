"""The release manifest: what every field of an exported model file is, and why it may
be there.

A model file is a release. Every field in it is one of

- ``public``: public input — the schema as declared, the settings, the public seed, the
  format's own constants, the updates the user ran;
- ``release``: a value drawn by a booked ledger entry (named in ``source``), with noise
  from a fresh secret key;
- ``derived``: post-processing of public inputs and booked releases only (named in
  ``source``): a tree count from the booked noisy record count, the ledger's words.

Nothing else computed from the records may go into a file: not a tree count from the row
count, not a sentence about the data's min and max, not a dtype that shows which classes
occur. :func:`unaccounted` lists the fields of a document that the manifest does not
name; the test suite exports every algorithm from the CLI and from the app and fails on
any. Fields that are ``public`` must be equal in the files of two neighbouring datasets
(:func:`public_fields`), which the suite checks too.

An inferred schema (``schema_inferred``: true) is read from the records: such a file
says it is NOT private, and its schema fields are then data, not public input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PUBLIC = "public"
RELEASE = "release"
DERIVED = "derived"


@dataclass(frozen=True)
class ManifestEntry:
    """What one field of a model file is (``kind``) and where it comes from."""

    kind: str
    source: str


def _public(source: str) -> ManifestEntry:
    return ManifestEntry(PUBLIC, source)


def _release(entry: str) -> ManifestEntry:
    return ManifestEntry(RELEASE, entry)


def _derived(source: str) -> ManifestEntry:
    return ManifestEntry(DERIVED, source)


_COMMON: dict[str, ManifestEntry] = {
    "/format": _public("the file format"),
    "/version": _public("the file format"),
    "/dpviz_version": _public("the installed dpviz"),
    "/kind": _public("the file format"),
    "/schema/inferred": _public("the schema's status (inferred: NOT private)"),
    "/schema/inferred_note": _public("the schema's status (inferred: NOT private)"),
    "/schema/declaration": _public("who declared the schema public, in fixed words"),
    "/schema/label": _public("the declared schema"),
    "/schema/classes": _public("the declared schema"),
    "/schema/features/[]/name": _public("the declared schema"),
    "/schema/features/[]/type": _public("the declared schema"),
    "/schema/features/[]/min": _public("the declared schema"),
    "/schema/features/[]/max": _public("the declared schema"),
    "/schema/features/[]/values": _public("the declared schema"),
    "/schema/features/[]/missing": _public("the declared schema's missing-value rule"),
    "/schema/features/[]/inferred": _public("the schema's status (inferred: NOT private)"),
    "/classes": _public("the declared schema"),
    "/feature_order": _public("the declared schema"),
    "/algorithm": _public("settings"),
    "/releases": _public("settings (what a leaf releases)"),
    "/epsilon": _public("settings"),
    "/noise": _public("settings (secret, or replayable: NOT private)"),
    "/schema_inferred": _public("the schema's status"),
    "/objective": _public("settings (what predict optimises; post-processing)"),
    "/decision_threshold": _derived(
        "the released leaf counts and prior, public constants and a public seed (the "
        "macro_f1 objective's threshold on two classes; null otherwise)"
    ),
    "/privacy/epsilon_total": _derived("the ledger (every booked release)"),
    "/privacy/private": _derived("the ledger and the settings"),
    "/privacy/summary": _derived("the ledger (every booked release), in words"),
    "/signature/algorithm": _public("the file format"),
    "/signature/key_id": _public("this installation's signing key, by name"),
    "/signature/value": _derived("an HMAC of every other field, under this installation's key"),
    "/claim": _public("the file format: saved from a file whose claim was not verified"),
}

_FOREST: dict[str, ManifestEntry] = {
    "/mechanism": _public("settings"),
    "/depth_rule": _public("settings"),
    "/data_split": _public("settings"),
    "/split_points": _public("settings"),
    "/record_hash_seed": _public("the public seed (random_state)"),
    "/n_batches": _public("the updates the user ran"),
    "/earlier_releases": _public("the relabels the user ran (mechanism and ε of each)"),
    "/batches/[]/batch": _public("the updates the user ran"),
    "/batches/[]/epsilon": _public("settings of each update"),
    "/n_estimators": _derived("settings, or the booked noisy record count ('auto')"),
    "/depth": _derived("settings, or the booked noisy record count (counted depth rules)"),
    "/tree_epsilon": _derived("settings and the booked noisy record count"),
    "/prior_epsilon": _derived("settings and the booked noisy record count"),
    "/depth_count_epsilon": _derived("settings"),
    "/split_epsilon": _derived("settings"),
    "/check_epsilon": _derived("settings and the booked noisy record count (whether it runs)"),
    "/threshold_epsilon": _derived(
        "settings and the booked noisy record count (accuracy or macro_f1 on two "
        "classes, where the floor's check runs; accuracy where the checked records times "
        "its ε reach 350)"
    ),
    "/decision_threshold": _derived(
        "the released leaf counts and prior, public constants and a public seed; from "
        "ε = 1 up the noisy histogram of the checked records' out-of-bag "
        "scores, its cells from the same or public (the macro_f1 objective's threshold "
        "on two classes, or the accuracy objective's cut where it beat the argmax and "
        "the floor trusted the trees; null otherwise)"
    ),
    "/floor_check": _release("noisy out-of-bag gain of the trees over the prior's class"),
    "/floor_disagreements": _release(
        "noisy out-of-bag disagreements of the trees with the prior's class (with the gain)"
    ),
    "/floor_trusted": _derived("the floor's noisy out-of-bag gain and disagreements"),
    "/prior_counts": _release("noisy class histogram (the prior)"),
    "/prior_weight": _derived(
        "the noisy class histogram, settings, the tree count and the floor's check"
    ),
    "/trees/[]/feature": _derived("the public seed and the noisy split tables"),
    "/trees/[]/threshold": _derived("the public seed and the noisy split tables"),
    "/trees/[]/first_child": _derived("the public seed and the noisy split tables"),
    "/trees/[]/output": _release("leaf outputs"),
}

_GREEDY: dict[str, ManifestEntry] = {
    "/params/*": _public("settings"),
    "/n_bins": _public("settings"),
    "/max_depth": _derived(
        "settings, or the booked noisy record count ('auto'; macro_f1 on two classes: at "
        "least 1, also where the root's noisy class counts would close the root)"
    ),
    "/tree/feature": _release("split choices (exponential mechanism)"),
    "/tree/first_child": _derived("the split choices and the noisy stopping counts"),
    "/tree/output": _release(
        "leaf counts (and the noisy counts a fallback reads); a tree without splits: the "
        "root's noisy class counts and its report-noisy-max class; macro_f1 on two "
        "classes: tied leaves ordered by their own noisy counts; accuracy: where the "
        "noisy counts spread no more than noise and sampling, the floor's fall-back "
        "scores around the root's noisy shares"
    ),
    "/decision_prior": _derived("the root's or the leaves' noisy class counts"),
    "/edge_cells": _public(
        "the file format (the cells of the noisy feature histograms), there with "
        "split_points 'quantile' from ε = 1 on a schema with a continuous feature"
    ),
    "/bin_edges": _derived(
        "noisy histograms of the continuous features (where their noisy distribution "
        "functions cross each bin's share)"
    ),
}

_SPLITS = (
    "split choices (exponential mechanism; report-noisy-max in the grown model; drawn "
    "without reading the records at the noisy bin edges in the random-split mode)"
)
# The grown model's sizes follow the noisy class histogram's total (ε ≥ 5 and at least
# 6,000 records), the random-split mode's the same way (more than two classes, ε < 5,
# randomsplit.applies): two neighbours on either side of that line get files with different
# sizes, so they are derived from the release, not public settings.
_GROWN = (
    "settings, or the grown model's or the random-split mode's sizes where the noisy "
    "class histogram's total allows"
)
_BOOST: dict[str, ManifestEntry] = {
    "/params/*": _derived(_GROWN),
    "/n_bins": _derived(_GROWN),
    "/learning_rate": _derived(_GROWN),
    "/max_depth": _derived(_GROWN),
    "/edge_cells": _derived(
        "the file format (the cells of the noisy feature histograms), there only where the "
        "model grew or split at random (the noisy class histogram's total)"
    ),
    "/bin_edges": _derived(
        "noisy histograms of the continuous features (the grown model's split "
        "candidates, the random-split mode's thresholds: where their noisy distribution "
        "functions cross each bin's share)"
    ),
    "/decision_prior": _derived("the noisy class histogram (the prior), or uniform"),
    "/loss": _derived(
        "settings and the noisy class histogram (whether the model grew to the log-loss "
        "or splits at random)"
    ),
    "/decision_scale": _derived("settings and the noisy class histogram (the trees' reach)"),
    "/random_splits": _derived(
        "settings and the noisy class histogram (whether the model boosts random-split "
        "trees: more than two classes, ε below 5 and a large enough noisy total)"
    ),
    "/small_macro_f1": _derived(
        "settings and the noisy class histogram (whether the macro_f1 model is one "
        "small tree: below ε = 1, or a noisy total under 6,000 records)"
    ),
    "/decision_threshold": _derived(
        "noisy histogram of the training records' scores per class (macro_f1 on two "
        "classes; the bins from the released trees and prior)"
    ),
    "/models/[]/target": _public("the declared classes"),
    "/models/[]/init_score": _derived("the noisy class histogram (the prior)"),
    "/models/[]/weight": _derived("the prior and the held-out check's noisy count"),
    "/models/[]/trees/[]/feature": _release(_SPLITS),
    "/models/[]/trees/[]/threshold": _release(_SPLITS),
    "/models/[]/trees/[]/equal": _release(_SPLITS),
    "/models/[]/trees/[]/value": _release(
        "leaf values (Laplace; the grown model's are clipped Newton values of the log-loss, "
        "the random-split mode's its leaves' noisy gradient sums over a public denominator)"
    ),
}

MANIFEST: dict[str, dict[str, ManifestEntry]] = {
    "dpviz-forest": {**_COMMON, **_FOREST},
    "dpviz-tree": {**_COMMON, **_GREEDY},
    "dpviz-boost": {**_COMMON, **_BOOST},
}


def field_paths(document: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf field of a JSON document as (path, value); the elements of a list of
    objects share the path segment ``[]``, a list of scalars (or of lists) is one field."""
    if isinstance(document, dict):
        for name, value in document.items():
            yield from field_paths(value, f"{path}/{name}")
    elif isinstance(document, list) and any(isinstance(v, dict) for v in document):
        for value in document:
            yield from field_paths(value, f"{path}/[]")
    else:
        yield path, document


def entry(fmt: str, path: str) -> ManifestEntry | None:
    """The manifest's entry for ``path`` in a file of format ``fmt`` (None: not named)."""
    fields = MANIFEST.get(fmt, {})
    if path in fields:
        return fields[path]
    parent = re.sub(r"/[^/]+$", "/*", path)
    return fields.get(parent)


def unaccounted(document: dict) -> list[str]:
    """The paths of ``document`` that the manifest does not name (empty: every field
    is accounted for)."""
    fmt = document.get("format")
    if fmt not in MANIFEST:
        return [f"/format: {fmt!r} is not a dpviz model format"]
    return sorted({p for p, _ in field_paths(document) if entry(fmt, p) is None})


def public_fields(document: dict) -> dict[str, list]:
    """The ``public`` fields of ``document``: path → every value at that path, in order.
    Two files released from neighbouring datasets with the same settings must agree on
    all of them."""
    fmt = document["format"]
    out: dict[str, list] = {}
    for path, value in field_paths(document):
        found = entry(fmt, path)
        if found is not None and found.kind == PUBLIC:
            out.setdefault(path, []).append(value)
    return out
