"""Training and sweeping on Dask, for data that does not fit one process.

The trees do not depend on the data, so every partition routes its own records and
returns a small table of per-leaf class counts; the tables add up leaf by leaf and
the leaf mechanism runs once on the sums, with secret noise drawn on the driver.
Disjoint data per tree uses a keyed hash of each record, so no global shuffle is
needed: the structure, the assignment and the counts equal the in-memory fit with the
same ``random_state``, and so does the whole model when its noise is replayable.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from .data import EncodingReport, encode
from .forest import DPRandomForestClassifier, LeafCounts
from .schema import Schema


def _partition_counts(frame: pd.DataFrame, model: DPRandomForestClassifier):
    encoded = encode(frame, model.schema_, training=True)
    # Node tables (for the leaf table's path rules) would only weigh down the transfer.
    return model.leaf_counts_of(encoded, model._split_seed, keep_nodes=False), encoded.report


def _partition_size(frame: pd.DataFrame, schema: Schema) -> int:
    return encode(frame, schema, training=True).n_records


def fit_dask(model: DPRandomForestClassifier, ddf, schema: Schema) -> DPRandomForestClassifier:
    """Fit ``model`` on a ``dask.dataframe.DataFrame`` (features and the label column).

    The result has the same leaves and counts as ``model.fit`` on the same records in
    memory (and the same released outputs when ``noise_seed`` makes the noise
    replayable). Runs on the current Dask scheduler (a ``distributed.Client`` if one is
    active).
    """
    import dask

    model._validate_params()
    if schema.inferred:
        raise ValueError(
            "a distributed fit needs a public schema (--schema); inferring one "
            "would read the whole data without noise"
        )
    start = time.perf_counter()
    model.schema_ = schema
    model.n_features_in_ = len(schema.features)
    model.classes_ = np.asarray(schema.classes, dtype=object)
    parts = ddf.to_delayed()
    n_records = 0
    if model.depth == "jpw" and not model.declared_n:
        # The jpw rule needs a (noisy) record count first: one more pass over the data.
        sizes = dask.compute(*[dask.delayed(_partition_size)(p, schema) for p in parts])
        n_records = int(sum(sizes))
    source = model._release_source(0)
    model._prepare(n_records, source)
    results = dask.compute(*[dask.delayed(_partition_counts)(p, model) for p in parts])
    counts = [c for c, _ in results]
    report = _sum_reports([r for _, r in results])
    model.encoding_report_ = report
    model._add_counts([LeafCounts.combine(counts, len(schema.classes))], report.rows_used)
    model._release_leaves(source)
    model.fit_seconds_ = time.perf_counter() - start
    return model


def _sum_reports(reports: list[EncodingReport]) -> EncodingReport:
    total = EncodingReport()
    for r in reports:
        for name in ("rows_in", "rows_used", "missing_label", "unknown_label"):
            setattr(total, name, getattr(total, name) + getattr(r, name))
        for name in ("missing_continuous", "missing_discrete", "unknown_discrete", "clipped"):
            merged = getattr(total, name)
            for key, value in getattr(r, name).items():
                merged[key] = merged.get(key, 0) + value
    return total


def read_dask(path: str, schema: Schema, blocksize: str | int = "64MB"):
    """A (possibly larger than memory) CSV or Parquet file as a Dask DataFrame.

    Continuous columns are parsed as numbers while reading (as the schema says) and
    every other column as text, so that a partition needs no second conversion pass.
    """
    import dask.dataframe as dd

    if str(path).endswith((".parquet", ".pq")) or Path(path).is_dir():
        return dd.read_parquet(path)
    dtypes = {f.name: "float64" for f in schema.continuous}
    dtypes.update({f.name: str for f in schema.discrete})
    dtypes[schema.label] = str
    return dd.read_csv(
        path, dtype=dtypes, keep_default_na=False, na_values=[""], blocksize=blocksize
    )


LOCAL_WORKER_ENV = {"MALLOC_TRIM_THRESHOLD_": 2**28, "MALLOC_MMAP_THRESHOLD_": 2**25}


def local_worker_config() -> dict[str, int]:
    """Dask settings that start worker processes with :data:`LOCAL_WORKER_ENV`."""
    return {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in LOCAL_WORKER_ENV.items()}


@contextmanager
def dask_client(scheduler: str | None = None, local_cluster: int | None = None):
    """A ``distributed.Client``: to a running scheduler, or a new local cluster of
    ``local_cluster`` worker processes on loopback; closed on exit."""
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler, timeout="10s")
        try:
            yield client
        finally:
            client.close()
        return
    # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also pins glibc's
    # mmap threshold at 128 KiB: every partition-sized array is then a fresh mmap whose
    # pages fault in again, tripling the cost of counting a partition. Letting glibc
    # keep up to 256 MiB (arrays up to 32 MiB from the heap) costs little memory.
    with dask.config.set(local_worker_config()):
        cluster = LocalCluster(
            n_workers=local_cluster,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
