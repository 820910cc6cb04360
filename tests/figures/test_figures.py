"""dpviz.figures.common: traces, data values and labels (not pixels)."""

import math

import numpy as np
import pandas as pd
import pytest

from dpviz.evaluation.demos import load_demo
from dpviz.figures.common import (
    FLIP_FLOOR,
    LOG_GAP_FROM,
    MECHANISM_COLORS,
    NOT_DP_PATTERN,
    flip_curve,
    flip_probability_figure,
    gap_bins,
    gap_grid,
    mechanism_label,
    realised_flips,
    scores_bar_figure,
    series_color,
    series_dash,
    series_label,
    series_private,
)
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.mechanisms import MECHANISMS

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
CURVE_MECHANISMS = [m for m in MECHANISMS if m != "none"]


def curves(fig):
    return {t.name: t for t in fig.data if t.mode == "lines"}


def markers(fig):
    return [t for t in fig.data if t.mode == "markers"]


# --- flip probability -------------------------------------------------------------------


def test_flip_curve_is_the_mechanisms_exact_flip_probability_on_counts_0_j():
    gaps = np.arange(1, 8)
    for m in MECHANISMS:
        expected = [MECHANISMS[m].flip_probability(np.array([[0, j]]), 0.5)[0] for j in gaps]
        np.testing.assert_allclose(flip_curve(m, 0.5, gaps), expected, rtol=1e-12)
    # permute_flip, 2 classes: P(flip) = e^(-εj) / 2
    np.testing.assert_allclose(flip_curve("permute_flip", 1.0, gaps), 0.5 * np.exp(-gaps))


def test_one_curve_per_label_mechanism_with_badge_and_exact_values():
    fig = flip_probability_figure(None, 1.0)
    lines = curves(fig)
    assert list(lines) == [mechanism_label(m) for m in CURVE_MECHANISMS]
    for m in CURVE_MECHANISMS:
        trace = lines[mechanism_label(m)]
        x = np.asarray(trace.x)
        y = np.asarray(trace.y, dtype=float)
        exact = flip_curve(m, 1.0, x)
        shown = ~np.isnan(y)
        np.testing.assert_allclose(y[shown], exact[shown], rtol=1e-12)
        assert np.all(exact[~shown] == 0)  # only exact zeros are left out (log axis)
        assert x[0] == 1 and np.all(np.diff(x) > 0)
    assert markers(fig) == []  # no model given: no realised flips


def test_not_dp_mechanisms_are_dashed_and_say_so_in_the_legend():
    lines = curves(flip_probability_figure(None, 1.0))
    for m in CURVE_MECHANISMS:
        trace = lines[mechanism_label(m)]
        if MECHANISMS[m].private:
            assert trace.line.dash == "solid" and "ε-DP" in trace.name
        else:
            assert trace.line.dash == "dash" and "NOT DP" in trace.name
    assert "smooth_em (NOT DP)" in lines


def test_colour_blind_safe_distinct_colours():
    assert set(MECHANISM_COLORS.values()) <= OKABE_ITO
    assert len(set(MECHANISM_COLORS.values())) == len(MECHANISM_COLORS)
    colours = [t.line.color for t in curves(flip_probability_figure(None, 1.0)).values()]
    assert len(set(colours)) == len(colours)


def test_axes_titles_units_and_log_scales():
    fig = flip_probability_figure(None, 1.0)
    assert "flip" in fig.layout.title.text
    assert "gap j" in fig.layout.xaxis.title.text and "(records)" in fig.layout.xaxis.title.text
    assert "log scale" in fig.layout.yaxis.title.text
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.range[0] < math.log10(FLIP_FLOOR) < fig.layout.yaxis.range[1]
    assert fig.layout.xaxis.type == "linear"  # ε = 1: gaps up to ~10
    assert "ε = 1 per leaf" in fig.layout.annotations[0].text
    small = flip_probability_figure(None, 0.01)
    assert small.layout.xaxis.type == "log"  # gaps span decades at small ε
    ticks = list(small.layout.xaxis.tickvals)
    assert (
        ticks[:6] == [1, 2, 5, 10, 20, 50]
        and ticks[-1] <= curves(small)["permute_flip (ε-DP)"].x[-1]
    )


