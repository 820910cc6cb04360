"""dpviz: what differential privacy costs a tree-ensemble classifier."""

from .algorithms import ALGORITHMS, get_algorithm
from .boosting import DPBoostClassifier
from .forest import DPRandomForestClassifier, PrivateRDTClassifier
from .greedy import DPDecisionTreeClassifier
from .ledger import PrivacyLedger
from .mechanisms import MECHANISMS, get_mechanism
from .model_io import ReleasedForest, load_model, release
from .schema import PrivacyLeakWarning, Schema, infer_schema

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
