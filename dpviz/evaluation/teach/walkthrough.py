"""One tree growing, step by step: a tiny generated dataset and a walk-through of one
random tree of the forest (structure, records falling into the leaves, released labels,
a held-out record's vote).

The structure and the released labels are what the model publishes (ε-DP for a proven
mechanism with a public schema); the leaf counts, true majorities and flip
probabilities are NOT private diagnostics from the records, marked in each step's
``not_private``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpviz.evaluation.teach.mechanism_playground import mechanism_label
from dpviz.models.forest.estimator import DPRandomForestClassifier, feature_order
from dpviz.models.trees.full import build_full
from dpviz.privacy.mechanisms import gap, get_mechanism
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

# --- a tree grows -------------------------------------------------------------------------


def tiny_demo(n_records: int = 40, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A tiny generated dataset for the tree walk-through: hours studied and slept (each
    0–10, public ranges of a day's hours) and whether an exam was passed.

    Generated, not collected: the schema is public because a generator made the records.
    The rule is "passed" when studied + 0.5·slept > 6.5, with 10% of labels flipped.
    """
    if isinstance(n_records, bool) or not isinstance(n_records, int) or n_records < 4:
        raise ValueError(f"n_records must be a whole number ≥ 4, got {n_records!r}")
    rng = np.random.default_rng(seed)
    studied = np.round(rng.uniform(0, 10, n_records), 1)
    slept = np.round(rng.uniform(3, 10, n_records), 1)
    passed = studied + 0.5 * slept > 6.5
    passed ^= rng.random(n_records) < 0.1
    frame = pd.DataFrame(
        {
            "hours_studied": studied,
            "hours_slept": slept,
            "passed": np.where(passed, "yes", "no"),
        }
    )
    schema = Schema(
        label="passed",
        classes=("no", "yes"),
        features=(
            Feature("hours_studied", "continuous", 0.0, 10.0),
            Feature("hours_slept", "continuous", 0.0, 10.0),
        ),
    )
    return frame, schema


@dataclass(frozen=True)
class WalkStep:
    """One click of the tree walk-through.

    ``table`` is what to show; ``highlight`` the node ids to emphasise; ``not_private``
    lists the table columns that are diagnostics from the raw data (NOT private: for the
    data owner, never released); ``reads_data`` says whether this step touches records.
    """

    number: int
    title: str
    text: str
    table: pd.DataFrame
    highlight: tuple[int, ...] = ()
    not_private: tuple[str, ...] = ()
    reads_data: bool = True


@dataclass(frozen=True)
class TreeWalkthrough:
    """One small random tree, step by step (see :func:`tree_walkthrough`).

    ``nodes`` has one row per node of the full tree: ``node``, ``parent`` (-1 for the
    root), ``depth``, ``edge`` (the condition leading into the node), ``split`` (the
    node's own test, or "leaf"), ``is_leaf``, ``x``, ``y`` (a drawing layout: leaves
    evenly spaced, parents centred over their children, y = −depth), and for leaves
    ``n_records``, one ``count[<class>]`` per class, ``gap_j``, ``released_label``,
    ``true_majority``, ``flip_probability`` (NOT private), plus ``on_test_path``.
    """

    nodes: pd.DataFrame
    steps: tuple[WalkStep, ...]
    classes: tuple[str, ...]
    test_record: dict
    test_leaf: int | None
    prediction: str | None
    vote_fractions: dict[str, float]
    epsilon: float
    mechanism: str
    depth: int
    ledger: str


