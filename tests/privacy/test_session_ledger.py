"""The ε odometer's accounting: exact sequential sums, model lineages, the budget, and the
CLI's JSON-lines ledger file. Deterministic: no noise is drawn."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger, book_noise_mode
from dpviz.privacy.session_ledger import (
    Release,
    SessionLedger,
    append_jsonl,
    exact,
    lineage_of,
    read_jsonl,
)


def ledger(*epsilons: float) -> PrivacyLedger:
    """A ledger of sequential queries of these ε."""
    book = PrivacyLedger()
    for i, eps in enumerate(epsilons):
        book.add_sequential(LedgerEntry(f"query {i}", "all records", eps))
    return book


def model(eps: float, lineage: str, kind: str = "model") -> Release:
    return Release(kind, f"{kind} {lineage}", f"{lineage}.json", eps, "words", lineage=lineage)


def test_epsilons_add_as_the_decimals_typed():
    assert exact(0.1) + exact(0.2) == Fraction(3, 10)
    # A ledger's float sum a few units off the decimal is rounded up to it, never below.
    assert exact(0.05 + 0.2 + 0.08 + 0.17) == Fraction(1, 2)
    assert exact(0.49999999999999994) == Fraction(1, 2)
    assert exact(1 / 3) > Fraction(1, 3) and exact(1 / 3) - Fraction(1, 3) < Fraction(1, 10**11)
    for bad in (float("inf"), float("nan"), -0.1):
        with pytest.raises(ValueError, match="finite number ≥ 0"):
            exact(bad)


def test_releases_of_separate_files_add_up_exactly():
    session = SessionLedger("demo")
    for eps in (0.1, 0.2, 0.7):
        session.book(Release("table", "t", "t.csv", eps, "words"))
    assert session.epsilon == Fraction(1)  # 0.1 + 0.2 + 0.7 in floats is 0.9999999999999999
    assert session.releases[0].dataset == "demo" and session.releases[0].time


def test_a_lineage_costs_its_largest_ledger_and_a_copy_costs_nothing():
    session = SessionLedger()
    first = session.book(model(1.0, "model 1"))
    assert session.adds(model(1.0, "model 1")) == 0  # the same file again
    relabel = model(1.25, "model 1", "relabel")  # its ledger books the first release
    assert session.adds(relabel) == Fraction(1, 4)
    session.book(relabel)
    session.book(first)  # the first file downloaded again after the relabel
    session.book(model(0.5, "model 2"))
    assert session.epsilon == Fraction(7, 4)
    rows = session.rows()
    assert [r["adds"] for r in rows] == [1.0, 0.25, 0.0, 0.5]
    assert [r["session_epsilon"] for r in rows] == [1.0, 1.25, 1.25, 1.75]


def test_a_release_without_proof_voids_the_total_but_the_dp_part_is_kept():
    session = SessionLedger()
    session.book(model(1.0, "model 1"))
    report = Release.not_private("report", "Decision report", "r.html", "held-out scores")
    assert session.adds(report) is None and session.epsilon_after(report) is None
    session.book(report)
    assert session.epsilon is None and session.private_epsilon == 1
    assert "NO guarantee" in session.total_text() and "ε = 1" in session.total_text()
    assert session.to_dict()["private"] is False
    # A model ledger without proof (replayable noise) is booked as not private too.
    replay = ledger(0.5)
    book_noise_mode(replay, True)
    assert not Release.from_ledger("model", "m", "m.json", replay).private


def test_from_ledger_reads_a_ledger_or_a_model_files_privacy_block():
    book = ledger(0.25, 0.5)
    a = Release.from_ledger("model", "m", "m.json", book, lineage="model 1")
    b = Release.from_ledger("model", "m", "m.json", book.to_dict(), lineage="model 1")
    assert a.epsilon == b.epsilon == 0.75 and a.summary == b.summary == book.describe()
    no_proof = {"epsilon_total": None, "private": False, "summary": "s"}
    assert Release.from_ledger("model", "m", "m.json", no_proof).epsilon is None


def test_the_budget_asks_before_a_release_would_pass_it():
    session = SessionLedger()
    session.set_budget(1.0)
    session.book(model(0.7, "model 1"))
    assert not session.passes_budget(model(0.3, "model 2"))  # exactly at the budget
    assert session.passes_budget(model(0.31, "model 2"))
    assert not session.passes_budget(model(1.0, "model 1", "relabel"))  # 0.7 → 1.0
    assert session.passes_budget(Release.not_private("table", "t", "t.csv", "raw"))
    session.book(model(1.5, "model 2"))  # confirmed past the budget
    assert not session.passes_budget(model(1.5, "model 2"))  # a copy adds nothing
    assert session.passes_budget(model(0.01, "model 3"))
    session.set_budget(None)
    assert not session.passes_budget(model(5.0, "model 3"))
    for bad in (0.0, -1.0, float("inf")):
        with pytest.raises(ValueError, match="positive ε"):
            session.set_budget(bad)


def test_unknown_kinds_and_bad_epsilons_are_refused():
    with pytest.raises(ValueError, match="unknown release kind"):
        Release("photo", "p", "p.png", 0.1, "")
    with pytest.raises(ValueError, match="finite"):
        Release("model", "m", "m.json", -1.0, "")


def test_the_session_ledger_json_lists_every_release(tmp_path):
    session = SessionLedger("mixed.csv", budget=2.0)
    session.book(model(1.0, "model 1"))
    session.book(Release("schema", "Schema (declared)", "s.json", 0.0, "public"))
    data = json.loads(session.to_json())
    assert data["epsilon_total"] == 1.0 and data["budget"] == 2.0
    assert [r["file"] for r in data["releases"]] == ["model 1.json", "s.json"]
    assert "not a release" in data["not_releases"]


def test_jsonl_appends_one_line_per_release_and_reads_back(tmp_path):
    path = tmp_path / "ledger.jsonl"
    append_jsonl(path, model(0.5, "a#1"))
    append_jsonl(path, model(0.75, "a#1", "update"))
    append_jsonl(path, model(0.3, "b#2"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and all(json.loads(line)["time"] for line in lines)
    session = read_jsonl(path)
    assert session.epsilon == Fraction(21, 20)  # 0.75 (lineage a) + 0.3
    assert lineage_of(session, "a#1.json") == "a#1" and lineage_of(session, "x.json") is None
    path.write_text(lines[0] + "\nnot json\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        read_jsonl(path)
    path.write_text('{"kind": "model"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="line 1 lacks"):
        read_jsonl(path)
