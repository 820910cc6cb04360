"""A forest's votes and predictions.

Privacy role: post-processing of released values only (the leaves' released labels or
noisy counts, the noisy class prior, public ε and τ) and of the records being predicted;
no ε. Leaves no training record reached answer with their released outputs too
(:func:`~dpviz.models.forest.release.empty_outputs`).

Functions of a fitted :class:`~dpviz.models.forest.estimator.DPRandomForestClassifier`
(``model``), which calls them from its methods of the same names (``prior_weight_``,
``decision_prior_``: :func:`prior_weight_of`, :func:`decision_prior`).
"""

from __future__ import annotations

import functools
import weakref

import numpy as np
from sklearn.base import BaseEstimator

from dpviz.compiled import kernels
from dpviz.models.forest import release
from dpviz.models.forest.floor import (
    CHECK_Z,
    check_threshold,
    evidence_epsilon,
    floor_prior_weight,
    floor_scores,
    halved,
    records_split,
)
from dpviz.models.forest.records import LeafOutputs, RoutedRecords, _rows, normalise_votes
from dpviz.models.forest.score_histogram import (
    BALANCED,
    accuracy_cut,
    balanced_cut,
    histogram_threshold,
)
from dpviz.models.forest.scoring import (
    count_prior,
    count_values,
    count_votes,
    prior_lead_weights,
    prior_shares,
    prior_weight,
)
from dpviz.models.forest.signal import (
    LEAF_FLOOR_U,
    SIGNAL_EPSILON,
    evidence_scale,
    pooled_shrink_records,
    shared_floor_applies,
    terms_signal,
    tree_terms,
)
from dpviz.models.objective import ACCURACY, MACRO_F1, decide
from dpviz.models.trees.floor import FloorOutcome
from dpviz.models.trees.threshold import best_threshold, posterior_counts, simulate_forest
from dpviz.models.trees.votes import matrix_label_counts, matrix_value_sums
from dpviz.privacy.mechanisms import ABSTAIN
from dpviz.tabular.encode import EncodedData


def vote_labels(votes: np.ndarray) -> np.ndarray:
    """Each record's class index: ``np.argmax(votes, axis=1)`` (ties to the lowest
    index). numpy's argmax along rows of a few columns takes ~10 ns a row; the compiled
    loop (when the kernels are loaded) one tenth of it, which a sweep pays per ε."""
    votes = np.asarray(votes)
    compiled = kernels.get(wait=False) if len(votes) >= 4096 else None
    if compiled is None or votes.dtype != np.float64 or votes.ndim != 2 or not votes.shape[1]:
        return np.argmax(votes, axis=1)
    out = np.empty(len(votes), dtype=np.int64)
    compiled["row_argmax"](np.ascontiguousarray(votes), out)
    return out


def _floored(sums: np.ndarray, score, prior) -> np.ndarray:
    """The fall-back scores (:func:`~dpviz.models.forest.floor.floor_scores`) of count sums."""
    return floor_scores(normalise_votes(score(sums)), prior)


def votes(model: BaseEstimator, routed: RoutedRecords) -> np.ndarray:
    """Votes (n_records, n_classes) of routed records under the current release.

    Label mechanisms: each tree's label counts once, and the prior adds
    :attr:`prior_weight_` votes. Count mechanisms: exp of the log prior plus
    γ·(mean over the trees of the leaves' shrunk log shares − what a noise-only
    leaf gives) (:func:`shrunk_log_shares`, :func:`null_log_shares`,
    :func:`evidence_gain`): a leaf counts by its evidence, a noise-only forest
    answers the prior. Post-processing of released values only."""
    k = len(model.classes_)
    outputs = outputs_of(model, routed)
    silent = getattr(routed, "silent", False)  # routing kept before the flag existed
    if outputs.noisy_counts is not None:
        return _count_votes(model, routed, outputs.noisy_counts, silent)
    labels = np.append(outputs.labels, ABSTAIN) if silent else outputs.labels
    votes = label_votes(routed, labels, k)
    if model.prior_counts_ is not None:
        # The prior decides where the trees abstain, tie or cast only stray votes.
        votes += model.prior_weight_ * prior_shares(model.prior_counts_)
    return votes


