"""The routing kernels (dpviz.models.trees.routing and .compact, dpviz.compiled.kernels):
every path gives the same leaves.

The level-by-level router (``route_levels``, the reference and the fallback for very
wide trees), the node-store router in numpy and with the compiled kernels, the full and
the compact leaf matrix, and the votes summed by numpy or by the kernels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier
from dpviz.compiled import kernels as kernels
from dpviz.models.trees import compact, passes, routing, store
from dpviz.models.trees.compact import route_compact
from dpviz.models.trees.routing import route, route_levels, route_matrix
from dpviz.models.trees.space import TreeSpace, node_bytes
from dpviz.privacy.randomness import tree_root_keys
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

COMPILED = kernels.get(wait=True) is not None
SHAPES = [  # continuous, discrete, values per discrete feature, depth, records, trees
    (4, 0, 2, 6, 400, 8),
    (0, 5, 3, 5, 400, 8),
    (3, 4, 4, 7, 600, 8),
    (2, 12, 6, 12, 1500, 4),  # lazily built: records stop at unbuilt nodes and resume
]


@pytest.fixture(params=["numpy", "compiled"])
def path(request, monkeypatch):
    if request.param == "compiled":
        if not COMPILED:
            pytest.skip("numba is not installed")
        monkeypatch.setattr(passes, "COMPILED_FROM_VISITS", 0)
        monkeypatch.setattr(passes, "THREADS_FROM_PAIRS", 1_000)  # threads as well
    else:
        monkeypatch.setattr(kernels, "_kernels", None)
        monkeypatch.setattr(kernels, "_failed", True)
    monkeypatch.setattr(compact, "COMPACT_CHUNK_CELLS", 3_000)  # several chunks
    return request.param


def data(s, r, values, n, seed=0):
    rng = np.random.default_rng(seed)
    cont = np.asfortranarray(rng.random((n, s)))
    disc = np.asfortranarray(rng.integers(0, values, (n, r)).astype(np.int32))
    if r:
        disc[::7, 0] = -1  # unknown values: those pairs abstain where the feature splits
    return cont, disc


def leaf_keys_of(routed):
    leaf = np.asarray(routed.pair_leaf).reshape(-1)
    return np.where(leaf >= 0, routed.leaf_keys[np.maximum(leaf, 0)], 0)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_router_reaches_the_same_leaves(path, shape):
    s, r, values, depth, n, n_trees = shape
    space = TreeSpace(np.zeros(s), np.ones(s), np.full(r, values, dtype=np.int64), depth)
    cont, disc = data(s, r, values, n)
    keys = tree_root_keys(3, n_trees)
    rec, tree = np.tile(np.arange(n), n_trees), np.repeat(np.arange(n_trees), n)
    expected = route_levels(space, keys, cont, disc, rec, tree, keep_nodes=True)
    got = route(space, keys, cont, disc, rec, tree, keep_nodes=True)
    assert np.array_equal(leaf_keys_of(got), leaf_keys_of(expected))
    assert set(got.leaf_keys.tolist()) == set(expected.leaf_keys.tolist())
    # The kept node tables describe the same paths: each leaf's depth and parent chain.
    assert sorted(zip(got.leaf_keys.tolist(), got.leaf_depth.tolist())) == sorted(
        zip(expected.leaf_keys.tolist(), expected.leaf_depth.tolist())
    )
    assert np.array_equal(
        leaf_keys_of(route_matrix(space, keys, np.arange(n_trees), cont, disc)),
        leaf_keys_of(expected),
    )
    # A disjoint fit's pairs: any subset, any order.
    pick = np.random.default_rng(1).permutation(len(rec))[: len(rec) // 3]
    subset = route(space, keys, cont, disc, rec[pick], tree[pick])
    assert np.array_equal(leaf_keys_of(subset), leaf_keys_of(expected)[pick])
    compact = route_compact(space, keys, np.arange(n_trees), cont, disc)
    if compact is not None:  # trees built whole
        abstain = compact.local == compact.abstain
        leaf = compact.offsets[:, None] + np.where(abstain, 0, compact.local)
        keys_c = np.where(abstain, 0, compact.leaf_keys[leaf]).reshape(-1)
        assert np.array_equal(keys_c, leaf_keys_of(expected))


def forest_case(n: int = 3000):
    rng = np.random.default_rng(0)
    features = (
        Feature("a", "continuous", low=0.0, high=1.0),
        Feature("b", "continuous", low=0.0, high=1.0),
        Feature("c", "discrete", values=("x", "y", "z")),
    )
    frame = pd.DataFrame(
        {"a": rng.random(n), "b": rng.random(n), "c": rng.choice(["x", "y", "z"], n)}
    )
    frame["label"] = np.where(frame["a"] + 0.3 * (frame["c"] == "x") > 0.6, "p", "q")
    return frame, Schema("label", ("p", "q"), features)


@pytest.mark.skipif(not COMPILED, reason="numba is not installed")
@pytest.mark.parametrize("mechanism", ["permute_flip", "laplace_counts"])
def test_compiled_votes_equal_numpy_votes(monkeypatch, mechanism):
    frame, schema = forest_case()
    X, y = frame.drop(columns="label"), frame["label"]
    model = DPRandomForestClassifier(
        n_estimators=20, mechanism=mechanism, schema=schema, random_state=0, noise_seed=1
    ).fit(X, y)
    test = encode(forest_case(500)[0].drop(columns="label"), schema, training=False)
    routed = model.route_records(test)
    assert routed.local is not None  # the compact matrix
    monkeypatch.setattr(passes, "COMPILED_FROM_VISITS", 0)
    compiled = model.votes(routed)
    monkeypatch.setattr(kernels, "_kernels", None)
    monkeypatch.setattr(kernels, "_failed", True)
    reference = model.votes(model.route_records(test))
    np.testing.assert_array_equal(compiled, reference)


def test_a_node_store_over_its_byte_budget_hands_over_to_the_level_router(monkeypatch):
    """Wide data: every node keeps its continuous sub-domain, so 200 records through 100
    depth-40 trees of 300 features would build GBs of nodes. Over STORE_BYTES the store
    stops and the level router (bounded passes) takes the pairs, to the same leaves."""
    s, depth, n, n_trees = 300, 40, 60, 10
    space = TreeSpace(np.zeros(s), np.ones(s), np.zeros(0, dtype=np.int64), depth)
    cont, disc = data(s, 0, 2, n)
    keys = tree_root_keys(5, n_trees)
    rec, tree = np.tile(np.arange(n), n_trees), np.repeat(np.arange(n_trees), n)
    expected = route_levels(space, keys, cont, disc, rec, tree)
    small = 64 * node_bytes(space)  # room for 128 nodes before the hand-over
    monkeypatch.setattr(store, "STORE_BYTES", small)
    assert store.build_budget(len(rec), space) == 64
    handed_over = []

    def levels(*args, **kwargs):
        handed_over.append(len(args[4]))
        return route_levels(*args, **kwargs)

    monkeypatch.setattr(routing, "route_levels", levels)
    got = route(space, keys, cont, disc, rec, tree)
    assert handed_over == [len(rec)]
    assert np.array_equal(leaf_keys_of(got), leaf_keys_of(expected))
    # A forest routes lazily built trees in passes whose stores fit the budget.
    per_pass = store.lazy_pair_chunk(space)
    assert per_pass == 1_000 or per_pass * node_bytes(space) * (depth + 1) <= small
    monkeypatch.undo()
    assert store.lazy_pair_chunk(space) * node_bytes(space) * 41 <= store.STORE_BYTES


def test_prediction_in_several_passes_equals_one_pass(monkeypatch):
    """Rows to predict carry no labels; in chunks (many rows through lazily built trees)
    they must get the same votes as in one pass (a regression: chunking read ``y``)."""
    frame, schema = forest_case()
    X, y = frame.drop(columns="label"), frame["label"]
    model = DPRandomForestClassifier(
        n_estimators=20, depth=12, schema=schema, random_state=0, noise_seed=1
    ).fit(X, y)
    test = forest_case(500)[0].drop(columns="label")
    whole = model.predict_proba(test)
    model.__dict__.pop("_route_cache", None)  # lazily built trees: bounded passes
    monkeypatch.setattr("dpviz.models.forest.routing.lazy_pair_chunk", lambda space: 20 * 37)
    assert model._pass_pairs() // model.n_estimators < len(test)
    np.testing.assert_array_equal(model.predict_proba(test), whole)
