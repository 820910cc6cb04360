"""Plotly figures shown by the app. No streamlit here: every figure is unit-tested.

Colours are the Okabe–Ito palette (safe for the common colour-vision deficiencies);
mechanisms without a DP proof are drawn dashed (lines) or hatched (bars) and say
"NOT DP" in the legend, so the warning survives a greyscale print.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.evaluation.sweep import SERIES_NONPRIVATE, SERIES_SKLEARN
from dpviz.privacy.mechanisms import MECHANISMS

MECHANISM_COLORS = {
    "permute_flip": "#0072B2",  # blue
    "count_em": "#009E73",  # bluish green
    "global_em": "#E69F00",  # orange
    "laplace_counts": "#CC79A7",  # reddish purple
    "smooth_em": "#D55E00",  # vermillion
    "none": "#000000",  # black
}
# The two non-private references get the same colour and dash on every page.
REFERENCE_STYLES = {
    SERIES_NONPRIVATE: ("non-private forest", "#000000", "dash"),
    SERIES_SKLEARN: ("scikit-learn random forest", "#56B4E9", "dot"),
}
TEMPLATE = "plotly_white"
# Flip probabilities are drawn down to this value; the gap axis runs until the best
# private mechanism falls below it.
FLIP_FLOOR = 1e-4
MAX_GAP = 100_000
LOG_GAP_FROM = 50  # the gap axis turns logarithmic once it reaches this many records
NOT_DP_PATTERN = "/"
METRICS = (("accuracy", "Accuracy"), ("auc", "ROC AUC"), ("f1", "F1"))
METRIC_NAMES = dict(METRICS)
# Macro F1 (the mean of every class's F1): shown beside accuracy when a class is rare,
# where accuracy alone flatters a model that ignores it. For more than two classes the
# F1 above already is the macro average.
MACRO_F1 = ("macro_f1", "Macro F1")
ALL_METRIC_NAMES = {**METRIC_NAMES, MACRO_F1[0]: MACRO_F1[1]}
# The trivial baseline: always answering the training majority class (dpviz.evaluation.metrics.
# majority_score). Grey, and drawn on every score view, so that a model predicting one
# class never looks good.
MAJORITY_LABEL = "majority class (trivial baseline)"
MAJORITY_COLOR = "#7F7F7F"
# Below this share of the records, the smallest class makes accuracy misleading.
RARE_CLASS_SHARE = 0.20


def majority_mean(summary: pd.DataFrame, metric: str) -> float | None:
    """The trivial baseline's mean ``metric`` in a sweep summary (the same on every row:
    every series runs on the same folds), or None when the summary has no baseline."""
    column = f"majority_{metric}_mean"
    if column not in summary.columns:
        return None
    values = summary[column].dropna()
    return None if values.empty else float(values.iloc[0])


def mechanism_label(mechanism: str, private: bool | None = None) -> str:
    """Legend text of a mechanism with its badge, e.g. ``smooth_em (NOT DP)``.

    ``private`` is the released model's ledger verdict when there is a model: False turns
    a proven mechanism's ``ε-DP`` into ``NOT DP — see ledger`` (inferred schema, replayed
    noise), so no label promises what the ledger does not."""
    badge = MECHANISMS[mechanism].badge
    if private is False and MECHANISMS[mechanism].private:
        badge = "NOT DP — see ledger"
    return f"{mechanism} ({badge})"


def is_reference(series: str) -> bool:
    """True for the non-private reference series of a sweep."""
    return series in REFERENCE_STYLES


def series_label(series: str, mechanism: str) -> str:
    """Legend text of a sweep series: the mechanism with its badge for the DP forest,
    e.g. ``permute_flip (ε-DP)``, and ``non-private forest (NOT DP)`` for a reference."""
    if is_reference(series):
        return f"{REFERENCE_STYLES[series][0]} (NOT DP)"
    return mechanism_label(mechanism)


def series_color(series: str, mechanism: str) -> str:
    """The one colour of a series on every page (Okabe–Ito)."""
    if is_reference(series):
        return REFERENCE_STYLES[series][1]
    return MECHANISM_COLORS.get(mechanism, "#000000")


def series_dash(series: str, mechanism: str) -> str:
    """Line dash of a series: solid only for a proven ε-DP mechanism, so NOT DP lines
    stay recognisable in greyscale."""
    if is_reference(series):
        return REFERENCE_STYLES[series][2]
    return "solid" if MECHANISMS[mechanism].private else "dash"


def series_private(series: str, mechanism: str) -> bool:
    return not is_reference(series) and MECHANISMS[mechanism].private


def flip_curve(mechanism: str, epsilon: float, gaps) -> np.ndarray:
    """Exact flip probability of a 2-class leaf with counts (0, j) for each gap j."""
    gaps = np.asarray(gaps, dtype=np.float64)
    counts = np.stack([np.zeros_like(gaps), gaps], axis=1)
    return MECHANISMS[mechanism].flip_probability(counts, epsilon)


def gap_grid(epsilon: float, max_observed: int = 0) -> np.ndarray:
    """Gaps j ≥ 1 to draw: up to where a 2-class ε-DP leaf flips with < FLIP_FLOOR chance
    (and at least the largest gap of the trained leaves); geometric beyond 200 points."""
    reach = math.ceil(math.log(0.5 / FLIP_FLOOR) / epsilon)
    j_max = int(min(MAX_GAP, max(10, int(max_observed), reach)))
    if j_max <= 200:
        return np.arange(1, j_max + 1)
    return np.unique(np.round(np.geomspace(1, j_max, 400)).astype(np.int64))


def gap_bins(max_gap: int) -> np.ndarray:
    """Left edges of the gap bins: one per gap up to 10, then about 8 per decade."""
    edges = np.arange(1, min(max_gap, 10) + 1)
    if max_gap > 10:
        wide = np.round(np.geomspace(11, max_gap, 1 + int(8 * math.log10(max_gap / 10))))
        edges = np.unique(np.concatenate([edges, wide.astype(np.int64)]))
    return edges


def realised_flips(leaves: pd.DataFrame) -> pd.DataFrame:
    """Per gap bin (j ≥ 1): how many of the trained leaves fall in it and how many flipped.

    ``leaves`` is a model's ``leaf_table()`` (NOT private: it reads the raw counts).
    Gap 0 is a tie, where every released label is a true majority, so it is left out.
    Columns: gap_lo, gap_hi (inclusive), gap (the leaves' mean gap), leaves, flipped, share.
    """
    rows = leaves.loc[leaves["gap_j"] >= 1, ["gap_j", "flipped"]]
    columns = ["gap_lo", "gap_hi", "gap", "leaves", "flipped", "share"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    gaps = rows["gap_j"].to_numpy(dtype=np.int64)
    edges = gap_bins(int(gaps.max()))
    which = np.searchsorted(edges, gaps, side="right") - 1
    his = np.append(edges[1:] - 1, gaps.max())
    out = (
        pd.DataFrame({"bin": which, "gap": gaps, "flipped": rows["flipped"].to_numpy(bool)})
        .groupby("bin")
        .agg(gap=("gap", "mean"), leaves=("gap", "size"), flipped=("flipped", "sum"))
        .reset_index()
    )
    out["gap_lo"] = edges[out["bin"]]
    out["gap_hi"] = his[out["bin"]]
    out["share"] = out["flipped"] / out["leaves"]
    return out[columns].astype({"leaves": np.int64, "flipped": np.int64})


def _log_ticks(top: float) -> list[int]:
    """1-2-5 ticks from 1 up to ``top``."""
    ticks, decade = [], 1
    while decade <= top:
        ticks += [t * decade for t in (1, 2, 5) if t * decade <= top]
        decade *= 10
    return ticks


def flip_probability_figure(
    leaves: pd.DataFrame | None,
    epsilon: float,
    *,
    mechanisms=None,
    trained: str | None = None,
) -> go.Figure:
    """Exact flip probability against the gap j for each label mechanism (2 classes, ε per
    leaf), with the trained forest's realised flips overlaid as markers.

    ``leaves`` is a fitted model's ``leaf_table()`` or None (curves only). The realised
    flips are binned by gap; bins where no leaf flipped are drawn as open triangles on
    the axis floor, since 0 has no place on a log axis. ``mechanisms`` defaults to every
    mechanism except ``none``, which never flips. ``trained`` draws that curve thicker.
    """
    if mechanisms is None:
        mechanisms = [m for m in MECHANISMS if m != "none"]
    observed = realised_flips(leaves) if leaves is not None else None
    max_seen = int(observed["gap_hi"].max()) if observed is not None and len(observed) else 0
    gaps = gap_grid(epsilon, max_seen)
    fig = go.Figure()
    for m in mechanisms:
        mech = MECHANISMS[m]
        prob = flip_curve(m, epsilon, gaps)
        fig.add_trace(
            go.Scatter(
                x=gaps,
                y=np.where(prob > 0, prob, np.nan),  # exact zeros cannot sit on a log axis
                mode="lines",
                name=mechanism_label(m),
                line={
                    "color": MECHANISM_COLORS.get(m, "#000000"),
                    "width": 4 if m == trained else 2,
                    "dash": "solid" if mech.private else "dash",
                },
                hovertemplate=f"{mechanism_label(m)}<br>gap j = %{{x}}<br>"
                "flip probability = %{y:.3g}<extra></extra>",
            )
        )
    notes = [f"Lines: exact chance for a 2-class leaf at ε = {epsilon:g} per leaf."]
    if observed is not None:
        n_max = max(1, int(observed["leaves"].max())) if len(observed) else 1
        for zero in (False, True):
            part = observed[(observed["flipped"] == 0) == zero]
            where = [
                f"gap {lo}" if lo == hi else f"gaps {lo}–{hi}"
                for lo, hi in zip(part["gap_lo"], part["gap_hi"])
            ]
            fig.add_trace(
                go.Scatter(
                    x=part["gap"],
                    y=np.full(len(part), FLIP_FLOOR) if zero else part["share"],
                    mode="markers",
                    name="this forest: none flipped (drawn at the floor)"
                    if zero
                    else "this forest: share flipped (size ∝ leaves)",
                    marker={
                        "color": "#000000",
                        "symbol": "triangle-down-open" if zero else "diamond",
                        "size": 7 + 13 * np.sqrt(part["leaves"].to_numpy() / n_max),
                        "line": {"color": "#000000" if zero else "#FFFFFF", "width": 1},
                    },
                    customdata=np.stack(
                        [part["flipped"], part["leaves"], np.asarray(where, dtype=object)],
                        axis=1,
                    )
                    if len(part)
                    else None,
                    hovertemplate="%{customdata[2]}: %{customdata[0]} of %{customdata[1]} "
                    "leaves flipped<extra>this forest (not private)</extra>",
                )
            )
        n_leaves, n_flipped = int(observed["leaves"].sum()), int(observed["flipped"].sum())
        notes.append(
            f"Markers: {n_flipped:,} of this forest's {n_leaves:,} leaves with j ≥ 1 flipped,"
            "<br>binned by gap (diagnostic from the raw data: not private)."
        )
    log_x = gaps[-1] >= LOG_GAP_FROM
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "How often does the noise flip a leaf's label?"},
        height=540,
        legend={
            "orientation": "h",
            "yanchor": "top",
            "y": -0.2,
            "x": 0,
            "entrywidth": 0.5,
            "entrywidthmode": "fraction",
        },
        margin={"t": 110, "b": 40, "l": 70, "r": 20},
        hovermode="closest",
        annotations=[note_annotation("<br>".join(notes))],
    )
    if log_x:
        ticks = _log_ticks(float(gaps[-1]))
        fig.update_xaxes(
            type="log",
            tickvals=ticks,
            ticktext=[f"{t:,}" for t in ticks],
            range=[-0.05, math.log10(gaps[-1]) + 0.02],
        )
    else:
        fig.update_xaxes(
            type="linear", range=[0.5, gaps[-1] + 0.5], dtick=1 if gaps[-1] <= 15 else None
        )
    fig.update_xaxes(title_text="gap j = top class count − runner-up count (records)")
    fig.update_yaxes(
        title_text="P(released label ≠ true majority), log scale",
        type="log",
        range=[math.log10(FLIP_FLOOR) - 0.2, 0.05],
        tickformat=".2~%",
        dtick=1,
    )
    return fig


def _majority_marks(fig: go.Figure, values: Sequence[float]) -> None:
    """The trivial baseline on a grouped bar chart: a grey line across the bars of the
    i-th category at ``values[i]`` (%), its value printed at the line's right end."""
    for i, value in enumerate(values):
        fig.add_shape(
            type="line",
            xref="x",
            yref="y",
            x0=i - 0.45,
            x1=i + 0.45,
            y0=value,
            y1=value,
            line={"color": MAJORITY_COLOR, "width": 3, "dash": "dashdot"},
            layer="above",
            name=MAJORITY_LABEL,
            legendgroup="majority",
            showlegend=i == 0,
        )
        fig.add_annotation(
            x=i + 0.45,
            y=value,
            xref="x",
            yref="y",
            text=f"majority {value:.1f}",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font={"size": 11, "color": "#444444"},
            bgcolor="rgba(255,255,255,0.8)",
        )


def note_annotation(text: str) -> dict:
    """A grey explanatory line just above the plot area, under the title."""
    return {
        "text": text,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1.0,
        "yanchor": "bottom",
        "xanchor": "left",
        "showarrow": False,
        "align": "left",
        "font": {"size": 12, "color": "#444444"},
    }


def scores_bar_figure(
    rows: pd.DataFrame,
    *,
    folds: int | None = None,
    metrics: Sequence[tuple[str, str]] = METRICS,
) -> go.Figure:
    """Cross-validated accuracy, ROC AUC and F1 (mean ± 1 std, in %) of each row of a
    sweep summary: the DP forest next to the non-private references, and a grey bar for
    the trivial baseline (always the majority class) as a line across each group when
    the summary has it.

    ``rows`` has the ``dpviz.evaluation.sweep`` summary columns (series, mechanism, epsilon,
    ``<metric>_mean``, ``<metric>_std``, ``majority_<metric>_mean``). ``metrics`` lists
    (column, label) pairs to draw. Metrics come from the test folds: NOT private. Bars of
    anything that is not proven DP are hatched and say NOT DP in the legend. The trivial
    baseline is a grey dash-dot line across each metric's group of bars (layout shapes,
    one legend entry), labelled with its value.
    """
    drawn = tuple(metrics)
    fig = go.Figure()
    names = [label for _, label in drawn]
    for row in rows.itertuples(index=False):
        series, mech = row.series, row.mechanism
        private = series_private(series, mech)
        # The released models' ledgers (an inferred schema, replayed noise) overrule the
        # mechanism's proof.
        ledger = getattr(row, "private", None)
        ledger = None if ledger is None or pd.isna(ledger) else bool(ledger)
        private = private and ledger is not False
        if is_reference(series):
            name = series_label(series, mech)
        else:
            name = f"DP forest, {mechanism_label(mech, ledger)}, ε = {row.epsilon:g}"
        color = series_color(series, mech)
        means = np.array([100 * getattr(row, f"{key}_mean") for key, _ in drawn])
        stds = np.nan_to_num([100 * getattr(row, f"{key}_std") for key, _ in drawn])
        dark = color in ("#000000", "#0072B2", "#D55E00", "#009E73")
        fig.add_trace(
            go.Bar(
                x=names,
                y=means,
                name=name,
                error_y={"type": "data", "array": stds, "visible": True, "color": "#444444"},
                text=[f"{v:.1f}" for v in means],
                textposition="inside",
                insidetextanchor="middle",
                textfont={"color": "#FFFFFF" if dark else "#000000"},
                marker={
                    "color": color,
                    "line": {"color": "#000000", "width": 1},
                    "pattern": {
                        "shape": "" if private else NOT_DP_PATTERN,
                        "fgcolor": "#FFFFFF" if dark else "#000000",
                        "solidity": 0.15,
                    },
                },
                customdata=stds,
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.1f}}% ± %{{customdata:.1f}}"
                "<extra></extra>",
            )
        )
    cv = f"{folds}-fold stratified CV" if folds else "Stratified CV"
    fig.update_layout(
        template=TEMPLATE,
        title={"text": "What privacy costs: cross-validated scores"},
        barmode="group",
        height=500,
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
        margin={"t": 90, "b": 40, "l": 70, "r": 20},
        annotations=[
            note_annotation(
                f"{cv}: bars are the mean over the held-out folds, whiskers ± 1 standard "
                "deviation.<br>F1 and AUC: rarest class positive (binary), macro average "
                "otherwise. Hatched: NOT DP. Grey dash-dot: always the majority class."
            )
        ],
    )
    fig.update_yaxes(title_text="score on held-out folds (%)", range=[0, 105])
    fig.update_xaxes(title_text="metric")
    majority = [majority_mean(rows, key) for key, _ in drawn] if len(rows) else []
    if majority and all(m is not None for m in majority):
        _majority_marks(fig, [100 * m for m in majority])  # after the note: annotations
    return fig
