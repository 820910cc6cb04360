"""Split candidates that follow the data: bin edges from noisy quantiles (DPBoost's grown
model and random-split mode; the greedy trees with ``split_points="quantile"``).

Privacy role: one release. Each continuous feature's public domain is cut into
:data:`EDGE_CELLS` equal-width cells (public); every record is counted in one cell of
each of the s continuous features, and the s × :data:`EDGE_CELLS` counts get exact
discrete Laplace noise at ε_q/s each: adding or removing one record changes one count
per feature by one (L1 sensitivity s), so the release is ε_q-DP (the ledger books it
as one entry of ε_q over all records). Everything after the noise is post-processing:
:func:`edges_from_counts` clips the noisy counts at 0, gives a cell holding at least
1/n_bins of the noisy mass a bin of its own and cuts the rest of the mass into equal
shares (a cell index per edge, none repeated); :func:`edge_codes` maps records to the
bin of their cell.

Who makes it, with ε_q = :data:`EDGE_SHARE`·ε: DPBoost's grown model (ε ≥ 5 and a released
prior total ≥ 6,000: :func:`~dpviz.models.boosting.presets.grows`) and its random-split
mode; a greedy tree with ``split_points="quantile"`` from ε = 1
(:func:`~dpviz.models.greedy.budget.edge_epsilon`). Every other model cuts the public
domains into equal widths and spends nothing here.

Why: 32 equal-width bins of a skewed public domain put most candidates where few
records lie (MAGIC's fLength, bank marketing's call durations): its noise-free twin sat
4.7 points below HistGradientBoosting on MAGIC. Measured on the shared sets at ε = 10
(bench/README.md, "DPBoost's bin edges from noisy quantiles"). A point mass (adult's
capital gain of 0) took every quantile edge up to its share (3 distinct edges of 31):
now it is one bin (bench/README.md, "DPBoost's capacity at ε = 10", h-boost4: adult
+0.5 / 0.0, diamonds +0.6 / +0.1 at ε = 10).
"""

from __future__ import annotations

import numpy as np

from dpviz.models.trees.draws import Rng
from dpviz.models.trees.features import bin_codes
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData

# Equal-width cells of each continuous feature's public domain that the noisy
# histogram counts. 128: 64, 128 and 256 gave MAGIC the same accuracy at ε = 10 (84.3,
# 84.4, 84.2; 5 folds); fewer cells carry less noise per bin edge.
EDGE_CELLS = 128
# The share of ε the histograms spend. 0.05: at ε = 10 it is 0.5,
# s/0.5 = 2s records of noise scale per cell for s continuous features.
EDGE_SHARE = 0.05


def edge_cells(encoded: EncodedData, schema: Schema) -> np.ndarray:
    """Each record's cell (0..:data:`EDGE_CELLS`−1) of each continuous feature: its
    public domain cut into equal widths (reads the schema; releases nothing)."""
    lows = np.array([f.low for f in schema.continuous], dtype=np.float64)
    highs = np.array([f.high for f in schema.continuous], dtype=np.float64)
    width = np.where(highs > lows, highs - lows, 1.0)
    cells = np.floor((encoded.continuous - lows) / width * EDGE_CELLS).astype(np.int64)
    return np.clip(cells, 0, EDGE_CELLS - 1)


def noisy_edges(
    cells: np.ndarray, n_bins: int, epsilon: float, rng: Rng
) -> tuple[np.ndarray, np.ndarray]:
    """The release: each continuous feature's cell counts with exact discrete Laplace
    noise at ``epsilon``/s (s = ``cells.shape[1]``; L1 sensitivity s, so ``epsilon``-DP
    in all), and the bin edges they give (post-processing, :func:`edges_from_counts`).

    Returns (released counts of shape (s, :data:`EDGE_CELLS`), edges of shape
    (s, ``n_bins`` − 1))."""
    s = cells.shape[1]
    offsets = np.arange(s, dtype=np.int64) * EDGE_CELLS
    counts = np.bincount((cells + offsets).ravel(), minlength=s * EDGE_CELLS)
    noise = rng.discrete_laplace(epsilon / s, s * EDGE_CELLS)
    released = (counts + noise).reshape(s, EDGE_CELLS)
    return released, edges_from_counts(released, n_bins)


