"""Released models as validated JSON: every node of every tree, never a pickle."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .data import encode
from .forest import (
    DPRandomForestClassifier,
    PrivateRDTClassifier,
    _normalise,
    build_ledger,
    feature_order,
)
from .mechanisms import get_mechanism
from .schema import Schema
from .trees import build_full

FORMAT = "dpviz-forest"
FORMAT_VERSION = 1
MAX_EXPORT_NODES = 2_000_000


def dpviz_version() -> str:
    try:
        return version("dpviz")
    except PackageNotFoundError:
        return "0.1.0"


class ReleasedForest:
    """What an outsider sees: the schema, the tree structure and the leaf outputs.

    Holds no training data and no diagnostics. ``predict`` and ``predict_proba`` give
    exactly what the fitted estimator gave.
    """

    def __init__(self, meta: dict[str, Any], schema: Schema, trees: list[dict[str, list]]):
        self.meta = meta
        self.schema = schema
        self.trees = trees
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._compile()

    # --- building ---------------------------------------------------------------------

    @classmethod
    def from_estimator(
        cls, model: DPRandomForestClassifier, max_nodes: int = MAX_EXPORT_NODES
    ) -> ReleasedForest:
        """Release a fitted forest, listing every leaf (refuses trees too large to list)."""
        model._check_fitted()
        try:
            full = build_full(model.space_, model.root_keys_, max_nodes)
        except ValueError as exc:
            totals = model.diagnostics_["n_leaves_total"]
            raise ValueError(
                f"cannot export: {exc}. The forest has about {totals:,.0f} leaves; an export "
                "must list every leaf so that its shape does not depend on the data."
            ) from None
        leaf = full.feature < 0
        outputs = model.released_outputs(full.key[leaf])
        counts_mech = get_mechanism(model.mechanism).releases == "counts"
        output = np.zeros(len(full.key), dtype=object)
        if counts_mech:
            output[np.flatnonzero(leaf)] = [
                [float(v) for v in row] for row in outputs.noisy_counts
            ]
        else:
            output[np.flatnonzero(leaf)] = outputs.labels.tolist()
        trees = []
        for t in range(model.n_estimators):
            at = np.flatnonzero(full.tree == t)
            base = at[0]
            trees.append(
                {
                    "feature": full.feature[at].tolist(),
                    "threshold": [None if np.isnan(v) else float(v) for v in full.threshold[at]],
                    "first_child": [-1 if v < 0 else int(v - base) for v in full.first_child[at]],
                    "output": [
                        None if f >= 0 else o for f, o in zip(full.feature[at], output[at])
                    ],
                }
            )
        ledger = model.ledger_.to_dict()
        meta = {
            "classes": [str(c) for c in model.schema_.classes],
            "feature_order": feature_order(model.schema_),
            "algorithm": "jpw" if isinstance(model, PrivateRDTClassifier) else "fletcher_islam",
            "mechanism": model.mechanism,
            "releases": "counts" if counts_mech else "label",
            "epsilon": float(model.epsilon),
            "n_estimators": int(model.n_estimators),
            "depth": int(model.depth_),
            "depth_rule": str(model.depth),
            "data_split": model.data_split,
            "schema_inferred": bool(model.schema_.inferred),
            "n_batches": len(model._noise_seeds),
            "privacy": {
                "epsilon_total": ledger["epsilon_total"],
                "private": ledger["private"],
                "summary": ledger["summary"],
            },
        }
        return cls(meta, model.schema_, trees)

    # --- JSON -------------------------------------------------------------------------

    def to_json(self) -> str:
        document = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "dpviz_version": dpviz_version(),
            "schema": self.schema.to_dict(),
            **self.meta,
            "trees": self.trees,
        }
        return json.dumps(document, separators=(",", ":"), allow_nan=False)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleasedForest:
        """Parse and validate a model file; any defect is a ValueError saying what is wrong."""
        try:
            doc = json.loads(text)
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"the model file is not UTF-8 text (bad byte at position {exc.start}); "
                "a dpviz model is the JSON file that 'train' wrote"
            ) from None
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"the model file is not valid JSON ({exc}); it may be truncated"
            ) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError("this is not a dpviz model file (no 'format': 'dpviz-forest')")
        if doc.get("version") != FORMAT_VERSION:
            raise ValueError(
                f"model format version {doc.get('version')!r} is not supported "
                f"(this dpviz reads version {FORMAT_VERSION})"
            )
        required = ("schema", "classes", "feature_order", "mechanism", "releases", "trees")
        missing = [k for k in required if k not in doc]
        if missing:
            raise ValueError("the model file lacks: " + ", ".join(missing))
        schema = Schema.from_dict(doc["schema"])
        if not isinstance(doc["classes"], list):
            raise ValueError("the model's 'classes' must be a list of class names")
        if [str(c) for c in doc["classes"]] != list(schema.classes):
            raise ValueError("the model's class list does not match its schema")
        from .forest import feature_order as order_of

        if doc["feature_order"] != order_of(schema):
            raise ValueError("the model's feature order does not match its schema")
        if doc["releases"] not in ("label", "counts"):
            raise ValueError("the model's 'releases' must be 'label' or 'counts'")
        if not isinstance(doc["trees"], list) or not doc["trees"]:
            raise ValueError("the model has no trees")
        meta = {k: v for k, v in doc.items() if k not in ("format", "version", "schema", "trees")}
        return cls(meta, schema, doc["trees"])

    @classmethod
    def load(cls, path: str | Path) -> ReleasedForest:
        try:
            raw = Path(path).read_bytes()
        except FileNotFoundError:
            raise ValueError(f"model file {str(path)!r} does not exist") from None
        except IsADirectoryError:
            raise ValueError(f"{str(path)!r} is a folder, not a model file") from None
        return cls.from_json(raw)

    # --- prediction -------------------------------------------------------------------

    def _compile(self) -> None:
        """Concatenate the trees into flat arrays, checking every index and value."""
        s = len(self.schema.continuous)
        n_values = [len(f.values) for f in self.schema.discrete]
        k = len(self.classes_)
        feature, threshold, first_child, roots, outputs = [], [], [], [], []
        offset = 0
        for t, tree in enumerate(self.trees):
            try:
                f = _int_array(tree["feature"])
                thr = np.asarray(
                    [np.nan if v is None else v for v in tree["threshold"]], dtype=np.float64
                )
                fc = _int_array(tree["first_child"])
                out = tree["output"]
                if not isinstance(out, list):
                    raise TypeError
            except (KeyError, TypeError, ValueError, OverflowError):
                raise ValueError(
                    f"tree {t + 1} of the model is malformed: it needs lists 'feature', "
                    "'threshold', 'first_child' and 'output' with one entry per node"
                ) from None
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
            leaf_out = [o for o, leaf in zip(out, ~inner) if leaf]
            outputs.extend(self._check_outputs(leaf_out, k, t))
            feature.append(f)
            threshold.append(thr)
            first_child.append(np.where(inner, fc + offset, -1))
            roots.append(offset)
            offset += n
        self._feature = np.concatenate(feature)
        self._threshold = np.concatenate(threshold)
        self._first_child = np.concatenate(first_child)
        self._roots = np.asarray(roots)
        self._leaf_output = np.full((offset, k), np.nan)
        self._leaf_output[self._feature < 0] = np.asarray(outputs, dtype=np.float64).reshape(-1, k)

    def _check_outputs(self, outputs: list, k: int, t: int) -> list:
        rows = []
        for o in outputs:
            if self.meta["releases"] == "label":
                if not isinstance(o, int) or isinstance(o, bool) or not 0 <= o < k:
                    raise ValueError(f"tree {t + 1}: a leaf label is not a class index 0..{k - 1}")
                rows.append(np.eye(k)[o])
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

    def _leaves(self, encoded, root: int) -> tuple[np.ndarray, np.ndarray]:
        """(record, leaf node) of every record that reaches a leaf of the tree at ``root``;
        a record with an unknown discrete value at a split abstains."""
        s = len(self.schema.continuous)
        node = np.full(encoded.n_records, root)
        active = np.arange(encoded.n_records)
        done_records, done_nodes = [], []
        while len(node):
            f = self._feature[node]
            leaf = f < 0
            done_records.append(active[leaf])
            done_nodes.append(node[leaf])
            node, active, f = node[~leaf], active[~leaf], f[~leaf]
            child = np.empty(len(node), dtype=np.int64)
            cont = f < s
            child[cont] = encoded.continuous[active[cont], f[cont]] >= self._threshold[node[cont]]
            child[~cont] = encoded.discrete[active[~cont], f[~cont] - s]
            known = child >= 0
            node = self._first_child[node[known]] + child[known]
            active = active[known]
        return np.concatenate(done_records), np.concatenate(done_nodes)

    def _votes(self, frame: pd.DataFrame) -> np.ndarray:
        encoded = encode(frame, self.schema, training=False)
        votes = np.zeros((encoded.n_records, len(self.classes_)))
        for root in self._roots:
            records, leaves = self._leaves(encoded, root)
            np.add.at(votes, records, np.clip(self._leaf_output[leaves], 0, None))
        return votes

    def updated(self, frame: pd.DataFrame, seed: int) -> ReleasedForest:
        """Add a new, disjoint batch of labelled records (Jagannathan et al. 2012, §V-B).

        Counts only the new records, adds fresh Laplace noise of the model's per-tree
        budget to every leaf (empty ones too, so what is released never depends on
        which leaves the batch reached) and adds that to the released counts. The new
        batch is read once, so the model's ε is unchanged.
        """
        if self.meta["releases"] != "counts":
            raise ValueError(
                f"only count-releasing models can be updated; this one releases labels "
                f"({self.meta['mechanism']}): retrain it on the union instead"
            )
        encoded = encode(frame, self.schema, training=True)
        rng = np.random.default_rng(seed)
        k = len(self.classes_)
        n_trees = len(self.trees)
        eps = float(self.meta["epsilon"])
        eps_tree = eps / n_trees if self.meta["data_split"] == "shared" else eps
        if self.meta["data_split"] == "shared":
            tree_of = None
        else:
            tree_of = rng.permutation(encoded.n_records) * n_trees // max(1, encoded.n_records)
        trees = []
        for t, (root, tree) in enumerate(zip(self._roots, self.trees)):
            records, leaves = self._leaves(encoded, root)
            if tree_of is not None:
                keep = tree_of[records] == t
                records, leaves = records[keep], leaves[keep]
            counts = np.zeros((len(tree["feature"]), k))
            np.add.at(counts, (leaves - root, encoded.y[records]), 1.0)
            noise = rng.laplace(0.0, 1.0 / eps_tree, size=counts.shape)
            output = [
                None if f >= 0 else [float(a + b + c) for a, b, c in zip(old, cnt, lap)]
                for f, old, cnt, lap in zip(tree["feature"], tree["output"], counts, noise)
            ]
            trees.append({**tree, "output": output})
        batches = int(self.meta.get("n_batches", 1)) + 1
        ledger = build_ledger(
            self.meta["mechanism"],
            eps,
            n_trees,
            self.meta["data_split"],
            schema_inferred=bool(self.meta.get("schema_inferred", False)),
            depth_rule=self.meta.get("depth_rule", "theorem2"),
            n_batches=batches,
        )
        meta = {
            **self.meta,
            "n_batches": batches,
            "privacy": {
                "epsilon_total": ledger.epsilon_total,
                "private": ledger.private,
                "summary": ledger.describe(),
            },
        }
        return ReleasedForest(meta, self.schema, trees)

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        return _normalise(self._votes(X))

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _int_array(values) -> np.ndarray:
    """A tree's node list of whole numbers as int64 (TypeError for anything else)."""
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise TypeError("expected a list of whole numbers")
    return np.asarray(values, dtype=np.int64)
