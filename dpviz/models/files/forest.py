"""The released forest, ``dpviz-forest`` (Fletcher–Islam, JPW; behind
:mod:`dpviz.models.files.load`).

:class:`ReleasedForest` is what an outsider sees of a fitted forest: the schema, every
node of every tree and the released leaf outputs. It exports a fitted
:class:`~dpviz.models.forest.estimator.DPRandomForestClassifier` (listing every leaf, empty or
not), reads a file back with every claim checked, predicts and takes new batches of records.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpviz.models.files.claims import (
    batch_list,
    check_forest_meta,
    check_prior,
    forest_ledger,
    verified_batches,
    verified_privacy,
)
from dpviz.models.files.forest_nodes import compile_nodes
from dpviz.models.files.forest_update import update_forest
from dpviz.models.files.format import (
    FORMAT,
    KINDS,
    MAX_EXPORT_NODES,
    ReleasedFile,
    check_document,
    export_node_limit,
    noise_mode,
)
from dpviz.models.forest.estimator import (
    DPRandomForestClassifier,
    PrivateRDTClassifier,
)
from dpviz.models.forest.estimator import space_for as build_space
from dpviz.models.forest.floor import evidence_epsilon, floor_scores, records_split
from dpviz.models.forest.records import normalise_votes
from dpviz.models.forest.scoring import (
    count_prior,
    count_values,
    count_votes,
    prior_lead_weights,
    prior_shares,
)
from dpviz.models.forest.signal import (
    LEAF_FLOOR_U,
    evidence_scale,
    pooled_shrink_records,
    shared_floor_applies,
    terms_signal,
    tree_terms,
)
from dpviz.models.forest.voting import outcome_of
from dpviz.models.trees.features import feature_order
from dpviz.models.trees.floor import FloorOutcome
from dpviz.models.trees.full import build_full
from dpviz.privacy.mechanisms import get_mechanism
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import encode


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


class ReleasedForest(ReleasedFile):
    """What an outsider sees: the schema, the tree structure and the leaf outputs.

    Holds no training data and no diagnostics. ``predict`` and ``predict_proba`` give
    exactly what the fitted estimator gave. ``nodes`` holds the trees as checked flat
    arrays (:class:`~dpviz.models.files.forest_nodes.ForestNodes`).
    """

    format = FORMAT
    body = "trees"

    def __init__(self, meta: dict[str, Any], schema: Schema, trees: list[dict[str, list]]):
        self.meta = meta
        self.schema = schema
        self.trees = trees
        self.classes_ = np.asarray(meta["classes"], dtype=object)
        self._prior_weight = check_prior(meta, len(self.classes_))
        self.nodes = compile_nodes(trees, schema, meta, len(self.classes_))

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
        counts_mech = get_mechanism(model.mechanism).releases == "counts"
        trees = _node_lists(full, _leaf_outputs(model, full, counts_mech), model.n_estimators_)
        return cls(_export_meta(model, counts_mech), model.schema_, trees)

    @classmethod
    def from_document(cls, doc: Any) -> ReleasedForest:
        """Validate a parsed model file (``ValueError`` saying what is wrong)."""
        doc, schema = check_document(doc, FORMAT, ("mechanism", "releases", "trees"))
        if doc["releases"] not in ("label", "counts"):
            raise ValueError("the model's 'releases' must be 'label' or 'counts'")
        if not isinstance(doc["trees"], list) or not doc["trees"]:
            raise ValueError("the model has no trees")
        meta, reason = cls.meta_of(doc)
        check_forest_meta(meta, len(doc["trees"]))
        forest = cls(meta, schema, doc["trees"])
        forest.claim_reason = reason
        ledger = forest_ledger(meta)
        forest.meta["privacy"] = verified_privacy(meta, ledger)
        forest.meta["batches"] = verified_batches(meta, ledger)
        return forest

    # --- prediction and updates ---------------------------------------------------------

    def _votes(self, frame: pd.DataFrame) -> np.ndarray:
        encoded = encode(frame, self.schema, training=False)
        if self.meta["releases"] == "counts":
            # As the estimator: shrunk log shares of the released counts (leaf rows only
            # are read; inner nodes hold zeros).
            prior = count_prior(self.meta.get("prior_counts"), len(self.classes_))
            eps = float(self.meta["tree_epsilon"])
            leaves = self.nodes.leaf_output[self.nodes.feature < 0]
            # As the estimator: Private-RDT's floor terms of every listed leaf (None where
            # the test does not apply) set the leaves' pseudo-count and the floor's test.
            terms = self._tree_terms(leaves)
            alpha = None if terms is None else pooled_shrink_records(terms, prior, eps)
            shared = self.meta.get("data_split") == "shared" and not self._halves
            values = count_values(self.nodes.leaf_output, prior, eps, alpha=alpha, squares=shared)
            disjoint = self.meta.get("data_split") == "disjoint"
            # As the estimator: the evidence scale from every leaf's released counts and
            # the tree count (the file's list of trees).
            scale = evidence_scale(leaves, prior, eps, len(self.trees)) if disjoint else 1.0
            # As the estimator: the margin over a class weighed by the prior's lead over it.
            weights = prior_lead_weights(
                self.meta.get("prior_counts"),
                float(self.meta.get("prior_epsilon", 0.0)),
                len(prior),
            )
            votes = count_votes(
                self.nodes.sums(encoded, values),
                prior,
                evidence_epsilon(eps, len(self.trees), self._halves),
                noise_margins=disjoint,
                scale=scale,
                margin_weights=weights,
            )
            trusted = terms is None or terms_signal(terms) >= LEAF_FLOOR_U
            if not self.meta.get("floor_trusted", True) or not trusted:
                # The floor's check (disjoint trees) or its leaf test (shared trees) did
                # not trust the trees: the prior's class, their ranking.
                return floor_scores(normalise_votes(votes), self.decision_prior)
            return votes
        # Label votes: a fall-back is in the exported prior weight (floor_prior_weight).
        votes = self.nodes.votes(encoded)
        if self.meta.get("prior_counts") is not None:
            votes += self._prior_weight * prior_shares(self.meta["prior_counts"])
        return votes

    def _tree_terms(self, leaves: np.ndarray) -> np.ndarray | None:
        """As the estimator (:func:`~dpviz.models.forest.voting.release_tree_terms`): the
        per-tree terms of Private-RDT's floor on every listed leaf's released counts
        (``leaves``, in node order), or None where the test does not apply."""
        meta = self.meta
        eps = float(meta["tree_epsilon"])
        applies = shared_floor_applies(
            meta.get("data_split"),
            True,
            eps,
            meta.get("objective", "accuracy"),
            meta.get("prior_counts") is not None,
        )
        if not applies:
            return None
        nodes = np.flatnonzero(self.nodes.feature < 0)
        tree = np.searchsorted(self.nodes.roots, nodes, side="right") - 1
        return tree_terms(leaves, tree, eps, int(meta.get("n_batches", 1)))

    def floor_outcome(self) -> FloorOutcome | None:
        """What the model's floor decided, read from the file's released values alone
        (its booked out-of-bag check, or Private-RDT's leaf test of every listed leaf),
        as the fitted estimator's ``floor_outcome``; None where neither ran.
        Post-processing: no ε."""
        meta = self.meta
        check = meta.get("floor_check")
        signal = None
        if (check is None or self._halves) and meta["releases"] == "counts":
            terms = self._tree_terms(self.nodes.leaf_output[self.nodes.feature < 0])
            signal = None if terms is None else terms_signal(terms)
        return outcome_of(
            self.classes_,
            meta.get("prior_counts"),
            check=check,
            disagreements=meta.get("floor_disagreements"),
            trusted=bool(meta.get("floor_trusted", True)),
            signal=signal,
            halves=self._halves,
        )

    @property
    def _halves(self) -> bool:
        """Whether the file's trees come in two halves of the records
        (``data_split="auto"`` from ε = 5)."""
        return self.meta.get("data_split") == "halves"

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        return normalise_votes(self._votes(X))

    @property
    def decision_prior(self) -> np.ndarray:
        """The prior the objective weighs votes by, as the estimator's: the released
        ``prior_counts`` plus one per class, or uniform (public) without them."""
        return count_prior(self.meta.get("prior_counts"), len(self.classes_))

    def updated(self, frame: pd.DataFrame, noise_seed: int | None = None) -> ReleasedForest:
        """Add a new, disjoint batch of labelled records (Jagannathan et al. 2012, §V-B).

        Counts only the new records, adds fresh discrete Laplace noise of the model's
        per-tree budget to every leaf (empty ones too, so what is released never depends
        on which leaves the batch reached) and adds that to the released counts. The new
        batch is read once, so the model's ε is unchanged for a person whose records are
        all in one batch; ``meta["batches"]`` lists each batch's ε (a person in several
        batches is protected at their sum). With disjoint data each new record goes to
        the tree its public record hash names. The noise comes from a fresh secret
        unless ``noise_seed`` makes it replayable (NOT private). An unverified model
        stays unverified (its file is written unsigned and marked).
        """
        meta, trees = update_forest(self, frame, noise_seed)
        updated = ReleasedForest(meta, self.schema, trees)
        # An unverified claim stays unverified: the meta keeps its "claim" mark.
        updated.claim_reason = self.claim_reason
        return updated


# --- export -----------------------------------------------------------------------------------


def _leaf_outputs(model: DPRandomForestClassifier, full, counts_mech: bool) -> np.ndarray:
    """The released output of every listed node: noisy counts or a label at a leaf, 0 at an
    inner node (never written)."""
    leaf = full.feature < 0
    outputs = model.released_outputs(full.key[leaf])
    output = np.zeros(len(full.key), dtype=object)
    if counts_mech:
        output[np.flatnonzero(leaf)] = [[int(v) for v in row] for row in outputs.noisy_counts]
    else:
        output[np.flatnonzero(leaf)] = outputs.labels.tolist()
    return output


def _node_lists(full, output: np.ndarray, n_trees: int) -> list[dict[str, list]]:
    """Each tree's node lists as the file stores them (child indices within the tree)."""
    trees = []
    for t in range(n_trees):
        at = np.flatnonzero(full.tree == t)
        base = at[0]
        trees.append(
            {
                "feature": full.feature[at].tolist(),
                "threshold": [None if np.isnan(v) else float(v) for v in full.threshold[at]],
                "first_child": [-1 if v < 0 else int(v - base) for v in full.first_child[at]],
                "output": [None if f >= 0 else o for f, o in zip(full.feature[at], output[at])],
            }
        )
    return trees


