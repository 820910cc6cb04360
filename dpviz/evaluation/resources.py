"""Files dpviz reads that are not the user's data: the papers' published numbers and the
real UCI datasets of the reproduction.

The papers' numbers (``fletcher2017_results.csv``, ``mechanism_tables.csv``) ship inside
the package (``dpviz/reference/``), so the Teach page and ``reproduce`` find them from any
directory and in any install. The six real datasets are bundled gzip-compressed under the
repository's ``data/uci/`` (with a MANIFEST naming source, licence and SHA-256); a folder
``../shared/datasets`` beside the repository, when present, is read instead (same files,
uncompressed).
"""

from __future__ import annotations

import gzip
from importlib.resources import files
from pathlib import Path

import pandas as pd

from dpviz.tabular.encode import read_csv

REFERENCE_FILES = ("fletcher2017_results.csv", "mechanism_tables.csv")
_REPO = Path(__file__).resolve().parent.parent.parent
# Bundled with the repository (an editable install or a clone); absent from a wheel.
BUNDLED_DATASETS = _REPO / "data" / "uci"
# The project's shared folder beside the clone, when there is one.
SHARED_DATASETS = _REPO.parent / "shared" / "datasets"


def reference_file(name: str) -> Path | None:
    """The package's copy of a published-numbers table (one of ``REFERENCE_FILES``), or
    None when this install lacks it (the views then show dpviz's values alone)."""
    if name not in REFERENCE_FILES:
        raise ValueError(f"unknown reference table {name!r}: one of {', '.join(REFERENCE_FILES)}")
    resource = files("dpviz").joinpath("reference", name)
    # setuptools installs package data as plain files; a zipped install has no path.
    path = Path(str(resource))
    return path if path.is_file() else None


def default_datasets_dir() -> Path:
    """Where ``reproduce`` looks for the real datasets by default: ``../shared/datasets``
    beside the repository when it exists, else the bundled ``data/uci``."""
    return SHARED_DATASETS if SHARED_DATASETS.is_dir() else BUNDLED_DATASETS


def dataset_file(name: str, datasets_dir: str | Path | None = None) -> Path | None:
    """``name.csv`` or ``name.csv.gz`` in ``datasets_dir`` (default
    :func:`default_datasets_dir`, then the bundled copy), or None when neither exists."""
    dirs = [Path(datasets_dir)] if datasets_dir is not None else [default_datasets_dir()]
    if datasets_dir is None:
        dirs.append(BUNDLED_DATASETS)
    for folder in dirs:
        for candidate in (folder / f"{name}.csv", folder / f"{name}.csv.gz"):
            if candidate.is_file():
                return candidate
    return None


def read_dataset(name: str, datasets_dir: str | Path | None = None) -> pd.DataFrame:
    """One real dataset as :func:`dpviz.tabular.encode.read_csv` reads it (all cells text).

    Raises ``ValueError`` naming the folder looked in when the file is absent."""
    path = dataset_file(name, datasets_dir)
    if path is None:
        where = datasets_dir if datasets_dir is not None else default_datasets_dir()
        raise ValueError(
            f"dataset {name}.csv (or {name}.csv.gz) is missing from {where}; pass "
            "--datasets-dir with a folder that holds it (a clone has them in data/uci)"
        )
    if path.suffix == ".gz":
        return read_csv(gzip.decompress(path.read_bytes()))
    return read_csv(path)
