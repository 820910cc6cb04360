"""DPBoost's ensemble of ensembles: dealing records to trees, and boosting them.

Privacy role: each ensemble deals every record to one cell by the record's own
independent draw (:func:`assign_trees`), so the trees of an ensemble read disjoint
records whose split does not depend on the data (parallel composition: each tree spends
the ensemble's whole ε_t); ⌈T/T_e⌉ ensembles read the same records (sequential). A
tree's gradients read the records and the released earlier trees only (adaptive
composition), bounded to [−g*, g*] by clipping (default) or filtering (paper); the
default scores its splits on those gradients shifted by the released prior where the
earlier trees have not reached yet, clipped the same way. By default the k one-vs-rest
parts of a multiclass model share each tree (one ε_t for the k parts' splits and leaf
values), boosted from the released prior with each record's k gradients scaled to an
L1 norm ≤ 4·g* (:func:`bound_l1`); in the paper each part grows its own. The deal's
randomness reads no data but comes from the fit's secret generator all the same.
"""

from __future__ import annotations

import numpy as np

from dpviz.models.boosting.budget import G_STAR
from dpviz.models.boosting.newton import gradients as newton_gradients
from dpviz.models.boosting.tree import route
from dpviz.models.trees.draws import Rng


def assign_trees(n: int, shares: np.ndarray, rng: Rng) -> np.ndarray:
    """Each of ``n`` records' tree in one ensemble, drawn independently per record.

    Record i gets position t with probability ``shares[t]`` by inverting the
    cumulative shares at its own uniform ``rng.random(n)[i]``; a position
    ≥ ``len(shares)`` means no tree (the leftover probability when the shares sum to
    less than 1). A record's tree depends on its own draw alone, so adding or removing a
    record never moves another one: the trees read disjoint records whose split is
    independent of the data (parallel composition).
    """
    return np.searchsorted(np.cumsum(shares), rng.random(n)).astype(np.int64)


def boost_ensembles(
    model, codes: np.ndarray, signed: list[np.ndarray], rng: Rng
) -> tuple[list[list[dict]], list[tuple], np.ndarray]:
    """Grow every one-vs-rest model's trees, each boosted from the score F = 0, or from
    the released prior score p̂ when the parts share their trees.

    ``model`` is the :class:`~dpviz.models.boosting.estimator.DPBoostClassifier` being fitted (its
    parameters, budget and ``_tree``), ``signed`` the ±1 targets of each part. Returns
    the trees per part, their leaf records (ordered by part, then tree) and the last
    ensemble's deal.

    Each ensemble deals every record to a cell by one independent draw per record
    (:func:`assign_trees`), shared by the one-vs-rest parts (which grow one tree per
    cell together when the model ``shares_trees_``, else one tree each): tree position
    0..size−1, or ``size`` for the held-out cell of the last ensemble when the model
    ``checks_trees_``, which no tree reads."""
    eta = float(model.learning_rate_)
    eps_tree = model.tree_epsilon_
    clip = model.preset_.gradients == "clip"
    n = len(signed[0])
    # Shared multiclass trees are boosted from the released prior; the rest from 0.
    from_prior = model.shares_trees_
    start = model.prior_score_ if from_prior else np.zeros(len(signed))
    predictions = [np.full(n, float(score)) for score in start]
    models: list[list[dict]] = [[] for _ in signed]
    records, grown = [], []  # per tree in the order grown: leaf record, (part, iteration)
    deal = np.zeros(n, dtype=np.int64)
    for ensemble in range(model.n_ensembles_):
        size = model._ensemble_size(ensemble)
        holdout = model.checks_trees_ and ensemble == model.n_ensembles_ - 1
        deal = assign_trees(n, model.ensemble_shares(size, holdout), rng)
        cells = [np.flatnonzero(deal == position) for position in range(size)]
        # One tree per position for all parts (shared splits), or one per part.
        groups = [range(len(signed))] if model.shares_trees_ else [[p] for p in range(len(signed))]
        for group in groups:
            for position, rows in enumerate(cells):
                iteration = ensemble * model.trees_per_ensemble_ + position + 1
                grads, scored = [], []
                for part in group:
                    gradient = predictions[part][rows] - signed[part][rows]
                    if model.preset_.start == "centered" and not from_prior:
                        # scored against the prior where the trees have not reached yet
                        offset = (1 - model._reach(iteration - 1)) * model.prior_score_[part]
                        scored.append(np.clip(gradient + offset, -G_STAR, G_STAR))
                    if from_prior:
                        pass  # bounded below, in L1 over all the parts
                    elif clip:  # every record used, its gradient clipped to [−g*, g*]
                        gradient = np.clip(gradient, -G_STAR, G_STAR)
                    else:  # gradient-based data filtering (Li et al.; one part per tree)
                        keep = np.abs(gradient) <= G_STAR
                        rows, gradient = rows[keep], gradient[keep]
                    grads.append(gradient)
                shared = len(group) > 1
                gradient = np.stack(grads, axis=1) if shared else grads[0]
                if shared:
                    gradient = bound_l1(gradient, model.gradient_l1_bound_)
                split_gradient = None
                if scored:
                    split_gradient = np.stack(scored, axis=1) if shared else scored[0]
                tree, record = model._tree(
                    codes[rows], gradient, iteration, eps_tree, rng, split_gradient
                )
                leaf = route(tree, codes)
                for j, part in enumerate(group):
                    if shared:  # each part keeps the shared splits and its own values
                        part_tree = {**tree, "value": tree["value"][:, j]}
                        part_record = (record[0], record[1][:, j], record[2][:, j])
                    else:
                        part_tree, part_record = tree, record
                    models[part].append(part_tree)
                    records.append(part_record)
                    grown.append((part, iteration))
                    predictions[part] += eta * part_tree["value"][leaf]
    order = sorted(range(len(grown)), key=grown.__getitem__)
    return models, [records[i] for i in order], deal


