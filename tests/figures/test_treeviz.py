"""dpviz.figures.tree_layout: node tables of one tree, released (public) and diagnostic
(NOT private)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz.evaluation.demos import load_demo
from dpviz.figures import tree_layout as treeviz
from dpviz.models.files.load import ReleasedForest
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import encode


def fit(frame, schema, **params) -> DPRandomForestClassifier:
    settings = {"epsilon": 1.0, "n_estimators": 8, "random_state": 3, **params}
    return DPRandomForestClassifier(**settings).fit_encoded(encode(frame, schema), schema)


@pytest.fixture(scope="module")
def demo():
    return load_demo("demo_csv")


@pytest.fixture(scope="module")
def shallow(demo):
    return fit(*demo, mechanism="permute_flip")  # depth 5: 32 leaves per tree, labels


@pytest.fixture(scope="module")
def deep(demo):
    return fit(*demo, depth=9)


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(1)
    n = 600
    frame = pd.DataFrame(
        {
            "size": rng.uniform(0, 10, n).round(3).astype(str),
            "colour": rng.choice(["red", "green", "blue"], n),
            "shape": rng.choice(["o", "x", "v", "s"], n),
            "label": rng.choice(["a", "b", "c"], n),
        }
    )
    schema = Schema.from_dict(
        {
            "label": "label",
            "classes": ["a", "b", "c"],
            "features": [
                {"name": "size", "type": "continuous", "min": 0, "max": 10},
                {"name": "colour", "type": "discrete", "values": ["red", "green", "blue"]},
                {"name": "shape", "type": "discrete", "values": ["o", "x", "v", "s"]},
            ],
        }
    )
    return fit(frame, schema, depth="full", n_estimators=4), frame, schema


def test_released_structure_is_exactly_the_exported_tree(shallow):
    released = ReleasedForest.from_estimator(shallow)
    classes = [str(c) for c in shallow.schema_.classes]
    for tree in (0, 5):
        nodes = treeviz.structure_nodes(shallow, tree)
        exported = released.trees[tree]
        assert len(nodes) == len(exported["feature"]) == 63
        leaf = nodes["is_leaf"].to_numpy()
        assert np.array_equal(leaf, np.asarray(exported["feature"]) < 0)
        out = [classes[o] for o, f in zip(exported["output"], exported["feature"]) if f < 0]
        assert list(nodes.loc[leaf, "released_label"]) == out
        names = released.meta["feature_order"]
        assert list(nodes.loc[~leaf, "split"]) == [names[f] for f in exported["feature"] if f >= 0]
        assert not nodes["hidden_children"].any() and nodes["depth"].max() == 5
    assert treeviz.is_shallow(shallow, 0)


def test_released_structure_does_not_depend_on_the_data(demo):
    frame, schema = demo
    # Uniform split points (quantile ones are drawn in a noisy histogram of the data).
    a = treeviz.structure_nodes(fit(frame.iloc[:1000], schema, split_points="uniform"), 2)
    b = treeviz.structure_nodes(fit(frame.iloc[1000:], schema, split_points="uniform"), 2)
    for column in ("key", "parent", "depth", "edge", "split", "is_leaf", "n_children"):
        assert a[column].tolist() == b[column].tolist(), column
    assert (a["released_label"] != b["released_label"]).any()  # only the outputs differ


def test_structure_stops_at_the_display_depth_or_the_node_budget(deep):
    nodes = treeviz.structure_nodes(deep, 1, max_depth=3)
    assert nodes["depth"].max() == 3 and len(nodes) == 15
    at_limit = nodes["depth"] == 3
    assert nodes.loc[at_limit, "hidden_children"].all() and not nodes["is_leaf"].any()
    assert (nodes.loc[at_limit, "split"] != "").all()
    capped = treeviz.structure_nodes(deep, 1, max_nodes=100)
    assert len(capped) <= 100 and capped["hidden_children"].any()
    assert not treeviz.is_shallow(deep, 1)
    with pytest.raises(ValueError, match="between 1 and 8"):
        treeviz.structure_nodes(deep, 8)


def test_with_counts_matches_the_leaf_table(shallow):
    table = shallow.leaf_table(path_rules=False)
    nodes = treeviz.with_counts(shallow, treeviz.structure_nodes(shallow, 4))
    own = table[table["tree"] == 5]
    leaves = nodes[nodes["is_leaf"] & ~nodes["empty"]]
    assert len(leaves) == len(own)
    assert nodes.loc[0, "records"] == own["n_records"].sum()
    assert sorted(leaves["gap_j"].astype(int)) == sorted(own["gap_j"])
    assert leaves["flipped"].sum() == own["flipped"].sum()
    assert np.isclose(leaves["flip_probability"].sum(), own["flip_probability"].sum())
    empty = nodes[nodes["is_leaf"] & nodes["empty"]]
    assert empty["gap_j"].isna().all() and not empty["flipped"].any()
    # every inner node holds the sum of its children
    children = nodes[nodes["parent"] >= 0].groupby("parent")["records"].sum()
    assert (nodes.loc[children.index, "records"] == children).all()


@pytest.mark.parametrize("name", ["shallow", "deep"])
def test_visited_nodes_are_the_non_empty_part_with_counts(name, request):
    model = request.getfixturevalue(name)
    table = model.leaf_table(path_rules=False)
    for tree in (0, 3):
        nodes = treeviz.visited_nodes(model, tree)
        own = table[table["tree"] == tree + 1]
        leaves = nodes[nodes["is_leaf"]]
        assert set(leaves["key"].tolist()) == set(model.leaf_keys_[model.leaf_tree_ == tree])
        assert not nodes["empty"].any()
        assert nodes.loc[0, "records"] == own["n_records"].sum()
        assert nodes.loc[0, "leaves_below"] == len(own)
        seen = nodes[nodes["parent"] >= 0].groupby("parent").size()
        inner = nodes[~nodes["is_leaf"]]
        assert (inner["n_children"] == inner["empty_children"] + seen[inner["node"]]).all()
        assert (nodes["parent"] < nodes["node"]).all()  # parents come first
        assert leaves["flipped"].sum() == own["flipped"].sum()


def test_visited_nodes_with_discrete_features(mixed):
    model, _, _ = mixed
    nodes = treeviz.visited_nodes(model, 0)
    assert (nodes["edge"].str.contains(" = ")).any()
    discrete = nodes[nodes["split"].isin(["colour", "shape"])]
    assert set(discrete["n_children"]) <= {3, 4} and len(discrete)
    full = treeviz.with_counts(model, treeviz.structure_nodes(model, 0))
    assert full.loc[0, "records"] == nodes.loc[0, "records"]
    assert (full["is_leaf"] & ~full["empty"]).sum() == nodes["is_leaf"].sum()


def test_cut_depth_and_fit_depth(deep):
    nodes = treeviz.visited_nodes(deep, 2)
    cut = treeviz.cut_depth(nodes, 4)
    assert cut["depth"].max() == 4
    assert cut.loc[cut["depth"] == 4, "hidden_children"].all()
    assert not cut.loc[cut["depth"] < 4, "hidden_children"].any()
    assert treeviz.fit_depth(nodes, 9) == 9
    per_depth = nodes.groupby("depth").size().cumsum()
    budget = int(per_depth.loc[5])
    assert treeviz.fit_depth(nodes, 9, max_nodes=budget) == 5
    assert treeviz.fit_depth(nodes, 9, max_nodes=0) == 0


def test_forest_overview_sums_to_the_forest_diagnostics(shallow, mixed):
    table = shallow.leaf_table(path_rules=False)
    overview = treeviz.forest_overview(shallow, table)
    assert list(overview["tree"]) == list(range(1, 9)) and "leaves exact" not in overview
    assert overview["non-empty leaves"].sum() == len(table)
    assert overview["records"].sum() == table["n_records"].sum() == 2000
    assert overview["flipped leaves"].sum() == table["flipped"].sum()
    assert (overview["leaves"] == 32).all()
    d = shallow.diagnostics_
    empty = 100 * (1 - overview["non-empty leaves"].sum() / overview["leaves"].sum())
    assert np.isclose(empty, d["empty_leaf_pct"])
    model = mixed[0]
    mixed_overview = treeviz.forest_overview(model, model.leaf_table(path_rules=False))
    assert len(mixed_overview) == 4 and (mixed_overview["leaves"] > 0).all()
