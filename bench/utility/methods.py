"""The methods: dpviz's registry algorithms, diffprivlib's four models, DP-EBM and the
non-private references, each fitted on a fold's training rows behind one interface."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from bench.utility.data import Dataset, _linear_matrix, _tree_matrix
from dpviz.evaluation.peers import (  # the shim and LR the Curves page uses too
    diffprivlib_lr,
    dpebm_model,
    ebm_frame,
    patch_sklearn_for_diffprivlib,
)
from dpviz.models.objective import ACCURACY
from dpviz.models.registry import ALGORITHMS, get_algorithm

TWIN_EPSILON = 1e6  # DPBoost's non-private twin: the same trees with negligible noise
DPEBM_DELTA = 1e-5  # interpret's default δ for DP-EBM
PEERS = ("diffprivlib_rf", "diffprivlib_dt", "diffprivlib_lr", "diffprivlib_gnb", "dp_ebm")
DIFFPRIVLIB = PEERS[:4]  # pure ε-DP peers: the default forest's yardstick (issue 28)
REFERENCES = ("dpboost_twin", "hist_gradient_boosting")
LABELS = {
    "fletcher_islam": "dpviz FI forest",
    "jpw": "dpviz JPW",
    "friedman_schuster": "dpviz FS",
    "dpea": "dpviz DPEA",
    "dpboost": "dpviz DPBoost",
    "diffprivlib_rf": "diffprivlib RF",
    "diffprivlib_dt": "diffprivlib DT",
    "diffprivlib_lr": "diffprivlib LR",
    "diffprivlib_gnb": "diffprivlib GNB",
    "dp_ebm": "DP-EBM (δ = 10⁻⁵)",  # DPEBM_DELTA
    "dpboost_twin": "DPBoost twin (ε=10⁶, not DP)",
    "hist_gradient_boosting": "HistGB (not DP)",
    "majority": "majority class",
}


def all_methods() -> list[str]:
    """Registry algorithms (in registry order), then the peers and references."""
    return [*ALGORITHMS, *PEERS, *REFERENCES]


@dataclass
class Fitted:
    predict: Callable[[np.ndarray], np.ndarray]  # test row indices -> class indices
    proba: Callable[[np.ndarray], np.ndarray | None]  # -> (n, k) in class-index order


def _expand(proba: np.ndarray, classes: Iterable, k: int) -> np.ndarray:
    """Probabilities over the classes a model saw, as columns of all k class indices."""
    out = np.zeros((proba.shape[0], k))
    out[:, np.asarray(list(classes), dtype=int)] = proba
    return out


def _fit_dpviz(
    algorithm: str, epsilon: float, data: Dataset, train, random_state, objective: str = ACCURACY
) -> Fitted:
    # The objective is post-processing of the release: the same fit, another decision rule.
    model = get_algorithm(algorithm).make(
        epsilon, random_state=random_state, schema=data.schema, objective=objective
    )
    model.fit(data.features.iloc[train], data.labels()[train])
    index = {c: i for i, c in enumerate(data.schema.classes)}
    order = [index[str(c)] for c in model.classes_]
    k = data.n_classes

    def predict(test):
        pred = model.predict(data.features.iloc[test])
        return np.array([index[str(c)] for c in pred])

    return Fitted(
        predict, lambda test: _expand(model.predict_proba(data.features.iloc[test]), order, k)
    )


def _fit_sklearn_like(model, X: np.ndarray, data: Dataset, train) -> Fitted:
    model.fit(X[train], data.y[train])
    k = data.n_classes
    return Fitted(
        lambda test: np.asarray(model.predict(X[test]), dtype=int),
        lambda test: _expand(model.predict_proba(X[test]), model.classes_, k),
    )


def _fit_diffprivlib(kind: str, epsilon: float, data: Dataset, train, random_state) -> Fitted:
    patch_sklearn_for_diffprivlib()
    from diffprivlib import models

    classes = list(range(data.n_classes))
    if kind in ("rf", "dt"):
        X, bounds = _tree_matrix(data)
        if kind == "rf":
            model = models.RandomForestClassifier(
                epsilon=epsilon, bounds=bounds, classes=classes, n_jobs=1
            )
        else:
            model = models.DecisionTreeClassifier(epsilon=epsilon, bounds=bounds, classes=classes)
    else:
        X, norm = _linear_matrix(data)
        if kind == "lr":
            model = diffprivlib_lr(models)(epsilon=epsilon, data_norm=norm)
        else:
            ones = np.ones(X.shape[1])
            model = models.GaussianNB(epsilon=epsilon, bounds=(0 * ones, ones))
    return _fit_sklearn_like(model, X, data, train)


def _fit_dp_ebm(epsilon: float, data: Dataset, train, random_state) -> Fitted:
    if data.n_classes != 2:
        raise ValueError("DP-EBM supports binary classification only")
    # Dataset has EncodedData's columns: the peers' frame and model, the fresh noise of
    # every private method here.
    X = ebm_frame(data, data.schema)
    model = dpebm_model(data.schema, epsilon, DPEBM_DELTA, random_state=None)
    model.fit(X.iloc[train], data.y[train])
    k = data.n_classes
    return Fitted(
        lambda test: np.asarray(model.predict(X.iloc[test]), dtype=int),
        lambda test: _expand(model.predict_proba(X.iloc[test]), model.classes_, k),
    )


def _fit_hgb(data: Dataset, train, random_state) -> Fitted:
    from sklearn.ensemble import HistGradientBoostingClassifier

    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    mask = np.r_[
        np.zeros(len(data.schema.continuous), bool), np.ones(len(data.schema.discrete), bool)
    ]
    # scikit-learn requires at most max_bins (255) categories per categorical feature.
    cats = [len(f.values) <= 255 for f in data.schema.discrete]
    mask[len(data.schema.continuous) :] = cats
    model = HistGradientBoostingClassifier(
        categorical_features=mask if mask.any() else None, random_state=random_state
    )
    return _fit_sklearn_like(model, X, data, train)


def build(
    method: str, epsilon: float, data: Dataset, train, random_state, objective: str = ACCURACY
) -> Fitted:
    """Fit ``method`` on the training rows; ε is ignored by the non-private references.
    ``objective`` (:mod:`dpviz.models.objective`) is what dpviz's estimators (and
    DPBoost's twin) predict for; the peers and HistGB have no such parameter and keep
    their argmax whatever it is."""
    if method in ALGORITHMS:
        return _fit_dpviz(method, epsilon, data, train, random_state, objective)
    if method == "dpboost_twin":
        return _fit_dpviz("dpboost", TWIN_EPSILON, data, train, random_state, objective)
    if method.startswith("diffprivlib_"):
        return _fit_diffprivlib(
            method.removeprefix("diffprivlib_"), epsilon, data, train, random_state
        )
    if method == "dp_ebm":
        return _fit_dp_ebm(epsilon, data, train, random_state)
    if method == "hist_gradient_boosting":
        return _fit_hgb(data, train, random_state)
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(all_methods())}")


def is_private(method: str) -> bool:
    return method not in REFERENCES
