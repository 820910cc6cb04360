"""A forest model file read back says what its floor decided, exactly as the fitted forest
does, from the file's released values alone; ``python -m dpviz predict`` says it too.

Replayable noise seeds (NOT private, tests only) make each fit exact: the assertions are
about one fixed draw each, not about rates.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpviz.cli import main
from dpviz.models.files.load import model_from_json, release
from tests.models.test_floor_outcome import fit


def read_back(model):
    return model_from_json(release(model).to_json())


@pytest.mark.parametrize("signal", [False, True])
@pytest.mark.parametrize(
    "algorithm",
    [
        "fletcher_islam",  # the booked out-of-bag check (disjoint trees, from ε = 2)
        "jpw",  # the leaf signal test of every listed leaf (shared trees)
    ],
)
def test_a_file_read_back_gives_the_fitted_forests_outcome(algorithm, signal):
    model, X = fit(algorithm, 10.0, signal)
    fitted = model.floor_outcome()
    loaded = read_back(model)
    assert fitted is not None and fitted.trusted == signal
    assert loaded.floor_outcome() == fitted  # every field, the same numbers exactly
    assert np.array_equal(loaded.predict(X), model.predict(X))
    if not signal:
        assert len(np.unique(loaded.predict(X))) == 1


@pytest.mark.parametrize("algorithm", ["fletcher_islam", "jpw"])
def test_no_outcome_where_the_forest_ran_no_floor_test(algorithm):
    # ε = 0.5: the check runs from ε = 1, the leaf test from a leaf ε of 0.4.
    model, _ = fit(algorithm, 0.5, signal=False)
    assert model.floor_outcome() is None
    assert read_back(model).floor_outcome() is None


def test_predict_names_the_fall_back_of_a_model_file(tmp_path, capsys):
    model, X = fit("fletcher_islam", 10.0, signal=False)
    path, data = tmp_path / "model.json", tmp_path / "new.csv"
    release(model).save(path)
    X.head(20).to_csv(data, index=False)
    status = main(["predict", "--model", str(path), "--data", str(data), "--json"])
    out, err = capsys.readouterr()
    assert status == 0
    summary = json.loads(out.strip().splitlines()[-1])
    outcome = model.floor_outcome()
    assert summary["floor"]["trusted"] is False
    assert summary["floor"]["statistic"] == outcome.statistic
    assert f"note: {outcome.describe()}" in err.splitlines()


def test_predict_is_quiet_where_the_trees_passed(tmp_path, capsys):
    model, X = fit("fletcher_islam", 10.0, signal=True)
    path, data = tmp_path / "model.json", tmp_path / "new.csv"
    release(model).save(path)
    X.head(20).to_csv(data, index=False)
    assert main(["predict", "--model", str(path), "--data", str(data), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out.strip().splitlines()[-1])["floor"]["trusted"] is True
    assert "floor test" not in err
