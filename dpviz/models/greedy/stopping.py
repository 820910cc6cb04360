"""When a greedy DP tree stops: the noise-aware stopping rule and the "auto" depth.

Both apply Friedman & Schuster's rule (2010, KDD, §4, their differentially private ID3:
a node becomes a leaf when N_T / (t·|C|) < √2/ε, N_T its noisy record count, t =
max_{A∈A} |A| over the attributes still available, |C| the number of classes and √2/ε
the standard deviation of the Laplace noise of its class counts):

- **Stopping rule** (``stopping="noisy_count"``, :func:`stopping_rule`): at each step
  level below the root a frontier node releases a noisy class histogram (its sum is N̂)
  and becomes a leaf when N̂ / (t·k) < √2/ε', t the largest number of children among the
  features it may still split on and k the number of classes; before a DPEA step of ℓ
  layers t becomes t·b̄^(ℓ−1), b̄ the mean number of children of those features. With
  ``max_depth="auto"`` the root is tested too, on the root histogram; with an explicit
  depth the root always splits (the depth asks for a tree).
- **Depth** (``max_depth="auto"``, :func:`auto_depth`): D is picked from the record
  count — ``declared_n`` when given (public, no ε), else the sum of the root's noisy
  class histogram (:func:`choose_depth`) — capped at 5. An integer max_depth is the
  maximal depth D as before (the stopping rule may stop earlier).
- **The macro_f1 floor** (:func:`macro_f1_depth`, :func:`forced_split`): under
  ``objective="macro_f1"`` on two classes (public) a tree the rule would leave without
  a split gets one level, its root untested: a tree without splits can only answer the
  majority, whose macro-F1 is what the objective asks to beat.

Privacy role: the rule reads only released noisy counts and public numbers
(post-processing); the root histogram :func:`choose_depth` draws is a release of its
own (discrete Laplace at ε_root, sensitivity 1). The tree's shape thus depends on the
data through the exponential mechanism and these noisy counts only: both are part of
the DP release.
"""

from __future__ import annotations

import math

import numpy as np

from dpviz.models.greedy.budget import (
    MAX_AUTO_DEPTH,
    class_epsilon,
    reserved_epsilon,
    root_count_epsilon,
)
from dpviz.models.objective import MACRO_F1
from dpviz.models.trees.draws import Rng
from dpviz.privacy.schema import Schema


def auto_depth(
    n_records: float,
    branching,
    n_classes: int,
    epsilon: float,
    steps: int = 1,
    cap: int = MAX_AUTO_DEPTH,
) -> int:
    """The depth of ``max_depth="auto"``: the largest D ≤ 5 whose leaves would still hold
    more records per class than the noise of their counts, 0 when even D = 1 fails.

    With n̂ the record count (declared by the user, or the root's noisy count), b the
    mean number of children per split (``n_bins`` for a continuous feature, the value
    count for a discrete one) and ε'(D) = ``epsilon`` / (⌈D/d⌉ + 1) the budget of a
    leaf's counts at depth D (``epsilon`` is what is left for the splits and the
    leaves), D must satisfy

        n̂ / (k · b^D) ≥ √2 / ε'(D),

    i.e. an average leaf of a full tree of depth D holds more records per class than
    the standard deviation √2/ε' of its Laplace noise — Friedman & Schuster's stopping
    rule (N_T/(t·|C|) < √2/ε) applied to the whole tree with the mean branching. D is
    capped at ``cap``: 5, Friedman & Schuster's depth (the estimator also caps it at
    the number of features when all are discrete). It reads only public numbers and
    n̂, so it is DP whenever n̂ is: a declared n̂ costs nothing, a noisy one its count's
    ε."""
    b = float(np.mean(branching))
    if b <= 1:
        return 0
    best = 0
    for depth in range(1, cap + 1):
        eps_leaf = epsilon / (math.ceil(depth / steps) + 1)
        if n_records / (n_classes * b**depth) >= math.sqrt(2) / eps_leaf:
            best = depth
    return best


def stopping_rule(
    noisy_counts: np.ndarray, used: np.ndarray, n_values: np.ndarray, layers: int, epsilon: float
) -> np.ndarray:
    """Which nodes Friedman & Schuster's rule makes leaves (True = stop).

    Friedman & Schuster 2010 (KDD, §4: their differentially private ID3) stop at a node when
    N_T / (t·|C|) < √2/ε: N_T its noisy record count, t = max_{A∈A}|A| the largest
    number of values among the attributes still available, |C| the number of classes
    and √2/ε the standard deviation of the Laplace noise on a class count — the children
    would hold fewer records per class than their counts' noise. Here N_T is the sum of
    the node's noisy class histogram (``noisy_counts``, one row per node), ε = ``epsilon``
    is ε', the budget of a leaf's counts, and for a DPEA step of ℓ = ``layers`` > 1
    layers the t children become the t·b̄^(ℓ−1) cells the step creates (b̄ the mean
    number of values of the available features): N_T / (t·b̄^(ℓ−1)·k) < √2/ε'. At
    ℓ = 1 this is their rule exactly. Continuous features count as ``n_bins`` values."""
    widths = np.where(used, 0, n_values[None, :]).astype(np.float64)
    t = widths.max(axis=1)
    mean = widths.sum(axis=1) / np.maximum((~used).sum(axis=1), 1)
    cells = np.maximum(t * mean ** (layers - 1), 1.0)
    k = noisy_counts.shape[1]
    return (noisy_counts.sum(axis=1) / (cells * k) < math.sqrt(2) / epsilon) | (t == 0)


