"""Paired comparison of decision rules for the default forest's released leaves (issue 28).

Every rule here is post-processing of one release: each fold is fitted ONCE (a noise
seed: replayable noise, NOT private, a benchmark only) and its test records are scored
under every rule. While predicting, the per-leaf values the forest sums over its trees
(:func:`~dpviz.models.forest.scoring.count_values`) are widened by two columns per class,
so that each record's sums also hold

- ``V_c``: the summed null variance of its leaves' evidence for class c over the prior's
  first class c₀ (a leaf whose records follow the prior: multinomial sampling of its
  noisy total plus the discrete Laplace noise at the leaves' ε, by the delta method on
  the shrunk log shares), and
- ``A_c``: the number of its trees whose leaf gives c more evidence than c₀;

the forest's own scores are computed from the usual columns (checked: the captured rule
"main" gives the estimator's predictions). Rules (``RULES``):

- ``main``: the estimator's law;
- ``g<x>``: the evidence gain × x (the decision's boldness, one number for every release);
- ``V<z>``: the noise margin per record, z (Bonferroni over k − 1 classes) spreads of
  √V_c instead of the fixed one of a noise-only empty leaf, the prior's lead counting
  towards it; ``+g<x>``: with the gain × x;
- ``zs<a>``: the gain × (1 + a·clip(z − 1, 0, 3)), z the release's signal test
  (:func:`~dpviz.models.forest.signal.signal_z`): a weight that follows z;
- ``pool``: the class prior pooled with the class totals of every leaf's released counts
  (inverse-variance weights; the estimator predicts again with it).

Prints per data set the mean gap (points) to the training fold's majority class under
main and each rule's paired difference, the binary AUC differences, and how often
moving a record off c₀ paid (its true class c: +1, c₀: −1) by the record's
t = (S_c − S_c₀)/√V_c and by the release's z.

    python bench/bench_decision_rules.py votes tic_tac_toe:perm --runs 10 \\
        --datasets-dir ../shared/datasets --out /tmp/rules.pkl
"""

from __future__ import annotations

import argparse
import math
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_standins import standin
from bench.utility.data import DATASETS_DIR, load_dataset
from dpviz.models.forest import release, scoring, signal, voting
from dpviz.models.registry import get_algorithm

_VALUES, _VOTES = scoring.count_values, scoring.count_votes
_CAPTURED: dict = {}


def null_variance(noisy: np.ndarray, prior: np.ndarray, eps: float) -> np.ndarray:
    """Per leaf and class c, Var(e_c − e_c₀) of a leaf whose records follow ``prior``."""
    counts = np.clip(np.asarray(noisy, float), 0, None)
    k = counts.shape[1]
    mu, alpha = scoring.clipped_noise_mean(eps), scoring.shrink_records(eps)
    q = math.exp(-eps)
    v = 2 * q / (1 - q) ** 2
    total = np.clip(counts.sum(1, keepdims=True) - k * mu, 0, None)
    m = total * prior + mu + alpha * prior
    c0 = int(np.argmax(prior))
    var = (total * prior * (1 - prior) + v) / m**2
    cov = -total * prior * prior[c0] / (m * m[:, [c0]])
    out = var + var[:, [c0]] - 2 * cov
    out[:, c0] = 0.0
    return out


def _values(noisy, prior, eps, alpha=None):
    base = _VALUES(noisy, prior, eps, alpha=alpha)
    k = base.shape[1] - 1
    prior = np.asarray(prior, float)
    evidence = base[:, :k]
    agree = (evidence - evidence[:, [int(np.argmax(prior))]] > 0).astype(float)
    return np.hstack([evidence, null_variance(noisy, prior, eps), agree, base[:, k:]])


def _votes(sums, prior, epsilon, *, noise_margins=True, scale=1.0, margin_weights=None):
    k = (sums.shape[1] - 1) // 3
    _CAPTURED.update(sums=sums.copy(), prior=np.asarray(prior, float), eps=epsilon)
    _CAPTURED.update(margins=noise_margins, scale=scale, weights=margin_weights)
    plain = np.hstack([sums[:, :k], sums[:, -1:]])
    return _VOTES(
        plain,
        prior,
        epsilon,
        noise_margins=noise_margins,
        scale=scale,
        margin_weights=margin_weights,
    )


def pooled_prior(model) -> np.ndarray:
    """The released prior pooled with every leaf's released class totals (disjoint trees:
    each training record is counted in one leaf), weighed by their noise variances."""
    release.complete_release(model)
    noisy = np.concatenate([model.leaf_noisy_counts_, model._empty_noisy]).astype(float)

    def var(eps):
        q = math.exp(-eps)
        return 2 * q / (1 - q) ** 2

    v_prior, v_leaves = var(model.prior_epsilon_), len(noisy) * var(model.tree_epsilon_)
    w = v_leaves / (v_prior + v_leaves)
    return w * model.prior_counts_ + (1 - w) * noisy.sum(0)


