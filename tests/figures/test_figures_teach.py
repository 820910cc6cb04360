"""dpviz.figures.teach: traces, data values, labels and colours (not pixels)."""

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dpviz.evaluation.teach import (
    PLAYGROUND_MECHANISMS,
    empirical_frequencies,
    playground,
    privacy_loss_grid,
    tiny_demo,
    tree_walkthrough,
)
from dpviz.figures.common import MECHANISM_COLORS, NOT_DP_PATTERN
from dpviz.figures.teach import (
    LOSS_CAP_FACTOR,
    epsilon_choice_figure,
    hypothesis_testing_figure,
    playground_figure,
    privacy_loss_heatmap,
    tree_figure,
)
from dpviz.privacy.risk import balanced_error_rate, hypothesis_testing_region, smallest_epsilon

OKABE_ITO = {
    "#000000",
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
}
GREYS = {"#BBBBBB", "#DDDDDD", "#FFFFFF", "#444444", "#555555"}


def colours(fig: go.Figure) -> set[str]:
    """Every hex colour named by the traces' lines and markers."""
    found = set()
    for trace in fig.data:
        for part in ("line", "marker"):
            obj = getattr(trace, part, None)
            color = getattr(obj, "color", None) if obj is not None else None
            values = color if isinstance(color, list | tuple | np.ndarray) else [color]
            found |= {v.upper() for v in values if isinstance(v, str) and v.startswith("#")}
    return found


def test_playground_bars_are_exact_with_empirical_overlay():
    play = playground([5, 10, 3], 0.5)
    draws = empirical_frequencies([5, 10, 3], 0.5, n_draws=1000, seed=0)
    fig = playground_figure(play, draws)
    bars = [t for t in fig.data if t.type == "bar"]
    dots = [t for t in fig.data if t.type == "scatter"]
    assert len(bars) == len(dots) == len(PLAYGROUND_MECHANISMS)
    for m, bar, dot in zip(PLAYGROUND_MECHANISMS, bars, dots):
        exact = play.probabilities[play.probabilities["mechanism"] == m]["probability"]
        np.testing.assert_allclose(bar.y, exact)
        emp = draws[draws["mechanism"] == m]["frequency"]
        np.testing.assert_allclose(dot.y, emp)
        assert bar.marker.color == MECHANISM_COLORS[m]
        hatched = bar.marker.pattern.shape == NOT_DP_PATTERN
        assert hatched == (m in ("smooth_em", "none"))
        assert "exact P(release)" in bar.hovertemplate and "drawn 1,000" in dot.hovertemplate
    titles = [a.text for a in fig.layout.annotations]
    assert "smooth_em (NOT DP)" in titles and "none (NOT DP)" in titles
    assert "laplace_counts (ε-DP): noisy argmax" in titles
    assert fig.layout.yaxis.tickformat == ".0%"
    assert colours(fig) <= OKABE_ITO | GREYS


def test_playground_without_draws_has_only_bars():
    fig = playground_figure(playground([1, 2], 1.0, mechanisms=["count_em", "smooth_em"]))
    assert [t.type for t in fig.data] == ["bar", "bar"]


def test_heatmap_values_and_marks_for_smooth_em():
    grid = privacy_loss_grid("smooth_em", 1.0, max_count=10)
    fig = privacy_loss_heatmap(grid)
    heat = fig.data[0]
    z = np.asarray(heat.z, dtype=float)
    assert z.shape == (11, 11)
    assert np.nanmax(z) == LOSS_CAP_FACTOR * 1.0  # capped for the colours
    text = np.asarray(heat.text)
    assert text[2, 0] == "6.32" and text[1, 0] == "2.13"  # rows are count B
    assert "19k" in text[10, 0] or text[10, 0].endswith("k")
    marks = fig.data[1]
    assert len(marks.x) == grid.n_above and "broken" in marks.name
    assert "NOT DP" in fig.layout.title.text
    assert "records" in fig.layout.xaxis.title.text and "records" in fig.layout.yaxis.title.text
    assert "vs B−1" in heat.hovertemplate
    custom = np.asarray(heat.customdata, dtype=object)
    assert custom[2, 0][6] == "2.13"  # (A = 0, B = 2) against B − 1


def test_heatmap_of_a_private_mechanism_has_no_marks():
    grid = privacy_loss_grid("permute_flip", 0.5, max_count=20)
    fig = privacy_loss_heatmap(grid)
    assert len(fig.data[1].x) == 0
    assert "(ε-DP)" in fig.layout.title.text
    assert fig.data[0].texttemplate is None or len(grid.cells) <= 256


