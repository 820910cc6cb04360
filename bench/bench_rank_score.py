"""The default forest's ranking (binary AUC) at small ε: other scorings of the SAME release
(issue 28).

Each run r draws its stand-in (``bench/bench_standins.py`` specs; a bare name is the
whole shared set) and 5 stratified folds from seed r, and fits the default forest once
per fold with the replayable noise seed 100·r + fold (NOT private: a paired benchmark
only). The release is then scored by each variant (the memoised leaf values and evidence
scale are dropped between variants; the floor's check is the fit's):

- ``main``: the library's scoring without the leaf target (its scales 0);
- ``s:SCALES``: the library's scoring with the leaf target at these scales (``s:0.25``:
  the library's own);
- ``n:`` / ``n:NAME=VALUE[,…]``: the library's scoring with the noise margins on (forests
  of shared trees have them off), constants set as ``c:``;
- ``c:NAME=VALUE[,NAME=VALUE]``: the library's own scoring with constants of
  ``dpviz.models.forest.scoring`` set (the fit's own decisions, such as the tree count,
  stay main's);
- target variants (``t:``, the decision changes too): the leaves' evidence
  (``voting.count_values``) measured against another target than the count prior; the
  votes (prior, gain, margins) as main's;
- rank variants (``r:``, a rank score only): the record's score for class 1 from other
  per-leaf values summed over the trees; the decision stays main's. ``AUC`` is the rank
  score's own, ``AUC|dec`` ranks main's predicted class first and the rank score within
  it (what a predict_proba that keeps the decision could give).

Prints per stand-in the mean over runs and folds of AUC %, AUC|dec % and accuracy %.

    python bench/bench_rank_score.py adult:pos=0.12:2400 votes --epsilon 0.1 --runs 4 \\
        --datasets-dir ../shared/datasets [--variants main r:lin t:uniform]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dpviz.models.forest.scoring as scoring
import dpviz.models.forest.voting as voting
from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, VALIDATION_DIR, load_dataset
from dpviz.models.forest import release
from dpviz.models.registry import get_algorithm

MAIN_VALUES = voting.count_values
MAIN_VOTES = voting.count_votes
LIBRARY_SCALES = scoring.LEAF_TARGET_NOISE_SCALES


def _library(scales: float) -> None:
    """The library's leaf target (scoring.LEAF_TARGET_NOISE_SCALES) set to ``scales``
    (0: the released prior, main before it), its cached noise margins dropped."""
    scoring.LEAF_TARGET_NOISE_SCALES = scales
    scoring._null_spread.cache_clear()


@contextlib.contextmanager
def _constants(spec: str):
    """scoring's constants set as ``NAME=VALUE[,NAME=VALUE]`` says, for one scoring."""
    pairs = [item.split("=") for item in spec.split(",")]
    old = {name: getattr(scoring, name) for name, _ in pairs}
    for name, value in pairs:
        setattr(scoring, name, float(value))
    scoring._null_spread.cache_clear()
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(scoring, name, value)
        scoring._null_spread.cache_clear()


def _expected(counts, prior, eps):
    """(clipped counts, leaf total less the clipped noise, the shares the leaf would show
    if its records followed ``prior``) as in scoring.count_values."""
    counts = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    k = counts.shape[1]
    mu = scoring.clipped_noise_mean(eps)
    alpha = scoring.shrink_records(eps)
    total = np.clip(counts.sum(axis=1, keepdims=True) - k * mu, 0.0, None)
    expected = (total * prior + mu + alpha * prior) / (total + k * mu + alpha)
    return counts, total, expected


def _noise_sd(eps: float) -> float:
    q = np.exp(-eps)
    return float(np.sqrt(2 * q) / (1 - q))


# --- target variants: (noisy, prior, eps) -> the per-leaf target ------------------------


def t_uniform(noisy, prior, eps):
    return np.full_like(np.asarray(prior, dtype=np.float64), 1.0 / len(prior))


