"""Paired folds for the bench scripts that compare variants of one model on the same
records, public seeds and replayable noise (NOT private: measurements only)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
from sklearn.model_selection import StratifiedKFold

from bench.bench_standins import standin
from bench.utility.data import VALIDATION_DIR, Dataset, load_dataset
from dpviz.models.registry import get_algorithm


def dataset(name: str, run: int, datasets_dir: Path) -> Dataset:
    """A shared or validation set by name, or a stand-in (``bench_standins`` spec) drawn
    from the run's seed."""
    if ":" in name:
        label, frame = standin(name, run, datasets_dir)
        return load_dataset(label, frame=frame)
    plain = VALIDATION_DIR / f"{name}.csv.gz"
    return load_dataset(name, VALIDATION_DIR if plain.exists() else datasets_dir)


def paired_folds(
    name: str, runs: int, datasets_dir: Path
) -> Iterator[tuple[int, int, Dataset, np.ndarray, np.ndarray]]:
    """(run, fold, data, train rows, test rows): each run's set and its 5 stratified folds,
    both drawn from the run's seed."""
    for run in range(runs):
        data = dataset(name, run, datasets_dir)
        split = StratifiedKFold(5, shuffle=True, random_state=run)
        for fold, (train, test) in enumerate(split.split(np.zeros(len(data.y)), data.y)):
            yield run, fold, data, train, test


def paired_model(algorithm: str, epsilon: float, data: Dataset, run: int, fold: int, **params):
    """The registry's model of ``algorithm`` for a fold: public seed run·1,000,003 + fold,
    replayable noise 1000·run + fold (NOT private)."""
    model = get_algorithm(algorithm).make(
        epsilon, random_state=run * 1_000_003 + fold, schema=data.schema, **params
    )
    return model.set_params(noise_seed=1000 * run + fold)


def class_indices(data: Dataset, labels) -> np.ndarray:
    """The schema's class index of each predicted label."""
    index = {c: i for i, c in enumerate(data.schema.classes)}
    return np.array([index[str(c)] for c in labels])
