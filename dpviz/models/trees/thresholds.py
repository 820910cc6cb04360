"""Split thresholds drawn inside a node's range, uniform in a released distribution function.

Privacy role: post-processing of released noisy split histograms (their distribution
functions) and public uniform draws: no record is read, no ε is spent.
"""

from __future__ import annotations

import numpy as np


def quantile_thresholds(
    cdf: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    feature: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    u: np.ndarray,
) -> np.ndarray:
    """Thresholds inside each node's [lo, hi] of ``feature``, uniform in the released
    distribution function: F⁻¹(F(lo) + u·(F(hi) − F(lo))). Post-processing only."""
    bins = cdf.shape[1] - 1
    base = lows[feature]
    width = np.where(highs > lows, highs - lows, 1.0)[feature]
    knots = cdf[feature]
    rows = np.arange(len(feature))

    def forward(x):
        z = np.clip((x - base) * (bins / width), 0, bins)
        b = np.minimum(z.astype(np.int64), bins - 1)
        return knots[rows, b] + (z - b) * (knots[rows, b + 1] - knots[rows, b])

    q = forward(lo) + u * (forward(hi) - forward(lo))
    b = np.clip((knots <= q[:, None]).sum(axis=1) - 1, 0, bins - 1)
    step = knots[rows, b + 1] - knots[rows, b]
    frac = np.clip((q - knots[rows, b]) / step, 0, 1)
    return np.clip(base + (b + frac) * (width / bins), lo, hi)
