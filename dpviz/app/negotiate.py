"""What the Negotiate page does: read a finished sweep (``dpviz.app.curves.SweepRun``),
pick one DP curve, find the smallest ε meeting an acceptable loss, compare candidate
ε values, and write the decision report.

No streamlit here, so that everything is unit-tested. The utility numbers come from
held-out folds of the raw data: NOT private (for the people deciding). The risk
numbers are formulas of ε (``dpviz.privacy.risk``) and hold only when the configuration's
ledger (``dpviz.models.forest.estimator.build_ledger``) says the model is ε-DP, and per
record: they assume one record per person, and a person with k records gets k·ε. Membership (in or
out of the data) moves an attacker's odds by at most e^ε; an attribute of a person
known to be in the data (a substitution, two neighbour steps) by up to e^(2ε).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.app import peers as app_peers
from dpviz.app.curves import SweepRun, SweepSettings
from dpviz.app.report import WITHHELD, decision_report
from dpviz.evaluation import defaults
from dpviz.evaluation.sweep import SERIES_DP, SERIES_NONPRIVATE
from dpviz.figures.common import ALL_METRIC_NAMES, majority_mean, mechanism_label
from dpviz.figures.curves import add_majority_line
from dpviz.figures.teach import epsilon_choice_figure
from dpviz.models.forest.estimator import AUTO_TREES
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import (
    METRIC_NAMES,
    RISK_COLUMNS,
    EpsilonChoice,
    candidate_table,
    risk_sentences,
    smallest_epsilon,
)
from dpviz.privacy.schema import Schema

# The sweep this page runs when the session has none: the default forest's mechanism and
# depth rule, and round ε values from 0.05 to 10 (6 per factor of 10), so that a
# negotiation starts within seconds. 10 trees (Jagannathan et al.'s default), not the
# paper's 100: with disjoint data each tree sees 1/τ of the records, and on a few
# thousand rows 100 trees leave too few per leaf (measured on the demo with the paper's
# mechanism: best lower band 81.6% vs the non-private forest's 84.7%).
_FOREST = defaults.forest_parameters()
# The forest the Train page releases by default (the same tree count rule, depth rule,
# mechanism and data split), so that the ε agreed on here is for that model.
DEFAULT_SWEEP = SweepSettings(
    eps_low=0.05,
    eps_high=defaults.SWEEP_EPSILON_HIGH,
    per_decade=defaults.SWEEP_PER_DECADE,
    mechanisms=(_FOREST["mechanism"],),
    n_estimators=(_FOREST["n_estimators"],),
    depths=(_FOREST["depth"],),
    data_splits=(_FOREST["data_split"],),
    folds=defaults.SWEEP_FOLDS,
    seed=defaults.SEED,
    sklearn_reference=False,
)
TREES_NOTE = (
    "auto: the Train page's default, the tree count a declared or noisy record count "
    "gives (here each fold's size, read for your evaluation only)."
)
# The sweep dimensions that pick one curve (the summary's column names).
CURVE_KEYS = ("mechanism", "n_estimators", "depth_rule", "data_split")
MAX_CANDIDATES = 3
ALGORITHM = "fletcher_islam"
# What each curve dimension is called where the page offers a choice of it.
CURVE_LABELS = {
    "mechanism": "Mechanism",
    "n_estimators": "Trees",
    "depth_rule": "Depth rule",
    "data_split": "Data per tree",
}
# The attacker's prior beliefs (that a person is in the data) the page offers.
PRIORS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9)


def sweep_settings(n_estimators: int | str, folds: int) -> SweepSettings:
    """The page's own small sweep: ``DEFAULT_SWEEP`` at the tree count and folds chosen."""
    trees = n_estimators if n_estimators == AUTO_TREES else int(n_estimators)
    return dataclasses.replace(DEFAULT_SWEEP, n_estimators=(trees,), folds=int(folds))


