"""Other DP libraries on the same folds and ε values as a dpviz sweep (issue 30).

diffprivlib's ``RandomForestClassifier``, ``LogisticRegression`` and ``GaussianNB``
(pure ε-DP, add/remove-one neighbours, as dpviz) and interpret's DP-EBM
(``DPExplainableBoostingClassifier``: (ε, δ)-DP, a weaker guarantee, labelled so
everywhere) are fitted on the folds of :func:`dpviz.evaluation.sweep.fold_splits` with the
same public seed, at every ε of the sweep, and scored with :func:`metrics.score` and the
fold's majority baseline. Their rows have the sweep's columns, ``series`` =
:data:`SERIES_PEER`, so that they join a sweep's results frame, its summary and its CSV.

Privacy: every peer is given the schema's PUBLIC bounds (continuous domains, discrete
value lists), never bounds read from the data, which would void its guarantee (diffprivlib
then warns ``PrivacyLeakWarning``; DP-EBM spends part of ε on them). With an inferred
schema, or with replayed noise, the rows say ``private`` False. The peers draw noise from
their own libraries' generators (NumPy's, not a fresh OS secret as dpviz's releases):
these fold models are evaluated and thrown away, never released. The scores come from
held-out folds of the raw data: NOT private, as every metric of a sweep.

The peers are an optional install (``requirements-peers.txt``); :func:`missing` says in
one line how to add them. diffprivlib 0.6.6 needs a compatibility shim with current
scikit-learn: :func:`patch_sklearn_for_diffprivlib`, the one copy (``bench/`` imports it).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from dpviz.evaluation.metrics import majority_score, score
from dpviz.evaluation.sweep import (
    DIAGNOSTICS,
    Progress,
    SweepCancelled,
    fold_splits,
    subset,
)
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import EncodedData

SERIES_PEER = "dp_peer"
# DP-EBM's δ: below 1/n for any dataset the app takes (a few million rows at most), as an
# (ε, δ) guarantee needs (δ ≥ 1/n would allow releasing a record outright).
DPEBM_DELTA = 1e-6
INSTALL_HINT = "pip install -r requirements-peers.txt"
# diffprivlib's forest at its own defaults (10 trees of depth 5), one process: folds and
# ε values run one after the other, as the sweep's folds on this machine.
DIFFPRIVLIB_TREES = 10


@dataclass(frozen=True)
class Peer:
    """One model of another DP library, as the Curves page and the CSV name it."""

    id: str
    label: str
    package: str  # the pip name, as requirements-peers.txt lists it
    module: str  # what is imported to use it
    delta: float = 0.0
    binary_only: bool = False
    n_estimators: int = 1

    @property
    def guarantee(self) -> str:
        """``ε-DP`` or ``(ε, 1e-6)-DP``: the guarantee the library claims for one fit."""
        return "ε-DP" if self.delta == 0 else f"(ε, {delta_text(self.delta)})-DP"

    @property
    def legend(self) -> str:
        """Legend text with the guarantee, e.g. ``diffprivlib RF (ε-DP)``."""
        return f"{self.label} ({self.guarantee})"


def delta_text(delta: float) -> str:
    """δ as the legends write it: ``1e-6``, ``5e-7``."""
    mantissa, exponent = f"{delta:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}" if mantissa != "1" else f"1e{int(exponent)}"


PEERS: dict[str, Peer] = {
    p.id: p
    for p in (
        Peer(
            "diffprivlib_rf",
            "diffprivlib RF",
            "diffprivlib",
            "diffprivlib",
            n_estimators=DIFFPRIVLIB_TREES,
        ),
        Peer("diffprivlib_lr", "diffprivlib LR", "diffprivlib", "diffprivlib"),
        Peer("diffprivlib_gnb", "diffprivlib GNB", "diffprivlib", "diffprivlib"),
        Peer(
            "dp_ebm",
            "DP-EBM",
            "interpret-core",
            "interpret.privacy",
            delta=DPEBM_DELTA,
            binary_only=True,
        ),
    )
}
DIFFPRIVLIB_PEERS = tuple(p for p in PEERS if PEERS[p].package == "diffprivlib")
# Peers whose ε values of a fold share one structure (forest_sweep), as dpviz's sweep does.
SWEPT_PEERS = ("diffprivlib_rf",)


def get_peer(peer_id: str) -> Peer:
    """The peer ``peer_id``; ``ValueError`` naming the known ones otherwise."""
    try:
        return PEERS[peer_id]
    except KeyError:
        raise ValueError(f"unknown peer {peer_id!r}; choose from {', '.join(PEERS)}") from None


def patch_sklearn_for_diffprivlib() -> bool:
    """diffprivlib 0.6.6 imports ``DOUBLE`` and ``DTYPE`` from ``sklearn.tree._tree``,
    which scikit-learn 1.9 removed; they were aliases of ``np.float64`` and ``np.float32``.
    Restore them (in this process only) so that diffprivlib imports. Returns True if it
    patched anything. Changes no privacy property: the names are dtypes."""
    import sklearn.tree._tree as sk_tree

    patched = False
    if not hasattr(sk_tree, "DOUBLE"):
        sk_tree.DOUBLE = np.float64
        patched = True
    if not hasattr(sk_tree, "DTYPE"):
        sk_tree.DTYPE = np.float32
        patched = True
    return patched


def _import(module: str):
    if module.split(".")[0] == "diffprivlib":
        patch_sklearn_for_diffprivlib()
    return importlib.import_module(module)


def missing(peers: Sequence[str] = tuple(PEERS)) -> str | None:
    """One line saying which of ``peers``' libraries do not import and how to add them,
    or None when all do."""
    absent = []
    for peer in map(get_peer, peers):
        if peer.package in absent:
            continue
        try:
            _import(peer.module)
        except ImportError:
            absent.append(peer.package)
    if not absent:
        return None
    return f"{' and '.join(absent)} not installed: {INSTALL_HINT} adds the other libraries"


def unsupported(peer_id: str, schema: Schema) -> str | None:
    """Why ``peer_id`` cannot run on data of ``schema`` (a sentence), or None."""
    peer = get_peer(peer_id)
    if peer.binary_only and len(schema.classes) != 2:
        return (
            f"{peer.label} handles two classes only; this data has {len(schema.classes)}, "
            "so its line is left out"
        )
    return None


# --- the peers' inputs, from the public schema only ---------------------------------------


def tree_matrix(data: EncodedData, schema: Schema) -> tuple[np.ndarray, tuple]:
    """Continuous values and discrete codes as floats, and the schema's bounds of each
    column (a continuous feature's declared [low, high]; codes 0 … values − 1)."""
    X = np.hstack([data.continuous, data.discrete.astype(np.float64)])
    low = [f.low for f in schema.continuous] + [0.0] * len(schema.discrete)
    high = [f.high for f in schema.continuous] + [len(f.values) - 1.0 for f in schema.discrete]
    return X, (np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64))


