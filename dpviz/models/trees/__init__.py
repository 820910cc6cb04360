"""Shared tree machinery: what every model family builds its trees from.

Public face: :class:`TreeSpace` (random decision trees grown lazily from public
randomness), :func:`route` (records to leaves) and the depth rules (:data:`DEPTH_RULES`,
:data:`MAX_DEPTH`, :func:`resolve_depth`, :func:`check_rule`).

Modules: ``space`` (the trees, their nodes, routing and export), ``depth`` (the depth rules
of SPEC §2), ``features`` (feature order, records as codes at public bins), ``thresholds``
(split points inside released distribution functions), ``full`` (whole trees without
records: listed for export, their leaves counted or estimated), ``prior`` (the ε of a noisy class
prior), ``draws`` (the generators a fit draws from).

Privacy: a tree's splits come from ``random_state`` (public) or from released noisy
histograms (post-processing); routing reads records only inside a family's booked release.

Imports dpviz.privacy, dpviz.compiled and dpviz.tabular; every model family may import it.
"""

from dpviz.models.trees.depth import DEPTH_RULES, MAX_DEPTH, check_rule, resolve_depth
from dpviz.models.trees.space import TreeSpace, route

__all__ = ["DEPTH_RULES", "MAX_DEPTH", "TreeSpace", "check_rule", "resolve_depth", "route"]