def forest_summary(sweep: SweepRun) -> pd.DataFrame:
    """The sweep summary's rows for the Fletcher–Islam forest and its references: a sweep
    from the Curves page may hold other algorithms, whose settings are not forest choices.

    With one requested tree count of ``"auto"``, the forest's rows carry that request as
    their tree count: it resolves per ε (few trees below ε = 1, where the forest is
    sized for its signal), and its points are one curve whose twin has the size of the
    largest ε, not one curve per resolved count."""
    summary = sweep.summary
    if "algorithm" in summary:
        others = set(summary["algorithm"]) - {ALGORITHM, "sklearn"}
        summary = summary[~summary["algorithm"].isin(others)]
    if auto_trees(sweep):
        forest = summary["series"].isin((SERIES_DP, SERIES_NONPRIVATE))
        if "algorithm" in summary:
            forest &= summary["algorithm"] == ALGORITHM
        trees = summary["n_estimators"].astype(object).where(~forest, AUTO_TREES)
        summary = summary.assign(n_estimators=trees)
    return summary


def auto_trees(sweep: SweepRun) -> bool:
    """Whether the sweep's forest had one requested tree count, ``"auto"``."""
    return sweep.settings.forest and tuple(sweep.settings.n_estimators) == (AUTO_TREES,)


def curve_choices(sweep: SweepRun) -> dict[str, list]:
    """The swept values of each curve dimension, private mechanisms first."""
    summary = forest_summary(sweep)
    dp = summary[summary["series"] == SERIES_DP]
    if dp.empty:
        raise ValueError("the sweep has no DP-forest rows; run a sweep first")
    choices = {key: list(dict.fromkeys(dp[key].tolist())) for key in CURVE_KEYS}
    # A stable sort: proven mechanisms before those without a proof, else sweep order.
    choices["mechanism"].sort(key=lambda m: not MECHANISMS[m].private)
    return choices


def offered_keys(choices: Mapping[str, Sequence]) -> list[str]:
    """The curve dimensions to offer a choice of (``curve_choices``' keys): the mechanism
    always, each other one only where the sweep has several values."""
    return [k for k in CURVE_KEYS if k == "mechanism" or len(choices[k]) > 1]


def _curve_rows(sweep: SweepRun, config: dict) -> pd.DataFrame:
    """The DP rows of the chosen curve."""
    summary = forest_summary(sweep)
    dp = summary[summary["series"] == SERIES_DP]
    for key, value in config.items():
        dp = dp[dp[key].astype(str) == str(value)]
    return dp


def swept_epsilons(sweep: SweepRun, config: dict) -> list[float]:
    """The ε values of the chosen curve, ascending."""
    return sorted(float(e) for e in _curve_rows(sweep, config)["epsilon"].unique())


def metric_choices(sweep: SweepRun) -> dict[str, str]:
    """The metrics the sweep scored (``<metric>_mean`` in its summary), by name as the
    page offers them: accuracy, ROC AUC, F1 and macro F1."""
    columns = set(forest_summary(sweep).columns)
    return {m: ALL_METRIC_NAMES[m] for m in METRIC_NAMES if f"{m}_mean" in columns}


def suggest(sweep: SweepRun, metric: str, acceptable_loss: float, config: dict) -> EpsilonChoice:
    """dpviz's answer: the smallest swept ε whose lower ±1-std band is within
    ``acceptable_loss`` points of the non-private forest
    (:func:`dpviz.privacy.risk.smallest_epsilon`).
    """
    return smallest_epsilon(
        forest_summary(sweep), metric, acceptable_loss, reference=SERIES_NONPRIVATE, **config
    )