def record_free_votes(model: BaseEstimator) -> np.ndarray:
    """The votes (1, n_classes) of a record no tree reaches under a label release: the
    prior's term alone (:func:`votes` of such a record, without routing one).
    Post-processing of the released prior and public ε, τ."""
    votes = np.zeros((1, len(model.classes_)))
    if model.prior_counts_ is not None:
        votes += model.prior_weight_ * prior_shares(model.prior_counts_)
    return votes


def count_scoring(model: BaseEstimator, noisy_counts: np.ndarray):
    """(per-leaf values to sum over the trees, the function that scores the sums) of
    this release's count leaves (:func:`count_values`, :func:`count_votes`), the leaves
    shrunk by :func:`release_shrink_records` (the default where it is None)."""
    prior = count_prior(model.prior_counts_, len(model.classes_))
    eps = model.tree_epsilon_
    # First: it completes the release (the memo below is keyed on its arrays).
    alpha = release_shrink_records(model)
    # Trees that all read every record weigh their evidence by its spread (squares).
    squares = records_split(model) == "shared"
    key = (noisy_counts, model.prior_counts_, eps, alpha, squares)
    values = _release_memo(model, "values", key)
    if values is None:
        # Not frozen: the compiled sums take writable arrays (callers read it or copy it).
        values = count_values(noisy_counts, prior, eps, alpha=alpha, squares=squares)
        _remember(model, "values", key, values)
    disjoint = model.data_split_ == "disjoint"
    score = functools.partial(
        count_votes,
        prior=prior,
        epsilon=evidence_epsilon(eps, model.n_estimators_, halved(model)),
        noise_margins=disjoint,
        scale=release_evidence_scale(model) if disjoint else 1.0,
        margin_weights=prior_lead_weights(model.prior_counts_, model.prior_epsilon_, len(prior)),
    )
    if not getattr(model, "floor_trusted_", True) or not release_leaves_trusted(model):
        # The floor's check (disjoint trees) or its leaf test (shared trees) did not
        # trust the trees: the prior's class, their ranking.
        return values, functools.partial(_floored, score=score, prior=prior)
    return values, score


def release_leaves_trusted(model: BaseEstimator) -> bool:
    """Private-RDT's floor of this release
    (:func:`~dpviz.models.forest.signal.leaves_trusted`, where
    :func:`~dpviz.models.forest.signal.shared_floor_applies`): whether the released
    counts of EVERY leaf, grouped by tree, carry signal; True where the test does not
    apply (:func:`release_tree_signal` is None). Post-processing."""
    signal = release_tree_signal(model)
    return signal is None or signal >= LEAF_FLOOR_U


def release_tree_signal(model: BaseEstimator) -> float | None:
    """The statistic of Private-RDT's floor on this release
    (:func:`~dpviz.models.forest.signal.tree_signal` of the released counts of EVERY
    leaf, grouped by tree), or None where :func:`release_tree_terms` is. Post-processing."""
    terms = release_tree_terms(model)
    return None if terms is None else terms_signal(terms)


def release_shrink_records(model: BaseEstimator) -> float | None:
    """The pseudo-count Private-RDT's leaves are shrunk by in this release
    (:func:`~dpviz.models.forest.signal.pooled_shrink_records` of the floor's terms, the
    count prior and the leaf ε), or None (the default,
    :func:`~dpviz.models.forest.scoring.shrink_records`) where :func:`release_tree_terms`
    is. A model file computes the same from its listed leaves. Post-processing."""
    terms = release_tree_terms(model)
    if terms is None:
        return None
    prior = count_prior(model.prior_counts_, len(model.classes_))
    return pooled_shrink_records(terms, prior, model.tree_epsilon_)


