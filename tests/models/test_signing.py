"""Model files carry a verifiable claim (issue 26): dpviz signs what it writes with this
installation's key; an unsigned or edited file still predicts but reads "privacy claim not
verified by this installation", and nothing saved from it is ever signed."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

from dpviz.app import support
from dpviz.app import train as app_train
from dpviz.cli import main
from dpviz.models.files.load import REPLAYABLE, load_model, model_from_json, release
from dpviz.models.files.manifest import unaccounted
from dpviz.models.registry import get_algorithm
from dpviz.privacy import signing
from dpviz.privacy.schema import infer_schema
from tests.conftest import MIXED_SCHEMA, mixed_records

NOTE = "privacy claim not verified by this installation"
FRAME = mixed_records(0, 400)
X, Y = FRAME.drop(columns="label"), FRAME["label"]


@pytest.fixture
def config(tmp_path, monkeypatch) -> Path:
    """A fresh configuration folder (so a fresh key) for one test."""
    folder = tmp_path / "config" / "dpviz"
    monkeypatch.setenv("DPVIZ_CONFIG_DIR", str(folder))
    return folder


def jpw_text(**params) -> str:
    """A small signed count forest: jpw without a declared n (so a noisy record count)."""
    model = get_algorithm("jpw").make(1.0, schema=MIXED_SCHEMA, random_state=0, n_estimators=3)
    return release(model.set_params(**params).fit(X, Y), "jpw").to_json()


def edited(text: str, edit) -> str:
    doc = json.loads(text)
    edit(doc)
    return json.dumps(doc)


# --- the key -------------------------------------------------------------------------------


def test_key_is_created_owner_only_once(config):
    assert not config.exists()
    key = signing.signing_key()
    path = config / "signing.key"
    assert len(key) == 32 and path.read_bytes() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.stat().st_mode) == 0o700
    assert signing.signing_key() == key  # read back, never replaced


def test_key_created_by_racing_threads_is_one_key(config):
    keys = []
    barrier = threading.Barrier(8)

    def create():
        barrier.wait()
        keys.append(signing.signing_key())

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(keys)) == 1 and len(keys) == 8
    assert sorted(p.name for p in config.iterdir()) == ["signing.key"]  # no temporaries left


@pytest.mark.parametrize(
    ("damage", "phrase"),
    [
        pytest.param(lambda p: p.write_bytes(b"short"), "is 5 bytes, not 32", id="wrong-size"),
        pytest.param(lambda p: p.mkdir(), "cannot read dpviz's signing key", id="unreadable"),
        pytest.param(
            lambda p: (p.write_bytes(bytes(32)), p.chmod(0o644)),
            "open to other users (mode 644)",
            id="group-readable",
        ),
    ],
)
def test_a_bad_key_is_one_line_value_error(config, damage, phrase, capsys, tmp_path):
    text = jpw_text()  # signed with a good key first
    (tmp_path / "m.json").write_text(text)
    (config / "signing.key").unlink()
    damage(config / "signing.key")
    for call in (signing.signing_key, lambda: model_from_json(text)):
        with pytest.raises(ValueError, match="delete it and dpviz makes a new one") as info:
            call()
        assert phrase in str(info.value) and "\n" not in str(info.value)
    status = main(["predict", "--model", str(tmp_path / "m.json"), "--data", str(tmp_path)])
    _, err = capsys.readouterr()
    assert status == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("error: ") and phrase in err


# --- verified and not verified -------------------------------------------------------------


def test_round_trip_is_verified_for_every_kind_of_model(config):
    for name, model in [
        ("jpw", get_algorithm("jpw").make(1.0, schema=MIXED_SCHEMA, random_state=0)),
        ("friedman_schuster", get_algorithm("friedman_schuster").make(1.0, schema=MIXED_SCHEMA)),
        ("dpboost", get_algorithm("dpboost").make(1.0, schema=MIXED_SCHEMA, random_state=0)),
    ]:
        released = release(model.fit(X, Y), name)
        text = released.to_json()
        assert json.loads(text)["signature"]["algorithm"] == "HMAC-SHA256"
        loaded = model_from_json(text)
        assert loaded.claim_verified and loaded.claim_note is None, name
        assert NOTE not in loaded.meta["privacy"]["summary"].lower()
        np.testing.assert_array_equal(loaded.predict(X), released.predict(X))
        # Re-saving a verified model keeps it verified (signed again, same bytes).
        assert loaded.to_json() == text


def _divide_epsilons(doc):
    """The audit's consistent edit: every ε field ÷ 10, so the claim still adds up."""
    for name in ("epsilon", "tree_epsilon", "prior_epsilon", "depth_count_epsilon"):
        doc[name] /= 10
    doc["privacy"]["epsilon_total"] /= 10
    for batch in doc["batches"]:
        batch["epsilon"] /= 10