def suggestion_warning(sweep: SweepRun, choice: EpsilonChoice, config: dict) -> str | None:
    """Why a suggested ε may mean nothing, or None: the forest at that ε or its
    non-private reference predicted a single class in some fold, or the reference is no
    better than always answering the majority class (the target is then met trivially)."""
    if choice.epsilon is None:
        return None
    baseline = majority(sweep, choice.metric)
    parts = []
    rows = _curve_rows(sweep, config)
    if "one_class_share" in rows.columns:
        here = rows[np.isclose(rows["epsilon"].to_numpy(dtype=float), choice.epsilon)]
        share = float(here["one_class_share"].max()) if len(here) else 0.0
        if share > 0:
            parts.append(
                f"at ε = {choice.epsilon:g} the forest predicts a single class {_where(share)}"
            )
    reference = sweep.reference(SERIES_NONPRIVATE, config)
    if reference is not None and float(reference.get("one_class_share", 0.0) or 0.0) > 0:
        share = float(reference["one_class_share"])
        parts.append(f"the non-private forest predicts a single class {_where(share)}")
    if not parts and baseline is not None:
        if round(100 * (choice.reference_mean - baseline), 1) <= 0:
            parts.append("the non-private forest itself scores no better than the majority class")
    if not parts:
        return None
    text = f"Careful: {' and '.join(parts)}: no better than always answering the majority class"
    if baseline is not None:
        text += f" ({100 * baseline:.1f}% {METRIC_NAMES[choice.metric]} here)"
    return (
        text + ". Meeting the target then says nothing about what the model learnt: look "
        "at F1, macro F1 or ROC AUC before agreeing on an ε."
    )


@dataclass(frozen=True)
class SuggestionView:
    """How the page states dpviz's suggestion. ``state``: ``"met"`` (shown green) when
    an ε meets the target and nothing empties that of meaning; ``"hollow"`` when it is
    met only on paper (``caveat``: the model or its reference predicts a single class,
    or the reference is no better than the majority class); ``"unmet"`` when no swept ε
    meets it."""

    state: str
    text: str
    caveat: str | None = None


def suggestion_view(sweep: SweepRun, choice: EpsilonChoice, config: dict) -> SuggestionView:
    """The suggestion as the page shows it (:class:`SuggestionView`): never a green
    "meets it" beside a model that predicts a single class."""
    if choice.epsilon is None:
        return SuggestionView("unmet", choice.reason)
    caveat = suggestion_warning(sweep, choice, config)
    if caveat is None:
        return SuggestionView(
            "met", f"**Smallest ε that meets it: {choice.epsilon:g}.** {choice.reason}"
        )
    return SuggestionView(
        "hollow",
        f"**ε = {choice.epsilon:g} meets it only on paper** (see below). {choice.reason}",
        caveat,
    )


def follow_candidates(
    current: Sequence[float] | None,
    followed: object,
    epsilons: Sequence[float],
    suggestion: float | None,
) -> list[float] | None:
    """The candidate ε values to show anew, or None to keep ``current``: the default
    ones around the ``suggestion`` (:func:`default_candidates`) when ``current`` is empty
    or holds an ε the curve lacks, or when the suggestion moved since the one they last
    ``followed`` (a new metric or loss). Values the people deciding picked stay until
    the suggestion moves."""
    if current and set(current) <= set(epsilons) and followed == suggestion:
        return None
    return default_candidates(epsilons, suggestion)


def _where(share: float) -> str:
    return "in every fold" if share >= 1 else f"in {100 * share:.0f}% of the folds"


def default_candidates(epsilons: Sequence[float], suggested: float | None) -> list[float]:
    """Up to three candidates: the suggestion with its swept neighbours (or, without a
    suggestion, the three largest ε, the closest to meeting the target)."""
    values = sorted(float(e) for e in epsilons)
    if not values:
        return []
    if suggested is None:
        return values[-MAX_CANDIDATES:]
    i = min(range(len(values)), key=lambda k: abs(values[k] - suggested))
    lo = max(0, min(i - 1, len(values) - MAX_CANDIDATES))
    return values[lo : lo + MAX_CANDIDATES]