def edges_from_counts(released: np.ndarray, n_bins: int) -> np.ndarray:
    """Bin edges from released cell counts (post-processing): the counts clipped at 0;
    edge values are cell indices, bin b holding the cells [edge_b, edge_(b+1)).

    A cell holding at least 1/``n_bins`` of the noisy mass (a point mass such as adult's
    capital gain of 0) gets a bin of its own (:func:`_feature_edges`), and the other bins
    cut the rest of the mass at equal shares, so no edges are spent twice on one cell.
    Edges left over (fewer distinct cells than bins) sit at :data:`EDGE_CELLS` (empty
    bins at the top). A feature whose noisy counts are all ≤ 0 gets equal-width bins of
    the cells."""
    mass = np.clip(released, 0, None).astype(np.float64)
    return np.stack([_feature_edges(m, n_bins) for m in mass]).astype(np.int64)


def _feature_edges(mass: np.ndarray, n_bins: int) -> np.ndarray:
    """One feature's ``n_bins`` − 1 edges from its clipped noisy cell masses (the
    greedy equal-frequency binning of LightGBM's bin finder): cells of at least
    total/``n_bins`` alone in their bin, then quantile edges of the rest of the mass
    over as many bins as are left; with fewer distinct edges than bins, fewer quantile
    bins are tried until the edges fit. Post-processing of the released counts."""
    cells = len(mass)
    total = mass.sum()
    if total <= 0:
        return np.linspace(0, cells, n_bins + 1)[1:-1].round().astype(np.int64)
    big = np.flatnonzero(mass >= total / n_bins)
    fixed = np.union1d(big, big + 1)
    rest = np.where(np.isin(np.arange(cells), big), 0.0, mass)
    cumulative = np.cumsum(rest)
    chosen = fixed
    for bins in range(max(n_bins - len(big), 1), 0, -1):
        targets = np.arange(1, bins) / bins * cumulative[-1]
        cut = np.searchsorted(cumulative, targets, side="left") + 1
        chosen = np.union1d(fixed, cut) if cumulative[-1] > 0 else fixed
        chosen = chosen[(chosen >= 1) & (chosen < cells)]
        if len(chosen) <= n_bins - 1:
            break
    chosen = chosen[: n_bins - 1]  # only when the point masses alone need more edges
    return np.concatenate([chosen, np.full(n_bins - 1 - len(chosen), cells)])


def edge_codes(
    encoded: EncodedData, schema: Schema, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every feature as codes: a continuous feature's code is the bin of its cell under
    the released ``edges`` (the number of edges ≤ the cell), a discrete one its value's
    code. Returns (codes, values per feature), as
    :func:`~dpviz.models.trees.features.bin_codes`. Post-processing of the release."""
    cells = edge_cells(encoded, schema)
    n_bins = edges.shape[1] + 1 if len(edges) else 2
    binned = (
        np.stack([np.searchsorted(e, c, side="right") for e, c in zip(edges, cells.T)], axis=1)
        if len(edges)
        else np.zeros((len(cells), 0), dtype=np.int64)
    )
    codes = np.hstack([binned.astype(np.int64), encoded.discrete.astype(np.int64)])
    n_values = np.array(
        [n_bins] * len(schema.continuous) + [len(f.values) for f in schema.discrete]
    )
    return codes, n_values


def codes_at(
    encoded: EncodedData, schema: Schema, n_bins: int, edges: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Every feature as a model's codes: continuous ones at its released ``edges``
    (:func:`edge_codes`) or, without them, at ``n_bins`` equal widths of the public domain
    (:func:`~dpviz.models.trees.features.bin_codes`). Post-processing."""
    if edges is not None:
        return edge_codes(encoded, schema, edges)
    return bin_codes(encoded, schema, n_bins)


def edge_values(schema: Schema, edges: np.ndarray) -> list[np.ndarray]:
    """The bins' boundaries in each continuous feature's units (low, the edges' cell
    starts, high): what the released edges mean, for labels. Post-processing."""
    out = []
    for f, e in zip(schema.continuous, edges):
        width = (f.high - f.low) if f.high > f.low else 1.0
        out.append(np.concatenate([[f.low], f.low + e * width / EDGE_CELLS, [f.high]]))
    return out
