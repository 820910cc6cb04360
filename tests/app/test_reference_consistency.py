"""The non-private forest reference is one number for one configuration: the same on
the Train, Curves and Negotiate paths and in every run, whatever the DP forest's fresh
noise drew (its trees follow noisy split tables; the twin draws its own from exact ones)."""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from dpviz.app import curves as app_curves
from dpviz.app import negotiate as app_negotiate
from dpviz.app import support
from dpviz.app import train as app_train
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.evaluation.sweep import SERIES_NONPRIVATE


def reference(summary) -> float:
    rows = summary[summary["series"] == SERIES_NONPRIVATE]
    assert len(rows) == 1
    return float(rows["accuracy_mean"].iloc[0])


@pytest.fixture(scope="module")
def data():
    return support.prepare_demo(DEFAULT_DEMO)


def test_the_reference_is_the_same_in_every_run_and_on_every_page(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        settings = app_train.TrainSettings(folds=3, sklearn_reference=False)
        train = [reference(app_train.train(data, settings).sweep.summary) for _ in range(2)]
        sweep = dataclasses.replace(
            app_negotiate.sweep_settings("auto", 3), eps_low=1.0, eps_high=1.0
        )
        curves = app_curves.run(data, sweep).summary
    assert train[0] == train[1]
    assert reference(curves) == train[0]