def lead_weight(cap: dict, lead_z: float) -> np.ndarray:
    """Per class c, min(1, (n₀ − n_c)⁺ / (lead_z·sd)): how far the released prior's count
    of its first class stands above c's, in spreads sd = √(2·Var) of the difference of
    two of its noisy counts (public ε); 1 for c₀ itself."""
    counts = np.clip(np.asarray(cap["prior_counts"], float), 0, None)
    q = math.exp(-cap["prior_eps"])
    sd = math.sqrt(2 * 2 * q / (1 - q) ** 2)
    lead = counts.max() - counts
    return np.where(lead > 0, np.clip(lead / (lead_z * sd), 0.0, 1.0), 1.0)


def rule_scores(
    cap: dict, k: int, z: float | None = None, g: float = 1.0, lead_z: float | None = None
) -> np.ndarray:
    """Scores of the captured sums under gain × ``g`` and, with ``z``, the per-record margin;
    with ``lead_z``, the margin over each class weighed by :func:`lead_weight`."""
    sums, prior, eps = cap["sums"], cap["prior"], cap["eps"]
    if lead_z is not None:
        r = np.maximum(sums[:, -1:], 1.0)
        log_prior = np.log(prior + 1e-12)
        gain = scoring.evidence_gain(eps) * cap["scale"] * g
        score = log_prior + gain * sums[:, :k] / r
        if cap["margins"]:
            margin = scoring.noise_margin(prior, eps) * lead_weight(cap, lead_z)
            score -= np.maximum(gain * margin / np.sqrt(r) - (log_prior.max() - log_prior), 0)
        return np.exp(score - score.max(1, keepdims=True))
    if z is None:
        plain = np.hstack([sums[:, :k], sums[:, -1:]])
        return _VOTES(plain, prior, eps, noise_margins=cap["margins"], scale=cap["scale"] * g)
    S, V, r = sums[:, :k], sums[:, k : 2 * k], np.maximum(sums[:, -1:], 1.0)
    log_prior = np.log(prior + 1e-12)
    gain = scoring.evidence_gain(eps) * cap["scale"] * g
    score = log_prior + gain * S / r
    if cap["margins"]:
        lead = log_prior.max() - log_prior
        hurdle = gain * scoring.family_z(k, z) * np.sqrt(V) / r
        score -= np.maximum(hurdle - lead, 0.0)
    return np.exp(score - score.max(1, keepdims=True))


RULES = {
    "g0.8": dict(g=0.8),
    "g1.25": dict(g=1.25),
    "g1.5": dict(g=1.5),
    "g2": dict(g=2.0),
    "V0.25": dict(z=0.25),
    "V0.5": dict(z=0.5),
    "V1": dict(z=1.0),
    "V0.5+g1.5": dict(z=0.5, g=1.5),
    "V1+g2": dict(z=1.0, g=2.0),
    "L0.5": dict(lead_z=0.5),
    "L1": dict(lead_z=1.0),
    "L2": dict(lead_z=2.0),
    "L3": dict(lead_z=3.0),
    "L4": dict(lead_z=4.0),
    "Linf": dict(lead_z=1e12),
    "L1e6": dict(lead_z=1e-6),
}
Z_SCALES = [0.15, 0.3, 0.5]
ONLY_KEPT = [False]  # --only-kept: no pooled prior either


