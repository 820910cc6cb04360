"""The Audit page's logic (no streamlit): a membership attack on the Train page's
configuration and the whole-release audit of it, and the words a privacy officer needs.

Privacy role: every number here is a diagnostic for the data owner. The attack reads the
records (NOT private: shown on screen, never written into a released file, report or
ledger). The whole-release audit reads no records: it fits the configuration on a public
pair built from the schema. Neither spends ε of the user's data: the attack's models are
never released, and the audit's data are not the user's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from dpviz.app.support import PreparedData
from dpviz.evaluation import defaults
from dpviz.evaluation.attack import AttackResult, membership_attack
from dpviz.evaluation.audit_pair import DEFAULT_RUNS, audit_configuration
from dpviz.evaluation.audit_variants import RANDOM_MIN_EPSILON, VARIANT_RUNS
from dpviz.evaluation.release_audit import ReleaseAuditResult, audit_release
from dpviz.models.boosting.presets import CAPACITY_EPSILON
from dpviz.models.forest.floor import CHECK_FROM
from dpviz.models.registry import get_algorithm

Progress = Callable[[float, str], None]

NOT_PRIVATE = (
    "NOT private: the attack's numbers are computed from your records. They are a "
    "diagnostic for you, the data owner; they are not a release and are never exported."
)

WHAT_IT_SHOWS = """\
**What the attack does.** Your records are split by the public seed into *members* (about
half) and *non-members*. A model with your Train settings is fitted on the members only,
with fresh secret noise, and an attacker who sees only that released model scores every
record: for a forest, the released count of the record's class (or its released label) at
the leaf it reaches in the tree(s) that would have counted it; for the other algorithms,
the model's predicted probability of the record's class. A high score says "member".

**What ε promises.** If the release is ε-DP, no test can call members members much more
often than it calls non-members members: TPR ≤ e^ε·FPR and 1 − FPR ≤ e^ε·(1 − TPR) (the
shaded region), so the advantage TPR − FPR is at most (e^ε − 1)/(e^ε + 1).

**What it can show.** An attack whose held-out advantage lies, with its whole confidence
interval, above that bound *refutes* the claimed ε. The non-private reference (the same
settings with the noise off) shows what the attack finds when nothing protects the records.

**What it cannot show.** An attack that stays within the bound proves nothing: it is one
attack, one split, one release. A stronger attacker, an unusual record or many releases
together may show more. An empirical bound can only refute a privacy claim, never
prove it; the proof is the mechanism's analysis and the ledger.
"""

AUDIT_TEXT = """\
**The whole-release audit** fits your configuration hundreds of times on two neighbouring
datasets D and D′ = D ∪ {x}, built from your *schema* only (no record of yours): 40
records taking the last value of every discrete feature and the lower four fifths of every
range, and x taking the first values and the top of every range, so that x lands alone in
its leaf. Each fit gets fresh secret noise. From how often a few events happen on D and D′
it derives a Clopper–Pearson lower bound on the privacy loss between them. A bound above
the claimed ε refutes the claim (false alarm ≤ 1 − confidence); a bound below it does not
prove the claim. With only continuous features x is harder to isolate, and at the default
settings part of ε goes on releases the audit cannot read: the audit then has less power.
"""


@dataclass(frozen=True)
class AuditConfig:
    """What is attacked and audited: an algorithm, ε, its parameters and the seed."""

    algorithm: str
    epsilon: float
    params: dict[str, Any] = field(default_factory=dict)
    seed: int = defaults.SEED
    source: str = "the defaults"

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k} = {v}" for k, v in self.params.items())
        return (
            f"{get_algorithm(self.algorithm).name} · ε = {self.epsilon:g} · {shown} · public "
            f"seed {self.seed} (from {self.source})"
        )

    def with_epsilon(self, epsilon: float) -> AuditConfig:
        return AuditConfig(self.algorithm, float(epsilon), self.params, self.seed, self.source)


def configuration(data: PreparedData, run: Any | None) -> AuditConfig:
    """The Train page's last run on this dataset, else the defaults users get."""
    if run is not None and getattr(run, "fingerprint", None) == data.fingerprint:
        s = run.settings
        return AuditConfig(
            s.algorithm, float(s.epsilon), dict(s.values), int(s.seed), "the Train page's run"
        )
    return AuditConfig(defaults.ALGORITHM, defaults.EPSILON, defaults.parameters(), defaults.SEED)


def run_attack(
    data: PreparedData, config: AuditConfig, progress: Progress | None = None
) -> AttackResult:
    """The membership attack on ``config`` over the data's records (fresh secret noise;
    NOT private). Raises ``ValueError`` with a message for the user."""
    encoded = data.training_records()
    return membership_attack(
        encoded,
        data.schema,
        algorithm=config.algorithm,
        epsilon=config.epsilon,
        params=config.params,
        random_state=config.seed,
        progress=progress,
    )


