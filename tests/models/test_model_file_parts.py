"""The parts behind dpviz.models.files.load, each on its own: a forest file's trees as checked node
arrays and their routing, the leaf rows, the class prior, the privacy statement and the
batch update, on hand-built two-tree forests whose every count is known."""

import copy
import json

import numpy as np
import pandas as pd
import pytest

from dpviz.models.files.claims import check_prior, forest_ledger, verified_privacy
from dpviz.models.files.forest_nodes import compile_nodes, leaf_rows
from dpviz.models.files.forest_update import update_forest
from dpviz.models.files.format import (
    FORMAT,
    TREE_FORMAT,
    ReleasedFile,
    check_document,
    document_json,
)
from dpviz.models.files.load import READERS, ReleasedForest, model_from_json
from dpviz.models.forest.estimator import feature_order
from dpviz.tabular.encode import encode
from tests.conftest import MIXED_SCHEMA

# Tree 1 splits size at 5 (leaves 1, 2); tree 2 splits colour (blue, green, red: leaves 1-3).
STUMP = {"feature": [0, -1, -1], "threshold": [5.0, None, None], "first_child": [1, -1, -1]}
COLOUR = {
    "feature": [1, -1, -1, -1],
    "threshold": [None] * 4,
    "first_child": [1, -1, -1, -1],
}
RECORDS = pd.DataFrame(
    {
        "size": [1.0, 7.0, 7.0, 2.0],
        "colour": ["blue", "red", "purple", "green"],
        "shape": ["round"] * 4,
        "label": ["other", "red", "small", "small"],
    }
)


def counts_trees(stump_out, colour_out):
    return [
        {**STUMP, "output": [None, *stump_out]},
        {**COLOUR, "output": [None, *colour_out]},
    ]


def forest_meta(**extra):
    meta = {
        "kind": "forest",
        "classes": list(MIXED_SCHEMA.classes),
        "feature_order": feature_order(MIXED_SCHEMA),
        "algorithm": "fletcher_islam",
        "mechanism": "laplace_counts",
        "releases": "counts",
        "epsilon": 40.0,
        "n_estimators": 2,
        "depth": 2,
        "data_split": "shared",
        "schema_inferred": False,
        "noise": "secret",
    }
    return {**meta, **extra}


def test_compile_nodes_concatenates_the_trees_and_routes_each_record():
    trees = counts_trees([[1, 0, 0], [0, 2, -3]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]])
    nodes = compile_nodes(trees, MIXED_SCHEMA, forest_meta(), k=3)
    assert nodes.roots.tolist() == [0, 3]
    assert nodes.first_child.tolist() == [1, -1, -1, 4, -1, -1, -1]
    assert nodes.n_continuous == 1
    encoded = encode(RECORDS.drop(columns="label"), MIXED_SCHEMA, training=False)
    records, leaves = nodes.leaves(encoded, 0)
    assert dict(zip(records.tolist(), leaves.tolist())) == {0: 1, 1: 2, 2: 2, 3: 1}
    # "purple" is no colour of the schema: that record abstains in the colour tree.
    records, leaves = nodes.leaves(encoded, 3)
    assert dict(zip(records.tolist(), leaves.tolist())) == {0: 4, 1: 6, 3: 5}
    # A leaf's negative noisy count casts no vote.
    np.testing.assert_array_equal(
        nodes.votes(encoded), [[5, 0, 0], [0, 2, 6], [0, 2, 0], [1, 5, 0]]
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t[0].pop("first_child"), "tree 1 of the model is malformed"),
        (lambda t: t[1]["output"].append(None), "tree 2: its node lists have different"),
        (lambda t: t[1].__setitem__("feature", [3, -1, -1, -1]), "feature the schema lacks"),
        (lambda t: t[1].__setitem__("first_child", [2, -1, -1, -1]), "children outside"),
        (lambda t: t[0].__setitem__("threshold", [None] * 3), "continuous split has no"),
        (lambda t: t[0]["output"].__setitem__(1, [1, 2]), "tree 1: a leaf's noisy counts"),
    ],
)
def test_compile_nodes_names_the_tree_and_its_defect(edit, message):
    trees = counts_trees([[1, 0, 0], [0, 2, 0]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]])
    edit(trees)
    with pytest.raises(ValueError, match=message):
        compile_nodes(trees, MIXED_SCHEMA, forest_meta(), k=3)