def bound_l1(gradient: np.ndarray, bound: float) -> np.ndarray:
    """Each record's row of ``gradient`` (n, k), scaled down to an L1 norm ≤ ``bound``.

    A function of the record's own gradients (its label and the released trees so far),
    so every record used has ‖g‖₁ ≤ ``bound``, which is all the L1 form of Lemma 2 and
    the absolute split score assume. Boosted from the prior p̂ (one-vs-rest labels ±1),
    a record's gradients F − y start at 2·share_c for the other classes and
    2·share_y − 2 for its own: an L1 norm of 4(1 − share_y) ≤ 4·g* whatever k, so
    ``bound`` = 4·g* bites only where the trees have pushed the score past that."""
    norm = np.abs(gradient).sum(axis=1, keepdims=True)
    return gradient * (bound / np.maximum(norm, bound))


def boost_newton(
    model, codes: np.ndarray, y: np.ndarray, rng: Rng
) -> tuple[list[list[dict]], list[tuple], np.ndarray]:
    """Grow the grown model's trees on the log-loss (``loss="logistic"``): one log-odds
    part for two classes, k softmax parts sharing each tree otherwise, boosted from the
    released prior's log-shares (``start_score_``), Newton leaves (see
    :mod:`~dpviz.models.boosting.newton`). Records are dealt to trees as in
    :func:`boost_ensembles` (one independent draw per record and ensemble); ``y`` holds
    the class indices. Returns the trees per part, their leaf records (part, then tree)
    and the last ensemble's deal."""
    eta = float(model.learning_rate_)
    eps_tree = model.tree_epsilon_
    n = len(y)
    k = len(model.schema_.classes)
    onehot = (y == 1)[:, None].astype(np.float64) if k == 2 else np.eye(k)[y]
    parts = onehot.shape[1]
    scores = np.tile(np.asarray(model.start_score_, dtype=np.float64), (n, 1))
    models: list[list[dict]] = [[] for _ in range(parts)]
    records: list[list[tuple]] = [[] for _ in range(parts)]
    deal = np.zeros(n, dtype=np.int64)
    for ensemble in range(model.n_ensembles_):
        size = model._ensemble_size(ensemble)
        holdout = model.checks_trees_ and ensemble == model.n_ensembles_ - 1
        deal = assign_trees(n, model.ensemble_shares(size, holdout), rng)
        for position in range(size):
            rows = np.flatnonzero(deal == position)
            iteration = ensemble * model.trees_per_ensemble_ + position + 1
            # g, h from the record's label and the released trees so far only
            g, h = newton_gradients(scores[rows], onehot[rows])
            if parts == 1:
                g, h = g[:, 0], h[:, 0]
            tree, record = model._tree(codes[rows], g, iteration, eps_tree, rng, hessian=h)
            leaf = route(tree, codes)
            value = tree["value"].reshape(len(tree["value"]), parts)
            scores += eta * value[leaf]
            for j in range(parts):
                models[j].append({**tree, "value": value[:, j]})
                counts, clipped, released = record
                if parts > 1:
                    clipped, released = clipped[:, j], released[:, j]
                records[j].append((counts, clipped, released))
    return models, [r for part in records for r in part], deal
