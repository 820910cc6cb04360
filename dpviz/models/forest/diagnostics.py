"""The data owner's view of a fitted forest: the leaf table and forest diagnostics.

Privacy role: NOT private. :class:`DiagnosticsMixin` reads the leaves' TRUE counts and
the training paths, for the data owner only; nothing here is part of a release or a
model file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpviz.models.forest.scoring import flipped_labels, label_names
from dpviz.models.trees.features import feature_order
from dpviz.models.trees.full import estimate_leaves
from dpviz.privacy.mechanisms import gap, get_mechanism


class DiagnosticsMixin:
    """Leaf table and diagnostics of
    :class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`."""

    def leaf_table(self, *, path_rules: bool = True) -> pd.DataFrame:
        """One row per non-empty leaf, from the raw data: NOT private, for the data owner."""
        self._check_fitted()
        mech = get_mechanism(self.mechanism)
        counts = self.leaf_counts_
        eps = self.tree_epsilon_
        true_major = np.argmax(counts + 0.0, axis=1)
        flipped = flipped_labels(counts, self.leaf_labels_)
        names = [str(c) for c in self.schema_.classes]
        table = pd.DataFrame(
            {
                "tree": self.leaf_tree_ + 1,
                "leaf_key": self.leaf_keys_,
                "depth": self.leaf_depth_,
                "n_records": counts.sum(axis=1),
                **{f"count[{c}]": counts[:, i] for i, c in enumerate(names)},
                "gap_j": gap(counts),
                "smooth_sensitivity": np.exp(-gap(counts) * eps),
                "released_label": label_names(names, self.leaf_labels_),
                "true_majority": np.asarray(names, dtype=object)[true_major],
                "flipped": flipped,
                "flip_probability": mech.flip_probability(counts, eps),
                "empty": False,
            }
        )
        if path_rules:
            table.insert(2, "path", self._path_rules())
        return table.sort_values(["tree", "depth"], kind="stable").reset_index(drop=True)

    def _path_rules(self) -> list[str]:
        """Each trained leaf's path as text, from the node table kept at fit time."""
        s = self.space_.n_continuous
        names = feature_order(self.schema_)
        disc_values = [f.values for f in self.schema_.discrete]
        lookup: dict[int, str] = {}
        for leaf_keys, leaf_node, nodes in self.node_tables_:
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
            for k, d in zip(self.leaf_keys_.tolist(), self.leaf_depth_.tolist())
        ]

    @property
    def diagnostics_(self) -> dict:
        """Forest-level diagnostics from the raw data (NOT private)."""
        self._check_fitted()
        if not hasattr(self, "_diagnostics"):
            self._diagnostics = self._compute_diagnostics()
        return self._diagnostics

    def _compute_diagnostics(self) -> dict:
        mech = get_mechanism(self.mechanism)
        counts = self.leaf_counts_
        flipped = flipped_labels(counts, self.leaf_labels_)
        if not hasattr(self, "_leaf_totals"):
            self._leaf_totals = estimate_leaves(self.space_, self.root_keys_)
        totals, exact = self._leaf_totals
        n_leaves = float(totals.sum())
        return {
            "n_leaves_total": n_leaves,
            "n_leaves_total_exact": bool(exact.all()),
            "n_leaves_nonempty": int(len(counts)),
            "empty_leaf_pct": 100.0 * (1.0 - len(counts) / n_leaves),
            "flipped_leaf_pct": 100.0 * float(flipped.mean()) if len(counts) else 0.0,
            "expected_flip_pct": 100.0
            * float(mech.flip_probability(counts, self.tree_epsilon_).mean())
            if len(counts)
            else 0.0,
            "mean_smooth_sensitivity": float(np.exp(-gap(counts) * self.tree_epsilon_).mean())
            if len(counts)
            else float("nan"),
            "mean_gap": float(gap(counts).mean()) if len(counts) else float("nan"),
        }
