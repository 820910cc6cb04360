"""The ledger in words (:meth:`PrivacyLedger.describe`): repeated groups told once."""

from __future__ import annotations

from dpviz.privacy.ledger import LedgerEntry, PrivacyLedger


def _trees(n: int) -> PrivacyLedger:
    ledger = PrivacyLedger()
    ledger.add_sequential(LedgerEntry("noisy class histogram", "all records", 0.1))
    for t in range(n):
        leaves = LedgerEntry(f"tree {t + 1} leaves", "the records not held out", 0.03)
        check = LedgerEntry(f"check part {t + 1}", "the held-out records", 0.03)
        ledger.add_parallel([leaves, check], summary=f"Tree {t + 1} ∥ the check's share")
    return ledger


def test_thirty_like_groups_read_as_one_line_with_their_sum():
    text = _trees(30).describe()
    assert text.count("by parallel composition") == 1
    assert (
        "30 such groups in turn (Tree 1 ∥ the check's share … Tree 30 ∥ the check's share), "
        "each ε = 0.03 by parallel composition → together ε = 0.9 by sequential composition."
    ) in text
    assert "Total: the released model is 1-differentially private." in text


def test_one_group_and_groups_of_another_shape_stay_apart():
    ledger = _trees(1)
    ledger.add_parallel(
        [LedgerEntry("a", "half", 0.05), LedgerEntry("b", "other half", 0.05)], summary="Pair"
    )
    text = ledger.describe()
    assert "Tree 1 ∥ the check's share → together ε = 0.03 by parallel composition." in text
    assert "Pair → together ε = 0.05 by parallel composition." in text
    assert "such groups" not in text


def test_repeated_single_queries_still_add_up():
    ledger = PrivacyLedger()
    for _ in range(4):
        ledger.add_sequential(LedgerEntry("a count", "all records", 0.25))
    assert "4 queries (a count, …) each read all records and spent ε = 0.25 → together ε = 1" in (
        ledger.describe()
    )
