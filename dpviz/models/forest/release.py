"""Releasing a forest's leaves: the noisy outputs, the class prior, and their ledger.

Functions of a :class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`
(``model``), which calls them from its members of the same names (``prior_epsilon_``,
``check_epsilon_``, ``leaf_epsilon_``, ``relabel``, ``release_instead``,
``privacy_ledger``, ``ledger_``, a copy's ``__getstate__``); the voting and the
distributed and sweep fits call :func:`release_leaves`, :func:`empty_outputs` and
:func:`complete_release` directly.

Privacy role: this is the release. :func:`release_leaves` passes each counted leaf's
TRUE counts through the leaf mechanism at the tree's ε (ε − the noisy record count −
the split histograms − the prior, divided by τ when every tree sees every record), with
fresh noise from the release's :class:`~dpviz.privacy.noise.NoiseSource`; a leaf no
record reached releases the mechanism's output on zero counts. The class prior is the
noisy class histogram (discrete Laplace) at :func:`prior_epsilon_of`. Every release, the
ones before it included, is booked in the model's ``ledger_``.

A fitted model is one release: every leaf of the trees is drawn at the release (fit,
:func:`relabel`, ``partial_fit``) and the key is dropped, so every copy, pickle and
exported file answers identically, and a prediction looks every leaf up the same way
whether records reached it or not. (An evaluation sweep's :func:`release_instead` draws
the leaves its test records reach as it goes, and the rest before anything public reads
the model.)

Trees with more nodes than an export may list
(:func:`~dpviz.models.trees.space.export_node_limit`) cannot be drawn whole: their untrained
leaves are drawn when a prediction first reaches them and kept, so such a model refuses
to be copied (a copy would draw them again and disagree exactly where no record went,
which shows where records are) and the time of a first prediction at an untrained leaf
differs from a trained one's.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from dpviz.models.forest import score_histogram
from dpviz.models.forest.floor import (
    CHECK_STREAM,
    check_applies,
    check_counts,
    check_epsilon,
    halved,
    halves_epsilon,
    records_split,
    release_check,
)
from dpviz.models.forest.ledger import build_ledger, decimal_rest
from dpviz.models.forest.records import LeafOutputs, normalise_votes
from dpviz.models.forest.scoring import count_prior, prior_shares, small_epsilon_prior_cap
from dpviz.models.trees.full import leaf_space_keys
from dpviz.models.trees.prior import prior_epsilon, prior_floor
from dpviz.models.trees.space import export_node_limit
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import get_mechanism, largest_count
from dpviz.privacy.noise import KeyedLeafNoise, NoiseSource

_PRIOR_STREAM = 0xC1A55_0000  # the noise stream of the class prior within a release


def prior_epsilon_of(model: BaseEstimator) -> float:
    """ε of the noisy class prior: 0 with ``prior_share=0`` and for ``none``. With
    disjoint data its floor follows the record count the trees read, when they read
    one: their votes have a noise margin of their own at tiny leaf ε
    (:func:`~dpviz.models.forest.scoring.noise_margin`). Trees that share the records
    have none and lean on the prior (a floor at 150/n̂ put Private-RDT on abalone at
    ε = 0.1 more than 0.5 points below the majority in 4 of 30 five-fold runs, 1 of
    30 without it)."""
    if not get_mechanism(model.mechanism).private:
        return 0.0
    disjoint = model.data_split_ == "disjoint"
    counted = getattr(model, "depth_n_", None) if disjoint else None
    eps = prior_epsilon(
        float(model.epsilon), float(getattr(model, "prior_share", 0.0)), n_records=counted
    )
    # Below ε = 1 disjoint trees sized from the record count ("auto" trees, the records
    # depth rule) are sized for their signal: their leaves get the budget.
    sized = model.n_estimators == "auto" or model.depth == "records"
    if disjoint and sized:
        eps = small_epsilon_prior_cap(float(model.epsilon), eps)
    # The floor's check (floor.CHECK_SHARE) is paid from the prior's ε down to what the
    # record count asks of a prior (prior_floor: about 150/n̂), the leaves pay the rest:
    # with thousands of records the prior's class is as sure at 5% of ε as at 10%, on a
    # thousand it is not, and a check that falls back on a wrong class floors nothing.
    paid = min(check_epsilon_of(model), max(decimal_rest(eps, prior_floor(counted)), 0.0))
    return decimal_rest(eps, paid) if paid else eps


def check_epsilon_of(model: BaseEstimator) -> float:
    """ε of the floor's out-of-bag check (:mod:`dpviz.models.forest.floor`): 5% of ε from
    ε = 1 up when the fit kept the checked records' routing (a private mechanism,
    disjoint trees, a prior; a plain fit, not a distributed one), else 0; taken from the
    prior's share (:func:`prior_epsilon_of`). Public: the configuration."""
    if getattr(model, "_check_routes", None) is None or not check_applies(model):
        return 0.0
    return check_epsilon(float(model.epsilon))


