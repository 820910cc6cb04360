"""Teaching material computed live: the paper's tables, a mechanism playground, the
exact privacy-loss map, the 2021 addendum in plain words, and one tree growing.

No streamlit here: every function returns plain data (DataFrames, dataclasses, text)
that a page renders and a unit test checks. Most inputs are toy class counts typed by
the user, not records; where a function reads real records (:func:`tree_walkthrough`)
its outputs say which parts are NOT private diagnostics.

The package's parts: :mod:`~dpviz.evaluation.teach.papers` (the papers' tables and the
addendum's story), :mod:`~dpviz.evaluation.teach.mechanism_playground` (the mechanism playground),
:mod:`~dpviz.evaluation.teach.loss_map` (the exact privacy-loss map) and
:mod:`~dpviz.evaluation.teach.walkthrough` (one tree growing). This face re-exports their
public names.
"""

from dpviz.evaluation.teach.loss_map import (
    MAX_GRID_COUNT,
    LossGrid,
    privacy_loss_grid,
)
from dpviz.evaluation.teach.mechanism_playground import (
    CLASS_LETTERS,
    MAX_CLASSES,
    MAX_DRAWS,
    MAX_TOY_COUNT,
    MIN_CLASSES,
    PLAYGROUND_MECHANISMS,
    Playground,
    empirical_frequencies,
    gap_explanation,
    mechanism_label,
    playground,
)
from dpviz.evaluation.teach.papers import (
    ADDENDUM_STORY,
    TABLE2_EPSILONS,
    TABLE2_GAPS,
    TABLE6_EPSILON,
    TABLE6_MECHANISMS,
    TABLE6_PAIRS,
    addendum_story,
    compare_with_printed,
    majority_probability_table,
    printed_unit,
    smooth_sensitivity_table,
)
from dpviz.evaluation.teach.walkthrough import (
    TreeWalkthrough,
    WalkStep,
    tiny_demo,
    tree_walkthrough,
)

__all__ = [
    "ADDENDUM_STORY",
    "CLASS_LETTERS",
    "LossGrid",
    "MAX_CLASSES",
    "MAX_DRAWS",
    "MAX_GRID_COUNT",
    "MAX_TOY_COUNT",
    "MIN_CLASSES",
    "PLAYGROUND_MECHANISMS",
    "Playground",
    "TABLE2_EPSILONS",
    "TABLE2_GAPS",
    "TABLE6_EPSILON",
    "TABLE6_MECHANISMS",
    "TABLE6_PAIRS",
    "TreeWalkthrough",
    "WalkStep",
    "addendum_story",
    "compare_with_printed",
    "empirical_frequencies",
    "gap_explanation",
    "majority_probability_table",
    "mechanism_label",
    "playground",
    "printed_unit",
    "privacy_loss_grid",
    "smooth_sensitivity_table",
    "tiny_demo",
    "tree_walkthrough",
]