def release_tree_terms(model: BaseEstimator) -> np.ndarray | None:
    """Per tree, the terms of Private-RDT's floor on this release
    (:func:`~dpviz.models.forest.signal.tree_terms` of the released counts of EVERY
    leaf, grouped by tree: its test and its shrinkage read them), or None where the test
    does not apply, and when the trees have more leaves than an export lists (their
    untrained leaves are drawn lazily, so not every leaf is known). Computed once per
    release. Post-processing."""
    counts = model.leaf_noisy_counts_ is not None
    has_prior = model.prior_counts_ is not None
    eps = model.tree_epsilon_
    if not shared_floor_applies(records_split(model), counts, eps, model.objective, has_prior):
        return None
    release.complete_release(model)
    if not getattr(model, "_empty_complete", False):
        return None
    cached = _release_memo(model, "terms", (model.prior_counts_,))
    if cached is not None:
        return cached
    space = release.leaf_space_trees(model)
    if space is None:
        return None
    keys, tree = space
    position = model._trained(keys)
    trained = position >= 0
    noisy = np.empty((len(keys), len(model.classes_)), dtype=np.int64)
    noisy[trained] = model.leaf_noisy_counts_[position[trained]]
    noisy[~trained] = release.empty_outputs(model, keys[~trained]).noisy_counts
    terms = _frozen(tree_terms(noisy, tree, eps, getattr(model, "n_batches_", 1)))
    _remember(model, "terms", (model.prior_counts_,), terms)
    return terms


def floor_outcome(model: BaseEstimator) -> FloorOutcome | None:
    """What this release's floor decided: the disjoint forest's booked out-of-bag check
    (:mod:`~dpviz.models.forest.floor`), or Private-RDT's leaf signal test
    (:func:`release_tree_signal`); None when neither runs. Public values only."""
    if model.prior_counts_ is None:
        return None
    check = getattr(model, "floor_check_", None)
    return outcome_of(
        model.classes_,
        model.prior_counts_,
        check=check,
        disagreements=getattr(model, "floor_disagreements_", None),
        trusted=bool(getattr(model, "floor_trusted_", True)),
        signal=None if check is not None and not halved(model) else release_tree_signal(model),
        halves=halved(model),
    )


def outcome_of(
    classes,
    prior_counts,
    *,
    check: float | None,
    disagreements: float | None,
    trusted: bool,
    signal: float | None,
    halves: bool = False,
) -> FloorOutcome | None:
    """The floor's decision from released values: the out-of-bag ``check`` (its gain,
    ``disagreements`` and outcome ``trusted``; ``halves``: of a halved forest, with the
    leaf ``signal`` beside it) where it ran, else Private-RDT's leaf
    ``signal`` (:func:`~dpviz.models.forest.signal.tree_signal`); None where neither ran
    or there is no released ``prior_counts`` to fall back on. A fitted forest and a
    model file read back give the same outcome. Post-processing."""
    if prior_counts is None or (check is None and signal is None):
        return None
    first = classes[int(np.argmax(prior_shares(prior_counts)))]
    fallback = (
        f"the released class prior's first class, {str(first)!r}, for every record; its "
        "scores still rank the records as the trees do (ROC AUC unchanged)"
    )
    if check is not None and halves:
        # A halved forest answers with the trees only if the leaf test (where it runs)
        # trusts them too (voting.count_scoring).
        leaves = (
            ""
            if signal is None
            else (
                f"; and the leaf signal test of every leaf's released counts, {signal:.3g} "
                f"against {LEAF_FLOOR_U:g}"
            )
        )
        return FloorOutcome(
            test="out-of-bag check",
            reads=(
                "two noisy counts booked in the ledger: how many more records the votes "
                "of the half of the trees that did not read them get right than the "
                f"prior's class, against {CHECK_Z:g}·√(how many records the two answers "
                "disagree on)" + leaves
            ),
            statistic=float(check),
            bar=check_threshold(disagreements),
            trusted=bool(trusted) and (signal is None or signal >= LEAF_FLOOR_U),
            fallback=fallback,
        )
    if check is not None:
        return FloorOutcome(
            test="out-of-bag check",
            reads=(
                "two noisy counts booked in the ledger: how many more records the other "
                "trees' votes get right than the prior's class, against "
                f"{CHECK_Z:g}·√(how many records the two answers disagree on)"
            ),
            statistic=float(check),
            bar=check_threshold(disagreements),
            trusted=bool(trusted),
            fallback=fallback,
        )
    return FloorOutcome(
        test="leaf signal test",
        reads=(
            "the released noisy counts of every leaf: how far each tree's leaves spread "
            "around their pooled class shares beyond noise and sampling, in noise spreads, "
            "averaged over the trees"
        ),
        statistic=float(signal),
        bar=LEAF_FLOOR_U,
        trusted=signal >= LEAF_FLOOR_U,
        fallback=fallback,
    )