def _mark_secret(doc):
    doc["noise"] = "secret"
    doc["privacy"] = {"epsilon_total": doc["epsilon"], "private": True}
    doc["batches"] = [{"batch": 1, "epsilon": doc["epsilon"]}]


def _flip_leaves(doc):
    tree = doc["trees"][0]
    tree["output"] = [o[::-1] if o else o for o in tree["output"]]


def _mark_replayable(doc):
    doc["noise"] = REPLAYABLE
    doc["privacy"] = {"epsilon_total": None, "private": False}
    doc["batches"] = [{"batch": 1, "epsilon": None}]


def _drop_inferred(doc):
    doc["schema_inferred"] = False
    doc["schema"].pop("inferred", None)
    doc["privacy"] = {"epsilon_total": doc["epsilon"], "private": True}
    doc["batches"] = [{"batch": 1, "epsilon": doc["epsilon"]}]


EDITS = [
    pytest.param({}, _divide_epsilons, id="epsilon-divided-by-10"),
    pytest.param({}, _mark_replayable, id="secret-to-replayable"),
    pytest.param({"noise_seed": 3}, _mark_secret, id="replayable-to-secret"),
    pytest.param({}, lambda d: d.update(comment="hello"), id="field-added"),
    pytest.param({}, lambda d: d.pop("signature"), id="signature-removed"),
    pytest.param({}, _flip_leaves, id="leaf-counts-swapped"),
]


