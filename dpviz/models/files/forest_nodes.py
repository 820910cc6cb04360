"""A released forest's trees as flat node arrays (behind :mod:`dpviz.models.files.load`).

:func:`compile_nodes` reads the node lists of a forest file (``feature``, ``threshold``,
``first_child``, ``output`` per tree), checks every index and value (a defect is a
``ValueError`` naming the tree) and concatenates the trees; :class:`ForestNodes` routes
encoded records down them to their leaves and sums the leaves' votes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.models.files.format import MAX_EXPORT_NODES, check_shape, int_array
from dpviz.models.trees.depth import MAX_DEPTH
from dpviz.privacy.mechanisms import ABSTAIN, get_mechanism
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData


@dataclass(frozen=True)
class ForestNodes:
    """Every tree's nodes, one after the other: a node's split feature (-1 at a leaf), its
    threshold (continuous splits), its first child (the others follow it; -1 at a leaf)
    and a leaf's output as one vote weight per class; ``roots`` is where each tree starts."""

    feature: np.ndarray
    threshold: np.ndarray
    first_child: np.ndarray
    roots: np.ndarray
    leaf_output: np.ndarray
    n_continuous: int

    def leaves(self, encoded: EncodedData, root: int) -> tuple[np.ndarray, np.ndarray]:
        """(record, leaf node) of every record that reaches a leaf of the tree at ``root``;
        a record with an unknown discrete value at a split abstains."""
        s = self.n_continuous
        node = np.full(encoded.n_records, root)
        active = np.arange(encoded.n_records)
        done_records, done_nodes = [], []
        while len(node):
            f = self.feature[node]
            leaf = f < 0
            done_records.append(active[leaf])
            done_nodes.append(node[leaf])
            node, active, f = node[~leaf], active[~leaf], f[~leaf]
            child = np.empty(len(node), dtype=np.int64)
            cont = f < s
            child[cont] = encoded.continuous[active[cont], f[cont]] >= self.threshold[node[cont]]
            child[~cont] = encoded.discrete[active[~cont], f[~cont] - s]
            known = child >= 0
            node = self.first_child[node[known]] + child[known]
            active = active[known]
        return np.concatenate(done_records), np.concatenate(done_nodes)

    def votes(self, encoded: EncodedData) -> np.ndarray:
        """Each record's summed votes (a leaf's negative noisy counts count as zero)."""
        return self.sums(encoded, np.clip(self.leaf_output, 0, None))

    def sums(self, encoded: EncodedData, values: np.ndarray) -> np.ndarray:
        """Per record, the sum over the trees of ``values`` (one row per node) at the
        leaves it reaches."""
        out = np.zeros((encoded.n_records, values.shape[1]))
        for root in self.roots:
            records, leaves = self.leaves(encoded, root)
            np.add.at(out, records, values[leaves])
        return out


def compile_nodes(trees: list, schema: Schema, meta: dict, k: int) -> ForestNodes:
    """Concatenate the trees into flat arrays, checking every index and value."""
    s = len(schema.continuous)
    n_values = [len(f.values) for f in schema.discrete]
    feature, threshold, first_child, roots, outputs = [], [], [], [], []
    offset = 0
    for t, tree in enumerate(trees):
        f, thr, fc, out = _node_lists(tree, t)
        n = len(f)
        if n == 0 or not (len(thr) == len(fc) == len(out) == n):
            raise ValueError(f"tree {t + 1}: its node lists have different lengths")
        if np.any(f >= s + len(n_values)) or np.any(f < -1):
            raise ValueError(f"tree {t + 1}: a node splits on a feature the schema lacks")
        inner = f >= 0
        width = np.where(f < s, 2, np.asarray([0, *n_values])[np.clip(f - s + 1, 0, None)])
        if np.any(inner & ((fc <= np.arange(n)) | (fc + width > n))):
            raise ValueError(f"tree {t + 1}: a node points to children outside the tree")
        cont = inner & (f < s)
        if np.any(cont & ~np.isfinite(thr)):
            raise ValueError(f"tree {t + 1}: a continuous split has no threshold")
        if offset + n > MAX_EXPORT_NODES:
            raise ValueError(
                f"the model lists more than {MAX_EXPORT_NODES:,} nodes, more than dpviz "
                "ever exports: it is not a file dpviz wrote"
            )
        check_shape(fc, width * inner, meta.get("depth", MAX_DEPTH), f"tree {t + 1}")
        leaf_out = [o for o, leaf in zip(out, ~inner) if leaf]
        outputs.extend(leaf_rows(leaf_out, meta, k, t))
        feature.append(f)
        threshold.append(thr)
        first_child.append(np.where(inner, fc + offset, -1))
        roots.append(offset)
        offset += n
    feature = np.concatenate(feature)
    leaf_output = np.full((offset, k), np.nan)
    leaf_output[feature < 0] = np.asarray(outputs, dtype=np.float64).reshape(-1, k)
    return ForestNodes(
        feature=feature,
        threshold=np.concatenate(threshold),
        first_child=np.concatenate(first_child),
        roots=np.asarray(roots),
        leaf_output=leaf_output,
        n_continuous=s,
    )


def _node_lists(tree, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """One tree's feature, threshold, first-child and output lists (``ValueError`` unless
    they are lists of the right types)."""
    try:
        f = int_array(tree["feature"])
        thr = np.asarray([np.nan if v is None else v for v in tree["threshold"]], dtype=np.float64)
        fc = int_array(tree["first_child"])
        out = tree["output"]
        if not isinstance(out, list):
            raise TypeError
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ValueError(
            f"tree {t + 1} of the model is malformed: it needs lists 'feature', "
            "'threshold', 'first_child' and 'output' with one entry per node"
        ) from None
    return f, thr, fc, out


def leaf_rows(outputs: list, meta: dict, k: int, t: int) -> list[np.ndarray]:
    """The vote row of each leaf output of tree ``t``: a one-hot row for a released label
    (none for an abstaining leaf), the noisy counts themselves for released counts."""
    rows = []
    for o in outputs:
        if meta["releases"] == "label":
            low = ABSTAIN if get_mechanism(meta["mechanism"]).abstains else 0
            if not isinstance(o, int) or isinstance(o, bool) or not low <= o < k:
                raise ValueError(f"tree {t + 1}: a leaf label is not a class index 0..{k - 1}")
            # An abstaining leaf (label -1) casts no vote.
            rows.append(np.zeros(k) if o == ABSTAIN else np.eye(k)[o])
        else:
            try:
                row = np.asarray(o, dtype=np.float64)
            except (TypeError, ValueError):
                row = None
            if (
                not isinstance(o, list)
                or row is None
                or row.shape != (k,)
                or not np.all(np.isfinite(row))
            ):
                raise ValueError(f"tree {t + 1}: a leaf's noisy counts are not {k} numbers")
            rows.append(row)
    return rows
