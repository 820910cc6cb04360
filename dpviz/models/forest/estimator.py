"""DPRandomForestClassifier: Fletcher & Islam's random decision forest with a private
leaf mechanism (SPEC §2–§3).

The estimator, its fitting steps and the public randomness (seeds, tree space, the
record→tree hash) live here; each seam of the method is a private module next to it,
its docstring stating its privacy role:

- :mod:`~dpviz.models.forest.counting` — routing the training records and counting
  classes per leaf (reads the data; TRUE counts, never released as such);
- :mod:`~dpviz.models.forest.release` — the release: noisy leaf outputs, untrained
  leaves, the noisy class prior, and the ledger;
- :mod:`~dpviz.models.forest.ledger` — the ledger from the configuration (public);
- :mod:`~dpviz.models.forest.routing` — routing records through the public trees;
- :mod:`~dpviz.models.forest.voting` — votes and predictions (post-processing);
- :mod:`~dpviz.models.forest.scoring` — the prior's ε and weight, and the scoring of
  released noisy counts (post-processing);
- :mod:`~dpviz.models.forest.records` — the values passed between the parts;
- :mod:`~dpviz.models.forest.diagnostics` — leaf table and diagnostics (NOT private).

The floor's out-of-bag check of the trees against the prior, from ε = 1 up, is
:mod:`dpviz.models.forest.floor` (booked; its ε comes out of the prior's share).
"""

from __future__ import annotations

import hashlib
import time
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from dpviz.models.forest import counting, diagnostics, release, routing, voting
from dpviz.models.forest.assign import assign_pairs, hash_trees
from dpviz.models.forest.floor import out_of_bag_records
from dpviz.models.forest.ledger import build_ledger
from dpviz.models.forest.records import (
    LeafCounts,
    LeafOutputs,
    RoutedRecords,
)
from dpviz.models.forest.scoring import (
    EVIDENCE_GAIN,
    PRIOR_FLOOR,
    PRIOR_LEAD_FLOOR,
    PRIOR_MAX_SHARE,
    SHRINK_MIN_RECORDS,
    SHRINK_NOISE_SCALES,
    clipped_noise_mean,
    count_prior,
    count_values,
    count_votes,
    evidence_gain,
    flipped_labels,
    label_names,
    prior_epsilon,
    prior_shares,
    prior_weight,
    shrunk_log_shares,
)
from dpviz.models.forest.sizing import (
    SPLIT_CHOICES,
    TREE_STEPS,
    auto_shared_trees,
    forest_depth,
    resolve_split,
    shared_tree_count,
    signal_records,
    suggest_trees,
)
from dpviz.models.forest.splits import (
    SplitRelease,
    TableLayout,
    class_tables,
    release_splits,
    split_epsilon,
)
from dpviz.models.objective import ACCURACY, check_objective
from dpviz.models.trees.depth import COUNTED_RULES
from dpviz.models.trees.features import feature_order
from dpviz.models.trees.space import TreeSpace
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import get_mechanism, largest_count, valid_epsilon
from dpviz.privacy.noise import KeyedLeafNoise, NoiseSource
from dpviz.privacy.randomness import tree_root_keys
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData
from dpviz.tabular.inputs import batch_data, check_whole_numbers, prediction_data, training_data

# Every name other code imports from here, the parts' included.
__all__ = [
    "AUTO_TREES",
    "DATA_SPLITS",
    "DEPTH_COUNT_SHARE",
    "EVIDENCE_GAIN",
    "MAX_TREES",
    "PRIOR_FLOOR",
    "PRIOR_LEAD_FLOOR",
    "PRIOR_MAX_SHARE",
    "SHRINK_MIN_RECORDS",
    "SHRINK_NOISE_SCALES",
    "DPRandomForestClassifier",
    "LeafCounts",
    "LeafOutputs",
    "PrivateRDTClassifier",
    "RoutedRecords",
    "assign_pairs",
    "check_tree_count",
    "build_ledger",
    "clipped_noise_mean",
    "count_prior",
    "count_values",
    "count_votes",
    "evidence_gain",
    "feature_order",
    "flipped_labels",
    "hash_trees",
    "label_names",
    "prior_epsilon",
    "prior_shares",
    "prior_weight",
    "shrunk_log_shares",
    "space_for",
    "tree_root_keys",
]

