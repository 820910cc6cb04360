"""dpviz: what differential privacy costs a tree-ensemble classifier."""

from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.files.load import ReleasedForest, load_model, release
from dpviz.models.forest.estimator import DPRandomForestClassifier, PrivateRDTClassifier
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import MECHANISMS, get_mechanism
from dpviz.privacy.schema import PrivacyLeakWarning, Schema, infer_schema

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "MECHANISMS",
    "DPBoostClassifier",
    "DPDecisionTreeClassifier",
    "DPRandomForestClassifier",
    "PrivacyLeakWarning",
    "PrivacyLedger",
    "PrivateRDTClassifier",
    "ReleasedForest",
    "Schema",
    "__version__",
    "get_algorithm",
    "get_mechanism",
    "infer_schema",
    "load_model",
    "release",
]
