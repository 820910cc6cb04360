"""Other DP libraries on a sweep's folds (dpviz.evaluation.peers, issue 30): the same folds
and ε values as the sweep, the schema's public bounds (never the data's), the guarantee
labels, the one diffprivlib shim, the message when a library is missing, and the stop."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpviz.evaluation import peers as peers
from dpviz.evaluation import sweep as sweep
from dpviz.evaluation.peers import (
    INSTALL_HINT,
    PEERS,
    SERIES_PEER,
    fit_peer,
    linear_matrix,
    missing,
    patch_sklearn_for_diffprivlib,
    run_peers,
    tree_matrix,
)
from dpviz.evaluation.sweep import BUDGET_COLUMNS, SweepCancelled, SweepGrid, run_sweep
from dpviz.figures.curves import curve_figure
from dpviz.figures.peers import add_peer_lines
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode
from tests.conftest import MIXED_SCHEMA, mixed_records

ROOT = Path(__file__).resolve().parent.parent.parent
DIFFPRIVLIB = ("diffprivlib_rf", "diffprivlib_lr", "diffprivlib_gnb")
# A domain much wider than the records' (0 to 10): bounds read from the data would differ.
WIDE = Schema(
    "label",
    ("other", "red", "small"),
    (Feature("size", "continuous", -50.0, 50.0), *MIXED_SCHEMA.features[1:]),
)


@pytest.fixture(scope="module")
def three():
    """240 records of three classes (a continuous and two discrete features)."""
    return encode(mixed_records(seed=1, n=240).astype({"size": float}), WIDE), WIDE


@pytest.fixture(scope="module")
def two():
    """The same records with two classes ("small" against the rest)."""
    frame = mixed_records(seed=1, n=240)
    frame["label"] = np.where(frame["label"] == "small", "small", "big")
    schema = Schema("label", ("big", "small"), WIDE.features)
    return encode(frame, schema), schema


def test_the_peers_run_on_the_sweeps_folds_at_its_epsilons(three, monkeypatch):
    encoded, schema = three
    used = {"sweep": [], "peers": []}

    original = sweep.subset

    def recording(where):
        def subset(data, rows):
            used[where].append(np.asarray(rows).copy())
            return original(data, rows)

        return subset

    monkeypatch.setattr(sweep, "subset", recording("sweep"))
    grid = SweepGrid(epsilons=[0.5, 4.0], n_estimators=[5], references=False)
    dp = run_sweep(encoded, schema, grid, folds=3, seed=7).results
    monkeypatch.setattr(peers, "subset", recording("peers"))
    run = run_peers(encoded, schema, [0.5, 4.0], ["diffprivlib_gnb"], folds=3, seed=7)
    # Every (train, test) pair, in order: the same records in the same folds.
    assert len(used["sweep"]) == len(used["peers"]) == 6
    for a, b in zip(used["sweep"], used["peers"]):
        np.testing.assert_array_equal(a, b)
    rows = run.results
    assert set(rows["series"]) == {SERIES_PEER}
    assert sorted(set(rows["epsilon"])) == [0.5, 4.0]
    assert sorted(set(zip(rows["repeat"], rows["fold"]))) == sorted(set(zip(dp.repeat, dp.fold)))
    # The same held-out records give the same trivial baseline, fold by fold.
    for column in ("majority_accuracy", "majority_f1"):
        per_fold = dp.groupby("fold")[column].first()
        np.testing.assert_allclose(rows.groupby("fold")[column].first(), per_fold)
    # The sweep's columns, so that they join its frame and summary.
    assert set(dp.columns) <= set(rows.columns) | set(BUDGET_COLUMNS)


def test_diffprivlib_gets_the_schemas_bounds_and_never_warns_of_a_leak(three, monkeypatch):
    encoded, schema = three
    patch_sklearn_for_diffprivlib()
    models = importlib.import_module("diffprivlib.models")
    from diffprivlib.utils import PrivacyLeakWarning

    seen = {}
    for name in ("RandomForestClassifier", "GaussianNB"):
        cls = getattr(models, name)

        def fit(self, X, y, *a, _fit=cls.fit, _name=name, **k):
            seen[_name] = (np.array(self.bounds[0]), np.array(self.bounds[1]), X.min(0))
            return _fit(self, X, y, *a, **k)

        monkeypatch.setattr(cls, "fit", fit)
    for peer in DIFFPRIVLIB:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            proba = fit_peer(peer, 1.0, encoded, schema, random_state=0)(encoded)
        assert not [w for w in caught if issubclass(w.category, PrivacyLeakWarning)], peer
        assert proba.shape == (encoded.n_records, 3)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    low, high, _ = seen["RandomForestClassifier"]
    # size: the declared [-50, 50] (the records span 0 to 10); codes 0 … values − 1.
    np.testing.assert_array_equal(low, [-50.0, 0.0, 0.0])
    np.testing.assert_array_equal(high, [50.0, 2.0, 1.0])
    low, high, data_low = seen["GaussianNB"]
    np.testing.assert_array_equal(low, 0.0)
    np.testing.assert_array_equal(high, 1.0)
    # Scaled by the declared domain, not by the data's: 0 to 10 lands in [0.5, 0.6].
    assert data_low[0] >= 0.5
    X, norm = linear_matrix(encoded, schema)
    assert X.shape[1] == 1 + 3 + 2 and norm == pytest.approx(np.sqrt(3))
    assert 0.5 <= X[:, 0].min() and X[:, 0].max() <= 0.6
    _, (tlow, thigh) = tree_matrix(encoded, schema)
    assert list(tlow) == [-50.0, 0.0, 0.0] and list(thigh) == [50.0, 2.0, 1.0]


def test_dp_ebm_is_labelled_with_its_delta_and_gets_the_schemas_bounds(two, monkeypatch):
    encoded, schema = two
    from interpret import privacy as ebm

    seen = []
    original = ebm.DPExplainableBoostingClassifier.fit

    def fit(self, X, y, *a, **k):
        seen.append((self.privacy_bounds, self.delta, list(X.columns)))
        return original(self, X, y, *a, **k)

    monkeypatch.setattr(ebm.DPExplainableBoostingClassifier, "fit", fit)
    run = run_peers(encoded, schema, [1.0], ["dp_ebm"], folds=2, seed=0)
    assert len(run.results) == 2 and not run.notes
    assert seen and all(
        s == ({"size": (-50.0, 50.0)}, 1e-6, ["size", "colour", "shape"]) for s in seen
    )
    assert set(run.results["mechanism"]) == {"(ε, 1e-6)-DP"}
    assert set(run.results["delta"]) == {1e-6}
    assert PEERS["dp_ebm"].legend == "DP-EBM ((ε, 1e-6)-DP)"


def test_guarantee_labels_follow_the_library_and_the_schema(three):
    encoded, schema = three
    assert [PEERS[p].legend for p in DIFFPRIVLIB] == [
        "diffprivlib RF (ε-DP)",
        "diffprivlib LR (ε-DP)",
        "diffprivlib GNB (ε-DP)",
    ]
    run = run_peers(encoded, schema, [1.0, 10.0], ["diffprivlib_gnb"], folds=2)
    assert run.results["private"].all() and set(run.results["mechanism"]) == {"ε-DP"}
    summary = sweep.summarise(run.results)
    fig = add_peer_lines(curve_figure(summary), summary)
    assert "diffprivlib GNB (ε-DP)" in [t.name for t in fig.data]
    # A schema read from the data voids the guarantee; so does replayed noise.
    inferred = Schema(schema.label, schema.classes, schema.features, inferred=True)
    for schema_, seed in ((inferred, None), (schema, 3)):
        rows = run_peers(
            encoded, schema_, [1.0], ["diffprivlib_gnb"], folds=2, noise_seed=seed
        ).results
        assert not rows["private"].any()
        summary = sweep.summarise(rows)
        names = [t.name for t in add_peer_lines(curve_figure(summary), summary).data]
        assert "diffprivlib GNB (no guarantee: inferred schema or replayed noise)" in names
    # DP-EBM handles two classes only: left out with a note, the others run.
    run = run_peers(encoded, schema, [1.0], ["dp_ebm", "diffprivlib_gnb"], folds=2)
    assert set(run.results["algorithm"]) == {"diffprivlib_gnb"}
    assert run.notes == [
        "DP-EBM handles two classes only; this data has 3, so its line is left out"
    ]


def test_replayed_noise_replays_and_large_epsilon_learns(three):
    encoded, schema = three
    kwargs = {"folds": 2, "noise_seed": 11}
    a = run_peers(encoded, schema, [0.1, 10.0], DIFFPRIVLIB, **kwargs).results
    b = run_peers(encoded, schema, [0.1, 10.0], DIFFPRIVLIB, **kwargs).results
    cols = ["algorithm", "epsilon", "fold", "accuracy", "auc", "f1"]
    assert a[cols].equals(b[cols])
    # Fixed replayable seeds: a deterministic check. At ε = 10 naive Bayes on these
    # records (the label is size < 3, else colour red) beats always answering the majority.
    gnb = a[(a.algorithm == "diffprivlib_gnb") & (a.epsilon == 10.0)]
    assert (gnb["accuracy"] > gnb["majority_accuracy"] + 0.1).all()


def test_stopping_ends_after_the_current_fit_with_no_partial_result(three):
    encoded, schema = three
    calls = []
    with pytest.raises(SweepCancelled, match="after 1 of 8 fits"):
        run_peers(
            encoded,
            schema,
            [0.5, 1.0, 2.0, 4.0],
            ["diffprivlib_gnb"],
            folds=2,
            progress=lambda done, total, message: calls.append((done, total, message)),
            cancel=lambda: True,
        )
    assert calls == [(1, 8, "diffprivlib GNB: fold 1, ε = 0.5")]


def test_a_missing_library_is_one_line_saying_how_to_add_it(three, monkeypatch):
    encoded, schema = three
    real = importlib.import_module

    def absent(name, *a, **k):
        if name.split(".")[0] in ("diffprivlib", "interpret"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **k)

    monkeypatch.setattr(peers.importlib, "import_module", absent)
    line = missing(["diffprivlib_rf"])
    assert line == f"diffprivlib not installed: {INSTALL_HINT} adds the other libraries"
    assert missing() == (
        f"diffprivlib and interpret-core not installed: {INSTALL_HINT} adds the other libraries"
    )
    with pytest.raises(ImportError) as raised:
        run_peers(encoded, schema, [1.0], ["diffprivlib_gnb"], folds=2)
    assert str(raised.value) == line and "\n" not in line
    monkeypatch.setattr(peers.importlib, "import_module", real)
    assert missing() is None


def test_the_diffprivlib_shim_lives_in_one_place(monkeypatch):
    import sklearn.tree._tree as sk_tree

    monkeypatch.delattr(sk_tree, "DOUBLE", raising=False)
    monkeypatch.delattr(sk_tree, "DTYPE", raising=False)
    assert patch_sklearn_for_diffprivlib() is True
    assert sk_tree.DOUBLE is np.float64 and sk_tree.DTYPE is np.float32
    assert patch_sklearn_for_diffprivlib() is False
    # No other copy: bench/ imports this one.
    copies = [
        path.relative_to(ROOT).as_posix()
        for path in [*ROOT.glob("dpviz/**/*.py"), *ROOT.glob("bench/*.py")]
        if "DOUBLE = np.float64" in path.read_text()
        or "sk_tree.DOUBLE = getattr" in path.read_text()
    ]
    assert copies == ["dpviz/evaluation/peers.py"]
    bench = (ROOT / "bench" / "bench_core.py").read_text()
    assert "from dpviz.evaluation.peers import patch_sklearn_for_diffprivlib" in bench


def test_the_forests_epsilon_values_share_its_trees_and_redraw_leaves_as_diffprivlib(two):
    """forest_sweep: diffprivlib's own fit at the first ε; at the next, the same trees with
    every leaf drawn again from the same class counts. At ε = 10⁶ permute-and-flip returns
    the most frequent class (a deterministic check), so the redrawn leaves must equal
    diffprivlib's own leaves wherever a leaf's top count is unique: the counts are the ones
    diffprivlib's _FittingTree counted."""
    encoded, schema = two
    captured = []
    original = peers.fit_peer

    def keep(*a, **k):
        predict = original(*a, **k)
        captured.append([t.tree_.value.copy() for t in predict.model.estimators_])
        captured.append(predict.model)
        return predict

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(peers, "fit_peer", keep)
        probas = peers.forest_sweep([1e6, 1e6, 1e-6], encoded, encoded, schema, random_state=5)
    own, model = captured
    assert len(probas) == 3
    X, (low, high) = tree_matrix(encoded, schema)
    X = np.clip(X.astype(np.float32), low, high).astype(np.float32)
    part = (np.arange(len(X)) // (len(X) / 10)).astype(int)
    compared = 0
    # model now holds the last redraw (ε = 10⁻⁶); redo the ε = 10⁶ one to compare.
    again = peers.forest_sweep([1e6, 1e6], encoded, encoded, schema, random_state=5)
    np.testing.assert_allclose(again[0], probas[0])  # the same seed: the same first fit
    np.testing.assert_allclose(again[1], probas[1])
    for i, (tree, values) in enumerate(zip(model.estimators_, own)):
        leaves = tree.tree_.apply(X[part == i])
        counts = np.zeros((tree.tree_.node_count, 2))
        np.add.at(counts, (leaves, encoded.y[part == i]), 1.0)
        top = np.sort(counts, axis=1)
        unique = (counts.sum(axis=1) > 0) & (top[:, -1] > top[:, -2])
        # diffprivlib's own leaves at ε = 10⁶: the majority of the counts computed here.
        np.testing.assert_array_equal(
            values[unique, 0].argmax(axis=1), counts[unique].argmax(axis=1)
        )
        compared += int(unique.sum())
    assert compared >= 40  # seed 5: 47 leaves with a unique top count
    # The redraw at ε = 10⁶ predicts as diffprivlib's own fit did (up to tied leaves);
    # at ε = 10⁻⁶ the leaves are near-uniform draws: the predictions moved.
    assert np.mean(probas[1].argmax(1) == probas[0].argmax(1)) > 0.95
    assert not np.allclose(probas[2], probas[0])


def test_a_fresh_process_runs_the_forest_sweep_without_importing_diffprivlib_first():
    """A joblib worker starts clean: forest_sweep applies the shim before it imports
    diffprivlib (a fresh interpreter, as a worker is; fit_peer goes through the same
    ``_import``)."""
    import subprocess
    import sys

    code = (
        "from dpviz.evaluation.peers import forest_sweep\n"
        "from dpviz.tabular.encode import encode\n"
        "from tests.conftest import MIXED_SCHEMA, mixed_records\n"
        "e = encode(mixed_records(seed=1, n=120), MIXED_SCHEMA)\n"
        "print(len(forest_sweep([1.0, 2.0], e, e, MIXED_SCHEMA)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=180
    )
    assert out.returncode == 0, out.stderr[-800:]
    assert out.stdout.strip() == "2"