DATA_SPLITS = ("disjoint", "shared")
# The tree count chosen from the record count (declared, or noisy: see ``declared_n``).
AUTO_TREES = "auto"
MAX_TREES = 10_000
# Share of ε spent on a noisy record count when a depth rule that reads it has no
# declared n.
DEPTH_COUNT_SHARE = 0.05


def check_tree_count(value) -> None:
    """``n_estimators`` must be "auto" or a whole number in [1, MAX_TREES]."""
    if isinstance(value, str) and value == AUTO_TREES:
        return
    if isinstance(value, bool) or not isinstance(value, Integral) or not 1 <= value <= MAX_TREES:
        raise ValueError(
            f'n_estimators must be "auto" or a whole number between 1 and {MAX_TREES:,}, '
            f"got {value!r}"
        )


def _seeds(random_state) -> tuple[int, int]:
    """Structure and record→tree hash seeds from a scikit-learn style random_state.

    Both are public randomness: no noise is ever derived from ``random_state``."""
    if isinstance(random_state, np.random.RandomState):
        entropy = int(random_state.randint(0, 2**31 - 1))
    elif isinstance(random_state, np.random.Generator):
        entropy = int(random_state.integers(0, 2**63 - 1))
    elif random_state is None or isinstance(random_state, Integral):
        entropy = None if random_state is None else int(random_state)
        if entropy is not None and entropy < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
    else:
        raise ValueError(
            f"random_state must be None, an int or a numpy generator, got {random_state!r}"
        )
    state = np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint64)
    return tuple(int(v) for v in state)


def space_for(schema: Schema, depth: int, splits: SplitRelease | None = None) -> TreeSpace:
    return TreeSpace(
        lows=np.array([f.low for f in schema.continuous], dtype=np.float64),
        highs=np.array([f.high for f in schema.continuous], dtype=np.float64),
        n_values=np.array([len(f.values) for f in schema.discrete], dtype=np.int64),
        max_depth=depth,
        split_cdf=None if splits is None else splits.cdf,
        feature_weights=None if splits is None else splits.weights,
    )


def split_tables(encoded: EncodedData, schema: Schema) -> np.ndarray:
    """TRUE class × value tables of every feature, the split release's input
    (:func:`~dpviz.models.forest.splits.class_tables`). Never released as is."""
    space = space_for(schema, 1)
    return class_tables(
        encoded.continuous,
        encoded.discrete,
        encoded.y,
        space.lows,
        space.highs,
        TableLayout.of(schema),
        len(schema.classes),
    )


