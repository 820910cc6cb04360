"""Choosing ε from a sweep: the smallest swept ε within an acceptable loss of the
non-private reference, and candidate ε values side by side with their risk translations.

The scores come from a sweep's held-out folds: NOT private, for the data owner and the
privacy officer. The risk columns are formulas of ε (public) and are blanked for a
configuration whose mechanism has no proof of ε-DP.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpviz.privacy.risk.formulas import RISK_COLUMNS, risk_table

SERIES_DP = "dp_forest"
REFERENCE_SERIES = ("nonprivate_forest", "sklearn_random_forest")
# macro F1: the mean of every class's F1 (dpviz.evaluation.metrics.score), so that a rare
# class counts as much as a common one.
METRIC_NAMES = {"accuracy": "accuracy", "auc": "ROC AUC", "f1": "F1", "macro_f1": "macro F1"}
# Columns that pick one DP curve out of a sweep summary.
CONFIG_KEYS = ("algorithm", "mechanism", "n_estimators", "depth_rule", "data_split")
# A DP row's mean minus one std is compared with the target at this slack, so that a
# value printed as exactly the target (e.g. 0.95 - 0.02 in floating point) meets it.
_SLACK = 1e-12


# --- choosing ε from a sweep -------------------------------------------------------------


@dataclass(frozen=True)
class EpsilonChoice:
    """The answer of :func:`smallest_epsilon`: an ε, or None and why.

    Attributes
    ----------
    epsilon : float or None
        Smallest swept ε whose lower band (mean − 1 std) meets the target.
    reason : str
        One or two plain sentences: the answer and how it was reached.
    metric : str
        ``"accuracy"``, ``"auc"``, ``"f1"`` or ``"macro_f1"``.
    acceptable_loss : float
        In points (percentage points of the metric).
    reference_mean : float
        Mean of the non-private reference, as a fraction.
    target : float
        ``reference_mean − acceptable_loss / 100``.
    curve : DataFrame
        The DP curve: ``epsilon``, ``mean``, ``std``, ``lower``, ``upper``, ``meets``.
    config : dict
        The sweep configuration of the curve (mechanism, trees, depth rule, data split).
    reference : str
        Sweep series used as the reference.
    private : bool
        Whether the curve's mechanism is proven DP (the risk translations need it).
    """

    epsilon: float | None
    reason: str
    metric: str
    acceptable_loss: float
    reference_mean: float
    target: float
    curve: pd.DataFrame = field(repr=False)
    config: dict = field(default_factory=dict)
    reference: str = "nonprivate_forest"
    private: bool = True


def _pick(summary: pd.DataFrame, rows: pd.Series, filters: dict) -> pd.DataFrame:
    for key, wanted in filters.items():
        if wanted is None or key not in summary.columns:
            continue
        column = summary[key]
        rows &= column.astype(str) == str(wanted)
    return summary[rows]


def _options(frame: pd.DataFrame) -> str:
    parts = []
    for key in CONFIG_KEYS:
        if key in frame.columns and frame[key].nunique() > 1:
            values = ", ".join(str(v) for v in pd.unique(frame[key]))
            parts.append(f"{key} ({values})")
    return "; ".join(parts)


def select_curve(
    summary: pd.DataFrame,
    *,
    algorithm: str | None = None,
    mechanism: str | None = None,
    n_estimators: int | None = None,
    depth_rule: str | int | None = None,
    data_split: str | None = None,
) -> pd.DataFrame:
    """The DP rows of one configuration of a sweep summary, sorted by ε.

    Raises ValueError when the summary is empty, has no DP rows, or holds several
    configurations and the filters do not pick one (the message lists the choices).
    """
    if summary is None or len(summary) == 0:
        raise ValueError("the sweep is empty: run a sweep over several ε values first")
    missing = {"series", "epsilon"} - set(summary.columns)
    if missing:
        raise ValueError(
            f"this is not a sweep summary (no {', '.join(sorted(missing))} column); pass "
            "SweepResult.summary"
        )
    filters = {
        "algorithm": algorithm,
        "mechanism": mechanism,
        "n_estimators": n_estimators,
        "depth_rule": depth_rule,
        "data_split": data_split,
    }
    dp_all = summary[summary["series"] == SERIES_DP]
    if dp_all.empty:
        raise ValueError("the sweep has no DP-forest rows; run it with at least one ε")
    dp = _pick(summary, summary["series"] == SERIES_DP, filters)
    if dp.empty:
        raise ValueError(
            "no DP curve matches "
            + ", ".join(f"{k}={v}" for k, v in filters.items() if v is not None)
            + f"; the sweep has: {_options(dp_all) or 'one configuration'}"
        )
    keys = [k for k in CONFIG_KEYS if k in dp.columns]
    if len(dp[keys].drop_duplicates()) > 1:
        raise ValueError(
            "the sweep holds several configurations; choose one of each: " + _options(dp)
        )
    return dp.sort_values("epsilon").reset_index(drop=True)


def _reference_row(summary: pd.DataFrame, dp: pd.DataFrame, reference: str) -> pd.Series:
    if reference not in REFERENCE_SERIES:
        raise ValueError(
            f"reference must be one of {', '.join(REFERENCE_SERIES)}, got {reference!r}"
        )
    rows = summary[summary["series"] == reference]
    if reference == "nonprivate_forest":
        # The non-private version of the same algorithm, trees and depth rule (its data
        # split is always "shared": every tree sees all data, as in the paper).
        for key in ("algorithm", "depth_rule"):
            if key in rows.columns and key in dp.columns:
                rows = rows[rows[key].astype(str) == str(dp[key].iloc[0])]
        if "n_estimators" in rows.columns and "n_estimators" in dp.columns:
            same = rows[rows["n_estimators"].astype(str) == str(dp["n_estimators"].iloc[0])]
            # "auto" trees resolve per ε, and the one twin of that request has the size
            # of the largest swept ε: it is the reference when no count matches.
            rows = same if len(same) or len(rows) != 1 else rows
    if rows.empty:
        raise ValueError(
            f"the sweep has no {reference} reference for this configuration; run the sweep "
            "with references=True (the non-private forest with the same trees and depth)"
        )
    return rows.iloc[0]


def smallest_epsilon(
    summary: pd.DataFrame,
    metric: str = "accuracy",
    acceptable_loss: float = 2.0,
    *,
    reference: str = "nonprivate_forest",
    algorithm: str | None = None,
    mechanism: str | None = None,
    n_estimators: int | None = None,
    depth_rule: str | int | None = None,
    data_split: str | None = None,
) -> EpsilonChoice:
    """Smallest swept ε whose lower ±1-std band is within an acceptable loss of the
    non-private reference.

    With R the reference's mean score and L the acceptable loss in points, the answer
    is the smallest ε of the sweep with::

        mean(ε) − std(ε) ≥ R − L / 100.

    The *lower* band is used so that a fold-to-fold bad draw, not just the average
    model, stays within the loss. The reference's own spread is not subtracted (it is
    the bar, not a model on offer).

    Parameters
    ----------
    summary : DataFrame
        ``SweepResult.summary`` of :func:`dpviz.evaluation.sweep.run_sweep`, with references.
    metric : {"accuracy", "auc", "f1", "macro_f1"}, default="accuracy"
    acceptable_loss : float, default=2.0
        Points (percentage points) the data owner accepts to lose, ≥ 0.
    reference : {"nonprivate_forest", "sklearn_random_forest"}, default="nonprivate_forest"
    algorithm, mechanism, n_estimators, depth_rule, data_split : optional
        Pick one DP curve when the sweep holds several configurations.

    Returns
    -------
    EpsilonChoice
        ``epsilon`` is None, with a ``reason``, when no swept ε meets the target.

    Notes
    -----
    The scores are computed from the raw data (held-out folds): NOT private. They are for
    the data owner and the privacy officer, not for publication. The ε found is a total
    budget of the model; its risk translations hold only when ``private`` is True.
    """
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {metric!r}")
    try:
        loss = float(acceptable_loss)
    except (TypeError, ValueError):
        raise ValueError(
            f"acceptable_loss must be a number of points, got {acceptable_loss!r}"
        ) from None
    if not math.isfinite(loss) or loss < 0:
        raise ValueError(
            f"acceptable_loss must be a number of points ≥ 0 (e.g. 2 for two accuracy points), "
            f"got {acceptable_loss!r}"
        )
    dp = select_curve(
        summary,
        algorithm=algorithm,
        mechanism=mechanism,
        n_estimators=n_estimators,
        depth_rule=depth_rule,
        data_split=data_split,
    )
    ref = _reference_row(summary, dp, reference)
    mean_col, std_col = f"{metric}_mean", f"{metric}_std"
    if mean_col not in summary.columns:
        raise ValueError(f"the sweep summary has no {mean_col} column")
    ref_mean = float(ref[mean_col])
    target = ref_mean - loss / 100.0
    std = dp[std_col].to_numpy(dtype=np.float64) if std_col in dp else np.zeros(len(dp))
    no_spread = bool(np.isnan(std).any())
    std = np.nan_to_num(std, nan=0.0)
    mean = dp[mean_col].to_numpy(dtype=np.float64)
    curve = pd.DataFrame(
        {
            "epsilon": dp["epsilon"].to_numpy(dtype=np.float64),
            "mean": mean,
            "std": std,
            "lower": mean - std,
            "upper": mean + std,
        }
    )
    curve["meets"] = curve["lower"] >= target - _SLACK
    config = {k: dp[k].iloc[0] for k in CONFIG_KEYS if k in dp.columns}
    for key, value in config.items():
        if isinstance(value, np.generic):
            config[key] = value.item()
    private = bool(dp["private"].all()) if "private" in dp.columns else True
    name = METRIC_NAMES[metric]
    ref_text = "non-private forest" if reference == "nonprivate_forest" else "scikit-learn forest"
    bar = (
        f"the {ref_text} scores {100 * ref_mean:.1f}% {name}, so the target is at least "
        f"{100 * target:.1f}% ({loss:g} points less) for mean − 1 std"
    )
    meeting = curve[curve["meets"]]
    if meeting.empty:
        best = curve.loc[curve["lower"].idxmax()]
        reason = (
            f"No swept ε meets it: {bar}; the best lower band is {100 * best['lower']:.1f}% at "
            f"ε = {best['epsilon']:g}. Accept a larger loss, sweep larger ε, or use more data "
            "per tree (fewer trees)."
        )
        chosen = None
    else:
        first = meeting.iloc[0]
        chosen = float(first["epsilon"])
        reason = (
            f"ε = {chosen:g} is the smallest swept value that meets it: {bar}, and at "
            f"ε = {chosen:g} the forest scores {100 * first['mean']:.1f}% ± "
            f"{100 * first['std']:.1f}% (lower band {100 * first['lower']:.1f}%)."
        )
        later_misses = curve[(curve["epsilon"] > chosen) & ~curve["meets"]]
        if len(later_misses):
            reason += (
                " Careful: the larger ε = "
                + ", ".join(f"{e:g}" for e in later_misses["epsilon"])
                + " did not meet it, so the curve is noisy here; more repeats would firm "
                "this up."
            )
    if no_spread:
        reason += " Some points have no standard deviation (one run): their band is the mean."
    if not private:
        reason += (
            f" The mechanism {config.get('mechanism', '')} is NOT differentially private: "
            "no risk translation of this ε holds."
        )
    return EpsilonChoice(
        epsilon=chosen,
        reason=reason,
        metric=metric,
        acceptable_loss=loss,
        reference_mean=ref_mean,
        target=target,
        curve=curve,
        config=config,
        reference=reference,
        private=private,
    )


def candidate_table(
    epsilons: Sequence[float],
    prior: float = 0.5,
    summary: pd.DataFrame | None = None,
    metric: str = "accuracy",
    **config,
) -> pd.DataFrame:
    """Candidate ε values side by side: utility from the sweep and risk translations.

    Utility columns (``<metric>_mean``, ``<metric>_std``, as fractions) come from the
    sweep row of that exact ε (NaN when the sweep did not evaluate it; NOT private,
    computed on held-out data). The risk columns are those of :func:`risk_table`, and are
    NaN for a configuration whose mechanism is not proven DP. ``config`` picks the curve
    as in :func:`select_curve`.
    """
    table = risk_table(epsilons, prior)
    if summary is None:
        return table
    if metric not in METRIC_NAMES:
        raise ValueError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {metric!r}")
    dp = select_curve(summary, **config)
    swept = dp["epsilon"].to_numpy(dtype=np.float64)
    means, stds = [], []
    for eps in table["epsilon"]:
        hit = np.flatnonzero(np.isclose(swept, eps, rtol=1e-9, atol=0))
        means.append(float(dp[f"{metric}_mean"].iloc[hit[0]]) if len(hit) else math.nan)
        stds.append(float(dp[f"{metric}_std"].iloc[hit[0]]) if len(hit) else math.nan)
    table.insert(1, f"{metric}_mean", means)
    table.insert(2, f"{metric}_std", stds)
    private = bool(dp["private"].all()) if "private" in dp.columns else True
    table["private"] = private
    if not private:
        table[list(RISK_COLUMNS)] = math.nan
    return table
