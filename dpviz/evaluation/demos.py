"""Bundled demo datasets that need no internet, each with a schema that counts as public.

SPEC §1: the class list and the feature domains must be public knowledge, not read from
the records. Every demo here says why its schema qualifies (``Demo.schema_public_because``):
either a generator, not a person, made the records, or the ranges are published with the
dataset.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.evaluation.synthetic import SYNTH_SPECS, make_synth
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import read_csv

DATA_DIR = Path(__file__).resolve().parent.parent.parent / "data"
DEMO_CSV = DATA_DIR / "demo.csv"
DEMO_SCHEMA = DATA_DIR / "demo.schema.json"
DEMO_ROWS, DEMO_DECIMALS, DEMO_SEED = 2_000, 4, 0
SYNTH_ROWS = 30_000

_GENERATED = (
    "a generator made every record, so its ranges describe the generator, not a person; "
    "the domains are the generated range rounded outwards to whole numbers."
)


@dataclass(frozen=True)
class Demo:
    """One bundled dataset: ``load()`` returns (records, public schema)."""

    id: str
    title: str
    description: str
    schema_public_because: str
    loader: Callable[[], tuple[pd.DataFrame, Schema]]

    def load(self) -> tuple[pd.DataFrame, Schema]:
        return self.loader()


def demo_csv_records() -> tuple[pd.DataFrame, Schema]:
    """The records and schema of ``data/demo.csv``: SynthA, 2,000 rows, seed 0, values
    rounded to 4 decimals (``data/make_demo.py`` writes them)."""
    frame, schema = make_synth("SynthA", DEMO_ROWS, seed=DEMO_SEED)
    features = [c for c in frame.columns if c != schema.label]
    frame[features] = frame[features].round(DEMO_DECIMALS)
    return frame, schema


def _load_demo_csv() -> tuple[pd.DataFrame, Schema]:
    if DEMO_CSV.exists() and DEMO_SCHEMA.exists():
        # Read like an upload would be, so the demo exercises the same parsing path.
        return read_csv(DEMO_CSV), Schema.load(DEMO_SCHEMA)
    return demo_csv_records()  # an installed package has no data/ folder: same records


def round_outwards(low: float, high: float) -> tuple[float, float]:
    """Widen [low, high] to the next multiple of a step one decade below its span."""
    span = high - low
    step = 10.0 ** (math.floor(math.log10(span)) - 1) if span > 0 else 1.0
    lo = float(f"{math.floor(low / step) * step:.12g}")
    hi = float(f"{math.ceil(high / step) * step:.12g}")
    return min(lo, low), max(hi, high)


def breast_cancer() -> tuple[pd.DataFrame, Schema]:
    """scikit-learn's Wisconsin diagnostic breast cancer data (569 rows, 30 features),
    label ``diagnosis`` = "malignant" / "benign"."""
    from sklearn.datasets import load_breast_cancer

    bunch = load_breast_cancer(as_frame=True)
    frame = bunch.data.copy()
    names = [str(n) for n in bunch.target_names]
    frame["diagnosis"] = np.asarray(names, dtype=object)[bunch.target.to_numpy()]
    features = tuple(
        Feature(
            str(c), "continuous", *round_outwards(float(frame[c].min()), float(frame[c].max()))
        )
        for c in bunch.data.columns
    )
    return frame, Schema(label="diagnosis", classes=tuple(names), features=features)


def _synth(name: str) -> Callable[[], tuple[pd.DataFrame, Schema]]:
    return lambda: make_synth(name, SYNTH_ROWS, seed=0)


DEMOS: dict[str, Demo] = {
    d.id: d
    for d in (
        Demo(
            "demo_csv",
            "demo.csv (SynthA, 2,000 rows)",
            "data/demo.csv: the paper's SynthA (5 informative continuous features, 2 classes), "
            "2,000 rows generated with seed 0, values rounded to 4 decimals.",
            "data/demo.schema.json was written by the generator (data/make_demo.py): "
            + _GENERATED,
            _load_demo_csv,
        ),
        Demo(
            "breast_cancer",
            "Breast cancer (569 rows)",
            "scikit-learn's load_breast_cancer: 30 continuous cell-nucleus measurements, "
            "label diagnosis = malignant / benign.",
            "the minimum and maximum of every feature are published with the dataset "
            "(UCI and scikit-learn's description); the domains are those ranges rounded "
            "outwards.",
            breast_cancer,
        ),
        *(
            Demo(
                name,
                f"{name} ({SYNTH_ROWS:,} rows)",
                f"Fletcher & Islam 2017's {name}: make_classification with "
                f"{SYNTH_SPECS[name][0]} informative and {SYNTH_SPECS[name][1]} random "
                f"continuous features, 2 classes, {SYNTH_ROWS:,} rows, seed 0.",
                _GENERATED,
                _synth(name),
            )
            for name in SYNTH_SPECS
        ),
    )
}
DEFAULT_DEMO = "demo_csv"


def load_demo(demo_id: str) -> tuple[pd.DataFrame, Schema]:
    """Records and public schema of a bundled demo."""
    try:
        demo = DEMOS[demo_id]
    except KeyError:
        raise ValueError(f"unknown demo {demo_id!r}; choose one of {', '.join(DEMOS)}") from None
    return demo.load()
