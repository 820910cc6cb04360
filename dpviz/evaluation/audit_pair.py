"""The whole-release audit of one configuration, on a neighbouring pair built from the
user's public schema.

:func:`dpviz.evaluation.release_audit.audit_release` audits the registry defaults on a
fixed two-feature pair. The Audit page and ``dpviz attack --release-audit`` audit what the
user configured on Train, on a pair of the user's own schema: :func:`schema_pair`
builds it from public knowledge only (the schema's domains, value lists and classes),
never from the records, so nothing here reads the data.

**Why this pair is a worst case for the leaves.** D holds ``n_background`` records that
all take the *last* value of every discrete feature and spread evenly over the lower
four fifths of every continuous domain, their labels alternating between the first two
classes. x takes the *first* value of every discrete feature, the top of every
continuous domain, and the second class. Every tree that splits on a discrete feature
or between x and the background puts x alone in its leaf, whose counts go from
(0, 0) to (0, 1): the one-record change the leaf mechanisms' ε is tightest on. A schema
without discrete features can separate x only by a continuous split above the
background; the audit still bounds the loss of everything it reads (see
:mod:`~dpviz.evaluation.release_audit`), with less power.

Privacy: the pair is public (built from the schema); every fit is the real code with
fresh secret noise; the result is a lower bound on ε between D and D', which can refute
the claimed ε and never prove it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from dpviz.evaluation.release_audit import ReleaseAuditResult, audit_release
from dpviz.models.registry import get_algorithm
from dpviz.privacy.schema import Schema

BACKGROUND_RECORDS = 40
# Fits per dataset when none are asked for: the defaults audit's counts (a few seconds
# to a minute, by algorithm and schema size).
DEFAULT_RUNS = 300


def schema_pair(
    schema: Schema, n_background: int = BACKGROUND_RECORDS
) -> tuple[Schema, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(schema, D, D' = D ∪ {x}, x) built from the public schema alone (see the module
    docstring); x is the last record of D' and of the schema's second class."""
    if n_background < 2:
        raise ValueError(f"the pair needs at least 2 background records, got {n_background}")
    spread = np.linspace(0.0, 0.8, n_background)
    d, x = {}, {}
    for feature in schema.features:
        if feature.kind == "continuous":
            low, high = float(feature.low), float(feature.high)
            d[feature.name] = low + spread * (high - low)
            x[feature.name] = [high]
        else:
            d[feature.name] = [feature.values[-1]] * n_background
            x[feature.name] = [feature.values[0]]
    first, second = schema.classes[0], schema.classes[1]
    d[schema.label] = [first, second] * (n_background // 2) + [first] * (n_background % 2)
    x[schema.label] = [second]
    background, extra = pd.DataFrame(d), pd.DataFrame(x)
    return schema, background, pd.concat([background, extra], ignore_index=True), extra


def audit_configuration(
    schema: Schema,
    algorithm: str,
    *,
    epsilon: float,
    params: dict | None = None,
    n_runs: int = DEFAULT_RUNS,
    confidence: float = 0.95,
    random_state: int = 0,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> ReleaseAuditResult:
    """Empirical lower bound on ε for ``algorithm`` with ``params`` (over its registry
    defaults, as on Train) on :func:`schema_pair` of ``schema``.

    Privacy: reads no records (the pair is public); see
    :func:`~dpviz.evaluation.release_audit.audit_release` for what the bound proves
    (a bound above the ledger's ε refutes it) and cannot (anything else).
    ``progress(done, total)`` after each pair of fits; ``cancel()`` True stops early.
    """
    algo = get_algorithm(algorithm)
    values = {**algo.defaults(), **(params or {})}
    # Only what differs from the defaults is passed: the result lists what was set.
    given = {k: v for k, v in values.items() if algo.defaults().get(k) != v}
    result = audit_release(
        algo.id,
        epsilon=epsilon,
        n_runs=n_runs,
        params=given,
        confidence=confidence,
        random_state=random_state,
        pair=schema_pair(schema),
        progress=progress,
        cancel=cancel,
    )
    # x's class is the schema's second: name it as the user does.
    result.reads = result.reads.replace("'yes'", repr(str(schema.classes[1])))
    return result
