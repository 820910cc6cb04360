"""What a forest's parts hand each other: routed records, per-leaf counts, released leaf
outputs, and the chunks of records and trees one routing pass takes.

Privacy role: containers only. :class:`LeafCounts` holds TRUE class counts (read from the
data, never released as such: only through :mod:`~dpviz.models.forest.release`);
:class:`RoutedRecords` says where records fell in the public trees; :class:`LeafOutputs`
holds released values. Chunking reads only sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpviz.models.trees.space import PAIR_CHUNK
from dpviz.tabular.encode import EncodedData


class RoutedRecords:
    """Where records fell in the trees. Leaves are numbered locally; ``trained`` maps
    each to the model's trained leaf (or -1 for a leaf no training record reached).

    When every tree votes for every record, ``leaf_matrix`` is the (trees, records)
    int32 matrix of leaf numbers and ``pair_leaf`` its flat view (tree-major). Routing
    may keep it compact instead: ``local`` (one or two bytes per tree and record) and
    ``offsets`` with leaf ``offsets[t] + local[t, i]``; ``leaf_matrix``, ``pair_leaf``
    and ``pair_record`` (records × trees int64) are then built only if asked for."""

    def __init__(
        self,
        n_records: int,
        pair_record: np.ndarray | None,
        pair_leaf: np.ndarray | None,
        leaf_keys: np.ndarray,
        trained: np.ndarray,
        leaf_matrix: np.ndarray | None = None,
        *,
        local: np.ndarray | None = None,
        offsets: np.ndarray | None = None,
    ):
        self.n_records = n_records
        self._pair_record = pair_record
        self._pair_leaf = pair_leaf
        self.leaf_keys = leaf_keys
        self.trained = trained
        self._leaf_matrix = leaf_matrix
        self.local, self.offsets = local, offsets

    @property
    def has_matrix(self) -> bool:
        """Whether every tree votes for every record (a leaf matrix, full or compact)."""
        return self._leaf_matrix is not None or self.local is not None

    def matrix_args(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(compact matrix, offsets) when kept compact, else (leaf matrix, None)."""
        if self.local is not None:
            return self.local, self.offsets
        return self._leaf_matrix, None

    @property
    def leaf_matrix(self) -> np.ndarray | None:
        if self._leaf_matrix is None and self.local is not None:
            offsets = self.offsets.astype(np.int32)[:, None]
            self._leaf_matrix = np.add(self.local, offsets, dtype=np.int32)
        return self._leaf_matrix

    @property
    def pair_leaf(self) -> np.ndarray:
        if self._pair_leaf is None:
            self._pair_leaf = self.leaf_matrix.reshape(-1)
        return self._pair_leaf

    @property
    def pair_record(self) -> np.ndarray:
        """The record of each pair (of ``pair_leaf``)."""
        if self._pair_record is None:
            n_trees = len(self.pair_leaf) // max(1, self.n_records)
            self._pair_record = np.tile(np.arange(self.n_records), n_trees)
        return self._pair_record

    @classmethod
    def concatenate(cls, parts: list[RoutedRecords]) -> RoutedRecords:
        """The same records routed through disjoint sets of trees, as one result."""
        offsets = np.cumsum([0] + [len(p.leaf_keys) for p in parts[:-1]])
        n = parts[0].n_records
        leaf_keys = np.concatenate([p.leaf_keys for p in parts])
        trained = np.concatenate([p.trained for p in parts])
        if all(p.local is not None for p in parts) and len({p.local.dtype for p in parts}) == 1:
            local = np.concatenate([p.local for p in parts])
            tree_offsets = np.concatenate(
                [p.offsets + o for p, o in zip(parts, offsets, strict=True)]
            )
            return cls(n, None, None, leaf_keys, trained, local=local, offsets=tree_offsets)
        if all(p.has_matrix for p in parts):
            # One matrix written in place: no second copy of records × trees.
            rows = [len(p.matrix_args()[0]) for p in parts]
            matrix = np.empty((sum(rows), n), dtype=np.int32)
            row = 0
            for p, o, r in zip(parts, offsets, rows, strict=True):
                np.add(p.leaf_matrix, o, out=matrix[row : row + r])
                row += r
            return cls(n, None, None, leaf_keys, trained, matrix)
        pair_leaf = np.concatenate([p.pair_leaf + o for p, o in zip(parts, offsets, strict=True)])
        return cls(
            n, np.concatenate([p.pair_record for p in parts]), pair_leaf, leaf_keys, trained
        )


@dataclass
class LeafCounts:
    """Class counts per reached leaf (sorted by key), and the visited-node tables."""

    keys: np.ndarray
    tree: np.ndarray
    depth: np.ndarray
    counts: np.ndarray
    nodes: list

    @classmethod
    def combine(cls, parts: list[LeafCounts], n_classes: int) -> LeafCounts:
        """Add the counts of several batches or partitions leaf by leaf."""
        keys = np.concatenate([p.keys for p in parts])
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        if not (ordered[1:] == ordered[:-1]).any():
            # Distinct keys (one batch, a fit): sorting them is all the combining there is.
            cat = np.concatenate
            counts = cat([p.counts for p in parts]).astype(np.int64, copy=False)[order]
            tree, depth = cat([p.tree for p in parts])[order], cat([p.depth for p in parts])[order]
            return cls(ordered, tree, depth, counts, [n for p in parts for n in p.nodes])
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        counts = np.zeros((len(unique), n_classes), dtype=np.int64)
        np.add.at(counts, inverse, np.concatenate([p.counts for p in parts]).astype(np.int64))
        tree = np.concatenate([p.tree for p in parts])[first]
        depth = np.concatenate([p.depth for p in parts])[first]
        return cls(unique, tree, depth, counts, [n for p in parts for n in p.nodes])


@dataclass
class LeafOutputs:
    """Released outputs of some leaves: labels, and noisy counts for count mechanisms."""

    labels: np.ndarray
    noisy_counts: np.ndarray | None


def _tree_chunks(n_trees: int, n_records: int, data_split: str, pairs: int = PAIR_CHUNK):
    # Disjoint parts: every tree in one routing pass (the pairs are the records) unless
    # ``pairs`` (the pairs one pass may route) is smaller.
    per_tree = n_records if data_split == "shared" else max(1, n_records // n_trees)
    size = max(1, pairs // max(1, per_tree))
    return [np.arange(i, min(i + size, n_trees)) for i in range(0, n_trees, size)]


def _rows(encoded: EncodedData, rows: slice) -> EncodedData:
    return EncodedData(
        encoded.continuous[rows],
        encoded.discrete[rows],
        None if encoded.y is None else encoded.y[rows],
        encoded.report,
    )


def normalise_votes(votes: np.ndarray) -> np.ndarray:
    """Votes as shares of each row\'s total (uniform for a row of no votes):
    post-processing."""
    total = votes.sum(axis=1, keepdims=True)
    k = votes.shape[1]
    return np.divide(votes, total, out=np.full_like(votes, 1.0 / k), where=total > 0)