def release_evidence_scale(model: BaseEstimator) -> float:
    """The evidence scale of this release (:func:`~dpviz.models.forest.signal.evidence_scale`),
    from the released counts of EVERY leaf (trained or not), the released prior and the
    released tree count: 1 at
    a leaf ε from :data:`~dpviz.models.forest.signal.SIGNAL_EPSILON` up, and when the
    trees have more leaves than an export lists (their untrained leaves are drawn
    lazily, so not every leaf is known). Computed once per release. Post-processing."""
    eps = model.tree_epsilon_
    if eps >= SIGNAL_EPSILON or model.leaf_noisy_counts_ is None:
        return 1.0
    key = (model.leaf_noisy_counts_, model.prior_counts_)
    cached = model.__dict__.get("_scale_cache")
    if cached is not None and all(a is b for a, b in zip(cached[0], key)):
        return cached[1]
    release.complete_release(model)
    if not getattr(model, "_empty_complete", False):
        return 1.0
    noisy = np.concatenate([model.leaf_noisy_counts_, model._empty_noisy])
    prior = count_prior(model.prior_counts_, len(model.classes_))
    scale = evidence_scale(noisy, prior, eps, model.n_estimators_)
    model._scale_cache = (key, scale)
    return scale


def _count_votes(
    model: BaseEstimator, routed: RoutedRecords, noisy_counts: np.ndarray, silent: bool = False
) -> np.ndarray:
    values, score = model.count_scoring(noisy_counts)
    if silent:  # the silent leaf (RoutedRecords.silent): zero evidence, no tree counted
        values = np.vstack([values, np.zeros((1, values.shape[1]))])
    sums = None
    if routed.has_matrix:
        # Routing's compiled sum over the leaf matrix (None: not loaded, numpy below).
        matrix, offsets = routed.matrix_args()
        sums = matrix_value_sums(matrix, values, offsets)
    if sums is None:
        picked = values[routed.pair_leaf]
        sums = np.stack(
            [
                np.bincount(routed.pair_record, weights=picked[:, c], minlength=routed.n_records)
                for c in range(values.shape[1])
            ],
            axis=1,
        )
    return score(sums)


def prior_weight_of(model: BaseEstimator) -> float:
    """The prior's weight in votes (see :func:`prior_weight`), from public values; when
    the floor's check did not trust the trees, enough that no tree count overturns the
    prior's first class (:func:`~dpviz.models.forest.floor.floor_prior_weight`; label votes,
    an additive term as a sweep's batched votes add it)."""
    weight = prior_weight(
        model.mechanism,
        len(model.classes_),
        model.tree_epsilon_,
        model.n_estimators_,
        model.prior_counts_,
    )
    if not getattr(model, "floor_trusted_", True) and model.prior_counts_ is not None:
        floor = floor_prior_weight(prior_shares(model.prior_counts_), model.n_estimators_)
        weight = max(weight, floor)
    return weight