def _export_meta(model: DPRandomForestClassifier, counts_mech: bool) -> dict[str, Any]:
    """What a forest file states besides its trees: parameters, budgets and the ledger."""
    ledger = model.ledger_.to_dict()
    meta = {
        "kind": KINDS[FORMAT],
        "classes": [str(c) for c in model.schema_.classes],
        "feature_order": feature_order(model.schema_),
        "algorithm": "jpw" if isinstance(model, PrivateRDTClassifier) else "fletcher_islam",
        "mechanism": model.mechanism,
        "releases": "counts" if counts_mech else "label",
        "epsilon": float(model.epsilon),
        "n_estimators": int(model.n_estimators_),
        "depth": int(model.depth_),
        "depth_rule": str(model.depth),
        "data_split": records_split(model),
        "schema_inferred": bool(model.schema_.inferred),
        "n_batches": int(model.n_batches_),
        "prior_counts": None
        if model.prior_counts_ is None
        else [int(v) for v in model.prior_counts_],
        "prior_weight": None if model.prior_counts_ is None else model.prior_weight_,
        "tree_epsilon": float(model.tree_epsilon_),
        "prior_epsilon": float(model.prior_epsilon_),
        # The floor's check: its ε, released gain and disagreements, and its outcome
        # (dpviz.models.forest.floor).
        "check_epsilon": float(model.check_epsilon_),
        "floor_check": model.floor_check_,
        "floor_trusted": bool(model.floor_trusted_),
        "depth_count_epsilon": float(model.depth_count_epsilon_),
        "split_points": model.split_points,
        "objective": model.objective,
        "split_epsilon": float(model.split_epsilon_),
        "noise": noise_mode(model),
        "record_hash_seed": int(model._split_seed),
        # Releases of the same leaves before this one (relabel): they add to the ε.
        "earlier_releases": [[m, float(e)] for m, e in model._releases[:-1]],
        "privacy": {
            "epsilon_total": ledger["epsilon_total"],
            "private": ledger["private"],
            "summary": ledger["summary"],
        },
    }
    if getattr(model, "floor_disagreements_", None) is not None:
        # Only with a check: files without one stay as they were.
        meta["floor_disagreements"] = model.floor_disagreements_
    # Each batch of records and the ε it spent (the ledger's note says how they compose).
    meta["batches"] = batch_list(meta, model.ledger_)
    if model.threshold_epsilon_ > 0:
        # The objective's score histogram's ε (accuracy or macro_f1, from ε = 1 up):
        # absent otherwise, so files without one keep their bytes. The file's ledger
        # books it.
        meta["threshold_epsilon"] = float(model.threshold_epsilon_)
    if model.decision_threshold_ is not None:
        # The objective's threshold: macro_f1's (post-processing of the leaves and the
        # prior, or of the booked score histogram) or the accuracy cut (of the booked
        # histogram by class, where it beat the argmax); absent otherwise, so files
        # that predict by the argmax keep their bytes.
        meta["decision_threshold"] = model.decision_threshold_
    return meta
