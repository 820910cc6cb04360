from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app_curves import SweepSettings
from dpviz.schema import Feature, Schema

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"
REFERENCE = SHARED / "reference"

# The Negotiate tests' sweep, small like one the Curves page makes: two mechanisms, one of
# them NOT DP.
NEGOTIATE_SWEEP = SweepSettings(
    eps_low=0.1,
    eps_high=10.0,
    per_decade=3,
    mechanisms=("smooth_em", "permute_flip"),
    n_estimators=(10,),
    folds=2,
)
MIXED_SCHEMA = Schema(
    "label",
    ("other", "red", "small"),
    (
        Feature("size", "continuous", 0.0, 10.0),
        Feature("colour", "discrete", values=("blue", "green", "red")),
        Feature("shape", "discrete", values=("round", "square")),
    ),
)


def dataset_path(name: str) -> Path:
    path = DATASETS / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"real dataset {path} is absent (../shared/datasets not beside the repo)")
    return path


def reference_path(name: str) -> Path:
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"reference table {path} is absent (../shared/reference not beside the repo)")
    return path


def mixed_records(seed: int, n: int) -> pd.DataFrame:
    """``n`` records of three classes, a continuous and two discrete features and their
    ``label`` (public schema: ``MIXED_SCHEMA``)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "size": rng.uniform(0, 10, n).round(3),
            "colour": rng.choice(["red", "green", "blue"], n),
            "shape": rng.choice(["round", "square"], n),
        }
    )
    frame["label"] = np.where(
        frame["size"] < 3, "small", np.where(frame["colour"] == "red", "red", "other")
    )
    return frame
