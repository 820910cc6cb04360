"""README's Python order — fit, relabel, release — gives a file whose ledger adds every
release of the same leaves; a file naming an algorithm its format does not hold is
refused."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz import DPRandomForestClassifier, load_model, release
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.schema import Feature, Schema

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("c", "discrete", values=("u", "v", "w")),
    ),
)
rng = np.random.default_rng(0)
X = pd.DataFrame({"a": rng.uniform(0, 100, 300).round(1), "c": rng.choice(["u", "v", "w"], 300)})
y = np.where(X["a"] > 50, "yes", "no")


def test_fit_relabel_release_loads_with_every_release_in_its_ledger(tmp_path):
    model = DPRandomForestClassifier(epsilon=1.0, schema=SCHEMA, random_state=0).fit(X, y)
    model.relabel(epsilon=0.5)
    path = tmp_path / "model.json"
    release(model).save(path)
    loaded = load_model(path)
    assert loaded.claim_verified
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.meta["privacy"]["epsilon_total"] == pytest.approx(model.ledger_.epsilon_total)
    assert model.ledger_.epsilon_total > 1.0  # the first release still counts
    # Dropping the earlier release from the file is an edit of its claim.
    document = json.loads(path.read_text())
    assert len(document["earlier_releases"]) == 1
    document.pop("earlier_releases")
    document.pop("signature")
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="the file was edited"):
        load_model(path)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_a_file_naming_an_unknown_algorithm_is_refused(tmp_path, algorithm):
    model = ALGORITHMS[algorithm].make(1.0, schema=SCHEMA, random_state=0).fit(X, y)
    document = json.loads(release(model).to_json())
    document["algorithm"] = "banana"
    path = tmp_path / "model.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="'algorithm' 'banana' is not one"):
        load_model(path)