def threshold_epsilon_of(model: BaseEstimator) -> float:
    """ε of the objective's score histogram (:mod:`~dpviz.models.forest.score_histogram`):
    its share of ε where it applies and the fit kept the checked records' routing, else 0;
    taken from the leaves. Public: the configuration."""
    if getattr(model, "_check_routes", None) is None or not score_histogram.applies(model):
        return 0.0
    return score_histogram.histogram_epsilon(float(model.epsilon))


def leaf_epsilon_of(model: BaseEstimator) -> float:
    """ε of the leaf outputs: ε less a noisy record count, the split histograms, a
    noisy class prior, the floor's check and the decision's score histogram."""
    return decimal_rest(
        float(model.epsilon),
        getattr(model, "depth_count_epsilon_", 0.0),
        getattr(model, "split_epsilon_", 0.0),
        model.prior_epsilon_,
        model.check_epsilon_,
        model.threshold_epsilon_,
    )


def release_leaves(model: BaseEstimator, source: NoiseSource, *, every_leaf: bool = True) -> None:
    """Release every leaf under the current ε and mechanism with fresh noise from
    ``source`` (used here and then dropped), and book it in the ledger.

    ``every_leaf=False`` (an evaluation sweep's alternative releases) leaves the
    untrained leaves to be drawn as the sweep reaches them; anything public (a
    prediction, ``released_outputs``, a copy) draws the rest first."""
    mech = get_mechanism(model.mechanism)
    leaf_eps = model.leaf_epsilon_
    if leaf_eps <= 0:
        raise ValueError(
            f"ε = {float(model.epsilon):g} leaves nothing for the leaves after the noisy "
            f"record count (ε = {model.depth_count_epsilon_:g}) and split histograms "
            f"(ε = {model.split_epsilon_:g}), both spent when the trees were grown, the "
            f"class prior (ε = {model.prior_epsilon_:g}), the floor's check "
            f"(ε = {model.check_epsilon_:g}) and the decision's score histogram "
            f"(ε = {model.threshold_epsilon_:g}); choose a larger ε, or "
            "declare the record count (declared_n) before fitting"
        )
    if halved(model):
        model.tree_epsilon_ = halves_epsilon(leaf_eps, model.n_estimators_)
    elif model.data_split_ == "shared":
        model.tree_epsilon_ = leaf_eps / model.n_estimators_
    else:
        model.tree_epsilon_ = leaf_eps
    released = release_counts(model, model.leaf_counts_, KeyedLeafNoise(source, model.leaf_keys_))
    model.leaf_labels_ = released.labels
    model.leaf_noisy_counts_ = released.noisy_counts
    model.prior_counts_ = None
    if model.prior_epsilon_ > 0:
        model.prior_counts_ = noisy_class_totals(
            model, model.leaf_tree_, model.leaf_counts_, source
        )
    spent = leaf_eps + model.prior_epsilon_ + model.check_epsilon_ + model.threshold_epsilon_
    model._releases.append((mech.id, spent))
    model._release_private = source.private
    reset_empty_outputs(model, every_leaf)
    checked = run_check(model, source)
    run_score_histogram(model, source, checked if model.floor_trusted_ else None)
    model._ledger = None  # built when first read: a sweep releases many times
    model.__dict__.pop("_diagnostics", None)


def run_check(model: BaseEstimator, source: NoiseSource) -> np.ndarray | None:
    """The floor's check of this release (:mod:`dpviz.models.forest.floor`): the checked
    records' out-of-bag votes under the leaves just released, their wins and losses
    against the prior's class, released with discrete Laplace noise at
    ``check_epsilon_``. Sets ``floor_check_`` (the released gain W̃ − L̃, None without a
    check), ``floor_disagreements_`` (W̃ + L̃, None without a check) and
    ``floor_trusted_`` (False: the forest answers the prior's class). Returns those votes
    (None without a check)."""
    model.floor_check_, model.floor_disagreements_, model.floor_trusted_ = None, None, True
    if not model.check_epsilon_:
        return None
    routed, y = model._check_routes.routes(model)
    prior = count_prior(model.prior_counts_, len(model.classes_))
    votes = model.votes(routed) if routed.n_records else np.zeros((0, len(prior)))
    counts = check_counts(votes, y, int(np.argmax(prior)))
    noise = source.child(CHECK_STREAM).generator()
    model.floor_check_, model.floor_disagreements_, model.floor_trusted_ = release_check(
        counts, model.check_epsilon_, noise
    )
    return votes


