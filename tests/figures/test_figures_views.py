"""Figures of the Trees, Leaves and Curves pages: traces, values, labels, colours."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpviz.app.sweep import run_with_references
from dpviz.evaluation.demos import load_demo
from dpviz.figures import curves as figures_curves
from dpviz.figures import leaves as figures_leaves
from dpviz.figures import tree_layout as treeviz
from dpviz.figures import trees as figures_trees
from dpviz.figures.common import MAJORITY_COLOR, series_color
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.tabular.encode import encode

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


@pytest.fixture(scope="module")
def demo():
    frame, schema = load_demo("demo_csv")
    return encode(frame, schema), schema


def fit(demo, **params):
    encoded, schema = demo
    settings = {"epsilon": 1.0, "n_estimators": 6, "random_state": 0, **params}
    return DPRandomForestClassifier(**settings).fit_encoded(encoded, schema)


# --- trees --------------------------------------------------------------------------------


def test_node_link_released_view_shows_rules_and_released_labels(demo):
    model = fit(demo)
    nodes = treeviz.structure_nodes(model, 0)
    fig = figures_trees.node_link_figure(
        nodes, ["0", "1"], diagnostics=False, tree=1, releases_counts=True
    )
    assert "Released model" in fig.layout.title.text and "Tree 1" in fig.layout.title.text
    edges = fig.data[0]
    assert sum(v is None for v in edges.x) == len(nodes) - 1  # one segment per branch
    splits = next(t for t in fig.data if t.name == "split (rule: left branch)")
    assert len(splits.x) == 31 and splits.text[0] == nodes.loc[1, "edge"]  # "x4 < ..."
    # A count mechanism releases noisy counts: the colour is their largest class, derived
    # from the release, and the legend says so rather than "released label".
    leaves = [t for t in fig.data if t.name and t.name.startswith("largest noisy count")]
    assert sum(len(t.x) for t in leaves) == 32
    assert not any(t.name and t.name.startswith("released label") for t in fig.data)
    for i, trace in enumerate(leaves):
        assert trace.marker.color == figures_trees.class_color(i)
        assert all("released noisy counts: " in h for h in trace.customdata)
    assert not any("records" in h for t in leaves for h in t.customdata)  # nothing private
    crowded = [
        p for p, d in zip(splits.textposition, nodes.loc[~nodes.is_leaf, "depth"]) if d == 4
    ]
    assert "bottom center" in crowded  # 16 labels on one level are staggered


def test_a_label_mechanism_s_leaves_are_released_labels(demo):
    model = fit(demo, mechanism="permute_flip")
    nodes = treeviz.structure_nodes(model, 0)
    for draw in (figures_trees.node_link_figure, figures_trees.icicle_figure):
        fig = draw(nodes, ["0", "1"], diagnostics=False, tree=1)
        names = [t.name for t in fig.data if t.name]
        assert "released label 0" in names and "released label 1" in names
        assert not any(n.startswith("largest noisy count") for n in names)


def test_node_link_diagnostics_show_counts_flips_and_empty_leaves(demo):
    model = fit(demo)
    nodes = treeviz.with_counts(model, treeviz.structure_nodes(model, 2))
    fig = figures_trees.node_link_figure(nodes, ["0", "1"], diagnostics=True, tree=3)
    assert "NOT private" in fig.layout.title.text
    names = {t.name for t in fig.data if t.name}
    assert {"empty leaf (no record)", "true majority 0"} <= names
    leaf_names = ("true majority 0", "true majority 1", "flipped: released ≠ majority")
    leaf_traces = [t for t in fig.data if t.name in (*leaf_names, "empty leaf (no record)")]
    assert sum(len(t.x) for t in leaf_traces) == 32  # every leaf drawn exactly once
    counts = next(t for t in fig.data if t.mode == "text" and t.text and "/" in "".join(t.text))
    nonempty = nodes[nodes["is_leaf"] & ~nodes["empty"]]
    assert sum(1 for t in counts.text if t) == len(nonempty)
    assert "records:" in leaf_traces[0].customdata[0]


def test_icicle_diagnostics_sized_by_records(demo):
    model = fit(demo, depth=9)
    nodes = treeviz.cut_depth(treeviz.visited_nodes(model, 0), 6)
    fig = figures_trees.icicle_figure(
        nodes, ["0", "1"], diagnostics=True, tree=1, total_leaves=512
    )
    icicle = fig.data[0]
    assert icicle.type == "icicle" and icicle.branchvalues == "total"
    values = dict(zip(icicle.ids, icicle.values))
    for node, parent in zip(icicle.ids, icicle.parents):
        if parent:
            assert values[node] <= values[parent]
    assert values["0"] == nodes.loc[0, "records"]
    assert set(icicle.marker.colors) <= set(figures_trees.CLASS_COLORS) | {"#000000", "#FFFFFF"}
    note = fig.layout.annotations[0].text
    assert f"{int(nodes.loc[0, 'leaves_below']):,} of its 512 leaves hold records" in note
    assert any(label.endswith(" …") for label in icicle.labels)  # cut at depth 6
    assert "NOT private" in fig.layout.title.text


def test_icicle_released_view_does_not_use_records(demo):
    model = fit(demo, depth=9)
    nodes = treeviz.structure_nodes(model, 0, max_depth=4)
    fig = figures_trees.icicle_figure(nodes, ["0", "1"], diagnostics=False, tree=1)
    icicle = fig.data[0]
    assert icicle.values is None and icicle.branchvalues == "remainder"
    assert set(icicle.marker.colors) == {figures_trees.STRUCTURE_COLOR}
    assert "Nothing here depends on the data" in fig.layout.annotations[0].text


# --- leaves -------------------------------------------------------------------------------


def leaves_table(gaps):
    return pd.DataFrame({"gap_j": gaps})


def test_gap_histogram_has_a_tie_bin_and_widening_bins():
    hist = figures_leaves.gap_histogram(leaves_table([0, 0, 1, 2, 2, 2, 10, 11, 250]))
    assert hist["leaves"].sum() == 9
    by_label = hist.set_index("label")["leaves"]
    assert by_label["0 (tie)"] == 2 and by_label["1"] == 1 and by_label["2"] == 3
    assert hist["gap_lo"].is_monotonic_increasing and (hist["gap_lo"] <= hist["gap_hi"]).all()
    assert hist.iloc[-1]["gap_hi"] >= 250
    fig = figures_leaves.gap_histogram_figure(leaves_table([0, 1, 1, 3]))
    assert list(fig.data[0].y)[:4] == [1, 2, 0, 1]
    assert fig.layout.xaxis.title.text == "gap j (records)"
    assert "not private" in fig.layout.title.text
    assert figures_leaves.gap_histogram(leaves_table([])).empty


def test_sensitivity_histogram_is_exact_in_log_space():
    gaps = [0, 1, 2, 1000]
    hist = figures_leaves.sensitivity_histogram(leaves_table(gaps), 1.0, bins=10)
    assert hist["leaves"].sum() == 4
    # e^-1000 underflows to 0, yet the leaf is counted: pooled at the 1e-300 floor
    lowest = hist.iloc[0]
    assert lowest["lo"] == figures_leaves.SENSITIVITY_FLOOR_LOG10 and lowest["leaves"] == 1
    assert hist.iloc[-1]["leaves"] == 3  # sensitivities 1, e^-1 and e^-2 share the top bin
    fine = figures_leaves.sensitivity_histogram(leaves_table([0, 1, 2]), 1.0, bins=4)
    # log10 e^-2 = -0.87, log10 e^-1 = -0.43, log10 1 = 0 in bins of 0.25 from -1
    assert list(fine["leaves"]) == [1, 0, 1, 1] and fine.iloc[0]["lo"] == -1.0
    fig = figures_leaves.sensitivity_histogram_figure(leaves_table([1, 2, 3]), 0.5)
    assert "log scale" in fig.layout.xaxis.title.text and "ε = 0.5 per leaf" in (
        fig.layout.annotations[0].text
    )
    assert fig.layout.xaxis.ticktext[0] == "1"


# --- curves -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def summary(demo):
    encoded, schema = demo
    result = run_with_references(
        encoded,
        schema,
        epsilons=[0.1, 1.0, 5.0],
        n_estimators=[5, 20],
        depths=["theorem2", 3],
        mechanisms=["permute_flip", "smooth_em"],
        sklearn=False,
        folds=2,
    )
    return result.summary


FIXED = {"n_estimators": 20, "depth_rule": "theorem2", "data_split": "disjoint", "epsilon": 1.0}


def test_curve_against_epsilon_has_bands_dashes_and_reference_lines(summary):
    fig = figures_curves.curve_figure(
        summary, metric="accuracy", fixed=FIXED, highlight_epsilon=1.0, folds=2
    )
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert set(lines) == {"permute_flip (ε-DP)", "smooth_em (NOT DP)"}
    assert lines["permute_flip (ε-DP)"].line.dash == "solid"
    assert lines["smooth_em (NOT DP)"].line.dash == "dash"
    assert lines["permute_flip (ε-DP)"].line.color == series_color("dp_forest", "permute_flip")
    rows = figures_curves.select(summary, {**FIXED, "epsilon": None})
    pf = rows[(rows.series == "dp_forest") & (rows.mechanism == "permute_flip")]
    assert list(lines["permute_flip (ε-DP)"].x) == [0.1, 1.0, 5.0]
    assert np.allclose(lines["permute_flip (ε-DP)"].y, 100 * pf["accuracy_mean"])
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == 2 and len(bands[0].x) == 6
    reference = next(t for t in fig.data if t.name == "non-private forest (NOT DP)")
    nonprivate = summary[(summary.series == "nonprivate_forest") & (summary.n_estimators == 20)]
    nonprivate = nonprivate[nonprivate.depth_rule == "theorem2"].iloc[0]
    assert list(reference.x) == [0.1, 5.0] and reference.line.dash == "dash"
    assert np.allclose(reference.y, 100 * nonprivate["accuracy_mean"])
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text.startswith("Accuracy")
    assert fig.layout.shapes[0].x0 == 1.0  # the ε under discussion
    # Okabe–Ito colours; the trivial baseline is neutral grey (no series of its own).
    assert all(
        c in OKABE_ITO | {MAJORITY_COLOR} for c in (t.line.color for t in fig.data if t.line.color)
    )


def test_curve_against_trees_and_depth_rule(summary):
    fig = figures_curves.curve_figure(summary, metric="f1", x="n_estimators", fixed=FIXED)
    pf = next(t for t in fig.data if t.name == "permute_flip (ε-DP)")
    assert list(pf.x) == [5, 20] and fig.layout.xaxis.title.text == "number of trees"
    reference = next(t for t in fig.data if t.name == "non-private forest (NOT DP)")
    assert list(reference.x) == [5, 20]  # the reference varies with the trees
    fig = figures_curves.curve_figure(summary, metric="auc", x="depth_rule", fixed=FIXED)
    pf = next(t for t in fig.data if t.name == "permute_flip (ε-DP)")
    assert list(pf.x) == ["theorem2 (depth 5)", "fixed 3"] and pf.error_y.visible
    assert fig.layout.xaxis.type == "category"


def test_curve_filters_series_without_recomputing_and_checks_arguments(summary):
    only = figures_curves.curve_figure(
        summary, fixed=FIXED, mechanisms=["smooth_em"], references=()
    )
    assert [t.name for t in only.data if t.mode == "lines+markers"] == ["smooth_em (NOT DP)"]
    assert not any(t.name and "non-private" in t.name for t in only.data)
    with pytest.raises(ValueError, match="unknown metric"):
        figures_curves.curve_figure(summary, metric="loss")
    with pytest.raises(ValueError, match="unknown x axis"):
        figures_curves.curve_figure(summary, x="seed")
    assert figures_curves.depth_label("half", 2.0) == "half (depth 2)"
    assert figures_curves.depth_label("7", float("nan")) == "7"
    assert math.isclose(len(figures_curves.select(summary, {"epsilon": 0.1})), 8)
