"""Issue 17 on Dask: whole-data rules checked on the sums, read errors that name the
file, no dashboard unless asked, loopback only, and no hang when workers keep dying."""

from __future__ import annotations

import urllib.error
import urllib.request

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe", reason="dask is not installed")
distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")

import dask  # noqa: E402

import dpviz.distributed as dist  # noqa: E402
from dpviz import DPRandomForestClassifier, ReleasedForest  # noqa: E402
from dpviz.cli import main  # noqa: E402
from dpviz.distributed import dask_client, fit_dask, read_dask  # noqa: E402
from dpviz.evaluation.synthetic import make_synth  # noqa: E402


@pytest.fixture(scope="module")
def sorted_frame():
    """Text records whose first quarter has no label: the first partitions hold no
    usable row, yet the whole file trains."""
    frame, schema = make_synth("SynthF", 2000, seed=7)
    frame = frame.astype(str)
    frame.loc[: len(frame) // 4, "label"] = np.nan
    return frame, schema


def _model(schema):
    # ε = 0.5: below the floor's check (from ε = 1), which a distributed fit never runs.
    return DPRandomForestClassifier(
        0.5, n_estimators=10, schema=schema, random_state=1, noise_seed=2
    )


def test_partitions_without_labels_train_the_same_model(sorted_frame):
    frame, schema = sorted_frame
    labelled = frame.dropna(subset=["label"])
    memory = _model(schema).fit(labelled.drop(columns="label"), labelled["label"])
    with dask.config.set(scheduler="synchronous"):
        ddf = dd.from_pandas(frame, npartitions=8)
        first = ddf.partitions[0].compute()
        assert first["label"].isna().all()  # the case of the issue
        fitted = fit_dask(_model(schema), ddf, schema)
    assert (
        ReleasedForest.from_estimator(fitted).to_json()
        == ReleasedForest.from_estimator(memory).to_json()
    )
    assert fitted.encoding_report_.missing_label == frame["label"].isna().sum()


def test_no_usable_row_anywhere_is_the_in_memory_message(sorted_frame):
    frame, schema = sorted_frame
    frame = frame.assign(label=np.nan)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="no usable rows are left after dropping rows"):
            fit_dask(_model(schema), dd.from_pandas(frame, npartitions=4), schema)


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        pytest.param(None, "does not exist", id="missing"),
        pytest.param("", "is empty", id="empty"),
        pytest.param("\n\n  \n", "is empty", id="blank"),
    ],
)
def test_read_errors_name_the_file(tmp_path, sorted_frame, text, phrase):
    _, schema = sorted_frame
    path = tmp_path / "d.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=phrase) as info:
        read_dask(str(path), schema)
    assert "d.csv" in str(info.value)


def test_ragged_file_is_one_clear_error(tmp_path, sorted_frame):
    frame, schema = sorted_frame
    text = frame.head(50).to_csv(index=False).splitlines()
    text[30] += ",1,2,3"
    path = tmp_path / "ragged.csv"
    path.write_text("\n".join(text) + "\n")
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="ragged.csv.*cannot be read as CSV"):
            fit_dask(_model(schema), read_dask(str(path), schema), schema, data_path=str(path))


def test_cli_header_only_file_on_a_cluster_is_one_line(tmp_path, sorted_frame, capsys):
    frame, schema = sorted_frame
    (tmp_path / "h.csv").write_text(",".join(frame.columns) + "\n")
    (tmp_path / "s.json").write_text(schema.to_json())
    argv = ["train", "--data", str(tmp_path / "h.csv"), "--label", "label", "--schema"]
    argv += [str(tmp_path / "s.json"), "--epsilon", "1", "--local-cluster", "1"]
    assert main([*argv, "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.rstrip().splitlines()[-1].endswith("has a header but no data rows")
    assert not (tmp_path / "m.json").exists()


def test_local_cluster_is_loopback_without_a_dashboard():
    with dask_client(local_cluster=1) as client:
        info = client.scheduler_info()
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        assert all(w.startswith("tcp://127.0.0.1:") for w in info["workers"])
        port = info["services"].get("dashboard")
        for path in ("/status", "/info/main/workers.html", "/json/counts.json"):
            with pytest.raises(urllib.error.HTTPError) as failed:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5)
            assert failed.value.code == 404


def test_workers_that_never_start_give_an_error_not_a_hang():
    with pytest.raises(ValueError, match="no Dask worker started within 2 s"):
        with dask_client(local_cluster=0, start_timeout=2):
            pass


def test_workers_that_all_die_stop_the_fit(monkeypatch, sorted_frame):
    frame, schema = sorted_frame
    monkeypatch.setattr(dist, "WORKERLESS_SECONDS", 4.0)
    with dask.config.set(dist.locked_down_config()):
        cluster = distributed.LocalCluster(
            n_workers=0,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": False},
        )
    try:
        with distributed.Client(cluster):
            with pytest.raises(ValueError, match="no Dask worker has been alive for 4 s"):
                fit_dask(_model(schema), dd.from_pandas(frame, npartitions=2), schema)
    finally:
        cluster.close()


def _cli_train(tmp_path, frame, schema, name: str) -> list[str]:
    data, schema_path = tmp_path / name, tmp_path / "schema.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(schema.to_json())
    return ["train", "--data", str(data), "--label", "label", "--schema", str(schema_path)]


def test_text_in_a_number_column_on_a_cluster_is_dpviz_words_without_tracebacks(tmp_path, capfd):
    """Text in a continuous column on a local cluster: one line in dpviz's words, and no
    worker traceback on the terminal (capfd sees the worker processes' stderr too)."""
    frame, schema = make_synth("SynthF", 400, seed=3)
    frame = frame.astype(str)
    name = schema.continuous[0].name
    frame.loc[200, name] = "about 2"
    argv = _cli_train(tmp_path, frame, schema, "text.csv")
    out = ["--epsilon", "1", "--local-cluster", "1", "--out", str(tmp_path / "m.json")]
    assert main([*argv, *out]) == 2
    err = capfd.readouterr().err
    assert "declares continuous holds text ('about 2')" in err
    assert "Traceback" not in err and "could not convert" not in err
    assert not (tmp_path / "m.json").exists()


def test_a_file_that_changes_during_a_cluster_fit_releases_nothing(tmp_path, monkeypatch):
    """The file's size and time are read before and after the passes: a file truncated
    (or rewritten) in between stops the fit instead of releasing a model of part of it."""
    frame, schema = make_synth("SynthF", 2000, seed=5)
    path = tmp_path / "d.csv"
    frame.astype(str).to_csv(path, index=False)
    model = _model(schema)
    passes = dist._compute

    def truncate_after_first_pass(tasks, source=None):
        result = passes(tasks, source)
        with open(path, "r+b") as stream:
            stream.truncate(path.stat().st_size // 2)
        return result

    monkeypatch.setattr(dist, "_compute", truncate_after_first_pass)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="changed while it was being read"):
            fit_dask(model, read_dask(str(path), schema), schema, data_path=str(path))
