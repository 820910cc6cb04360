"""Plotly figures of one tree: a node-link diagram for shallow trees, an icicle for deep
ones. Input is a node table from :mod:`dpviz.figures.tree_layout`.

``diagnostics=False`` draws the released view (structure and released labels: what an
outsider sees); ``diagnostics=True`` draws true counts and flips, which are NOT private,
and says so in the title.

The package's parts: :mod:`~dpviz.figures.trees.style` (colours, titles, text that fits),
:mod:`~dpviz.figures.trees.labels` (hover texts, split rules, branch labels and the node
layout), :mod:`~dpviz.figures.trees.node_link` and :mod:`~dpviz.figures.trees.icicle` (the
two drawings) and :mod:`~dpviz.figures.trees.boost` (DPBoost trees, real-valued leaves).
This face re-exports their public names.
"""

from dpviz.figures.trees.boost import (
    BOOST_DIAGNOSTICS_TITLE,
    BOOST_NODE_LINK_MAX_LEAVES,
    BOOST_RELEASED_TITLE,
    VALUE_SCALE,
    boost_hover,
    boost_tree_figure,
)
from dpviz.figures.trees.icicle import (
    icicle_figure,
)
from dpviz.figures.trees.labels import (
    BRANCHES_LISTED,
    CROWDED_LEVEL,
    EDGE_FONT,
    LABEL_CLEAR_PX,
    MAX_TREE_HEIGHT,
    MIN_FLAT_CHARS,
    VERTICAL_CHARS,
    node_hover,
)
from dpviz.figures.trees.node_link import (
    node_link_figure,
)
from dpviz.figures.trees.style import (
    CHAR_PX,
    CLASS_COLORS,
    DIAGNOSTICS_TITLE,
    EMPTY_COLOR,
    FLIPPED_COLOR,
    LABEL_CHARS,
    NOTE_CHARS,
    PLOT_PX,
    RELEASED_COUNTS_TITLE,
    RELEASED_TITLE,
    STRUCTURE_COLOR,
    TITLE_CHARS,
    class_color,
    leaf_legend,
    shorten,
    tree_title,
    wrap,
)

__all__ = [
    "BOOST_DIAGNOSTICS_TITLE",
    "BOOST_NODE_LINK_MAX_LEAVES",
    "BOOST_RELEASED_TITLE",
    "BRANCHES_LISTED",
    "CHAR_PX",
    "CLASS_COLORS",
    "CROWDED_LEVEL",
    "DIAGNOSTICS_TITLE",
    "EDGE_FONT",
    "EMPTY_COLOR",
    "FLIPPED_COLOR",
    "LABEL_CHARS",
    "LABEL_CLEAR_PX",
    "MAX_TREE_HEIGHT",
    "MIN_FLAT_CHARS",
    "NOTE_CHARS",
    "PLOT_PX",
    "RELEASED_COUNTS_TITLE",
    "RELEASED_TITLE",
    "STRUCTURE_COLOR",
    "TITLE_CHARS",
    "VALUE_SCALE",
    "VERTICAL_CHARS",
    "boost_hover",
    "boost_tree_figure",
    "class_color",
    "icicle_figure",
    "leaf_legend",
    "node_hover",
    "node_link_figure",
    "shorten",
    "tree_title",
    "wrap",
]
