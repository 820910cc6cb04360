"""The Trees page shows the released model's floor decision as the Train page does: a
warning when its trees fell back to the prior's class."""

from __future__ import annotations

import pytest

from dpviz.app import support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY
from dpviz.app.train_results import ReleasedModel
from dpviz.evaluation.demos import DEFAULT_DEMO
from tests.app.test_fragments import page
from tests.models.test_floor_outcome import fit


@pytest.fixture(scope="module")
def data():
    return support.prepare_demo(DEFAULT_DEMO)


@pytest.fixture(scope="module")
def trained(data):
    settings = app_train.TrainSettings(n_estimators=10, sklearn_reference=False, folds=2)
    return app_train.train(data, settings)


def test_trees_page_warns_when_the_trees_fell_back(monkeypatch, data, trained):
    # A real fallen-back outcome (label-free data, replayable noise) stands in for the run's.
    fallen = fit("fletcher_islam", 10.0, signal=False)[0].floor_outcome()
    assert not fallen.trusted
    monkeypatch.setattr(ReleasedModel, "floor", property(lambda self: fallen))
    at = page("pages/trees.py", **{DATA_KEY: data, RUN_KEY: trained})
    warnings = [w.value for w in at.warning]
    assert "**Floor of the released model.** " + fallen.describe() in warnings