def _mix(noisy, prior, eps, big_uniform: bool, scales: float = 1.0):
    prior = np.asarray(prior, dtype=np.float64)
    _, total, _ = _expected(noisy, prior, eps)
    sigma = scales * _noise_sd(eps)
    w = sigma / (sigma + total)  # 1 for an empty leaf, → 0 for a leaf far above the noise
    if not big_uniform:
        w = 1.0 - w
    uniform = np.full_like(prior, 1.0 / len(prior))
    return w * prior + (1.0 - w) * uniform


def t_mix_big_uniform(noisy, prior, eps):
    """Tiny leaves (total within the noise) keep the prior, large ones move to uniform."""
    return _mix(noisy, prior, eps, True)


def t_mix_small_uniform(noisy, prior, eps):
    """Tiny leaves move to uniform, large ones keep the prior."""
    return _mix(noisy, prior, eps, False)


TARGETS = {
    "t:uniform": t_uniform,
    "t:mixbig": t_mix_big_uniform,
    "t:mixsmall": t_mix_small_uniform,
    **{
        f"t:mixsmall{s:g}": functools.partial(_mix, big_uniform=False, scales=s)
        for s in (0.5, 2.0, 4.0, 8.0)
    },
}


def _target_values(target):
    def values(noisy, prior, eps, alpha=None):
        return MAIN_VALUES(noisy, target(noisy, prior, eps), eps, alpha=alpha)

    return values


# --- rank variants: (noisy, prior, eps) -> per-leaf (k) values to average --------------


def r_lin(noisy, prior, eps):
    """Shrunk shares less the shares the leaf would show under the prior, linear."""
    counts, _, expected = _expected(noisy, prior, eps)
    alpha = scoring.shrink_records(eps)
    shares = (counts + alpha * prior) / (counts.sum(axis=1, keepdims=True) + alpha)
    return shares - expected


def r_linu(noisy, prior, eps):
    """As r_lin, shrunk to and measured against uniform."""
    return r_lin(noisy, t_uniform(noisy, prior, eps), eps)


def r_raw(noisy, prior, eps):
    """Unclipped noisy counts: (n_c + α·π_c)/(max(Σn, 0) + α) less the prior's share."""
    counts = np.asarray(noisy, dtype=np.float64)
    alpha = scoring.shrink_records(eps)
    total = np.clip(counts.sum(axis=1, keepdims=True), 0.0, None)
    return (counts + alpha * prior) / (total + alpha) - prior


def r_rawdiff(noisy, prior, eps):
    """Unclipped: the leaf's count of c less the prior's share of its total, per total."""
    counts = np.asarray(noisy, dtype=np.float64)
    alpha = scoring.shrink_records(eps)
    total = counts.sum(axis=1, keepdims=True)
    return (counts - prior * total) / (np.clip(total, 0.0, None) + alpha)


def r_logu(noisy, prior, eps):
    """main's log evidence with the uniform target (rank only)."""
    return MAIN_VALUES(noisy, t_uniform(noisy, prior, eps), eps)[:, :-1]


def r_main_nomargin(noisy, prior, eps):
    """main's evidence, summed (the margin and gain removed): a check of the harness."""
    return MAIN_VALUES(noisy, prior, eps)[:, :-1]


def _target_rank(noisy, prior, eps, target):
    """main's log evidence against ``target`` (rank only)."""
    return MAIN_VALUES(noisy, target(noisy, prior, eps), eps)[:, :-1]


RANKS = {
    **{
        "r:" + name[2:]: functools.partial(_target_rank, target=t)
        for name, t in TARGETS.items()
        if name != "t:uniform"
    },
    "r:check": r_main_nomargin,
    "r:lin": r_lin,
    "r:linu": r_linu,
    "r:raw": r_raw,
    "r:rawdiff": r_rawdiff,
    "r:logu": r_logu,
}


# --- record margin variants (``m:Z``): a per-record hurdle from its leaves' noise -------