def mechanism_option(sweep: SweepRun, mechanism: str) -> str:
    """A mechanism of the sweep's forest with its badge as the sweep's ledgers state it
    (``permute_flip (NOT DP — see ledger)`` on an inferred schema)."""
    return sweep.series().get(f"fletcher_islam/{mechanism}", mechanism_label(mechanism))


NO_CHOICE = (
    "No ε is chosen: no swept ε meets the target, so dpviz pre-selects none. Move the slider "
    "to choose one deliberately (its loss is then more than you accepted), or accept a "
    "larger loss above."
)


def preselected(choice: EpsilonChoice) -> float | None:
    """The ε the decision starts at: the smallest swept ε that meets the target, or None
    (nothing pre-selected) when none does, never the largest ε by default."""
    return None if choice.epsilon is None else float(choice.epsilon)


def follow_suggestion(
    current: float | None, followed: float | None, options: Sequence, suggestion: float | None
) -> bool:
    """Whether the chosen ε (``current``) moves to dpviz's ``suggestion``: when it is not
    one of the ``options``, or when the suggestion changed since the one it last
    ``followed``. A choice the people deciding made stays until the suggestion moves."""
    return current not in options or followed != suggestion


def chosen_options(epsilons: Sequence[float]) -> list[float | None]:
    """The decision slider's options: "not chosen" (None) first, then the swept ε."""
    return [None, *sorted(float(e) for e in epsilons)]


def epsilon_option(value: float | None) -> str:
    """A decision slider option as text."""
    return "not chosen" if value is None else f"{value:g}"


def ledger_for(sweep: SweepRun, config: dict, epsilon: float) -> PrivacyLedger:
    """The ledger of a model released with this curve's settings at ``epsilon`` (the
    same one ``SweepRun.ledger_text`` describes)."""
    # "auto" trees: the point's own resolved count (the ε pins the point).
    pins = {k: v for k, v in config.items() if not (k == "n_estimators" and v == AUTO_TREES)}
    return sweep.point_ledger(str(config["mechanism"]), float(epsilon), pins)


def guarantee_note(sweep: SweepRun, config: dict) -> str | None:
    """Why no risk translation applies to this curve, or None when it is ε-DP."""
    mech = str(config["mechanism"])
    if not MECHANISMS[mech].private:
        return (
            f"{mechanism_label(mech)}: this mechanism has no proof of differential privacy, so "
            "its ε promises nothing and none of the risk translations below applies."
        )
    if sweep.schema_inferred:
        return (
            "The schema was inferred from the data, so no model of this sweep is "
            "differentially private, whatever its ε: none of the risk translations applies."
        )
    dp = _curve_rows(sweep, config)
    if "private" in dp and len(dp) and not dp["private"].astype(bool).all():
        # The sweep's own ledgers say so: candidate_table blanks the risk columns, and a
        # card must not print them as numbers.
        return (
            "The sweep marks this curve's models as NOT differentially private, whatever "
            "their ε: none of the risk translations applies."
        )
    return None


@dataclass(frozen=True)
class Candidate:
    """One candidate ε as the page shows it.

    ``utility`` and ``versus_reference`` are text from held-out folds (NOT private);
    ``numbers`` the risk translations as display text, keyed like :data:`RISK_LABELS`, and
    ``sentences`` the same in words (:func:`dpviz.privacy.risk.risk_sentences`); both are empty
    when the configuration has no guarantee. Membership numbers are about a person being
    in or out of the data, attribute numbers about what the record of a person known to
    be in it says; all are per record (k records: k·ε).
    """

    epsilon: float
    utility: str
    versus_reference: str
    private: bool
    numbers: dict[str, str] = field(default_factory=dict)
    sentences: dict[str, str] = field(default_factory=dict)
    # The trivial baseline (always the majority class) on the same folds, the change
    # from it, and a warning when the model predicted one class only in some fold.
    majority: str = ""
    versus_majority: str = ""
    one_class: str = ""
    no_better_than_majority: bool = False