def linear_matrix(data: EncodedData, schema: Schema) -> tuple[np.ndarray, float]:
    """Continuous features scaled to [0, 1] by the schema's bounds (clipped to them),
    discrete ones one-hot over the schema's values; and the largest row norm those
    bounds allow (each feature adds at most 1 to the squared norm): diffprivlib LR's
    ``data_norm``, and GaussianNB's bounds are [0, 1] per column."""
    parts = []
    if schema.continuous:
        low = np.array([f.low for f in schema.continuous])
        span = np.array([max(f.high - f.low, 1e-12) for f in schema.continuous])
        parts.append(np.clip((data.continuous - low) / span, 0.0, 1.0))
    for j, feature in enumerate(schema.discrete):
        parts.append((data.discrete[:, j][:, None] == np.arange(len(feature.values))) * 1.0)
    return np.hstack(parts), math.sqrt(len(schema.features))


def ebm_frame(data: EncodedData, schema: Schema) -> pd.DataFrame:
    """The records as DP-EBM reads them: continuous columns, discrete ones as their
    schema values (strings)."""
    frame = pd.DataFrame(data.continuous, columns=[f.name for f in schema.continuous])
    for j, feature in enumerate(schema.discrete):
        frame[feature.name] = np.asarray(feature.values, dtype=object)[data.discrete[:, j]]
    return frame