# DPBoost's releases the schema pair cannot make (too few records to grow, no macro_f1
# threshold): each is audited on its own public pair (dpviz.evaluation.audit_variants).
VARIANT_SUBJECTS = {
    "grown": (
        "DPBoost's grown model: a public pair of 6,400 records, ε ≥ 5, reads the prior, the "
        "bin edges' histogram and every tree's leaf"
    ),
    "macro_f1": (
        "DPBoost's macro_f1 threshold: a public pair of 600 records, reads the score "
        "histogram of the small model"
    ),
    "random": (
        "DPBoost's random-split mode: a public pair of 3,000 records of three classes, "
        "reads the prior, the bin edges' histogram and every tree's leaf sums"
    ),
}
# The default forest's score histograms (from ε = 1): on DPBoost's macro_f1 pair.
FOREST_SUBJECTS = {
    "macro_f1": (
        "The forest's macro_f1 threshold: a public pair of 600 records, ε ≥ 1, reads the "
        "noisy histogram of the out-of-bag scores"
    ),
    "accuracy": (
        "The forest's accuracy cut: a public pair of 8,000 records, ε ≥ 1, reads the noisy "
        "histogram of the out-of-bag scores per class"
    ),
}
SCHEMA_SUBJECT = "This configuration, on a pair built from your schema"
# What the audit fits when a variant is chosen (AUDIT_TEXT describes the schema pair).
VARIANT_TEXT = {
    "grown": """\
**The whole-release audit of DPBoost's grown model** fits it hundreds of times, with the
registry defaults at ε of at least 5, on two neighbouring datasets D and D′ = D ∪ {x} that
are public and fixed (no record of yours, not your schema): 6,400 records of one class
spread over a size feature, and x of the other class. The prior then counts at least 6,000
records, so the model grows: bin edges from a noisy histogram and two ensembles of ten
trees. Each fit gets fresh secret noise. The audit reads the prior's count of x's class,
the histogram cell x falls in and the leaf x reaches in every tree, and gives one
Clopper–Pearson lower bound per booked entry: a bound above an entry's claimed loss
refutes it (false alarm ≤ 1 − confidence); a bound below it does not prove the claim.
""",
    "macro_f1": """\
**The whole-release audit of DPBoost's macro_f1 threshold** fits DPBoost with the
registry defaults and ``objective="macro_f1"`` hundreds of times at your ε on two
neighbouring datasets D and D′ = D ∪ {x} that are public and fixed (no record of yours,
not your schema): 600 records with a size feature, and x. With so few records the model is
one small tree, and the threshold comes from a noisy histogram of the training records'
scores per class. Each fit gets fresh secret noise. The audit reads that histogram's count
in x's cell and gives a Clopper–Pearson lower bound on its privacy loss: a bound above the
claimed loss refutes it (false alarm ≤ 1 − confidence); a bound below it does not prove
the claim.
""",
    "random": """\
**The whole-release audit of DPBoost's random-split mode** fits it hundreds of times, with
the registry defaults at your ε (at least 0.3), on two neighbouring
datasets D and D′ = D ∪ {x} that are public and fixed (no record of yours, not your
schema): 3,000 records of one of three classes spread over a size feature, and x of
another class. The model then draws its trees' splits without reading the records and
every tree reads every record but a held-out tenth. Each fit gets fresh secret noise. The
audit reads the prior's count of x's class, the histogram cell x falls in and the noisy
gradient sums of the leaf x reaches in every tree, and gives one Clopper–Pearson lower
bound per booked entry: a bound above an entry's claimed loss refutes it (false alarm ≤
1 − confidence); a bound below it does not prove the claim. Its trees each spend a small
share of ε, so a few hundred fits see little of their loss.
""",
}


FOREST_TEXT = """\
**The whole-release audit of the forest's macro_f1 threshold** fits the default forest with
the registry defaults and ``objective="macro_f1"`` hundreds of times at your ε (at least 1,
where the threshold reads a booked histogram) on two neighbouring datasets D and D′ = D ∪
{x} that are public and fixed (no record of yours, not your schema): 600 records with a size
feature, and x. Each release books a noisy histogram of its records' out-of-bag scores, each
record scored by every tree but its own. Each fit gets fresh secret noise. The audit reads
that histogram's count in the cell of x's score and gives a Clopper–Pearson lower bound on
its privacy loss: a bound above the claimed loss refutes it (false alarm ≤ 1 −
confidence); a bound below it does not prove the claim.
"""
FOREST_ACCURACY_TEXT = """\
**The whole-release audit of the forest's accuracy cut** fits the default forest with the
registry defaults (its default objective, accuracy) hundreds of times at your ε (at least
1, where the cut reads a booked histogram) on two neighbouring datasets D and D′ = D ∪ {x}
that are public and fixed (no record of yours, not your schema): 8,000 records with a size
feature (enough for the histogram to be booked from ε = 1), and x. Each release books a
noisy histogram of its records' out-of-bag scores, one row per class, each record scored
by every tree but its own. Each fit gets fresh secret noise. The audit reads the count of
x's class in the cell of x's score and gives a Clopper–Pearson lower bound on its privacy
loss: a bound above the claimed loss refutes it (false alarm ≤ 1 − confidence); a bound
below it does not prove the claim.
"""


