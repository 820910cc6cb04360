"""The benchmark's datasets: the two groups (shared development sets, held-out validation
sets), reading, the public schema and the encoded arrays every method is fitted on."""

from __future__ import annotations

import gzip
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.privacy.schema import Schema, infer_schema
from dpviz.tabular.encode import encode, read_csv

ROOT = Path(__file__).resolve().parents[2]
DATASETS_DIR = ROOT.parent / "shared" / "datasets"
# Issue 28's held-out group: real datasets from packages that bundle them (MANIFEST.md
# there). No rule or constant is chosen on these; they are only measured.
VALIDATION_DIR = ROOT / "data" / "validation"
GROUPS = ("shared", "validation")
# Every dataset in ../shared/datasets (its MANIFEST): the 7 of the DPBoost
# measurements and the 4 added since (votes, abalone, pendigits, wall_robot), so that the
# checks run "on any of the shared datasets" and the AUC mean covers all 6 binary ones.
DEFAULT_DATASETS = (
    "adult",
    "bank_marketing",
    "car",
    "magic_gamma",
    "mushroom",
    "nursery",
    "tic_tac_toe",
    "votes",
    "abalone",
    "pendigits",
    "wall_robot",
)


def validation_datasets(folder: Path = VALIDATION_DIR) -> tuple[str, ...]:
    """Names of the validation group: every ``*.csv.gz`` (or ``*.csv``) in ``folder``."""
    names = {p.name.split(".")[0] for p in Path(folder).glob("*.csv*")}
    return tuple(sorted(names))


def group_of(name: str, folder: Path = VALIDATION_DIR) -> str:
    """``validation`` for a set of the validation folder, else ``shared``."""
    return "validation" if name in validation_datasets(folder) else "shared"


@dataclass
class Dataset:
    """One dataset: raw string frame, its schema and the encoded arrays."""

    name: str
    frame: pd.DataFrame  # features as read (strings), label column last
    schema: Schema
    y: np.ndarray  # class index per row
    continuous: np.ndarray  # the schema's continuous features
    discrete: np.ndarray  # codes of the schema's discrete features
    group: str = "shared"  # "shared" (development) or "validation" (held out)

    @property
    def n_classes(self) -> int:
        return len(self.schema.classes)

    @property
    def features(self) -> pd.DataFrame:
        return self.frame[self.schema.feature_names]

    def labels(self) -> np.ndarray:
        return np.asarray(self.schema.classes, dtype=object)[self.y]


def load_dataset(
    name: str,
    datasets_dir: Path = DATASETS_DIR,
    max_rows: int | None = None,
    seed: int = 0,
    frame: pd.DataFrame | None = None,
    group: str = "shared",
) -> Dataset:
    """Read ``name``.csv (or ``name``.csv.gz) with dpviz's reader, infer its schema from the
    whole file (as ``dpviz.evaluation.reproduce`` does: public for this benchmark) and encode
    it. ``max_rows`` keeps a stratified random subset (seeded: public randomness). ``frame``
    replaces the file (tests)."""
    if frame is None:
        plain, packed = Path(datasets_dir) / f"{name}.csv", Path(datasets_dir) / f"{name}.csv.gz"
        if plain.exists():
            frame = read_csv(plain)
        elif packed.exists():
            frame = read_csv(gzip.decompress(packed.read_bytes()))
        else:
            raise ValueError(f"dataset {plain} (or .csv.gz) is missing; pass --datasets-dir")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the inferred schema is declared public here
        schema = infer_schema(frame, "label")
    if max_rows is not None and len(frame) > max_rows:
        from sklearn.model_selection import train_test_split

        frame, _ = train_test_split(
            frame, train_size=max_rows, stratify=frame["label"], random_state=seed
        )
    frame = frame.reset_index(drop=True)
    encoded = encode(frame, schema)
    if encoded.report.rows_used != len(frame):
        raise ValueError(f"{name}: encoding dropped rows; the benchmark needs complete rows")
    return Dataset(name, frame, schema, encoded.y, encoded.continuous, encoded.discrete, group)


def _tree_matrix(data: Dataset) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Continuous values and discrete codes as floats, with the schema's bounds."""
    s = data.schema
    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    low = [f.low for f in s.continuous] + [0.0] * len(s.discrete)
    high = [f.high for f in s.continuous] + [len(f.values) - 1.0 for f in s.discrete]
    return X, (np.array(low, dtype=np.float64), np.array(high, dtype=np.float64))


def _linear_matrix(data: Dataset) -> tuple[np.ndarray, float]:
    """Continuous features scaled to [0, 1] by the schema's bounds, discrete ones one-hot
    over the schema's values; and the largest row norm those bounds allow (every feature
    contributes at most 1 to the squared norm): diffprivlib LR's ``data_norm``."""
    s = data.schema
    span = np.array([max(f.high - f.low, 1e-12) for f in s.continuous])
    low = np.array([f.low for f in s.continuous])
    parts = [(data.continuous - low) / span] if s.continuous else []
    for j, feat in enumerate(s.discrete):
        parts.append((data.discrete[:, j][:, None] == np.arange(len(feat.values))).astype(float))
    return np.hstack(parts), math.sqrt(len(s.features))
