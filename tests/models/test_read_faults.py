"""Files that used to end in a traceback or a silent change, now read or refused in one
line: lone carriage returns as line breaks, a repeated column name past the header's
first 64 KB. Each file is generated here (tests/bad_inputs/README.md: no copied data)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpviz.app import data as app_data
from dpviz.cli import main
from dpviz.tabular.encode import read_csv

CR_ONLY = b"a,b,label\r1,2,x\r3,4,y\r5,6,x\r"


def test_lone_carriage_returns_are_line_breaks_with_a_note():
    frame = read_csv(CR_ONLY)
    assert list(frame.columns) == ["a", "b", "label"] and len(frame) == 3
    assert frame["label"].tolist() == ["x", "y", "x"]
    assert any("carriage return" in note for note in frame.attrs["read_notes"])
    # The Data page reads uploads the same way.
    upload = app_data.read_upload("mac.csv", CR_ONLY)
    assert len(upload.frame) == 3


def test_cli_info_reads_a_file_with_lone_carriage_returns(tmp_path, capsys):
    path = tmp_path / "mac.csv"
    path.write_bytes(CR_ONLY)
    assert main(["info", "--data", str(path), "--label", "label"]) == 0
    assert "carriage return" in capsys.readouterr().out


def test_a_repeated_name_past_the_first_64_kb_of_the_header_is_refused():
    names = [f"column_{i:06d}" for i in range(9_000)] + ["column_000005", "label"]
    assert len(",".join(names)) > 64 * 1024
    text = ",".join(names) + "\n" + ",".join("1" for _ in names) + "\n"
    with pytest.raises(ValueError, match="names column 'column_000005' twice"):
        read_csv(text.encode())


@pytest.mark.parametrize(
    ("low", "high", "words"),
    [(-1e308, 1e308, "too wide"), (0.0, 5e-324, "too narrow"), (1.0, 1.0 + 1e-13, "too narrow")],
)
def test_a_domain_floats_cannot_split_is_one_line_of_error(tmp_path, capsys, low, high, words):
    schema = tmp_path / "schema.json"
    schema.write_text(
        '{"label": "label", "classes": ["x", "y"], "features": '
        f'[{{"name": "a", "type": "continuous", "min": {low!r}, "max": {high!r}}}]}}'
    )
    data = tmp_path / "d.csv"
    data.write_text("a,label\n0.5,x\n0.25,y\n")
    argv = ["train", "--data", str(data), "--label", "label", "--schema", str(schema)]
    assert main([*argv, "--epsilon", "1", "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: feature 'a'") and words in err and "\n" not in err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("option", ["--data", "--schema", "--model"])
def test_a_device_as_input_is_read_no_further_than_the_limit(tmp_path, capsys, option):
    """/dev/zero reports a size of 0 and never ends: reading stops one byte past the
    limit and says so in one line."""
    data = tmp_path / "d.csv"
    data.write_text("a,label\n0.5,x\n0.25,y\n")
    paths = {"--data": str(data), "--schema": None, "--model": None, option: "/dev/zero"}
    if option == "--model":
        argv = ["predict", "--model", "/dev/zero", "--data", str(data)]
    else:
        argv = ["train", "--data", paths["--data"], "--label", "label", "--epsilon", "1"]
        argv += ["--schema", paths["--schema"]] if paths["--schema"] else []
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "larger than" in err and "\n" not in err


@pytest.mark.parametrize(
    ("content", "words"),
    [(b"a,label\n1,x\n", "lacks the column(s) figure"), (b"x\n\x00\xff\n", "cannot be read")],
)
def test_reproduce_with_a_wrong_reference_table_is_one_line(tmp_path, capsys, content, words):
    reference = tmp_path / "reference.csv"
    reference.write_bytes(content)
    assert main(["reproduce", "--figure", "11", "--reference", str(reference)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: reference table") and words in err and "\n" not in err


def test_out_naming_a_fifo_writes_to_it_and_keeps_it_a_fifo(tmp_path, capsys):
    import json
    import os
    import stat
    import threading

    data = tmp_path / "d.csv"
    rows = "".join(f"{i / 40:.3f},{'xy'[i % 2]}\n" for i in range(40))
    data.write_text("a,label\n" + rows)
    schema = tmp_path / "schema.json"
    schema.write_text(
        '{"label": "label", "classes": ["x", "y"], "features": '
        '[{"name": "a", "type": "continuous", "min": 0, "max": 1}]}'
    )
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    argv = ["train", "--data", str(data), "--label", "label", "--schema", str(schema)]
    code = main([*argv, "--epsilon", "1", "--out", str(fifo)])
    reader.join(timeout=60)
    capsys.readouterr()
    assert code == 0 and stat.S_ISFIFO(fifo.stat().st_mode)
    assert json.loads(received[0])["format"] == "dpviz-forest"


def test_sweep_checks_every_output_folder_and_bounds_the_epsilons_before_any_work(
    tmp_path, capsys
):
    data = tmp_path / "d.csv"
    data.write_text("a,label\n" + "".join(f"{i / 40:.3f},{'xy'[i % 2]}\n" for i in range(40)))
    out = tmp_path / "results.csv"
    argv = ["sweep", "--data", str(data), "--label", "label", "--out", str(out)]
    missing = str(tmp_path / "no_such_folder" / "summary.csv")
    assert main([*argv, "--epsilons", "0.1,1", "--summary", missing]) == 2
    assert "its folder does not exist" in capsys.readouterr().err
    assert not out.exists()
    many = ",".join(f"{0.001 * (i + 1):g}" for i in range(5_000))
    assert main([*argv, "--epsilons", many]) == 2
    assert "at most 200" in capsys.readouterr().err
    assert not out.exists()


def test_infinite_cells_in_a_number_column_are_missing_with_a_note(tmp_path, capsys):
    """145 numbers and four cells no domain can hold: the column stays a continuous
    feature (it once became a 146-value category without a word)."""
    cells = [f"{v:.3f}" for v in np.linspace(0, 1, 145)] + ["inf", "1e309", "-Infinity", "nan"]
    path = tmp_path / "inf.csv"
    path.write_text("x,label\n" + "".join(f"{c},{'ab'[i % 2]}\n" for i, c in enumerate(cells)))
    assert main(["info", "--data", str(path), "--label", "label", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["features"] == {"x": "continuous"}
    assert "'1e309'" in captured.err and "read as missing values" in captured.err
    # A text column that merely holds the word inf stays text.
    text = read_csv(b"x,label\ninf,a\ncat,b\ndog,a\n")
    assert text["x"].tolist() == ["inf", "cat", "dog"] and not text.attrs["read_notes"]
