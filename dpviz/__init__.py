"""dpviz: what differential privacy costs a tree-ensemble classifier."""

from .forest import DPRandomForestClassifier
from .ledger import PrivacyLedger
from .mechanisms import MECHANISMS, get_mechanism
from .model_io import ReleasedForest
from .schema import PrivacyLeakWarning, Schema, infer_schema

__version__ = "0.1.0"

__all__ = [
    "MECHANISMS",
    "DPRandomForestClassifier",
    "PrivacyLeakWarning",
    "PrivacyLedger",
    "ReleasedForest",
    "Schema",
    "__version__",
    "get_mechanism",
    "infer_schema",
]
