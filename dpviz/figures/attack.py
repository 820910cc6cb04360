"""The membership attack's ROC chart, drawn against the region that ε-DP allows.

Privacy role: draws an :class:`~dpviz.evaluation.attack.AttackResult`, which is computed
from the records (NOT private): the chart is a diagnostic for the data owner, and its
title says so. No ε is spent.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from dpviz.evaluation.attack import AttackResult, dp_region
from dpviz.figures.common import TEMPLATE

DP_COLOR = "#0072B2"  # blue: the DP model
REFERENCE_COLOR = "#000000"  # black, dashed: the non-private reference, as on Curves
REGION_COLOR = "rgba(0, 158, 115, 0.15)"  # bluish green: what ε-DP allows


def roc_figure(result: AttackResult, height: int = 460) -> go.Figure:
    """ROC curves of the attack on the DP model and on the non-private reference, the
    diagonal (guessing) and the shaded ε-DP region: TPR ≤ e^ε·FPR and
    1 − FPR ≤ e^ε·(1 − TPR) (and the mirror image, for a test that says the opposite)."""
    fig = go.Figure()
    if result.ledger_epsilon is not None:
        grid = np.linspace(0.0, 1.0, 401)
        low, high = dp_region(result.ledger_epsilon, grid)
        fig.add_trace(
            go.Scatter(
                x=grid, y=low, mode="lines", line={"width": 0}, hoverinfo="skip", showlegend=False
            )
        )
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=high,
                mode="lines",
                line={"width": 1, "color": "rgba(0, 158, 115, 0.6)"},
                fill="tonexty",
                fillcolor=REGION_COLOR,
                name=f"what ε = {result.ledger_epsilon:g} DP allows",
                hoverinfo="skip",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            line={"color": "#7F7F7F", "dash": "dot", "width": 1},
            name="guessing (TPR = FPR)",
            hoverinfo="skip",
        )
    )
    curves = [(result.dp, DP_COLOR, "solid")]
    if result.reference is not None:
        curves.append((result.reference, REFERENCE_COLOR, "dash"))
    for curve, color, dash in curves:
        fig.add_trace(
            go.Scatter(
                x=curve.fpr,
                y=curve.tpr,
                mode="lines",
                line={"color": color, "dash": dash, "width": 2.5, "shape": "hv"},
                name=f"{curve.model}: AUC {curve.auc:.3f}, advantage {curve.advantage:.3f}",
                hovertemplate="FPR %{x:.3f}<br>TPR %{y:.3f}<extra>" + curve.model + "</extra>",
            )
        )
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        title={
            "text": "Membership attack ROC (NOT private: computed from your records)",
            "font": {"size": 16},
        },
        xaxis={
            "title": "false positive rate (non-members called members)",
            "range": [0, 1],
            "constrain": "domain",
        },
        yaxis={
            "title": "true positive rate (members found)",
            "range": [0, 1],
            "scaleanchor": "x",
            "scaleratio": 1,
        },
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0},
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
    return fig