@functools.cache
def diffprivlib_lr(models):
    """diffprivlib's LogisticRegression, or (scikit-learn ≥ 1.8, whose LogisticRegression
    no longer takes ``multi_class``) a subclass that differs only in its constructor: it
    passes the same settings minus ``multi_class="ovr"`` (diffprivlib's ``fit`` trains one
    model per class itself) and scores with the one-vs-rest normalised sigmoids that
    ``multi_class="ovr"`` meant. ``fit`` — the private part — is diffprivlib's own."""
    try:
        models.LogisticRegression()
        return models.LogisticRegression
    except TypeError as exc:
        if "multi_class" not in str(exc):
            raise
    from diffprivlib.accountant import BudgetAccountant
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    class OvRLogisticRegression(models.LogisticRegression):
        def __init__(
            self,
            *,
            epsilon=1.0,
            data_norm=None,
            tol=1e-4,
            C=1.0,
            fit_intercept=True,
            max_iter=100,
            verbose=0,
            warm_start=False,
            n_jobs=None,
            random_state=None,
            accountant=None,
        ):
            SkLogisticRegression.__init__(
                self,
                C=C,
                l1_ratio=0.0,  # the L2 penalty diffprivlib asks for
                dual=False,
                tol=tol,
                fit_intercept=fit_intercept,
                intercept_scaling=1.0,
                class_weight=None,
                random_state=random_state,
                solver="lbfgs",
                max_iter=max_iter,
                verbose=verbose,
                warm_start=warm_start,
                n_jobs=n_jobs,
            )
            self.epsilon = epsilon
            self.data_norm = data_norm
            self.classes_ = None
            self.accountant = BudgetAccountant.load_default(accountant)

        def predict_proba(self, X):
            return self._predict_proba_lr(X)

    return OvRLogisticRegression


# --- one fit ------------------------------------------------------------------------------

# What a fitted peer answers: test records -> probabilities over every schema class. Each
# library predicts the most probable class (``predict`` is the argmax of ``predict_proba``
# for all four), so the scores take the argmax (lowest index on ties) rather than asking
# the model twice.
Predictor = Callable[[EncodedData], np.ndarray]


def _expand(proba: np.ndarray, classes, k: int) -> np.ndarray:
    """Probabilities over the classes a model saw, as columns of all k class indices."""
    out = np.zeros((proba.shape[0], k))
    out[:, np.asarray(list(classes), dtype=int)] = proba
    return out


