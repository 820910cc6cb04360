"""Split points and split features that follow the data: the ``quantile`` split rule of
the default forest.

Privacy role: a release. Every record is counted, by its class, in one cell of each
feature's table: a continuous feature's :data:`SPLIT_BINS` equal-width bins of its public
domain, a discrete feature's values. The ``k × (s·SPLIT_BINS + Σ values)`` counts get
exact discrete Laplace noise at ``ε_split / d`` (d features): adding or removing one
record changes one count per feature, so the whole release is ``ε_split``-DP (L1
sensitivity ``d``). Everything after the noise is post-processing:

* the class-summed counts of a continuous feature become a piecewise-linear distribution
  function, and a node's threshold is drawn uniformly in that function's range over the
  node's sub-domain instead of uniformly in the sub-domain itself;
* each feature's noisy class × cell table gives a relevance (its gain ratio, less what
  noise alone gives an independent table with the same margins), and a node
  draws its split feature with probability ``(1 − α)/d + α·relevance/Σ relevance``,
  α = :data:`RELEVANCE_MIX`, among the features its path still allows.

The trees are then a function of public randomness and of an ε-DP release, booked in
the ledger.

Why: uniform thresholds over a skewed public domain (a call's duration in
[0, 4918] s, most calls under 600 s) put most splits where no record lies. Measured at
ε = 1 (5-fold CV, 100 trees, count forest): bank marketing AUC 77.0 → 83.9, MAGIC
86.1 → 87.6, Adult 87.1 → 88.1, with ``ε_split`` = 10% of ε. Uniform features spend
most splits of bank marketing on features that say little of the class; the relevance
draw lifts its AUC at ε = 1 by about 3 points (:data:`RELEVANCE_MIX`,
:data:`SPLIT_TOP_RUNG`, :data:`RELEVANCE_CELLS`; README "The forest").

``ε_split`` follows a public ladder (:func:`split_epsilon`): 0.2 from ε = 1 up, below
it 10% of ε rounded down to a power of ten. So an ε sweep grows one structure per rung
(three over ε = 0.01 … 10), not one per ε, and every point's budget is still exactly
its ε. Data without a continuous feature spends nothing here: its features are drawn
uniformly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpviz.compiled import kernels
from dpviz.privacy.noise import NoiseSource

SPLIT_POINTS = ("quantile", "uniform")
# Bins per feature. 16 rather than 32: within a bin thresholds are uniform, so coarser
# bins temper the quantiles towards uniform splits (a skewed feature's long tail, where
# bank marketing's long calls are, gets more of them). Measured (5 folds at ε = 1 and
# 10, fixed noise seeds, 6 fold seeds, 2026-11-23): bank marketing AUC 83.0 → 83.6 and
# 84.2 → 84.8, adult +0.2, MAGIC +0.1 AUC (−0.2 / −0.5 accuracy), abalone, pendigits and
# wall-following robot within ±0.5; 8 and 12 bins lifted bank further (+2.4, +1.0) but
# cost the robot data 1–2 accuracy points.
SPLIT_BINS = 16
# Share of ε on the tables below ε = 1, rounded down to a power of ten; from ε = 1 up
# the top rung. 0.2 rather than 0.1 at the top: the relevance draw reads d tables from
# one budget (measured, ε = 1, 6 runs of fresh noise and folds: bank marketing AUC
# 85.1 → 86.5, Adult 88.4 → 88.6, MAGIC ±0.1, wall-following robot accuracy +0.8,
# pendigits −0.4; 0.3 cost pendigits 1.4 and the robot data 0.5 points). Below ε = 1
# the class prior's floor (0.08) leaves too little for more.
SPLIT_SHARE = 0.1
SPLIT_TOP_RUNG = 0.2
# Continuous features' cells merged into this many of about equal noisy mass for the
# relevance: 16 bins of a skewed feature hold a few hundred records and 14 of noise
# (measured as above: bank marketing 84.7 → 85.1, Adult 88.1 → 88.4; 4 cost MAGIC 0.3).
RELEVANCE_CELLS = 6
# Noisy counts below this many noise scales are read as empty bins, and every bin gets
# that many as pseudo-records: pure noise would otherwise pull splits into bins no
# record lies in (measured: 300 records at ε = 5 lost 6-14 accuracy points).
SPLIT_KEEP_SCALES = 2.0
_SPLIT_STREAM = 0x5_9117_0000  # the histograms' noise stream within a release
# Mass of the split-feature draw that follows the relevance; the rest stays uniform, so
# every allowed feature keeps at least (1 − α)/d. Measured with ε_split = 0.1 and 16
# cells (ε = 1, 5 folds × 3 fold seeds, fixed noise seeds; AUC of Adult / bank marketing
# / MAGIC, accuracy of Adult at ε = 10): 0 → 88.2 / 82.6 / 87.8, 82.8; 0.3 → 88.0 / 85.3
# / 87.6, 81.3; 0.4 → 87.9 / 86.2 / 87.3, 80.5: more relevance lifts bank marketing and
# costs Adult's accuracy at large ε (its scores then favour its minority class). With
# the default release (0.2, 6 cells) Adult keeps 82.9 at ε = 10 (4 runs of fresh noise).
RELEVANCE_MIX = 0.3
# Draws of the numerical integration of the noise-only relevance (public: no data).
_RELEVANCE_DRAWS = 8


def split_epsilon(epsilon: float, n_continuous: int, split_points: str) -> float:
    """ε spent on the split tables: 0 without continuous features or with ``uniform``
    split points; else :data:`SPLIT_TOP_RUNG` (0.2) from ε = 1 up, and below it 10% of
    ε rounded down to a power of ten (0.01 for 0.1 ≤ ε < 1)."""
    if split_points not in SPLIT_POINTS:
        raise ValueError(
            f"split_points must be one of {', '.join(SPLIT_POINTS)}, got {split_points!r}"
        )
    if split_points == "uniform" or n_continuous == 0:
        return 0.0
    if epsilon >= 1.0:
        return SPLIT_TOP_RUNG
    return 10.0 ** math.floor(math.log10(SPLIT_SHARE * float(epsilon)) + 1e-9)


@dataclass(frozen=True)
class TableLayout:
    """Where each feature's cells lie in a row of :func:`class_tables` (public: schema)."""

    n_continuous: int
    n_values: tuple[int, ...]

    @property
    def n_features(self) -> int:
        return self.n_continuous + len(self.n_values)

    @property
    def widths(self) -> np.ndarray:
        """Cells of each feature: continuous features first, then discrete."""
        return np.asarray([SPLIT_BINS] * self.n_continuous + list(self.n_values), dtype=np.int64)

    @classmethod
    def of(cls, schema) -> TableLayout:
        return cls(len(schema.continuous), tuple(len(f.values) for f in schema.discrete))


