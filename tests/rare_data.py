"""A dataset on which a DP model predicts one class: 3% positives and two features that
say nothing about the label, with a public schema (for the trivial-baseline tests)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpviz.app.support import PreparedData
from dpviz.privacy.schema import Feature, Schema

RARE_SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (Feature("a", "continuous", 0.0, 1.0), Feature("b", "continuous", 0.0, 1.0)),
)
RARE_SHARE = 0.03


def rare_frame(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    positives = rng.permutation(n) < round(RARE_SHARE * n)
    return pd.DataFrame(
        {
            "a": rng.uniform(0, 1, n).round(3),
            "b": rng.uniform(0, 1, n).round(3),
            "label": np.where(positives, "yes", "no"),
        }
    )


def rare_data(n: int = 1000, seed: int = 0) -> PreparedData:
    """The records as the app holds them, with the public schema above."""
    return PreparedData(
        f"rare.csv ({n:,} rows)",
        rare_frame(n, seed),
        RARE_SCHEMA,
        "the schema was declared public by the tests",
        frame_id=f"rare:{n}:{seed}",
        source="upload",
    )