def run_fold(spec, data, train, test, seed, eps) -> tuple[list[dict], pd.DataFrame]:
    X, y = data.features, data.labels().astype(str)
    model = get_algorithm("fletcher_islam").make(
        eps, random_state=seed, schema=data.schema, noise_seed=7 + seed
    )
    model.fit(X.iloc[train], y[train])
    classes = [str(c) for c in model.classes_]
    k = len(classes)
    truth = np.array([classes.index(v) if v in classes else -1 for v in y[test]])
    majority = classes.index(pd.Series(y[train]).value_counts().idxmax())
    base = np.mean(truth == majority)
    _CAPTURED.clear()
    main_pred = np.asarray(model.predict(X.iloc[test])).astype(str)
    cap = dict(_CAPTURED, prior_counts=model.prior_counts_, prior_eps=model.prior_epsilon_)
    release.complete_release(model)
    noisy = np.concatenate([model.leaf_noisy_counts_, model._empty_noisy])
    z = signal.signal_z(noisy, cap["prior"], model.tree_epsilon_)
    out = []

    def add(rule, scores):
        auc = np.nan
        if k == 2 and len(set(truth)) == 2:
            auc = 100 * roc_auc_score(truth == 1, scores[:, 1] / scores.sum(1))
        acc = np.mean(scores.argmax(1) == truth)
        out.append(dict(spec=spec, seed=seed, rule=rule, gap=100 * (acc - base), auc=auc, z=z))

    # "main": the law before the prior's lead weighed the margin (h-small2); "estimator":
    # this checkout's law, which must give the estimator's predictions.
    main = rule_scores(cap, k)
    own = main
    if cap.get("weights") is not None:
        plain = np.hstack([cap["sums"][:, :k], cap["sums"][:, -1:]])
        own = _VOTES(
            plain,
            cap["prior"],
            cap["eps"],
            noise_margins=cap["margins"],
            scale=cap["scale"],
            margin_weights=cap["weights"],
        )
    assert (np.array(classes)[own.argmax(1)] == main_pred).all(), "capture != estimator"
    add("main", main)
    add("estimator", own)
    for name, kw in RULES.items():
        add(name, rule_scores(cap, k, **kw))
    for a in Z_SCALES:
        add(f"zs{a}", rule_scores(cap, k, g=1.0 + a * float(np.clip(z - 1.0, 0.0, 3.0))))
    if not ONLY_KEPT[0]:
        kept = model.prior_counts_
        model.prior_counts_ = pooled_prior(model)
        add("pool", model.predict_proba(X.iloc[test]))
        model.prior_counts_ = kept
    # Per record: would moving it off c₀ (to its best other class c) pay?
    sums, c0 = cap["sums"], int(np.argmax(cap["prior"]))
    S, V, A = sums[:, :k], sums[:, k : 2 * k], sums[:, 2 * k : 3 * k]
    D = S - S[:, [c0]]
    D[:, c0] = -np.inf
    c = D.argmax(1)
    i = np.arange(len(c))
    records = pd.DataFrame(
        dict(
            spec=spec,
            t=D[i, c] / np.sqrt(V[i, c] + 1e-12),
            dissent=sums[:, -1] - A[i, c],
            moved=main.argmax(1) != c0,
            pays=(truth == c).astype(int) - (truth == c0).astype(int),
            z=z,
        )
    )
    return out, records


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", help="shared sets or stand-ins (bench_standins)")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--datasets-dir", type=Path, default=DATASETS_DIR)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--only-kept", action="store_true", help="score main and the estimator's law only"
    )
    args = parser.parse_args(argv)
    if args.only_kept:
        RULES.clear()
        Z_SCALES.clear()
        ONLY_KEPT[0] = True
    warnings.simplefilter("ignore")  # inferred schemas: declared public for a benchmark
    voting.count_values, voting.count_votes = _values, _votes
    rows, records = [], []
    for spec in args.specs:
        for r in range(args.runs):
            name, frame = standin(spec, r, args.datasets_dir)
            data = load_dataset(name, frame=frame)
            y = data.labels().astype(str)
            folds = StratifiedKFold(5, shuffle=True, random_state=200 + r).split(y, y)
            for f, (train, test) in enumerate(folds):
                out, recs = run_fold(spec, data, train, test, 1000 * r + f, args.epsilon)
                rows += out
                records.append(recs)
        print(spec, "done", flush=True)
        with open(args.out, "wb") as fh:
            pickle.dump((pd.DataFrame(rows), pd.concat(records)), fh)
    report(pd.DataFrame(rows), pd.concat(records))


def report(rows: pd.DataFrame, records: pd.DataFrame) -> None:
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    gap = rows.pivot_table(index="rule", columns="spec", values="gap")
    print("gap to the majority (points), main; then each rule − main (paired)")
    print(gap.loc["main"].round(2).to_string())
    print((gap - gap.loc["main"]).drop("main").round(2).to_string())
    auc = rows.pivot_table(index="rule", columns="spec", values="auc").dropna(axis=1)
    if len(auc.columns):
        print("binary AUC, main; then rule − main")
        print(auc.loc["main"].round(1).to_string())
        print((auc - auc.loc["main"]).drop("main").round(2).to_string())
    records = records.assign(tb=pd.cut(records.t, [-np.inf, 0, 0.5, 1, 1.5, 2, np.inf]))
    print("mean pay-off of moving a record off the prior's class, by t (records)")
    print(records.pivot_table(index="spec", columns="tb", values="pays", observed=True).round(2))
    print("... by dissenting trees (main's moved records only)")
    moved = records[records.moved]
    print(moved.pivot_table(index="spec", columns="dissent", values="pays").round(2))
    z = rows[rows.rule == "main"].drop_duplicates(["spec", "seed"])
    print("release signal z per data set")
    print(z.groupby("spec").z.describe()[["mean", "std", "min", "max"]].round(2))


if __name__ == "__main__":
    main()
