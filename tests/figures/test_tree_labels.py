"""Tree figures' labels: the values on the branches of a split into many values never
overprint each other (vertical when flat ones would be cut short; the whole rule on
hover), DPBoost's one-hot splits name the value they test and label both branches, and
long titles wrap instead of running off the figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpviz.figures import tree_layout as treeviz
from dpviz.figures import trees as figures_trees
from dpviz.models.boosting.estimator import DPBoostClassifier
from dpviz.models.forest.estimator import DPRandomForestClassifier
from dpviz.privacy.schema import Schema
from dpviz.tabular.encode import encode

CITIES = (
    "Boston, MA",
    "Austin, TX",
    "Denver, CO",
    "Miami, FL",
    "Seattle, WA",
    "Chicago, IL",
    "Portland, OR",
    "San Francisco, CA",
)
PLACES = ("urban", "suburban", "rural", "remote", "island", "coastal")


def frame_and_schema(*features: str) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({"population": rng.choice(PLACES, n), "city": rng.choice(CITIES, n)})[
        list(features)
    ]
    frame["label"] = rng.choice(["no", "yes"], n)
    values = {"population": PLACES, "city": CITIES}
    schema = Schema.from_dict(
        {
            "label": "label",
            "classes": ["no", "yes"],
            "features": [
                {"name": f, "type": "discrete", "values": list(values[f])} for f in features
            ],
        }
    )
    return frame, schema


def edge_labels(fig) -> list:
    """The branch labels: every annotation but the note above the plot."""
    return [a for a in fig.layout.annotations if a.xref != "paper"]


def px_per_unit(fig) -> float:
    low, high = fig.layout.xaxis.range
    return figures_trees.PLOT_PX / (high - low)


@pytest.fixture(scope="module")
def city_tree() -> pd.DataFrame:
    frame, schema = frame_and_schema("city")
    model = DPRandomForestClassifier(epsilon=1.0, n_estimators=1, random_state=0)
    return treeviz.structure_nodes(model.fit_encoded(encode(frame, schema), schema), 0)


def test_many_valued_split_labels_every_branch_without_overprinting(city_tree):
    assert list(city_tree["split"])[0] == "city" and city_tree["is_leaf"].sum() == 8
    fig = figures_trees.node_link_figure(city_tree, ["no", "yes"], diagnostics=False, tree=1)
    labels = edge_labels(fig)
    assert [a.hovertext for a in labels] == [f"city = {c}" for c in CITIES]
    # Eight values one unit apart leave too little room flat ("Bosto…"): they stand
    # vertical, side by side at least a line of text apart, each whole or cut with "…".
    assert {a.textangle for a in labels} == {-90}
    xs = np.sort([a.x for a in labels]) * px_per_unit(fig)
    assert np.diff(xs).min() >= figures_trees.EDGE_FONT
    for label, city in zip(labels, CITIES):
        assert label.text == city or (
            label.text.endswith("…") and city.startswith(label.text[:-1])
        )
    assert sum(a.text == c for a, c in zip(labels, CITIES)) >= 7  # the figure grew for them
    # Between the depths: the vertical text stays clear of the split labels at both ends.
    depth = int(city_tree["depth"].max())
    top = fig.layout.margin.t
    level_px = (fig.layout.height - top - 70) / (depth + 1.2)
    longest = max(len(a.text) for a in labels) * figures_trees.CHAR_PX
    assert longest <= level_px - 2 * figures_trees.LABEL_CLEAR_PX
    root = next(t for t in fig.data if (t.name or "").startswith("split")).customdata[0]
    assert "branches: " + " · ".join(CITIES) in root  # the whole list on the node's hover


def test_few_short_values_lie_flat_and_whole():
    frame, schema = frame_and_schema("population")
    model = DPRandomForestClassifier(epsilon=1.0, n_estimators=1, random_state=0)
    nodes = treeviz.structure_nodes(model.fit_encoded(encode(frame, schema), schema), 0)
    fig = figures_trees.node_link_figure(nodes, ["no", "yes"], diagnostics=False, tree=1)
    labels = edge_labels(fig)
    assert [a.text for a in labels] == list(PLACES) and {a.textangle for a in labels} == {0}
    # Flat labels on one level: their boxes do not overlap.
    boxes = sorted((a.x * px_per_unit(fig), len(a.text) * figures_trees.CHAR_PX) for a in labels)
    for (x0, w0), (x1, w1) in zip(boxes, boxes[1:]):
        assert x0 + w0 / 2 <= x1 - w1 / 2


@pytest.fixture(scope="module")
def boost_nodes() -> pd.DataFrame:
    frame, schema = frame_and_schema("population", "city")
    # noise_seed: a replayable fit, so that the drawn tree is the same on every run.
    model = DPBoostClassifier(
        epsilon=5.0,
        n_estimators=1,
        trees_per_ensemble=1,
        max_depth=2,
        random_state=0,
        noise_seed=0,
    ).fit_encoded(encode(frame, schema), schema)
    return treeviz.boost_nodes(model, 0, 0)


def test_one_hot_splits_name_the_value_and_label_both_branches(boost_nodes):
    fig = figures_trees.boost_tree_figure(
        boost_nodes, diagnostics=False, name="yes vs rest · tree 1", positive="yes"
    )
    splits = next(t for t in fig.data if (t.name or "").startswith("split"))
    inner = boost_nodes[~boost_nodes["is_leaf"]]
    assert not any(t.endswith("= ?") for t in splits.text)
    labels = edge_labels(fig)
    assert len(labels) == len(boost_nodes) - 1  # every branch of a one-hot tree
    rules = [a.hovertext for a in labels]
    for (_, node), text, hover in zip(inner.iterrows(), splits.text, splits.customdata):
        value = node["split"]
        left, right = boost_nodes.loc[boost_nodes["parent"] == node["node"], "edge"]
        tested = left.split(" ≠ ", 1)[1]
        assert left == f"{value} ≠ {tested}" and right == f"{value} = {tested}"
        assert text == left and f"left branch: {left}" in hover
        assert left in rules and right in rules
    for label in labels:
        sign = "≠" if " ≠ " in label.hovertext else "="
        assert label.text.startswith(sign) and label.textangle == 0  # flat, sign first
        assert label.text == label.hovertext.split(" ", 1)[1] or label.text == sign


def test_long_titles_and_notes_wrap_inside_the_figure(boost_nodes):
    name = "Class model yes vs rest · ensemble 1 · tree 1 of 10"
    fig = figures_trees.boost_tree_figure(
        boost_nodes, diagnostics=False, name=name, positive="yes"
    )
    lines = fig.layout.title.text.split("<br>")
    assert lines[0] == name and len(lines) == 2
    assert lines[1] == figures_trees.BOOST_RELEASED_TITLE
    assert all(len(line) <= figures_trees.TITLE_CHARS for line in lines)
    note = fig.layout.annotations[0].text.split("<br>")
    assert len(note) >= 3 and all(len(line) <= figures_trees.NOTE_CHARS for line in note)
    # The top margin holds both: more lines, more room than a one-line title and note.
    assert fig.layout.margin.t >= 24 + 24 * len(lines) + 17 * len(note)
    short = figures_trees.node_link_figure(
        boost_nodes.assign(released_label="yes", released_counts=""),
        ["no", "yes"],
        diagnostics=False,
        tree=2,
    )
    assert "<br>" not in short.layout.title.text  # "Tree 2 · …" fits on one line
    assert figures_trees.wrap("a b c", 3) == "a b<br>c"
