"""Released models as validated JSON: every node of every tree, never a pickle.

Three formats, one per family of the algorithm registry, each with a ``kind`` and an
``algorithm`` field: ``dpviz-forest`` (fletcher_islam, jpw: :class:`ReleasedForest`),
``dpviz-tree`` (friedman_schuster, dpea: :class:`ReleasedTree`) and ``dpviz-boost``
(dpboost: :class:`ReleasedBoost`). :func:`release` exports any fitted model of the
registry, :func:`load_model` / :func:`model_from_json` read any of the three files.
"""

from __future__ import annotations

import json
import math
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from dpviz.models.boosting import DPBoostClassifier, route
from dpviz.models.data import EncodedData, encode
from dpviz.models.depth import MAX_DEPTH
from dpviz.models.forest import (
    DPRandomForestClassifier,
    PrivateRDTClassifier,
    _normalise,
    build_ledger,
    feature_order,
    hash_trees,
    prior_shares,
)
from dpviz.models.forest import (
    space_for as build_space,
)
from dpviz.models.greedy import DPDecisionTreeClassifier, bin_codes
from dpviz.models.outputs import write_text
from dpviz.models.trees import build_full, node_bytes
from dpviz.privacy.mechanisms import ABSTAIN, get_mechanism
from dpviz.privacy.noise import NOT_PRIVATE_NOTE, NoiseSource
from dpviz.privacy.safe_json import parse_json
from dpviz.privacy.schema import Schema

FORMAT = "dpviz-forest"
TREE_FORMAT = "dpviz-tree"
BOOST_FORMAT = "dpviz-boost"
KINDS = {FORMAT: "forest", TREE_FORMAT: "greedy tree", BOOST_FORMAT: "boosted trees"}
FORMAT_VERSION = 1
REPLAYABLE = f"replayable from a seed ({NOT_PRIVATE_NOTE})"
MAX_EXPORT_NODES = 2_000_000
# The largest model file dpviz reads: an export of MAX_EXPORT_NODES nodes is ~100 MB.
MAX_MODEL_BYTES = 256 * 2**20
# Listing the nodes holds each level's frontier (a sub-domain per node): on wide data
# that bounds an export before the node count does.
EXPORT_FRONTIER_BYTES = 512 * 2**20


