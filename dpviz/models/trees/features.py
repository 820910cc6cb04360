"""Features as the trees see them: their order, and every feature as codes.

Privacy role: both read only the public schema (names, domains, values); ``bin_codes``
maps records to codes cut at public bins and releases nothing.
"""

from __future__ import annotations

import numpy as np

from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData


def feature_order(schema: Schema) -> list[str]:
    """Feature names in the trees' internal order: continuous first, then discrete."""
    return [f.name for f in schema.continuous] + [f.name for f in schema.discrete]


def bin_codes(encoded: EncodedData, schema: Schema, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Every feature as codes: continuous ones cut at ``n_bins`` equal-width public bins."""
    lows = np.array([f.low for f in schema.continuous])
    highs = np.array([f.high for f in schema.continuous])
    width = np.where(highs > lows, highs - lows, 1.0)
    binned = np.floor((encoded.continuous - lows) / width * n_bins).astype(np.int64)
    binned = np.clip(binned, 0, n_bins - 1)
    codes = np.hstack([binned, encoded.discrete.astype(np.int64)])
    n_values = np.array(
        [n_bins] * len(schema.continuous) + [len(f.values) for f in schema.discrete]
    )
    return codes, n_values
