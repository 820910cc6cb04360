"""The greedy tree's separated parts, one job each: the split of ε, the "auto" depth from
the root histogram, the growth loop, the leaf release and fallback, and routing."""

import itertools
import math

import numpy as np
import pytest

from dpviz.models.greedy.budget import COUNT_SHARE, make_budget, root_count_epsilon
from dpviz.models.greedy.grow import GrownTree, _Frontier, grow_tree
from dpviz.models.greedy.leaves import (
    noisy_leaf_counts,
    own_shares,
    release_leaves,
    smooth_shares,
)
from dpviz.models.greedy.predict import leaf_of, leaf_proba
from dpviz.models.greedy.score import leaf_score, score_sensitivity
from dpviz.models.greedy.select import choose_subtrees, split_scores
from dpviz.models.greedy.stopping import auto_depth, choose_depth
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Feature, Schema


def replayable(seed: int):
    return NoiseSource.replayable(seed).generator()


@pytest.mark.parametrize("root_count", [False, True])
@pytest.mark.parametrize(("depth", "steps"), [(1, 1), (3, 1), (5, 2), (4, 3)])
def test_every_record_spends_exactly_epsilon_wherever_its_leaf_closes(depth, steps, root_count):
    """A record whose leaf closes at step level L spent the root count, L full levels
    (split and node count), maybe this level's node count, and its leaf's ε: ε in all."""
    epsilon = 1.3
    budget = make_budget(epsilon, depth, steps, root_count, node_counts=True)
    n_levels = math.ceil(depth / steps)
    assert budget.root == pytest.approx(0.13 if root_count else 0.0)  # 0.1·ε
    assert root_count_epsilon(0.05) == 0.005 and root_count_epsilon(0.5) == 0.05  # 0.1·ε
    assert budget.count == pytest.approx(COUNT_SHARE * budget.level if n_levels > 1 else 0.0)
    assert budget.root + (n_levels + 1) * budget.level == pytest.approx(epsilon)
    for level in range(n_levels + 1):
        before = sum(budget.split(j) + (budget.count if j else 0.0) for j in range(level))
        closed = budget.root + before + budget.leaf(level, counted=False)
        assert closed == pytest.approx(epsilon)
        if 0 < level < n_levels:  # closed by the stopping rule after its node count
            counted = budget.root + before + budget.count + budget.leaf(level, counted=True)
            assert counted == pytest.approx(epsilon)


def test_without_the_stopping_rule_no_epsilon_goes_to_node_counts():
    budget = make_budget(1.0, 4, 1, root_count=False, node_counts=False)
    assert budget.count == 0.0 and budget.level == pytest.approx(1.0 / 5)


def schema_of(kinds):
    features = [
        Feature(f"f{i}", "continuous", low=0.0, high=1.0)
        if kind == "c"
        else Feature(f"f{i}", "discrete", values=("a", "b"))
        for i, kind in enumerate(kinds)
    ]
    return Schema(label="y", classes=("0", "1"), features=tuple(features))


def test_choose_depth_from_a_declared_count_draws_nothing():
    schema = schema_of("cc")
    n_values = np.array([4, 4])
    y = np.zeros(10, dtype=np.int64)
    depth, n_hat, root = choose_depth(y, n_values, schema, 2.0, 1, 5000, rng=None)
    assert root is None and n_hat == 5000.0
    assert depth == auto_depth(5000, n_values, 2, 2.0, 1, 5) > 0


def test_choose_depth_reads_the_root_histogram_and_caps_discrete_features():
    schema = schema_of("dd")
    n_values = np.array([2, 2])
    y = np.repeat([0, 1], [3000, 1000])
    depth, n_hat, root = choose_depth(y, n_values, schema, 1.0, 1, 0, replayable(1))
    assert root.shape == (2,) and n_hat == float(root.sum())
    assert abs(root - [3000, 1000]).max() < 200  # discrete Laplace at ε_root = 0.1
    # ε_root is gone from the depth rule's budget; two discrete features cap D at 2
    assert depth == auto_depth(n_hat, n_values, 2, 0.9, 1, 2) == 2
    replay = choose_depth(y, n_values, schema, 1.0, 1, 0, replayable(1))
    np.testing.assert_array_equal(replay[2], root)