def class_tables(
    continuous: np.ndarray,
    discrete: np.ndarray,
    y: np.ndarray,
    lows: np.ndarray,
    highs: np.ndarray,
    layout: TableLayout,
    n_classes: int,
) -> np.ndarray:
    """TRUE counts (k, cells): per class, each continuous feature's records in
    :data:`SPLIT_BINS` equal-width bins of its public domain (values outside it fall in
    the end bins), then each discrete feature's records per value (cells as
    ``layout``). Never released as is."""
    y = np.ascontiguousarray(y, dtype=np.int64)
    n, s = continuous.shape
    k = n_classes
    binned = np.zeros((k * s, SPLIT_BINS), dtype=np.int64)
    scale = SPLIT_BINS / np.where(highs > lows, highs - lows, 1.0)
    # Small tables take the kernel only once it has loaded (a fit's 300,000 values:
    # ~0.3 ms against ~2 ms in numpy); large ones start its loading.
    compiled = kernels.get(wait=False) if n * s >= 1 << 20 else kernels.loaded()
    # The kernel is typed for writeable arrays (joblib's parallel folds are read-only).
    if compiled is not None and continuous.dtype == np.float64 and continuous.flags.writeable:
        # One pass over the records (the routing kernels', once loaded): 2.4M × 10 in
        # ~30 ms against ~130 ms in numpy.
        low = np.ascontiguousarray(lows, dtype=np.float64)
        compiled["bin_counts"](continuous, y, low, scale, binned)
    else:
        by_class = binned.reshape(k, s, SPLIT_BINS)
        for j in range(s):  # one vectorised pass per feature, never per record
            z = (continuous[:, j] - lows[j]) * scale[j]
            cell = y * SPLIT_BINS + np.clip(z, 0, SPLIT_BINS - 1).astype(np.int64)
            by_class[:, j] = np.bincount(cell, minlength=k * SPLIT_BINS).reshape(k, -1)
    parts = [binned.reshape(k, s * SPLIT_BINS)]
    for j, values in enumerate(layout.n_values):
        code = discrete[:, j]
        known = code >= 0  # a training record always has a known value; be safe
        cell = y[known] * values + code[known]
        parts.append(np.bincount(cell, minlength=k * values).reshape(k, values))
    return np.hstack(parts)


@dataclass(frozen=True)
class SplitRelease:
    """What the trees read of the split release: each continuous feature's distribution
    function (s, :data:`SPLIT_BINS` + 1) and each feature's split-draw weight (d,)."""

    cdf: np.ndarray
    weights: np.ndarray


def release_splits(
    tables: np.ndarray, layout: TableLayout, epsilon: float, source: NoiseSource
) -> SplitRelease:
    """The ``epsilon``-DP split release from the TRUE ``tables``: :func:`noisy_tables`,
    then post-processing only (:func:`cdf_from_counts`, :func:`feature_weights`)."""
    noisy = noisy_tables(tables, layout, epsilon, source)
    scale = layout.n_features / epsilon
    s = layout.n_continuous
    marginal = noisy[:, : s * SPLIT_BINS].sum(axis=0).reshape(s, SPLIT_BINS)
    # The marginal sums k noisy counts: its noise spreads √k times one count's.
    cdf = cdf_from_counts(marginal, scale * math.sqrt(noisy.shape[0]))
    return SplitRelease(cdf, feature_weights(noisy, layout, epsilon))