def test_gap_axis_reaches_where_the_best_private_mechanism_stops_flipping():
    for eps in (0.01, 0.1, 1.0, 5.0):
        gaps = gap_grid(eps)
        assert gaps[0] == 1 and np.all(np.diff(gaps) > 0)
        assert flip_curve("permute_flip", eps, gaps[-1:])[0] < FLIP_FLOOR
        assert len(gaps) <= 400
    assert gap_grid(1.0, max_observed=300)[-1] >= 300
    assert gap_grid(1.0)[-1] < LOG_GAP_FROM <= gap_grid(0.1)[-1]


def test_trained_mechanism_drawn_thicker():
    lines = curves(flip_probability_figure(None, 1.0, trained="count_em"))
    assert lines["count_em (ε-DP)"].line.width > lines["permute_flip (ε-DP)"].line.width


def leaf_table(gaps, flipped):
    return pd.DataFrame({"gap_j": gaps, "flipped": flipped})


def test_realised_flips_are_counted_per_gap_bin_and_ties_left_out():
    table = leaf_table(
        [0, 0, 1, 1, 1, 2, 3, 3, 15, 16],
        [False, False, True, False, False, False, True, True, True, False],
    )
    out = realised_flips(table)
    assert list(out.columns) == ["gap_lo", "gap_hi", "gap", "leaves", "flipped", "share"]
    by_lo = out.set_index("gap_lo")
    assert by_lo.loc[1, ["leaves", "flipped"]].tolist() == [3, 1]
    assert by_lo.loc[2, ["leaves", "flipped"]].tolist() == [1, 0]
    assert by_lo.loc[3, ["leaves", "flipped"]].tolist() == [2, 2]
    assert out["leaves"].sum() == 8  # the two ties (j = 0) are not flips by definition
    assert out["flipped"].sum() == 4
    assert np.allclose(out["share"], out["flipped"] / out["leaves"])
    assert (out["gap_lo"] <= out["gap"]).all() and (out["gap"] <= out["gap_hi"]).all()
    assert realised_flips(leaf_table([0, 0], [False, False])).empty


def test_gap_bins_single_gaps_up_to_10_then_geometric():
    assert gap_bins(7).tolist() == list(range(1, 8))
    edges = gap_bins(5000)
    assert edges[:10].tolist() == list(range(1, 11))
    assert np.all(np.diff(edges) > 0) and edges[-1] <= 5000
    ratios = edges[11:] / edges[10:-1]
    assert ratios.max() < 1.6


def test_realised_flips_overlay_markers_and_floor_for_bins_without_flips():
    table = leaf_table([1, 1, 1, 1, 2, 2, 4], [True, True, False, False, True, False, False])
    fig = flip_probability_figure(table, 1.0)
    flipped, none = markers(fig)
    assert "share flipped" in flipped.name and "none flipped" in none.name
    assert list(flipped.x) == [1, 2] and list(flipped.y) == [0.5, 0.5]
    assert [row[:2].tolist() for row in flipped.customdata] == [[2, 4], [1, 2]]
    assert list(none.x) == [4] and list(none.y) == [FLIP_FLOOR]
    assert flipped.marker.size[0] > flipped.marker.size[1]  # size grows with the leaves
    note = fig.layout.annotations[0].text
    assert "3 of this forest's 7 leaves" in note and "not private" in note


def test_overlay_from_a_real_model_matches_its_leaf_table():
    frame, schema = load_demo("demo_csv")
    model = DPRandomForestClassifier(epsilon=1.0, n_estimators=20, schema=schema, random_state=1)
    model.fit(frame[schema.feature_names], frame[schema.label])
    table = model.leaf_table(path_rules=False)
    fig = flip_probability_figure(table, model.tree_epsilon_, trained="permute_flip")
    shown = sum(int(row[1]) for t in markers(fig) for row in t.customdata)
    assert shown == int((table["gap_j"] >= 1).sum())
    flips = sum(int(row[0]) for t in markers(fig) for row in t.customdata)
    assert flips == int(table["flipped"].sum())


# --- series styles and score bars ------------------------------------------------------


