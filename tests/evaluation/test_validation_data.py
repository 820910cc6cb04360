"""The validation group of issue 28 (data/validation): every file listed, readable by dpviz,
intact, and none of them a copy of a shared development set."""

from __future__ import annotations

import gzip
import hashlib
import re
from pathlib import Path

import pandas as pd
import pytest

from dpviz.evaluation import resources
from dpviz.evaluation.defaults import ALGORITHM as DEFAULT_ALGORITHM
from dpviz.tabular.encode import read_csv

ROOT = Path(__file__).resolve().parent.parent.parent
FOLDER = ROOT / "data" / "validation"
MANIFEST = FOLDER / "MANIFEST.md"
# The 11 shared development sets and their row counts (../shared/datasets/MANIFEST.md). The
# validation group must not repeat any of them; the folder is not always beside the
# clone, so their shapes are written here.
SHARED = {
    "adult": 45_222,
    "mushroom": 8_124,
    "nursery": 12_960,
    "magic_gamma": 19_020,
    "pendigits": 10_992,
    "wall_robot": 5_456,
    "votes": 435,
    "tic_tac_toe": 958,
    "car": 1_728,
    "abalone": 4_177,
    "bank_marketing": 45_211,
}


def _files() -> list[Path]:
    return sorted(FOLDER.glob("*.csv.gz"))


def _checksums() -> dict[str, str]:
    text = MANIFEST.read_text(encoding="utf-8")
    return {
        name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\w+\.csv)$", text, re.M)
    }


def _header_and_rows(path: Path) -> tuple[list[str], int]:
    """Column names and data-row count of a CSV (plain or gzip), without parsing cells:
    the shared files are large and only their shape is compared."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    lines = raw.rstrip(b"\n").split(b"\n")
    return [c.strip() for c in lines[0].decode("utf-8-sig").split(",")], len(lines) - 1


def test_the_manifest_lists_every_file_with_its_checksum_and_licence():
    files = _files()
    assert len(files) >= 8, "issue 28 asks for at least 8 validation sets"
    listed = _checksums()
    assert set(listed) == {p.name[: -len(".gz")] for p in files}
    text = MANIFEST.read_text(encoding="utf-8")
    for path in files:
        name = path.name[: -len(".csv.gz")]
        assert f"`{path.name}`" in text, f"{path.name} has no summary row"
        section = text.split(f"\n### {name} ")[1].split("\n### ")[0]
        assert "**Licence:**" in section and "**Package:**" in section, name
        raw = gzip.decompress(path.read_bytes())
        assert hashlib.sha256(raw).hexdigest() == listed[f"{name}.csv"], name


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_each_file_loads_with_the_dpviz_reader(path):
    frame = read_csv(gzip.decompress(path.read_bytes()))
    assert frame.columns[-1] == "label"
    assert frame["label"].nunique() >= 2
    assert not frame.isna().any().any(), "the format has no empty cells"
    assert frame.attrs.get("read_notes", []) == [], "nothing rewritten on reading"
    # Not one of the shared sets: no shared set has this row count, or if one does,
    # the header differs from that set's (checked below when the shared files are here).
    assert len(frame) not in SHARED.values(), f"{path.name} has a shared set's row count"


def test_no_validation_set_equals_a_shared_set():
    """Compared with the shared files themselves where they exist (the bundled data/uci and
    ../shared/datasets): neither the header nor the row count may match."""
    shared = {}
    for name in SHARED:
        found = resources.dataset_file(name)
        if found is not None:
            shared[name] = _header_and_rows(found)
    # data/uci is part of the repository: at least its six sets are always compared.
    assert {"adult", "mushroom", "nursery", "magic_gamma", "pendigits", "wall_robot"} <= set(
        shared
    )
    for name, (_, rows) in shared.items():
        assert rows == SHARED[name], name
    for path in _files():
        header, rows = _header_and_rows(path)
        assert header[-1] == "label"
        for name, (shared_header, shared_rows) in shared.items():
            assert header != shared_header and rows != shared_rows, (path.name, name)


# --- bench/bench_utility.py: the two groups reported apart ------------------------------


def _bench():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "bench_utility", ROOT / "bench" / "bench_utility.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _results(bench, group: str, accuracy: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Two folds of made-up scores at ε = 0.1 for (dataset, method) → accuracy; the
    datasets named ``bin*`` are binary, the AUC is the accuracy (as a rate)."""
    rows = []
    for (name, method), acc in accuracy.items():
        for fold in (0, 1):
            rows.append(
                {
                    "group": group,
                    "seed": 3,
                    "dataset": name,
                    "n_rows": 500,
                    "n_classes": 2 if name.startswith("bin") else 3,
                    "fold": fold,
                    "method": method,
                    "private": True,
                    "epsilon": 0.1,
                    "accuracy": acc / 100,
                    "macro_f1": acc / 100,
                    "auc": acc / 100,
                    "majority_accuracy": 0.5,
                    "majority_macro_f1": 0.3,
                    "majority_auc": 0.5,
                    "error": "",
                }
            )
    return pd.DataFrame(rows).reindex(columns=list(bench.COLUMNS))