def noisy_tables(
    tables: np.ndarray, layout: TableLayout, epsilon: float, source: NoiseSource
) -> np.ndarray:
    """``tables`` plus exact discrete Laplace noise at ``epsilon / d`` per count:
    ``epsilon``-DP, since one record moves one count per feature. The only step of the
    split release that reads the data."""
    d = layout.n_features
    noise = source.child(_SPLIT_STREAM).generator().discrete_laplace(epsilon / d, tables.size)
    return tables + noise.reshape(tables.shape)


def cdf_from_counts(noisy: np.ndarray, noise_scale: float) -> np.ndarray:
    """Knots of a strictly increasing distribution function per feature, from 0 to 1 at
    the bin edges, read from noisy counts whose noise has scale ``noise_scale``: bins
    under :data:`SPLIT_KEEP_SCALES` scales count as empty, and every bin gets that many
    scales as pseudo-records, so that noise on little data leaves the thresholds about
    uniform."""
    s, bins = noisy.shape
    pseudo = SPLIT_KEEP_SCALES * noise_scale
    kept = np.where(noisy > pseudo, noisy, 0).astype(np.float64) + pseudo
    cdf = np.zeros((s, bins + 1))
    cdf[:, 1:] = np.cumsum(kept, axis=1) / kept.sum(axis=1, keepdims=True)
    cdf[:, -1] = 1.0
    return cdf


def feature_weights(noisy: np.ndarray, layout: TableLayout, epsilon: float) -> np.ndarray:
    """Each feature's probability of being drawn for a split (before the path's allowed
    features renormalise it): ``(1 − α)/d + α·r_j/Σr``, α = :data:`RELEVANCE_MIX`, where
    r_j is the :func:`gain_ratio` of feature j's noisy class × cell table (negative
    counts as 0; a continuous feature's bins merged into :data:`RELEVANCE_CELLS` of
    about equal noisy mass) less its mean over tables of an independent class and cell
    with the same noisy margins and the same noise (a fixed-seed sample: chance level),
    at least 0. Uniform when no feature stands above chance. Post-processing of released
    values."""
    d = layout.n_features
    if d == 0:
        return np.zeros(0)
    rng = np.random.default_rng(0x5E1E)  # numerical integration, not privacy noise
    q = math.exp(-epsilon / d)
    relevance = np.zeros(d)
    stops = np.cumsum(layout.widths)
    for j, (start, stop) in enumerate(zip(stops - layout.widths, stops)):
        raw = noisy[:, start:stop].astype(np.float64)
        kept = np.clip(raw, 0, None)
        total = kept.sum()
        if total <= 0:
            continue
        merge = _merged_cells(kept.sum(axis=0)) if j < layout.n_continuous else None

        def cells(t, merge=merge):
            return np.clip(t if merge is None else t @ merge, 0, None)

        independent = np.outer(kept.sum(axis=1), kept.sum(axis=0)) / total
        shape = (_RELEVANCE_DRAWS, *raw.shape)
        null = independent + rng.geometric(1 - q, shape) - rng.geometric(1 - q, shape)
        chance = np.mean([gain_ratio(cells(t)) for t in null])
        relevance[j] = max(gain_ratio(cells(raw)) - chance, 0.0)
    weights = np.full(d, 1.0 / d)
    if relevance.sum() > 0:
        weights = (1 - RELEVANCE_MIX) * weights + RELEVANCE_MIX * relevance / relevance.sum()
    return weights


def _merged_cells(mass: np.ndarray) -> np.ndarray:
    """(bins, :data:`RELEVANCE_CELLS`) 0/1 matrix merging adjacent bins into cells of
    about equal ``mass`` (a bin's cell: where its middle falls in the cumulative mass)."""
    middle = (np.cumsum(mass) - mass / 2) / mass.sum()
    cell = np.minimum((middle * RELEVANCE_CELLS).astype(np.int64), RELEVANCE_CELLS - 1)
    return np.eye(RELEVANCE_CELLS)[cell]


def gain_ratio(table: np.ndarray) -> float:
    """Mutual information of class and cell over the cells' entropy (C4.5's gain ratio)
    in a class × cell table of non-negative counts: mutual information alone favours
    features of many values, whose multiway splits leave small leaves."""
    total = table.sum()
    if total <= 0:
        return 0.0
    p = table / total
    cells = p.sum(axis=0)
    outer = p.sum(axis=1, keepdims=True) * cells[None, :]
    held = p > 0
    information = float((p[held] * np.log(p[held] / outer[held])).sum())
    cells = cells[cells > 0]
    entropy = float(-(cells * np.log(cells)).sum())
    return information / entropy if entropy > 0 else 0.0
