"""The data owner's view of a fitted forest: the leaf table and forest diagnostics.

Privacy role: NOT private. :func:`leaf_table` and :func:`forest_diagnostics` read the
leaves' TRUE counts and the training paths, for the data owner only; nothing here is part
of a release or a model file. ``model`` is a fitted
:class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`, which calls them
(:meth:`~dpviz.models.forest.estimator.DPRandomForestClassifier.leaf_table`,
``diagnostics_``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from dpviz.models.forest.scoring import flipped_labels, label_names
from dpviz.models.trees.features import feature_order
from dpviz.models.trees.full import estimate_leaves
from dpviz.privacy.mechanisms import gap, get_mechanism


def leaf_table(model: BaseEstimator, *, path_rules: bool = True) -> pd.DataFrame:
    """One row per non-empty leaf of a fitted forest, from the raw data: NOT private, for
    the data owner. ``path_rules``: add each leaf's path as text (:func:`leaf_paths`)."""
    mech = get_mechanism(model.mechanism)
    counts = model.leaf_counts_
    eps = model.tree_epsilon_
    true_major = np.argmax(counts + 0.0, axis=1)
    flipped = flipped_labels(counts, model.leaf_labels_)
    names = [str(c) for c in model.schema_.classes]
    table = pd.DataFrame(
        {
            "tree": model.leaf_tree_ + 1,
            "leaf_key": model.leaf_keys_,
            "depth": model.leaf_depth_,
            "n_records": counts.sum(axis=1),
            **{f"count[{c}]": counts[:, i] for i, c in enumerate(names)},
            "gap_j": gap(counts),
            "smooth_sensitivity": np.exp(-gap(counts) * eps),
            "released_label": label_names(names, model.leaf_labels_),
            "true_majority": np.asarray(names, dtype=object)[true_major],
            "flipped": flipped,
            "flip_probability": mech.flip_probability(counts, eps),
            "empty": False,
        }
    )
    if path_rules:
        table.insert(2, "path", leaf_paths(model))
    return table.sort_values(["tree", "depth"], kind="stable").reset_index(drop=True)


def leaf_paths(model: BaseEstimator) -> list[str]:
    """Each trained leaf's path as text, from the node table kept at fit time (NOT
    private: the paths records took)."""
    s = model.space_.n_continuous
    names = feature_order(model.schema_)
    disc_values = [f.values for f in model.schema_.discrete]
    lookup: dict[int, str] = {}
    for leaf_keys, leaf_node, nodes in model.node_tables_:
        feature, child = nodes["feature"].astype(int), nodes["child"].astype(int)
        edge = np.array(
            [
                ""
                if f < 0
                else f"{names[f]} {'≥' if c == 1 else '<'} {t:.4g}"
                if f < s
                else f"{names[f]} = {disc_values[f - s][c]}"
                for f, c, t in zip(feature, child, nodes["threshold"])
            ],
            dtype=object,
        )
        text = edge.copy()
        parent, depth = nodes["parent"].astype(int), nodes["depth"]
        for d in range(2, int(depth.max(initial=0)) + 1):
            at = np.flatnonzero(depth == d)
            text[at] = text[parent[at]] + " ∧ " + edge[at]
        lookup.update(zip(leaf_keys.tolist(), text[leaf_node].tolist()))
    # A distributed fit keeps no node tables: say so rather than guess a path.
    return [
        lookup.get(k) or ("(root)" if d == 0 else "(not recorded by a distributed fit)")
        for k, d in zip(model.leaf_keys_.tolist(), model.leaf_depth_.tolist())
    ]


def forest_diagnostics(model: BaseEstimator, leaf_totals: tuple[np.ndarray, np.ndarray]) -> dict:
    """Forest-level diagnostics from the raw data (NOT private): leaf counts, flip
    rates and gaps. ``leaf_totals``: :func:`leaf_totals` of the forest."""
    mech = get_mechanism(model.mechanism)
    counts = model.leaf_counts_
    flipped = flipped_labels(counts, model.leaf_labels_)
    totals, exact = leaf_totals
    n_leaves = float(totals.sum())
    return {
        "n_leaves_total": n_leaves,
        "n_leaves_total_exact": bool(exact.all()),
        "n_leaves_nonempty": int(len(counts)),
        "empty_leaf_pct": 100.0 * (1.0 - len(counts) / n_leaves),
        "flipped_leaf_pct": 100.0 * float(flipped.mean()) if len(counts) else 0.0,
        "expected_flip_pct": 100.0
        * float(mech.flip_probability(counts, model.tree_epsilon_).mean())
        if len(counts)
        else 0.0,
        "mean_smooth_sensitivity": float(np.exp(-gap(counts) * model.tree_epsilon_).mean())
        if len(counts)
        else float("nan"),
        "mean_gap": float(gap(counts).mean()) if len(counts) else float("nan"),
    }


def leaf_totals(model: BaseEstimator) -> tuple[np.ndarray, np.ndarray]:
    """Each tree's leaf count and whether it is exact (:func:`~dpviz.models.trees.full.
    estimate_leaves`): structure only, public."""
    return estimate_leaves(model.space_, model.root_keys_)
