"""The papers' numbers ship in the package; the real datasets are bundled under data/uci."""

import gzip
import hashlib
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest

from dpviz.app import teach as app_teach
from dpviz.cli import main
from dpviz.evaluation import resources as resources
from dpviz.evaluation.reproduce import REAL_DATASETS, reference_rows

ROOT = Path(__file__).resolve().parent.parent.parent
MANIFEST = ROOT / "data" / "uci" / "MANIFEST.md"


def test_reference_tables_load_from_the_package():
    for name in resources.REFERENCE_FILES:
        path = resources.reference_file(name)
        assert path is not None and path.parent == ROOT / "dpviz" / "reference"
        assert len(pd.read_csv(path)) >= 33  # 21 + 12 printed values, or more
    assert len(reference_rows(None, "4")) == 14  # SynthA–G × two series
    assert app_teach.reference_csv() == resources.reference_file("mechanism_tables.csv")
    assert "All 21 printed values" in app_teach.agreement(app_teach.reference_csv())
    with pytest.raises(ValueError, match="unknown reference table"):
        resources.reference_file("nope.csv")


def test_the_reference_tables_are_package_data():
    """A non-editable install carries dpviz/reference/*.csv too."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "reference/*.csv" in config["tool"]["setuptools"]["package-data"]["dpviz"]
    assert config["project"]["scripts"]["dpviz"] == "dpviz.cli:main"
    # README's first command installs the package (and its console script).
    assert "-e ." in (ROOT / "requirements.txt").read_text().splitlines()


def test_bundled_datasets_match_the_manifest_checksums():
    listed = dict(
        (name, digest)
        for digest, name in re.findall(r"^([0-9a-f]{64})  (\w+\.csv)$", MANIFEST.read_text(), re.M)
    )
    assert set(listed) == {f"{n}.csv" for n in REAL_DATASETS.values()}
    for name, digest in listed.items():
        raw = gzip.decompress((ROOT / "data" / "uci" / f"{name}.gz").read_bytes())
        assert hashlib.sha256(raw).hexdigest() == digest, name
    assert "CC BY 4.0" in MANIFEST.read_text()


def test_datasets_fall_back_to_the_bundled_copy(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "SHARED_DATASETS", tmp_path / "absent")
    assert resources.default_datasets_dir() == resources.BUNDLED_DATASETS
    frame = resources.read_dataset("wall_robot")
    assert frame.shape == (5456, 5) and frame.columns[-1] == "label"
    assert frame["label"].value_counts()["Move-Forward"] == 2205
    with pytest.raises(ValueError, match="wall_robot.csv .*missing from .*--datasets-dir"):
        resources.read_dataset("wall_robot", tmp_path)


def test_reproduce_runs_outside_the_clone_without_shared(monkeypatch, tmp_path, capsys):
    """`reproduce` with no --reference / --datasets-dir, from another directory and with
    no ../shared: the package's numbers and the bundled data."""
    monkeypatch.setattr(resources, "SHARED_DATASETS", tmp_path / "absent")
    monkeypatch.chdir(tmp_path)
    code = main(["reproduce", "--figure", "4", "--folds", "2", "--generator-seeds", "1"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "| Fig4 | SynthA | smooth_em |" in out.out
    assert main(["reproduce", "--figure", "4", "--reference", str(tmp_path / "x.csv")]) == 2
    assert "x.csv is missing; pass --reference" in capsys.readouterr().err


def test_the_server_binds_to_localhost_and_readme_says_how_to_serve_on_a_network():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    assert "--server.address 0.0.0.0" in (ROOT / "README.md").read_text()