def label_votes(routed: RoutedRecords, labels: np.ndarray, k: int) -> np.ndarray:
    """Each record's count of trees voting for each class (abstentions: no vote)."""
    # One-byte labels (abstain → k): the gather below touches every pair per ε.
    if routed.has_matrix and k <= 8:
        small = np.where(labels == ABSTAIN, k, labels).astype(np.uint8)
        matrix, offsets = routed.matrix_args()
        counts = matrix_label_counts(matrix, small, k, offsets)
        if counts is not None:  # routing's compiled kernel, when loaded
            return counts
        if k == 2 and not (labels == ABSTAIN).any():
            ones = small[routed.leaf_matrix].sum(axis=0, dtype=np.float64)
            return np.stack([routed.leaf_matrix.shape[0] - ones, ones], axis=1)
        label = small[routed.leaf_matrix]
        return np.stack([(label == c).sum(axis=0) for c in range(k)], axis=1).astype(np.float64)
    label = labels[routed.pair_leaf]
    voted = label != ABSTAIN
    flat = routed.pair_record[voted] * k + label[voted]
    counts = np.bincount(flat, minlength=routed.n_records * k)
    return counts.reshape(routed.n_records, k).astype(np.float64)


# Per model, what this release gave last (a sweep's point reads the same leaves twice:
# the floor check's records and the test records reach every leaf of the built trees):
# {"outputs": (release, keys, trained, outputs), "values": (release, (noisy, prior, ε, α),
# values), "terms": (release, (prior,), Private-RDT's floor terms)}. Held beside the
# model, not in it, so that a copy (pickle) never carries it.
_MEMO: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _release_of(model: BaseEstimator) -> tuple:
    """The arrays a release (and its lazily drawn untrained leaves) consists of: every
    release, relabel, partial fit or lazy draw replaces them, never writes into them."""
    return (
        model.leaf_keys_,
        model.leaf_labels_,
        model.leaf_noisy_counts_,
        getattr(model, "_empty_labels", None),
        getattr(model, "_empty_noisy", None),
        getattr(model, "_empty_keys", None),
    )


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    return isinstance(a, float) and isinstance(b, float) and a == b


def _release_memo(model: BaseEstimator, kind: str, key: tuple):
    """What :func:`_remember` kept for ``kind`` under this release and ``key``, else None."""
    kept = _MEMO.get(model, {}).get(kind)
    if kept is None:
        return None
    release_then, key_then, value = kept
    now = _release_of(model)
    if len(now) != len(release_then) or any(a is not b for a, b in zip(now, release_then)):
        return None
    if len(key) != len(key_then) or not all(_same(a, b) for a, b in zip(key, key_then)):
        return None
    return value


def _remember(model: BaseEstimator, kind: str, key: tuple, value) -> None:
    try:
        _MEMO.setdefault(model, {})[kind] = (_release_of(model), key, value)
    except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
        pass


def _frozen(a):
    """``a`` read-only: a remembered output is shared by its callers, never written."""
    if isinstance(a, np.ndarray):
        a.flags.writeable = False
    return a


def outputs_of(model: BaseEstimator, routed: RoutedRecords, distinct: bool = True) -> LeafOutputs:
    """The released outputs (labels, noisy counts) of the leaves ``routed`` numbers,
    untrained ones drawn now if not yet (:func:`~.release.empty_outputs`). A second
    routing of the same leaves under the same release (a sweep point's check records,
    then its test records) gets the same arrays back, not gathered again."""
    key = (routed.leaf_keys, routed.trained)
    kept = _release_memo(model, "outputs", key)
    if kept is not None:
        return kept
    outputs = _outputs_of(model, routed, distinct)
    frozen = LeafOutputs(_frozen(outputs.labels), _frozen(outputs.noisy_counts))
    _remember(model, "outputs", key, frozen)
    return frozen


