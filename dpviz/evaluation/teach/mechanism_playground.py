"""The mechanism playground: the exact law of every leaf mechanism on one leaf's toy class
counts, seeded draws of it, and the gap j of the 2017 mechanism in words.

Inputs are class counts typed by the user, never records: every output is public.
``smooth_em`` and ``none`` are NOT differentially private and are labelled so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpviz.privacy.mechanisms import MECHANISMS, gap, get_mechanism, is_majority, valid_epsilon
from dpviz.privacy.noise import StreamLeafNoise

# Playground order: the non-private reference first, then from worst to best.
PLAYGROUND_MECHANISMS = (
    "none",
    "global_em",
    "smooth_em",
    "count_em",
    "permute_flip",
    "laplace_counts",
)
MIN_CLASSES, MAX_CLASSES = 2, 5
MAX_TOY_COUNT = 1_000_000
MAX_DRAWS = 1_000_000
CLASS_LETTERS = "ABCDE"


# --- mechanism playground -----------------------------------------------------------------


def _check_counts(counts: Sequence[int]) -> np.ndarray:
    try:
        values = np.asarray(counts, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"class counts must be whole numbers, got {counts!r}") from None
    if values.ndim != 1 or not MIN_CLASSES <= len(values) <= MAX_CLASSES:
        raise ValueError(
            f"give between {MIN_CLASSES} and {MAX_CLASSES} class counts, one per class "
            f"(got {values.size})"
        )
    if not np.isfinite(values).all() or (values < 0).any() or (values != np.round(values)).any():
        raise ValueError(f"class counts must be whole numbers ≥ 0 (records), got {counts!r}")
    if (values > MAX_TOY_COUNT).any():
        raise ValueError(f"class counts above {MAX_TOY_COUNT:,} are not supported here")
    return values.astype(np.int64)


def _class_names(class_names: Sequence[str] | None, k: int) -> tuple[str, ...]:
    if class_names is None:
        return tuple(CLASS_LETTERS[:k])
    names = tuple(str(c) for c in class_names)
    if len(names) != k or len(set(names)) != k:
        raise ValueError(f"give {k} distinct class names, one per count")
    return names


def _mechanisms(mechanisms: Sequence[str] | None) -> tuple[str, ...]:
    chosen = PLAYGROUND_MECHANISMS if mechanisms is None else tuple(mechanisms)
    if not chosen:
        raise ValueError("choose at least one mechanism")
    for m in chosen:
        get_mechanism(m)
    return chosen


def gap_explanation(
    counts: Sequence[int], epsilon: float, class_names: Sequence[str] | None = None
) -> str:
    """What the gap j and the smooth sensitivity e^(−jε) of these counts mean, in words."""
    values = _check_counts(counts)
    epsilon = valid_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    order = np.argsort(-values, kind="stable")
    top, second = order[0], order[1]
    j = int(values[top] - values[second])
    sens = math.exp(-j * epsilon)
    if j == 0:
        lead = (
            f"The top classes are tied ({names[top]} and {names[second]}, "
            f"{values[top]} records each), so the gap is j = 0"
        )
    else:
        lead = (
            f"The top class {names[top]} ({values[top]} records) leads the runner-up "
            f"{names[second]} ({values[second]}) by j = {j} record{'s' if j != 1 else ''}"
        )
    return (
        f"{lead}. The 2017 mechanism (smooth_em) took the smooth sensitivity e^(−jε) = "
        f"e^(−{j} × {epsilon:g}) = {sens:.3g} as its noise scale: the bigger the lead, the "
        "less noise. But j is computed from the data, and removing or adding one record "
        "changes j by one, which changes the noise itself. That is why smooth_em is NOT "
        "differentially private (see the privacy-loss map)."
    )


@dataclass(frozen=True)
class Playground:
    """Exact output laws of the label mechanisms for one leaf's toy counts.

    Attributes
    ----------
    counts, epsilon, class_names
        The inputs.
    probabilities : DataFrame
        Long format, one row per (mechanism, class): ``mechanism``, ``label`` (id and
        badge, e.g. "smooth_em (NOT DP)"), ``private``, ``releases``, ``class``,
        ``class_index``, ``probability``, ``is_majority``. For ``laplace_counts`` the
        probability is that of its noisy argmax (it releases the noisy counts).
    gap : int
        j = top count − runner-up count.
    smooth_sensitivity : float
        e^(−jε).
    explanation : str
        :func:`gap_explanation`.
    """

    counts: tuple[int, ...]
    epsilon: float
    class_names: tuple[str, ...]
    probabilities: pd.DataFrame = field(repr=False)
    gap: int
    smooth_sensitivity: float
    explanation: str

    def wide(self) -> pd.DataFrame:
        """One row per mechanism, one column per class: the exact probabilities."""
        table = self.probabilities.pivot(index="label", columns="class", values="probability")
        order = list(dict.fromkeys(self.probabilities["label"]))
        return table.loc[order, list(self.class_names)]


def mechanism_label(mechanism: str) -> str:
    """Mechanism id with its privacy badge, e.g. ``"smooth_em (NOT DP)"``."""
    return f"{mechanism} ({MECHANISMS[mechanism].badge})"


def playground(
    counts: Sequence[int],
    epsilon: float,
    mechanisms: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
) -> Playground:
    """Exact probability that each mechanism releases each class, for one leaf.

    Parameters
    ----------
    counts : list of int
        2 to 5 class counts (records of each class in the leaf).
    epsilon : float
        The leaf's budget, > 0.
    mechanisms : list of str, optional
        Default: every mechanism, ``none`` first.
    class_names : list of str, optional
        Default "A", "B", ….

    Returns
    -------
    Playground

    Notes
    -----
    Exact output laws (closed form or exact quadrature) of toy counts: no data read.
    ``smooth_em`` and ``none`` are NOT differentially private and are labelled so.
    """
    values = _check_counts(counts)
    epsilon = valid_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    chosen = _mechanisms(mechanisms)
    majority = is_majority(values)
    rows = []
    for m in chosen:
        mech = MECHANISMS[m]
        probs = mech.probabilities(values[None, :], epsilon)[0]
        for c, name in enumerate(names):
            rows.append(
                {
                    "mechanism": m,
                    "label": mechanism_label(m),
                    "private": mech.private,
                    "releases": mech.releases,
                    "class": name,
                    "class_index": c,
                    "probability": float(probs[c]),
                    "is_majority": bool(majority[c]),
                }
            )
    j = int(gap(values))
    return Playground(
        counts=tuple(int(v) for v in values),
        epsilon=epsilon,
        class_names=names,
        probabilities=pd.DataFrame(rows),
        gap=j,
        smooth_sensitivity=math.exp(-j * epsilon),
        explanation=gap_explanation(values, epsilon, names),
    )


def empirical_frequencies(
    counts: Sequence[int],
    epsilon: float,
    n_draws: int = 1000,
    seed: int = 0,
    mechanisms: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Release the leaf ``n_draws`` times per mechanism and count what came out.

    Each mechanism's noise comes from its own child of ``np.random.SeedSequence(seed)``
    (keyed by its place in the registry), so a mechanism's draws do not change when
    others are added or removed; the same seed gives the same frequencies.

    Returns
    -------
    DataFrame
        One row per (mechanism, class): ``mechanism``, ``label``, ``class``,
        ``class_index``, ``draws``, ``hits``, ``frequency`` (= hits / draws).

    Notes
    -----
    Simulated releases of toy counts: no data read.
    """
    values = _check_counts(counts)
    epsilon = valid_epsilon(epsilon)
    names = _class_names(class_names, len(values))
    chosen = _mechanisms(mechanisms)
    if isinstance(n_draws, bool) or not isinstance(n_draws, int | np.integer):
        raise ValueError(f"n_draws must be a whole number, got {n_draws!r}")
    if not 1 <= n_draws <= MAX_DRAWS:
        raise ValueError(f"n_draws must be between 1 and {MAX_DRAWS:,}, got {n_draws}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
    registry = list(MECHANISMS)
    children = np.random.SeedSequence(int(seed)).spawn(len(registry))
    k = len(values)
    tiled = np.tile(values, (int(n_draws), 1))
    rows = []
    for m in chosen:
        rng = np.random.default_rng(children[registry.index(m)])
        labels, _ = MECHANISMS[m].release(tiled, epsilon, StreamLeafNoise(rng, len(tiled)))
        hits = np.bincount(np.asarray(labels, dtype=np.int64), minlength=k)
        for c, name in enumerate(names):
            rows.append(
                {
                    "mechanism": m,
                    "label": mechanism_label(m),
                    "class": name,
                    "class_index": c,
                    "draws": int(n_draws),
                    "hits": int(hits[c]),
                    "frequency": hits[c] / n_draws,
                }
            )
    return pd.DataFrame(rows)
