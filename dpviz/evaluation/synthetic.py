"""The 2017 paper's synthetic datasets SynthA–G (SPEC §6), generated deterministically."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification

from dpviz.privacy.schema import Feature, Schema

SYNTH_SPECS: dict[str, tuple[int, int]] = {
    "SynthA": (5, 0),
    "SynthB": (10, 0),
    "SynthC": (15, 0),
    "SynthD": (10, 5),
    "SynthE": (5, 10),
    "SynthF": (5, 5),
    "SynthG": (10, 10),
}


def make_synth(name: str, n_samples: int = 30_000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """One of SynthA–G as a DataFrame with a ``label`` column, and its schema.

    ``make_classification(n_features=informative+random, n_informative=informative,
    n_redundant=0, n_repeated=0, n_classes=2)``; the paper's generator seeds are
    unknown, so ``seed`` picks one. The schema's domains are the generated data's
    range rounded outwards: public here because the generator, not a person, made
    the records.
    """
    if name not in SYNTH_SPECS:
        raise ValueError(
            f"unknown synthetic dataset {name!r}; choose one of {', '.join(SYNTH_SPECS)}"
        )
    informative, random = SYNTH_SPECS[name]
    X, y = make_classification(
        n_samples=n_samples,
        n_features=informative + random,
        n_informative=informative,
        n_redundant=0,
        n_repeated=0,
        n_classes=2,
        random_state=seed,
    )
    columns = [f"x{i}" for i in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=columns)
    frame["label"] = np.where(y == 1, "1", "0")
    features = tuple(
        Feature(c, "continuous", float(np.floor(X[:, i].min())), float(np.ceil(X[:, i].max())))
        for i, c in enumerate(columns)
    )
    return frame, Schema(label="label", classes=("0", "1"), features=features)