@pytest.mark.parametrize(("params", "edit"), EDITS)
def test_each_edit_still_predicts_but_is_not_verified(config, params, edit, capsys, tmp_path):
    text = edited(jpw_text(**params), edit)
    model = model_from_json(text)  # a consistent edit still loads and predicts
    assert not model.claim_verified
    assert model.claim_note.startswith(NOTE)
    assert "Privacy claim not verified by this installation" in model.meta["privacy"]["summary"]
    assert len(model.predict(X)) == len(X)
    # The CLI says so on stderr and still predicts.
    (tmp_path / "m.json").write_text(text)
    FRAME.to_csv(tmp_path / "d.csv", index=False)
    argv = ["predict", "--model", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv")]
    argv += ["--out", str(tmp_path / "p.csv")]
    assert main(argv) == 0
    assert f"note: {NOTE}" in capsys.readouterr().err


def test_the_reason_tells_an_edit_from_no_signature(config):
    text = jpw_text()
    assert (
        "edited after it was signed" in model_from_json(edited(text, _divide_epsilons)).claim_note
    )
    unsigned = edited(text, lambda d: d.pop("signature"))
    assert "the file is not signed" in model_from_json(unsigned).claim_note


def test_removing_the_inferred_mark_is_not_verified(config):
    schema = infer_schema(FRAME, "label", warn=False)
    model = get_algorithm("jpw").make(1.0, schema=schema, random_state=0, n_estimators=3)
    text = release(model.fit(X, Y), "jpw", values_public=True).to_json()
    assert model_from_json(text).meta["privacy"]["private"] is False
    forged = model_from_json(edited(text, _drop_inferred))
    assert forged.meta["privacy"]["private"] is True  # the claim adds up ...
    assert not forged.claim_verified  # ... but this installation did not write it


def test_a_file_signed_by_another_installation_is_not_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("DPVIZ_CONFIG_DIR", str(tmp_path / "a"))
    text = jpw_text()
    assert model_from_json(text).claim_verified
    monkeypatch.setenv("DPVIZ_CONFIG_DIR", str(tmp_path / "b"))
    signing.signing_key()
    model = model_from_json(text)
    assert not model.claim_verified
    assert "another installation's key" in model.claim_note


def test_reading_never_creates_a_key(config):
    text = jpw_text()
    (config / "signing.key").unlink()
    assert "another installation's key (this one has none yet)" in model_from_json(text).claim_note
    assert not (config / "signing.key").exists()


# --- updates: never verified from an unverified file; every batch listed --------------------


def test_update_of_a_forged_file_stays_not_verified(config):
    genuine = jpw_text()
    forged = model_from_json(edited(genuine, _divide_epsilons))
    saved = forged.updated(FRAME.head(40)).to_json()
    doc = json.loads(saved)
    assert doc["claim"] == "not verified" and "signature" not in doc
    assert unaccounted(doc) == []  # the mark is a field the release manifest names
    again = model_from_json(saved)
    assert not again.claim_verified and "says so itself" in again.claim_note
    # Twice removed, still marked; and no edit of the saved file makes it verified:
    # dropping the mark leaves it unsigned, the genuine file's signature does not fit it.
    assert json.loads(again.updated(FRAME.head(40)).to_json())["claim"] == "not verified"
    unmarked = edited(saved, lambda d: d.pop("claim"))
    assert not model_from_json(unmarked).claim_verified
    borrowed = edited(unmarked, lambda d: d.update(signature=json.loads(genuine)["signature"]))
    assert "edited after it was signed" in model_from_json(borrowed).claim_note
    # A verified file's update is signed and verified.
    assert model_from_json(
        model_from_json(genuine).updated(FRAME.head(40)).to_json()
    ).claim_verified


def test_update_lists_every_batch_and_the_composition(config):
    model = model_from_json(jpw_text())
    eps_count = model.meta["depth_count_epsilon"]
    assert eps_count == pytest.approx(0.05)  # the jpw depth rule read a noisy count
    twice = model.updated(FRAME.head(40)).updated(FRAME.head(40))
    later = 1.0 - eps_count  # an update re-reads neither the record count nor the splits
    assert [b["batch"] for b in twice.meta["batches"]] == [1, 2, 3]
    assert [b["epsilon"] for b in twice.meta["batches"]] == pytest.approx([1.0, later, later])
    summary = twice.meta["privacy"]["summary"]
    assert twice.meta["privacy"]["epsilon_total"] == pytest.approx(1.0)
    assert "each person's records arrive in one batch only" in summary
    assert f"ε = {1 + later:g} for batches 1 and 2, ε = {2 * later:g} for two updates" in summary
    # The list is signed and read back; an edited list is refused.
    saved = twice.to_json()
    assert model_from_json(saved).meta["batches"] == twice.meta["batches"]

    def shrink(doc):
        doc["batches"][1]["epsilon"] = 0.1

    with pytest.raises(ValueError, match="batch list .* does not follow"):
        model_from_json(edited(saved, shrink))


def test_cli_update_says_who_is_protected_at_the_sum(config, tmp_path, capsys):
    FRAME.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "s.json").write_text(MIXED_SCHEMA.to_json())
    train = ["train", "--data", str(tmp_path / "d.csv"), "--label", "label"]
    train += ["--schema", str(tmp_path / "s.json"), "--algorithm", "jpw", "--epsilon", "1"]
    assert main([*train, "--param", "declared_n=400", "--out", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    # The training data again: the model still says ε = 1, and the note says who is not.
    update = ["update", "--model", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv")]
    assert main([*update, "--out", str(tmp_path / "u.json"), "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["privacy"]["epsilon_total"] == pytest.approx(1.0)
    assert [b["epsilon"] for b in result["batches"]] == pytest.approx([1.0, 1.0])
    assert result["claim"] == "verified" and NOTE not in err
    assert "protected only at the sum of their ε: 2 for the training data and this batch" in err
    assert load_model(tmp_path / "u.json").claim_verified


def test_key_file_mode_survives_a_permissive_umask(config):
    old = os.umask(0)
    try:
        signing.signing_key()
    finally:
        os.umask(old)
    assert stat.S_IMODE((config / "signing.key").stat().st_mode) == 0o600
    assert stat.S_IMODE(config.stat().st_mode) == 0o700


def test_the_apps_download_is_signed_and_a_bad_key_is_said_not_raised(config):
    settings = app_train.TrainSettings(
        algorithm="friedman_schuster", folds=2, sklearn_reference=False
    )
    run = app_train.train(support.prepare_demo("demo_csv"), settings)
    assert run.export_problem is None
    assert model_from_json(run.model_json).claim_verified
    (config / "signing.key").write_bytes(b"short")
    again = app_train.train(support.prepare_demo("demo_csv"), settings)
    assert "is 5 bytes, not 32" in again.export_problem