class DPRandomForestClassifier(ClassifierMixin, BaseEstimator):
    """Differentially private random decision forest (Fletcher & Islam 2017, 2021 addendum).

    The trees are drawn without looking at the data; the data is read once, to release
    one output per leaf through ``mechanism``. With ``data_split="disjoint"`` each tree
    sees its own part of the records and spends the full ``epsilon`` (parallel
    composition); with ``"shared"`` every tree sees all records and spends
    ``epsilon / n_estimators`` (sequential composition).

    Privacy: the released model (structure and leaf outputs) is ``epsilon``-DP under
    add/remove-one neighbours when ``mechanism`` is proven DP (``permute_flip``,
    ``count_em``, ``global_em``, ``laplace_counts``) and the schema is public. It is
    NOT DP with ``smooth_em`` (withdrawn in 2021), with ``none``, or when the schema
    was inferred from the data. ``ledger_`` states which holds.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget.
    n_estimators : int or "auto", default="auto"
        Number of trees. ``"auto"``: 10, 25, 50 or 100, the most that keep about 150
        records per tree (:func:`~dpviz.models.forest.sizing.suggest_trees`; with
        ``data_split="shared"`` 100), from ``declared_n`` or the noisy record count;
        with ``data_split="auto"`` from ε = 5 up ⌈ε/0.5⌉ (rounded up to even) trees in
        two halves of the records.
        Below ε = 1 the trees (then 3 or 5) and the ``records`` depth are
        sized for n·s records, s = ε rounded down to a power of ten
        (:func:`~dpviz.models.forest.sizing.signal_records`): a leaf's noise has scale 1/ε.
    depth : {"records", "theorem2", "half", "full", "jpw"} or int, default="records"
        Depth rule (SPEC §2; ``theorem2`` is the paper's) or a fixed depth. ``records``
        and ``jpw`` read the record count: ``declared_n``, or a noisy count for 5% of ε.
        ``records`` is capped at ``theorem2``'s depth from ε = 1 up only
        (:func:`~dpviz.models.forest.sizing.forest_depth`).
    mechanism : str, default="laplace_counts"
        Leaf mechanism id from ``dpviz.privacy.mechanisms.MECHANISMS``. Count
        mechanisms release noisy class counts, which rank records (AUC) far better
        than one label per leaf; ``permute_flip`` is the paper's (2021 addendum).
    data_split : {"disjoint", "shared", "auto"}, default="disjoint"
        Which records each tree reads: its own part (``"disjoint"``) or all of them
        (``"shared"``). ``"auto"``: disjoint, except with ``"auto"`` trees from ε = 5
        up, where leaf noise is far below a small tree's sampling noise: there the trees
        come in two halves of the records (a public keyed hash of each record's
        features), tree t reading half t mod 2 at 2ε/τ, so that every record is out of
        the bag of half of the trees for the floor's check
        (:func:`~dpviz.models.forest.sizing.resolve_split`,
        :func:`~dpviz.models.forest.floor.halved`; ``data_split_`` is then
        ``"shared"``, :func:`~dpviz.models.forest.floor.records_split` ``"halves"``).
        A public choice: ε and the parameters only. Not the default: on one
        weak-signal validation set it answered below the majority class (bench/README,
        "Issue 28: trees that share the records from ε = 5").
    schema : Schema, dict, str or None, default=None
        Public schema; a path to its JSON file also works. None infers it from the
        data with a PrivacyLeakWarning (the guarantee is then void).
    random_state : int, numpy generator or None, default=None
        Seeds the PUBLIC randomness only: the tree structure and the record→tree hash.
        Publishing it reveals nothing about the data; it never seeds noise.
    noise_seed : int or None, default=None
        None (the default) draws every leaf's noise from a fresh secret key from the
        operating system, which is never stored. An integer makes the noise
        replayable for tests, teaching and the papers' figures: such a model is NOT
        private (anyone with the seed can subtract the noise), and its ledger says so.
    declared_n : int or None, default=None
        A public record count for the ``records`` and ``jpw`` depth rules. When it is
        None (or 0, "not declared") they spend 5% of ε on a noisy count (booked in the
        ledger); other rules ignore it.
    prior_share : float, default=0.1
        Share of ε spent on a noisy class histogram (see :func:`prior_epsilon`: at
        most 80% of ε, and at least ``prior_share``·0.8 or, when disjoint trees read a
        record count n̂, about 150/n̂ if that is smaller; below ε = 1, for disjoint
        trees sized from the record count, at most a quarter of ε). Its
        class shares join the votes with a weight that noise-only votes rarely
        overcome, so where the leaves carry no evidence the forest answers the
        majority class instead of a coin flip. 0 gives the paper's forest.
    split_points : {"quantile", "uniform"}, default="quantile"
        How nodes split. ``uniform``: a uniformly drawn allowed feature, a continuous
        one uniformly in the node's public sub-domain (the paper's). ``quantile``: from
        noisy class × value tables of every feature, released for at most 20% of ε
        (0.2 from ε = 1 up, below it 10% of ε rounded down to a power of ten;
        :mod:`dpviz.models.forest.splits`), continuous features
        split uniformly in their distribution function and features are drawn partly
        by their relevance to the class; without continuous features it spends nothing
        and splits as ``uniform``.
    objective : {"accuracy", "balanced_accuracy", "macro_f1"}, default="accuracy"
        What ``predict`` optimises: the votes' argmax, or the votes weighed against
        :attr:`decision_prior_`, or for ``macro_f1`` on two classes with count leaves a
        threshold (:attr:`decision_threshold_`): below ε = 1 from the released leaf
        counts; from ε = 1 up from a booked histogram of out-of-bag scores, 5% of ε
        (:mod:`dpviz.models.forest.score_histogram`); for ``accuracy`` and
        ``balanced_accuracy`` there, the same per class: a cut where it beats the rule.
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        n_estimators: int | str = AUTO_TREES,
        depth: str | int = "records",
        mechanism: str = "laplace_counts",
        data_split: str = "disjoint",
        schema=None,
        random_state=None,
        noise_seed: int | None = None,
        declared_n: int | None = None,
        prior_share: float = 0.1,
        split_points: str = "quantile",
        objective: str = ACCURACY,
    ):
        self.epsilon = epsilon
        self.n_estimators = n_estimators
        self.depth = depth
        self.mechanism = mechanism
        self.data_split = data_split
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.declared_n = declared_n
        self.prior_share = prior_share
        self.split_points = split_points
        self.objective = objective

    # --- validation -------------------------------------------------------------------

    def _validate_params(self) -> None:
        valid_epsilon(self.epsilon)
        check_objective(self.objective)
        check_tree_count(self.n_estimators)
        get_mechanism(self.mechanism)
        if self.data_split not in SPLIT_CHOICES:
            raise ValueError(
                f"data_split must be one of {', '.join(SPLIT_CHOICES)}, got {self.data_split!r}"
            )
        if self.noise_seed is not None:
            NoiseSource.replayable(self.noise_seed)
        if self.declared_n is not None:
            check_whole_numbers(self, {"declared_n": 0})
        share = getattr(self, "prior_share", 0.0)
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
            raise ValueError(f"prior_share must be a number in [0, 1), got {share!r}")
        split_epsilon(1.0, 0, self.split_points)

    # --- fitting ----------------------------------------------------------------------

    def fit(self, X, y):
        """Draw the trees, route the records, and release every leaf's output."""
        self._validate_params()
        encoded, schema, classes = training_data(self, X, y)
        self.schema_, self.classes_ = schema, classes
        self.n_features_in_ = len(schema.features)
        return self._fit_encoded(encoded)

    def fit_encoded(
        self, encoded: EncodedData, schema: Schema, splits: SplitRelease | None = None
    ):
        """Fit on records already encoded against ``schema`` (used by the evaluation
        engine so that a dataset is parsed once for all folds). ``splits``: a released
        split release to reuse (a reference forest with a DP forest's trees)."""
        self._validate_params()
        self.schema_ = schema
        self.n_features_in_ = len(schema.features)
        self.classes_ = np.asarray(schema.classes, dtype=object)
        return self._fit_encoded(encoded, splits)

    def _fit_encoded(self, encoded: EncodedData, splits: SplitRelease | None = None):
        start = time.perf_counter()
        self.encoding_report_ = encoded.report
        source = self._release_source(0)
        tables = None
        if self._split_epsilon() > 0 and splits is None:
            tables = split_tables(encoded, self.schema_)
        self._prepare(encoded.n_records, source, tables=tables, splits=splits)
        self._add_counts([self.leaf_counts_of(encoded, self._split_seed)], encoded.n_records)
        self._check_routes = out_of_bag_records(self, encoded)  # the floor's check
        release.release_leaves(self, source)
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def _release_source(self, batch: int) -> NoiseSource:
        """The noise of one release (batch ``batch`` of it): a fresh secret; or, opt-in
        and NOT private, replayable noise named by the seed, mechanism, ε and batch, so
        that a sweep's point equals a plain fit at that ε."""
        return self._noise_named(f"{self.mechanism}|{float(self.epsilon)!r}|{batch}")

    def _noise_named(self, name: str) -> NoiseSource:
        seed = self.noise_seed
        if seed is None and self.mechanism == "none":
            # The true-majority reference has no noise to protect (it is NOT private
            # anyway): its tie-breaks follow the public seed, so references reproduce.
            seed = _seeds(self.random_state)[0] if self.random_state is not None else None
        if seed is None:
            return NoiseSource.fresh()
        label = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
        return NoiseSource.replayable(seed).child(label)

    def reads_record_count(self) -> bool:
        """Whether the depth rule (``jpw``, ``records``) or the tree count (``"auto"``)
        reads the record count: ``declared_n``, or a noisy count for 5% of ε."""
        return self.depth in COUNTED_RULES or self.n_estimators == AUTO_TREES

    def tree_count(self, n_records: int | None = None) -> int:
        """The trees this forest grows: ``n_estimators``, or for ``"auto"`` the size
        :func:`~dpviz.models.forest.sizing.suggest_trees` gives ``n_records`` (a declared or
        noisy count; without one, :data:`~dpviz.models.forest.sizing.TREE_STEPS`' largest)."""
        if self.n_estimators != AUTO_TREES:
            return int(self.n_estimators)
        if self.data_split == "auto" and self.split_at() == "shared":
            return auto_shared_trees(float(self.epsilon))
        if n_records is None:
            n_records = self.declared_n or None
        if n_records is None:
            return TREE_STEPS[-1]
        return suggest_trees(n_records, self.split_at(), float(self.epsilon)).n_estimators

    def split_at(self, epsilon: float | None = None) -> str:
        """``"disjoint"`` or ``"shared"``: what ``data_split`` means at ``epsilon`` (the
        forest's own by default; :func:`~dpviz.models.forest.sizing.resolve_split`).
        Public: parameters and ε."""
        eps = self.epsilon if epsilon is None else epsilon
        return resolve_split(self.data_split, self.n_estimators, float(eps))

    @property
    def data_split_(self) -> str:
        """The records each tree reads, ``"disjoint"`` or ``"shared"``: fixed when the
        structure is grown (a relabel at another ε keeps it), before that what
        ``data_split`` means at ``epsilon`` (:meth:`split_at`)."""
        return self.__dict__.get("_data_split") or self.split_at()

    def _split_epsilon(self) -> float:
        return split_epsilon(float(self.epsilon), len(self.schema_.continuous), self.split_points)

    def _prepare(
        self,
        n_records: int,
        source: NoiseSource,
        *,
        tables: np.ndarray | None = None,
        splits: SplitRelease | None = None,
    ) -> None:
        """Depth, seeds and the structure; no leaf counted yet.

        Only the ``jpw`` and ``records`` rules read a record count: the declared one, or
        ``n_records`` plus discrete Laplace noise whose ε the ledger books. ``quantile``
        split points read the TRUE class ``tables`` (:func:`split_tables`) through their
        own noise (:func:`release_splits`, booked too), or reuse released ``splits``."""
        schema = self.schema_
        self._data_split = self.split_at()
        self.split_epsilon_ = self._split_epsilon()
        self.splits_ = None
        if self.split_epsilon_ > 0:
            if splits is None:
                if tables is None:
                    raise ValueError("quantile split points need the features' class tables")
                # Replayable noise is named by the rung, not by ε: a sweep grows one
                # structure per rung, as a plain fit at any ε of the rung does.
                rung = self._noise_named(f"split|{self.split_epsilon_!r}")
                layout = TableLayout.of(schema)
                splits = release_splits(tables, layout, self.split_epsilon_, rung)
            self.splits_ = splits
        branching = [2] * len(schema.continuous) + [len(f.values) for f in schema.discrete]
        self.depth_count_epsilon_ = 0.0
        self.depth_n_ = None
        if self.reads_record_count():
            if self.declared_n:
                self.depth_n_ = int(self.declared_n)
            else:
                self.depth_count_epsilon_ = DEPTH_COUNT_SHARE * float(self.epsilon)
                noise = (
                    source.child(0xD0_0000)
                    .generator()
                    .discrete_laplace(self.depth_count_epsilon_, 1)
                )
                self.depth_n_ = max(1, int(n_records + noise[0]))
        self.n_estimators_ = self.tree_count(self.depth_n_)
        sized = self.depth_n_
        if sized is not None and self.depth == "records":
            # Below ε = 1 the records rule sizes leaves for the n·s records that carry
            # as much signal over the noise as n do at ε = 1 (sizing.signal_records).
            sized = signal_records(sized, float(self.epsilon))
        self.depth_ = forest_depth(
            self.depth,
            len(schema.continuous),
            len(schema.discrete),
            n_records=sized,
            branching=branching,
            n_trees=self.n_estimators_ if self.data_split_ == "disjoint" else None,
            epsilon=float(self.epsilon),
        )
        structure_seed, split_seed = _seeds(self.random_state)
        self.space_ = space_for(schema, self.depth_, self.splits_)
        self.root_keys_ = tree_root_keys(structure_seed, self.n_estimators_)
        self._split_seed = split_seed
        self._releases = []
        self.n_batches_ = 0
        self.leaf_keys_ = np.empty(0, dtype=np.uint64)
        self.leaf_tree_ = np.empty(0, dtype=np.int64)
        self.leaf_depth_ = np.empty(0, dtype=np.int64)
        self.leaf_counts_ = np.zeros((0, len(schema.classes)), dtype=np.int64)
        self.node_tables_ = []
        self.n_train_records_ = 0
        self._check_routes = None
        self.__dict__.pop("_leaf_totals", None)

    # --- routing: public structure, no ε (routing.py) ---------------------------------

    def _check_fitted(self) -> None:
        check_is_fitted(self, "leaf_keys_")

    def _encode_predict(self, X) -> EncodedData:
        self._check_fitted()
        return prediction_data(self, X)

    def route_records(
        self, encoded: EncodedData, trees: np.ndarray | None = None
    ) -> RoutedRecords:
        """Route records through the trees (all, or ``trees``): structure only, so the
        result serves every ε and mechanism."""
        return routing.route_records(self, encoded, trees)

    def _count_votes_fused(self, encoded: EncodedData) -> np.ndarray | None:
        return routing.count_votes_fused(self, encoded)

    def _compact_forest(self, trees: np.ndarray, n_records: int, *, keep: bool = False):
        return routing.compact_forest_of(self, trees, n_records, keep=keep)

    def _pass_pairs(self) -> int:
        return routing.pass_pairs(self)

    def _trained(self, keys: np.ndarray) -> np.ndarray:
        return routing.trained_positions(self, keys)

    # --- the release and its ledger (release.py) -------------------------------------

    @property
    def prior_epsilon_(self) -> float:
        """ε of the noisy class prior: 0 with ``prior_share=0`` and for ``none``; its
        floor is explained at :func:`~dpviz.models.forest.release.prior_epsilon_of`."""
        return release.prior_epsilon_of(self)

    @property
    def check_epsilon_(self) -> float:
        """ε of the floor's out-of-bag check (:mod:`dpviz.models.forest.floor`): 5% of ε from
        ε = 1 up when the fit kept the checked records' routing (a private mechanism,
        disjoint trees, a prior; a plain fit, not a distributed one), else 0; taken from the
        prior's share. Public: the configuration."""
        return release.check_epsilon_of(self)

    @property
    def threshold_epsilon_(self) -> float:
        """ε of the objective's score histogram (:func:`release.threshold_epsilon_of`)."""
        return release.threshold_epsilon_of(self)

    def floor_outcome(self):
        """What the floor decided for this release (a
        :class:`~dpviz.models.trees.floor.FloorOutcome`: the out-of-bag check of disjoint
        trees, Private-RDT's leaf signal test), or None where no floor test runs.
        Post-processing of released values."""
        check_is_fitted(self, "leaf_keys_")
        return voting.floor_outcome(self)

    @property
    def leaf_epsilon_(self) -> float:
        """ε of the leaf outputs: ε less a noisy record count, the split histograms, a
        noisy class prior, the floor's check and the objective's score histogram."""
        return release.leaf_epsilon_of(self)

    def relabel(
        self, epsilon: float | None = None, mechanism: str | None = None, *, every_leaf=True
    ):
        """Release the leaves again under another ε or mechanism, keeping the trees and
        the routing of the data (they do not depend on ε): what makes an ε sweep cheap.

        The new release draws fresh noise. The earlier releases were published too, so
        the ledger adds their ε (sequential composition). ``every_leaf``: see
        :meth:`release_instead`.
        """
        return release.relabel(self, epsilon, mechanism, every_leaf=every_leaf)

    def release_instead(self, epsilon: float, mechanism: str | None = None):
        """Discard the current release, unpublished, and draw another at ``epsilon``.

        For evaluation sweeps, where each (mechanism, ε) is an alternative model of the
        same trees, never two published releases: the ledger books only the new one.
        Use :meth:`relabel` for a model whose release was already shown or exported.
        Untrained leaves are drawn as :meth:`votes` reaches them (a sweep's test records
        reach a few), the rest before anything public reads the model (a prediction,
        :meth:`released_outputs`, a copy): the same release, drawn in another order.
        """
        return release.release_instead(self, epsilon, mechanism)

    def privacy_ledger(self, schema_inferred: bool) -> PrivacyLedger:
        """The ledger this configuration produces (it does not depend on the data)."""
        return release.privacy_ledger(self, schema_inferred)

    @property
    def ledger_(self) -> PrivacyLedger:
        """The privacy ledger of the current release (and of every earlier one)."""
        return release.ledger_of(self)

    def __getstate__(self):
        """A copy (pickle, deepcopy, joblib, Dask) of a release holds every leaf's drawn
        output; a release whose untrained leaves are drawn on first use cannot be copied
        (``ValueError``), since a copy would answer differently where no record went."""
        release.prepare_copy(self)
        state = super().__getstate__()
        state.pop("_space_cache", None)  # recomputed from the structure when needed
        state.pop("_route_cache", None)  # rebuilt from the structure when needed
        state.pop("_threshold_cache", None)  # recomputed alike (public randomness)
        return state

    # --- votes and predictions: post-processing of the release (voting.py) -----------

    def votes(self, routed: RoutedRecords) -> np.ndarray:
        """Votes (n_records, n_classes) of routed records under the current release
        (:func:`~dpviz.models.forest.voting.votes`). Post-processing of released values
        only."""
        return voting.votes(self, routed)

    def _synthetic_scores(self) -> tuple[np.ndarray, np.ndarray]:
        return voting.synthetic_scores(self)

    def count_scoring(self, noisy_counts: np.ndarray):
        """(per-leaf values to sum over the trees, the function that scores the sums) of
        this release's count leaves (:func:`count_values`, :func:`count_votes`)."""
        return voting.count_scoring(self, noisy_counts)

    @property
    def prior_weight_(self) -> float:
        """The prior's weight in votes, from public values
        (:func:`~dpviz.models.forest.voting.prior_weight_of`)."""
        return voting.prior_weight_of(self)

    _label_votes = staticmethod(voting.label_votes)

    def _outputs_of(self, routed: RoutedRecords, distinct: bool = True) -> LeafOutputs:
        return voting.outputs_of(self, routed, distinct)

    def released_outputs(self, keys: np.ndarray) -> LeafOutputs:
        """Released outputs (labels, noisy counts) of any leaves by key: what an outsider
        sees. Leaves no training record reached give the mechanism's output on all-zero
        counts, drawn at the release (on first use for trees beyond an export's size)."""
        return voting.released_outputs(self, keys)

    def _votes(self, encoded: EncodedData) -> np.ndarray:
        return voting.record_votes(self, encoded)

    def predict_proba(self, X) -> np.ndarray:
        """Vote fraction per class (summed clipped noisy counts for count mechanisms)."""
        return voting.predict_proba(self, X)

    @property
    def decision_prior_(self) -> np.ndarray:
        """The class prior the ``objective`` weighs votes by
        (:func:`~dpviz.models.forest.voting.decision_prior`). Post-processing only."""
        return voting.decision_prior(self)

    @property
    def decision_threshold_(self) -> float | None:
        """The cut on class 1's votes share ``predict`` applies (``macro_f1``, ``accuracy``:
        :func:`~dpviz.models.forest.voting.decision_threshold`), or None. Post-processing."""
        return voting.decision_threshold(self)

    def predict(self, X) -> np.ndarray:
        """Majority vote of the trees (ties to the lowest class index), weighed by the
        ``objective`` or cut (:func:`~dpviz.models.objective.decide`; post-processing)."""
        return voting.predict(self, X)

    # --- counting: reads the training data, TRUE counts never released as such -------

    def leaf_counts_of(
        self, encoded: EncodedData, split_seed: int, *, keep_nodes: bool = True
    ) -> LeafCounts:
        """Route a batch of records and count classes per reached leaf (TRUE counts, for
        the release). Reads only the structure, so data partitions can run it
        independently and add the results. ``keep_nodes`` keeps the visited-node tables
        that the leaf table's path rules use."""
        return counting.leaf_counts_of(self, encoded, split_seed, keep_nodes=keep_nodes)

    def _add_counts(self, parts: list[LeafCounts], n_records: int) -> None:
        counting.add_counts(self, parts, n_records)

    # --- the data owner's view (NOT private: diagnostics.py) ---------------------------

    def leaf_table(self, *, path_rules: bool = True) -> pd.DataFrame:
        """One row per non-empty leaf, from the raw data: NOT private, for the data owner."""
        self._check_fitted()
        return diagnostics.leaf_table(self, path_rules=path_rules)

    @property
    def diagnostics_(self) -> dict:
        """Forest-level diagnostics from the raw data (NOT private)."""
        self._check_fitted()
        if not hasattr(self, "_diagnostics"):
            if not hasattr(self, "_leaf_totals"):
                self._leaf_totals = diagnostics.leaf_totals(self)
            self._diagnostics = diagnostics.forest_diagnostics(self, self._leaf_totals)
        return self._diagnostics

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.non_deterministic = self.noise_seed is None
        return tags