# What a card shows, in this order: the key of each number and sentence (``per_record``
# and the risk columns of ``dpviz.privacy.risk.risk_table``).
RISK_LABELS = {
    "per_record": "For a person with k records",
    "odds_ratio_bound": "Odds ratio bound",
    "membership_advantage": "Best membership advantage",
    "posterior_bound": "In the data? Attacker's belief at most",
    "attribute_posterior_bound": "A known member's attribute? Attacker's belief at most",
    "balanced_error_rate": "Lowest equal error rate",
}
RISK_HELP = {
    "per_record": "The guarantee is per record: every number here assumes one record per "
    "person. A person with k records in the data (several visits, several rows) is "
    "protected only at k·ε.",
    "odds_ratio_bound": "e^ε: the most that seeing the model can multiply (or divide) an "
    "attacker's odds that a given person is in the data rather than out of it. The odds of "
    "what her record says can move more: e^(2ε).",
    "membership_advantage": "(e^ε − 1)/(e^ε + 1): how much more often the best attacker says "
    "'in' about members than about non-members (0 = coin flip).",
    "posterior_bound": "p·e^ε/(1 − p + p·e^ε): the most an attacker who believed with "
    "probability p that a person is in the data can believe it after seeing the model.",
    "attribute_posterior_bound": "p·e^(2ε)/(1 − p + p·e^(2ε)): for a person known to be in the "
    "data, the most an attacker who gave a value of her record (e.g. a diagnosis) "
    "probability p can believe it after seeing the model. Changing what a record says is "
    "removing it and adding another: two steps of ε, hence 2ε.",
    "balanced_error_rate": "1/(1 + e^ε): an attacker guessing whether people are in the data, "
    "wrong equally often both ways, is wrong at least this often (the corner of the plot "
    "below).",
}


def percent(value: float) -> str:
    """A share in percent with one decimal, more where rounding would print 100 or 0
    for a value that is neither (an attacker "100% sure" is a different statement)."""
    for digits in (1, 2, 3, 4):
        text = f"{100 * value:.{digits}f}"
        if (float(text) < 100 or value >= 1) and (float(text) > 0 or value <= 0):
            return text
    return "> 99.9999" if value > 0.5 else "< 0.0001"


def majority(sweep: SweepRun, metric: str) -> float | None:
    """The trivial baseline's ``metric`` (always answering the training majority class,
    on the sweep's folds; a fraction), or None for a sweep without it."""
    return majority_mean(forest_summary(sweep), metric)


def choice_figure(sweep: SweepRun, choice: EpsilonChoice, chosen: float | None) -> go.Figure:
    """The ε-choice curve (:func:`dpviz.figures.teach.epsilon_choice_figure`) with the
    trivial baseline drawn as a labelled line, so a curve that never rises above always
    answering the majority class shows it."""
    fig = epsilon_choice_figure(choice, chosen=chosen)
    baseline = majority(sweep, choice.metric)
    xs = choice.curve["epsilon"].to_numpy(dtype=float)
    if baseline is not None and len(xs):
        add_majority_line(fig, baseline, [xs.min(), xs.max()], METRIC_NAMES[choice.metric])
    return fig


def candidate_frame(
    sweep: SweepRun, epsilons: Sequence[float], prior: float, metric: str, config: dict
) -> pd.DataFrame:
    """:func:`dpviz.privacy.risk.candidate_table` of this curve, with the risk columns blanked
    when the configuration has no guarantee (a NOT-DP mechanism or an inferred schema).

    With a sweep that has the trivial baseline, ``majority_<metric>_mean`` (always the
    majority class, the same for every ε) and ``one_class_share`` (the share of folds in
    which the model predicted a single class at that ε; NaN when not swept) are added.
    """
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {metric!r}")
    values = sorted({float(e) for e in epsilons})
    table = candidate_table(values, prior, forest_summary(sweep), metric, **config)
    baseline = majority(sweep, metric)
    if baseline is not None:
        table.insert(3, f"majority_{metric}_mean", baseline)
        rows = _curve_rows(sweep, config)
        if "one_class_share" in rows.columns:
            swept = rows["epsilon"].to_numpy(dtype=float)
            shares = rows["one_class_share"].to_numpy(dtype=float)
            found = []
            for eps in table["epsilon"].to_numpy(dtype=float):
                hit = np.flatnonzero(np.isclose(swept, eps))
                found.append(float(shares[hit[0]]) if len(hit) else math.nan)
            table["one_class_share"] = found
    if guarantee_note(sweep, config) is not None:
        # candidate_table knows the mechanism but not the schema: blank the risk columns.
        table[list(RISK_COLUMNS)] = math.nan
        table["private"] = False
    return table


