"""Fall-back scores that answer a class prior's first class and keep the trees' ranking.

Shared by the forest's floor (:mod:`dpviz.models.forest.floor`, a booked out-of-bag
check) and the greedy trees' floor (:mod:`dpviz.models.greedy.floor`, a test on the
released leaf counts): when a model's trees carry no usable signal it answers the prior's
class for every record, with scores (1 − w)·π̂ + w·p̂(x) that still rank the records as
the trees do (every class's one-vs-rest AUC is that of p̂).

Privacy role: post-processing of released values only (a released prior π̂ and the
model's released scores p̂): no ε.
"""

from __future__ import annotations

import numpy as np


def floor_weight(prior) -> float:
    """w = Δ/(2(1 + Δ)): the trees' weight in the fall-back scores, Δ the lead of the
    prior's first class over its second (0 for one class). Public: the released prior."""
    shares = np.sort(np.asarray(prior, dtype=np.float64))[::-1]
    lead = float(shares[0] - shares[1]) if len(shares) > 1 else 0.0
    return lead / (2.0 * (1.0 + lead))


def floor_scores(proba: np.ndarray, prior) -> np.ndarray:
    """The fall-back scores (1 − w)·π̂ + w·p̂ (rows sum to 1 when ``proba``'s and
    ``prior``'s do), w = :func:`floor_weight`: argmax is the prior's first class for
    every row (w/(1 − w) < Δ bounds any difference of p̂), each class's ranking that of
    ``proba``."""
    w = floor_weight(prior)
    return (1.0 - w) * np.asarray(prior, dtype=np.float64)[None, :] + w * proba