def test_grow_tree_without_stopping_grows_the_full_tree():
    """Depth 2 on binary features: 7 nodes, 4 leaves at full depth, each with ε' and its
    records' true counts; two one-layer steps choose among 2 + 2·1 candidates."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 2, size=(200, 2))
    y = codes[:, 0] ^ (rng.random(200) < 0.1)
    budget = make_budget(1.0, 2, 1, root_count=False, node_counts=False)
    tree = grow_tree(codes, y, np.array([2, 2]), 2, replayable(3), budget, None, False, 10)
    assert len(tree.feature) == 7 and len(tree.leaf_nodes) == 4
    assert (tree.node_depth[tree.leaf_nodes] == 2).all()
    np.testing.assert_allclose(tree.leaf_epsilon, budget.level)
    assert tree.leaf_counts.sum() == 200
    assert tree.candidates == 2 + 2 * 1 and math.isnan(tree.mcmc_acceptance)
    assert len(tree.counted_nodes) == 0


def small_tree(leaf_counts, leaf_eps) -> GrownTree:
    """A root with two leaves (nodes 1 and 2)."""
    return GrownTree(
        feature=np.array([0, -1, -1]),
        first_child=np.array([1, -1, -1]),
        node_depth=np.array([0, 1, 1]),
        parent=np.array([-1, 0, 0]),
        leaf_nodes=np.array([1, 2]),
        leaf_counts=np.asarray(leaf_counts),
        leaf_epsilon=np.asarray(leaf_eps, dtype=np.float64),
        counted_nodes=np.zeros(0, dtype=np.int64),
        counted_noisy_counts=np.zeros((0, 2), dtype=np.int64),
        counted_epsilon=np.zeros(0),
        candidates=1,
        mcmc_acceptance=float("nan"),
    )


def test_noisy_leaf_counts_are_integers_and_replay():
    counts = np.array([[5, 1], [0, 7], [3, 3]])
    eps = np.array([0.5, 0.5, 2.0])
    noisy = noisy_leaf_counts(counts, eps, replayable(7))
    assert noisy.dtype.kind == "i" and not np.array_equal(noisy, counts)
    np.testing.assert_array_equal(noisy, noisy_leaf_counts(counts, eps, replayable(7)))
    # at ε = 60 the discrete Laplace noise is 0 but with probability ~2e-26
    np.testing.assert_array_equal(
        noisy_leaf_counts(counts, np.full(3, 60.0), replayable(7)), counts
    )


def test_own_shares_clip_and_normalise():
    shares = own_shares(np.array([[3, -1], [-2, -5], [1, 1]]))
    np.testing.assert_allclose(shares, [[1.0, 0.0], [0.5, 0.5], [0.5, 0.5]])


def test_smooth_shares_keep_a_clear_signal_and_drop_pure_noise():
    counts = np.array([[900, 100], [100, 900]])
    clear = smooth_shares(small_tree(counts, [50.0, 50.0]), counts, 2)
    # At ε = 50 (no noise) each leaf keeps its deviation from the root's 0.5 / 0.5 but
    # for sampling's share: δ² = (320,000 − 500 − 500)/1000² by either moment estimate
    # (500 = n̂·(1 − Σp²), and its spread without signal √(2·500²)), so a leaf keeps
    # 319,000/(319,000 + 500) of its deviation of 0.4.
    kept = 0.5 + 0.4 * 319_000 / 319_500
    np.testing.assert_allclose(clear, [[kept, 1 - kept], [1 - kept, kept]], rtol=1e-12)
    # At ε = 1e-3 (noise sd ≈ 1400 per count) the leaves' gap does not stand out of the
    # noise: both predict the root's shares, the normalised sum of their counts.
    noisy = np.array([[900, 100], [300, 700]])
    drowned = smooth_shares(small_tree(noisy, [1e-3, 1e-3]), noisy, 2)
    np.testing.assert_allclose(drowned, [[0.6, 0.4], [0.6, 0.4]])


def test_smooth_shares_drop_a_gap_that_sampling_alone_gives():
    """Without noise (ε = 50) two leaves of 50 records at 27 / 23 and 23 / 27 deviate
    from their parent's 0.5 / 0.5 by less than records drawn at the parent's shares do
    (‖r‖² = 8 against n̂·(1 − Σp²) = 25): both answer the parent's shares, as a signal
    test would; before sampling counted, the leaves kept 0.54 / 0.46 and labelled their
    own majorities, which on data without signal is right less often than the root's."""
    counts = np.array([[27, 23], [23, 27]])
    shares = smooth_shares(small_tree(counts, [50.0, 50.0]), counts, 2)
    np.testing.assert_array_equal(shares, [[0.5, 0.5], [0.5, 0.5]])
    # Without sampling (the objectives other than accuracy) the noise alone is weighed.
    own = smooth_shares(small_tree(counts, [50.0, 50.0]), counts, 2, sampling=False)
    np.testing.assert_allclose(own, [[0.54, 0.46], [0.46, 0.54]], atol=1e-12)