def test_hypothesis_testing_figure():
    eps = [0.5, math.log(3), 3.0]
    fig = hypothesis_testing_figure(eps)
    lines = {t.name: t for t in fig.data if t.mode == "lines"}
    assert "random guessing (ε = 0, perfect privacy)" in lines
    for e in eps:
        trace = lines[f"ε = {e:g}: out of reach below this line"]
        region = hypothesis_testing_region(e)
        np.testing.assert_allclose(trace.y, region["fnr_min"])
        assert trace.fill == "tozeroy"
    corners = [t for t in fig.data if t.mode == "markers"]
    assert sorted(float(t.x[0]) for t in corners) == pytest.approx(
        sorted(balanced_error_rate(e) for e in eps)
    )
    assert any(t.x[0] == pytest.approx(0.25) for t in corners)
    assert "false-positive" in fig.layout.xaxis.title.text
    assert fig.layout.xaxis.tickformat == ".0%"
    assert colours(fig) <= OKABE_ITO | GREYS
    with pytest.raises(ValueError):
        hypothesis_testing_figure([])


def choice_summary(mechanism="permute_flip", private=True):
    rows = [
        {
            "series": "dp_forest",
            "mechanism": mechanism,
            "epsilon": eps,
            "n_estimators": 10,
            "depth_rule": "theorem2",
            "data_split": "disjoint",
            "accuracy_mean": mean,
            "accuracy_std": 0.01,
            "private": private,
        }
        for eps, mean in [(0.05, 0.6), (0.1, 0.7), (0.5, 0.85), (1.0, 0.88), (5.0, 0.9)]
    ]
    rows.append(
        {**rows[0], "series": "nonprivate_forest", "epsilon": math.inf, "accuracy_mean": 0.9}
    )
    return pd.DataFrame(rows)


def test_epsilon_choice_figure_marks_the_band_target_and_choice():
    choice = smallest_epsilon(choice_summary(), "accuracy", 3.0)
    assert choice.epsilon == 1.0
    fig = epsilon_choice_figure(choice, chosen=5.0)
    by_name = {t.name: t for t in fig.data}
    lower = by_name["mean − 1 std (the lower band that must meet the target)"]
    np.testing.assert_allclose(lower.y, 100 * choice.curve["lower"])
    mean = by_name["permute_flip forest (ε-DP): mean accuracy"]
    np.testing.assert_allclose(mean.y, 100 * choice.curve["mean"])
    assert mean.line.dash == "solid"
    ref = next(t for t in fig.data if t.name.startswith("non-private forest (NOT private)"))
    assert ref.y[0] == pytest.approx(90.0)
    target = next(t for t in fig.data if t.name.startswith("target"))
    assert target.y[0] == pytest.approx(87.0)
    assert by_name["smallest ε meeting the target: 1"].x[0] == 1.0
    assert by_name["chosen ε = 5"].x[0] == 5.0
    assert fig.layout.xaxis.type == "log" and 0.1 in fig.layout.xaxis.tickvals
    assert "(%)" in fig.layout.yaxis.title.text and "NOT private" in fig.layout.annotations[0].text


def test_epsilon_choice_figure_for_a_mechanism_without_proof():
    choice = smallest_epsilon(choice_summary("smooth_em", False), "accuracy", 3.0)
    fig = epsilon_choice_figure(choice, chosen=choice.epsilon)
    mean = next(t for t in fig.data if "mean accuracy" in (t.name or ""))
    assert "NOT DP" in mean.name and mean.line.dash == "dash"
    assert any("chosen ε = 1, the smallest meeting it" == t.name for t in fig.data)
    assert "NOT DP" in fig.layout.annotations[0].text


@pytest.fixture(scope="module")
def walk():
    frame, schema = tiny_demo()
    return tree_walkthrough(frame, schema, depth=2)


def test_tree_figure_steps(walk):
    one = tree_figure(walk, 1)
    assert "without the data" in one.layout.title.text
    leaf_traces = [t for t in one.data if t.marker and t.marker.symbol == "square"]
    assert sum(len(t.x) for t in leaf_traces) == 4
    three = tree_figure(walk, 3)
    names = {t.name for t in three.data}
    assert {"leaf releasing 'no'", "leaf releasing 'yes'"} & names
    four = tree_figure(walk, 4)
    path = next(t for t in four.data if t.name == "the test record's path")
    assert len([v for v in path.x if v is not None]) == 2 * (len(walk.steps[3].highlight) - 1)
    assert "NOT private" in tree_figure(walk, 2).layout.title.text
    with pytest.raises(ValueError, match="step"):
        tree_figure(walk, 5)
