"""Adding a new batch of records to a released count forest (behind
:mod:`dpviz.models.files.load`).

Jagannathan et al. 2012, §V-B: the new, disjoint batch is counted once, fresh discrete
Laplace noise of the model's per-tree budget goes to every leaf (empty ones too, so what is
released never depends on which leaves the batch reached) and is added to the released
counts; the class prior takes the batch's noisy class totals. The model's ε is unchanged
for a person whose records are in one batch only; its ledger and its file's ``batches``
list one more batch with its ε (a person in several batches: the sum of their ε).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpviz.models.files.claims import batch_list, forest_ledger, privacy_statement
from dpviz.models.files.format import REPLAYABLE, number
from dpviz.models.forest.assign import hash_trees
from dpviz.models.forest.floor import halves_of
from dpviz.privacy.noise import NoiseSource
from dpviz.tabular.encode import encode


def update_forest(
    forest: Any, frame: pd.DataFrame, noise_seed: int | None = None
) -> tuple[dict[str, Any], list[dict[str, list]]]:
    """The meta and trees of ``forest`` with the labelled batch ``frame`` added.

    ``forest`` is the :class:`~dpviz.models.files.forest.ReleasedForest` whose ``updated``
    calls this function (not imported here: that module imports this one).

    The noise comes from a fresh secret unless ``noise_seed`` makes it replayable (NOT
    private). ``ValueError`` for a model that releases labels, not counts.
    """
    meta = forest.meta
    if meta["releases"] != "counts":
        raise ValueError(
            f"only count-releasing models can be updated; this one releases labels "
            f"({meta['mechanism']}): retrain it on the union instead"
        )
    encoded = encode(frame, forest.schema, training=True)
    rng = NoiseSource.for_release(noise_seed).generator()
    k = len(forest.classes_)
    n_trees = len(forest.trees)
    eps = float(meta["epsilon"])
    # Each batch spends what the first one did per tree (the file says so); files
    # from before the class prior and the noisy count spent all of ε on the leaves.
    default_tree = eps / n_trees if meta["data_split"] == "shared" else eps  # files of old
    eps_tree = float(meta.get("tree_epsilon", default_tree))
    prior_eps = float(meta.get("prior_epsilon", 0.0))
    prior = meta.get("prior_counts")
    if prior is not None:
        # The batch's class totals (each record once) join the prior with fresh noise.
        totals = np.bincount(encoded.y, minlength=k)
        prior = [int(v) for v in prior + totals + rng.discrete_laplace(prior_eps, k)]
    seed = int(meta.get("record_hash_seed", 0))
    if meta["data_split"] == "shared":
        tree_of = None
    elif meta["data_split"] == "halves":
        # Each record joins the trees of its half only (t mod 2), as at fit time.
        tree_of = halves_of(encoded, seed)
    else:
        tree_of = hash_trees(encoded, n_trees, seed)
    trees = []
    for t, (root, tree) in enumerate(zip(forest.nodes.roots, forest.trees)):
        records, leaves = forest.nodes.leaves(encoded, root)
        if tree_of is not None:
            keep = tree_of[records] == (t % 2 if meta["data_split"] == "halves" else t)
            records, leaves = records[keep], leaves[keep]
        counts = np.zeros((len(tree["feature"]), k), dtype=np.int64)
        np.add.at(counts, (leaves - root, encoded.y[records]), 1)
        noise = rng.discrete_laplace(eps_tree, counts.size).reshape(counts.shape)
        output = [
            None if f >= 0 else [number(a) + int(b + c) for a, b, c in zip(old, cnt, lap)]
            for f, old, cnt, lap in zip(tree["feature"], tree["output"], counts, noise)
        ]
        trees.append({**tree, "output": output})
    replayable = noise_seed is not None or meta.get("noise") != "secret"
    new_meta = {
        **meta,
        "n_batches": int(meta.get("n_batches", 1)) + 1,
        "prior_counts": prior,
        "noise": "secret" if not replayable else REPLAYABLE,
    }
    ledger = forest_ledger({**new_meta, "n_estimators": n_trees})
    new_meta["privacy"] = privacy_statement(ledger)
    # One entry per batch with its ε; the ledger's note states how batches compose.
    new_meta["batches"] = batch_list(new_meta, ledger)
    return new_meta, trees
