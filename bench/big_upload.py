"""A 150 MB upload through the functions the Data and Train pages call (issue 17).

    python bench/big_upload.py make /tmp/big.csv      # 3.3 M rows, 157 MB (not committed)
    python bench/big_upload.py make /tmp/50k.csv 50000  # the browser benchmark's upload
    /usr/bin/time -v python bench/big_upload.py run /tmp/big.csv [--sklearn]

``make`` writes 8 continuous columns (one decimal, 0–10), 6 discrete ones (2–6 letters)
and a yes/no label from a noisy nonlinear score. ``run`` times each step the pages take
on an upload (read, label guess, column table, schema choices, data report, then Train
with the page's defaults: 3 folds, the non-private forest; ``--sklearn`` ticks
scikit-learn's reference too) and prints the accuracies. Peak RSS
of the joblib workers is not in ``time -v``'s figure: sum the process tree to get it.
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
import pandas as pd

from dpviz.app import data as app_data
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.sweep import sklearn_default


def make(path: str, n: int = 3_300_000) -> None:
    rng = np.random.default_rng(17)
    x = np.round(rng.uniform(0, 10, size=(n, 8)), 1)
    d = rng.integers(0, [3, 4, 5, 2, 6, 3], size=(n, 6))
    score = (x[:, 0] - 5) * 0.6 + np.sin(x[:, 1]) * 1.5 + (x[:, 2] > 7) * 1.2
    score -= (x[:, 3] < 2) * 1.0
    score += np.array([0.0, 0.8, -0.8])[d[:, 0]] + np.array([0, 0.5, -0.5, 1.0])[d[:, 1]]
    score += rng.normal(0, 1.2, n)
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(8)])
    for j in range(6):
        frame[f"d{j}"] = np.array(list("abcdef"))[d[:, j]]
    frame["label"] = np.where(score > 0.3, "yes", "no")
    frame.to_csv(path, index=False, float_format="%.1f")


def run(path: str) -> None:
    start = last = time.perf_counter()

    def step(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"{name:26s} {now - last:6.1f} s  (total {now - start:6.1f} s, peak {peak:.2f} GB)")
        last = now

    with open(path, "rb") as file:
        upload = app_data.read_upload(path, file.read())
    step("read_upload")
    workspace = app_data.UploadWorkspace(upload, file_id="bench")
    label = support.guess_label(upload.frame, list(app_data.suggest_drops(upload.frame)))
    app_data.column_table(
        upload.frame, label, workspace.drops(label), workspace.suggestions(label)
    )
    frame = app_data.working_frame(upload, workspace, label)
    app_data.suspects(frame, workspace.numbers)
    step("label, columns, suspects")
    choice = app_data.choose_schema(frame, label)
    app_data.declaration_prompt(choice.schema, frame, choice.filled)
    choice = app_data.choose_schema(frame, label, declared_public=True)
    prepared = app_data.prepare(upload, choice, workspace)
    step("schema choices")
    app_data.data_report(prepared)
    step("data report")
    # The page's defaults: scikit-learn's reference starts unticked on large data.
    sklearn = "--sklearn" in sys.argv or sklearn_default(len(prepared.frame))
    settings = app_train.TrainSettings(folds=3, seed=0, sklearn_reference=sklearn)
    result = app_train.train(prepared, settings)
    step("train")
    for series in result.series:
        row = result.row(series)
        mean, std = 100 * row["accuracy_mean"], 100 * row["accuracy_std"]
        print(f"{series}: accuracy {mean:.1f} ± {std:.1f}")
    print(app_train.run_caption(result))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], *(int(n) for n in sys.argv[3:4]))
    else:
        run(sys.argv[2])
