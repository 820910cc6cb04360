"""`--ledger FILE` on the CLI's release commands (train, update): each appends its release
as one JSON line, with the ledger the written model file states, and the file's total is
the exact sum over the releases (a model and its updates cost their largest ledger).
Small data (600 + 300 records); the noise is fresh, but only ledgers are compared, and
they do not depend on it."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction

import pytest

from dpviz.cli import main
from dpviz.privacy.schema import PrivacyLeakWarning
from dpviz.privacy.session_ledger import exact, read_jsonl
from tests.conftest import MIXED_SCHEMA, mixed_records


def cli(capsys, *argv) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        code = main([str(a) for a in argv])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    mixed_records(1, 600).to_csv(tmp_path / "a.csv", index=False)
    mixed_records(2, 300).to_csv(tmp_path / "b.csv", index=False)
    (tmp_path / "s.json").write_text(MIXED_SCHEMA.to_json(), encoding="utf-8")
    return tmp_path


def stated(path) -> float:
    """The ε total a model file states in its own ledger."""
    return json.loads(path.read_text(encoding="utf-8"))["privacy"]["epsilon_total"]


def test_train_and_update_append_their_releases(files, capsys):
    book = files / "ledger.jsonl"
    common = ["--label", "label", "--schema", files / "s.json", "--ledger", book]
    code, out, err = cli(
        capsys, "train", "--data", files / "a.csv", "--algorithm", "jpw", "--epsilon", "0.5",
        "--out", files / "m.json", "--json", *common,
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["session_ledger"]["releases"] == 1
    assert f"note: {book}: Total ε = 0.5 over 1 release(s)." in err
    code, out, err = cli(
        capsys, "update", "--model", files / "m.json", "--data", files / "b.csv",
        "--out", files / "m2.json", "--ledger", book, "--json",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = cli(
        capsys, "train", "--data", files / "a.csv", "--epsilon", "0.3",
        "--out", files / "f.json", *common,
    )  # fmt: skip
    assert code == 0, err

    rows = [json.loads(line) for line in book.read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in rows] == ["model", "update", "model"]
    assert [r["file"] for r in rows] == [str(files / n) for n in ("m.json", "m2.json", "f.json")]
    # Each line carries the ledger its model file states.
    for row, name in zip(rows, ("m.json", "m2.json", "f.json")):
        assert row["epsilon"] == stated(files / name) and row["summary"]
    # The update continues the trained model's lineage; the second training starts one.
    assert rows[0]["lineage"] == rows[1]["lineage"] != rows[2]["lineage"]
    session = read_jsonl(book)
    expected = max(exact(stated(files / "m.json")), exact(stated(files / "m2.json")))
    assert session.epsilon == expected + exact(stated(files / "f.json")) == Fraction(4, 5)
    assert "Total ε = 0.8 over 3 release(s)." in err


def test_a_damaged_ledger_is_refused_before_training(files, capsys):
    book = files / "ledger.jsonl"
    book.write_text("not json\n", encoding="utf-8")
    code, _, err = cli(
        capsys, "train", "--data", files / "a.csv", "--label", "label", "--schema",
        files / "s.json", "--epsilon", "1", "--out", files / "m.json", "--ledger", book,
    )  # fmt: skip
    assert code == 2 and err.strip() == f"error: {book}: line 1 is not JSON"
    assert not (files / "m.json").exists()


def test_without_ledger_nothing_is_written(files, capsys):
    code, out, err = cli(
        capsys, "train", "--data", files / "a.csv", "--label", "label", "--schema",
        files / "s.json", "--epsilon", "1", "--out", files / "m.json", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert "session_ledger" not in json.loads(out) and list(files.glob("*.jsonl")) == []
