"""The settings of a sweep as the Curves page asks for it (:class:`SweepSettings`) and
the defaults it starts from (:mod:`dpviz.evaluation.defaults`): read by the page's logic
(``dpviz.app.curves``) and by the views of a finished sweep (``dpviz.app.sweep_views``).

Privacy role: none; settings are public choices of the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpviz.app.sweep import epsilon_ladder
from dpviz.evaluation import defaults
from dpviz.evaluation.sweep import FLETCHER_ISLAM
from dpviz.models.registry import get_algorithm

# The default forest's mechanism, the paper's (permute_flip) and the withdrawn one.
DEFAULT_MECHANISMS = ("laplace_counts", "permute_flip", "smooth_em")
# The forest alone by default: it sweeps a 19-point ε curve in about one fit. The greedy
# trees and DPBoost read the data to grow, so they are refitted for every ε and fold.
DEFAULT_ALGORITHMS = (defaults.ALGORITHM,)
_FOREST = defaults.forest_parameters()
_FOREST_DEPTH = _FOREST["depth"]


@dataclass(frozen=True)
class SweepSettings:
    """A sweep as the Curves page asks for it."""

    eps_low: float = defaults.SWEEP_EPSILON_LOW
    eps_high: float = defaults.SWEEP_EPSILON_HIGH
    per_decade: int = defaults.SWEEP_PER_DECADE
    mechanisms: tuple[str, ...] = DEFAULT_MECHANISMS
    n_estimators: tuple[int | str, ...] = (_FOREST["n_estimators"],)
    depths: tuple[str | int, ...] = (_FOREST_DEPTH,)
    data_splits: tuple[str, ...] = (_FOREST["data_split"],)
    folds: int = defaults.SWEEP_FOLDS
    seed: int = defaults.SEED
    sklearn_reference: bool = False
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    # None: every model's noise is fresh and secret. A seed replays it (tests, exact
    # reproduction): the sweep's models are then NOT private, and its rows say so.
    noise_seed: int | None = None
    # Parameters over the registry defaults, per algorithm; the forest's trees, depth,
    # mechanism and data split come from the grid above (others, e.g. its split points,
    # from here).
    presets: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Other DP libraries to run on the same folds and ε values (dpviz.app.peers).
    peers: tuple[str, ...] = ()

    @property
    def epsilons(self) -> list[float]:
        return epsilon_ladder(self.eps_low, self.eps_high, self.per_decade)

    @property
    def forest(self) -> bool:
        """Whether Fletcher & Islam's forest (and so the grid of mechanisms, trees, depth
        rules and splits) is in the sweep."""
        return FLETCHER_ISLAM in self.algorithms

    @property
    def others(self) -> list[str]:
        """The algorithms other than the forest, in the order chosen."""
        return [a for a in self.algorithms if a != FLETCHER_ISLAM]

    @property
    def n_configurations(self) -> int:
        forest = (
            len(self.mechanisms)
            * len(self.n_estimators)
            * len(self.depths)
            * len(self.data_splits)
            if self.forest
            else 0
        )
        return len(self.epsilons) * (forest + len(self.others))

    def params(self, algorithm: str) -> dict[str, Any]:
        """The parameters ``algorithm`` runs with in this sweep (over its defaults)."""
        return {**get_algorithm(algorithm).defaults(), **dict(self.presets.get(algorithm, {}))}