@pytest.mark.parametrize("hierarchical", [True, False])
def test_release_leaves_labels_a_class_of_largest_share(hierarchical):
    tree = small_tree(np.array([[40, 2], [1, 30]]), [5.0, 5.0])
    noisy, proba, labels = release_leaves(tree, hierarchical, replayable(2))
    assert noisy.dtype.kind == "i" and proba.shape == (2, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(labels, [0, 1])


def test_leaf_of_routes_records_and_stops_unknown_values():
    # root splits on feature 0; its child 2 splits on feature 1 into nodes 3 and 4
    feature = np.array([0, -1, 1, -1, -1])
    first_child = np.array([1, -1, 3, -1, -1])
    codes = np.array([[0, 1], [1, 0], [1, 1], [-1, 0], [1, -1]])
    node = leaf_of(codes, feature, first_child, depth=2)
    np.testing.assert_array_equal(node, [1, 3, 4, -1, -1])
    shares = np.array([[1.0, 0.0], [0.25, 0.75], [0.0, 1.0]])
    proba = leaf_proba(node, np.array([1, 3, 4]), shares)
    np.testing.assert_allclose(proba, [[1, 0], [0.25, 0.75], [0, 1], [0.5, 0.5], [0.5, 0.5]])


def test_split_score_sensitivity_is_one_plus_two_beta():
    """Every leaf of up to 14 records over 3 classes and every record added to it: the
    max operator moves by at most 1 and the Gini term Σ τ²/n − n by a value in [−2, 0]
    (Friedman & Schuster's sensitivity 2), so max + β·Gini moves by at most 1 + 2β. The
    bound 2 is nearly reached (a pure leaf gaining a record of another class)."""
    counts = np.array([c for c in itertools.product(range(15), repeat=3) if sum(c) <= 14])
    worst_max, gini_moves = 0.0, []
    for c in range(3):
        bigger = counts.copy()
        bigger[:, c] += 1
        worst_max = max(worst_max, float(np.abs(leaf_score(bigger) - leaf_score(counts)).max()))
        gini = (
            leaf_score(bigger, 1.0)
            - leaf_score(bigger)
            - (leaf_score(counts, 1.0) - leaf_score(counts))
        )
        gini_moves.append(gini)
        for beta in (0.25, 1.0):
            move = np.abs(leaf_score(bigger, beta) - leaf_score(counts, beta))
            assert move.max() <= score_sensitivity(beta) + 1e-9
    gini_moves = np.concatenate(gini_moves)
    assert worst_max == 1.0
    assert gini_moves.min() >= -2.0 - 1e-9 and gini_moves.max() <= 1e-9
    assert gini_moves.min() < -1.85


def test_gini_breaks_the_ties_of_the_max_operator():
    """A full factorial of four ternary features (like UCI car) whose label is 1 only
    when A = 0 and B = 0: no split changes a child's majority, so the max operator
    scores every root split the same and the mechanism draws the root uniformly; the
    default score (β = 1) sees that A and B make pure children and picks one of them
    with the exponential mechanism's probability 2e^(20ε/6) / (2e^(20ε/6) + 2)."""
    grid = np.array(list(itertools.product(range(3), repeat=4)))
    codes = np.tile(grid, (5, 1))  # 405 records
    y = ((codes[:, 0] == 0) & (codes[:, 1] == 0)).astype(np.int64)
    n_values = np.array([3, 3, 3, 3])
    node = np.zeros(len(y), dtype=np.int64)
    flat = split_scores(node, codes, y, 1, n_values, 2)[0]
    assert np.all(flat == flat[0])  # the max operator: a four-way tie
    gini = split_scores(node, codes, y, 1, n_values, 2, beta=1.0)[0] - flat
    np.testing.assert_allclose(gini, [-60.0, -60.0, -80.0, -80.0])
    n_draws = 4000
    frontier = _Frontier(
        ids=np.arange(n_draws),
        used=np.zeros((n_draws, 4), dtype=bool),
        record_node=np.repeat(np.arange(n_draws), len(y)),
        codes=np.tile(codes, (n_draws, 1)),
        y=np.tile(y, n_draws),
    )
    eps = 1.0
    for beta, p_informative in [(0.0, 0.5), (1.0, 1 / (1 + math.exp(-20 * eps / 6)))]:
        root = choose_subtrees(frontier, n_values, 2, 1, eps, 1, replayable(7), beta)[0][:, 0]
        share = float(np.isin(root, [0, 1]).mean())
        # 4 binomial standard deviations of a share of n_draws draws
        tol = 4 * math.sqrt(p_informative * (1 - p_informative) / n_draws)
        assert abs(share - p_informative) <= tol, (beta, share)


def test_leaves_without_signal_get_their_parents_shares_bit_for_bit():
    """Leaves of different sizes drowned in noise (ε = 1e-3) keep none of their
    deviation: they all get the root's shares exactly, not up to rounding — leaves tied
    in all but the last bits were split at random by the macro_f1 threshold (issue 28;
    this test fails on the rule before, which normalised n̂·p_P)."""
    counts = np.array([[448, 52], [127, 14], [559, 3], [910, 140], [1134, 127]])
    tree = GrownTree(
        feature=np.array([0, -1, -1, -1, -1, -1]),
        first_child=np.array([1, -1, -1, -1, -1, -1]),
        node_depth=np.array([0, 1, 1, 1, 1, 1]),
        parent=np.array([-1, 0, 0, 0, 0, 0]),
        leaf_nodes=np.arange(1, 6),
        leaf_counts=counts,
        leaf_epsilon=np.full(5, 1e-3),
        counted_nodes=np.zeros(0, dtype=np.int64),
        counted_noisy_counts=np.zeros((0, 2), dtype=np.int64),
        counted_epsilon=np.zeros(0),
        candidates=1,
        mcmc_acceptance=float("nan"),
    )
    shares = smooth_shares(tree, counts, 2)
    root = counts.sum(axis=0) / counts.sum()
    np.testing.assert_array_equal(shares, np.broadcast_to(root, (5, 2)))
