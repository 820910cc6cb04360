"""The empirical whole-release audit: the real code stays within its ledger, and mutants
with too little noise, reused noise or a shuffle assignment are caught.

Why the assertions are sound. Every audit below bounds P[E | D] and P[E | D'] by exact
Clopper–Pearson intervals, Bonferroni-corrected over all (event, direction) pairs tried,
so with probability ≥ ``confidence`` every interval holds and the reported lower bound
is at most the true privacy loss between D and D'. Hence:

- "real code: bound ≤ ledger ε" can fail for correct code only with probability
  ≤ 1 − confidence = 0.1% per algorithm (Clopper–Pearson is conservative, so less);
- "mutant: bound > ledger ε" is, whenever it passes, a proof at confidence 99.9% that the
  mutant breaks its ledger. It fails only if the audit lacks power; each test states its
  sample size and the margin it expects.

Replayed keys. Run as users run it, every fit draws a fresh OS secret, and then the ten
real-code audits together would fail a correct suite run with probability up to 1%
(5% over five runs). So the tests that audit the real code or a mutant with too little
noise key each fit's NoiseSource by a hash of the test's id and a counter
(:func:`replayed_keys`): the same code path (a private source, a fresh key per fit), but
a key the test can replay, so each verdict is the same on every run. The keys are
independent uniform draws as far as the noise law goes, so the margins argued below hold
for them as for secret ones; the mutants that reuse one fixed key are deterministic anyway.
"""

import dataclasses
import hashlib
import itertools
import json

import numpy as np
import pytest

from dpviz.evaluation.release_audit import (
    AUDIT_SCHEMA,
    DEFAULT_RUNS,
    SHARPENED_PARAMS,
    SHARPENED_RUNS,
    audit_release,
    clopper_pearson,
    neighbouring_datasets,
)
from dpviz.models.forest import assign as forest_assign
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy import mechanisms as mechanisms
from dpviz.privacy.noise import KEY_BYTES, NoiseSource, SecureGenerator
from dpviz.tabular.encode import encode

CONFIDENCE = 0.999  # false alarm ≤ 0.1% per real-code audit


# --- replayed keys ------------------------------------------------------------------------


@pytest.fixture
def replayed_keys(monkeypatch, request):
    """Every "fresh" key of this test is sha256(test id, counter): a new key per fit,
    replayed on every run (see the module docstring). The source stays ``private``, so
    the fit takes the same path as with an OS secret."""
    counter = itertools.count()

    def fresh(cls):
        name = f"{request.node.nodeid}|{next(counter)}".encode()
        return cls(hashlib.sha256(name).digest()[:KEY_BYTES], private=True)

    monkeypatch.setattr(NoiseSource, "fresh", classmethod(fresh))


# --- mutants ------------------------------------------------------------------------------


def less_noise(monkeypatch, algorithm: str, factor: float) -> None:
    """Divide the noise scale of the algorithm's released outputs by ``factor`` in the
    real code (the ledger still books the true ε)."""
    if algorithm == "fletcher_islam":
        # permute_flip's exponential noise of rate ε: release at factor·ε.
        real = mechanisms.MECHANISMS["permute_flip"]
        mutant = dataclasses.replace(
            real, release=lambda counts, eps, noise: real.release(counts, factor * eps, noise)
        )
        monkeypatch.setitem(mechanisms.MECHANISMS, "permute_flip", mutant)
    elif algorithm == "jpw":
        # The forest's keyed discrete Laplace leaf noise.
        real = NoiseSource.discrete_laplace
        monkeypatch.setattr(
            NoiseSource,
            "discrete_laplace",
            lambda self, keys, k, eps: real(self, keys, k, factor * eps),
        )
    elif algorithm in ("friedman_schuster", "dpea"):
        # The greedy trees' discrete Laplace leaf counts (from the secure stream).
        real = SecureGenerator.discrete_laplace
        monkeypatch.setattr(
            SecureGenerator,
            "discrete_laplace",
            lambda self, eps, size: real(self, factor * eps, size),
        )
    else:
        # DPBoost's continuous Laplace leaf values.
        real = SecureGenerator.laplace
        monkeypatch.setattr(
            SecureGenerator,
            "laplace",
            lambda self, loc=0.0, scale=1.0, size=None: real(self, loc, scale / factor, size),
        )


