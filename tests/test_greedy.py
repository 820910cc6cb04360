"""Friedman–Schuster and DPEA: exact exponential mechanism over subtrees, ledger, API."""

import itertools

import numpy as np
import pytest
from scipy import stats

from dpviz import get_algorithm
from dpviz.audit import privacy_loss
from dpviz.data import encode
from dpviz.evaluation import cross_validate
from dpviz.greedy import DPDecisionTreeClassifier, _Frontier, enumerate_subtrees
from dpviz.mechanisms import log_softmax
from dpviz.synthetic import make_synth

N_VALUES = np.array([2, 2, 3])


def tiny_data(n, seed):
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, w, n) for w in N_VALUES], axis=1)
    return codes, rng.integers(0, 2, n)


def exact_law(codes, y, eps, layers):
    candidates, scores = enumerate_subtrees(codes, y, N_VALUES, 2, layers)
    return candidates, log_softmax(eps / 2 * scores)


@pytest.mark.parametrize("layers", [1, 2])
def test_factorised_sampler_is_the_exhaustive_exponential_mechanism(layers):
    """30,000 seeded draws of the factorised sampler against the brute-force law
    (chi-square, fixed seed; a wrong factorisation shifts mass by far more than 1%)."""
    codes, y = tiny_data(12, seed=1)
    eps = 1.5
    candidates, log_p = exact_law(codes, y, eps, layers)
    tree = DPDecisionTreeClassifier(epsilon=eps, max_depth=2, steps=layers)
    tree.candidates_ = 0
    n_draws = 30_000
    state = _Frontier(
        ids=np.arange(n_draws),
        used=np.zeros((n_draws, 3), dtype=bool),
        record_node=np.repeat(np.arange(n_draws), len(y)),
        codes=np.tile(codes, (n_draws, 1)),
        y=np.tile(y, n_draws),
    )
    root, child = tree._choose(state, N_VALUES, 2, layers, eps, np.random.default_rng(0))
    index = {c: i for i, c in enumerate(candidates)}
    if layers == 1:
        drawn = [index[(int(a),)] for a in root]
    else:
        width = N_VALUES[root]
        drawn = [
            index[(int(a), tuple(int(f) for f in child[i, : width[i]]))]
            for i, a in enumerate(root)
        ]
    observed = np.bincount(drawn, minlength=len(candidates))
    expected = np.exp(log_p) * n_draws
    keep = expected > 5
    assert observed[~keep].sum() <= max(5, 3 * expected[~keep].sum())
    assert (
        stats.chisquare(
            observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()
        ).pvalue
        > 1e-4
    )


@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_split_selection_passes_exact_audit(layers, eps):
    """Every tiny dataset of 4 records and every add-one neighbour: the exact law of the
    chosen subtree moves by at most ε' = ``eps`` (the step's budget)."""
    values = [
        (a, b, c, label)
        for a, b, c in itertools.product(range(2), range(2), range(3))
        for label in range(2)
    ]
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(150):
        rows = np.asarray([values[i] for i in rng.integers(0, len(values), 4)])
        extra = np.asarray([values[rng.integers(0, len(values))]])
        base, bigger = rows, np.vstack([rows, extra])
        _, log_p = exact_law(base[:, :3], base[:, 3], eps, layers)
        _, log_q = exact_law(bigger[:, :3], bigger[:, 3], eps, layers)
        worst = max(worst, float(privacy_loss(log_p[None], log_q[None])[0]))
    assert worst <= eps + 1e-9


@pytest.mark.parametrize(
    ("name", "steps", "levels"), [("friedman_schuster", 1, 5), ("dpea", 2, 3)]
)
def test_ledger_total_is_epsilon(name, steps, levels):
    frame, schema = make_synth("SynthA", 2000, seed=0)
    model = get_algorithm(name).make(0.6, schema=schema, random_state=0)
    model.fit(frame.drop(columns="label"), frame["label"])
    assert model.steps == steps
    assert model.step_epsilon_ == pytest.approx(0.6 / (levels + 1))
    assert len(model.ledger_.groups) == levels + 1
    assert model.ledger_.epsilon_total == pytest.approx(0.6)


def test_dpea_prints_its_candidate_count():
    frame, schema = make_synth("SynthA", 2000, seed=0)
    model = DPDecisionTreeClassifier(epsilon=1, steps=2, max_depth=2, n_bins=4, schema=schema)
    model.fit(frame.drop(columns="label"), frame["label"])
    # One step at the root: 5 root features × 4^4 choices for its 4 children.
    assert model.candidates_ == 5 * 4**4


def test_greedy_trees_learn_and_predict_probabilities():
    frame, schema = make_synth("SynthB", 6000, seed=2)
    encoded = encode(frame, schema)
    for name in ("friedman_schuster", "dpea"):
        result = cross_validate(encoded, schema, epsilon=4.0, algorithm=name, folds=2)
        assert result["accuracy"]["mean"] > 0.65
        assert 0.5 < result["auc"]["mean"] <= 1.0
        assert result["privacy"]["epsilon_total"] == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"epsilon": -1}, "epsilon"),
        ({"steps": 3, "max_depth": 5}, "MCMC"),
        ({"steps": 2, "max_depth": 1}, "exceeds the depth"),
        ({"n_bins": 1}, "n_bins"),
    ],
)
def test_bad_parameters(params, match):
    frame, schema = make_synth("SynthA", 500, seed=0)
    with pytest.raises(ValueError, match=match):
        DPDecisionTreeClassifier(schema=schema, **params).fit(
            frame.drop(columns="label"), frame["label"]
        )


def test_one_class_is_an_error():
    frame, schema = make_synth("SynthA", 500, seed=0)
    with pytest.raises(ValueError, match="one class|2 classes"):
        DPDecisionTreeClassifier().fit(frame.drop(columns="label").to_numpy(), np.zeros(500))
