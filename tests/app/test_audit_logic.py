"""The Audit page's logic: which configuration it attacks, its verdicts and the numbers
it prints, without streamlit."""

import dataclasses
import json
import types

import numpy as np
import pandas as pd
import pytest

from dpviz.app import audit as app_audit
from dpviz.app import train as app_train
from dpviz.app.support import PreparedData
from dpviz.evaluation import defaults
from dpviz.evaluation.attack import advantage_bound
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema("label", ("no", "yes"), (Feature("a", "continuous", low=0.0, high=1.0),))


def data(n: int = 200) -> PreparedData:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.uniform(0, 1, n).round(4)})
    frame["label"] = np.where(frame["a"] > 0.5, "yes", "no")
    return PreparedData("d", frame, SCHEMA, "public", frame_id=f"d{n}")


def test_configuration_follows_the_train_run_on_this_data_only():
    d = data()
    assert app_audit.configuration(d, None) == app_audit.AuditConfig(
        defaults.ALGORITHM, defaults.EPSILON, defaults.parameters(), defaults.SEED
    )
    settings = app_train.TrainSettings(algorithm="jpw", epsilon=0.3, seed=4)
    run = types.SimpleNamespace(fingerprint=d.fingerprint, settings=settings)
    config = app_audit.configuration(d, run)
    assert (config.algorithm, config.epsilon, config.seed) == ("jpw", 0.3, 4)
    assert config.params == settings.values and "Train page" in config.source
    other = types.SimpleNamespace(fingerprint=data(100).fingerprint, settings=settings)
    assert app_audit.configuration(d, other).source == "the defaults"
    assert app_audit.configuration(d, run).with_epsilon(2).epsilon == 2.0


def test_attack_table_verdict_and_summary():
    config = app_audit.AuditConfig("friedman_schuster", 0.5, {}, 0)
    result = app_audit.run_attack(data(), config)
    table = app_audit.attack_table(result)
    assert list(table["model"]) == ["DP model", "non-private reference"]
    assert (table["ε-DP bound"] == round(advantage_bound(0.5), 3)).all()
    level, text = app_audit.attack_verdict(result)
    assert level == ("error" if result.refuted else "ok")
    assert f"{result.bound:.3f}" in text
    out = app_audit.summary(result)
    json.dumps(out)
    assert "roc" not in out["dp"] and out["refuted"] == result.refuted
    assert "not a release" in out["not_private"]


def test_no_claim_is_said_plainly():
    config = app_audit.AuditConfig("fletcher_islam", 1.0, {"mechanism": "smooth_em"}, 0)
    result = app_audit.run_attack(data(), config)
    assert result.bound is None and not result.refuted
    level, text = app_audit.attack_verdict(result)
    assert level == "warning" and "proves no ε" in text


def test_audit_verdicts_and_stop():
    config = app_audit.AuditConfig("friedman_schuster", 1.0, {}, 0)
    found = app_audit.run_release_audit(data(), config, 20, cancel=lambda: True)
    assert found.stopped and found.n_runs == 1
    level, text = app_audit.audit_verdict(found)
    assert level in ("ok", "error") and "Stopped after 1 fit per dataset" in text
    level, text = app_audit.audit_verdict(found, asked=20)
    assert text.startswith("Stopped after 1 fit per dataset (of 20 asked)")
    assert (
        "still a valid lower bound" in text
        and "from that fit only" in text
        and "1 fit on each dataset" in text
    )
    unclaimed = dataclasses.replace(found, ledger_epsilon=None, consistent=None)
    level, text = app_audit.audit_verdict(unclaimed, asked=20)
    assert level == "warning" and text == (
        "Stopped after 1 fit per dataset (of 20 asked). This configuration proves no ε: "
        "there is no claim to check."
    )
    with pytest.raises(ValueError, match="at least 40"):
        app_audit.run_attack(data(30), config)


def test_dpboost_variants_run_on_their_own_pairs_and_grown_needs_epsilon_five():
    config = app_audit.AuditConfig("dpboost", 1.0, {"n_estimators": 3}, 0)
    assert list(app_audit.audit_subjects(config)) == [None, "grown", "macro_f1", "random"]
    assert app_audit.variant_epsilon(config, "grown") == 5.0
    assert app_audit.variant_epsilon(config.with_epsilon(10), "grown") == 10.0
    assert app_audit.variant_epsilon(config, "macro_f1") == 1.0
    # the random-split mode applies below ε = 5, and from 0.3 on its pair: audited in
    # [0.3, 4]
    assert app_audit.variant_epsilon(config, "random") == 1.0
    assert app_audit.variant_epsilon(config.with_epsilon(10), "random") == 10.0
    assert app_audit.variant_epsilon(config.with_epsilon(0.1), "random") == 0.3
    assert app_audit.default_runs(config, "grown") == 200
    found = app_audit.run_release_audit(None, config, 20, variant="macro_f1")
    # The variant fits the registry defaults (the Train parameters do not apply).
    assert found.variant == "macro_f1" and found.params == {"objective": "macro_f1"}
    table = app_audit.audit_parts_table(found)
    assert list(table.columns)[:3] == ["booked entry", "claimed loss", "lower bound"]
    assert len(table) == len(found.parts) >= 2


def test_the_forest_audits_its_macro_f1_histogram_on_its_own_pair_from_epsilon_one():
    config = app_audit.AuditConfig("fletcher_islam", 0.5)
    assert list(app_audit.audit_subjects(config)) == [None, "macro_f1", "accuracy"]
    assert app_audit.variant_epsilon(config, "macro_f1") == 1.0
    assert app_audit.variant_epsilon(config.with_epsilon(10), "macro_f1") == 10.0
    assert "out-of-bag" in app_audit.audit_text("macro_f1", "fletcher_islam")
    assert "small tree" in app_audit.audit_text("macro_f1", "dpboost")
    found = app_audit.run_release_audit(None, config, 20, variant="macro_f1")
    assert found.variant == "macro_f1" and found.params == {"objective": "macro_f1"}
    assert found.epsilon == 1.0
    assert [p.name for p in found.parts] == ["score histogram (x's cell)", "all parts"]
    with pytest.raises(ValueError, match="no 'grown' audit"):
        app_audit.run_release_audit(None, config, 20, variant="grown")


def test_the_forest_audits_its_accuracy_cut_on_the_same_pair():
    config = app_audit.AuditConfig("fletcher_islam", 0.5)
    assert app_audit.variant_epsilon(config, "accuracy") == 1.0
    assert "per class" in app_audit.audit_subjects(config)["accuracy"]
    assert "accuracy cut" in app_audit.audit_text("accuracy", "fletcher_islam")
    found = app_audit.run_release_audit(None, config, 20, variant="accuracy")
    assert found.variant == "accuracy" and found.params == {} and found.epsilon == 1.0
    assert [p.name for p in found.parts] == ["score histogram (x's cell, x's class)", "all parts"]


def test_other_algorithms_have_no_variants():
    config = app_audit.AuditConfig("jpw", 1.0)
    assert list(app_audit.audit_subjects(config)) == [None]
    with pytest.raises(ValueError, match="no 'macro_f1' audit"):
        app_audit.run_release_audit(None, config, 20, variant="macro_f1")
    config = app_audit.AuditConfig("fletcher_islam", 1.0)
    assert app_audit.audit_parts_table(app_audit.run_release_audit(data(), config, 20)).empty
