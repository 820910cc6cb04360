"""Released models as validated JSON: every node of every tree, never a pickle.

Three formats, one per family of the algorithm registry, each with a ``kind`` and an
``algorithm`` field: ``dpviz-forest`` (fletcher_islam, jpw: :class:`ReleasedForest`),
``dpviz-tree`` (friedman_schuster, dpea: :class:`ReleasedTree`) and ``dpviz-boost``
(dpboost: :class:`ReleasedBoost`). :func:`release` exports any fitted model of the
registry, :func:`load_model` / :func:`model_from_json` read any of the three files.

Import every name from here. This module holds the greedy-tree and DPBoost files and the
readers of any file; behind it, ``_file_format`` is the container all three share (names,
limits, reading, writing, value checks), ``_file_claims`` what a file may claim (its
parameters, and a privacy statement recomputed, never trusted), ``_forest_file`` the
forest file (:class:`ReleasedForest`), ``_forest_nodes`` a forest file's trees as checked
node arrays that route records, and ``_forest_update`` a new batch of records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from dpviz.models.boosting.budget import small_macro_f1
from dpviz.models.boosting.estimator import DPBoostClassifier, route
from dpviz.models.boosting.predict import decision_scores, scores_to_proba
from dpviz.models.files.claims import estimator_ledger, verified_privacy
from dpviz.models.files.forest import ReleasedForest, check_forest_export
from dpviz.models.files.format import (
    BOOST_FORMAT,
    EXPORT_FRONTIER_BYTES,
    FORMAT,
    FORMAT_VERSION,
    KINDS,
    MAX_EXPORT_NODES,
    MAX_MODEL_BYTES,
    REPLAYABLE,
    TREE_FORMAT,
    ReleasedFile,
    check_document,
    check_shape,
    counts_row,
    dpviz_version,
    export_node_limit,
    finite,
    int_array,
    noise_mode,
    number_in,
    parse_document,
    prior_row,
    read_bytes,
    whole,
)
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.models.greedy.budget import edge_epsilon
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.trees.depth import MAX_DEPTH
from dpviz.models.trees.edges import EDGE_CELLS, codes_at
from dpviz.models.trees.features import feature_order
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData, encode

# Re-exported: the names callers import from here (the CLI, the app, the tests).
__all__ = [
    "BOOST_FORMAT",
    "EXPORT_FRONTIER_BYTES",
    "FORMAT",
    "FORMAT_VERSION",
    "INFERRED_REFUSAL",
    "KINDS",
    "MAX_BOOST_DEPTH",
    "MAX_EXPORT_NODES",
    "MAX_MODEL_BYTES",
    "READERS",
    "REPLAYABLE",
    "TREE_FORMAT",
    "Released",
    "ReleasedBoost",
    "ReleasedForest",
    "ReleasedTree",
    "check_forest_export",
    "check_public_schema",
    "dpviz_version",
    "export_node_limit",
    "load_model",
    "model_from_json",
    "release",
]


# --- greedy trees (friedman_schuster, dpea) and DPBoost ---------------------------------------


class ReleasedTree(ReleasedFile):
    """A released greedy DP tree (Friedman–Schuster, DPEA): every node and the noisy class
    counts of every leaf, empty or not. Holds no data and no diagnostics.

    Routing bins each continuous feature into the model's ``n_bins`` bins, as the
    estimator does: at its released ``bin_edges`` (post-processing of the booked noisy
    histograms; ``split_points="quantile"`` from ε = 1) or at equal widths of its public
    domain. A file may list edges exactly where its parameters book their histograms
    (a file without ``split_points``, written before them, is read as "uniform"). A
    record with an unknown discrete value
    at a split abstains (uniform class probabilities). ``predict`` and
    ``predict_proba`` equal the fitted estimator's on records without unknown values.
    """

    format = TREE_FORMAT
    body = "tree"

    def __init__(self, meta: dict[str, Any], schema: Schema, tree: dict[str, list]):
        self.meta = meta
        self.schema = schema
        self.tree = tree
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._compile()

    @classmethod
    def from_estimator(cls, model, algorithm: str | None = None) -> ReleasedTree:
        """Release a fitted :class:`~dpviz.models.greedy.estimator.DPDecisionTreeClassifier`."""
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
        if model.bin_edges_ is not None:
            meta["edge_cells"] = EDGE_CELLS
            meta["bin_edges"] = [[int(v) for v in row] for row in model.bin_edges_]
        return cls(meta, model.schema_, tree)

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedTree:
        doc, schema = check_document(doc, TREE_FORMAT, ("n_bins", "tree"))
        if not isinstance(doc["tree"], dict):
            raise ValueError("the model's 'tree' must be an object with the node lists")
        meta, reason = cls.meta_of(doc)
        tree = cls(meta, schema, doc["tree"])
        tree.claim_reason = reason
        params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
        booked = edge_epsilon(
            number_in(meta, "epsilon", 1e-300, 1e300),
            params.get("split_points", "uniform"),
            len(schema.continuous),
        )
        if (booked > 0) != (tree._edges is not None):
            raise ValueError(
                "the model's 'bin_edges' must be listed exactly where its parameters book "
                "the noisy histograms that place them (split_points 'quantile', ε ≥ 1 and "
                "a continuous feature)"
            )
        tree.meta["privacy"] = verified_privacy(meta, estimator_ledger(meta, schema, "tree"))
        return tree

    def _compile(self) -> None:
        n_bins = whole(self.meta.get("n_bins"), "n_bins", low=2, high=10_000)
        k = len(self.classes_)
        prior_row(self.meta, k)
        widths = np.asarray(
            [n_bins] * len(self.schema.continuous) + [len(f.values) for f in self.schema.discrete]
        )
        try:
            feature = int_array(self.tree["feature"])
            first_child = int_array(self.tree["first_child"])
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
        check_shape(first_child, width * inner, MAX_DEPTH, "the tree")
        values = np.full((n, k), np.nan)
        for i in np.flatnonzero(~inner):
            values[i] = counts_row(output[i], k, "the tree")
        self._n_bins = n_bins
        self._edges = released_edges(self.meta, len(self.schema.continuous), n_bins)
        self._feature = feature
        self._first_child = np.where(inner, first_child, -1)
        self._output = values

    def leaf_of(self, encoded: EncodedData) -> np.ndarray:
        """The leaf node each record reaches (-1 where an unknown value stops it)."""
        codes, _ = codes_at(encoded, self.schema, self._n_bins, self._edges)
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


MAX_BOOST_DEPTH = 20


def released_edges(meta: dict[str, Any], n_continuous: int, n_bins: int) -> np.ndarray | None:
    """A greedy-tree or DPBoost file's released bin edges (None: equal-width public
    bins), checked:
    ``edge_cells`` must be this version's :data:`EDGE_CELLS` and ``bin_edges`` one
    non-decreasing list of ``n_bins`` − 1 cell indices in [1, EDGE_CELLS] per
    continuous feature."""
    if "bin_edges" not in meta and "edge_cells" not in meta:
        return None
    if meta.get("edge_cells") != EDGE_CELLS or isinstance(meta.get("edge_cells"), bool):
        raise ValueError(f"the model's 'edge_cells' must be {EDGE_CELLS} (this dpviz's cells)")
    rows = meta.get("bin_edges")
    try:
        if not isinstance(rows, list) or len(rows) != n_continuous:
            raise TypeError
        edges = np.array([int_array(row) for row in rows], dtype=np.int64).reshape(
            n_continuous, n_bins - 1
        )
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"the model's 'bin_edges' must list {n_bins - 1} cell numbers for each of its "
            f"{n_continuous} continuous features"
        ) from None
    if edges.size and (
        edges.min() < 1 or edges.max() > EDGE_CELLS or np.any(np.diff(edges, axis=1) < 0)
    ):
        raise ValueError(
            f"the model's 'bin_edges' must be non-decreasing cell numbers from 1 to {EDGE_CELLS}"
        )
    return edges


class ReleasedBoost(ReleasedFile):
    """A released DPBoost model: for each one-vs-rest target (one for two classes) its
    trees, each the split (feature, bin threshold) of every node level by level and the
    noisy value of all 2^depth leaves. Holds no data and no diagnostics.

    A record goes left at a node when its bin code is ≤ the threshold (an unknown
    discrete value, code -1, goes left), exactly as the estimator routes it, so
    ``predict`` and ``predict_proba`` equal the fitted estimator's.
    """

    format = BOOST_FORMAT
    body = "models"

    def __init__(self, meta: dict[str, Any], schema: Schema, models: list[dict]):
        self.meta = meta
        self.schema = schema
        self.models = models
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._compile()

    @classmethod
    def from_estimator(cls, model, algorithm: str | None = None) -> ReleasedBoost:
        """Release a fitted :class:`~dpviz.models.boosting.estimator.DPBoostClassifier`."""
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
            "n_bins": int(model.n_bins_),
            "learning_rate": float(model.learning_rate_),
            "max_depth": int(model.max_depth_),
            "decision_scale": float(model.reach_),
        }
        edges = getattr(model, "bin_edges_", None)
        if edges is not None:
            # The grown model's bin edges (post-processing of its booked noisy feature
            # histograms); absent otherwise, so the other files keep their bytes.
            meta["edge_cells"] = EDGE_CELLS
            meta["bin_edges"] = [[int(v) for v in row] for row in edges]
        if model.loss_ != "square":
            # The grown model's log-loss: its scores are log-odds / logits. Absent for
            # the square loss, so those files keep their bytes.
            meta["loss"] = model.loss_
        if getattr(model, "random_", False):
            # The random-split mode (from the noisy class histogram's total); absent
            # otherwise, so other files keep their bytes. The file's ledger check reads it.
            meta["random_splits"] = True
        if small_macro_f1(model):
            # macro_f1's one small tree (from the parameters below ε = 1, else from the
            # noisy class histogram's total); absent otherwise, so other files keep
            # their bytes. The file's ledger check reads it.
            meta["small_macro_f1"] = True
        threshold = getattr(model, "decision_threshold_", None)
        if threshold is not None:
            # The macro_f1 rule's threshold (post-processing of the booked score
            # histogram); absent otherwise, so the other files keep their bytes.
            meta["decision_threshold"] = float(threshold)
        return cls(meta, model.schema_, models)

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedBoost:
        doc, schema = check_document(doc, BOOST_FORMAT, ("n_bins", "learning_rate", "models"))
        meta, reason = cls.meta_of(doc)
        boost = cls(meta, schema, doc["models"])
        boost.claim_reason = reason
        boost.meta["privacy"] = verified_privacy(meta, estimator_ledger(meta, schema, "boost"))
        return boost

    def _compile(self) -> None:
        self._n_bins = whole(self.meta.get("n_bins"), "n_bins", low=2, high=10_000)
        eta = self.meta.get("learning_rate")
        if isinstance(eta, bool) or not isinstance(eta, int | float) or not 0 < eta < 1:
            raise ValueError("the model's 'learning_rate' must be a number in (0, 1)")
        self._eta = float(eta)
        k = len(self.classes_)
        prior_row(self.meta, k)
        self._scale = number_in(self.meta, "decision_scale", 0.0, 1.0, default=1.0)
        self._loss = self.meta.get("loss", "square")
        if self._loss not in ("square", "logistic"):
            raise ValueError("the model's 'loss' must be 'square' or 'logistic'")
        self._edges = released_edges(self.meta, len(self.schema.continuous), self._n_bins)
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
                if isinstance(v, bool) or not isinstance(v, int | float) or not finite(v):
                    raise ValueError(f"part {c + 1} of the model: '{name}' must be a number")
            self._start.append(float(init))
            self._weight.append(float(weight))

    @staticmethod
    def _compile_tree(tree, part: int, index: int, m: int, widths: np.ndarray):
        where = f"tree {index + 1} of part {part + 1}"
        try:
            features = [int_array(level) for level in tree["feature"]]
            thresholds = [int_array(level) for level in tree["threshold"]]
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
        codes, _ = codes_at(encoded, self.schema, self._n_bins, self._edges)
        eta = self._eta
        return np.stack(
            [
                start + weight * sum(eta * t["value"][route(t, codes)] for t in trees)
                for start, weight, trees in zip(self._start, self._weight, self._trees)
            ],
            axis=1,
        )

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        return scores_to_proba(self.scores(encode(X, self.schema, training=False)), self._loss)

    def decision_scores(self, X: pd.DataFrame) -> np.ndarray:
        """The scores over the file's ``decision_scale`` κ on the probability scale, as
        the estimator weighs them (:func:`~dpviz.models.boosting.predict.decision_scores`)."""
        scores = self.scores(encode(X, self.schema, training=False))
        return decision_scores(scores, self._scale, self._loss)


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
    doc = parse_document(text)
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
    return model_from_json(read_bytes(path))


# --- export of the greedy trees and DPBoost ----------------------------------------------------


def _common_meta(model) -> dict:
    """What every export states: classes, features, ε, the parameters and the ledger."""
    ledger = model.ledger_.to_dict()
    params = {
        k: v
        for k, v in model.get_params().items()
        if k not in ("schema", "random_state", "noise_seed", "objective")
        and isinstance(v, str | int | float | bool)
    }
    # DPBoost grown at large ε, or in its random-split mode: the sizes it used, so the
    # file's ledger is recomputed right.
    # (The small macro_f1 model keeps the parameters as given: its sizes follow from them,
    # the objective and ε by a public rule that the file's ledger check applies again.)
    if getattr(model, "grown_", False) or getattr(model, "random_", False):
        params.update(model.fitted_parameters_)
    meta = {
        "classes": [str(c) for c in model.schema_.classes],
        "feature_order": feature_order(model.schema_),
        "epsilon": float(model.epsilon),
        "params": params,
        "objective": model.objective,
        "decision_prior": [float(v) for v in model.decision_prior_],
        "noise": noise_mode(model),
        "schema_inferred": bool(model.schema_.inferred),
        "privacy": {
            "epsilon_total": ledger["epsilon_total"],
            "private": ledger["private"],
            "summary": ledger["summary"],
        },
    }
    threshold = getattr(model, "decision_threshold_", None)
    if threshold is not None:
        # The macro_f1 rule's threshold (greedy trees): absent otherwise, so files of
        # the other objectives (and DPBoost's) keep their bytes.
        meta["decision_threshold"] = threshold
    return meta