def fit_peer(
    peer_id: str,
    epsilon: float,
    train: EncodedData,
    schema: Schema,
    *,
    random_state: int | None = None,
    delta: float | None = None,
) -> Predictor:
    """Fit one peer at ``epsilon`` on ``train`` with the schema's public bounds.

    ``random_state`` None draws the library's noise fresh; a number replays it (NOT
    private). ``delta`` overrides DP-EBM's δ (:data:`DPEBM_DELTA`). Returns a function of
    test records giving their probabilities over the schema's classes (in class-index
    order; the prediction is the most probable).
    Raises ``ImportError`` when the library is missing, ``ValueError`` when the peer
    cannot run on this data (:func:`unsupported`)."""
    peer = get_peer(peer_id)
    reason = unsupported(peer_id, schema)
    if reason:
        raise ValueError(reason)
    k = len(schema.classes)
    if peer_id == "dp_ebm":
        return _fit_ebm(epsilon, train, schema, random_state, delta or peer.delta)
    models = _import("diffprivlib.models")
    from diffprivlib.accountant import BudgetAccountant

    # A fresh accountant per fit: the default one is global, and its total is recomputed
    # over every spend so far (hundreds of fits made each later fit 5x slower: measured).
    accountant = BudgetAccountant()
    common = {"epsilon": epsilon, "random_state": random_state, "accountant": accountant}
    if peer_id == "diffprivlib_rf":
        matrix = tree_matrix
        X, bounds = matrix(train, schema)
        # Integer classes: diffprivlib maps y to class indices before its trees count them.
        model = models.RandomForestClassifier(
            n_estimators=peer.n_estimators,
            bounds=bounds,
            classes=list(range(k)),
            n_jobs=1,
            **common,
        )
    else:
        matrix = linear_matrix
        X, norm = matrix(train, schema)
        if peer_id == "diffprivlib_lr":
            model = diffprivlib_lr(models)(data_norm=norm, **common)
        else:
            ones = np.ones(X.shape[1])
            model = models.GaussianNB(bounds=(0.0 * ones, ones), priors=None, **common)
    model.fit(X, train.y)

    def predict(test: EncodedData) -> np.ndarray:
        return _expand(model.predict_proba(matrix(test, schema)[0]), model.classes_, k)

    predict.model = model  # the fitted estimator (forest_sweep redraws its leaves)
    return predict


