"""The random decision forest: Fletcher & Islam (2017) and JPW (Jagannathan et al. 2012).

Public face: :class:`DPRandomForestClassifier` (Fletcher–Islam, and JPW with
``depth_rule="jpw"``), :class:`PrivateRDTClassifier`, the tree-count settings
(:data:`AUTO_TREES`, :data:`DATA_SPLITS`, :data:`MAX_TREES`, :func:`check_tree_count`,
:func:`suggest_trees`) and the ledger a fitted forest books (:func:`build_ledger`).

Modules, one stage each: ``estimator`` (the estimator, calling the others), ``splits`` (the
noisy split histograms), ``records`` (records and their trees), ``routing`` (records to
leaves), ``counting`` (class counts per leaf), ``scoring`` (votes, the class prior),
``voting`` (predictions), ``release`` (the leaf mechanism's release), ``ledger`` (what is
booked), ``floor`` (the floor's check), ``diagnostics`` (NOT private diagnostics),
``sizing`` (the suggested tree count).

Privacy: ε-DP under add/remove-one neighbours (SPEC §1); every release is booked in the
ledger and drawn with noise from a fresh secret key unless a noise seed makes it replayable.

Imports dpviz.privacy, dpviz.compiled, dpviz.tabular, the shared tree machinery
(dpviz.models.trees) and dpviz.models.objective; never another model family.
"""

from dpviz.models.forest.estimator import (
    AUTO_TREES,
    DATA_SPLITS,
    MAX_TREES,
    DPRandomForestClassifier,
    PrivateRDTClassifier,
    build_ledger,
    check_tree_count,
)
from dpviz.models.forest.sizing import suggest_trees

__all__ = [
    "AUTO_TREES",
    "DATA_SPLITS",
    "MAX_TREES",
    "DPRandomForestClassifier",
    "PrivateRDTClassifier",
    "build_ledger",
    "check_tree_count",
    "suggest_trees",
]