def audit_text(variant: str | None = None, algorithm: str = "dpboost") -> str:
    """What the whole-release audit fits and reads: :data:`AUDIT_TEXT` for the
    configuration on the schema pair (``None``), else the variant's own pair (the
    forest's variants: :data:`FOREST_TEXT`, :data:`FOREST_ACCURACY_TEXT`)."""
    if variant is None:
        return AUDIT_TEXT
    if algorithm == "fletcher_islam":
        return FOREST_ACCURACY_TEXT if variant == "accuracy" else FOREST_TEXT
    return VARIANT_TEXT[variant]


def audit_subjects(config: AuditConfig) -> dict[str | None, str]:
    """What the whole-release audit can fit for ``config``: ``None`` (the configuration on
    the schema pair) and, for DPBoost and the default forest, their variants (label of
    each)."""
    subjects: dict[str | None, str] = {None: SCHEMA_SUBJECT}
    if config.algorithm == "dpboost":
        subjects.update(VARIANT_SUBJECTS)
    if config.algorithm == "fletcher_islam":
        subjects.update(FOREST_SUBJECTS)
    return subjects


def default_runs(config: AuditConfig, variant: str | None = None) -> int:
    """Fits per dataset the audit of ``config`` (or its ``variant``) starts from."""
    return VARIANT_RUNS[variant] if variant is not None else DEFAULT_RUNS


def variant_epsilon(config: AuditConfig, variant: str) -> float:
    """The ε a variant is audited at: the configuration's, raised to the ε the grown model
    needs (:data:`~dpviz.models.boosting.presets.CAPACITY_EPSILON`) for ``"grown"``,
    at least :data:`~dpviz.evaluation.audit_variants.RANDOM_MIN_EPSILON` for ``"random"``
    (its pair of 3,000 records is below the grown model's 6,000 at every ε), at least 1 for
    the forest's ``"macro_f1"`` and ``"accuracy"`` (where its histograms are booked)."""
    if variant == "grown":
        return max(float(config.epsilon), CAPACITY_EPSILON)
    if variant == "random":  # from 0.3 the pair's trees get the mode's budget
        return max(float(config.epsilon), RANDOM_MIN_EPSILON)
    if config.algorithm == "fletcher_islam":  # the histogram is booked from ε = 1
        return max(float(config.epsilon), CHECK_FROM)
    return float(config.epsilon)


def run_release_audit(
    data: PreparedData,
    config: AuditConfig,
    n_runs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    variant: str | None = None,
) -> ReleaseAuditResult:
    """The whole-release audit of ``config`` on the pair built from the data's schema, or
    of DPBoost's ``variant`` on its own public pair with the registry defaults (its
    objective set as the variant needs) at :func:`variant_epsilon`. Reads no records."""
    n_runs = default_runs(config, variant) if n_runs is None else int(n_runs)
    if variant is not None:
        if variant not in audit_subjects(config):
            raise ValueError(
                f"{config.algorithm} has no {variant!r} audit: choose DPBoost (or, for "
                "macro_f1 or accuracy, the default forest)"
            )
        return audit_release(
            config.algorithm,
            epsilon=variant_epsilon(config, variant),
            n_runs=n_runs,
            random_state=config.seed,
            progress=progress,
            cancel=cancel,
            variant=variant,
        )
    return audit_configuration(
        data.schema,
        config.algorithm,
        epsilon=config.epsilon,
        params=config.params,
        n_runs=n_runs,
        random_state=config.seed,
        progress=progress,
        cancel=cancel,
    )


# --- what the page and the CLI print -------------------------------------------------------


def attack_table(result: AttackResult) -> pd.DataFrame:
    """One row per attacked model: AUC, advantages, the held-out interval, the bound."""
    rows = []
    for curve in (result.dp, result.reference):
        if curve is None:
            continue
        rows.append(
            {
                "model": curve.model,
                "AUC": round(curve.auc, 3),
                "advantage (best threshold)": round(curve.advantage, 3),
                "held-out advantage": round(curve.heldout_advantage, 3),
                f"{result.confidence:.0%} interval": (
                    f"[{curve.ci_low:.3f}, {curve.ci_high:.3f}]"
                ),
                "ε-DP bound": "—" if result.bound is None else round(result.bound, 3),
            }
        )
    return pd.DataFrame(rows)


