"""Shared tree machinery: what every model family builds its trees from.

Public face: :class:`TreeSpace` (random decision trees grown lazily from public
randomness), :func:`route` (records to leaves) and the depth rules (:data:`DEPTH_RULES`,
:data:`MAX_DEPTH`, :func:`resolve_depth`, :func:`check_rule`).

Modules: ``space`` (the tree space, a level of nodes and the draws that grow it, the sizes
bounding a frontier and an export), ``store`` (built nodes as flat arrays), ``routing``
(records to leaves; each record's tree), ``compact`` (trees built whole, one byte a
leaf), ``votes`` (what the reached leaves add up to), ``passes`` (running the compiled
kernels over records), ``depth`` (the depth rules
of SPEC §2), ``features`` (feature order, records as codes at public bins), ``thresholds``
(split points inside released distribution functions), ``full`` (whole trees without
records: listed for export, their leaves counted or estimated), ``prior`` (the ε of a noisy class
prior), ``draws`` (the generators a fit draws from), ``threshold`` (the macro_f1 objective's
threshold from a model's released leaf counts).

Privacy: a tree's splits come from ``random_state`` (public) or from released noisy
histograms (post-processing); routing reads records only inside a family's booked release.

Imports dpviz.privacy, dpviz.compiled and dpviz.tabular; every model family may import it.
"""

from dpviz.models.trees.depth import DEPTH_RULES, MAX_DEPTH, check_rule, resolve_depth
from dpviz.models.trees.routing import route
from dpviz.models.trees.space import TreeSpace

__all__ = ["DEPTH_RULES", "MAX_DEPTH", "TreeSpace", "check_rule", "resolve_depth", "route"]