def reused_noise(monkeypatch, seed: int) -> None:
    """Every "fresh" secret is the same replayable key: noise reused across releases."""
    monkeypatch.setattr(
        NoiseSource, "fresh", classmethod(lambda cls: NoiseSource.replayable(seed))
    )


def shuffle_trees(encoded, n_trees, split_seed):
    """The old assignment: a seeded permutation cut into n_trees near-equal parts. Its
    cut points depend on n, so adding one record moves others between trees."""
    n = encoded.n_records
    order = np.random.default_rng(split_seed).permutation(n)
    sizes = [len(part) for part in np.array_split(order, n_trees)]
    tree_of = np.empty(n, dtype=np.int64)
    tree_of[order] = np.repeat(np.arange(n_trees), sizes)
    return tree_of


# --- Clopper–Pearson ----------------------------------------------------------------------


def test_clopper_pearson_closed_forms_and_coverage():
    n, alpha = 50, 0.01
    lower, upper = clopper_pearson([0, 50], n, alpha)
    # No hit: the upper bound solves (1 − p)^n = alpha; all hits: the lower solves p^n = alpha.
    assert upper[0] == pytest.approx(1 - alpha ** (1 / n))
    assert lower[1] == pytest.approx(alpha ** (1 / n))
    assert lower[0] == 0.0 and upper[1] == 1.0
    # Coverage: over 20 000 binomial draws at p = 0.3, each one-sided bound misses at
    # most alpha of the time (exact test, so conservative: expect well under 1%).
    hits = np.random.default_rng(0).binomial(n, 0.3, 20_000)
    lo, up = clopper_pearson(hits, n, alpha)
    assert np.mean(lo > 0.3) <= alpha and np.mean(up < 0.3) <= alpha


# --- the real code ------------------------------------------------------------------------


def test_the_pair_is_what_the_docstring_says():
    d, d_prime, x = neighbouring_datasets(sharpened=True)
    assert len(d_prime) == len(d) + 1 and d_prime.iloc[-1].tolist() == x.iloc[0].tolist()
    assert (d["colour"] == "red").all() and x["colour"].item() == "blue"
    assert encode(d_prime, AUDIT_SCHEMA).n_records == 21
    assert set(SHARPENED_PARAMS) == set(ALGORITHMS) == set(SHARPENED_RUNS) == set(DEFAULT_RUNS)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.usefixtures("replayed_keys")
