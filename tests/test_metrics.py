import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from dpviz.metrics import positive_class, score


@pytest.mark.parametrize("k", [2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_metrics_equal_scikit_learn(k, seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, k, 400)
    y_train = rng.integers(0, k, 900)
    # Vote fractions of 10 trees: many ties, as in a forest.
    votes = rng.multinomial(10, np.full(k, 1 / k), size=400).astype(float)
    proba = votes / votes.sum(axis=1, keepdims=True)
    got = score(y_true, proba, y_train, k)
    y_pred = np.argmax(proba, axis=1)
    assert got["accuracy"] == pytest.approx(accuracy_score(y_true, y_pred))
    if k == 2:
        pos = positive_class(y_train, 2)
        assert got["f1"] == pytest.approx(f1_score(y_true == pos, y_pred == pos))
        assert got["auc"] == pytest.approx(roc_auc_score(y_true == pos, proba[:, pos]))
    else:
        assert got["f1"] == pytest.approx(
            f1_score(y_true, y_pred, labels=np.arange(k), average="macro", zero_division=0)
        )
        assert got["auc"] == pytest.approx(
            roc_auc_score(y_true, proba, multi_class="ovr", average="macro")
        )


def test_positive_class_is_least_frequent_training_class():
    assert positive_class(np.array([0, 0, 0, 1]), 2) == 1
    assert positive_class(np.array([0, 1, 1, 1]), 2) == 0


def test_auc_undefined_with_one_class_in_test():
    proba = np.full((5, 2), 0.5)
    assert np.isnan(score(np.zeros(5, int), proba, np.array([0, 1]), 2)["auc"])
