"""The other DP libraries' lines on a Curves figure (issue 30): diffprivlib's models and
DP-EBM, scored on the same folds at the same ε values as the sweep, each labelled with
the guarantee its library claims (``ε-DP``; DP-EBM's ``(ε, δ)-DP`` names its δ).

Like :mod:`dpviz.figures.curves` this only reads a sweep summary (rows whose ``series`` is
:data:`~dpviz.evaluation.peers.SERIES_PEER`); scores are from held-out folds: NOT private.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpviz.evaluation.peers import PEERS, SERIES_PEER, get_peer
from dpviz.figures.common import ALL_METRIC_NAMES

# Paul Tol's colours that no dpviz algorithm or mechanism takes, and open markers: a peer's
# line is told from dpviz's (filled markers) at a glance and in greyscale.
PEER_STYLES = {
    "diffprivlib_rf": ("#44AA99", "circle-open"),
    "diffprivlib_lr": ("#AA4499", "square-open"),
    "diffprivlib_gnb": ("#DDAA33", "diamond-open"),
    "dp_ebm": ("#004488", "star-open"),
}
NO_GUARANTEE_NOTE = "no guarantee: inferred schema or replayed noise"


def peer_legend(peer_id: str, private: bool = True) -> str:
    """A peer's legend text: its guarantee (``diffprivlib RF (ε-DP)``, ``DP-EBM ((ε,
    1e-6)-DP)``), or that it has none here (schema read from the data, replayed noise)."""
    peer = get_peer(peer_id)
    return peer.legend if private else f"{peer.label} ({NO_GUARANTEE_NOTE})"


def peer_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The peers' rows of a sweep summary (empty when it has none)."""
    if "series" not in summary.columns:
        return summary.iloc[0:0]
    return summary[summary["series"] == SERIES_PEER]


def add_peer_lines(
    fig: go.Figure, summary: pd.DataFrame, metric: str = "accuracy", x: str = "epsilon"
) -> go.Figure:
    """Draw each peer of ``summary`` as a line of ``metric`` (mean over the folds, in %)
    against ε, in the peers' order (:data:`PEERS`). Only against ε: the peers have no
    trees or depth grid. Returns ``fig``."""
    rows = peer_rows(summary)
    if x != "epsilon" or rows.empty:
        return fig
    name = ALL_METRIC_NAMES.get(metric, metric)
    for peer_id in [p for p in PEERS if p in set(rows["algorithm"])]:
        own = rows[rows["algorithm"] == peer_id].sort_values("epsilon")
        color, symbol = PEER_STYLES.get(peer_id, ("#777777", "cross-open"))
        label = peer_legend(peer_id, bool(own["private"].astype(bool).all()))
        std = 100 * np.nan_to_num(own[f"{metric}_std"].to_numpy(dtype=float))
        fig.add_trace(
            go.Scatter(
                x=own["epsilon"].to_numpy(dtype=float),
                y=100 * own[f"{metric}_mean"].to_numpy(dtype=float),
                mode="lines+markers",
                name=label,
                legendgroup=f"peer:{peer_id}",
                line={"color": color, "width": 2},
                marker={"size": 8, "color": color, "symbol": symbol, "line": {"width": 2}},
                customdata=std,
                hovertemplate=f"{label}<br>ε = %{{x:g}}<br>{name}: %{{y:.1f}}% ± "
                "%{customdata:.1f}<extra>another library</extra>",
            )
        )
    return fig