def compare(
    sweep: SweepRun,
    candidates: Sequence[float],
    prior: float,
    metric: str,
    config: dict,
) -> list[Candidate]:
    """The candidates side by side, one :class:`Candidate` per ε, ascending.

    Parameters
    ----------
    sweep : SweepRun
    candidates : list of float
        1 to ``MAX_CANDIDATES`` total ε values (unswept ones show "not swept").
    prior : float
        The attacker's prior belief, in [0, 1], that a person is in the data (for the
        membership bound) and that her record holds a given value (for the attribute
        bound of a person known to be in the data).
    metric : {"accuracy", "auc", "f1", "macro_f1"}
    config : dict
        The curve (see :func:`curve_choices`).

    Returns
    -------
    list of Candidate

    Raises
    ------
    ValueError
        Too many or no candidates, a bad metric or prior, or a curve the sweep lacks.
    """
    if not 1 <= len(set(candidates)) <= MAX_CANDIDATES:
        raise ValueError(f"choose 1 to {MAX_CANDIDATES} candidate ε values to compare")
    table = candidate_frame(sweep, candidates, prior, metric, config)
    private = guarantee_note(sweep, config) is None
    reference = sweep.reference(SERIES_NONPRIVATE, config)
    ref_mean = None if reference is None else float(reference[f"{metric}_mean"])
    baseline = majority(sweep, metric)
    cards = []
    for row in table.itertuples(index=False):
        mean = getattr(row, f"{metric}_mean")
        std = getattr(row, f"{metric}_std")
        std = 0.0 if pd.isna(std) else std
        trivial, versus_trivial, one_class, worse = "", "", "", False
        if pd.isna(mean):
            utility, versus = "not swept", "—"
        else:
            utility = f"{100 * mean:.1f}% ± {100 * std:.1f}"
            versus = "—" if ref_mean is None else f"{100 * (mean - ref_mean):+.1f} pts"
            if baseline is not None:
                trivial = f"{100 * baseline:.1f}%"
                change = 100 * (mean - baseline)
                versus_trivial = f"{0.0 if round(change, 1) == 0 else change:+.1f} pts"
                worse = round(change, 1) <= 0
            share = getattr(row, "one_class_share", math.nan)
            if not pd.isna(share) and share > 0:
                one_class = (
                    f"At ε = {row.epsilon:g} the model predicts a single class {_where(share)}: "
                    "no better than always answering the majority class."
                )
        numbers, sentences = {}, {}
        if private:
            numbers = {
                "per_record": f"ε = k × {row.epsilon:g}",
                "odds_ratio_bound": f"×{row.odds_ratio_bound:,.3g}",
                "membership_advantage": f"{percent(row.membership_advantage)} points",
                "posterior_bound": f"{percent(row.posterior_bound)}%",
                "attribute_posterior_bound": f"{percent(row.attribute_posterior_bound)}%",
                "balanced_error_rate": f"{percent(row.balanced_error_rate)}%",
            }
            sentences = risk_sentences(float(row.epsilon), prior)
        cards.append(
            Candidate(
                float(row.epsilon),
                utility,
                versus,
                private,
                numbers,
                sentences,
                majority=trivial,
                versus_majority=versus_trivial,
                one_class=one_class,
                no_better_than_majority=worse or bool(one_class),
            )
        )
    return cards