def run_score_histogram(
    model: BaseEstimator, source: NoiseSource, votes: np.ndarray | None = None
) -> None:
    """The objective's score histogram of this release
    (:mod:`~dpviz.models.forest.score_histogram`): the checked records' out-of-bag class-1
    scores under the leaves just released (and the floor's decision), counted with discrete
    Laplace noise at ``threshold_epsilon_`` — per class in public cells for ``accuracy``,
    in cells at weighted quantiles of the release's synthetic scores for ``macro_f1``.
    ``votes``: the check's votes of those records where the floor kept trusting the trees
    (the scoring they were cast under is unchanged; None: cast them again). Sets
    ``threshold_counts_`` and ``threshold_edges_`` (None where it does not apply)."""
    model.threshold_counts_ = model.threshold_edges_ = None
    eps = model.threshold_epsilon_
    if not eps:
        return
    routed, y = model._check_routes.routes(model)
    by_class = score_histogram.by_class(model)
    if by_class:
        share = float(count_prior(model.prior_counts_, 2)[1])
        edges = score_histogram.class_edges(model.objective, share)
    else:
        synthetic, weights = model._synthetic_scores()
        share = float(prior_shares(model.prior_counts_)[1])
        edges = score_histogram.cell_edges(synthetic, weights.sum(axis=1), share)
    if votes is None:
        votes = model.votes(routed) if routed.n_records else np.zeros((0, 2))
    scores = normalise_votes(votes)[:, 1]
    if by_class:
        counts = score_histogram.true_class_histogram(scores, y, edges)
    else:
        counts = score_histogram.true_histogram(scores, edges)
    noise = source.child(score_histogram.STREAM).generator()
    model.threshold_counts_ = score_histogram.release_histogram(counts, eps, noise)
    model.threshold_edges_ = edges


def noisy_class_totals(
    model: BaseEstimator, leaf_tree: np.ndarray, leaf_counts: np.ndarray, source: NoiseSource
) -> np.ndarray:
    """Class totals of counted leaves, each record once (its own tree when disjoint,
    tree 1 when shared, trees 1 and 2 when halved), plus discrete Laplace noise at the
    prior's ε."""
    rows = slice(None)
    if model.data_split_ == "shared":
        rows = leaf_tree < (2 if halved(model) else 1)
    totals = leaf_counts[rows].sum(axis=0)
    noise = source.child(_PRIOR_STREAM).generator()
    return totals + noise.discrete_laplace(model.prior_epsilon_, len(totals))


def relabel(
    model: BaseEstimator,
    epsilon: float | None = None,
    mechanism: str | None = None,
    *,
    every_leaf: bool = True,
) -> BaseEstimator:
    """Release the leaves again under another ε or mechanism, keeping the trees and
    the routing of the data (they do not depend on ε): what makes an ε sweep cheap.

    The new release draws fresh noise. The releases before it were published too, so
    the ledger adds their ε (sequential composition). ``every_leaf``: see
    :func:`release_instead`.
    """
    model._check_fitted()
    before = model.epsilon, model.mechanism
    if epsilon is not None:
        model.epsilon = epsilon
    if mechanism is not None:
        model.mechanism = mechanism
    try:
        model._validate_params()
        release_leaves(model, model._release_source(0), every_leaf=every_leaf)
    except ValueError:
        # A refused release leaves the model and its ledger as they were.
        model.epsilon, model.mechanism = before
        raise
    return model


def release_instead(
    model: BaseEstimator, epsilon: float, mechanism: str | None = None
) -> BaseEstimator:
    """Discard the current release, unpublished, and draw another at ``epsilon``.

    For evaluation sweeps, where each (mechanism, ε) is an alternative model of the
    same trees, never two published releases: the ledger books only the new one.
    Use :func:`relabel` for a model whose release was already shown or exported.
    Untrained leaves are drawn as the model's ``votes`` reaches them (a sweep's test
    records reach a few), the rest before anything public reads the model (a
    prediction, ``released_outputs``, a copy): the same release, drawn in another order.
    """
    model._check_fitted()
    model._releases = model._releases[:-1]
    return relabel(model, epsilon, mechanism, every_leaf=False)


