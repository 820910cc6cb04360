"""The Curves page's "Compare with other DP libraries": diffprivlib's forest, logistic
regression and naive Bayes (ε-DP) and DP-EBM ((ε, δ)-DP), run after a sweep on ITS folds,
seed and ε values (:func:`dpviz.evaluation.peers.run_peers`), their rows joined to the
sweep's results so that its figure, summary CSV, fold CSV and the decision report carry them.

No streamlit here. Scores are from held-out folds of the raw data: NOT private, as every
score of a sweep. Nothing a peer computes is released.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from dpviz.app.curves import SweepRun
from dpviz.app.support import PreparedData
from dpviz.app.sweep import Progress
from dpviz.compiled import kernels
from dpviz.evaluation.peers import (
    DIFFPRIVLIB_PEERS,
    PEERS,
    get_peer,
    missing,
    run_peers,
    unsupported,
)
from dpviz.evaluation.sweep import SweepResult
from dpviz.figures.common import ALL_METRIC_NAMES, majority_mean
from dpviz.figures.peers import peer_legend, peer_rows

# The peer that is much slower than the others: its own progress bar and a stop button.
SLOW_PEERS = ("dp_ebm",)
MAX_PEER_JOBS = 4


def options() -> dict[str, str]:
    """Every peer, id → option text with its guarantee (and "slower" for DP-EBM)."""
    return {
        p: peer_legend(p) + (" — slower: about 1–3 s a fit" if p in SLOW_PEERS else "")
        for p in PEERS
    }


def install_note(peers: Sequence[str] = tuple(PEERS)) -> str | None:
    """One line on how to add the libraries when some do not import, else None."""
    return missing(peers)


def present(sweep: SweepRun) -> list[str]:
    """The peers whose rows the sweep holds, in :data:`PEERS` order."""
    found = set(peer_rows(sweep.summary)["algorithm"])
    return [p for p in PEERS if p in found]


def pending(sweep: SweepRun, schema) -> list[str]:
    """The peers the sweep asked for (``settings.peers``) that it does not hold yet and can
    run on this data: stopped before they finished, or not run."""
    done = set(present(sweep))
    asked = getattr(sweep.settings, "peers", ())
    return [p for p in asked if p not in done and unsupported(p, schema) is None]


def with_peers(
    sweep: SweepRun,
    data: PreparedData,
    peers: Sequence[str],
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    n_jobs: int | None = None,
) -> tuple[SweepRun, list[str]]:
    """``sweep`` with the rows of ``peers`` added: each fitted on the sweep's folds (its
    ``folds`` and public ``seed``), at its ε values, with its noise rule (fresh, or
    replayed and NOT private when the sweep replays its own), scored on the held-out folds.

    Returns the new run (its ``settings.peers`` lists every peer asked for) and the
    notes on peers left out (DP-EBM beyond two classes). ``progress(fraction, message)``
    after each fit; ``cancel()`` True stops with ``SweepCancelled``. ``ValueError`` when
    ``data`` is not the sweep's dataset; ``ImportError`` (one line) when a library is
    missing. ``n_jobs``: worker processes (default :func:`peer_jobs`)."""
    if tuple(data.fingerprint) != tuple(sweep.fingerprint):
        raise ValueError("the sweep was run on another dataset; run the sweep again first")
    peers = [get_peer(p).id for p in peers]
    s = sweep.settings
    say = progress or (lambda _f, _m: None)
    encoded = data.training_records()
    todo = [p for p in peers if p not in present(sweep)]
    run = run_peers(
        encoded,
        data.schema,
        s.epsilons,
        todo,
        folds=s.folds,
        seed=s.seed,
        noise_seed=s.noise_seed,
        n_jobs=peer_jobs() if n_jobs is None else n_jobs,
        progress=lambda done, total, message: say(done / total, message),
        cancel=cancel,
    )
    results = pd.concat([sweep.result.results, run.results], ignore_index=True)
    asked = tuple(dict.fromkeys([*getattr(s, "peers", ()), *peers]))
    return (
        dataclasses.replace(
            sweep,
            settings=dataclasses.replace(s, peers=asked),
            result=SweepResult(results),
            seconds=sweep.seconds + run.seconds,
        ),
        run.notes,
    )


def peer_jobs() -> int:
    """Worker processes for the peers: one per core, up to 4. The libraries are
    Python-bound, so a second process is the only way to use a second core; joblib keeps
    its workers between runs, so their start (about 2 s) is paid once per server."""
    return max(1, min(kernels.cores(), MAX_PEER_JOBS))


def split_slow(peers: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the quick peers, the slow ones): the page runs the slow ones with a stop button."""
    return [p for p in peers if p not in SLOW_PEERS], [p for p in peers if p in SLOW_PEERS]


def table(sweep: SweepRun, epsilons: Sequence[float], metric: str) -> pd.DataFrame:
    """The peers' ``metric`` at each of ``epsilons`` (mean ± std over the folds), with the
    guarantee each library claims for one fit at that ε and the fits' time; the trivial
    baseline beside it. Empty when the sweep holds no peer."""
    rows = peer_rows(sweep.summary)
    out = []
    name = ALL_METRIC_NAMES.get(metric, metric)
    baseline = majority_mean(sweep.summary, metric)
    for peer_id in present(sweep):
        own = rows[rows["algorithm"] == peer_id]
        for eps in epsilons:
            hit = own[np.isclose(own["epsilon"].to_numpy(dtype=float), float(eps))]
            if hit.empty:
                continue
            row = hit.iloc[0]
            private = bool(row["private"])
            mean, std = float(row[f"{metric}_mean"]), float(row[f"{metric}_std"])
            line = {
                "library": peer_legend(peer_id, private),
                "ε": f"{eps:g}",
                name: f"{100 * mean:.1f}% ± {100 * (0.0 if std != std else std):.1f}",
                "guarantee": guarantee(peer_id, float(eps), private),
            }
            if baseline is not None:
                line["vs majority"] = f"{100 * (mean - baseline):+.1f} pts"
            out.append(line)
    return pd.DataFrame(out)


def guarantee(peer_id: str, epsilon: float, private: bool = True) -> str:
    """The guarantee a peer's library claims for one fit at ``epsilon``: ``1-DP`` or
    ``(1, 1e-6)-DP``; NONE when the schema was inferred or the noise replayed."""
    if not private:
        return "NONE (inferred schema or replayed noise)"
    return get_peer(peer_id).guarantee.replace("ε", f"{epsilon:g}")


def diffprivlib_only(peers: Sequence[str]) -> bool:
    """Whether ``peers`` are diffprivlib's (the quick ones) only."""
    return set(peers) <= set(DIFFPRIVLIB_PEERS)