class PrivateRDTClassifier(DPRandomForestClassifier):
    """Private-RDT (Jagannathan, Pillaipakkamnatt & Wright 2012).

    Random trees that all see every record (``shared`` data); each leaf releases its
    class counts plus discrete Laplace noise of scale τ/ε (``laplace_counts`` with ε/τ
    per tree); the depth rule is theirs (``jpw``) and they used 10 trees, as
    ``n_estimators="auto"`` does from ε = 1 up; below ε = 1 it grows 3
    (:func:`~dpviz.models.forest.sizing.shared_tree_count`: fewer trees, less noise
    per leaf). Pass ``n_estimators=10`` for the paper's forest at every ε.
    ``partial_fit`` adds a new, disjoint batch of records without spending more ε.

    Privacy: ``epsilon``-DP under add/remove-one neighbours when the schema is public.
    The ``jpw`` depth rule reads the record count: give ``declared_n`` (public), or 5%
    of ε buys a noisy count, booked in the ledger. ``noise_seed`` voids the guarantee.
    ``objective`` is post-processing (see :class:`DPRandomForestClassifier`).
    """

    mechanism = "laplace_counts"
    data_split = "shared"
    split_points = "uniform"

    def __init__(
        self,
        epsilon: float = 1.0,
        n_estimators: int | str = AUTO_TREES,
        depth: str | int = "jpw",
        schema=None,
        random_state=None,
        noise_seed: int | None = None,
        declared_n: int | None = None,
        prior_share: float = 0.1,
        objective: str = ACCURACY,
    ):
        self.epsilon = epsilon
        self.n_estimators = n_estimators
        self.depth = depth
        self.schema = schema
        self.random_state = random_state
        self.noise_seed = noise_seed
        self.declared_n = declared_n
        self.prior_share = prior_share
        self.objective = objective

    def reads_record_count(self) -> bool:
        """Whether the depth rule reads the record count (``"auto"`` trees follow ε
        only)."""
        return self.depth in COUNTED_RULES

    def tree_count(self, n_records: int | None = None) -> int:
        """``n_estimators``, or for ``"auto"``
        :func:`~dpviz.models.forest.sizing.shared_tree_count` of ε (no record count)."""
        if self.n_estimators != AUTO_TREES:
            return int(self.n_estimators)
        return shared_tree_count(float(self.epsilon))

    def partial_fit(self, X, y, classes=None):
        """Add a new, disjoint batch of records (Jagannathan et al. 2012, §V-B).

        The structure is kept; only the new batch is counted, fresh discrete Laplace
        noise is drawn for every leaf, and the result is added to the released counts.
        The new release reads only the new records, so old and new releases compose in
        parallel and the model stays ``epsilon``-DP for a person whose records are all in
        one batch (in several: the sum of those batches' ε, as the ledger's note says;
        a batch's ε is ``epsilon`` less the record count's and split tables' shares,
        which read the first batch only). Needs a count-releasing mechanism
        (``laplace_counts``): a released label cannot absorb more data. On an unfitted
        model it is ``fit``; ``classes`` is accepted for scikit-learn's API, the class
        list itself comes from the schema.
        """
        if not hasattr(self, "leaf_keys_"):
            return self.fit(X, y)
        encoded = batch_data(self, X, y)
        batch = self.leaf_counts_of(encoded, self._split_seed)
        k = len(self.classes_)
        # What was released for every leaf this batch reaches, before the batch.
        previous = self.released_outputs(np.union1d(self.leaf_keys_, batch.keys)).noisy_counts
        self._add_counts([batch], encoded.n_records)
        counts = np.zeros((len(self.leaf_keys_), k), dtype=np.int64)
        counts[np.searchsorted(self.leaf_keys_, batch.keys)] = batch.counts
        source = self._release_source(self.n_batches_ - 1)
        fresh = release.release_counts(self, counts, KeyedLeafNoise(source, self.leaf_keys_))
        self.leaf_noisy_counts_ = previous + fresh.noisy_counts
        self.leaf_labels_ = largest_count(
            self.leaf_noisy_counts_, KeyedLeafNoise(source, self.leaf_keys_)
        )
        # Untrained leaves already drawn get this batch's noise as well.
        untrained = ~np.isin(self._empty_keys, self.leaf_keys_)
        keys = self._empty_keys[untrained]
        zeros = np.zeros((len(keys), k), dtype=np.int64)
        noisy = (
            self._empty_noisy[untrained]
            + release.release_counts(self, zeros, KeyedLeafNoise(source, keys)).noisy_counts
        )
        self._empty_keys, self._empty_noisy = keys, noisy
        self._empty_labels = largest_count(noisy, KeyedLeafNoise(source, keys))
        if self.prior_counts_ is not None:
            # The batch's class totals join the prior with this batch's fresh noise.
            self.prior_counts_ = self.prior_counts_ + release.noisy_class_totals(
                self, batch.tree, batch.counts, source
            )
        self._ledger = None
        self.__dict__.pop("_diagnostics", None)
        return self