def m_values(noisy, prior, eps):
    """Per leaf: main's evidence (k), the delta-method noise variance of e_c − e_top (k;
    0 for the prior's first class) and the ones column. e_c is log((x_c + α·π_c)/(T + α))
    less a constant, so d(e_c − e_top) ≈ dx_c/(x_c + α·π_c) − dx_top/(x_top + α·π_top),
    with x the clipped counts, π the leaf target and the discrete Laplace variance σ²."""
    prior = np.asarray(prior, dtype=np.float64)
    values = MAIN_VALUES(noisy, prior, eps)
    k = len(prior)
    counts = np.clip(np.asarray(noisy, dtype=np.float64), 0.0, None)
    target = np.broadcast_to(scoring.leaf_target(counts, prior, eps), counts.shape)
    a = counts + scoring.shrink_records(eps) * target
    q = np.exp(-eps)
    var = 2.0 * q / (1.0 - q) ** 2
    top = int(np.argmax(prior))
    inv = 1.0 / a**2
    dvar = var * (inv + inv[:, top : top + 1])
    dvar[:, top] = 0.0
    return np.hstack([values[:, :k], dvar, values[:, k:]])


def m_score(sums, prior, epsilon, *, z, scale=1.0, **_):
    """count_votes with the noise margin replaced by z (Bonferroni over the k − 1
    classes) sds of the record's mean e_c − e_top, the prior's lead counting towards it."""
    prior = np.asarray(prior, dtype=np.float64)
    k = len(prior)
    log_prior = np.log(prior + 1e-12)
    reached = np.maximum(sums[:, 2 * k :], 1.0)
    gain = scoring.evidence_gain(epsilon) * scale
    score = log_prior + gain * sums[:, :k] / reached
    sd = np.sqrt(sums[:, k : 2 * k]) / reached
    lead = log_prior.max() - log_prior
    score -= np.maximum(gain * scoring.family_z(k, z) * sd - lead, 0.0)
    score -= score.max(axis=1, keepdims=True)
    return np.exp(score)


def _with_margins(sums, **kwargs):
    """The library's count votes with the noise margins on (shared trees have them off)."""
    return MAIN_VOTES(sums, **{**kwargs, "noise_margins": True})


def _rank_values(rank):
    """Per-leaf values of ``rank`` with the count of trees reached (count_values' form)."""

    def values(noisy, prior, eps, alpha=None):  # α: the rank rules keep their own
        v = rank(noisy, np.asarray(prior, dtype=np.float64), eps)
        return np.hstack([v, np.ones((len(v), 1))])

    return values


def _rank_score(sums, **_):
    k = sums.shape[1] - 1
    return sums[:, :k] / np.maximum(sums[:, k:], 1.0)


def _forget(model) -> None:
    """Drop what the model memoised of its scoring (leaf values, evidence scale)."""
    voting._MEMO.pop(model, None)
    for name in ("_scale_cache", "_threshold_cache"):
        model.__dict__.pop(name, None)


def _votes(model, X) -> np.ndarray:
    encoded = model._encode_predict(X)
    release.complete_release(model)
    return voting.record_votes(model, encoded)


def _scored(model, X, values, score=None):
    _forget(model)
    old_values, old_score = voting.count_values, voting.count_votes
    voting.count_values = values
    if score is not None:
        voting.count_votes = score
    try:
        return _votes(model, X)
    finally:
        voting.count_values, voting.count_votes = old_values, old_score
        _forget(model)


def _auc(positive, score) -> float:
    if positive is None:  # more than two classes
        return np.nan
    return 100 * roc_auc_score(positive, score)


