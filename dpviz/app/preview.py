"""The Train page's preview of a model's shape and budget, before anything is fitted.

It reads the file's row count for the data owner only (NOT private): the released model
sizes itself from a declared record count or a noisy one booked in its ledger.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpviz.app.data import NOT_PRIVATE_CHECK
from dpviz.models.boosting.budget import small_by_records
from dpviz.models.boosting.estimator import DPBoostClassifier, grown_note, grows, random_note
from dpviz.models.boosting.randomsplit import applies as splits_at_random
from dpviz.models.forest.estimator import AUTO_TREES, DPRandomForestClassifier
from dpviz.models.forest.sizing import SHARED_FROM, forest_depth, signal_records
from dpviz.models.greedy import estimator as greedy
from dpviz.models.greedy.budget import edge_epsilon as greedy_edge_epsilon
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.greedy.stopping import depth_rule_epsilon
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.depth import COUNTED_RULES
from dpviz.privacy.schema import Schema


def branching(schema: Schema) -> list[int]:
    return [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]


@dataclass(frozen=True)
class DepthPreview:
    """The depth a setting gives for a dataset, and a sentence explaining it."""

    depth: int
    text: str
    private_note: str | None = None


AUTO_PREVIEW_NOTE = (
    "Not private, for you only: this preview reads your file's row count. The released "
    "model sizes itself (trees and depth) from the declared count or, if none is declared, "
    "a noisy count booked in the ledger, so its tree count may differ from the one shown."
)


# At large ε a disjoint forest's trees are limited by their few records, not by noise.
SHARED_HINT = (
    f" From ε = {SHARED_FROM:g}, data split 'auto' grows ⌈ε/0.5⌉ trees in two halves of"
    " the records, each record training half of them: more accurate on most benchmark"
    " sets."
)


def depth_preview(
    schema: Schema,
    rule: str | int,
    n_records: int,
    n_estimators: int,
    data_split: str,
    epsilon: float | None = None,
) -> DepthPreview:
    """Resolve the depth rule and say what it means for the leaves (``ValueError`` for a
    bad rule). The record count used here is the data owner's view, not released. Below
    ε = 1 ``records`` sizes for n·s records without Theorem 2's cap, as the fit does
    (``sizing.forest_depth``)."""
    s, r = len(schema.continuous), len(schema.discrete)
    sized = signal_records(n_records, epsilon) if rule == "records" else n_records
    depth = forest_depth(
        rule,
        s,
        r,
        n_records=sized,
        branching=branching(schema),
        n_trees=n_estimators if data_split == "disjoint" else None,
        epsilon=epsilon,
    )
    per_tree = n_records // max(1, n_estimators) if data_split == "disjoint" else n_records
    parts = [f"Depth {depth} ({rule}: {s} continuous, {r} discrete features)."]
    if r == 0:
        leaves = 2.0**depth
        parts.append(
            f"Each tree has {leaves:,.0f} leaves for about {per_tree:,} records"
            + (", so most leaves will be empty." if leaves > per_tree else ".")
        )
    else:
        parts.append(f"Each tree sees about {per_tree:,} records.")
    note = None
    if rule in COUNTED_RULES:
        note = (
            f"The {rule} rule reads the number of records, which is itself private: unless "
            "you declare it public (declared_n), the model spends 5% of ε on a noisy count, "
            "booked in the ledger. This preview uses the true count."
        )
    return DepthPreview(depth, " ".join(parts), note)


def structure_preview(
    schema: Schema,
    n_records: int,
    algorithm_id: str,
    params: Mapping[str, Any],
    epsilon: float = 1.0,
    frame: pd.DataFrame | None = None,
) -> DepthPreview | None:
    """What the settings mean for the model's shape and budget, in a sentence (None for
    an algorithm without a preview; ``ValueError`` for unusable settings). With the
    records (``frame``), a greedy tree cut at equal widths also gets
    :func:`crowded_bins_note` as its note for the data owner (NOT private)."""
    model = get_algorithm(algorithm_id).make(epsilon, **params)
    widths = [int(w) for w in branching(schema)]
    if isinstance(model, DPRandomForestClassifier):
        trees = model.tree_count(n_records)
        split = model.split_at()
        preview = depth_preview(schema, model.depth, n_records, trees, split, epsilon)
        if model.n_estimators == AUTO_TREES and split == "shared":
            # Private-RDT's auto count, and the default forest's from ε = 5, follow ε
            # alone: exact, and no count read for it.
            shared = (
                f" in two halves of the records, each tree reading one half at 2ε/{trees} "
                f"(from ε = {SHARED_FROM:g}; the other half's votes check the trees)"
                if model.data_split == "auto"
                else ""
            )
            preview = DepthPreview(
                preview.depth,
                f"{trees} trees (auto, from ε){shared}. {preview.text}",
                preview.private_note,
            )
        elif model.n_estimators == AUTO_TREES:
            preview = DepthPreview(
                preview.depth,
                f"About {trees} trees (auto). {preview.text}"
                + (SHARED_HINT if float(epsilon) >= SHARED_FROM else ""),
                " ".join(filter(None, [AUTO_PREVIEW_NOTE, preview.private_note])),
            )
        return preview
    if isinstance(model, DPDecisionTreeClassifier):
        bins = [int(model.n_bins)] * len(schema.continuous) + widths[len(schema.continuous) :]
        d = int(model.steps)
        edges = greedy_edge_epsilon(epsilon, model.split_points, len(schema.continuous))
        tree_epsilon = epsilon - edges  # what the tree's releases share
        if model.max_depth == "auto":
            # A preview for the data owner only: the fitted tree reads a noisy (or the
            # declared) count instead of n_records.
            n = int(model.declared_n) or n_records
            rest = depth_rule_epsilon(tree_epsilon, n, counted=not model.declared_n)
            depth = greedy.auto_depth(n, bins, len(schema.classes), rest, d)
            if depth == 0:
                text = (
                    f"No split: at this ε, {n:,} records cannot fill even two leaves above "
                    "their noise, so the tree is one leaf whose class is chosen by "
                    "report-noisy-max with the rest of ε."
                )
                return DepthPreview(0, text)
        else:
            depth = int(model.max_depth)
        n_steps = math.ceil(depth / d)
        leaves = float(np.prod(sorted(bins, reverse=True)[:depth], dtype=np.float64))
        shared, cut = (
            (
                f"ε − {edges:g}",
                f"{model.n_bins} bins at the quantiles of its noisy histogram (ε = {edges:g} "
                "for the histograms, booked first)",
            )
            if edges
            else ("ε", f"{model.n_bins} public bins")
        )
        crowded = None
        if frame is not None and model.split_points == "uniform":
            crowded = crowded_bins_note(frame, schema, int(model.n_bins))
        text = (
            f"One tree of depth {depth}: {n_steps} exponential-mechanism step"
            f"{'s' * (n_steps > 1)} of {d} layer{'s' * (d > 1)} and the noisy leaf counts "
            f"share {shared}, ε' = {f'({shared})' if edges else shared} / {n_steps + 1} = "
            f"{tree_epsilon / (n_steps + 1):.3g} each. A continuous feature splits into its "
            f"{cut}; up to {leaves:,.0f} leaves for {n_records:,} records"
            + (", so most leaves will be empty." if leaves > n_records else ".")
        )
        return DepthPreview(depth, text, crowded)
    if isinstance(model, DPBoostClassifier):
        model.grown_ = grows(model, n_records)  # the fit reads the prior's noisy count
        model.small_ = len(schema.classes) == 2 and small_by_records(model, n_records)  # macro_f1
        k = len(schema.classes)
        model.random_ = not model.grown_ and splits_at_random(model, n_records, k)
        if model.random_:  # every tree reads every record (randomsplit)
            text = (
                f"{model.n_estimators_} trees of depth {model.max_depth_} "
                f"({2**model.max_depth_:,} leaves each), one serving all {k} classes' "
                f"softmax scores; each spends ε / {model.n_estimators_} of what the prior and "
                "the bin edges leave." + random_note(model)
            )
            return DepthPreview(int(model.max_depth_), text)
        t_e = int(model.trees_per_ensemble_)
        first = min(t_e, int(model.n_estimators_))
        holdout = model.checks_trees_ and model.n_ensembles_ == 1
        sizes = np.round(n_records * model.ensemble_shares(first, holdout)).astype(int)
        if k == 2:
            per_class = ""
        elif model.loss_ == "logistic":
            per_class = f", one tree serving all {k} classes' softmax scores"
        elif model.preset_.multiclass == "shared":
            per_class = f", one tree serving all {k} one-vs-rest classes"
        else:
            per_class = f", ε / {k} per one-vs-rest class"
        n_ens = model.n_ensembles_
        if first == 1 and n_ens == 1 and not holdout:
            text = (
                f"One tree of depth {model.max_depth_} ({2**model.max_depth_:,} leaves) "
                f"reads every record{per_class}."
                + (
                    " Its leaves' noisy class counts set the macro_f1 threshold."
                    if model.small_
                    else ""
                )
                + grown_note(model)
            )
            return DepthPreview(int(model.max_depth_), text)
        text = (
            f"{n_ens} ensemble{'s' * (n_ens > 1)} of up to {t_e} trees of depth "
            f"{model.max_depth_} ({2**model.max_depth_:,} leaves each); each ensemble spends "
            f"ε / {n_ens}{per_class}. Inside an ensemble every tree reads its own disjoint "
            f"subset: about {sizes[0]:,} records for the first tree down to "
            f"{sizes[min(t_e, model.n_estimators_) - 1]:,} for the last." + grown_note(model)
        )
        return DepthPreview(int(model.max_depth_), text)
    return None


# The share of a continuous feature's records in the two fullest of its equal-width bins
# from which the Train page points a greedy tree's user to split_points="quantile".
CROWDED_SHARE = 0.9


def crowded_bins_note(frame: pd.DataFrame, schema: Schema, n_bins: int) -> str | None:
    """A check for the data owner (NOT private: it reads the records, on screen only): the
    continuous features whose records crowd into two of their ``n_bins`` equal-width bins
    (at least :data:`CROWDED_SHARE` of them), which a greedy tree cannot split further,
    with the option that cuts at a noisy histogram's quantiles; None when there are none."""
    crowded = []
    for feature in schema.continuous:
        if feature.name not in frame or not feature.high > feature.low:
            continue
        values = pd.to_numeric(frame[feature.name], errors="coerce").to_numpy(np.float64)
        values = values[np.isfinite(values)]
        if not len(values):
            continue
        cells = np.floor((values - feature.low) / (feature.high - feature.low) * n_bins)
        counts = np.bincount(np.clip(cells, 0, n_bins - 1).astype(np.int64), minlength=n_bins)
        share = np.sort(counts)[-2:].sum() / len(values)
        if share >= CROWDED_SHARE:
            crowded.append(f"'{feature.name}' {share:.0%}")
    if not crowded:
        return None
    return (
        f"Check ({NOT_PRIVATE_CHECK}): {len(crowded)} continuous feature(s) put most records "
        f"into 2 of their {n_bins} equal-width bins ({', '.join(crowded)}), which the tree "
        "cannot split further. split_points = quantile cuts them at the quantiles of a noisy "
        "histogram instead (from ε = 1, 5% of ε): it helped skewed features on many records "
        "and cost small or coded-integer sets some ranking (bench/README.md)."
    )