def _outputs_of(model: BaseEstimator, routed: RoutedRecords, distinct: bool) -> LeafOutputs:
    trained = routed.trained >= 0
    k = len(model.classes_)
    # Routing reaches each leaf once: its keys are distinct.
    empty = release.empty_outputs(model, routed.leaf_keys[~trained], distinct=distinct)
    labels = np.empty(len(routed.trained), dtype=np.int64)
    labels[trained] = model.leaf_labels_[routed.trained[trained]]
    labels[~trained] = empty.labels
    noisy = None
    if model.leaf_noisy_counts_ is not None:
        noisy = np.empty((len(routed.trained), k), dtype=np.int64)
        noisy[trained] = model.leaf_noisy_counts_[routed.trained[trained]]
        noisy[~trained] = empty.noisy_counts
    return LeafOutputs(labels, noisy)


def released_outputs(model: BaseEstimator, keys: np.ndarray) -> LeafOutputs:
    """Released outputs (labels, noisy counts) of any leaves by key: what an outsider
    sees. Leaves no training record reached give the mechanism's output on all-zero
    counts, drawn at the release (on first use for trees beyond an export's size)."""
    model._check_fitted()
    release.complete_release(model)
    keys = np.asarray(keys, dtype=np.uint64)
    pos = np.minimum(np.searchsorted(model.leaf_keys_, keys), len(model.leaf_keys_) - 1)
    trained = np.where(model.leaf_keys_[pos] == keys, pos, -1)
    return outputs_of(
        model, RoutedRecords(0, np.empty(0, int), np.empty(0, int), keys, trained), distinct=False
    )


