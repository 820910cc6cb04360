"""Releasing a forest's leaves: the noisy outputs, the class prior, and their ledger.

Privacy role: this is the release. :class:`ReleaseMixin` passes each counted leaf's TRUE
counts through the leaf mechanism at the tree's ε (ε − the noisy record count − the
split histograms − the prior, divided by τ when every tree sees every record), with
fresh noise from the release's :class:`~dpviz.privacy.noise.NoiseSource`; a leaf no
record reached releases the mechanism's output on zero counts. The class prior is the
noisy class histogram (discrete Laplace) at :attr:`prior_epsilon_`. Every release, earlier
ones included, is booked in :attr:`ledger_`.

A fitted model is one release: every leaf of the trees is drawn at the release (fit,
:meth:`~ReleaseMixin.relabel`, ``partial_fit``) and the key is dropped, so every copy,
pickle and exported file answers identically, and a prediction looks every leaf up the
same way whether records reached it or not. (An evaluation sweep's
:meth:`~ReleaseMixin.release_instead` draws the leaves its test records reach as it
goes, and the rest before anything public reads the model.)

Trees with more nodes than an export may list
(:func:`~dpviz.models.trees.space.export_node_limit`) cannot be drawn whole: their untrained
leaves are drawn when a prediction first reaches them and kept, so such a model refuses
to be copied (a copy would draw them again and disagree exactly where no record went,
which shows where records are) and the time of a first prediction at an untrained leaf
differs from a trained one's.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.forest.floor import (
    CHECK_STREAM,
    check_applies,
    check_epsilon,
    check_gain,
    release_check,
)
from dpviz.models.forest.ledger import build_ledger
from dpviz.models.forest.records import LeafOutputs
from dpviz.models.forest.scoring import count_prior, small_epsilon_prior_cap
from dpviz.models.trees.full import leaf_space_keys
from dpviz.models.trees.prior import prior_epsilon
from dpviz.models.trees.space import export_node_limit
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import get_mechanism, largest_count
from dpviz.privacy.noise import KeyedLeafNoise, NoiseSource

_PRIOR_STREAM = 0xC1A55_0000  # the noise stream of the class prior within a release


class ReleaseMixin:
    """Leaf release, empty leaves and ledger of
    :class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`."""

    @property
    def prior_epsilon_(self) -> float:
        """ε of the noisy class prior: 0 with ``prior_share=0`` and for ``none``. With
        disjoint data its floor follows the record count the trees read, when they read
        one: their votes have a noise margin of their own at tiny leaf ε
        (:func:`~dpviz.models.forest.scoring.noise_margin`). Trees that share the records
        have none and lean on the prior (a floor at 150/n̂ put Private-RDT on abalone at
        ε = 0.1 more than 0.5 points below the majority in 4 of 30 five-fold runs, 1 of
        30 without it)."""
        if not get_mechanism(self.mechanism).private:
            return 0.0
        disjoint = self.data_split == "disjoint"
        counted = getattr(self, "depth_n_", None) if disjoint else None
        eps = prior_epsilon(
            float(self.epsilon), float(getattr(self, "prior_share", 0.0)), n_records=counted
        )
        # Below ε = 1 disjoint trees sized from the record count ("auto" trees, the records
        # depth rule) are sized for their signal: their leaves get the budget.
        sized = self.n_estimators == "auto" or self.depth == "records"
        return small_epsilon_prior_cap(float(self.epsilon), eps) if disjoint and sized else eps

    @property
    def check_epsilon_(self) -> float:
        """ε of the floor's out-of-bag check (:mod:`dpviz.models.forest.floor`): 5% of ε from
        ε = 2 up when the fit kept the checked records' routing (a private mechanism,
        disjoint trees, a prior; a plain fit, not a distributed one), else 0. Public: the
        configuration."""
        if getattr(self, "_check_routes", None) is None or not check_applies(self):
            return 0.0
        return check_epsilon(float(self.epsilon))

    @property
    def leaf_epsilon_(self) -> float:
        """ε of the leaf outputs: ε less a noisy record count, the split histograms, a
        noisy class prior and the floor's check."""
        spent = (
            getattr(self, "depth_count_epsilon_", 0.0)
            + getattr(self, "split_epsilon_", 0.0)
            + self.prior_epsilon_
            + self.check_epsilon_
        )
        return float(self.epsilon) - spent

    def _release_leaves(self, source: NoiseSource, *, every_leaf: bool = True) -> None:
        """Release every leaf under the current ε and mechanism with fresh noise from
        ``source`` (used here and then dropped), and book it in the ledger.

        ``every_leaf=False`` (an evaluation sweep's alternative releases) leaves the
        untrained leaves to be drawn as the sweep reaches them; anything public (a
        prediction, ``released_outputs``, a copy) draws the rest first."""
        mech = get_mechanism(self.mechanism)
        leaf_eps = self.leaf_epsilon_
        if leaf_eps <= 0:
            raise ValueError(
                f"ε = {float(self.epsilon):g} leaves nothing for the leaves after the noisy "
                f"record count (ε = {self.depth_count_epsilon_:g}) and split histograms "
                f"(ε = {self.split_epsilon_:g}), both spent when the trees were grown, the "
                f"class prior (ε = {self.prior_epsilon_:g}) and the floor's check "
                f"(ε = {self.check_epsilon_:g}); choose a larger ε, or "
                "declare the record count (declared_n) before fitting"
            )
        self.tree_epsilon_ = (
            leaf_eps / self.n_estimators_ if self.data_split == "shared" else leaf_eps
        )
        released = self._release(self.leaf_counts_, KeyedLeafNoise(source, self.leaf_keys_))
        self.leaf_labels_ = released.labels
        self.leaf_noisy_counts_ = released.noisy_counts
        self.prior_counts_ = None
        if self.prior_epsilon_ > 0:
            self.prior_counts_ = self._noisy_class_totals(
                self.leaf_tree_, self.leaf_counts_, source
            )
        self._releases.append((mech.id, leaf_eps + self.prior_epsilon_ + self.check_epsilon_))
        self._release_private = source.private
        self._reset_empty_outputs(every_leaf)
        self._run_check(source)
        self._ledger = None  # built when first read: a sweep releases many times
        self.__dict__.pop("_diagnostics", None)

    def _run_check(self, source: NoiseSource) -> None:
        """The floor's check of this release (:mod:`dpviz.models.forest.floor`): the checked
        records' out-of-bag votes under the leaves just released, their gain over the
        prior's class, released with discrete Laplace noise at :attr:`check_epsilon_`.
        Sets :attr:`floor_check_` (the released gain, None without a check) and
        :attr:`floor_trusted_` (False: the forest answers the prior's class)."""
        self.floor_check_, self.floor_trusted_ = None, True
        if not self.check_epsilon_:
            return
        routed, y = self._check_routes.routes(self)
        prior = count_prior(self.prior_counts_, len(self.classes_))
        votes = self.votes(routed) if routed.n_records else np.zeros((0, len(prior)))
        gain = check_gain(votes, y, int(np.argmax(prior)))
        noise = source.child(CHECK_STREAM).generator()
        self.floor_check_, self.floor_trusted_ = release_check(gain, self.check_epsilon_, noise)

    def _noisy_class_totals(self, leaf_tree, leaf_counts, source: NoiseSource) -> np.ndarray:
        """Class totals of counted leaves, each record once (its own tree when disjoint,
        tree 1 when shared), plus discrete Laplace noise at the prior's ε."""
        rows = leaf_tree == 0 if self.data_split == "shared" else slice(None)
        totals = leaf_counts[rows].sum(axis=0)
        noise = source.child(_PRIOR_STREAM).generator()
        return totals + noise.discrete_laplace(self.prior_epsilon_, len(totals))

    def relabel(
        self, epsilon: float | None = None, mechanism: str | None = None, *, every_leaf=True
    ):
        """Release the leaves again under another ε or mechanism, keeping the trees and
        the routing of the data (they do not depend on ε): what makes an ε sweep cheap.

        The new release draws fresh noise. The earlier releases were published too, so
        the ledger adds their ε (sequential composition). ``every_leaf``: see
        :meth:`release_instead`.
        """
        self._check_fitted()
        before = self.epsilon, self.mechanism
        if epsilon is not None:
            self.epsilon = epsilon
        if mechanism is not None:
            self.mechanism = mechanism
        try:
            self._validate_params()
            self._release_leaves(self._release_source(0), every_leaf=every_leaf)
        except ValueError:
            # A refused release leaves the model and its ledger as they were.
            self.epsilon, self.mechanism = before
            raise
        return self

    def release_instead(self, epsilon: float, mechanism: str | None = None):
        """Discard the current release, unpublished, and draw another at ``epsilon``.

        For evaluation sweeps, where each (mechanism, ε) is an alternative model of the
        same trees, never two published releases: the ledger books only the new one.
        Use :meth:`relabel` for a model whose release was already shown or exported.
        Untrained leaves are drawn as :meth:`votes` reaches them (a sweep's test records
        reach a few), the rest before anything public reads the model (a prediction,
        :meth:`released_outputs`, a copy): the same release, drawn in another order.
        """
        self._check_fitted()
        self._releases = self._releases[:-1]
        return self.relabel(epsilon, mechanism, every_leaf=False)

    def _release(self, counts: np.ndarray, noise) -> LeafOutputs:
        """Release leaves from their counts and their noise."""
        mech = get_mechanism(self.mechanism)
        labels, noisy = mech.release(counts, self.tree_epsilon_, noise)
        return LeafOutputs(np.asarray(labels, dtype=np.int64), noisy)

    # --- leaves no training record reached ---------------------------------------------

    def _leaf_space(self) -> np.ndarray | None:
        """Sorted keys of every leaf of the trees (public structure), or None when the
        trees hold more nodes than an export may list; kept while the structure is."""
        cached = self.__dict__.get("_space_cache")
        if cached is not None and cached[0] is self.root_keys_ and cached[1] is self.space_:
            return cached[2]
        limit = export_node_limit(self.space_)
        built = self.__dict__.get("_route_cache")
        if built is not None and built[0] is self.root_keys_ and built[1] is self.space_:
            # The fit built every tree whole for routing: its leaves are the leaf space.
            store = built[2].store
            keys = np.sort(store.key[built[2].leaf_nodes]) if store.size <= limit else None
        else:
            keys = leaf_space_keys(self.space_, self.root_keys_, limit)
        self._space_cache = (self.root_keys_, self.space_, keys)
        return keys

    def _reset_empty_outputs(self, every_leaf: bool = True) -> None:
        """Forget the untrained leaves' outputs of the previous release; with
        ``every_leaf``, draw all of this release's at once (:meth:`_complete_release`)."""
        k = len(self.classes_)
        self._empty_keys = np.empty(0, dtype=np.uint64)
        self._empty_labels = np.empty(0, dtype=np.int64)
        self._empty_noisy = np.zeros((0, k), dtype=np.int64)
        self._empty_sorted = True
        self._empty_complete = False
        if every_leaf:
            self._complete_release()

    def _complete_release(self) -> None:
        """Draw every untrained leaf not drawn yet: the mechanism's output on all-zero
        counts, with this release's fresh noise. Beyond what an export lists
        (:meth:`_leaf_space` is None) they stay drawn when first reached instead."""
        if getattr(self, "_empty_complete", True):
            return
        space = self._leaf_space()
        if space is None:
            return
        self._sort_empty()
        missing = (self._trained(space) < 0) & ~np.isin(space, self._empty_keys)
        self._add_drawn(space[missing])
        self._empty_complete = True

    def _empty_outputs(self, keys: np.ndarray, *, distinct: bool = False) -> LeafOutputs:
        """Released outputs of untrained leaves ``keys``.

        Every one was drawn at the release when the trees fit in an export (or, after
        :meth:`release_instead`, is drawn now and kept: lazy sampling, the same random
        model, with no key kept). ``distinct`` says the keys hold no repeats: then a first
        lazy draw needs no sorting (a sweep)."""
        keys = np.asarray(keys, dtype=np.uint64)
        if self._empty_complete:
            return self._drawn_outputs(keys)
        if distinct and not len(self._empty_keys) and len(keys):
            labels, noisy = self._draw_empty(keys)
            self._empty_keys, self._empty_labels, self._empty_noisy = keys, labels, noisy
            self._empty_sorted = False
            return LeafOutputs(labels, noisy if self.leaf_noisy_counts_ is not None else None)
        self._sort_empty()
        self._add_drawn(np.unique(keys[~np.isin(keys, self._empty_keys)]))
        return self._drawn_outputs(keys)

    def _sort_empty(self) -> None:
        if not getattr(self, "_empty_sorted", True):
            order = np.argsort(self._empty_keys)
            self._empty_keys = self._empty_keys[order]
            self._empty_labels = self._empty_labels[order]
            self._empty_noisy = self._empty_noisy[order]
            self._empty_sorted = True

    def _add_drawn(self, new: np.ndarray) -> None:
        """Draw the untrained leaves ``new`` (sorted, none drawn yet) and keep them."""
        if not len(new):
            return
        labels, noisy = self._draw_empty(new)
        order = np.argsort(np.concatenate([self._empty_keys, new]), kind="stable")
        self._empty_keys = np.concatenate([self._empty_keys, new])[order]
        self._empty_labels = np.concatenate([self._empty_labels, labels])[order]
        self._empty_noisy = np.concatenate([self._empty_noisy, noisy])[order]

    def _drawn_outputs(self, keys: np.ndarray) -> LeafOutputs:
        """Outputs of untrained leaves already drawn (``ValueError`` for another key)."""
        drawn = self._empty_keys
        pos = np.minimum(np.searchsorted(drawn, keys), max(0, len(drawn) - 1))
        if len(keys) and (not len(drawn) or np.any(drawn[pos] != keys)):
            raise ValueError("asked for a leaf that is not an untrained leaf of this forest")
        noisy = self._empty_noisy[pos] if self.leaf_noisy_counts_ is not None else None
        return LeafOutputs(self._empty_labels[pos], noisy)

    def _draw_empty(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Labels and noisy counts (zeros for label mechanisms) of untrained ``keys``."""
        k = len(self.classes_)
        zeros = np.zeros((len(keys), k), dtype=np.int64)
        block = self._release(zeros, KeyedLeafNoise(self._release_source(0), keys))
        labels, noisy = block.labels, block.noisy_counts
        for batch in range(1, self.n_batches_):
            # An untrained leaf also received one batch of fresh noise per update.
            source = self._release_source(batch)
            noisy = noisy + self._release(zeros, KeyedLeafNoise(source, keys)).noisy_counts
            labels = largest_count(noisy, KeyedLeafNoise(source, keys))
        return labels, zeros if noisy is None else noisy

    def __getstate__(self):
        """A copy (pickle, deepcopy, joblib, Dask) of a release holds every leaf's drawn
        output; a release whose untrained leaves are drawn on first use cannot be copied
        (``ValueError``), since a copy would answer differently where no record went."""
        if getattr(self, "_releases", None):
            self._complete_release()
        if getattr(self, "_check_routes", None) is not None:
            self._check_routes.routes(self)  # a copy keeps the routing, not the records
        if getattr(self, "_releases", None) and not self._empty_complete:
            raise ValueError(
                f"this forest ({self.n_estimators_} trees of depth {self.depth_}) has more "
                f"than {export_node_limit(self.space_):,} nodes, more than an export lists, "
                "so a leaf no training record reached releases its output when a prediction "
                "first reaches it. A copy (pickle, deepcopy, a parallel worker) would draw "
                "those leaves again and answer differently exactly where no record went, "
                "which shows where the records are: copying it is refused. Refit with a "
                "smaller depth (or fewer trees) so that every leaf is drawn at fit time, "
                "or use this model in the process that fitted it."
            )
        state = super().__getstate__()
        state.pop("_space_cache", None)  # recomputed from the structure when needed
        state.pop("_threshold_cache", None)  # recomputed alike (public randomness)
        return state

    # --- the ledger -------------------------------------------------------------------

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        return build_ledger(
            self.mechanism,
            float(self.epsilon),
            getattr(self, "n_estimators_", None) or self.tree_count(),
            self.data_split,
            schema_inferred=schema_inferred,
            n_batches=max(1, getattr(self, "n_batches_", 1)),
            depth_count_epsilon=getattr(self, "depth_count_epsilon_", 0.0),
            split_epsilon=getattr(self, "split_epsilon_", 0.0),
            prior_epsilon=self.prior_epsilon_,
            check_epsilon=self.check_epsilon_,
            earlier_releases=getattr(self, "_releases", [])[:-1],
            replayable=self.noise_seed is not None,
        )

    @property
    def ledger_(self) -> PrivacyLedger:
        """The privacy ledger of the current release (and of every earlier one)."""
        self._check_fitted()
        if self._ledger is None:
            self._ledger = self.privacy_ledger(self.schema_.inferred)
        return self._ledger
