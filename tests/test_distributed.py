"""Dask: the distributed fit equals the in-memory fit; sweeps run as cluster tasks."""

import dataclasses
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask is not installed")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")

from dpviz import DPRandomForestClassifier, PrivateRDTClassifier, ReleasedForest  # noqa: E402
from dpviz.cli import main  # noqa: E402
from dpviz.distributed import dask_client, fit_dask  # noqa: E402
from dpviz.evaluation.sweep import SweepGrid, run_sweep  # noqa: E402
from dpviz.evaluation.synthetic import make_synth  # noqa: E402
from dpviz.privacy.schema import DECLARED_BY_SCHEMA_OPTION  # noqa: E402
from dpviz.tabular.encode import encode  # noqa: E402


@pytest.fixture(scope="module")
def text_frame():
    frame, schema = make_synth("SynthF", 6000, seed=4)
    # Both paths read the same text, as a CSV would give them.
    return frame.astype(str), schema


@pytest.fixture(scope="module")
def cluster():
    with dask_client(local_cluster=2) as client:
        yield client


@pytest.mark.parametrize("partitions", [1, 5])
@pytest.mark.parametrize(
    "make",
    [
        # ε = 0.5: below the floor's check (from ε = 1), which a distributed fit never runs.
        lambda s: DPRandomForestClassifier(
            0.5, n_estimators=30, schema=s, random_state=2, noise_seed=5
        ),
        lambda s: PrivateRDTClassifier(schema=s, random_state=2, noise_seed=5),
    ],
)
def test_distributed_fit_equals_in_memory(text_frame, partitions, make):
    frame, schema = text_frame
    memory = make(schema).fit(frame.drop(columns="label"), frame["label"])
    import dask

    with dask.config.set(scheduler="synchronous"):
        dist = fit_dask(make(schema), dd.from_pandas(frame, npartitions=partitions), schema)
    assert (
        ReleasedForest.from_estimator(memory).to_json()
        == ReleasedForest.from_estimator(dist).to_json()
    )
    assert dist.encoding_report_.rows_used == len(frame)


def test_hash_assignment_is_disjoint_and_balanced(text_frame):
    frame, schema = text_frame
    model = DPRandomForestClassifier(n_estimators=20, schema=schema, random_state=0)
    model.fit(frame.drop(columns="label"), frame["label"])
    per_tree = np.bincount(model.leaf_tree_, weights=model.leaf_counts_.sum(axis=1))
    assert per_tree.sum() == len(frame)  # every record in exactly one tree
    # Binomial(6000, 1/20): mean 300, sd ≈ 17; ±6 sd.
    assert np.abs(per_tree - 300).max() < 6 * 17


def test_fit_on_a_process_cluster(text_frame, cluster):
    frame, schema = text_frame
    # Uniform split points: the structure is public (quantile ones follow secret noise).
    kw = dict(n_estimators=10, schema=schema, random_state=1, split_points="uniform")
    memory = DPRandomForestClassifier(**kw)
    memory.fit(frame.drop(columns="label"), frame["label"])
    dist = fit_dask(
        DPRandomForestClassifier(**kw),
        dd.from_pandas(frame, npartitions=4),
        schema,
    )
    # Secret noise: the same public structure, assignment and counts, fresh leaf noise.
    assert np.array_equal(memory.leaf_keys_, dist.leaf_keys_)
    assert np.array_equal(memory.leaf_counts_, dist.leaf_counts_)
    assert dist.ledger_.private


def test_sweep_on_cluster_equals_local(text_frame, cluster):
    frame, schema = text_frame
    encoded = encode(frame, schema)
    grid = SweepGrid(epsilons=[0.1, 1.0], n_estimators=[10], references=False)
    local = run_sweep(encoded, schema, grid, folds=3, noise_seed=1).results
    seen = []
    remote = run_sweep(
        encoded,
        schema,
        grid,
        folds=3,
        noise_seed=1,
        client=cluster,
        progress=lambda d, t, m: seen.append(d),
    ).results
    cols = ["repeat", "fold", "epsilon", "accuracy", "auc", "flipped_leaf_pct"]
    assert local[cols].equals(remote[cols])
    assert seen == [1, 2, 3]


def test_killed_worker_is_retried_or_fails_loudly(text_frame, cluster):
    """Kill a worker process while folds run: the folds are re-run (the result equals
    the local sweep) or the sweep raises a clear error — never a silent partial result."""
    frame, schema = text_frame
    encoded = encode(frame, schema)
    grid = SweepGrid(
        epsilons=list(np.logspace(-2, 1, 8)), n_estimators=[50, 100], references=False
    )
    expected = run_sweep(encoded, schema, grid, folds=4, noise_seed=1).results
    outcome = {}

    def sweep():
        try:
            outcome["result"] = run_sweep(
                encoded, schema, grid, folds=4, client=cluster, noise_seed=1
            ).results
        except ValueError as exc:
            outcome["error"] = str(exc)

    thread = threading.Thread(target=sweep)
    thread.start()
    deadline = time.time() + 30
    while time.time() < deadline and not any(cluster.processing().values()):
        time.sleep(0.05)
    busy = [addr for addr, tasks in cluster.processing().items() if tasks]
    pids = cluster.run(os.getpid)
    os.kill(pids[busy[0] if busy else next(iter(pids))], signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive()
    if "error" in outcome:
        assert "worker died" in outcome["error"] and "no partial result" in outcome["error"]
    else:
        cols = ["repeat", "fold", "epsilon", "n_estimators", "accuracy"]
        assert outcome["result"][cols].equals(expected[cols])


def test_cli_train_on_local_cluster(tmp_path, capsys, text_frame):
    frame, schema = text_frame
    frame.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.json").write_text(schema.to_json())
    args = [
        "train",
        "--data",
        str(tmp_path / "d.csv"),
        "--label",
        "label",
        "--schema",
        str(tmp_path / "s.json"),
        "--epsilon",
        "0.5",  # below the floor's check, which a distributed fit never runs
        "--trees",
        "10",
        "--noise-seed",
        "3",
    ]
    assert main([*args, "--local-cluster", "2", "--out", str(tmp_path / "a.json")]) == 0
    # A --schema file is declared public in the CLI's fixed words, on either path.
    declared = dataclasses.replace(schema, declaration=DECLARED_BY_SCHEMA_OPTION)
    memory = DPRandomForestClassifier(
        0.5, n_estimators=10, schema=declared, random_state=0, noise_seed=3
    )
    memory.fit(pd.read_csv(tmp_path / "d.csv", dtype=str).drop(columns="label"), frame["label"])
    assert (tmp_path / "a.json").read_text() == ReleasedForest.from_estimator(memory).to_json()
    capsys.readouterr()
    no_schema = [
        "train",
        "--data",
        str(tmp_path / "d.csv"),
        "--label",
        "label",
        "--epsilon",
        "1",
        "--local-cluster",
        "2",
        "--out",
        str(tmp_path / "b.json"),
    ]
    assert main(no_schema) == 2
    assert "needs a public schema" in capsys.readouterr().err