def test_leaf_rows_vote_one_hot_for_labels_and_abstain_where_the_mechanism_may():
    meta = forest_meta(mechanism="abstain_flip", releases="label")
    rows = leaf_rows([2, -1, 0], meta, k=3, t=0)
    np.testing.assert_array_equal(rows, [[0, 0, 1], [0, 0, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="tree 4: a leaf label is not a class index 0..2"):
        leaf_rows([-1], forest_meta(mechanism="permute_flip", releases="label"), k=3, t=3)
    with pytest.raises(ValueError, match="a leaf label"):
        leaf_rows([True], meta, k=3, t=0)
    with pytest.raises(ValueError, match="not 3 numbers"):
        leaf_rows([(1, 2, 3)], forest_meta(), k=3, t=0)


def test_check_prior_weighs_a_prior_only_when_there_is_one():
    assert check_prior(forest_meta(), 3) == 0.0
    assert check_prior(forest_meta(prior_counts=[1, 2, 3], prior_weight=2), 3) == 2.0
    assert check_prior(forest_meta(prior_counts=[1, 2, 3]), 3) == 1.0
    with pytest.raises(ValueError, match="must be 3 whole numbers"):
        check_prior(forest_meta(prior_counts=[1, 2.0, 3]), 3)
    with pytest.raises(ValueError, match="'prior_weight' must be a number"):
        check_prior(forest_meta(prior_counts=[1, 2, 3], prior_weight=True), 3)


def test_update_adds_each_leafs_new_counts_and_books_one_more_batch():
    trees = counts_trees([[1, 0, 0], [0, 2, 0]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]])
    # ε = 40 per tree: the discrete Laplace noise is 0 but with probability ~e^-40.
    forest = ReleasedForest(forest_meta(tree_epsilon=20.0), MIXED_SCHEMA, trees)
    before = copy.deepcopy((forest.meta, forest.trees))
    batch = RECORDS.assign(colour=["blue", "red", "red", "green"])
    meta, new_trees = update_forest(forest, batch, noise_seed=7)
    assert (forest.meta, forest.trees) == before  # the released model is left as it was
    # shared split: every tree counts every record of the batch once
    assert new_trees[0]["output"] == [None, [2, 0, 1], [0, 3, 1]]
    assert new_trees[1]["output"] == [None, [5, 0, 0], [0, 5, 1], [0, 1, 7]]
    assert meta["n_batches"] == 2
    assert meta["noise"] != "secret"  # a noise seed makes the update replayable
    assert meta["privacy"] == verified_privacy(meta, forest_ledger(meta))
    assert meta["privacy"]["private"] is False


def test_update_refuses_a_model_that_releases_labels():
    trees = [{**STUMP, "output": [None, 0, 1]}, {**COLOUR, "output": [None, 0, 1, 2]}]
    meta = forest_meta(mechanism="permute_flip", releases="label")
    with pytest.raises(ValueError, match="only count-releasing models can be updated"):
        update_forest(ReleasedForest(meta, MIXED_SCHEMA, trees), RECORDS)


def test_an_edited_privacy_claim_is_refused_and_the_true_one_read_back():
    trees = counts_trees([[1, 0, 0], [0, 2, 0]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]])
    meta = forest_meta()
    meta["privacy"] = {"epsilon_total": 40.0, "private": True}
    text = document_json(FORMAT, MIXED_SCHEMA, meta, {"trees": trees})
    assert model_from_json(text).meta["privacy"]["epsilon_total"] == pytest.approx(40.0)
    doc = json.loads(text)
    doc["privacy"]["epsilon_total"] = 4.0
    with pytest.raises(ValueError, match="claims ε = 4.0, but .* give ε = 40"):
        model_from_json(json.dumps(doc))


def test_check_document_names_the_kind_of_file_it_was_given():
    doc = json.loads(document_json(FORMAT, MIXED_SCHEMA, forest_meta(), {"trees": []}))
    assert check_document(doc, FORMAT, ("trees",))[1] == MIXED_SCHEMA
    with pytest.raises(ValueError, match="dpviz forest model .* not a greedy tree"):
        check_document(doc, TREE_FORMAT, ("tree",))
    with pytest.raises(ValueError, match="the model file lacks: releases_nothing"):
        check_document(doc, FORMAT, ("releases_nothing",))


def test_each_released_model_writes_the_format_it_is_read_by():
    for fmt, cls in READERS.items():
        assert issubclass(cls, ReleasedFile) and cls.format == fmt
    trees = counts_trees([[1, 0, 0], [0, 2, 0]], [[4, 0, 0], [0, 5, 0], [0, 0, 6]])
    forest = ReleasedForest(forest_meta(), MIXED_SCHEMA, trees)
    doc = json.loads(forest.to_json())
    assert doc["format"] == FORMAT and doc["trees"] == trees
    # the parameters, and the writer's version, without the container's keys, the trees or
    # the signature (this installation's: the claim is verified)
    assert ReleasedForest.meta_of(doc) == (
        {**forest_meta(), "dpviz_version": doc["dpviz_version"]},
        None,
    )