def test_real_code_stays_within_its_ledger(algorithm):
    """The sharpened check (SHARPENED_RUNS fits per dataset: 1500–3000): the
    real code's lower bound never exceeds the ledger's ε (false alarm ≤ 0.1%), and the
    audit reads a part of the release whose claimed loss is known."""
    result = audit_release(algorithm, confidence=CONFIDENCE, sharpened=True)
    assert result.ledger_epsilon == pytest.approx(1.0)
    assert result.consistent is True, result
    assert 0.0 <= result.lower_bound <= result.ledger_epsilon
    assert result.n_runs == SHARPENED_RUNS[algorithm]
    expected = {"fletcher_islam": 1.0, "jpw": 0.95}.get(algorithm, 0.5)
    assert result.claimed_pair_loss == pytest.approx(expected, abs=1e-5)
    # It sees something: the bound is a fair share of what the pair can show (at these
    # sample sizes the expected bound is 0.6–0.85 of claimed_pair_loss).
    assert result.lower_bound > 0.3 * expected
    json.dumps(result.to_dict())


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.usefixtures("replayed_keys")
def test_the_defaults_audit_runs_what_users_run_and_stays_within_its_ledger(algorithm):
    """By default the audit fits the registry defaults (what a user's fit releases) on
    the pair with a continuous feature: no parameter over them, so the noisy record
    count, the split tables and the prior are released too. Its bound (a third of
    DEFAULT_RUNS, false alarm ≤ 0.1%) stays within the ledger's ε, and what it reads can
    show at most the ledger's ε."""
    d, d_prime, x = neighbouring_datasets(sharpened=False)
    assert "size" in d and len(d_prime) == len(d) + 1
    runs = max(50, DEFAULT_RUNS[algorithm] // 3)
    result = audit_release(algorithm, n_runs=runs, confidence=CONFIDENCE)
    assert result.params == {} and result.sharpened is False
    assert result.ledger_epsilon == pytest.approx(1.0)
    assert result.consistent is True, result
    assert 0.0 < result.claimed_pair_loss <= result.ledger_epsilon + 1e-6
    json.dumps(result.to_dict())


@pytest.mark.usefixtures("replayed_keys")
def test_the_audit_reads_the_halved_trees_of_data_split_auto_at_epsilon_ten():
    """With data_split="auto" the forest's trees come in two halves of the records from
    ε = 5: at ε = 10 the audit fits that forest (20 trees, x in the 10 of its half) and
    its bound stays within the ledger's ε."""
    auto = {"data_split": "auto"}
    result = audit_release(
        "fletcher_islam", epsilon=10.0, n_runs=60, params=auto, confidence=CONFIDENCE
    )
    assert result.params == auto and result.ledger_epsilon == pytest.approx(10.0)
    assert result.consistent is True, result
    assert 0.0 < result.claimed_pair_loss <= result.ledger_epsilon + 1e-6


# --- mutants that break the ledger --------------------------------------------------------

# Noise-scale divisor per algorithm and why (see test_less_noise_breaks_the_ledger), and
# fits per dataset: enough that the expected bound sits ≥ 4 standard deviations above 1.
LESS_NOISE = {"fletcher_islam": 2, "jpw": 2, "friedman_schuster": 4, "dpea": 4, "dpboost": 4}
LESS_NOISE_RUNS = {
    "fletcher_islam": 1500,
    "jpw": 500,
    "friedman_schuster": 500,
    "dpea": 500,
    "dpboost": 2000,
}


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
@pytest.mark.usefixtures("replayed_keys")
def test_less_noise_breaks_the_ledger(monkeypatch, algorithm):
    """Halved noise (fletcher_islam, jpw) or quartered noise (greedy trees, DPBoost) in
    the real code must give a lower bound above the ledger's ε = 1.

    Why the factor differs: the audit reads x's leaf. For fletcher_islam the pair
    (0, 0) → (0, 1) is tight, so halving the noise doubles the visible loss to 2ε; for
    jpw with one tree the leaf carries 0.95ε, halved noise shows 1.9ε. The greedy trees
    and DPBoost spend half their budget on splits that this one-feature schema forces,
    so only ε/2 is visible: halving the noise makes the visible loss exactly ε, which no
    sound bound can exceed (test_halved_noise_shows_in_the_leaf catches it against the
    leaf's own ε/2 instead). Quartering it shows 2ε.

    Sample sizes (LESS_NOISE_RUNS): the best event's true loss is 2ε (1.9ε for jpw).
    Where it is a rare event under D' (label ``no`` has probability e^-2/2 ≈ 0.068 for
    fletcher_islam; DPBoost's value ≤ 0 the same), 1500–2000 fits per dataset put the
    expected bound near 1.6, ≥ 6 standard deviations above 1; where both probabilities
    are moderate (jpw, greedy: 0.13 vs 0.87), 500 fits give ≈ 1.5, 4 standard
    deviations above 1.
    """
    less_noise(monkeypatch, algorithm, LESS_NOISE[algorithm])
    result = audit_release(
        algorithm, n_runs=LESS_NOISE_RUNS[algorithm], confidence=CONFIDENCE, sharpened=True
    )
    assert result.ledger_epsilon == pytest.approx(1.0)
    assert result.consistent is False
    assert result.lower_bound > result.ledger_epsilon, result


@pytest.mark.parametrize("algorithm", ["friedman_schuster", "dpea", "dpboost"])
@pytest.mark.usefixtures("replayed_keys")
def test_halved_noise_shows_in_the_leaf(monkeypatch, algorithm):
    """Halved leaf noise in the greedy trees and DPBoost: the visible loss becomes ε
    (the ledger's total, so not a refutation of it), but it breaks the leaf's own claim
    of ε/2 (``claimed_pair_loss``). Expected bound ≈ 0.74 with 1000 fits per dataset
    for the greedy trees (counts: 0.27 vs 0.73) and with 2000 for DPBoost (value ≤ 0:
    0.5 vs 0.18), ≥ 4 standard deviations above 0.5."""
    real = audit_release(algorithm, n_runs=10, confidence=CONFIDENCE, sharpened=True)
    less_noise(monkeypatch, algorithm, 2)
    runs = 2000 if algorithm == "dpboost" else 1000
    result = audit_release(algorithm, n_runs=runs, confidence=CONFIDENCE, sharpened=True)
    assert result.lower_bound > real.claimed_pair_loss == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize("algorithm", ["jpw", "friedman_schuster", "dpea"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reused_noise_is_caught_with_certainty(monkeypatch, algorithm, seed):
    """A fixed key for every release makes each release a deterministic function of the
    data. These algorithms draw the same noise under D and D' (keyed by leaf, or the
    same stream positions), so x's leaf count moves by exactly one: the parity event
    flips with certainty. 100 fits per dataset: all hits on one side, none on the other,
    gives a bound ≈ 2.3 > 1."""
    reused_noise(monkeypatch, seed)
    result = audit_release(algorithm, n_runs=100, confidence=CONFIDENCE, sharpened=True)
    assert result.lower_bound > result.ledger_epsilon, result
    assert {result.hits_d, result.hits_d_prime} == {0, 100}


def test_reused_noise_in_the_forest_is_caught_when_the_labels_differ(monkeypatch):
    """fletcher_islam releases a label, not a number. With a fixed key its label on
    (0, 0) and on (0, 1) is fixed, and the two differ only when the replayed noise
    falls in the band that the extra count crosses: a share (1 − e^-ε)/2 ≈ 32% of keys
    at ε = 1. For the other keys the deterministic mechanism gives the same output on
    D and D', and no audit of this pair could tell them apart.

    So over keys 0–7: the audit refutes the ledger (bound > 1, 100 fits per dataset)
    exactly for the keys whose labels differ (found here directly from two fits), and
    at least one key does (keys 2 and 4 at the time of writing)."""
    d, d_prime, x = neighbouring_datasets(sharpened=True)
    caught = []
    for seed in range(8):
        reused_noise(monkeypatch, seed)
        fits = [
            ALGORITHMS["fletcher_islam"]
            .make(1.0, random_state=0, schema=AUDIT_SCHEMA, **SHARPENED_PARAMS["fletcher_islam"])
            .fit(frame.drop(columns="label"), frame["label"])
            for frame in (d, d_prime)
        ]
        # Only x's leaf differs between the two fits, so x's vote shares differ exactly
        # when its leaf's label does.
        votes = [f.predict_proba(x.drop(columns="label")).tolist() for f in fits]
        result = audit_release("fletcher_islam", n_runs=100, confidence=CONFIDENCE, sharpened=True)
        assert result.hits_d in (0, 100) and result.hits_d_prime in (0, 100)
        differ = votes[0] != votes[1]
        assert (result.lower_bound > result.ledger_epsilon) == differ, (seed, result)
        caught.append(differ)
    assert any(caught)


def test_reused_noise_in_dpboost_is_caught_for_most_keys(monkeypatch):
    """DPBoost deals records to trees with one uniform per record, so x shifts the
    replayed stream by one word and the leaf noise under D and D' differs: the two
    releases are two fixed points, separated by some event (sign, threshold or step
    parity) for most keys but not all. Over keys 0–7 (100 fits per dataset each) the
    outputs are deterministic and the audit refutes the ledger for at least 6 (7 at the
    time of writing)."""
    caught = 0
    for seed in range(8):
        reused_noise(monkeypatch, seed)
        result = audit_release("dpboost", n_runs=100, confidence=CONFIDENCE, sharpened=True)
        assert all(e.hits_d in (0, 100) and e.hits_d_prime in (0, 100) for e in result.events)
        caught += result.lower_bound > result.ledger_epsilon
    assert caught >= 6


@pytest.mark.usefixtures("replayed_keys")
def test_shuffle_assignment_breaks_the_forest_ledger(monkeypatch):
    """The old record→tree shuffle: with 100 trees and 20 records, adding x re-draws the
    permutation, so most of D's records move to other trees and about 14 leaves change
    their counts (the audit reads every leaf whose true counts differ, from the fit's
    diagnostics under the same assignment). The claimed law then allows a loss of about
    19, far above the ledger's ε = 1; 200 fits per dataset give a bound ≈ 2.9 (all
    fits on one side, none on the other). The real per-record hash changes one leaf."""
    monkeypatch.setattr(forest_assign, "hash_trees", shuffle_trees)
    result = audit_release("fletcher_islam", n_runs=200, confidence=CONFIDENCE, sharpened=True)
    assert result.claimed_pair_loss > 5
    assert result.lower_bound > result.ledger_epsilon, result


# --- parameters, results ------------------------------------------------------------------


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown algorithm"):
        audit_release("nope", sharpened=True)
    with pytest.raises(ValueError, match="n_runs"):
        audit_release("dpboost", n_runs=0, sharpened=True)
    with pytest.raises(ValueError, match="confidence"):
        audit_release("dpboost", n_runs=5, confidence=1.0, sharpened=True)
    with pytest.raises(ValueError, match="epsilon"):
        audit_release("dpboost", epsilon=-1, sharpened=True)
    with pytest.raises(ValueError, match="trees_per_ensemble"):
        audit_release("dpboost", n_runs=5, params={"trees_per_ensemble": 2}, sharpened=True)


def test_no_proven_epsilon_means_no_claim_to_check():
    """smooth_em is NOT DP: the ledger claims no ε, so the audit reports a bound but no
    verdict. (The bound is ≤ ε here: this pair's gap is 0 or 1, where smooth_em's loss
    is still small; it explodes only at larger gaps.)"""
    result = audit_release(
        "fletcher_islam",
        n_runs=50,
        params={"mechanism": "smooth_em"},
        confidence=0.9,
        sharpened=True,
    )
    assert result.ledger_epsilon is None and result.consistent is None
    assert result.params == {**SHARPENED_PARAMS["fletcher_islam"], "mechanism": "smooth_em"}


def test_result_fields_and_json():
    result = audit_release("friedman_schuster", epsilon=2.0, n_runs=30, sharpened=True)
    out = result.to_dict()
    json.dumps(out)
    assert out["epsilon"] == 2.0 and out["ledger_epsilon"] == pytest.approx(2.0)
    assert out["claimed_pair_loss"] == pytest.approx(1.0, abs=1e-5)
    assert out["n_runs"] == 30 and out["confidence"] == 0.95
    assert out["events"] and all(
        0 <= e["hits_d"] <= 30 and 0 <= e["hits_d_prime"] <= 30 for e in out["events"]
    )
    assert "x's leaf" in out["reads"]


# --- long runs ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_long_run_bound_approaches_the_visible_loss(algorithm):
    """20 000 fits per dataset (up to about a minute for jpw): the bound comes within
    0.15 of the claimed loss of what is read (expected gap ≈ 0.05–0.07) and still not
    above the ledger: the audit is tight where the pair is tight."""
    result = audit_release(algorithm, n_runs=20_000, confidence=CONFIDENCE, sharpened=True)
    assert result.claimed_pair_loss - 0.15 < result.lower_bound <= result.ledger_epsilon


@pytest.mark.usefixtures("replayed_keys")
def test_the_defaults_audit_below_epsilon_one_stays_within_its_ledger():
    """Below ε = 1 the default forest is sized for the signal its leaves carry (at least
    3 trees, the depth of n̂·s records, the prior at most ε/4; sizing.signal_records):
    the whole release (noisy count, split tables, prior, leaves) audited at ε = 0.5 on
    the defaults pair stays within the ledger's ε (false alarm ≤ 0.1%), and what it
    reads can show at most that ε."""
    result = audit_release(
        "fletcher_islam",
        epsilon=0.5,
        n_runs=DEFAULT_RUNS["fletcher_islam"] // 3,
        confidence=CONFIDENCE,
    )
    assert result.params == {} and result.ledger_epsilon == pytest.approx(0.5)
    assert result.consistent is True, result
    assert 0.0 < result.claimed_pair_loss <= result.ledger_epsilon + 1e-6