def _node_table(model: DPRandomForestClassifier, max_nodes: int) -> pd.DataFrame:
    try:
        full = build_full(model.space_, model.root_keys_, max_nodes)
    except ValueError:
        raise ValueError(
            f"this tree has more than {max_nodes} nodes, too many to draw step by step; "
            "lower the depth (or use fewer discrete features)"
        ) from None
    n = len(full.key)
    parent = np.full(n, -1, dtype=np.int64)
    child_index = np.full(n, -1, dtype=np.int64)
    for i in np.flatnonzero(full.n_children > 0):
        kids = np.arange(full.first_child[i], full.first_child[i] + full.n_children[i])
        parent[kids] = i
        child_index[kids] = np.arange(len(kids))
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):  # breadth first: a parent comes before its children
        if parent[i] >= 0:
            depth[i] = depth[parent[i]] + 1
    names = feature_order(model.schema_)
    s = model.space_.n_continuous
    values = [f.values for f in model.schema_.discrete]

    def split_text(f: int, t: float) -> str:
        if f < 0:
            return "leaf"
        return f"{names[f]} < {t:.3g} ?" if f < s else f"{names[f]} = ?"

    def edge_text(i: int) -> str:
        p = parent[i]
        if p < 0:
            return "(root)"
        f, t, c = int(full.feature[p]), float(full.threshold[p]), int(child_index[i])
        if f < s:
            return f"{names[f]} {'≥' if c == 1 else '<'} {t:.3g}"
        return f"{names[f]} = {values[f - s][c]}"

    # Layout: leaves left to right in depth-first order, parents over their children.
    x = np.zeros(n)
    next_leaf = 0
    stack = [0]
    order = []
    while stack:
        i = stack.pop()
        order.append(i)
        if full.n_children[i] == 0:
            x[i] = next_leaf
            next_leaf += 1
        else:
            stack.extend(
                range(full.first_child[i] + full.n_children[i] - 1, full.first_child[i] - 1, -1)
            )
    for i in reversed(order):
        if full.n_children[i] > 0:
            kids = np.arange(full.first_child[i], full.first_child[i] + full.n_children[i])
            x[i] = x[kids].mean()
    return pd.DataFrame(
        {
            "node": np.arange(n),
            "parent": parent,
            "depth": depth,
            "edge": [edge_text(i) for i in range(n)],
            "split": [split_text(int(f), float(t)) for f, t in zip(full.feature, full.threshold)],
            "is_leaf": full.n_children == 0,
            "x": x,
            "y": -depth.astype(np.float64),
            "key": full.key,
        }
    )


def _path_to_root(nodes: pd.DataFrame, leaf: int) -> tuple[int, ...]:
    parent = nodes["parent"].to_numpy()
    path = [leaf]
    while parent[path[-1]] >= 0:
        path.append(int(parent[path[-1]]))
    return tuple(reversed(path))


