import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from dpviz import DPRandomForestClassifier, PrivateRDTClassifier
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier


def _estimators():
    # ε = 5 with every tree seeing all data: DP noise small enough for the checks'
    # accuracy floors on a few dozen records. Replayable noise (noise_seed, NOT private)
    # because the checks compare fits for idempotency. No check is excluded.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            DPRandomForestClassifier(
                epsilon=5.0,
                n_estimators=10,
                depth=4,
                data_split="shared",
                random_state=0,
                noise_seed=0,
            ),
            PrivateRDTClassifier(epsilon=5.0, depth=4, random_state=0, noise_seed=0),
            DPDecisionTreeClassifier(
                epsilon=5.0, max_depth=3, steps=1, random_state=0, noise_seed=0
            ),
            DPBoostClassifier(
                epsilon=50.0, learning_rate=0.3, max_depth=3, random_state=0, noise_seed=0
            ),
        ]


@parametrize_with_checks(_estimators())
def test_sklearn_compatible(estimator, check):
    check(estimator)
