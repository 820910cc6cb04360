import numpy as np
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from dpviz.evaluation.metrics import BASELINE_METRICS, majority_score, positive_class, score


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
    # A caller's positive class (a sweep finds it once per training fold): the same row.
    given = score(y_true, proba, y_train, k, positive=positive_class(y_train, k))
    assert given == got
    if k == 2:  # and it is read: the other class as positive scores that class
        other = score(y_true, proba, y_train, k, positive=1 - positive_class(y_train, k))
        assert other["f1"] == pytest.approx(f1_score(y_true, y_pred, pos_label=other_pos(y_train)))


def other_pos(y_train):
    return 1 - positive_class(y_train, 2)


def test_positive_class_is_least_frequent_training_class():
    assert positive_class(np.array([0, 0, 0, 1]), 2) == 1
    assert positive_class(np.array([0, 1, 1, 1]), 2) == 0


def test_auc_undefined_with_one_class_in_test():
    proba = np.full((5, 2), 0.5)
    assert np.isnan(score(np.zeros(5, int), proba, np.array([0, 1]), 2)["auc"])


@pytest.mark.parametrize("k", [2, 3])
def test_macro_f1_and_the_one_class_flag(k):
    rng = np.random.default_rng(k)
    y_true = rng.integers(0, k, 300)
    y_train = rng.integers(0, k, 600)
    proba = rng.dirichlet(np.ones(k), size=300)
    got = score(y_true, proba, y_train, k)
    y_pred = np.argmax(proba, axis=1)
    assert got["macro_f1"] == pytest.approx(
        f1_score(y_true, y_pred, labels=np.arange(k), average="macro", zero_division=0)
    )
    assert got["one_class"] is False and got["only_class"] == -1
    if k > 2:
        assert got["macro_f1"] == got["f1"]  # for more classes F1 is the macro average
    constant = np.zeros_like(proba)
    constant[:, 1] = 1.0
    flat = score(y_true, constant, y_train, k)
    assert flat["one_class"] is True and flat["only_class"] == 1


def dummy_scores(X_train, y_train, X_test, y_test, k):
    """scikit-learn's DummyClassifier(strategy="prior") scored by dpviz's score()."""
    dummy = DummyClassifier(strategy="prior").fit(X_train, y_train)
    proba = np.zeros((len(y_test), k))
    proba[:, dummy.classes_] = dummy.predict_proba(X_test)
    return dummy, score(y_test, proba, y_train, k)


@pytest.mark.parametrize(
    ("k", "shares"),
    [
        (2, (0.97, 0.03)),
        (2, (0.3, 0.7)),
        (3, (0.6, 0.3, 0.1)),
        (5, (0.1, 0.15, 0.4, 0.2, 0.15)),
        (3, (0.8, 0.2, 0.0)),  # a class absent from the data
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_majority_baseline_equals_scikit_learns_prior_dummy(k, shares, seed):
    rng = np.random.default_rng(seed)
    y_train = rng.choice(k, 900, p=shares)
    y_test = rng.choice(k, 300, p=shares)
    X_train, X_test = rng.normal(size=(900, 2)), rng.normal(size=(300, 2))
    dummy, expected = dummy_scores(X_train, y_train, X_test, y_test, k)
    got = majority_score(y_test, y_train, k)
    assert set(got) == set(BASELINE_METRICS)
    for metric in BASELINE_METRICS:
        assert got[metric] == pytest.approx(expected[metric], nan_ok=True), metric
    predicted = dummy.predict(X_test)
    majority = np.bincount(y_train, minlength=k).argmax()
    assert (predicted == majority).all()
    assert got["accuracy"] == pytest.approx(accuracy_score(y_test, predicted))
    assert got["accuracy"] == pytest.approx(np.mean(y_test == majority))
    assert got["auc"] == pytest.approx(0.5)  # every score ties
    assert got["macro_f1"] == pytest.approx(
        f1_score(y_test, predicted, labels=np.arange(k), average="macro", zero_division=0)
    )
    if k == 2:
        assert got["f1"] == 0.0  # the positive (rarest) class is never predicted
        assert got["auc"] == pytest.approx(roc_auc_score(y_test == 1 - majority, np.zeros(300)))


def test_majority_baseline_of_a_tiny_fold():
    # The training majority is class 0 even though the test fold holds only class 1.
    got = majority_score(np.array([1, 1]), np.array([0, 0, 0, 1]), 2)
    assert got["accuracy"] == 0.0 and got["f1"] == 0.0 and np.isnan(got["auc"])