def test_the_forest_is_scored_against_the_best_diffprivlib_model_per_set():
    """Wins / ties / losses against the best of the four diffprivlib models, a tie within
    TIE_POINTS, and issue 28's check: at least 75% of the validation sets (3 of 4 here)."""
    bench = _bench()
    forest = DEFAULT_ALGORITHM
    scores = {
        ("bin_a", forest): 80.0,
        ("bin_a", "diffprivlib_rf"): 70.0,
        ("bin_a", "diffprivlib_gnb"): 79.0,  # the best peer: forest wins by 1 point
        ("bin_b", forest): 60.0,
        ("bin_b", "diffprivlib_rf"): 60.4,  # behind by 0.4: a tie, but not ≥
        ("tri_c", forest): 40.0,
        ("tri_c", "diffprivlib_dt"): 45.0,  # a loss
        ("tri_d", forest): 50.0,
        ("tri_d", "diffprivlib_lr"): 50.0,  # equal: a tie and ≥
    }
    results = _results(bench, "validation", scores)
    table = bench.versus_diffprivlib(results, 0.1).set_index("dataset")
    assert table.loc["bin_a", "best_peer"] == "diffprivlib_gnb"
    assert table.verdict.to_dict() == {
        "bin_a": "win",
        "bin_b": "tie",
        "tri_c": "loss",
        "tri_d": "tie",
    }
    assert table.loc["tri_c", "delta"] == pytest.approx(-5.0)
    checks = {c["check"]: c for c in bench.group_checks(results, "validation")}
    verdict = checks[f"{forest} at ε=0.1: accuracy ≥ best diffprivlib on ≥ 3 of 4 validation sets"]
    assert verdict["result"] == "FAIL" and "≥ on 2 of 4" in verdict["detail"]
    # Mean binary AUC: forest (80 + 60) / 2 = 70 against RF (70 + 60.4) / 2 = 65.2.
    auc = checks[f"{forest} at ε=0.1: mean binary AUC ≥ diffprivlib RF"]
    assert auc["result"] == "PASS" and auc["detail"].startswith("70.0 (n=2) vs 65.2 (n=2)")
    assert checks[f"{forest} at ε=0.1: mean binary AUC ≥ DP-EBM (δ = 10⁻⁵)"]["result"] == "N/A"
    summary = bench.summary_markdown(results)
    assert "| validation | 3 | 0.1 | 1 / 2 / 1 | 2 of 4 | 70.0 (n=2) | 65.2 (n=2) | – |" in summary


def test_groups_and_seeds_are_reported_apart():
    bench = _bench()
    forest = DEFAULT_ALGORITHM
    shared = _results(
        bench, "shared", {("bin_a", forest): 90.0, ("bin_a", "diffprivlib_rf"): 50.0}
    )
    held_out = _results(
        bench, "validation", {("bin_z", forest): 10.0, ("bin_z", "diffprivlib_rf"): 50.0}
    )
    text = bench.report_markdown(pd.concat([shared, held_out]))
    first, second = text.split("## validation group")
    assert "## shared group (1 datasets), seed 3" in first and "bin_z" not in first
    assert "bin_a" not in second and "| 0.1 | 0 / 0 / 1 | -40.0 |" in second
    # A CSV from before issue 28 has neither column: the group follows from the name.
    old = shared.drop(columns=["group", "seed"]).assign(dataset="taxi")
    assert set(bench.normalise(old, seed=1)[["group", "seed"]].itertuples(index=False)) == {
        ("validation", 1)
    }


def test_the_validation_group_loads_from_the_compressed_files():
    bench = _bench()
    assert bench.validation_datasets() == tuple(p.name[: -len(".csv.gz")] for p in _files())
    data = bench.load_dataset("penguins", bench.VALIDATION_DIR, group="validation")
    assert data.group == "validation" and len(data.y) == 333 and data.n_classes == 3
    with pytest.raises(ValueError, match=r"nope.csv \(or .csv.gz\) is missing"):
        bench.load_dataset("nope", bench.VALIDATION_DIR)