def choose_depth(
    y: np.ndarray,
    n_values: np.ndarray,
    schema: Schema,
    epsilon: float,
    steps: int,
    declared_n: int,
    rng: Rng,
) -> tuple[int, float, np.ndarray | None]:
    """The depth of ``max_depth="auto"``: (D, the record count n̂ it used, the root's noisy
    class histogram or None).

    n̂ is ``declared_n`` when given (public: no ε); else :func:`root_count_epsilon` buys
    the root's noisy class histogram (discrete Laplace; the depth rule's record count,
    the root's stopping test and the class prior of the fallback) and n̂ is its sum.
    :func:`auto_depth` then gets ε less :func:`reserved_epsilon` (ε less the histogram's
    from ε = 0.8 up), capped at the number of features when all are discrete."""
    k = len(schema.classes)
    root_counts = None
    if declared_n:
        n_hat = float(declared_n)
    else:
        root_eps = root_count_epsilon(epsilon)
        root_counts = np.bincount(y, minlength=k) + rng.discrete_laplace(root_eps, k)
        n_hat = float(root_counts.sum())
    rest = depth_rule_epsilon(epsilon, n_hat, counted=root_counts is not None)
    cap = MAX_AUTO_DEPTH
    if not schema.continuous:
        cap = min(cap, len(schema.features))
    return auto_depth(n_hat, n_values, k, rest, int(steps), cap), n_hat, root_counts


def depth_rule_epsilon(epsilon: float, n_hat: float, *, counted: bool) -> float:
    """The ε the ``"auto"`` depth rule sees for n̂ = ``n_hat`` records: all of ε for a
    declared count; with a ``counted`` (noisy) one, ε less the prior's reserve
    (:func:`reserved_epsilon`: more than the histogram's ε when n̂ is small and ε < 0.8)
    and at least less the root histogram's and the root class's ε
    (:func:`class_epsilon`). A tree with a split gets the reserve back beyond that, one
    without spends it on its class. Public: ε and a declared or released count."""
    if not counted:
        return float(epsilon)
    root = root_count_epsilon(epsilon)
    return float(epsilon) - max(reserved_epsilon(epsilon, n_hat), root + class_epsilon(epsilon))


# The least "auto" depth under objective="macro_f1" on two classes (issue 28): a tree
# without a split can only answer one class, the majority, whose macro-F1 is the floor
# the objective asks to beat. Chosen on shared-derived sets (bench/README.md, "Issue 28:
# the greedy trees' macro_f1", h-mf3): depth 1 beat depth 2 at ε = 0.1.
MACRO_F1_DEPTH = 1


def macro_f1_depth(objective: str, n_classes: int) -> int:
    """The least depth of ``max_depth="auto"``: :data:`MACRO_F1_DEPTH` under
    ``objective="macro_f1"`` with two classes, else 0 (the rule as before).

    Where it applies, the "auto" depth is at least 1 however small n̂·ε is, and the
    root's noisy stopping test is not applied (the objective asks for a split that can
    set a minority apart; :func:`~dpviz.models.greedy.grow.grow_tree`'s ``test_root``).
    The budget is the usual one of the depth (:func:`~dpviz.models.greedy.budget.make_budget`),
    so a file's ledger check, which reads the released depth, needs no new rule.
    Public: the objective and the schema's class count decide."""
    if objective != MACRO_F1 or n_classes != 2:
        return 0
    return MACRO_F1_DEPTH


def forced_split(
    floor: int,
    depth: int,
    root_counts: np.ndarray | None,
    n_values: np.ndarray,
    level: float,
    steps: int,
    stopping: str,
) -> bool:
    """Whether :func:`macro_f1_depth`'s ``floor`` gives a tree a split that the "auto"
    rule would not: the rule's ``depth`` is below it, or the root's noisy stopping test
    (on ``root_counts``, the released root histogram, at ``level``, the leaves' ε' of
    the tree of that depth, as :func:`~dpviz.models.greedy.grow.grow_tree` tests it)
    would close the root. Only then is the tree grown differently (its
    root untested) and its leaves ordered (:func:`~dpviz.models.greedy.leaves.order_ties`):
    where the rule already splits, the model is the one of any other objective.
    Public: the objective's floor, released counts and public settings."""
    if floor <= 0:
        return False
    if depth < floor:
        return True
    if root_counts is None or stopping != "noisy_count":
        return False
    layers = min(int(steps), depth)
    used = np.zeros((1, len(n_values)), dtype=bool)
    return bool(stopping_rule(root_counts[None, :], used, n_values, layers, level)[0])
