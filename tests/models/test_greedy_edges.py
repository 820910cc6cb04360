"""The greedy trees' bins at noisy quantiles (``split_points="quantile"``, issue 28; the
default is "uniform", the papers' equal widths).

From ε = 1 on a schema with a continuous feature, 5% of ε buys a noisy histogram of each
continuous feature (the release DPBoost's grown model makes, :mod:`dpviz.models.trees.edges`)
and the tree cuts that feature at the quantiles it shows; the rest of ε is the tree's. Here:
the counts against their booked law and a 4ε mutant refuted (the exact check of
``tests/privacy/test_ledger_entries.py``), the budget, the bins, the model file and what two
neighbouring files show.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.models import files
from dpviz.models.files.manifest import public_fields, unaccounted
from dpviz.models.greedy.budget import QUANTILE_FROM, edge_epsilon
from dpviz.models.greedy.estimator import DPDecisionTreeClassifier
from dpviz.models.registry import get_algorithm
from dpviz.models.trees.edges import EDGE_CELLS, edge_cells
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.evaluation.test_release_audit import replayed_keys  # noqa: F401 (a fixture)
from tests.privacy.test_ledger_entries import EDGES, law_holds, pit_discrete_laplace

SCHEMA = Schema(
    "label",
    ("no", "yes"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("col", "discrete", values=("r", "g", "b")),
    ),
)
DISCRETE = Schema("label", ("no", "yes"), (SCHEMA.features[1],))


def _frame(n: int, seed: int) -> pd.DataFrame:
    """``a`` skewed into the lowest tenth of its public domain; the label is a > 4 (10%
    flipped): eight equal-width bins put almost every record in the first."""
    rng = np.random.default_rng(seed)
    a = np.minimum(rng.exponential(5.0, n), 100.0)
    label = np.where((a > 4) ^ (rng.random(n) < 0.1), "yes", "no")
    return pd.DataFrame({"a": a, "col": rng.choice(["r", "g", "b"], n), "label": label})


FRAME = _frame(3000, 0)
X, Y = FRAME.drop(columns="label"), FRAME["label"]


def _fit(epsilon: float, seed: int | None = 1, frame=FRAME, **params):
    params = {"split_points": "quantile", **params}
    model = DPDecisionTreeClassifier(epsilon=epsilon, schema=SCHEMA, noise_seed=seed, **params)
    return model.fit(frame.drop(columns="label"), frame["label"])


def _transforms(n_fits: int, steps: int) -> np.ndarray:
    """Released − true cell counts of ``n_fits`` fits at ε = 1 (noise seeds 0, 1, …) as
    randomised probability integral transforms under the booked law (128 per fit)."""
    rng = np.random.default_rng(7)
    cells = edge_cells(encode(FRAME, SCHEMA), SCHEMA)
    true = np.bincount(cells[:, 0], minlength=EDGE_CELLS)
    out = []
    for seed in range(n_fits):
        model = _fit(1.0, seed, steps=steps)
        (entry,) = [e for e in model.ledger_.entries if e.query.startswith("noisy histograms")]
        out.append(pit_discrete_laplace(model.edge_counts_[0] - true, entry.epsilon, rng))
    return np.concatenate(out)


@pytest.mark.parametrize("steps", [1, 2])
def test_the_released_counts_follow_the_booked_law(steps):
    assert law_holds(_transforms(3, steps), 300)


@pytest.mark.parametrize("steps", [1, 2])
def test_counts_at_four_times_the_booked_epsilon_are_refuted(steps, monkeypatch):
    """The 4ε mutant (the same ledger, noise at 4·ε_q): its transforms pile up in the
    middle bins (each outer bin expects 30 of 300 under the booked law)."""
    EDGES(4.0)(monkeypatch)
    assert not law_holds(_transforms(3, steps), 300)


@pytest.mark.parametrize("steps", [1, 2])
def test_from_epsilon_1_the_histograms_are_booked_first_and_the_tree_gets_the_rest(steps):
    model = _fit(2.0, None, steps=steps)  # secret noise: the ledger states its total
    assert model.edge_epsilon_ == pytest.approx(0.1)
    queries = [g[0].query for g in model.ledger_.groups]
    at = next(i for i, q in enumerate(queries) if q.startswith("noisy histograms"))
    assert at < next(i for i, q in enumerate(queries) if q.startswith("noisy class counts"))
    assert model.ledger_.groups[at][0].epsilon == pytest.approx(0.1)
    assert model.ledger_.epsilon_total == pytest.approx(2.0)
    assert model.budget_.epsilon == pytest.approx(1.9)
    assert model.budget_.root == pytest.approx(0.19)
    assert model.edge_counts_.shape == (1, EDGE_CELLS)
    assert model.bin_edges_.shape == (1, model.n_bins - 1)
    # The edges follow the skew: the records' low cells get most of them.
    assert np.sum(model.bin_edges_[0] <= EDGE_CELLS // 10) >= 5


def test_below_epsilon_1_uniform_and_all_discrete_data_spend_nothing_on_edges():
    for model in (
        _fit(QUANTILE_FROM * 0.99),
        _fit(5.0, split_points="uniform"),
        DPDecisionTreeClassifier(epsilon=5.0, schema=DISCRETE, noise_seed=1).fit(X[["col"]], Y),
    ):
        assert model.edge_epsilon_ == 0 and model.bin_edges_ is None
        assert model.edge_counts_ is None
        assert not any(g[0].query.startswith("noisy histograms") for g in model.ledger_.groups)
    assert edge_epsilon(1.0, "quantile", 1) == 0.05
    assert edge_epsilon(1.0, "quantile", 0) == edge_epsilon(1.0, "uniform", 3) == 0.0


def test_a_skewed_feature_is_cut_where_its_records_are():
    """With equal widths all but a few records share a's first bin and the tree cannot
    see a > 4; at the noisy quantiles it can (replayable seeds, the same for both)."""
    test = _frame(3000, 1)
    for seed in range(3):
        quantile = _fit(5.0, seed)
        uniform = _fit(5.0, seed, split_points="uniform")
        acc_q = np.mean(quantile.predict(test.drop(columns="label")) == test["label"])
        acc_u = np.mean(uniform.predict(test.drop(columns="label")) == test["label"])
        assert acc_q > 0.85 > acc_u


def test_the_default_is_uniform_and_bad_values_are_refused():
    for name in ("friedman_schuster", "dpea"):
        assert get_algorithm(name).defaults()["split_points"] == "uniform"
        model = get_algorithm(name).make(5.0, schema=SCHEMA).fit(X, Y)
        assert model.edge_epsilon_ == 0 and model.bin_edges_ is None
    with pytest.raises(ValueError, match="split_points must be one of"):
        DPDecisionTreeClassifier(split_points="median", schema=SCHEMA).fit(X, Y)


def test_a_file_replays_the_edges_and_refuses_edges_its_parameters_do_not_book():
    model = _fit(5.0, None)
    text = files.release(model).to_json()
    doc = json.loads(text)
    assert doc["edge_cells"] == EDGE_CELLS and len(doc["bin_edges"]) == 1
    back = files.ReleasedTree.from_json(text)
    assert unaccounted(doc) == []
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    np.testing.assert_allclose(back.predict_proba(X), model.predict_proba(X))
    assert "Noisy histograms of the 1 continuous feature" in back.meta["privacy"]["summary"]
    # Edges without their booked histograms, or booked histograms without edges.
    uniform = {**doc, "params": {**doc["params"], "split_points": "uniform"}}
    without = {k: v for k, v in doc.items() if k not in ("bin_edges", "edge_cells")}
    for broken in (uniform, without):
        with pytest.raises(ValueError, match="bin_edges"):
            files.ReleasedTree.from_document(broken)
    with pytest.raises(ValueError, match="bin_edges"):
        files.ReleasedTree.from_document({**doc, "bin_edges": [[3, 2, 1, 4, 5, 6, 7]]})


def test_a_file_written_before_split_points_reads_as_equal_widths():
    """Older tree files have no ``split_points``: their ledger books no histograms."""
    model = _fit(5.0, None, split_points="uniform")
    doc = json.loads(files.release(model).to_json())
    del doc["params"]["split_points"]
    back = files.ReleasedTree.from_document(doc)
    assert back.meta["privacy"]["epsilon_total"] == pytest.approx(5.0)
    np.testing.assert_array_equal(back.predict(X), model.predict(X))


def test_neighbouring_files_differ_only_in_released_fields():
    """Files fitted on D and on D plus one record (fresh secret noise, the same public
    schema and settings) agree on every field the manifest calls public, and both list
    their edges."""
    extra = pd.DataFrame([{"a": 50.0, "col": "g", "label": "yes"}])
    doc = json.loads(files.release(_fit(5.0, None)).to_json())
    doc1 = json.loads(
        files.release(_fit(5.0, None, pd.concat([FRAME, extra], ignore_index=True))).to_json()
    )
    assert unaccounted(doc) == [] and unaccounted(doc1) == []
    assert public_fields(doc) == public_fields(doc1)
    assert "bin_edges" in doc and "bin_edges" in doc1


@pytest.mark.parametrize("algorithm", ["friedman_schuster", "dpea"])
@pytest.mark.usefixtures("replayed_keys")
def test_the_whole_release_audit_reads_the_edges_and_stays_within_the_ledger(algorithm):
    """The defaults audit with ``split_points="quantile"`` (``dpviz audit --release
    --param split_points=quantile``): at ε = 1 it also reads x's cell of the histogram
    of ``size`` (D's 40 records against D' = D ∪ {x}); its bound stays within the ledger.
    Keys replayed as in tests/evaluation/test_release_audit.py (a fresh private key per
    fit, the same on every run)."""
    from dpviz.evaluation.release_audit import audit_release

    params = {"split_points": "quantile"}
    result = audit_release(algorithm, n_runs=100, confidence=0.999, params=params)
    assert result.params == params and result.ledger_epsilon == pytest.approx(1.0)
    assert "bin edges" in result.reads
    assert result.consistent is True, result


def test_the_train_preview_says_where_the_bins_come_from():
    from dpviz.app.preview import structure_preview

    def text(split_points: str, epsilon: float) -> str:
        params = {"split_points": split_points}
        return structure_preview(SCHEMA, 5000, "friedman_schuster", params, epsilon).text

    assert "quantiles of its noisy histogram (ε = 0.5" in text("quantile", 10.0)
    assert "(ε − 0.5) / " in text("quantile", 10.0)
    for quiet in (text("quantile", 0.5), text("uniform", 10.0)):
        assert "8 public bins" in quiet and "quantiles" not in quiet


def test_a_sweep_cuts_at_the_quantiles_from_epsilon_1():
    """The Curves sweep fits the option at each ε: equal widths below ε = 1 (the same
    accuracy as "uniform"), noisy quantiles from it (the skewed a > 4 becomes visible)."""
    from dpviz.evaluation.sweep import run_sweep
    from dpviz.evaluation.sweep_grid import SweepGrid
    from dpviz.tabular.encode import encode

    encoded = encode(FRAME, SCHEMA)
    accuracy = {}
    for split_points in ("uniform", "quantile"):
        grid = SweepGrid(
            epsilons=[0.5, 5.0],
            algorithms=["friedman_schuster"],
            presets={"friedman_schuster": {"split_points": split_points}},
            references=False,
        )
        summary = run_sweep(encoded, SCHEMA, grid, folds=3, noise_seed=4).summary
        accuracy[split_points] = dict(zip(summary["epsilon"], summary["accuracy_mean"]))
    assert accuracy["quantile"][0.5] == accuracy["uniform"][0.5]
    assert accuracy["quantile"][5.0] > 0.8 > 0.7 > accuracy["uniform"][5.0]
