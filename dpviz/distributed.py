"""Training and sweeping on Dask, for data that does not fit one process.

The trees do not depend on the data, so every partition routes its own records and
returns a small table of per-leaf class counts; the tables add up leaf by leaf and
the leaf mechanism runs once on the sums, with secret noise drawn on the driver.
Disjoint data per tree uses a keyed hash of each record, so no global shuffle is
needed: the structure, the assignment and the counts equal the in-memory fit with the
same ``random_state``, and so does the whole model when its noise is replayable.
"""

from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd

from dpviz.models.forest.estimator import DPRandomForestClassifier, LeafCounts, split_tables
from dpviz.models.forest.release import release_leaves
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodingReport, encode

# A task may fail on this many workers (a worker that dies while running it counts)
# before the run stops with an error: a bounded retry budget, never an endless loop.
ALLOWED_FAILURES = 3
# With no live worker for this long, the run stops (workers that die as they start).
WORKERLESS_SECONDS = 60.0


def _partition_counts(frame: pd.DataFrame, model: DPRandomForestClassifier):
    # One partition may hold no usable row (a file sorted by label, say): the rule
    # "some usable rows" is about the whole data and is checked on the sums.
    encoded = encode(frame, model.schema_, training=True, require_rows=False)
    if encoded.n_records == 0:
        empty = np.empty(0, dtype=np.int64)
        k = len(model.schema_.classes)
        none = LeafCounts(empty.astype(np.uint64), empty, empty, np.zeros((0, k), np.int64), [])
        return none, encoded.report
    # Node tables (for the leaf table's path rules) would only weigh down the transfer.
    return model.leaf_counts_of(encoded, model._split_seed, keep_nodes=False), encoded.report


def _partition_size(frame: pd.DataFrame, schema: Schema) -> int:
    return encode(frame, schema, training=True, require_rows=False).n_records


def _partition_tables(frame: pd.DataFrame, schema: Schema) -> np.ndarray:
    # TRUE class × value counts per feature for quantile split points: summed over the
    # partitions, then released once with noise by the model (never sent anywhere else).
    return split_tables(encode(frame, schema, training=True, require_rows=False), schema)


# pandas' words when a cell of a float64 column is text (the worker's parse of a partition).
_NOT_A_NUMBER = re.compile(r"could not convert string to float: ('.*?'|\".*?\")")


def _compute(tasks: list, source: str | None = None) -> list:
    """``dask.compute`` that ends: on a ``distributed`` cluster it stops with a clear
    error when a task failed on :data:`ALLOWED_FAILURES` workers or no worker has been
    alive for :data:`WORKERLESS_SECONDS`; a file that cannot be read is named."""
    import dask

    try:
        from distributed import KilledWorker, get_client, wait
    except ImportError:  # pragma: no cover - dask without distributed
        return list(dask.compute(*tasks))
    try:
        client = get_client()
    except ValueError:
        client = None
    try:
        if client is None:
            return list(dask.compute(*tasks))
        futures = client.compute(tasks)
        idle = 0.0
        try:
            while True:
                try:
                    wait(futures, timeout=2)
                    break
                except TimeoutError:
                    workers = client.scheduler_info().get("workers", {})
                    idle = 0.0 if workers else idle + 2
                    if idle >= WORKERLESS_SECONDS:
                        raise ValueError(
                            f"no Dask worker has been alive for {WORKERLESS_SECONDS:.0f} s: "
                            "they die as they start (memory limit? missing packages?); fix "
                            "the workers or train without --scheduler / --local-cluster"
                        ) from None
            return client.gather(futures)
        finally:
            client.cancel(futures)
    except KilledWorker as exc:
        raise ValueError(
            f"Dask workers kept dying: a task failed on {ALLOWED_FAILURES} workers ({exc}); "
            "the run stopped and wrote nothing — check the workers' memory and retry"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        where = f"{source}: " if source else ""
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{where}cannot be read as CSV ({message}); fix that line (every row needs the "
            "header's fields) or save the file as UTF-8 CSV"
        ) from None
    except ValueError as exc:
        text = _NOT_A_NUMBER.search(str(exc))
        if text is None:
            raise
        where = f"{source}: " if source else ""
        raise ValueError(
            f"{where}a column the schema declares continuous holds text ({text.group(1)}); "
            "fix that cell, leave it empty (a missing value), or declare the column discrete"
        ) from None


def fit_dask(
    model: DPRandomForestClassifier, ddf, schema: Schema, data_path: str | None = None
) -> DPRandomForestClassifier:
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
    before = _file_state(data_path)
    model.schema_ = schema
    model.n_features_in_ = len(schema.features)
    model.classes_ = np.asarray(schema.classes, dtype=object)
    parts = ddf.to_delayed()
    n_records = 0
    if model.reads_record_count() and not model.declared_n:
        # The jpw and records rules need a (noisy) record count first: one more pass over the data.
        sizes = _compute([dask.delayed(_partition_size)(p, schema) for p in parts], data_path)
        n_records = int(sum(sizes))
    tables = None
    if model._split_epsilon() > 0:
        # Quantile split points: the features' class tables first, one more pass.
        parts_tables = [dask.delayed(_partition_tables)(p, schema) for p in parts]
        tables = np.sum(_compute(parts_tables, data_path), axis=0)
    source = model._release_source(0)
    model._prepare(n_records, source, tables=tables)
    results = _compute([dask.delayed(_partition_counts)(p, model) for p in parts], data_path)
    counts = [c for c, _ in results]
    report = _sum_reports([r for _, r in results])
    if report.rows_in == 0:
        raise ValueError(f"{data_path or 'the data'} has a header but no data rows")
    if report.rows_used == 0:
        # The same rule, and the same message, as the in-memory fit: on the whole data.
        raise ValueError(
            "no usable rows are left after dropping rows: " + "; ".join(report.messages())
        )
    if _file_state(data_path) != before:
        # Partitions read before and after a change would mix two files (a truncated
        # file gave a model of 1.46 M of its 5 M rows): nothing is released.
        raise ValueError(
            f"{data_path} changed while it was being read (its size or time changed); "
            "nothing was written — train again once the file is complete"
        )
    model.encoding_report_ = report
    model._add_counts([LeafCounts.combine(counts, len(schema.classes))], report.rows_used)
    release_leaves(model, source)
    model.fit_seconds_ = time.perf_counter() - start
    return model


def _file_state(path: str | None) -> tuple[int, int] | None:
    """A data file's size and modification time (None for a folder or no path)."""
    if path is None or not Path(path).is_file():
        return None
    stat = Path(path).stat()
    return stat.st_size, stat.st_mtime_ns


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

    where = Path(path)
    if not where.exists():
        raise ValueError(f"file {str(path)!r} does not exist; check the path")
    if str(path).endswith((".parquet", ".pq")) or where.is_dir():
        return dd.read_parquet(path)
    with where.open("rb") as stream:  # the start only: the file is never read whole here
        start = stream.read(65536)
    if not start.strip():
        raise ValueError(f"{str(path)!r} is empty: it needs a header row and data rows")
    dtypes = {f.name: "float64" for f in schema.continuous}
    dtypes.update({f.name: str for f in schema.discrete})
    dtypes[schema.label] = str
    try:
        return dd.read_csv(
            path, dtype=dtypes, keep_default_na=False, na_values=[""], blocksize=blocksize
        )
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        message = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{str(path)!r} cannot be read as CSV ({message}); every row needs the header's "
            "fields, and the file must be UTF-8 text"
        ) from None


