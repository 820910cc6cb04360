"""The membership-inference attack: it has power where a model memorises, stays within
the ε-DP bound on a DP model, and refutes a model whose noise is switched off while it
still claims ε.

Randomness. Every attack below uses fixed public seeds (the member split, the halves,
the tree structure) and a fixed replayable noise seed (the official opt-in, NOT
private), so each test replays the same numbers. The tolerances come from the sample
sizes: 400 records give about 92 held-out members and 92 non-members, so the held-out
advantage's 95% Clopper–Pearson interval is about ±0.15 wide; the DP assertion
(``ci_low ≤ bound``) is the claim's test at that confidence, and the power assertions
leave margins of several standard errors (AUC over 400 records: standard error ≤ 0.03).
"""

import json
import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from dpviz.evaluation.attack import (
    advantage_bound,
    dp_region,
    evaluate_scores,
    membership_attack,
    membership_split,
)
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    tuple(Feature(c, "continuous", low=0.0, high=1.0) for c in ("a", "b", "c")),
)


def noisy_labels(n: int = 400, flip: float = 0.3, seed: int = 5) -> pd.DataFrame:
    """``n`` records whose label follows ``a > 0.5`` except for a share ``flip`` of
    random flips: a model that memorises its members gives itself away on the flips."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (n, 3))
    y = (x[:, 0] > 0.5) ^ (rng.random(n) < flip)
    frame = pd.DataFrame(x, columns=["a", "b", "c"])
    frame["label"] = np.where(y, "yes", "no")
    return frame


RECORDS = encode(noisy_labels(), SCHEMA)
# Deep trees (a Train page setting): one record per leaf, so that the attack has power.
DEEP = {"depth": 10}


def test_bound_and_region_formulas():
    for eps in (0.01, 0.1, 1.0, 3.0):
        e = math.exp(eps)
        assert advantage_bound(eps) == pytest.approx((e - 1) / (e + 1), rel=1e-12)
        fpr = np.linspace(0, 1, 101)
        low, high = dp_region(eps, fpr)
        # The upper edge: TPR ≤ e^ε·FPR and 1 − FPR ≤ e^ε(1 − TPR), tight at one of them.
        assert np.all(high <= e * fpr + 1e-12)
        assert np.all(1 - fpr <= e * (1 - high) + 1e-12)
        # Its largest TPR − FPR is the advantage bound (at FPR = 1/(e^ε + 1)).
        assert np.max(high - fpr) == pytest.approx(advantage_bound(eps), abs=0.01)
        assert np.all(low <= fpr) and np.all(fpr <= high)


def test_evaluate_scores_separating_and_random():
    member, measure = membership_split(2000, 3)
    perfect = evaluate_scores(
        member.astype(float),
        member,
        measure,
        model="m",
        private=False,
        reads="r",
        confidence=0.95,
    )
    assert perfect.auc == 1.0 and perfect.advantage == 1.0
    assert perfect.heldout_advantage == 1.0 and perfect.ci_low > 0.98
    noise = np.random.default_rng(1).random(2000)
    chance = evaluate_scores(
        noise, member, measure, model="m", private=False, reads="r", confidence=0.95
    )
    assert chance.auc == pytest.approx(roc_auc_score(member, noise))
    assert chance.ci_low <= chance.heldout_advantage <= chance.ci_high
    assert chance.ci_low < 0 < chance.ci_high  # a coin has no advantage
    assert len(chance.fpr) <= 400 and chance.fpr[0] == 0 and chance.fpr[-1] == 1


@pytest.mark.parametrize(
    ("algorithm", "params"), [("fletcher_islam", DEEP), ("friedman_schuster", {})]
)
def test_reference_gives_itself_away_and_the_dp_model_stays_within_its_bound(algorithm, params):
    result = membership_attack(
        RECORDS,
        SCHEMA,
        algorithm=algorithm,
        epsilon=0.1,
        params=params,
        random_state=0,
        noise_seed=11,
    )
    # The attack has power: the non-private reference memorises its members.
    assert result.reference.auc > 0.6, result.reference
    assert result.reference.ci_low > result.bound  # it would refute ε = 0.1 there
    # The DP model at ε = 0.1: the held-out advantage within the bound plus its interval.
    assert result.ledger_epsilon == pytest.approx(0.1)
    assert result.bound == pytest.approx(advantage_bound(0.1))
    assert result.within_bound and not result.refuted, result.dp
    assert result.replayable_noise
    json.dumps(result.to_dict())


def test_noise_switched_off_while_claiming_epsilon_is_refuted(monkeypatch):
    """A mutant forest whose leaf noise is a millionth of its claim (the ledger still
    books ε = 0.1): the attack sees the members and refutes the claim."""
    real = NoiseSource.discrete_laplace
    monkeypatch.setattr(
        NoiseSource,
        "discrete_laplace",
        lambda self, keys, k, eps: real(self, keys, k, 1e6 * eps),
    )
    result = membership_attack(
        RECORDS,
        SCHEMA,
        epsilon=0.1,
        params=DEEP,
        random_state=0,
        noise_seed=11,
        reference=False,
    )
    assert result.ledger_epsilon == pytest.approx(0.1)
    assert result.refuted, result.dp
    assert result.reference is None


def test_split_is_public_and_balanced():
    a, b = membership_split(1000, 7), membership_split(1000, 7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert 400 < a[0].sum() < 600 and not np.array_equal(a[0], a[1])


def test_bad_inputs_are_refused():
    small = encode(noisy_labels(20), SCHEMA)
    with pytest.raises(ValueError, match="at least 40"):
        membership_attack(small, SCHEMA)
    with pytest.raises(ValueError, match="no parameter"):
        membership_attack(RECORDS, SCHEMA, params={"colour": 3})
    with pytest.raises(ValueError, match="epsilon"):
        membership_attack(RECORDS, SCHEMA, epsilon=-1)


@pytest.mark.parametrize("algorithm", ["fletcher_islam", "jpw"])
def test_a_noise_seed_replays_both_curves(algorithm):
    """Under a noise seed the whole result replays, the reference's curve included (its
    ε = 10⁶ still draws noise: without the seed the reference moved between runs)."""
    runs = [
        membership_attack(
            RECORDS, SCHEMA, algorithm=algorithm, epsilon=1.0, random_state=0, noise_seed=5
        ).to_dict()
        for _ in range(2)
    ]
    for run in runs:
        run.pop("seconds")  # how long it took, the only field a replay may change
    assert runs[0] == runs[1]


def test_a_forest_in_two_halves_is_read_in_the_trees_of_each_records_half():
    """data_split="auto" at ε = 10: a record's score sums the released counts of its
    class at its leaves in the 10 trees of its hashed half only (the trees that would
    count it), and the attack says so; the reference at ε = 10⁶ grows at most 100 trees."""
    from dpviz import DPRandomForestClassifier
    from dpviz.evaluation.attack import attack_scores
    from dpviz.models.forest.floor import record_halves

    frame = noisy_labels()
    model = DPRandomForestClassifier(
        10.0, data_split="auto", schema=SCHEMA, random_state=0, noise_seed=1
    ).fit(frame[["a", "b", "c"]], frame["label"])
    scores, what = attack_scores(model, RECORDS)
    assert what.endswith("in the trees of its hashed half")
    routed = model.route_records(RECORDS)
    counts = model.released_outputs(routed.leaf_keys).noisy_counts
    half = record_halves(model, RECORDS)
    y = RECORDS.y.astype(np.int64)
    expected = [
        sum(
            counts[routed.leaf_matrix[t, i], y[i]]
            for t in range(model.n_estimators_)
            if t % 2 == half[i]
        )
        for i in range(RECORDS.n_records)
    ]
    np.testing.assert_array_equal(scores, expected)
    result = membership_attack(
        RECORDS, SCHEMA, epsilon=10.0, params={"data_split": "auto"}, random_state=0, noise_seed=3
    )
    assert result.ledger_epsilon == pytest.approx(10.0)
    json.dumps(result.to_dict())
