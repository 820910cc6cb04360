"""What a prediction optimises: the decision rule applied to a model's released scores.

A model answers ``predict`` from per-class scores ``s(c|x)`` (its ``predict_proba``, or
for DPBoost its scores on the probability scale) and a class prior ``π̂`` it released
(a noisy class histogram, see each estimator's ``decision_prior_``). The rule is

    ŷ(x) = argmax_c  s(c|x) · π̂_c^(−a)

with a public exponent ``a`` per objective (:data:`EXPONENTS`):

- ``accuracy`` (a = 0): the plain argmax, what every model predicted before; the
  default forest from ε = 1 up may instead cut class 1's score at a threshold read
  from a booked histogram of out-of-bag scores (``decision_threshold_``;
  :mod:`dpviz.models.forest.score_histogram`);
- ``balanced_accuracy`` (a = 1): the Bayes rule for balanced accuracy when ``s`` is
  calibrated, argmax p̂(c|x)/π̂_c — every class is weighed as if the classes were
  equally frequent, so a rare class is predicted where its odds beat its base rate; the
  default forest from ε = 1 up may instead cut class 1's score where its booked
  histogram of out-of-bag scores shows a better balanced accuracy;
- ``macro_f1``: on two classes, where the model released per-leaf noisy class counts
  (the forests with count leaves, the greedy trees), a threshold on class 1's score
  that the model computes from its own released leaf counts
  (:mod:`dpviz.models.trees.threshold`, ``decision_threshold_``): the threshold whose rule
  has the largest macro-F1 on the curve those counts describe. Otherwise (more classes,
  label leaves, DPBoost) a tempered balanced rule, a = :data:`MACRO_F1_EXPONENT`:
  macro-F1's best threshold for a rare class lies above its base rate (about half the
  F1 it reaches), so the weights are softened.

Privacy: post-processing of the release only (released scores, the released noisy
prior, released leaf counts, public constants): no record is read, no ε is spent, and a
model's guarantee is unchanged whatever its objective. Where a model released no prior
(``prior_share=0``, DPBoost's paper preset) the prior is public and uniform, and the
prior-weighed objectives then predict as ``accuracy`` does.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.trees.threshold import decide_threshold

ACCURACY = "accuracy"
MACRO_F1 = "macro_f1"
OBJECTIVES = (ACCURACY, "balanced_accuracy", "macro_f1")
# Chosen on the shared UCI datasets only (/work/shared/datasets), never on a test fold:
# 5-fold macro-F1 at ε = 1 of the four forest and greedy-tree algorithms on
# bank_marketing and adult (15,000 rows each), car, wall_robot, magic_gamma, tic_tac_toe
# and votes, averaged: a = 0 0.610, 0.5 0.658, 0.75 0.680, 1 0.675 (DPBoost, whose
# scores are less well calibrated, prefers 1: 0.57 → 0.70 on bank_marketing).
MACRO_F1_EXPONENT = 0.75
EXPONENTS = {ACCURACY: 0.0, "balanced_accuracy": 1.0, MACRO_F1: MACRO_F1_EXPONENT}
HELP = (
    "what predictions optimise: accuracy (argmax), balanced_accuracy (argmax of the "
    "scores over the released noisy class prior) or macro_f1 (two classes: the threshold "
    "that maximises macro-F1 on the curve of the model's released leaf counts; else the "
    f"prior's weight tempered to the power {MACRO_F1_EXPONENT:g}); post-processing, no ε"
)


def check_objective(objective) -> str:
    """``objective`` if it is one of :data:`OBJECTIVES` (ValueError otherwise)."""
    if not isinstance(objective, str) or objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    return objective


def prior_from_counts(counts, n_classes: int) -> np.ndarray:
    """Class shares from released noisy class counts, one added to each (negatives as 0)
    so every share and weight stays finite; uniform (public) when ``counts`` is None."""
    if counts is None:
        return np.full(n_classes, 1.0 / n_classes)
    shares = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None) + 1.0
    return shares / shares.sum()


def class_weights(objective: str, prior) -> np.ndarray:
    """The weight π̂_c^(−a) of each class under ``objective`` (all 1 for accuracy)."""
    prior = np.asarray(prior, dtype=np.float64)
    exponent = EXPONENTS[check_objective(objective)]
    if exponent == 0:
        return np.ones(len(prior))
    return np.clip(prior, 1e-12, None) ** -exponent


def decide(scores, prior, objective: str, threshold: float | None = None) -> np.ndarray:
    """Each record's class index: argmax_c scores[:, c]·π̂_c^(−a) (ties to the lowest
    index, as ``np.argmax``). ``accuracy`` is the plain argmax of ``scores``. With a
    ``threshold`` (two classes, a model's ``decision_threshold_`` for its objective):
    class 1 where scores[:, 1] ≥ threshold
    (:func:`~dpviz.models.trees.threshold.decide_threshold`)."""
    scores = np.asarray(scores, dtype=np.float64)
    check_objective(objective)
    if threshold is not None and scores.shape[1] == 2:
        return decide_threshold(scores, threshold)
    if objective == ACCURACY:
        return np.argmax(scores, axis=1)
    return np.argmax(scores * class_weights(objective, prior), axis=1)


def describe_cut(model) -> str | None:
    """The model's cut on class 1's score (its ``decision_threshold_``: the default
    forest's accuracy cut, or a macro_f1 threshold) in one sentence, or None where
    ``predict`` takes the argmax or weighs by the prior. Public: the threshold is
    post-processing of the release (a model file stores it)."""
    threshold = getattr(model, "decision_threshold_", None)
    classes = getattr(model, "classes_", ())
    if threshold is None or len(classes) != 2:
        return None
    yes, no = (str(c) for c in classes[1::-1])
    if threshold <= 0.0:
        rule = f"answers {yes!r} for every record"
    elif threshold > 1.0:
        rule = f"answers {no!r} for every record"
    else:
        rule = f"answers {yes!r} where its score for {yes!r} is at least {threshold:.3g}"
    if model.objective in (ACCURACY, "balanced_accuracy"):
        plain = "0.5 (the majority vote)" if model.objective == ACCURACY else "its prior's share"
        rule += f" rather than {plain}"
        source = (
            f"the cut of highest {model.objective.replace('_', ' ')} on a noisy histogram "
            "of its out-of-bag scores, booked in its ledger, kept because it beat that rule "
            "by more than the histogram's noise"
        )
    else:
        source = f"the {model.objective} threshold it computed from its released values"
    return f"It {rule}: {source}."
