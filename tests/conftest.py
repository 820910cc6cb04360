from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATASETS = SHARED / "datasets"
REFERENCE = SHARED / "reference"


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
