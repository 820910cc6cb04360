"""The registry of algorithms: one place that the CLI, the sweep engine and the app read.

Adding an algorithm means adding one :class:`Algorithm` entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.forest.estimator import (
    AUTO_TREES,
    DPRandomForestClassifier,
    PrivateRDTClassifier,
    check_tree_count,
)
from dpviz.models.forest.sizing import SPLIT_CHOICES
from dpviz.models.forest.splits import SPLIT_POINTS
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.objective import ACCURACY, OBJECTIVES
from dpviz.models.objective import HELP as OBJECTIVE_HELP
from dpviz.models.trees.depth import DEPTH_RULES, check_rule
from dpviz.privacy.mechanisms import MECHANISMS, get_mechanism


@dataclass(frozen=True)
class Parameter:
    """One user-settable parameter: default and valid values, with a line of help."""

    name: str
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    validate: Callable[[Any], Any] | None = None

    def check(self, value: Any) -> None:
        if self.validate is not None:
            self.validate(value)
        elif self.choices and value not in self.choices:
            raise ValueError(
                f"{self.name} must be one of {', '.join(map(str, self.choices))}, got {value!r}"
            )
        if self.low is not None and isinstance(value, int | float) and value < self.low:
            raise ValueError(f"{self.name} must be at least {self.low:g}, got {value!r}")
        if self.high is not None and isinstance(value, int | float) and value > self.high:
            raise ValueError(f"{self.name} must be at most {self.high:g}, got {value!r}")


@dataclass(frozen=True)
class Algorithm:
    """An algorithm: what it is, what it proves, and how to build its estimator.

    ``privacy`` is "ε-DP", "approximate" (an MCMC stand-in for an exponential
    mechanism) or "not DP" at the default parameters; ``status(params)`` refines it
    for a parameter choice (Fletcher & Islam with ``smooth_em`` is not DP, DPEA with
    d > 2 is approximate) and ``private(params)`` is True only for "ε-DP".
    """

    id: str
    name: str
    description: str
    privacy: str
    parameters: tuple[Parameter, ...]
    build: Callable[..., Any]
    reference: str
    forest_family: bool = False
    privacy_for: Callable[[dict[str, Any]], str] | None = None

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.parameters}

    def make(self, epsilon: float, random_state=None, schema=None, noise_seed=None, **params):
        """The estimator with ``params`` over the defaults (unknown names are errors).

        ``random_state`` seeds public randomness only; ``noise_seed`` makes the noise
        replayable, which voids the privacy guarantee (the ledger says NOT private)."""
        known = {p.name: p for p in self.parameters}
        unknown = set(params) - set(known)
        if unknown:
            raise ValueError(
                f"{self.id} has no parameter {sorted(unknown)[0]!r}; it takes " + ", ".join(known)
            )
        values = {**self.defaults(), **params}
        for name, value in values.items():
            known[name].check(value)
        return self.build(
            epsilon=epsilon,
            random_state=random_state,
            schema=schema,
            noise_seed=noise_seed,
            **values,
        )

    def status(self, params: dict[str, Any] | None = None) -> str:
        """The privacy status ("ε-DP", "approximate" or "not DP") with ``params``."""
        values = {**self.defaults(), **(params or {})}
        if "mechanism" in values and not get_mechanism(values["mechanism"]).private:
            return "not DP"
        return self.privacy_for(values) if self.privacy_for is not None else self.privacy

    def private(self, params: dict[str, Any] | None = None) -> bool:
        """True when the model with ``params`` has a proven ε."""
        return self.status(params) == "ε-DP"


def _dpea_privacy(values: dict[str, Any]) -> str:
    """DPEA is ε-DP for d ≤ 2; for d > 2 its MCMC steps only approximate the EM."""
    return DPDecisionTreeClassifier.privacy_status(values["steps"], values["max_depth"])


def _prior_share(what: str, *, counted: bool) -> Parameter:
    floor = (
        "at least 0.08, or about 150/n with a known or noisy record count n if smaller"
        if counted
        else "at least 0.08"
    )
    # The disjoint forest's floor check is paid from the prior (forest.release).
    check = (
        "; from ε = 1 the floor's out-of-bag check (5% of ε) is paid from it, down to about 150/n"
        if counted
        else ""
    )
    return Parameter(
        "prior_share",
        0.1,
        f"share of ε (at most 0.8·ε; {floor}) for a noisy class prior that noise-only "
        f"votes fall back on{check}; 0 = the paper's {what}",
        low=0.0,
        high=0.9,
    )


def _declared_n(rule: str) -> Parameter:
    return Parameter(
        "declared_n",
        0,
        f"public record count for the {rule} depth rule (0: not declared, 5% of ε buys a "
        "noisy count)",
        low=0,
        high=10**12,
    )


# The greedy trees' shared parameters (Friedman–Schuster and DPEA).
_GREEDY_DEPTH = Parameter(
    "max_depth",
    "auto",
    "maximal tree depth D: auto (from a noisy or declared record count, at most 5) or a "
    "fixed depth",
    low=1,
    high=20,
    choices=("auto",),
    validate=DPDecisionTreeClassifier.check_max_depth,
)
_GREEDY_TAIL = (
    Parameter(
        "declared_n",
        0,
        "public record count for the auto depth (0: not declared; 10% of ε, at least 0.08 "
        "and at most 0.8·ε, buys a noisy count)",
        low=0,
        high=10**12,
    ),
    Parameter(
        "stopping",
        "noisy_count",
        "Friedman–Schuster stopping rule on noisy node counts, or none",
        choices=DPDecisionTreeClassifier.STOPPING_RULES,
    ),
    Parameter(
        "fallback",
        "hierarchical",
        "noise-dominated leaves predict their parent's noisy class shares, or none",
        choices=DPDecisionTreeClassifier.FALLBACKS,
    ),
    Parameter(
        "criterion",
        "max_gini",
        "split score of the exponential mechanism: max operator plus Gini (Gini breaks the "
        "max operator's ties), or the max operator alone (the papers')",
        choices=DPDecisionTreeClassifier.CRITERIA,
    ),
)
_GREEDY_BINS = (
    Parameter("n_bins", 8, "bins per continuous feature", low=2, high=64),
    Parameter(
        "split_points",
        "uniform",
        "where continuous features are cut (uniform: equal widths of the public domain, "
        "the papers'; quantile: from ε = 1, at the quantiles of a noisy histogram of "
        "each, 5% of ε — for skewed features on many records)",
        choices=DPDecisionTreeClassifier.SPLIT_POINTS,
    ),
)
# Every algorithm's: what predict optimises (post-processing of the release, no ε).
_OBJECTIVE = Parameter("objective", ACCURACY, OBJECTIVE_HELP, choices=OBJECTIVES)


ALGORITHMS: dict[str, Algorithm] = {
    a.id: a
    for a in (
        Algorithm(
            id="fletcher_islam",
            name="DP random decision forest (Fletcher & Islam 2017, 2021 fix)",
            description=(
                "Random trees whose split points and split features follow noisy class "
                "tables of each feature (or, as in the paper, are drawn without the data); "
                "each leaf releases its "
                "class counts with discrete Laplace noise (or, with a label mechanism as in "
                "the paper, one noisy majority label). Disjoint data per tree: every tree "
                "spends the full ε."
            ),
            privacy="ε-DP",
            parameters=(
                Parameter(
                    "n_estimators",
                    AUTO_TREES,
                    "number of trees, or auto: 10, 25, 50 or 100, keeping about 150 records "
                    "per tree (from the declared or noisy record count; below ε = 1, of n·s "
                    "records, s = ε rounded down to a power of ten: 3, 5 or 10 trees)",
                    low=1,
                    high=10_000,
                    choices=(AUTO_TREES,),
                    validate=check_tree_count,
                ),
                Parameter(
                    "depth",
                    "records",
                    "depth rule or a fixed depth (records: about one leaf per record of a "
                    "tree, from a declared or noisy count; theorem2: the paper's)",
                    choices=DEPTH_RULES,
                    validate=check_rule,
                ),
                Parameter(
                    "mechanism",
                    "laplace_counts",
                    "leaf mechanism",
                    choices=tuple(MECHANISMS),
                    validate=get_mechanism,
                ),
                Parameter(
                    "data_split",
                    "disjoint",
                    "records per tree (auto: disjoint, from ε = 5 ⌈ε/0.5⌉ trees, at most 100, "
                    "in two halves of the records)",
                    choices=SPLIT_CHOICES,
                ),
                Parameter(
                    "split_points",
                    "quantile",
                    "how nodes split (quantile: thresholds uniform in a noisy histogram's "
                    "distribution and features partly by their noisy relevance to the "
                    "class, ≤ 20% of ε; uniform: in the public domain, the paper's)",
                    choices=SPLIT_POINTS,
                ),
                _prior_share("forest", counted=True),
                _declared_n("records"),
                _OBJECTIVE,
            ),
            build=DPRandomForestClassifier,
            reference="nonprivate_forest",
            forest_family=True,
        ),
        Algorithm(
            id="jpw",
            name="Private-RDT (Jagannathan, Pillaipakkamnatt & Wright 2012)",
            description=(
                "Random trees that all see every record; each leaf releases its class counts "
                "plus Laplace(τ/ε) noise. Supports adding new batches without spending more ε."
            ),
            privacy="ε-DP",
            parameters=(
                Parameter(
                    "n_estimators",
                    AUTO_TREES,
                    "number of trees, or auto: the paper's 10 from ε = 1 up, 3 below "
                    "(every tree reads all records and splits ε with the others)",
                    low=1,
                    high=1_000,
                    choices=(AUTO_TREES,),
                    validate=check_tree_count,
                ),
                Parameter(
                    "depth",
                    "jpw",
                    "depth rule or a fixed depth",
                    choices=DEPTH_RULES,
                    validate=check_rule,
                ),
                _prior_share("Private-RDT", counted=False),
                _declared_n("jpw"),
                _OBJECTIVE,
            ),
            build=PrivateRDTClassifier,
            reference="nonprivate_forest",
            forest_family=True,
        ),
        Algorithm(
            id="friedman_schuster",
            name="Greedy DP decision tree (Friedman & Schuster 2010)",
            description=(
                "One tree grown greedily: each node picks its split by the exponential "
                "mechanism on the max-operator score (plus Gini, which breaks its ties); "
                "leaves release counts with discrete Laplace noise."
            ),
            privacy="ε-DP",
            parameters=(_GREEDY_DEPTH, *_GREEDY_TAIL, *_GREEDY_BINS, _OBJECTIVE),
            build=lambda **kw: DPDecisionTreeClassifier(steps=1, **kw),
            reference="sklearn_random_forest",
        ),
        Algorithm(
            id="dpea",
            name="DPEA: DP tree with multi-layer steps (2017)",
            description=(
                "Like Friedman–Schuster, but each exponential-mechanism step picks a whole "
                "d-layer subtree, so fewer steps share the budget. Exact (ε-DP) for d ≤ 2; "
                "for d > 2 a Metropolis MCMC only approximates the mechanism: no proven ε."
            ),
            privacy="ε-DP",
            parameters=(
                _GREEDY_DEPTH,
                Parameter(
                    "steps",
                    2,
                    "layers chosen per step (d); d > 2 samples by MCMC: approximate, not DP",
                    low=1,
                    high=4,
                ),
                *_GREEDY_BINS,
                Parameter(
                    "mcmc_steps",
                    1000,
                    "Metropolis proposals per subtree choice when d > 2",
                    low=1,
                    high=100_000,
                ),
                *_GREEDY_TAIL,
                _OBJECTIVE,
            ),
            build=DPDecisionTreeClassifier,
            reference="sklearn_random_forest",
            privacy_for=_dpea_privacy,
        ),
        Algorithm(
            id="dpboost",
            name="DPBoost: DP gradient-boosted trees (Li et al. 2020)",
            description=(
                "Boosted regression trees with clipped gradients, geometric leaf clipping "
                "and an ensemble of ensembles, starting from a noisy class prior; for more "
                "than two classes one shared tree, boosted from the prior, holds every "
                "one-vs-rest part (each record's gradients bounded in L1); at large ε and "
                "with enough records it grows more and deeper trees. "
                "preset=paper: Li et al.'s settings (one-vs-rest trees)."
            ),
            privacy="ε-DP",
            parameters=(
                Parameter(
                    "preset",
                    "default",
                    "settings: default (λ = 50, depth 3, η = 0.1, 10 equal trees, clipped "
                    "gradients, ¾ of ε on splits, one-hot candidates, noisy class prior; at "
                    "ε ≥ 5 with a noisy count of ≥ 6,000 records, and every size left at its "
                    "default, it grows to 2 × 10 trees of depth 5, η = 0.3, λ = 20, 32 bins) "
                    "or paper (Li et al.: depth 6, λ = 0.1, η = 0.01, 50 trees, filtering, ½ "
                    "on splits, bin thresholds); parameters left at their default follow it",
                    choices=("default", "paper"),
                ),
                Parameter("n_estimators", 10, "trees per class", low=1, high=5_000),
                Parameter("trees_per_ensemble", 10, "trees per ensemble T_e", low=1, high=5_000),
                Parameter("max_depth", 3, "tree depth", low=1, high=12),
                Parameter("learning_rate", 0.1, "shrinkage η", low=1e-4, high=0.999),
                Parameter(
                    "reg_lambda",
                    50.0,
                    "L2 regularisation λ (> 0: empty leaves need it; the leaf noise scales "
                    "with 1/(1+λ))",
                    low=1e-6,
                    high=1000.0,
                ),
                Parameter(
                    "n_bins", 16, "split candidates per continuous feature", low=2, high=256
                ),
                _OBJECTIVE,
            ),
            build=DPBoostClassifier,
            reference="sklearn_hist_gradient_boosting",
        ),
    )
}


def get_algorithm(name: str) -> Algorithm:
    """Look up an algorithm by id."""
    try:
        return ALGORITHMS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown algorithm {name!r}; choose one of {', '.join(ALGORITHMS)}"
        ) from None