def attack_verdict(result: AttackResult) -> tuple[str, str]:
    """(level, sentence): "error" when the attack refutes ε, "ok" when it stays within
    the bound, "warning" when there is no ε to check."""
    dp = result.dp
    if result.bound is None:
        return "warning", (
            "This configuration proves no ε (its ledger claims none): there is no bound to "
            "test. The attack shows how much a member stands out."
        )
    head = (
        f"Held-out advantage {dp.heldout_advantage:.3f}, {result.confidence:.0%} interval "
        f"[{dp.ci_low:.3f}, {dp.ci_high:.3f}], against the bound {result.bound:.3f} that "
        f"ε = {result.ledger_epsilon:g} allows."
    )
    if result.claim_note:
        head += f" Note: {result.claim_note}."
    ref = result.reference
    if ref is not None and ref.ci_low <= 0:
        # Without power on the reference, "within the bound" says little about ε.
        head += (
            " Even with the noise off the attack finds no members here: at these settings "
            "the trees hold many records per leaf, so this attack has little power."
        )
    if result.refuted:
        return "error", head + " The whole interval lies above the bound: the attack REFUTES "
        "the claimed ε on your data."
    return "ok", head + (
        " Within the bound: this attack does not refute the claim, which is all an attack "
        "can say; it does not prove it."
    )


def audit_verdict(result: ReleaseAuditResult, asked: int | None = None) -> tuple[str, str]:
    """(level, sentence) for the whole-release audit.

    A stopped audit (``result.stopped``) says first how many fits per dataset its bound is
    from (and of how many ``asked``, when given): a Clopper–Pearson bound over fewer fits
    is still a valid lower bound on ε (same confidence), only weaker.
    """
    n = result.n_runs
    fits = f"{n:,} fit{'' if n == 1 else 's'}"
    went = stopped = ""
    if result.stopped:
        of = f" (of {asked:,} asked)" if asked is not None else ""
        made = "that fit" if n == 1 else f"those {n:,} fits"
        head = f"Stopped after {fits} per dataset{of}"
        went = head + ". "
        stopped = (
            f"{head}: the bound is from {made} only. It is "
            "still a valid lower bound, at the same confidence, but weaker: fewer fits give "
            "less power to refute the claim. "
        )
    if result.consistent is None:
        # No claim, so no bound to qualify: say only how far it went.
        return "warning", went + "This configuration proves no ε: there is no claim to check."
    line = (
        f"Lower bound {result.lower_bound:.3f} on ε (confidence {result.confidence:g}, "
        f"{fits} on each dataset) against the claimed ε = "
        f"{result.ledger_epsilon:g}; what the audit reads can show at most "
        f"{result.claimed_pair_loss:.3f}."
    )
    refuted = result.refuted_parts
    if refuted:
        return "error", stopped + line + (
            f" REFUTED: {', '.join(refuted)} leak{'s' if len(refuted) == 1 else ''} more "
            "than the claimed noise law allows."
        )
    if result.consistent:
        more = " Run it to the end for a sharper bound." if result.stopped else ""
        return "ok", stopped + line + " Not refuted (which does not prove the claim)." + more
    return "error", stopped + line + " REFUTED: the release leaks more than its ledger says."


def audit_parts_table(result: ReleaseAuditResult) -> pd.DataFrame:
    """A variant's bound per booked entry it reads, against that entry's claimed loss
    (empty for the configuration audit, which bounds the whole release only)."""
    return pd.DataFrame(
        [
            {
                "booked entry": part.name,
                "claimed loss": round(part.claimed_loss, 3),
                "lower bound": round(part.lower_bound, 3),
                "best event": part.event,
                "verdict": "REFUTED" if part.refuted else "not refuted",
            }
            for part in result.parts
        ],
        columns=["booked entry", "claimed loss", "lower bound", "best event", "verdict"],
    )


def summary(result: AttackResult, audit: ReleaseAuditResult | None = None) -> dict:
    """The numbers the page shows and ``dpviz attack`` prints (JSON-ready)."""
    out = result.to_dict()
    for curve in ("dp", "reference"):
        if out[curve] is not None:
            out[curve].pop("roc", None)
    out["verdict"] = attack_verdict(result)[1]
    if audit is not None:
        found = audit.to_dict()
        found.pop("events", None)
        found["verdict"] = audit_verdict(audit)[1]
        out["release_audit"] = found
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()
    }