def export_node_limit(space) -> int:
    """Most nodes an export of trees over ``space`` may list (memory-aware)."""
    return int(min(MAX_EXPORT_NODES, EXPORT_FRONTIER_BYTES // node_bytes(space)))


def check_forest_export(schema: Schema, depth: int, n_trees: int) -> None:
    """Refuse, before any work, a forest whose export could not list every node.

    With a continuous feature every path runs to the full depth, so a tree has at least
    2^(depth+1) − 1 nodes (exactly that with continuous features only): public facts.
    """
    space = build_space(schema, depth)
    if space.n_continuous == 0 or space.n_values.min(initial=2) < 2:
        return
    limit = export_node_limit(space)
    nodes = n_trees * (2 ** (depth + 1) - 1)
    if nodes > limit:
        fit = max(1, (limit // n_trees + 1).bit_length() - 2)
        raise ValueError(
            f"an exported model lists every node: {n_trees} trees of depth {depth} have at "
            f"least {nodes:,} nodes, more than the {limit:,} an export of "
            f"{len(schema.features)} features may list; pass --depth {fit} or lower (or "
            "fewer --trees)"
        )


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
        max_nodes = min(max_nodes, export_node_limit(model.space_))
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
            output[np.flatnonzero(leaf)] = [[int(v) for v in row] for row in outputs.noisy_counts]
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
            "kind": KINDS[FORMAT],
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
            "n_batches": int(model.n_batches_),
            "prior_counts": None
            if model.prior_counts_ is None
            else [int(v) for v in model.prior_counts_],
            "prior_weight": None if model.prior_counts_ is None else model.prior_weight_,
            "tree_epsilon": float(model.tree_epsilon_),
            "prior_epsilon": float(model.prior_epsilon_),
            "depth_count_epsilon": float(model.depth_count_epsilon_),
            "noise": _noise_mode(model),
            "record_hash_seed": int(model._split_seed),
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
        write_text(path, self.to_json())

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleasedForest:
        """Parse and validate a model file; any defect is a ValueError saying what is wrong."""
        return cls.from_document(_parse_json(text))

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedForest:
        """Validate a parsed model file (``ValueError`` saying what is wrong)."""
        doc, schema = _check_document(doc, FORMAT, ("mechanism", "releases", "trees"))
        if doc["releases"] not in ("label", "counts"):
            raise ValueError("the model's 'releases' must be 'label' or 'counts'")
        if not isinstance(doc["trees"], list) or not doc["trees"]:
            raise ValueError("the model has no trees")
        meta = {k: v for k, v in doc.items() if k not in ("format", "version", "schema", "trees")}
        _check_forest_meta(meta, len(doc["trees"]))
        forest = cls(meta, schema, doc["trees"])
        forest.meta["privacy"] = _verified_privacy(meta, forest_ledger(meta))
        return forest

    @classmethod
    def load(cls, path: str | Path) -> ReleasedForest:
        return cls.from_json(_read_bytes(path))

    # --- prediction -------------------------------------------------------------------

    def _compile(self) -> None:
        """Concatenate the trees into flat arrays, checking every index and value."""
        prior = self.meta.get("prior_counts")
        if prior is not None and (
            not isinstance(prior, list)
            or len(prior) != len(self.classes_)
            or not all(type(v) is int for v in prior)
        ):
            raise ValueError(
                f"the model's 'prior_counts' must be {len(self.classes_)} whole numbers"
            )
        weight = self.meta.get("prior_weight", 1.0)
        if prior is not None and (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not 0 <= weight < 1e9
        ):
            raise ValueError("the model's 'prior_weight' must be a number ≥ 0")
        self._prior_weight = float(weight) if prior is not None else 0.0
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
            offset_nodes = offset + n
            if offset_nodes > MAX_EXPORT_NODES:
                raise ValueError(
                    f"the model lists more than {MAX_EXPORT_NODES:,} nodes, more than dpviz "
                    "ever exports: it is not a file dpviz wrote"
                )
            _check_shape(fc, width * inner, self.meta.get("depth", MAX_DEPTH), f"tree {t + 1}")
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
                low = ABSTAIN if get_mechanism(self.meta["mechanism"]).abstains else 0
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
        if self.meta.get("prior_counts") is not None:
            votes += self._prior_weight * prior_shares(self.meta["prior_counts"])
        return votes

    def updated(self, frame: pd.DataFrame, noise_seed: int | None = None) -> ReleasedForest:
        """Add a new, disjoint batch of labelled records (Jagannathan et al. 2012, §V-B).

        Counts only the new records, adds fresh discrete Laplace noise of the model's
        per-tree budget to every leaf (empty ones too, so what is released never depends
        on which leaves the batch reached) and adds that to the released counts. The new
        batch is read once, so the model's ε is unchanged. With disjoint data each new
        record goes to the tree its public record hash names. The noise comes from a
        fresh secret unless ``noise_seed`` makes it replayable (NOT private).
        """
        if self.meta["releases"] != "counts":
            raise ValueError(
                f"only count-releasing models can be updated; this one releases labels "
                f"({self.meta['mechanism']}): retrain it on the union instead"
            )
        encoded = encode(frame, self.schema, training=True)
        rng = NoiseSource.for_release(noise_seed).generator()
        k = len(self.classes_)
        n_trees = len(self.trees)
        eps = float(self.meta["epsilon"])
        # Each batch spends what the first one did per tree (the file says so); files
        # from before the class prior and the noisy count spent all of ε on the leaves.
        default_tree = eps / n_trees if self.meta["data_split"] == "shared" else eps
        eps_tree = float(self.meta.get("tree_epsilon", default_tree))
        prior_eps = float(self.meta.get("prior_epsilon", 0.0))
        prior = self.meta.get("prior_counts")
        if prior is not None:
            # The batch's class totals (each record once) join the prior with fresh noise.
            totals = np.bincount(encoded.y, minlength=k)
            prior = [int(v) for v in prior + totals + rng.discrete_laplace(prior_eps, k)]
        if self.meta["data_split"] == "shared":
            tree_of = None
        else:
            tree_of = hash_trees(encoded, n_trees, int(self.meta.get("record_hash_seed", 0)))
        trees = []
        for t, (root, tree) in enumerate(zip(self._roots, self.trees)):
            records, leaves = self._leaves(encoded, root)
            if tree_of is not None:
                keep = tree_of[records] == t
                records, leaves = records[keep], leaves[keep]
            counts = np.zeros((len(tree["feature"]), k), dtype=np.int64)
            np.add.at(counts, (leaves - root, encoded.y[records]), 1)
            noise = rng.discrete_laplace(eps_tree, counts.size).reshape(counts.shape)
            output = [
                None if f >= 0 else [_number(a) + int(b + c) for a, b, c in zip(old, cnt, lap)]
                for f, old, cnt, lap in zip(tree["feature"], tree["output"], counts, noise)
            ]
            trees.append({**tree, "output": output})
        batches = int(self.meta.get("n_batches", 1)) + 1
        replayable = noise_seed is not None or self.meta.get("noise") != "secret"
        ledger = build_ledger(
            self.meta["mechanism"],
            eps,
            n_trees,
            self.meta["data_split"],
            schema_inferred=bool(self.meta.get("schema_inferred", False)),
            depth_rule=self.meta.get("depth_rule", "theorem2"),
            n_batches=batches,
            replayable=replayable,
            depth_count_epsilon=float(self.meta.get("depth_count_epsilon", 0.0)),
            prior_epsilon=prior_eps,
        )
        meta = {
            **self.meta,
            "n_batches": batches,
            "prior_counts": prior,
            "noise": "secret" if not replayable else REPLAYABLE,
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


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _int_array(values) -> np.ndarray:
    """A tree's node list of whole numbers as int64 (TypeError for anything else)."""
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise TypeError("expected a list of whole numbers")
    return np.asarray(values, dtype=np.int64)


# --- greedy trees (friedman_schuster, dpea) and DPBoost ---------------------------------------


class ReleasedTree:
    """A released greedy DP tree (Friedman–Schuster, DPEA): every node and the noisy class
    counts of every leaf, empty or not. Holds no data and no diagnostics.

    Routing bins each continuous feature into the model's ``n_bins`` equal-width bins of
    its public domain, as the estimator does; a record with an unknown discrete value
    at a split abstains (uniform class probabilities). ``predict`` and
    ``predict_proba`` equal the fitted estimator's on records without unknown values.
    """

    def __init__(self, meta: dict[str, Any], schema: Schema, tree: dict[str, list]):
        self.meta = meta
        self.schema = schema
        self.tree = tree
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._compile()

    @classmethod
    def from_estimator(cls, model, algorithm: str | None = None) -> ReleasedTree:
        """Release a fitted :class:`~dpviz.models.greedy.DPDecisionTreeClassifier`."""
        check_is_fitted(model, "feature_")
        n = len(model.feature_)
        if n > MAX_EXPORT_NODES:
            raise ValueError(
                f"cannot export: the tree has {n:,} nodes, more than the {MAX_EXPORT_NODES:,} "
                "an export may list; lower max_depth or n_bins"
            )
        leaves = set(model.leaf_nodes_.tolist())
        if leaves != set(np.flatnonzero(model.feature_ < 0).tolist()):
            raise ValueError("cannot export: the tree's leaves do not match its nodes")
        output: list = [None] * n
        # What the estimator predicts from: its leaves' class shares after the fallback
        # (post-processing of the noisy counts), else the noisy counts themselves.
        leaf_output = getattr(model, "leaf_proba_", model.leaf_noisy_counts_)
        for node, row in zip(model.leaf_nodes_.tolist(), leaf_output):
            output[node] = [float(v) for v in row]
        tree = {
            "feature": [int(v) for v in model.feature_],
            "first_child": [int(v) for v in model.first_child_],
            "output": output,
        }
        meta = {
            "kind": KINDS[TREE_FORMAT],
            "algorithm": algorithm or ("friedman_schuster" if model.steps == 1 else "dpea"),
            **_common_meta(model),
            "releases": "counts",
            "n_bins": int(model.n_bins),
            "max_depth": int(getattr(model, "depth_", model.max_depth)),
        }
        return cls(meta, model.schema_, tree)

    def to_json(self) -> str:
        return _to_json(TREE_FORMAT, self.schema, self.meta, {"tree": self.tree})

    def save(self, path: str | Path) -> None:
        write_text(path, self.to_json())

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleasedTree:
        return cls.from_document(_parse_json(text))

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedTree:
        doc, schema = _check_document(doc, TREE_FORMAT, ("n_bins", "tree"))
        if not isinstance(doc["tree"], dict):
            raise ValueError("the model's 'tree' must be an object with the node lists")
        meta = {k: v for k, v in doc.items() if k not in ("format", "version", "schema", "tree")}
        tree = cls(meta, schema, doc["tree"])
        tree.meta["privacy"] = _verified_privacy(meta, _estimator_ledger(meta, schema, "tree"))
        return tree

    @classmethod
    def load(cls, path: str | Path) -> ReleasedTree:
        return cls.from_json(_read_bytes(path))

    def _compile(self) -> None:
        n_bins = _whole(self.meta.get("n_bins"), "n_bins", low=2, high=10_000)
        k = len(self.classes_)
        widths = np.asarray(
            [n_bins] * len(self.schema.continuous) + [len(f.values) for f in self.schema.discrete]
        )
        try:
            feature = _int_array(self.tree["feature"])
            first_child = _int_array(self.tree["first_child"])
            output = self.tree["output"]
            if not isinstance(output, list):
                raise TypeError
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ValueError(
                "the model's tree is malformed: it needs lists 'feature', 'first_child' and "
                "'output' with one entry per node"
            ) from None
        n = len(feature)
        if n == 0 or not len(first_child) == len(output) == n:
            raise ValueError("the tree's node lists are empty or of different lengths")
        if np.any(feature >= len(widths)) or np.any(feature < -1):
            raise ValueError("a node of the tree splits on a feature the schema lacks")
        inner = feature >= 0
        width = np.where(inner, widths[np.maximum(feature, 0)], 0)
        if np.any(inner & ((first_child <= np.arange(n)) | (first_child + width > n))):
            raise ValueError("a node of the tree points to children outside the tree")
        if n > MAX_EXPORT_NODES:
            raise ValueError(
                f"the tree lists {n:,} nodes; dpviz exports at most {MAX_EXPORT_NODES:,}"
            )
        _check_shape(first_child, width * inner, MAX_DEPTH, "the tree")
        values = np.full((n, k), np.nan)
        for i in np.flatnonzero(~inner):
            values[i] = _counts_row(output[i], k, "the tree")
        self._n_bins = n_bins
        self._feature = feature
        self._first_child = np.where(inner, first_child, -1)
        self._output = values

    def leaf_of(self, encoded: EncodedData) -> np.ndarray:
        """The leaf node each record reaches (-1 where an unknown value stops it)."""
        codes, _ = bin_codes(encoded, self.schema, self._n_bins)
        result = np.full(encoded.n_records, -1, dtype=np.int64)
        node = np.zeros(encoded.n_records, dtype=np.int64)
        active = np.arange(encoded.n_records)
        while len(active):
            f = self._feature[node]
            leaf = f < 0
            result[active[leaf]] = node[leaf]
            node, active, f = node[~leaf], active[~leaf], f[~leaf]
            value = codes[active, f]
            known = value >= 0
            node = self._first_child[node[known]] + value[known]
            active = active[known]
        return result

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        encoded = encode(X, self.schema, training=False)
        leaf = self.leaf_of(encoded)
        k = len(self.classes_)
        noisy = np.zeros((len(leaf), k))
        reached = leaf >= 0
        noisy[reached] = np.clip(self._output[leaf[reached]], 0.0, None)
        total = noisy.sum(axis=1, keepdims=True)
        return np.divide(noisy, total, out=np.full_like(noisy, 1.0 / k), where=total > 0)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


MAX_BOOST_DEPTH = 20


class ReleasedBoost:
    """A released DPBoost model: for each one-vs-rest target (one for two classes) its
    trees, each the split (feature, bin threshold) of every node level by level and the
    noisy value of all 2^depth leaves. Holds no data and no diagnostics.

    A record goes left at a node when its bin code is ≤ the threshold (an unknown
    discrete value, code -1, goes left), exactly as the estimator routes it, so
    ``predict`` and ``predict_proba`` equal the fitted estimator's.
    """

    def __init__(self, meta: dict[str, Any], schema: Schema, models: list[dict]):
        self.meta = meta
        self.schema = schema
        self.models = models
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._compile()

    @classmethod
    def from_estimator(cls, model, algorithm: str | None = None) -> ReleasedBoost:
        """Release a fitted :class:`~dpviz.models.boosting.DPBoostClassifier`."""
        check_is_fitted(model, "models_")
        n_nodes = sum(2 * len(t["value"]) - 1 for trees in model.models_ for t in trees)
        if n_nodes > MAX_EXPORT_NODES:
            raise ValueError(
                f"cannot export: the model has {n_nodes:,} nodes, more than the "
                f"{MAX_EXPORT_NODES:,} an export may list; lower max_depth or the number of "
                "trees"
            )
        k = len(model.schema_.classes)
        targets = [1] if k == 2 else list(range(k))
        models = [
            {
                "target": int(target),
                "init_score": float(init),
                "weight": float(weight),
                "trees": [
                    {
                        "feature": [[int(v) for v in level] for level in tree["feature"]],
                        "threshold": [[int(v) for v in level] for level in tree["threshold"]],
                        "equal": [[bool(v) for v in level] for level in tree["equal"]],
                        "value": [float(v) for v in tree["value"]],
                    }
                    for tree in trees
                ],
            }
            for target, init, weight, trees in zip(
                targets, model.init_score_, model.tree_weight_, model.models_
            )
        ]
        meta = {
            "kind": KINDS[BOOST_FORMAT],
            "algorithm": algorithm or "dpboost",
            **_common_meta(model),
            "releases": "scores",
            "n_bins": int(model.n_bins),
            "learning_rate": float(model.learning_rate),
            "max_depth": int(model.max_depth),
        }
        return cls(meta, model.schema_, models)

    def to_json(self) -> str:
        return _to_json(BOOST_FORMAT, self.schema, self.meta, {"models": self.models})

    def save(self, path: str | Path) -> None:
        write_text(path, self.to_json())

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleasedBoost:
        return cls.from_document(_parse_json(text))

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedBoost:
        doc, schema = _check_document(doc, BOOST_FORMAT, ("n_bins", "learning_rate", "models"))
        meta = {k: v for k, v in doc.items() if k not in ("format", "version", "schema", "models")}
        boost = cls(meta, schema, doc["models"])
        boost.meta["privacy"] = _verified_privacy(meta, _estimator_ledger(meta, schema, "boost"))
        return boost

    @classmethod
    def load(cls, path: str | Path) -> ReleasedBoost:
        return cls.from_json(_read_bytes(path))

    def _compile(self) -> None:
        self._n_bins = _whole(self.meta.get("n_bins"), "n_bins", low=2, high=10_000)
        eta = self.meta.get("learning_rate")
        if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0 < eta < 1:
            raise ValueError("the model's 'learning_rate' must be a number in (0, 1)")
        self._eta = float(eta)
        k = len(self.classes_)
        m = len(self.schema.features)
        widths = np.asarray(
            [self._n_bins] * len(self.schema.continuous)
            + [len(f.values) for f in self.schema.discrete]
        )
        expected = 1 if k == 2 else k
        if not isinstance(self.models, list) or len(self.models) != expected:
            raise ValueError(
                f"the model needs {expected} one-vs-rest part{'s' * (expected > 1)} in "
                f"'models' for {k} classes"
            )
        compiled = []
        for c, part in enumerate(self.models):
            trees = part.get("trees") if isinstance(part, dict) else None
            if not isinstance(trees, list) or not trees:
                raise ValueError(f"part {c + 1} of the model has no trees")
            compiled.append([self._compile_tree(t, c, i, m, widths) for i, t in enumerate(trees)])
        self._trees = compiled
        self._start, self._weight = [], []
        for c, part in enumerate(self.models):
            init, weight = part.get("init_score", 0.0), part.get("weight", 1.0)
            for name, v in (("init_score", init), ("weight", weight)):
                if isinstance(v, bool) or not isinstance(v, int | float) or not _finite(v):
                    raise ValueError(f"part {c + 1} of the model: '{name}' must be a number")
            self._start.append(float(init))
            self._weight.append(float(weight))

    @staticmethod
    def _compile_tree(tree, part: int, index: int, m: int, widths: np.ndarray):
        where = f"tree {index + 1} of part {part + 1}"
        try:
            features = [_int_array(level) for level in tree["feature"]]
            thresholds = [_int_array(level) for level in tree["threshold"]]
            equal = tree.get("equal", [[False] * len(t) for t in thresholds])
            if not isinstance(equal, list) or not all(
                isinstance(level, list) and all(type(v) is bool for v in level) for level in equal
            ):
                raise TypeError
            equal = [np.asarray(level, dtype=bool) for level in equal]
            value = tree["value"]
            if not isinstance(value, list) or not isinstance(tree["feature"], list):
                raise TypeError
            if not all(type(v) in (int, float) for v in value):
                raise TypeError
            value = np.asarray(value, dtype=np.float64)
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ValueError(
                f"{where} is malformed: it needs 'feature' and 'threshold' (one list per "
                "level) and 'value' (one number per leaf)"
            ) from None
        depth = len(features)
        if not 1 <= depth <= MAX_BOOST_DEPTH or len(thresholds) != depth or len(equal) != depth:
            raise ValueError(f"{where}: depth must be 1 to {MAX_BOOST_DEPTH} in every list")
        for d, (f, t, eq) in enumerate(zip(features, thresholds, equal)):
            if len(f) != 2**d or len(t) != 2**d or len(eq) != 2**d:
                raise ValueError(f"{where}: level {d} must list {2**d} splits")
            if np.any(f < 0) or np.any(f >= m):
                raise ValueError(f"{where}: a node splits on a feature the schema lacks")
            # a threshold leaves codes on both sides (< width − 1); a one-hot test names a
            # code (< width)
            if np.any(t < 0) or np.any(t >= widths[f] - 1 + eq):
                raise ValueError(f"{where}: a split threshold is outside its feature's bins")
        if value.shape != (2**depth,) or not np.all(np.isfinite(value)):
            raise ValueError(f"{where}: it needs {2**depth} finite leaf values")
        return {"feature": features, "threshold": thresholds, "equal": equal, "value": value}

    def scores(self, encoded: EncodedData) -> np.ndarray:
        """The boosted score of every record, one column per one-vs-rest part."""
        codes, _ = bin_codes(encoded, self.schema, self._n_bins)
        eta = self._eta
        return np.stack(
            [
                start + weight * sum(eta * t["value"][route(t, codes)] for t in trees)
                for start, weight, trees in zip(self._start, self._weight, self._trees)
            ],
            axis=1,
        )

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        scores = self.scores(encode(X, self.schema, training=False))
        if scores.shape[1] == 1:
            positive = (np.clip(scores[:, 0], -1, 1) + 1) / 2
            return np.stack([1 - positive, positive], axis=1)
        shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
        return shifted / shifted.sum(axis=1, keepdims=True)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


Released = ReleasedForest | ReleasedTree | ReleasedBoost
READERS = {FORMAT: ReleasedForest, TREE_FORMAT: ReleasedTree, BOOST_FORMAT: ReleasedBoost}


INFERRED_REFUSAL = (
    "cannot export: the schema was inferred from the data, so the file would list the "
    "records' own values (every discrete value, e.g. each e-mail address, and the exact "
    "min and max of each column) and the class names read from the data. Declare a "
    "public schema first: write it with `python -m dpviz info --data FILE --label LABEL "
    "--schema-out schema.json`, remove anything that is not public, and train with "
    "--schema schema.json (in the app: confirm the schema in the Data page's editor)"
)


def check_public_schema(schema: Schema, values_public: bool = False) -> None:
    """Refuse to release a schema inferred from the data (its values are the records'
    own) unless the user declared them public (``values_public``)."""
    if schema.inferred and not values_public:
        raise ValueError(INFERRED_REFUSAL)


def release(model, algorithm: str | None = None, *, values_public: bool = False) -> Released:
    """The released form of any fitted model of the algorithm registry (``ValueError``
    when it cannot be listed whole, with the reason).

    A model whose schema was inferred from the data is refused (the file would carry the
    records' values: discrete values, exact min and max, class names) unless
    ``values_public`` says the user declared those values public."""
    schema = getattr(model, "schema_", None)
    if isinstance(schema, Schema):
        check_public_schema(schema, values_public)
    if isinstance(model, DPRandomForestClassifier):
        return ReleasedForest.from_estimator(model)
    if isinstance(model, DPDecisionTreeClassifier):
        return ReleasedTree.from_estimator(model, algorithm)
    if isinstance(model, DPBoostClassifier):
        return ReleasedBoost.from_estimator(model, algorithm)
    raise ValueError(f"dpviz cannot export a {type(model).__name__} model")


def model_from_json(text: str | bytes) -> Released:
    """Any dpviz model file (forest, greedy tree or DPBoost), validated."""
    doc = _parse_json(text)
    fmt = doc.get("format") if isinstance(doc, dict) else None
    reader = READERS.get(fmt) if isinstance(fmt, str) else None
    if reader is None:
        raise ValueError(
            "this is not a dpviz model file (no 'format': "
            + ", ".join(f"'{f}'" for f in READERS)
            + ")"
        )
    return reader.from_document(doc)


def load_model(path: str | Path) -> Released:
    """Read any dpviz model file from ``path``."""
    return model_from_json(_read_bytes(path))


# --- shared reading and writing ---------------------------------------------------------------


def _read_bytes(path: str | Path) -> bytes:
    try:
        size = Path(path).stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ValueError(
                f"model file {str(path)!r} is {size:,} bytes; the limit is "
                f"{MAX_MODEL_BYTES:,} bytes — is it the right file?"
            )
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ValueError(f"model file {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{str(path)!r} is a folder, not a model file") from None


def _parse_json(text: str | bytes) -> Any:
    """The parsed model file: bounded in size and nesting, UTF-8 (a BOM is fine)."""
    return parse_json(text, "the model file", max_bytes=MAX_MODEL_BYTES)


def _check_document(doc: Any, expected: str, required: tuple[str, ...]) -> tuple[dict, Schema]:
    """The checks every model file passes: format, version, schema, classes, features."""
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt != expected:
        if isinstance(fmt, str) and fmt in KINDS:
            raise ValueError(
                f"this is a dpviz {KINDS[fmt]} model ('format': '{fmt}'), not a "
                f"{KINDS[expected]}; read it with dpviz.models.files.load_model"
            )
        raise ValueError(f"this is not a dpviz model file (no 'format': '{expected}')")
    if type(doc.get("version")) is not int or doc.get("version") != FORMAT_VERSION:
        raise ValueError(
            f"model format version {doc.get('version')!r} is not supported "
            f"(this dpviz reads version {FORMAT_VERSION})"
        )
    missing = [k for k in ("schema", "classes", "feature_order", *required) if k not in doc]
    if missing:
        raise ValueError("the model file lacks: " + ", ".join(missing))
    schema = Schema.from_dict(doc["schema"])
    if not isinstance(doc["classes"], list):
        raise ValueError("the model's 'classes' must be a list of class names")
    if [str(c) for c in doc["classes"]] != list(schema.classes):
        raise ValueError("the model's class list does not match its schema")
    if doc["feature_order"] != feature_order(schema):
        raise ValueError("the model's feature order does not match its schema")
    return doc, schema


def _to_json(fmt: str, schema: Schema, meta: dict, body: dict) -> str:
    document = {
        "format": fmt,
        "version": FORMAT_VERSION,
        "dpviz_version": dpviz_version(),
        "schema": schema.to_dict(),
        **meta,
        **body,
    }
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def _common_meta(model) -> dict:
    """What every export states: classes, features, ε, the parameters and the ledger."""
    ledger = model.ledger_.to_dict()
    params = {
        k: v
        for k, v in model.get_params().items()
        if k not in ("schema", "random_state", "noise_seed")
        and isinstance(v, str | int | float | bool)
    }
    return {
        "classes": [str(c) for c in model.schema_.classes],
        "feature_order": feature_order(model.schema_),
        "epsilon": float(model.epsilon),
        "params": params,
        "noise": _noise_mode(model),
        "schema_inferred": bool(model.schema_.inferred),
        "privacy": {
            "epsilon_total": ledger["epsilon_total"],
            "private": ledger["private"],
            "summary": ledger["summary"],
        },
    }


def _noise_mode(model) -> str:
    """ "secret" (fresh OS secret, never stored) or the NOT-private replayable label."""
    return "secret" if model.noise_seed is None else REPLAYABLE


def _number(value: Any) -> int | float:
    """A released count as read back: whole numbers stay integers."""
    return int(value) if float(value).is_integer() else float(value)


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ValueError(f"the model's {name!r} must be a whole number from {low} to {high}")
    return value


def _counts_row(value: Any, k: int, where: str) -> np.ndarray:
    try:
        row = np.asarray(value, dtype=np.float64) if isinstance(value, list) else None
    except (TypeError, ValueError, OverflowError):
        row = None
    if row is None or row.shape != (k,) or not np.all(np.isfinite(row)):
        raise ValueError(f"{where}: a leaf's noisy counts are not {k} numbers")
    return row


# --- what a model file may claim -------------------------------------------------------------


def _check_shape(first_child: np.ndarray, n_children: np.ndarray, depth: Any, where: str) -> None:
    """A tree: every node but the root has exactly one parent, and no path is longer than
    ``depth`` (the file's own claim, itself at most :data:`MAX_DEPTH`)."""
    n = len(first_child)
    if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"the model's 'depth' must be a whole number from 1 to {MAX_DEPTH}")
    parents = np.flatnonzero(n_children > 0)
    width = n_children[parents]
    children = np.repeat(first_child[parents], width) + (
        np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
    )
    if len(children) != n - 1 or not np.array_equal(np.sort(children), np.arange(1, n)):
        raise ValueError(f"{where}: its nodes do not form a tree (a node has two parents or none)")
    level = np.asarray([0])
    for _ in range(depth + 1):
        inner = level[n_children[level] > 0]
        if len(inner) == 0:
            return
        width = n_children[inner]
        level = np.repeat(first_child[inner], width) + (
            np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
        )
    raise ValueError(f"{where}: a path is deeper than the model's depth {depth}")


def _number_in(meta: dict, name: str, low: float, high: float, default: Any = None) -> float:
    value = meta.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
        raise ValueError(f"the model's {name!r} must be a number")
    if not low <= value <= high:
        raise ValueError(f"the model's {name!r} must be from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _check_forest_meta(meta: dict, n_trees: int) -> None:
    """The forest's parameters: types, bounds, and agreement with the trees listed."""
    from dpviz.models.forest import DATA_SPLITS, MAX_TREES

    if not isinstance(meta["mechanism"], str):
        raise ValueError("the model's 'mechanism' must be a mechanism name")
    mech = get_mechanism(meta["mechanism"])
    if meta["releases"] != mech.releases:
        raise ValueError(
            f"the model says it releases {meta['releases']} but mechanism {mech.id} releases "
            f"{mech.releases}"
        )
    eps = _number_in(meta, "epsilon", 1e-300, 1e300)
    meta.setdefault("n_estimators", n_trees)
    _whole(meta["n_estimators"], "n_estimators", low=1, high=MAX_TREES)
    if meta["n_estimators"] != n_trees:
        raise ValueError(f"the model claims {meta['n_estimators']:,} trees but lists {n_trees:,}")
    _whole(meta.get("depth"), "depth", low=1, high=MAX_DEPTH)
    meta.setdefault("data_split", "disjoint")
    if meta["data_split"] not in DATA_SPLITS:
        raise ValueError(f"the model's 'data_split' must be one of {', '.join(DATA_SPLITS)}")
    for name in ("schema_inferred",):
        if name in meta and type(meta[name]) is not bool:
            raise ValueError(f"the model's {name!r} must be true or false")
    _whole(meta.get("n_batches", 1), "n_batches", low=1, high=10**6)
    # A file that does not say its noise was secret is booked as replayable (NOT private).
    if meta.get("noise", REPLAYABLE) not in ("secret", REPLAYABLE):
        raise ValueError("the model's 'noise' must say 'secret' or that it is replayable")
    spent = _number_in(meta, "depth_count_epsilon", 0, eps, 0.0) + _number_in(
        meta, "prior_epsilon", 0, eps, 0.0
    )
    if spent >= eps:
        raise ValueError("the model's record-count and prior budgets leave nothing for the trees")
    if "tree_epsilon" in meta:
        expected = (eps - spent) / (n_trees if meta.get("data_split") == "shared" else 1)
        if not math.isclose(_number_in(meta, "tree_epsilon", 0, eps), expected, rel_tol=1e-9):
            raise ValueError(
                f"the model's per-tree ε {meta['tree_epsilon']!r} does not follow from its ε, "
                f"trees and data split (that gives {expected:g})"
            )


def forest_ledger(meta: dict):
    """The ledger a forest file's own parameters give (never the file's claim)."""
    return build_ledger(
        meta["mechanism"],
        float(meta["epsilon"]),
        int(meta["n_estimators"]),
        meta.get("data_split", "disjoint"),
        schema_inferred=bool(meta.get("schema_inferred", False)),
        depth_rule=meta.get("depth_rule", "theorem2"),
        n_batches=int(meta.get("n_batches", 1)),
        replayable=meta.get("noise") != "secret",
        depth_count_epsilon=float(meta.get("depth_count_epsilon", 0.0)),
        prior_epsilon=float(meta.get("prior_epsilon", 0.0)),
    )


def _estimator_ledger(meta: dict, schema: Schema, kind: str):
    """The ledger a greedy-tree or DPBoost file's parameters give, by the estimator's own
    rule (an unfitted estimator with those parameters, the fitted depth set)."""
    params = meta.get("params")
    if not isinstance(params, dict):
        raise ValueError("the model file lacks its 'params' (the algorithm's parameters)")
    estimator = DPDecisionTreeClassifier() if kind == "tree" else DPBoostClassifier()
    known = estimator.get_params()
    given = {k: v for k, v in params.items() if k in known and k not in ("schema",)}
    eps = _number_in(meta, "epsilon", 1e-300, 1e300)
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
            estimator.depth_ = _whole(meta.get("max_depth"), "max_depth", low=0, high=MAX_DEPTH)
        inferred = meta.get("schema_inferred", False)
        if type(inferred) is not bool:
            raise ValueError("the model's 'schema_inferred' must be true or false")
        return estimator.privacy_ledger(inferred)
    except (TypeError, KeyError, AttributeError, ZeroDivisionError, OverflowError) as exc:
        raise ValueError(f"the model's parameters are not valid ({exc})") from None


def _verified_privacy(meta: dict, ledger) -> dict:
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
    return {"epsilon_total": total, "private": ledger.private, "summary": ledger.describe()}