def forest_sweep(
    epsilons: Sequence[float],
    train: EncodedData,
    test: EncodedData,
    schema: Schema,
    random_state=None,
) -> list[np.ndarray]:
    """diffprivlib's forest at every ε of ``epsilons`` on one fold: the test records'
    probabilities at each.

    At the first ε it is diffprivlib's own fit. At each other ε the same trees get their
    leaves drawn again as diffprivlib's ``_FittingTree.fit`` draws them: the class counts
    of each leaf from the tree's own part of the records (diffprivlib's split: contiguous
    parts, clipped to the bounds, in float32), one ``PermuteAndFlip(ε, sensitivity 1,
    monotonic)`` of diffprivlib's per reached leaf, a uniform class for an empty one. The
    trees are drawn from the public bounds and the seed only, never from the records or ε,
    so each point is distributed exactly as diffprivlib's fit at its ε (the points share
    their trees, as dpviz's own sweep shares its structure). diffprivlib's fit draws new
    trees for every ε and routes each record in a Python loop: about 9x the cost of a
    redraw (508 ms against 55 ms on 1,600 records, 10 trees, measured)."""
    from sklearn.utils import check_random_state

    PermuteAndFlip = _import("diffprivlib.mechanisms").PermuteAndFlip  # after the shim

    rs = check_random_state(random_state)
    first = fit_peer("diffprivlib_rf", float(epsilons[0]), train, schema, random_state=rs)
    out = [first(test)]
    model = first.model
    X, (low, high) = tree_matrix(train, schema)
    X = np.clip(X.astype(np.float32), low, high).astype(np.float32)
    n, trees = len(X), len(model.estimators_)
    part = (np.arange(n) // (n / trees)).astype(int)
    k = len(schema.classes)
    routed = []
    for i, tree in enumerate(model.estimators_):
        leaves = tree.tree_.apply(X[part == i])
        counts = np.zeros((tree.tree_.node_count, k))
        np.add.at(counts, (leaves, train.y[part == i]), 1.0)
        is_leaf = tree.tree_.children_left == -1
        routed.append((counts, np.unique(leaves), np.flatnonzero(is_leaf)))
    for eps in epsilons[1:]:
        for tree, (counts, reached, leaf_nodes) in zip(model.estimators_, routed):
            values = np.zeros_like(tree.tree_.value)
            for leaf in reached:
                utility = counts[leaf].tolist()
                mech = PermuteAndFlip(
                    epsilon=float(eps),
                    sensitivity=1,
                    monotonic=True,
                    utility=utility,
                    random_state=rs,
                )
                values[leaf, 0, mech.randomise()] = 1
            for leaf in leaf_nodes:
                if not values[leaf].sum():
                    values[leaf, 0, rs.randint(k)] = 1
            tree.tree_.value[:] = values
        out.append(first(test))
    return out


def dpebm_model(schema: Schema, epsilon: float, delta: float, random_state):
    """An unfitted DP-EBM ((ε, δ)-DP) given the schema's public bounds, never the data's
    (interpret would otherwise read them from the records and warn)."""
    from interpret.privacy import DPExplainableBoostingClassifier

    types = ["continuous"] * len(schema.continuous) + ["nominal"] * len(schema.discrete)
    bounds = {f.name: (f.low, f.high) for f in schema.continuous}
    return DPExplainableBoostingClassifier(
        feature_types=types,
        epsilon=epsilon,
        delta=delta,
        privacy_bounds=bounds or None,
        n_jobs=1,
        random_state=random_state,
    )


def _fit_ebm(epsilon, train, schema, random_state, delta) -> Predictor:
    model = dpebm_model(schema, epsilon, delta, random_state)
    model.fit(ebm_frame(train, schema), train.y)
    k = len(schema.classes)

    def predict(test: EncodedData) -> np.ndarray:
        return _expand(model.predict_proba(ebm_frame(test, schema)), model.classes_, k)

    return predict


# --- on a sweep's folds -------------------------------------------------------------------


@dataclass
class PeerRun:
    """The peers' rows (one per peer × fold × ε, the sweep's columns), what was left out
    and why, and the seconds they took."""

    results: pd.DataFrame
    notes: list[str]
    seconds: float


def run_peers(
    encoded: EncodedData,
    schema: Schema,
    epsilons: Sequence[float],
    peers: Sequence[str],
    *,
    folds: int = 5,
    repeats: int = 1,
    seed: int = 0,
    noise_seed: int | None = None,
    n_jobs: int = 1,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
) -> PeerRun:
    """Fit every peer at every ε on the sweep's folds (:func:`fold_splits` of the labels
    with ``folds``, ``repeats`` and the public ``seed``: the same as ``run_sweep``'s) and
    score it on each held-out fold.

    Each fit is one task; ``n_jobs`` > 1 runs them in joblib worker processes (the
    libraries are Python-bound: processes are the only way to use a second core).
    ``progress(done, total, message)`` is called after each fit and ``cancel()`` checked
    then: True stops with :class:`SweepCancelled` (no partial result). A peer that cannot
    run on this data (DP-EBM beyond two classes) is left out with a note. ``noise_seed``
    replays the libraries' noise (rows then say ``private`` False). Scores are from the
    raw data: NOT private. Raises ``ImportError`` with :func:`missing`'s line when a
    library is not installed."""
    peers = list(dict.fromkeys(peers))
    for p in peers:
        get_peer(p)
    absent = missing(peers)
    if absent:
        raise ImportError(absent)
    notes = [n for n in (unsupported(p, schema) for p in peers) if n]
    peers = [p for p in peers if unsupported(p, schema) is None]
    splits = fold_splits(encoded.y, folds, repeats, seed)
    parts = [(subset(encoded, tr), subset(encoded, te)) for tr, te in splits]
    # One task per fit; the forest's ε values of a fold are one task (forest_sweep).
    points = list(enumerate(map(float, epsilons)))
    tasks = [
        (index, peer_id, tuple(group))
        for index in range(len(splits))
        for peer_id in peers
        for group in ([points] if peer_id in SWEPT_PEERS else [[p] for p in points])
    ]
    total = len(splits) * len(peers) * len(points)
    k = len(schema.classes)
    private = not schema.inferred and noise_seed is None
    start = time.perf_counter()
    rows = []
    with contextlib.ExitStack() as stack:
        if n_jobs == 1:
            # One BLAS/OpenMP thread, as the sweep's folds: diffprivlib's L-BFGS on a few
            # columns ran 10x slower with two threads on a busy 2-core machine. Set once:
            # each threadpool_limits reads the process's library map (8 ms, measured).
            # joblib's workers get one thread each by themselves.
            stack.enter_context(threadpool_limits(limits=1))
            outputs = (_fit_task(t, *parts[t[0]], schema, noise_seed) for t in tasks)
        else:
            outputs = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(_fit_task)(t, *parts[t[0]], schema, noise_seed) for t in tasks
            )
        stack.callback(getattr(outputs, "close", lambda: None))
        done = 0
        for (index, peer_id, _), fitted in outputs:
            train, test = parts[index]
            peer = PEERS[peer_id]
            rows.extend(
                _row(index, folds, peer, eps, proba, seconds, train, test, k, private)
                for eps, proba, seconds in fitted
            )
            done += len(fitted)
            if progress is not None:
                last = fitted[-1][0]
                progress(done, total, f"{peer.label}: fold {index + 1}, ε = {last:g}")
            if cancel is not None and cancel() and done < total:
                raise SweepCancelled(f"stopped after {done} of {total} fits")
    frame = pd.DataFrame(rows)
    if not frame.empty:
        order = {p: i for i, p in enumerate(PEERS)}
        frame = frame.assign(_peer=frame["algorithm"].map(order))
        frame = frame.sort_values(["repeat", "fold", "_peer", "epsilon"], kind="stable")
        frame = frame.drop(columns="_peer").reset_index(drop=True)
    return PeerRun(frame, notes, time.perf_counter() - start)


