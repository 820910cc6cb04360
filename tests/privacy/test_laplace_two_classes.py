"""Issue 29: the two-class laws of ``laplace_counts`` in closed form equal the general
computations they replace (the windowed sum over v for discrete noise, the composite
quadrature for continuous noise), in probability to rounding (1e-13: both are exact
formulas in double precision, the windowed sum drops terms under e^-40)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpviz.privacy import mechanisms as m
from dpviz.privacy.noise import epsilon_fraction

COUNTS = np.concatenate(
    [
        np.random.default_rng(29).integers(0, 60, size=(150, 2)),
        [[0, 0], [7, 7], [0, 1], [1, 0], [0, 300], [900, 2]],
    ]
)


@pytest.mark.parametrize("epsilon", [0.0099, 0.0123, 0.05, 0.3, 1.0, 3.0, 10.0, 40.0])
def test_discrete_two_class_law_equals_the_windowed_sum(epsilon):
    s, t = epsilon_fraction(epsilon)
    rate = s / t
    half = math.ceil(40.0 / rate)
    assert 2 * half + 1 <= m._MAX_WINDOW  # the discrete (windowed) regime
    closed = np.exp(m._log_probs_laplace_argmax(COUNTS, epsilon))
    window = np.exp(m._laplace_argmax_window(COUNTS, rate, half))
    np.testing.assert_allclose(closed, window, rtol=0, atol=1e-13)
    np.testing.assert_allclose(closed.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    ties = COUNTS[:, 0] == COUNTS[:, 1]
    assert (closed[ties] == 0.5).all()


@pytest.mark.parametrize("epsilon", [1e-5, 1e-3, 0.005])
def test_continuous_two_class_law_equals_the_quadrature(epsilon):
    counts = COUNTS * 40
    s, t = epsilon_fraction(epsilon)  # the sampler's exact rate, as the law reads it
    closed = np.exp(m._log_probs_laplace_argmax(counts, epsilon))
    quadrature = np.exp(m._log_probs_laplace_argmax_continuous(counts, s / t))
    np.testing.assert_allclose(closed, quadrature, rtol=0, atol=1e-13)


def test_flip_probability_of_two_classes_is_the_loser_law():
    # Behind by g = 3 at rate ε: L = c² q³ [q((4 + a)/(1 − q) + q/(1 − q)²) + (3 + a)/2].
    eps = 0.5
    q = math.exp(-eps)
    c2 = ((1 - q) / (1 + q)) ** 2
    a = (1 + q * q) / (1 - q * q)
    loser = c2 * q**3 * (q * ((4 + a) / (1 - q) + q / (1 - q) ** 2) + (3 + a) / 2)
    flip = m.get_mechanism("laplace_counts").flip_probability(np.array([[5, 2]]), eps)
    assert flip[0] == pytest.approx(loser, rel=1e-12)
