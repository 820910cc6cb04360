"""A membership-inference attack on a model trained with the user's settings on their data.

**What it does.** The records are split into members and non-members by a public seed
(each record a member with probability ½, independently). The algorithm is fitted on the
members, exactly as the Train page fits a release (registry defaults, then the user's
settings; fresh secret noise unless replayable noise is asked for), and an attacker who
sees only the released model scores every record:

- a forest (``fletcher_islam``, ``jpw``): the released outputs along the record's path
  in every tree that would have counted it (the one tree the public keyed hash deals it
  to with disjoint data, every tree with shared data): the leaf's released count of the
  record's own class (count mechanisms) or whether the leaf's released label is the
  record's class (label mechanisms), summed over those trees;
- any other model: the released model's predicted probability of the record's true class
  (a loss attack: the score is a decreasing function of the cross-entropy loss).

A member raises these scores (it adds one to its own leaf's count), so high scores say
"member". The attack's ROC curve (:func:`sklearn.metrics.roc_curve`), its AUC and its
advantage max(TPR − FPR) are reported, and the same attack is run on the non-private
reference: the same algorithm and settings with the noise switched off (ε = 10⁶: no
noise is ever drawn; the tree structure and the reading are the same), so that the two
curves differ by the noise alone.

**The bound.** If the release is ε-DP (add/remove one record), then for every record and
every test, P[say member | in] ≤ e^ε · P[say member | out] and the same for "non-member",
whatever else the attacker knows (here: the other records and their membership, all
independent of this record's coin). Hence TPR − FPR ≤ (e^ε − 1)/(e^ε + 1) for any test
chosen without looking at the record's own coin (:func:`advantage_bound`), and the ROC
curve lies in the region TPR ≤ e^ε·FPR, 1 − FPR ≤ e^ε·(1 − TPR).

**The confidence interval.** The advantage read off the whole ROC curve picks its
threshold on the same records it is measured on, which flatters it. The interval is
therefore for a held-out test: the records are split again by the public seed into a
half that chooses the threshold (the one maximising TPR − FPR there) and a half that
measures TPR and FPR at that threshold. Each of the two is bounded by a two-sided exact
Clopper–Pearson interval at level (1 − confidence)/2 (Bonferroni over the two), treating
the held-out members and non-members as independent trials, which gives
[TPR_low − FPR_high, TPR_high − FPR_low] for the held-out advantage. The measured
held-out advantage is the claim's test: an interval lying wholly above the bound
refutes the claimed ε (up to the 1 − confidence chance of a false alarm).

**What it can and cannot show.** An attack that stays within the bound does not prove
the model private: it is one attack among many, on one split; a stronger attack, a
record unlike the others or many releases together may show more. An attack above the
bound refutes the claim. The scores, curves and advantages are computed from the
records: they are NOT private diagnostics for the data owner, never releases. The
model fitted here is not the released model either (it sees only the members).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.metrics import roc_auc_score, roc_curve

from dpviz.evaluation import defaults
from dpviz.evaluation.release_audit import clopper_pearson
from dpviz.evaluation.sweep import subset
from dpviz.models.forest.estimator import DPRandomForestClassifier, hash_trees
from dpviz.models.forest.floor import halved, record_halves
from dpviz.models.registry import get_algorithm
from dpviz.privacy.mechanisms import get_mechanism, valid_epsilon
from dpviz.privacy.schema import PrivacyLeakWarning, Schema
from dpviz.tabular.encode import EncodedData

Progress = Callable[[float, str], None]

# The non-private reference's ε: noise of scale 10⁻⁶, which the exact discrete samplers
# round to 0 (the Train page's count twin uses the same kind of ε, 10⁶).
REFERENCE_EPSILON = 1e6
# Public seeds: the membership coins and the threshold/measure halves.
_MEMBER_STREAM = 0xA7
_HALF_STREAM = 0xA8
# Points kept on a curve for the chart and the JSON (the ROC of 30,000 records has
# thousands); the AUC and advantages are computed on the full curve.
CURVE_POINTS = 400
MIN_RECORDS = 40


def advantage_bound(epsilon: float) -> float:
    """The most membership advantage (TPR − FPR) that an ε-DP release allows:
    (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    return float(math.tanh(float(epsilon) / 2.0))


def dp_region(epsilon: float, fpr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lowest and highest TPR that ε-DP allows at each FPR: the region
    TPR ≤ e^ε·FPR, 1 − FPR ≤ e^ε·(1 − TPR) and, for a test that says the opposite,
    the same with the roles swapped."""
    fpr = np.asarray(fpr, dtype=float)
    e = math.exp(min(float(epsilon), 700.0))
    high = np.minimum(np.minimum(e * fpr, 1.0 - (1.0 - fpr) / e), 1.0)
    high = np.maximum(high, fpr)
    low = np.maximum(np.maximum(fpr / e, 1.0 - e * (1.0 - fpr)), 0.0)
    return np.minimum(low, fpr), high


@dataclass
class AttackCurve:
    """The attack on one model: its ROC curve, AUC and advantages.

    Attributes
    ----------
    model : str
        Which model was attacked ("DP model" or "non-private reference").
    private : bool
        Whether that model claims an ε (False for the reference).
    reads : str
        What the attack reads from the released model.
    fpr, tpr : ndarray
        The ROC curve (thinned to at most :data:`CURVE_POINTS` points, corners kept).
    auc : float
        Area under the full ROC curve.
    advantage : float
        max(TPR − FPR) over the full curve (threshold chosen on the measured records:
        optimistic).
    heldout_advantage : float
        TPR − FPR on the measuring half at the threshold the other half chose.
    ci_low, ci_high : float
        Clopper–Pearson interval of the held-out advantage.
    heldout_tpr, heldout_fpr : float
        The held-out test's rates.
    heldout_members, heldout_nonmembers : int
        Records of the measuring half in each group (the interval's sample sizes).
    """

    model: str
    private: bool
    reads: str
    fpr: np.ndarray
    tpr: np.ndarray
    auc: float
    advantage: float
    heldout_advantage: float
    ci_low: float
    ci_high: float
    heldout_tpr: float
    heldout_fpr: float
    heldout_members: int
    heldout_nonmembers: int

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("fpr", "tpr")}
        out["roc"] = {"fpr": self.fpr.round(6).tolist(), "tpr": self.tpr.round(6).tolist()}
        return out


@dataclass
class AttackResult:
    """Outcome of :func:`membership_attack` (NOT private: computed from the records).

    Attributes
    ----------
    algorithm, epsilon, params :
        The configuration attacked (``params``: every parameter, defaults included).
    ledger_epsilon : float or None
        The ε whose bound is tested: the fitted DP model's ledger total, or the
        configuration's ε when the ledger proves none only because of replayable noise
        or an inferred schema (``claim_note`` says so); None for a configuration that
        is not DP.
    bound : float
        (e^ε − 1)/(e^ε + 1) for the ledger's ε (None without one).
    confidence : float
        Confidence of the held-out advantage's interval.
    n_records, n_members : int
        Records attacked and how many of them were members.
    random_state : int
        The public seed of the split, the halves and the tree structure.
    replayable_noise : bool
        True when the noise was replayable (a noise seed): NOT private.
    dp, reference : AttackCurve
        The attack on the DP model and on the non-private reference (None if skipped).
    seconds : float
        Wall time.
    claim_note : str
        Why the bound is the configuration's ε when the ledger proves none ("" else).
    """

    algorithm: str
    epsilon: float
    params: dict
    ledger_epsilon: float | None
    bound: float | None
    confidence: float
    n_records: int
    n_members: int
    random_state: int
    replayable_noise: bool
    dp: AttackCurve
    reference: AttackCurve | None
    seconds: float = 0.0
    claim_note: str = ""

    @property
    def refuted(self) -> bool:
        """True when the held-out advantage's whole interval lies above the bound."""
        return self.bound is not None and self.dp.ci_low > self.bound

    @property
    def within_bound(self) -> bool:
        """True when the measured held-out advantage is at most the bound plus its
        interval's half-width above the estimate (i.e. ``ci_low`` ≤ bound)."""
        return self.bound is not None and self.dp.ci_low <= self.bound

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("dp", "reference")}
        out["dp"] = self.dp.to_dict()
        out["reference"] = None if self.reference is None else self.reference.to_dict()
        out["refuted"] = self.refuted
        out["not_private"] = (
            "computed from the records: a diagnostic for the data owner, not a release"
        )
        return out


# --- scores -------------------------------------------------------------------------------


def forest_path_scores(model: DPRandomForestClassifier, records: EncodedData) -> np.ndarray:
    """Each record's score read from a released forest along its path: in the trees
    that would count it (its hashed tree with disjoint data, the trees of its hashed half
    with ``data_split="auto"`` from ε = 5, every tree with shared data), the leaf's
    released count of its class (count mechanisms) or 1 where the
    leaf's released label is its class (label mechanisms), summed. Reads released
    outputs, the public structure and the public hash only."""
    routed = model.route_records(records)
    matrix = routed.leaf_matrix  # (trees, records): leaf numbers of routed.leaf_keys
    outputs = model.released_outputs(routed.leaf_keys)
    n = records.n_records
    y = records.y.astype(np.int64)
    counted = None
    if halved(model):
        leaves = matrix.T  # (records, trees), read in the trees of each record's half
        counted = (
            np.arange(model.n_estimators_)[None, :] % 2 == record_halves(model, records)[:, None]
        )
    elif model.data_split_ == "shared":
        leaves = matrix.T  # (records, trees)
    else:
        # The public keyed hash: the one tree a member trained.
        tree_of = hash_trees(records, model.n_estimators_, model._split_seed)
        leaves = matrix[tree_of, np.arange(n)][:, None]
    leaves = leaves.astype(np.int64)
    if outputs.noisy_counts is not None:
        values = outputs.noisy_counts[leaves, y[:, None]].astype(np.float64)
    else:
        values = (outputs.labels[leaves] == y[:, None]).astype(np.float64)
    if counted is not None:
        values *= counted
    return values.sum(axis=1)


def probability_scores(model: Any, records: EncodedData) -> np.ndarray:
    """Each record's predicted probability of its true class (a loss attack): the
    greedy trees' and DPBoost's ``_proba`` of encoded records, post-processing of the
    release."""
    proba = model._proba(records)
    return proba[np.arange(records.n_records), records.y.astype(np.int64)]


def attack_scores(model: Any, records: EncodedData) -> tuple[np.ndarray, str]:
    """(scores, what they read) of ``records`` under the released ``model``."""
    if isinstance(model, DPRandomForestClassifier):
        counts = get_mechanism(model.mechanism).releases == "counts"
        what = "released count of the record's class" if counts else "released label"
        where = "its hashed tree" if model.data_split_ != "shared" else "every tree"
        if halved(model):
            where = "the trees of its hashed half"
        return forest_path_scores(model, records), f"the {what} at the record's leaf in {where}"
    return probability_scores(model, records), "predicted probability of the record's class"


# --- ROC, advantage and its interval ------------------------------------------------------


def _thin(fpr: np.ndarray, tpr: np.ndarray, points: int = CURVE_POINTS):
    """At most ``points`` points of a ROC curve, its ends and its highest TPR − FPR kept."""
    if len(fpr) <= points:
        return fpr, tpr
    keep = np.unique(
        np.concatenate(
            [np.linspace(0, len(fpr) - 1, points - 1).astype(int), [int(np.argmax(tpr - fpr))]]
        )
    )
    return fpr[keep], tpr[keep]


def evaluate_scores(
    scores: np.ndarray,
    member: np.ndarray,
    measure: np.ndarray,
    *,
    model: str,
    private: bool,
    reads: str,
    confidence: float,
) -> AttackCurve:
    """The ROC curve, AUC and advantage of ``scores`` (high: member), and the held-out
    test: threshold chosen on the records where ``measure`` is False, TPR and FPR
    measured where it is True, with Clopper–Pearson intervals (see the module docstring).
    """
    member = np.asarray(member, dtype=bool)
    fpr, tpr, _ = roc_curve(member, scores)
    auc = float(roc_auc_score(member, scores))
    advantage = float(np.max(tpr - fpr))
    choose = ~measure
    f_c, t_c, thresholds = roc_curve(member[choose], scores[choose])
    threshold = thresholds[int(np.argmax(t_c - f_c))]
    said = scores >= threshold
    m_members = member & measure
    m_non = ~member & measure
    n1, n0 = int(m_members.sum()), int(m_non.sum())
    hits1, hits0 = int(said[m_members].sum()), int(said[m_non].sum())
    alpha = (1.0 - confidence) / 4.0  # two rates, two sides each
    (t_low, t_high), (f_low, f_high) = (
        (float(a) for a in clopper_pearson(h, n, alpha)) for h, n in ((hits1, n1), (hits0, n0))
    )
    tpr_h, fpr_h = hits1 / n1, hits0 / n0
    fpr_t, tpr_t = _thin(fpr, tpr)
    return AttackCurve(
        model=model,
        private=private,
        reads=reads,
        fpr=fpr_t,
        tpr=tpr_t,
        auc=auc,
        advantage=advantage,
        heldout_advantage=tpr_h - fpr_h,
        ci_low=t_low - f_high,
        ci_high=t_high - f_low,
        heldout_tpr=tpr_h,
        heldout_fpr=fpr_h,
        heldout_members=n1,
        heldout_nonmembers=n0,
    )


# --- the attack ---------------------------------------------------------------------------


def membership_split(n_records: int, random_state: int) -> tuple[np.ndarray, np.ndarray]:
    """(member, measure) masks from the public seed: each record a member with
    probability ½, and in the measuring half with probability ½, independently."""
    member = np.random.default_rng([random_state, _MEMBER_STREAM]).random(n_records) < 0.5
    measure = np.random.default_rng([random_state, _HALF_STREAM]).random(n_records) < 0.5
    return member, measure


def _check_split(member: np.ndarray, measure: np.ndarray) -> None:
    for name, mask in (("threshold", ~measure), ("measuring", measure)):
        for group, inside in (("members", member), ("non-members", ~member)):
            if not (mask & inside).any():
                raise ValueError(
                    f"the {name} half has no {group}: the attack needs at least "
                    f"{MIN_RECORDS} records"
                )


def _fit(algorithm, epsilon, params, random_state, noise_seed, members, schema):
    with warnings.catch_warnings():
        # The inferred-schema warning is the page's and the CLI's to show.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = algorithm.make(epsilon, random_state=random_state, noise_seed=noise_seed, **params)
        return model.fit_encoded(members, schema)


def membership_attack(
    records: EncodedData,
    schema: Schema,
    *,
    algorithm: str = defaults.ALGORITHM,
    epsilon: float = defaults.EPSILON,
    params: dict | None = None,
    random_state: int = defaults.SEED,
    noise_seed: int | None = None,
    reference: bool = True,
    confidence: float = 0.95,
    progress: Progress | None = None,
) -> AttackResult:
    """Attack a model trained with these settings on half of ``records``.

    Privacy: the DP model is fitted with fresh secret noise (``noise_seed``: replayable,
    NOT private) and is never released; every number returned is computed from the
    records and is a NOT private diagnostic (see the module docstring for what the
    attack can and cannot show).

    Parameters
    ----------
    records : EncodedData
        The user's encoded records (with labels).
    schema : Schema
        The public schema.
    algorithm : str
        Registry id (default: the app's default algorithm).
    epsilon : float
        The ε the DP model is asked for.
    params : dict or None
        Parameters over the registry defaults, as on the Train page.
    random_state : int
        Public seed of the member split, the halves and the tree structure.
    noise_seed : int or None
        Replayable noise for tests (NOT private) for the DP model and the reference;
        None: fresh secret noise.
    reference : bool
        Also attack the non-private reference (same settings, noise off).
    confidence : float
        Confidence of the held-out advantage's interval.
    progress : callable or None
        ``progress(fraction, message)``.

    Returns
    -------
    AttackResult
    """
    start = time.perf_counter()
    say = progress or (lambda _f, _m: None)
    algo = get_algorithm(algorithm)
    epsilon = valid_epsilon(epsilon)
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")
    if records.y is None or records.n_records < MIN_RECORDS:
        raise ValueError(
            f"the attack needs at least {MIN_RECORDS} labelled records, got "
            f"{0 if records.y is None else records.n_records}"
        )
    values = {**algo.defaults(), **(params or {})}
    algo.make(epsilon, **values)  # unknown or invalid parameters: a ValueError now
    member, measure = membership_split(records.n_records, random_state)
    _check_split(member, measure)
    members = subset(records, np.flatnonzero(member))
    models = [("DP model", epsilon, True)]
    if reference:
        models.append(("non-private reference", REFERENCE_EPSILON, False))
    curves, ledger_epsilon, claim_note = [], None, ""
    for i, (name, eps, private) in enumerate(models):
        share = 1.0 / len(models)
        say(i * share, f"{name}: fitting on {int(member.sum()):,} member records")
        # Without noise the greedy trees' fallback weighs leaves by a variance of 0: its
        # 0/0 falls back on the leaf's own counts (numpy's warnings are expected).
        with np.errstate(divide="ignore", invalid="ignore"):
            # The reference replays under a noise seed too, so that a replayed attack
            # reproduces both curves; it claims no privacy either way.
            model = _fit(algo, eps, values, random_state, noise_seed, members, schema)
        if private:
            ledger_epsilon = model.ledger_.epsilon_total
            if ledger_epsilon is None and algo.private(values):
                # Replayable noise or a schema inferred from the records voids the
                # release's guarantee (the ledger proves no ε), but the noise has the
                # same law: the bound tested is the configuration's ε.
                ledger_epsilon = epsilon
                claim_note = (
                    "the ledger proves no ε (replayable noise or a schema inferred from "
                    f"the records); the bound is that of the configuration's ε = {epsilon:g}"
                )
        say((i + 0.6) * share, f"{name}: scoring every record from the released model")
        with np.errstate(divide="ignore", invalid="ignore"):
            scores, reads = attack_scores(model, records)
        if not np.isfinite(scores).all():
            raise ValueError(f"the {name} gave a record no finite score; please report this")
        curves.append(
            evaluate_scores(
                scores,
                member,
                measure,
                model=name,
                private=private and ledger_epsilon is not None,
                reads=reads,
                confidence=float(confidence),
            )
        )
    say(1.0, "done")
    bound = None if ledger_epsilon is None else advantage_bound(ledger_epsilon)
    return AttackResult(
        algorithm=algo.id,
        epsilon=epsilon,
        params=values,
        ledger_epsilon=ledger_epsilon,
        bound=bound,
        confidence=float(confidence),
        n_records=records.n_records,
        n_members=int(member.sum()),
        random_state=int(random_state),
        replayable_noise=noise_seed is not None,
        dp=curves[0],
        reference=curves[1] if reference else None,
        seconds=time.perf_counter() - start,
        claim_note=claim_note,
    )
