"""The Trees page shows the released model's floor decision as the Train page does: a
warning when its trees fell back to the prior's class; the Train page also states the
released model's cut on class 1's score where ``predict`` is not the plain argmax."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dpviz.app import support
from dpviz.app import train as app_train
from dpviz.app.session import DATA_KEY, RUN_KEY
from dpviz.app.train_results import ReleasedModel
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.models.objective import describe_cut
from dpviz.models.trees.threshold import NEVER
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


def test_train_page_states_the_released_models_cut(monkeypatch, data, trained):
    """A two-class model whose ``predict`` cuts class 1's score (the default forest's
    accuracy cut from ε = 1 up) says where, beside its floor."""
    model = SimpleNamespace(
        decision_threshold_=0.378, classes_=np.array(["g", "h"]), objective="accuracy"
    )
    text = ReleasedModel("fletcher_islam", model).decision
    assert text.startswith("**Decision of the released model.** It answers 'h' where its")
    assert "at least 0.378 rather than 0.5 (the majority vote)" in text
    assert "noisy histogram of its out-of-bag scores" in text
    monkeypatch.setattr(ReleasedModel, "decision", property(lambda self: text))
    at = page("pages/train.py", **{DATA_KEY: data, RUN_KEY: trained})
    assert text in [c.value for c in at.caption]


def test_the_cut_in_words():
    def model(threshold, objective="accuracy", classes=("no", "yes")):
        return SimpleNamespace(
            decision_threshold_=threshold, classes_=np.array(classes), objective=objective
        )

    assert describe_cut(model(None)) is None
    assert describe_cut(model(0.3, classes=("a", "b", "c"))) is None
    assert "answers 'yes' for every record" in describe_cut(model(0.0))
    assert "answers 'no' for every record" in describe_cut(model(NEVER))
    macro = describe_cut(model(0.12, "macro_f1"))
    assert "at least 0.12: the macro_f1 threshold it computed" in macro
    assert "majority vote" not in macro