def tree_walkthrough(
    frame: pd.DataFrame,
    schema: Schema,
    *,
    depth: int = 2,
    epsilon: float = 1.0,
    mechanism: str = "permute_flip",
    random_state: int = 0,
    test_row: int = -1,
    max_nodes: int = 63,
    noise_seed: int | None = None,
) -> TreeWalkthrough:
    """Grow one random tree on ``frame`` in four steps a page can show one click at a time.

    1. The structure is drawn from the public schema and the seed alone.
    2. The training records (all rows but ``test_row``) fall into the leaves.
    3. Each leaf releases a label through ``mechanism`` with budget ``epsilon``.
    4. The held-out ``test_row`` walks down the tree and collects the leaf's vote.

    Uses :class:`dpviz.models.forest.estimator.DPRandomForestClassifier` with ``n_estimators=1``.

    Parameters
    ----------
    frame : DataFrame
        Records with the schema's feature columns and label (see :func:`tiny_demo`).
    schema : Schema
        The public schema.
    depth : int, default=2
        Tree depth (small: the whole tree is listed).
    epsilon : float, default=1.0
    mechanism : str, default="permute_flip"
    random_state : int, default=0
        The public seed of the structure.
    test_row : int, default=-1
        Position of the record held out as the test record.
    max_nodes : int, default=63
        Refuse trees with more nodes than this (too many to draw).
    noise_seed : int or None, default=None
        Replay the leaf noise (NOT private); None draws fresh secret noise.

    Returns
    -------
    TreeWalkthrough

    Notes
    -----
    Privacy: the structure (step 1) and the released labels (step 3) are what the model
    publishes and are ε-DP for a proven mechanism with a public schema. The leaf counts,
    true majorities and flip probabilities (steps 2–3) are diagnostics from the raw
    records: NOT private, marked in each step's ``not_private``. The test record (step 4)
    is a record of the data itself.
    """
    if not isinstance(frame, pd.DataFrame) or len(frame) < 2:
        raise ValueError("the walk-through needs a table of at least 2 records")
    if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or depth < 1:
        raise ValueError(f"depth must be a whole number ≥ 1, got {depth!r}")
    if not -len(frame) <= test_row < len(frame):
        raise ValueError(f"test_row {test_row} is outside the {len(frame)} records")
    position = test_row % len(frame)
    test = frame.iloc[[position]]
    train = frame.drop(index=frame.index[position])
    model = DPRandomForestClassifier(
        epsilon=epsilon,
        n_estimators=1,
        depth=int(depth),
        mechanism=mechanism,
        data_split="disjoint",
        random_state=random_state,
        noise_seed=noise_seed,
        prior_share=0.0,  # one tree's vote, as the paper's forest casts it
        split_points="uniform",  # the paper's thresholds: uniform in the public domain
    )
    model.fit_encoded(encode(train, schema), schema)
    nodes = _node_table(model, max_nodes)
    classes = tuple(str(c) for c in schema.classes)
    k = len(classes)
    leaf_rows = np.flatnonzero(nodes["is_leaf"].to_numpy())
    keys = nodes["key"].to_numpy()[leaf_rows].astype(np.uint64)
    pos = np.minimum(np.searchsorted(model.leaf_keys_, keys), max(len(model.leaf_keys_) - 1, 0))
    trained = (len(model.leaf_keys_) > 0) & (model.leaf_keys_[pos] == keys)
    counts = np.zeros((len(leaf_rows), k), dtype=np.int64)
    counts[trained] = model.leaf_counts_[pos[trained]]
    # Every leaf's released label, empty ones included (the mechanism on all-zero counts),
    # exactly as the model's predictions use them.
    released = model.released_outputs(keys).labels
    mech = get_mechanism(mechanism)
    names = np.asarray(classes, dtype=object)
    leaf_info = pd.DataFrame(
        {
            "node": leaf_rows,
            "n_records": counts.sum(axis=1),
            **{f"count[{c}]": counts[:, i] for i, c in enumerate(classes)},
            "gap_j": gap(counts),
            "released_label": names[released],
            "true_majority": np.where(
                counts.sum(axis=1) > 0, names[np.argmax(counts, axis=1)], "(empty)"
            ),
            # An empty leaf has no majority to flip: left blank rather than 0.
            "flip_probability": np.where(
                counts.sum(axis=1) > 0, mech.flip_probability(counts, model.tree_epsilon_), np.nan
            ),
        }
    )
    nodes = nodes.merge(leaf_info, on="node", how="left")
    # Inner nodes have no counts: nullable integers keep the leaves' counts whole.
    int_cols = ["n_records", *(f"count[{c}]" for c in classes), "gap_j"]
    nodes[int_cols] = nodes[int_cols].astype("Int64")

    # Step 4: the held-out record walks down.
    encoded_test = encode(test, schema, training=False)
    routed = model.route_records(encoded_test)
    test_leaf = None
    if len(routed.pair_leaf):
        leaf_key = routed.leaf_keys[routed.pair_leaf[0]]
        hit = np.flatnonzero(nodes["key"].to_numpy().astype(np.uint64) == leaf_key)
        test_leaf = int(hit[0]) if len(hit) else None
    path = _path_to_root(nodes, test_leaf) if test_leaf is not None else ()
    nodes["on_test_path"] = nodes["node"].isin(path)
    fractions = model.predict_proba(test[schema.feature_names])[0]
    prediction = classes[int(np.argmax(fractions))] if test_leaf is not None else None
    record = {c: _plain(v) for c, v in test.iloc[0].items()}
    nodes = nodes.drop(columns="key")
    steps = _walk_steps(nodes, classes, record, path, prediction, schema, model)
    return TreeWalkthrough(
        nodes=nodes,
        steps=steps,
        classes=classes,
        test_record=record,
        test_leaf=test_leaf,
        prediction=prediction,
        vote_fractions={c: float(v) for c, v in zip(classes, fractions)},
        epsilon=float(epsilon),
        mechanism=mechanism,
        depth=int(model.depth_),
        ledger=model.ledger_.describe(),
    )


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _walk_steps(nodes, classes, record, path, prediction, schema, model) -> tuple[WalkStep, ...]:
    leaves = nodes[nodes["is_leaf"]]
    count_cols = [f"count[{c}]" for c in classes]
    n_leaves, n_empty = len(leaves), int((leaves["n_records"] == 0).sum())
    mech = get_mechanism(model.mechanism)
    structure = WalkStep(
        1,
        "The structure is drawn without looking at the data",
        f"Each inner node picks a feature at random and, for a number, a split point "
        f"uniformly inside that feature's public range. Only the schema (the columns, their "
        f"ranges, the class list) and a random seed are used, never a record, so showing this "
        f"tree reveals nothing about anyone. Depth {model.depth_}: {n_leaves} leaves.",
        nodes[["node", "depth", "edge", "split", "is_leaf"]].reset_index(drop=True),
        reads_data=False,
    )
    fall = WalkStep(
        2,
        "The training records fall into the leaves",
        f"Every training record follows the tests from the root down to one leaf; each leaf "
        f"counts its records per class. {n_empty} of {n_leaves} leaves received no record. "
        "These true counts are NOT private: they never leave the data owner's machine.",
        leaves[["node", "edge", "n_records", *count_cols, "gap_j"]].reset_index(drop=True),
        not_private=("n_records", *count_cols, "gap_j"),
    )
    eps_leaf = model.tree_epsilon_
    release = WalkStep(
        3,
        "Each leaf releases a noisy label",
        f"Each leaf hands its counts to {mechanism_label(model.mechanism)} with ε = "
        f"{eps_leaf:g}, which releases one label: usually the majority, sometimes another "
        "class, at random. The released labels (with the structure) are the whole model; "
        "the true majority and the chance that the noise flipped it are shown only to teach "
        "and are NOT private. Empty leaves release a label drawn uniformly at random."
        + ("" if mech.private else f" {model.mechanism} is NOT differentially private."),
        leaves[
            ["node", "edge", *count_cols, "released_label", "true_majority", "flip_probability"]
        ].reset_index(drop=True),
        not_private=(*count_cols, "true_majority", "flip_probability"),
    )
    if path:
        leaf = nodes.loc[path[-1]]
        route = " → ".join(nodes.loc[list(path[1:]), "edge"]) or "(the root is a leaf)"
        shown = ", ".join(f"{k} = {v}" for k, v in record.items() if k != schema.label)
        label = record.get(schema.label)
        recorded = f" (its recorded label is {label!r})" if label is not None else ""
        text = (
            f"A record the tree never saw ({shown}) "
            f"follows {route} to leaf {int(leaf['node'])}, which votes "
            f"{leaf['released_label']!r}. With one tree that vote is the prediction: "
            f"{prediction!r}{recorded}. A forest asks many trees and takes the majority vote. The "
            "prediction uses only released labels, so it is as private as the model."
        )
    else:
        text = (
            "The test record has a value the schema does not list, so the tree abstains "
            "and there is no vote."
        )
    test_table = nodes.loc[list(path), ["node", "depth", "edge", "split"]].reset_index(drop=True)
    vote = WalkStep(4, "A test record collects votes", text, test_table, highlight=tuple(path))
    return (structure, fall, release, vote)
