"""The split score of a greedy DP tree: Friedman & Schuster's max operator, plus their Gini.

Friedman & Schuster (2010, KDD, §5) run their exponential-mechanism split choice with any
quality function of bounded sensitivity; they study the max operator (Σ over the children
of the largest class count, sensitivity 1) and the Gini score (−Σ_j |T_j|·(1 − Σ_c
(τ_jc/|T_j|)²), sensitivity 2), among others. The max operator alone is blind wherever a
split changes no child's majority class: all its scores tie, and the mechanism draws the
split uniformly at random. On UCI car, for instance, every one of the six features scores
exactly 1210 (the count of the majority class) at the root, so the root split is a coin
flip among six (measured at ε = 1 with the max operator alone, 30 × 5 folds: the tree is
+6.8 points above the majority rate when its root lands on persons or safety, +0.5
otherwise). The Gini score sees that safety = low and persons = 2 are pure.

``criterion="max_gini"`` (the default) scores a subtree by the sum of both, leaf by leaf:

    s = Σ_leaves [ max_c τ_c + β·(Σ_c τ_c² / n − n) ],  n = Σ_c τ_c,  β = ``GINI_WEIGHT``,

so the max operator still decides wherever it sees a difference, and Gini breaks its ties.
``criterion="max"`` is the paper's max operator alone (β = 0).

**Sensitivity.** Adding or removing one record changes one leaf's counts by one in one
class. The max term moves by at most 1. The Gini term g(τ) = Σ τ²/n − n moves by at most
2 (Friedman & Schuster's bound): adding a record of class c to a leaf of n records with
S = Σ τ² gives g' − g = (n·(2τ_c + 1) − S) / (n·(n + 1)) − 1, and since τ_c² ≤ S ≤ n²
and τ_c ≤ n this lies in [−2, 0] (0 for an empty leaf). So Δs ≤ 1 + 2β, and the
exponential mechanism draws with exp(ε'·s / (2·(1 + 2β))): ε'-DP for each step, whatever
β. A subtree's score is a sum over its leaves, so the factorised sampler (d ≤ 2) and the
Metropolis chain (d > 2) use it unchanged.
"""

from __future__ import annotations

import numpy as np

CRITERIA = ("max_gini", "max")
# β: the weight of the Gini score next to the max operator in "max_gini". At β = 1 the two
# scores are simply added (Δ = 3). Chosen once, not per dataset: on car at ε = 1 (30 fold
# seeds, 5-fold) the mean gap to the majority rate was +2.3 at β = 0 (+2.7 to +3.0 in
# other 40-seed runs), +5.3 at 0.25, +5.7 at 0.5 and +6.3 at 1; the 7 shared datasets'
# floors held at 0.5 and 1 (2 seeds each). The price is paid where the max operator alone
# was sharp: tic_tac_toe at ε = 1 (20 seeds × 5 folds) went from +4.8 to +3.7 points over
# the majority for FS (+5.4 to +4.8 for DPEA), and β = 0.25 or 0.5 did not win it back
# (+4.2, +4.0 over 30 seeds).
GINI_WEIGHT = 1.0


def gini_weight(criterion: str) -> float:
    """β of a criterion: ``GINI_WEIGHT`` for "max_gini", 0 for "max"."""
    return GINI_WEIGHT if criterion == "max_gini" else 0.0


def score_sensitivity(beta: float) -> float:
    """Δ of the score max + β·Gini under add/remove-one neighbours: 1 + 2β."""
    return 1.0 + 2.0 * float(beta)


def leaf_score(counts: np.ndarray, beta: float = 0.0) -> np.ndarray:
    """Per leaf (class counts on the last axis): max_c τ_c + β·(Σ_c τ_c²/n − n); an empty
    leaf scores 0. With β = 0 the integer max operator itself."""
    best = counts.max(axis=-1)
    if not beta:
        return best
    n = counts.sum(axis=-1).astype(np.float64)
    squares = (counts.astype(np.float64) ** 2).sum(axis=-1)
    gini = np.divide(squares, n, out=np.zeros_like(n), where=n > 0) - n
    return best + beta * gini