def release_counts(model: BaseEstimator, counts: np.ndarray, noise) -> LeafOutputs:
    """Release leaves from their counts and their noise (the mechanism at the tree's ε)."""
    mech = get_mechanism(model.mechanism)
    labels, noisy = mech.release(counts, model.tree_epsilon_, noise)
    return LeafOutputs(np.asarray(labels, dtype=np.int64), noisy)


# --- leaves no training record reached ---------------------------------------------------


def leaf_space(model: BaseEstimator) -> np.ndarray | None:
    """Sorted keys of every leaf of the trees (public structure), or None when the
    trees hold more nodes than an export may list; kept while the structure is."""
    cached = model.__dict__.get("_space_cache")
    if cached is not None and cached[0] is model.root_keys_ and cached[1] is model.space_:
        return cached[2]
    limit = export_node_limit(model.space_)
    built = model.__dict__.get("_route_cache")
    if built is not None and built[0] is model.root_keys_ and built[1] is model.space_:
        # The fit built every tree whole for routing: its leaves are the leaf space.
        store = built[2].store
        keys = np.sort(store.key[built[2].leaf_nodes]) if store.size <= limit else None
    else:
        keys = leaf_space_keys(model.space_, model.root_keys_, limit)
    model._space_cache = (model.root_keys_, model.space_, keys)
    return keys


def leaf_space_trees(model: BaseEstimator) -> tuple[np.ndarray, np.ndarray] | None:
    """(keys of every leaf of every tree, the tree of each), tree by tree, or None when
    the trees hold more nodes than an export may list (:func:`leaf_space`). Public
    structure only."""
    if leaf_space(model) is None:
        return None
    limit = export_node_limit(model.space_)
    roots = model.root_keys_
    parts = [leaf_space_keys(model.space_, roots[t : t + 1], limit) for t in range(len(roots))]
    tree = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    return np.concatenate(parts), tree


def reset_empty_outputs(model: BaseEstimator, every_leaf: bool = True) -> None:
    """Forget the untrained leaves' outputs of the previous release; with
    ``every_leaf``, draw all of this release's at once (:func:`complete_release`)."""
    k = len(model.classes_)
    model._empty_keys = np.empty(0, dtype=np.uint64)
    model._empty_labels = np.empty(0, dtype=np.int64)
    model._empty_noisy = np.zeros((0, k), dtype=np.int64)
    model._empty_sorted = True
    model._empty_complete = False
    if every_leaf:
        complete_release(model)


def complete_release(model: BaseEstimator) -> None:
    """Draw every untrained leaf not drawn yet: the mechanism's output on all-zero
    counts, with this release's fresh noise. Beyond what an export lists
    (:func:`leaf_space` is None) they stay drawn when first reached instead."""
    if getattr(model, "_empty_complete", True):
        return
    space = leaf_space(model)
    if space is None:
        return
    _sort_empty(model)
    missing = (model._trained(space) < 0) & ~np.isin(space, model._empty_keys)
    _add_drawn(model, space[missing])
    model._empty_complete = True


def empty_outputs(
    model: BaseEstimator, keys: np.ndarray, *, distinct: bool = False
) -> LeafOutputs:
    """Released outputs of untrained leaves ``keys``.

    Every one was drawn at the release when the trees fit in an export (or, after
    :func:`release_instead`, is drawn now and kept: lazy sampling, the same random
    model, with no key kept). ``distinct`` says the keys hold no repeats: then a first
    lazy draw needs no sorting (a sweep)."""
    keys = np.asarray(keys, dtype=np.uint64)
    if model._empty_complete:
        return _drawn_outputs(model, keys)
    if distinct and not len(model._empty_keys) and len(keys):
        labels, noisy = _draw_empty(model, keys)
        model._empty_keys, model._empty_labels, model._empty_noisy = keys, labels, noisy
        model._empty_sorted = False
        return LeafOutputs(labels, noisy if model.leaf_noisy_counts_ is not None else None)
    _sort_empty(model)
    _add_drawn(model, np.unique(keys[~np.isin(keys, model._empty_keys)]))
    return _drawn_outputs(model, keys)


def _sort_empty(model: BaseEstimator) -> None:
    if not getattr(model, "_empty_sorted", True):
        order = np.argsort(model._empty_keys)
        model._empty_keys = model._empty_keys[order]
        model._empty_labels = model._empty_labels[order]
        model._empty_noisy = model._empty_noisy[order]
        model._empty_sorted = True


