"""The whole-release audit of a user's configuration on a pair built from their schema:
the pair is public, progress is reported, a stop ends it early, and a halved-noise
mutant is refuted.

Why the assertions are sound: see tests/evaluation/test_release_audit.py. A bound above
the ledger's ε is a refutation at the audit's confidence; the mutant test states its
sample size and expected margin.
"""

import numpy as np
import pytest

from dpviz.evaluation.audit_pair import audit_configuration, schema_pair
from dpviz.privacy.noise import NoiseSource
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "outcome",
    ("low", "high", "mid"),
    (
        Feature("age", "continuous", low=18.0, high=90.0),
        Feature("town", "discrete", values=("north", "south", "east")),
    ),
)
# Every ε on the leaves that x reaches: a declared count (no noisy count for the depth),
# no class prior, split points from the public domain (no split tables).
LEAVES_ONLY = {"declared_n": 40, "prior_share": 0.0, "split_points": "uniform"}


def test_the_pair_comes_from_the_schema_alone():
    schema, d, d_prime, x = schema_pair(SCHEMA)
    assert schema is SCHEMA and len(d) == 40 and len(d_prime) == 41
    assert d_prime.iloc[-1].to_dict() == x.iloc[0].to_dict()
    assert x["outcome"].item() == "high" and x["town"].item() == "north"
    assert set(d["town"]) == {"east"} and set(d["outcome"]) == {"low", "high"}
    assert x["age"].item() == 90.0 and d["age"].max() < 90.0 and d["age"].min() == 18.0


def test_progress_and_stop():
    seen = []
    result = audit_configuration(
        SCHEMA,
        "friedman_schuster",
        epsilon=1.0,
        n_runs=50,
        progress=lambda done, total: seen.append((done, total)),
        cancel=lambda: len(seen) >= 7,
    )
    assert seen == [(i, 50) for i in range(1, 8)]
    assert result.stopped and result.n_runs == 7
    assert all(e.hits_d <= 7 and e.hits_d_prime <= 7 for e in result.events)


def test_real_code_is_consistent_and_params_are_kept():
    result = audit_configuration(
        SCHEMA, "fletcher_islam", epsilon=1.0, params=LEAVES_ONLY, n_runs=100, confidence=0.999
    )
    assert result.params == LEAVES_ONLY and not result.stopped
    assert "'high'" in result.reads and "'yes'" not in result.reads
    assert result.ledger_epsilon == pytest.approx(1.0)
    assert result.consistent is True  # false alarm ≤ 0.1%


def test_halved_noise_is_refuted(monkeypatch):
    """The forest's keyed discrete Laplace leaf noise at 2ε (the ledger books ε = 1).
    x is alone in its leaf (its town is no other record's), so the visible loss doubles
    to 2; with 200 fits per dataset eight runs gave bounds of 1.49–1.63 (standard
    deviation ≈ 0.05), about ten standard deviations above 1."""
    real = NoiseSource.discrete_laplace
    monkeypatch.setattr(
        NoiseSource, "discrete_laplace", lambda self, keys, k, eps: real(self, keys, k, 2 * eps)
    )
    result = audit_configuration(
        SCHEMA, "fletcher_islam", epsilon=1.0, params=LEAVES_ONLY, n_runs=200
    )
    assert result.ledger_epsilon == pytest.approx(1.0)
    assert result.consistent is False and result.lower_bound > 1.0, result


def test_sharpened_and_pair_do_not_mix():
    from dpviz.evaluation.release_audit import audit_release

    with pytest.raises(ValueError, match="custom pair"):
        audit_release("jpw", sharpened=True, pair=schema_pair(SCHEMA), n_runs=1)
    with pytest.raises(ValueError, match="at least 2"):
        schema_pair(SCHEMA, n_background=1)
    assert np.isfinite(schema_pair(SCHEMA)[1]["age"]).all()
