import os

# scikit-learn's estimator checks test array-API input (numpy namespace) only when SciPy's
# array-API mode is on; without it those checks skip. Set before anything imports SciPy.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app.curves import SweepSettings
from dpviz.evaluation.resources import default_datasets_dir, read_dataset, reference_file
from dpviz.privacy.schema import Feature, Schema

ROOT = Path(__file__).resolve().parent.parent


# AppTest's timeouts only guard against a hung script: they are not timing assertions.
# A script run that takes 5 s on a quiet 2-core machine takes several times longer at a
# load average of 8 or more (CI, other jobs), so every AppTest waits at least this long
# whatever its test asks for (a hung run still fails, later).
APP_TEST_TIMEOUT_FLOOR = 600.0


@pytest.fixture(autouse=True, scope="session")
def _patient_app_tests():
    """``AppTest.from_file`` with ``default_timeout`` raised to the floor above."""
    from streamlit.testing.v1 import AppTest

    real = AppTest.from_file.__func__

    def from_file(cls, script_path, *, default_timeout: float = 3):
        return real(cls, script_path, default_timeout=max(default_timeout, APP_TEST_TIMEOUT_FLOOR))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AppTest, "from_file", classmethod(from_file))
        yield


@pytest.fixture(autouse=True, scope="session")
def _config_dir(tmp_path_factory):
    """dpviz's signing key (dpviz.privacy.signing) in a folder of the test run, never in
    the real home; subprocesses of the tests inherit it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DPVIZ_CONFIG_DIR", str(tmp_path_factory.mktemp("dpviz-config")))
        yield


# The real datasets: ../shared/datasets beside the clone when present, else the bundled,
# gzipped copy in data/uci (dpviz.evaluation.resources reads either).
DATASETS = default_datasets_dir()

# The Negotiate tests' sweep, small like one the Curves page makes: two mechanisms, one of
# them NOT DP.
NEGOTIATE_SWEEP = SweepSettings(
    eps_low=0.1,
    eps_high=10.0,
    per_decade=3,
    mechanisms=("smooth_em", "permute_flip"),
    n_estimators=(10,),
    depths=("theorem2",),  # the paper's forest: a proven and a withdrawn label mechanism
    folds=2,
    # ... and its uniform split points: one structure for every ε, so that the page's
    # choices do not hang on the noise of a split histogram per rung.
    presets={"fletcher_islam": {"split_points": "uniform"}},
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


def dataset_frame(name: str) -> pd.DataFrame:
    """A real dataset (``name.csv`` or the bundled ``name.csv.gz``) as read_csv reads it."""
    return read_dataset(name)


def reference_path(name: str) -> Path:
    """The package's copy of a published-numbers table (dpviz/reference)."""
    path = reference_file(name)
    assert path is not None, f"dpviz/reference/{name} is missing from the package"
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