def _row(index, folds, peer, eps, proba, seconds, train, test, k, private) -> dict:
    """One fit's row, with the sweep's columns."""
    return {
        "repeat": index // folds,
        "fold": index % folds,
        "series": SERIES_PEER,
        "algorithm": peer.id,
        "mechanism": peer.guarantee,
        "epsilon": eps,
        "n_estimators": peer.n_estimators,
        "depth_rule": "",
        "depth": np.nan,
        "data_split": "all",
        "records_split": "all",
        **score(test.y, proba, train.y, k),
        **dict.fromkeys(DIAGNOSTICS, np.nan),
        "floored": np.nan,  # no floor test of dpviz's
        "fit_seconds": seconds,
        "private": private,
        "delta": peer.delta,
        **{f"majority_{m}": v for m, v in majority_score(test.y, train.y, k).items()},
    }


def _fit_task(task, train, test, schema, noise_seed):
    """A task's fits and test probabilities: (task, [(ε, probabilities, seconds), …]);
    the forest's ε values of a fold in one :func:`forest_sweep` (its seconds shared out)."""
    index, peer_id, points = task
    state = None if noise_seed is None else _replay_seed(noise_seed, index, points[0][0])
    began = time.perf_counter()
    with warnings.catch_warnings():
        # The bounds are the schema's, so no PrivacyLeakWarning is due; DP-EBM's and
        # scikit-learn's convergence chatter is not the user's to act on.
        warnings.simplefilter("ignore")
        if peer_id in SWEPT_PEERS:
            epsilons = [eps for _, eps in points]
            probas = forest_sweep(epsilons, train, test, schema, random_state=state)
        else:
            eps = points[0][1]
            probas = [fit_peer(peer_id, eps, train, schema, random_state=state)(test)]
    share = (time.perf_counter() - began) / len(points)
    return task, [(eps, proba, share) for (_, eps), proba in zip(points, probas)]


def _replay_seed(noise_seed: int, fold: int, point: int) -> int:
    # A different replayable seed per fold and ε, within NumPy's 32-bit seeds.
    return (noise_seed * 1_000_003 + fold * 1_009 + point) % 2**32
