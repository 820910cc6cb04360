"""What a user gets without choosing: the one place the app's pages and the CLI read.

The Train, Curves and Negotiate pages and the ``train``, ``evaluate`` and ``sweep``
commands start from these values, and every algorithm's parameters start from its
registry defaults (:data:`dpviz.models.registry.ALGORITHMS`). The privacy audit
(:mod:`dpviz.evaluation.release_audit`) runs the same defaults, so what is audited is
what is released.

Nothing here reads the data. A forest's tree count and depth default to rules that read
a declared record count or the noisy count booked in the ledger (``n_estimators="auto"``,
depth ``records``), never the number of rows in the file: the released model's size
then tells the world only what the ledger accounts for.
"""

from __future__ import annotations

from typing import Any

from dpviz.models.registry import get_algorithm

ALGORITHM = "fletcher_islam"
EPSILON = 1.0
# Public randomness only: folds, tree structure, the record→tree hash. Never the noise.
SEED = 0
# Cross-validation of one configuration (Train page, ``evaluate``): 3 folds keep a click
# quick; a sweep (Curves, Negotiate, ``sweep``) averages over 5.
TRAIN_FOLDS = 3
SWEEP_FOLDS = 5
# The Curves page's ε ladder.
SWEEP_EPSILON_LOW = 0.01
SWEEP_EPSILON_HIGH = 10.0
SWEEP_PER_DECADE = 6


def parameters(algorithm: str = ALGORITHM) -> dict[str, Any]:
    """The parameters ``algorithm`` is released with when the user sets none: its
    registry defaults (for the forest: ``n_estimators="auto"``, depth ``records``)."""
    return get_algorithm(algorithm).defaults()


def forest_parameters() -> dict[str, Any]:
    """The default forest's parameters (:data:`ALGORITHM`'s registry defaults)."""
    return parameters(ALGORITHM)