def _add_drawn(model: BaseEstimator, new: np.ndarray) -> None:
    """Draw the untrained leaves ``new`` (sorted, none drawn yet) and keep them."""
    if not len(new):
        return
    labels, noisy = _draw_empty(model, new)
    order = np.argsort(np.concatenate([model._empty_keys, new]), kind="stable")
    model._empty_keys = np.concatenate([model._empty_keys, new])[order]
    model._empty_labels = np.concatenate([model._empty_labels, labels])[order]
    model._empty_noisy = np.concatenate([model._empty_noisy, noisy])[order]


def _drawn_outputs(model: BaseEstimator, keys: np.ndarray) -> LeafOutputs:
    """Outputs of untrained leaves already drawn (``ValueError`` for another key)."""
    drawn = model._empty_keys
    pos = np.minimum(np.searchsorted(drawn, keys), max(0, len(drawn) - 1))
    if len(keys) and (not len(drawn) or np.any(drawn[pos] != keys)):
        raise ValueError("asked for a leaf that is not an untrained leaf of this forest")
    noisy = model._empty_noisy[pos] if model.leaf_noisy_counts_ is not None else None
    return LeafOutputs(model._empty_labels[pos], noisy)


def _draw_empty(model: BaseEstimator, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels and noisy counts (zeros for label mechanisms) of untrained ``keys``."""
    k = len(model.classes_)
    zeros = np.zeros((len(keys), k), dtype=np.int64)
    block = release_counts(model, zeros, KeyedLeafNoise(model._release_source(0), keys))
    labels, noisy = block.labels, block.noisy_counts
    for batch in range(1, model.n_batches_):
        # An untrained leaf also received one batch of fresh noise per update.
        source = model._release_source(batch)
        noisy = noisy + release_counts(model, zeros, KeyedLeafNoise(source, keys)).noisy_counts
        labels = largest_count(noisy, KeyedLeafNoise(source, keys))
    return labels, zeros if noisy is None else noisy


def prepare_copy(model: BaseEstimator) -> None:
    """Make a release ready to be copied (pickle, deepcopy, joblib, Dask): draw every
    leaf's output and route the floor check's records (a copy keeps the routing, not the
    records). A release whose untrained leaves are drawn on first use cannot be copied
    (``ValueError``), since a copy would answer differently where no record went."""
    if getattr(model, "_releases", None):
        complete_release(model)
    if getattr(model, "_check_routes", None) is not None:
        model._check_routes.routes(model)  # a copy keeps the routing, not the records
    if getattr(model, "_releases", None) and not model._empty_complete:
        raise ValueError(
            f"this forest ({model.n_estimators_} trees of depth {model.depth_}) has more "
            f"than {export_node_limit(model.space_):,} nodes, more than an export lists, "
            "so a leaf no training record reached releases its output when a prediction "
            "first reaches it. A copy (pickle, deepcopy, a parallel worker) would draw "
            "those leaves again and answer differently exactly where no record went, "
            "which shows where the records are: copying it is refused. Refit with a "
            "smaller depth (or fewer trees) so that every leaf is drawn at fit time, "
            "or use this model in the process that fitted it."
        )


# --- the ledger ---------------------------------------------------------------------------


def privacy_ledger(model: BaseEstimator, schema_inferred: bool) -> PrivacyLedger:
    """The ledger this configuration produces (it does not depend on the data)."""
    return build_ledger(
        model.mechanism,
        float(model.epsilon),
        getattr(model, "n_estimators_", None) or model.tree_count(),
        records_split(model),
        schema_inferred=schema_inferred,
        n_batches=max(1, getattr(model, "n_batches_", 1)),
        depth_count_epsilon=getattr(model, "depth_count_epsilon_", 0.0),
        split_epsilon=getattr(model, "split_epsilon_", 0.0),
        prior_epsilon=model.prior_epsilon_,
        check_epsilon=model.check_epsilon_,
        threshold_epsilon=model.threshold_epsilon_,
        earlier_releases=getattr(model, "_releases", [])[:-1],
        replayable=model.noise_seed is not None,
    )


def ledger_of(model: BaseEstimator) -> PrivacyLedger:
    """The privacy ledger of the current release (and of every one before it), built
    when first read."""
    model._check_fitted()
    if model._ledger is None:
        model._ledger = model.privacy_ledger(model.schema_.inferred)
    return model._ledger