LOCAL_WORKER_ENV = {"MALLOC_TRIM_THRESHOLD_": 2**28, "MALLOC_MMAP_THRESHOLD_": 2**25}


def local_worker_config() -> dict[str, int]:
    """Dask settings that start worker processes with :data:`LOCAL_WORKER_ENV`."""
    return {f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in LOCAL_WORKER_ENV.items()}


def locked_down_config(dashboard: bool = False) -> dict:
    """Dask settings for a local cluster: a bounded retry budget and, unless a dashboard
    is asked for, HTTP servers that serve no route (the scheduler always listens on
    one; with no route it shows nothing, not even task names)."""
    config = {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}
    if not dashboard:
        config["distributed.scheduler.http.routes"] = []
        config["distributed.worker.http.routes"] = []
    return config


def _quiet_worker_log() -> None:
    logging.getLogger("distributed.worker").setLevel(logging.CRITICAL)


@contextmanager
def dask_client(
    scheduler: str | None = None,
    local_cluster: int | None = None,
    *,
    dashboard: bool = False,
    start_timeout: float = WORKERLESS_SECONDS,
):
    """A ``distributed.Client``: to a running scheduler, or a new local cluster of
    ``local_cluster`` worker processes on loopback (127.0.0.1 only; no dashboard unless
    ``dashboard``, then on 127.0.0.1:8787); closed on exit. A local cluster whose workers
    do not start within ``start_timeout`` seconds is a ``ValueError``."""
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
    with dask.config.set({**local_worker_config(), **locked_down_config(dashboard)}):
        try:
            cluster = LocalCluster(
                n_workers=local_cluster,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                # Without a dashboard the scheduler still opens an HTTP port: a random
                # one on loopback, serving no route.
                dashboard_address="127.0.0.1:8787" if dashboard else "127.0.0.1:0",
                worker_dashboard_address=None,
                scheduler_kwargs={"dashboard": dashboard},
            )
        except (RuntimeError, OSError, TimeoutError) as exc:
            raise ValueError(
                f"the local Dask cluster did not start ({exc}); try fewer workers or train "
                "without --local-cluster"
            ) from None
        client = Client(cluster)
        try:
            try:
                client.wait_for_workers(1, timeout=start_timeout)
            except TimeoutError:
                raise ValueError(
                    f"no Dask worker started within {start_timeout:.0f} s; try fewer workers "
                    "or train without --local-cluster"
                ) from None
            # A worker logs a failed task with its traceback on the terminal; the command
            # says it once, in dpviz's words.
            client.run(_quiet_worker_log)
            yield client
        finally:
            client.close()
            cluster.close()