def summary_rows(*rows):
    """Sweep-summary rows: (series, mechanism, epsilon, (acc, std), (auc, std), (f1, std))."""
    out = []
    for series, mech, eps, acc, auc, f1 in rows:
        row = {"series": series, "mechanism": mech, "epsilon": eps}
        for key, (mean, std) in zip(("accuracy", "auc", "f1"), (acc, auc, f1)):
            row[f"{key}_mean"], row[f"{key}_std"] = mean, std
        out.append(row)
    return pd.DataFrame(out)


def test_every_series_has_one_colour_dash_and_label_everywhere():
    colours = {}
    for m in MECHANISMS:
        colours[("dp_forest", m)] = series_color("dp_forest", m)
        assert series_label("dp_forest", m) == mechanism_label(m)
        expected = "solid" if MECHANISMS[m].private else "dash"
        assert series_dash("dp_forest", m) == expected
        assert series_private("dp_forest", m) == MECHANISMS[m].private
    for ref in ("nonprivate_forest", "sklearn_random_forest"):
        colours[(ref, "none")] = series_color(ref, "none")
        assert series_label(ref, "none").endswith("(NOT DP)")
        assert series_dash(ref, "none") != "solid" and not series_private(ref, "none")
    assert set(colours.values()) <= OKABE_ITO
    # the flip curves, the score bars and the sweep curves all use these colours
    lines = curves(flip_probability_figure(None, 1.0))
    for m in CURVE_MECHANISMS:
        assert lines[mechanism_label(m)].line.color == series_color("dp_forest", m)
    assert series_color("nonprivate_forest", "none") == MECHANISM_COLORS["none"]
    assert series_color("sklearn_random_forest", "none") not in MECHANISM_COLORS.values()


def test_score_bars_compare_the_dp_forest_with_both_references_with_std_whiskers():
    rows = summary_rows(
        ("dp_forest", "permute_flip", 0.5, (0.80, 0.02), (0.85, 0.01), (0.78, 0.03)),
        ("nonprivate_forest", "none", float("inf"), (0.84, 0.01), (0.90, 0.005), (0.83, 0.02)),
        (
            "sklearn_random_forest",
            "none",
            float("inf"),
            (0.9, 0.0),
            (0.95, float("nan")),
            (0.9, 0.0),
        ),
    )
    fig = scores_bar_figure(rows, folds=3)
    assert [t.type for t in fig.data] == ["bar"] * 3
    bar, nonprivate, sk = fig.data
    assert list(bar.x) == ["Accuracy", "ROC AUC", "F1"]
    np.testing.assert_allclose(bar.y, [80, 85, 78])
    np.testing.assert_allclose(bar.error_y.array, [2, 1, 3])
    np.testing.assert_allclose(nonprivate.y, [84, 90, 83])
    np.testing.assert_allclose(sk.error_y.array, [0, 0, 0])  # a NaN std draws no whisker
    assert bar.name == "DP forest, permute_flip (ε-DP), ε = 0.5"
    assert nonprivate.name == "non-private forest (NOT DP)"
    assert sk.name == "scikit-learn random forest (NOT DP)"
    assert bar.marker.pattern.shape == "" and nonprivate.marker.pattern.shape == NOT_DP_PATTERN
    assert sk.marker.pattern.shape == NOT_DP_PATTERN
    assert bar.marker.color == series_color("dp_forest", "permute_flip")
    assert "± %{customdata:.1f}" in bar.hovertemplate
    assert list(bar.text) == ["80.0", "85.0", "78.0"]
    assert fig.layout.yaxis.title.text.endswith("(%)") and fig.layout.yaxis.range[0] == 0
    assert "3-fold" in fig.layout.annotations[0].text
    assert "± 1 standard deviation" in fig.layout.annotations[0].text


def test_score_bars_hatch_a_not_dp_mechanism():
    rows = summary_rows(("dp_forest", "smooth_em", 1.0, (0.9, 0.0), (0.9, 0.0), (0.9, 0.0)))
    fig = scores_bar_figure(rows)
    assert len(fig.data) == 1 and "NOT DP" in fig.data[0].name
    assert fig.data[0].marker.pattern.shape == NOT_DP_PATTERN


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_mechanism_label_carries_the_badge(mechanism):
    assert mechanism_label(mechanism) == f"{mechanism} ({MECHANISMS[mechanism].badge})"