def record_votes(model: BaseEstimator, encoded: EncodedData) -> np.ndarray:
    """Votes of encoded records under the current release, routed in chunks of
    records or by the fused count pass (post-processing)."""
    # Chunks of records (every tree each): a record's votes, the prior included,
    # come from one call; the leaf matrix of a chunk stays within one pass's pairs.
    fused = model._count_votes_fused(encoded)  # descend and sum in one pass
    if fused is not None:
        return fused
    n = encoded.n_records
    size = max(1, model._pass_pairs() // model.n_estimators_)
    if n <= size:
        return model.votes(model.route_records(encoded))
    return np.concatenate(
        [
            model.votes(model.route_records(_rows(encoded, slice(i, i + size))))
            for i in range(0, n, size)
        ]
    )


def predict_proba(model: BaseEstimator, X) -> np.ndarray:
    """Vote fraction per class (summed clipped noisy counts for count mechanisms)."""
    encoded = model._encode_predict(X)
    release.complete_release(model)  # every leaf is looked up alike, trained or not
    return normalise_votes(record_votes(model, encoded))


def decision_prior(model: BaseEstimator) -> np.ndarray:
    """The class prior the ``objective`` weighs votes by: the shares the votes start
    from (:func:`count_prior`: the released noisy class prior plus one per class, or
    uniform and public without one, ``prior_share=0``). Post-processing only."""
    return count_prior(model.prior_counts_, len(model.classes_))


def decision_threshold(model: BaseEstimator) -> float | None:
    """The threshold on class 1's vote share that ``predict`` cuts at (two classes), or
    None.

    ``accuracy``: where the release booked the checked records' out-of-bag scores by
    class (:mod:`~dpviz.models.forest.score_histogram`: from ε = 1 up) and the floor
    trusted the trees, the cut of largest noisy accuracy when it beats the argmax's by
    a noise margin (:func:`~dpviz.models.forest.score_histogram.accuracy_cut`); None (the
    argmax) otherwise.

    ``macro_f1`` (:mod:`dpviz.models.trees.threshold`): where the release booked a
    histogram of the checked records' out-of-bag scores (from ε = 1 up), the cell edge
    above which it puts 1.25 times the released prior's class-1 share of the records.
    Elsewhere from the leaves alone: every leaf of the release (trained or not: the
    leaves no record reached answer with their noisy counts too, so the threshold depends
    on the release only, not on which leaves the records reached) is an atom of each
    class's distribution, weighed by its noisy count (runs of leaves summed, see
    :func:`~dpviz.models.trees.threshold.simulate_forest`); synthetic records draw one
    leaf per tree from it and are scored as :func:`votes` scores them
    (:func:`synthetic_scores`). None (the tempered prior rule instead) when the leaves
    release labels, or when the trees have more leaves than an export lists (their
    untrained leaves are drawn lazily).

    None for the other objectives and more classes. Post-processing of released values
    with public randomness."""
    model._check_fitted()
    if len(model.classes_) != 2:
        return None
    counts = getattr(model, "threshold_counts_", None)
    if model.objective in (ACCURACY, BALANCED):
        # A histogram booked under another objective (set_params after the fit) is not
        # this rule's unless it counts each class (and, for balanced_accuracy, has a cell
        # edge at the prior's cut): else the argmax.
        if counts is None or np.ndim(counts) != 2 or not getattr(model, "floor_trusted_", True):
            return None
        edges, eps = model.threshold_edges_, model.threshold_epsilon_
        if model.objective == ACCURACY:
            return accuracy_cut(counts, edges, eps)
        base = float(decision_prior(model)[1])
        return balanced_cut(counts, edges, eps, base) if np.any(edges == base) else None
    if model.objective != MACRO_F1:
        return None
    if counts is not None and np.ndim(counts) == 1:
        share = float(prior_shares(model.prior_counts_)[1])
        return histogram_threshold(counts, model.threshold_edges_, share)
    release.complete_release(model)
    if model.leaf_noisy_counts_ is None or not getattr(model, "_empty_complete", False):
        return None
    # One computation per release: its arrays are replaced, never changed, by a release.
    key = (model.leaf_noisy_counts_, model._empty_noisy, model.prior_counts_)
    cached = model.__dict__.get("_threshold_cache")
    if cached is not None and all(a is b for a, b in zip(cached[0], key)):
        return cached[1]
    threshold = best_threshold(*synthetic_scores(model))
    model._threshold_cache = (key, threshold)
    return threshold


def synthetic_scores(model: BaseEstimator) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic records' class-1 scores under this release of a two-class count forest and
    their class weights (:func:`~dpviz.models.trees.threshold.simulate_forest`, a public
    seed): the macro_f1 threshold's curve below ε = 1, and the score histogram's cells
    from it. Draws every untrained leaf first. Post-processing of released values."""
    release.complete_release(model)
    noisy = np.concatenate([model.leaf_noisy_counts_, model._empty_noisy]).astype(np.float64)
    # A record of class c at a leaf, as a new record sees it: the leaf less that record.
    values = [model.count_scoring(noisy - np.eye(2)[c])[0] for c in (0, 1)]
    _, score = model.count_scoring(noisy)
    weights = posterior_counts(noisy, model.tree_epsilon_)
    # The class shares: the released prior, else the noisy leaf counts' sums (unbiased).
    shares = None if model.prior_counts_ is None else prior_shares(model.prior_counts_)
    if shares is None:
        shares = np.clip(noisy.sum(axis=0), 1.0, None)
    return simulate_forest(values, weights, model.n_estimators_, score, shares)


def predict(model: BaseEstimator, X) -> np.ndarray:
    """Majority vote of the trees (vote ties to the lowest class index), weighed by
    the ``objective`` or cut at its threshold (:func:`~dpviz.models.objective.decide`;
    post-processing)."""
    model._check_fitted()
    proba = model.predict_proba(X)
    if model.objective == ACCURACY and model.decision_threshold_ is None:
        return model.classes_[vote_labels(proba)]
    rule = decide(proba, model.decision_prior_, model.objective, model.decision_threshold_)
    return model.classes_[rule]