def _data(spec: str, seed: int, datasets_dir: Path):
    """The stand-in ``spec`` (a bare name not in ``datasets_dir``: the validation set)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the benchmark declares the inferred schema public
        if ":" not in spec and not (Path(datasets_dir) / f"{spec}.csv").exists():
            return load_dataset(spec, VALIDATION_DIR)
        name, frame = standin(spec, seed, datasets_dir)
        return load_dataset(name, frame=frame)


def _variant_votes(model, X, variant: str) -> np.ndarray | None:
    """The votes of a decision variant (``n:``, ``m:``, ``c:``, ``s:``, ``t:``) on the
    fitted release, or None for a rank variant."""
    if variant in TARGETS:
        return _scored(model, X, _target_values(TARGETS[variant]))
    kind, _, arg = variant.partition(":")
    if kind not in ("n", "m", "c", "s"):
        return None
    _library(float(arg) if kind == "s" else LIBRARY_SCALES)
    try:
        with _constants(arg) if kind in ("n", "c") and arg else contextlib.nullcontext():
            if kind == "n":
                return _scored(model, X, MAIN_VALUES, _with_margins)
            if kind == "m":
                return _scored(model, X, m_values, functools.partial(m_score, z=float(arg)))
            return _votes(model, X)
    finally:
        _forget(model)
        _library(0.0)


def run(
    spec: str, epsilon: float, seed: int, datasets_dir: Path, variants, algorithm: str
) -> list[tuple]:
    """(spec, run, fold, variant, AUC %, AUC|dec %, accuracy %) of one run's five folds;
    AUC is NaN where the set has more than two classes."""
    data = _data(spec, seed, datasets_dir)
    labels, y = data.labels(), data.y
    index = {c: i for i, c in enumerate(data.schema.classes)}
    rows = []
    splitter = StratifiedKFold(5, shuffle=True, random_state=seed)
    for fold, (train, test) in enumerate(splitter.split(y, y)):
        model = get_algorithm(algorithm).make(
            epsilon, random_state=seed * 1_000_003 + fold, schema=data.schema
        )
        model.set_params(noise_seed=100 * seed + fold)
        X = data.features.iloc[test]
        _library(0.0)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # replayable noise: NOT private
                model.fit(data.features.iloc[train], labels[train])
                main = _votes(model, X)
        finally:
            _forget(model)
        order = [index[str(c)] for c in model.classes_]
        one = order.index(1)
        positive = y[test] == 1 if len(order) == 2 else None
        decided = np.argmax(main, axis=1)
        main_hit = 100 * np.mean(np.array(order)[decided] == y[test])
        main_dec = (decided == one).astype(float)
        for variant in variants:
            if variant == "main":
                p = main[:, one] / main.sum(axis=1)
                rows.append((spec, seed, fold, variant, _auc(positive, p), np.nan, main_hit))
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                v = _variant_votes(model, X, variant)
                if v is not None:
                    p = v[:, one] / v.sum(axis=1)
                    hit = 100 * np.mean(np.array(order)[np.argmax(v, axis=1)] == y[test])
                    rows.append((spec, seed, fold, variant, _auc(positive, p), np.nan, hit))
                    continue
                v = _scored(model, X, _rank_values(RANKS[variant]), _rank_score)
            s = v[:, one] - v[:, 1 - one]
            pct = pd.Series(s).rank(pct=True).to_numpy() * 0.5
            rows.append(
                (
                    spec,
                    seed,
                    fold,
                    variant,
                    _auc(positive, s),
                    _auc(positive, main_dec + pct),
                    main_hit,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("standins", nargs="+", help="stand-ins, shared or validation sets")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument(
        "--variants", nargs="+", default=["main", *TARGETS, *RANKS], help="which scorings"
    )
    parser.add_argument("--out", type=Path, help="CSV of every fold's row")
    parser.add_argument("--algorithm", default="fletcher_islam", help="a count forest")
    args = parser.parse_args(argv)
    rows = []
    try:
        for spec in args.standins:
            for seed in range(args.runs):
                rows += run(
                    spec, args.epsilon, seed, args.datasets_dir, args.variants, args.algorithm
                )
                print(f"# {spec} run {seed} done", file=sys.stderr, flush=True)
    finally:
        _library(LIBRARY_SCALES)
    columns = ["standin", "run", "fold", "variant", "auc", "auc_dec", "accuracy"]
    table = pd.DataFrame(rows, columns=columns)
    if args.out:
        table.to_csv(args.out, index=False)
    means = table.groupby(["standin", "variant"])[["auc", "auc_dec", "accuracy"]].mean()
    print(means.unstack("variant").round(1).T.to_string())


if __name__ == "__main__":
    main()
