"""The attack's ROC chart: the ε-DP region's edges, the diagonal, both curves, labels."""

import math

import numpy as np

from dpviz.evaluation.attack import AttackResult, evaluate_scores, membership_split
from dpviz.figures.attack import roc_figure


def result(epsilon: float | None, reference: bool = True) -> AttackResult:
    member, measure = membership_split(600, 1)
    rng = np.random.default_rng(0)
    curves = [
        evaluate_scores(
            rng.random(600) + shift * member,
            member,
            measure,
            model=name,
            private=private,
            reads="r",
            confidence=0.95,
        )
        for name, private, shift in (
            ("DP model", True, 0.05),
            ("non-private reference", False, 0.6),
        )
    ]
    bound = None if epsilon is None else math.tanh(epsilon / 2)
    return AttackResult(
        "fletcher_islam",
        1.0,
        {},
        epsilon,
        bound,
        0.95,
        600,
        int(member.sum()),
        1,
        False,
        curves[0],
        curves[1] if reference else None,
    )


def test_region_curves_and_labels():
    fig = roc_figure(result(1.0))
    names = [t.name for t in fig.data]
    assert names[1] == "what ε = 1 DP allows" and names[2] == "guessing (TPR = FPR)"
    assert names[3].startswith("DP model: AUC") and names[4].startswith("non-private reference")
    low, high = fig.data[0], fig.data[1]
    e = math.e
    fpr = np.asarray(high.x)
    # The upper edge is min(e^ε·FPR, 1 − (1 − FPR)/e^ε), the lower its mirror image.
    assert np.allclose(high.y, np.minimum(e * fpr, 1 - (1 - fpr) / e))
    assert np.allclose(low.y, np.maximum(fpr / e, 1 - e * (1 - fpr)))
    assert high.fill == "tonexty"
    assert "NOT private" in fig.layout.title.text
    assert fig.layout.xaxis.title.text.startswith("false positive rate")
    assert fig.layout.yaxis.title.text.startswith("true positive rate")


def test_no_claim_no_region_and_no_reference():
    fig = roc_figure(result(None, reference=False))
    assert [t.name for t in fig.data][0] == "guessing (TPR = FPR)" and len(fig.data) == 2