def parameters(sweep: SweepRun, config: dict, metric: str, acceptable_loss: float) -> dict:
    """The configuration as the report lists it."""
    s = sweep.settings
    return {
        "mechanism": str(config["mechanism"]),
        "n_estimators": config["n_estimators"]
        if config["n_estimators"] == AUTO_TREES
        else int(config["n_estimators"]),
        "depth_rule": config["depth_rule"],
        "data_split": str(config["data_split"]),
        "ε values swept": swept_epsilons(sweep, config),
        "cross-validation folds": s.folds,
        "metric": METRIC_NAMES[metric],
        "acceptable loss (points)": float(acceptable_loss),
    }


def shareable_name(name: str, disclose_record_count: bool) -> str:
    """The dataset's name without any "N rows"/"N records" in it unless the count may
    be disclosed (demo names carry their size; it may differ from the usable count, so
    the exact-count redaction of the report alone would miss it)."""
    if disclose_record_count:
        return name
    return _SIZE_IN_NAME.sub(f"{WITHHELD} \\1", name)


_SIZE_IN_NAME = re.compile(r"(?<![\w.])\d[\d,\u202f ]*\s*(rows|records)\b")


def report_html(
    sweep: SweepRun,
    schema: Schema,
    *,
    config: dict,
    choice: EpsilonChoice,
    chosen: float | None,
    candidates: Sequence[float],
    prior: float,
    rationale: str = "",
    approvers: str = "",
    disclose_record_count: bool = False,
    releases: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The decision report (:func:`dpviz.app.report.decision_report`) of this negotiation:
    a self-contained HTML string that opens without network access.

    Parameters
    ----------
    sweep : SweepRun
        The sweep the negotiation read.
    schema : Schema
        The dataset's schema (shared as public; its domains are withheld when inferred).
    config : dict
        The curve: ``mechanism``, ``n_estimators``, ``depth_rule``, ``data_split``.
    choice : EpsilonChoice
        dpviz's suggestion (:func:`suggest`); its reason is quoted and its curve drawn.
    chosen : float or None
        The agreed total ε (None: no decision yet).
    candidates : list of float
        The ε values compared; the chosen ε is added when missing.
    prior : float
        The attacker's prior of the posterior bounds (membership, and the attribute of a
        person known to be in the data).
    rationale, approvers : str
        Free text from the people deciding.
    disclose_record_count : bool, default=False
        Print the number of records (and keep it in the dataset's name) only when True.
    releases : list of mapping, optional
        The session's releases, this report last (the ε odometer's rows).

    Returns
    -------
    str
        A complete HTML document.

    Notes
    -----
    The utility numbers are from held-out folds of the raw data (NOT private) and are
    labelled so in the report, beside the trivial baseline (always the majority class);
    the ledger is that of the chosen ε.
    """
    listed = [*candidates, *([chosen] if chosen is not None else [])]
    table = candidate_frame(sweep, listed, prior, choice.metric, config) if listed else ()
    ledger = ledger_for(sweep, config, chosen) if chosen is not None else None
    return decision_report(
        schema=schema,
        algorithm=ALGORITHM,
        parameters=parameters(sweep, config, choice.metric, choice.acceptable_loss),
        seeds={
            "public seed (folds and tree structure; the noise is secret and fresh)": (
                sweep.settings.seed
            )
        },
        chosen_epsilon=chosen,
        rationale=rationale,
        approvers=approvers,
        candidates=table,
        prior=prior,
        choice=choice,
        ledger=ledger,
        n_records=sweep.n_records,
        disclose_record_count=disclose_record_count,
        dataset_name=shareable_name(sweep.dataset, disclose_record_count),
        majority=majority(sweep, choice.metric),
        # The other DP libraries at the candidates, when the sweep ran them (NOT private).
        peers=app_peers.table(sweep, sorted(set(listed)), choice.metric),
        releases=releases,
    )
