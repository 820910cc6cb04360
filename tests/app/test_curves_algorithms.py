"""Several algorithms on one Curves sweep (issue 7): the engine's tidy frame with an
``algorithm`` column, the same folds for every algorithm, each algorithm's privacy status,
the figure's one line per algorithm, the page (AppTest) and the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import support as support
from dpviz.evaluation import sweep as sweep
from dpviz.evaluation import sweep_points
from dpviz.evaluation.sweep import (
    SERIES_DP,
    SERIES_HGB,
    SERIES_NONPRIVATE,
    SERIES_SKLEARN,
    SweepGrid,
    fold_splits,
    run_sweep,
)
from dpviz.evaluation.synthetic import make_synth
from dpviz.figures.curves import (
    APPROXIMATE,
    EPS_DP,
    NOT_DP,
    SPARE_STYLES,
    algorithm_style,
    curve_figure,
    privacy_status,
)
from dpviz.models import registry as registry
from dpviz.models.registry import get_algorithm
from dpviz.tabular.encode import encode

ROOT = Path(__file__).resolve().parent.parent.parent
FI = "fletcher_islam"
METRIC_COLUMNS = ["repeat", "fold", "epsilon", "accuracy", "auc", "f1"]
DPEA_HAS_MCMC = hasattr(get_algorithm("dpea"), "status")


@pytest.fixture(scope="module")
def synth():
    frame, schema = make_synth("SynthF", 600, seed=0)
    return encode(frame, schema), schema


def lines(fig) -> dict:
    return {t.name: t for t in fig.data if t.mode == "lines+markers"}


# --- the engine: one tidy frame, the same folds ------------------------------------------


def test_several_algorithms_make_one_tidy_frame_with_references_once_per_fold(synth):
    encoded, schema = synth
    grid = SweepGrid(
        epsilons=[0.5, 2.0],
        n_estimators=[10],
        mechanisms=["permute_flip", "smooth_em"],
        algorithms=[FI, "jpw", "friedman_schuster", "dpboost"],
        references={SERIES_NONPRIVATE, SERIES_HGB},
    )
    results = run_sweep(encoded, schema, grid, folds=2, seed=3).results
    dp = results[results.series == SERIES_DP]
    assert set(dp.algorithm) == {FI, "jpw", "friedman_schuster", "dpboost"}
    per_algorithm = dp.groupby("algorithm").size()
    assert per_algorithm[FI] == 2 * 2 * 2  # mechanisms × ε × folds
    assert (per_algorithm.drop(FI) == 2 * 2).all()  # ε × folds
    assert len(dp) == grid.n_points * 2
    # references: once per fold, never per ε; HistGradientBoosting because of dpboost
    hgb = results[results.series == SERIES_HGB]
    assert sorted(hgb.fold) == [0, 1] and np.isinf(hgb.epsilon).all()
    nonprivate = results[results.series == SERIES_NONPRIVATE]
    assert sorted(nonprivate.algorithm) == [FI, FI, "jpw", "jpw"]
    assert SERIES_SKLEARN not in set(results.series)
    summary = run_sweep(encoded, schema, grid, folds=2, seed=3).summary
    assert {"algorithm", "accuracy_mean", "accuracy_std", "private"} <= set(summary.columns)
    assert not summary[summary.series != SERIES_DP].private.any()


def test_every_algorithm_sees_the_same_folds(synth, monkeypatch):
    encoded, schema = synth
    a = fold_splits(encoded.y, 3, 1, seed=7)
    b = fold_splits(encoded.y, 3, 1, seed=7)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    c = fold_splits(encoded.y, 3, 1, seed=8)
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a, c))

    # one split per sweep, whatever the number of algorithms
    calls = []
    real = sweep.fold_splits
    monkeypatch.setattr(
        sweep, "fold_splits", lambda *args: calls.append(args) or real(*args), raising=True
    )
    names = [FI, "jpw", "dpboost"]
    grid = SweepGrid(epsilons=[1.0], n_estimators=[10], algorithms=names, references=False)
    together = run_sweep(encoded, schema, grid, folds=3, seed=7, noise_seed=7).results
    assert len(calls) == 1
    # ... and each algorithm alone gives exactly its rows of the joint sweep: the folds
    # and per-fold seeds do not depend on which algorithms run beside it
    for name in names:
        alone = run_sweep(
            encoded,
            schema,
            SweepGrid(epsilons=[1.0], n_estimators=[10], algorithms=[name], references=False),
            folds=3,
            seed=7,
            noise_seed=7,
        ).results
        mine = together[together.algorithm == name].reset_index(drop=True)
        pd.testing.assert_frame_equal(alone[METRIC_COLUMNS], mine[METRIC_COLUMNS])


def test_reference_choice_is_checked_and_hgb_needs_dpboost():
    assert SweepGrid(epsilons=[1.0]).references == frozenset(sweep.REFERENCE_SERIES)
    assert SweepGrid(epsilons=[1.0], references=False).references == frozenset()
    only_fi = SweepGrid(epsilons=[1.0], references={SERIES_HGB})
    assert not only_fi.wants(SERIES_HGB)
    boost = SweepGrid(epsilons=[1.0], algorithms=["dpboost"], references={SERIES_HGB})
    assert boost.wants(SERIES_HGB) and not boost.wants(SERIES_SKLEARN)
    with pytest.raises(ValueError, match="unknown reference 'xgboost'"):
        SweepGrid(epsilons=[1.0], references={"xgboost"})
    # a repeated algorithm runs once
    assert SweepGrid(epsilons=[1.0], algorithms=[FI, "jpw", FI]).algorithms == (FI, "jpw")


def test_greedy_diagnostics_in_the_sweep_equal_the_models_own(synth):
    """The sweep computes a greedy tree's flip diagnostics over its non-empty leaves only
    (an empty leaf cannot flip): the numbers are the model's own."""
    encoded, schema = synth
    for name, params in (("friedman_schuster", {"max_depth": 3}), ("dpea", {"max_depth": 4})):
        model = get_algorithm(name).make(0.3, random_state=1, **params)
        model.fit_encoded(encoded, schema)
        fast, own = sweep_points._refit_diagnostics(model), model.diagnostics_
        for key in ("empty_leaf_pct", "flipped_leaf_pct", "expected_flip_pct"):
            assert fast[key] == pytest.approx(own[key], rel=1e-9, abs=1e-12), (name, key)


# --- privacy status -----------------------------------------------------------------------


def test_privacy_labels_come_from_the_registry():
    assert privacy_status(FI) == EPS_DP
    assert privacy_status(FI, {"mechanism": "smooth_em"}) == NOT_DP
    assert privacy_status(FI, {"mechanism": "none"}) == NOT_DP
    for name in ("jpw", "friedman_schuster", "dpboost"):
        assert privacy_status(name) == EPS_DP
    assert privacy_status("dpea", {"steps": 2}) == EPS_DP
    options = app_curves.algorithm_options()
    assert list(options) == list(registry.ALGORITHMS)
    assert "NOT DP with mechanism smooth_em" in options[FI]
    assert options["jpw"].endswith("[ε-DP]")


@pytest.mark.skipif(not DPEA_HAS_MCMC, reason="the registry has no DPEA MCMC steps (d > 2)")
def test_dpea_with_more_than_two_layers_is_approximate():
    assert privacy_status("dpea", {"steps": 3}) == APPROXIMATE
    assert "approximate — NOT DP with steps 3" in app_curves.algorithm_options()["dpea"]


def test_a_new_registry_entry_is_offered_with_its_status_and_a_style(monkeypatch):
    jpw = get_algorithm("jpw")
    extra = dataclasses.replace(jpw, id="toy_mcmc", name="Toy (MCMC)", privacy="approximate")
    if hasattr(jpw, "privacy_for"):
        extra = dataclasses.replace(extra, privacy_for=None)
    monkeypatch.setitem(registry.ALGORITHMS, "toy_mcmc", extra)
    assert privacy_status("toy_mcmc") == APPROXIMATE
    assert app_curves.algorithm_options()["toy_mcmc"].endswith("[approximate — NOT DP]")
    assert algorithm_style("toy_mcmc") in SPARE_STYLES


# --- the Curves logic and figure ----------------------------------------------------------


@pytest.fixture(scope="module")
def multi() -> app_curves.SweepRun:
    settings = app_curves.SweepSettings(
        eps_low=0.1,
        eps_high=1.0,
        per_decade=3,
        mechanisms=("permute_flip", "smooth_em"),
        depths=("theorem2",),
        n_estimators=(10, 20),
        folds=2,
        algorithms=(FI, "jpw", "friedman_schuster", "dpboost"),
        presets={"friedman_schuster": {"max_depth": 3}, "dpboost": {"n_estimators": 10}},
    )
    seen = []
    run = app_curves.run(
        support.prepare_demo("demo_csv"), settings, progress=lambda f, m: seen.append((f, m))
    )
    run.progress_seen = seen
    return run


FIXED = {"n_estimators": 20, "depth_rule": "theorem2", "data_split": "disjoint"}


def test_run_reports_progress_per_algorithm_and_fold(multi):
    fractions = [f for f, _ in multi.progress_seen]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    messages = [m for _, m in multi.progress_seen]
    assert "dpboost (4 of 4): fold 2 of 2 done" in messages
    assert multi.settings.n_configurations == 4 * (2 * 2 + 3)


def test_the_page_logic_runs_each_algorithm_on_the_same_folds_as_one_joint_sweep(multi):
    data = support.prepare_demo("demo_csv")
    encoded = encode(data.frame, data.schema, training=True)
    # Replayed noise (NOT private) on both sides, so that the rows can be compared exactly.
    s = dataclasses.replace(multi.settings, noise_seed=11)
    # The joint grid has the page's whole forest grid: its depth rule too. The default,
    # records, sizes the forest from the count, and below ε = 1 that caps the prior at ε/4
    # where the page's theorem2 forest of 10 or 20 trees keeps the 0.08 floor.
    joint = run_sweep(
        encoded,
        data.schema,
        SweepGrid(
            epsilons=s.epsilons,
            n_estimators=list(s.n_estimators),
            depths=list(s.depths),
            data_splits=list(s.data_splits),
            mechanisms=list(s.mechanisms),
            algorithms=list(s.algorithms),
            presets=dict(s.presets),
            references=False,
        ),
        folds=s.folds,
        seed=s.seed,
        noise_seed=s.noise_seed,
    ).results
    ours = app_curves.run(data, s).result.results
    ours = ours[ours.series == SERIES_DP]
    keys = ["algorithm", "mechanism", "n_estimators", "epsilon", "repeat", "fold"]
    a = ours.sort_values(keys).reset_index(drop=True)
    b = joint.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(
        a[keys + ["accuracy", "auc", "f1"]], b[keys + METRIC_COLUMNS[3:]]
    )
    assert set(a.depth_rule[a.algorithm == FI]) == {"theorem2"}
    pd.testing.assert_series_equal(a.prior_epsilon, b.prior_epsilon)


def test_sweep_run_lists_series_statuses_and_candidates(multi):
    assert multi.multi and multi.axes() == ["epsilon", "n_estimators"]
    assert multi.values("n_estimators") == [10, 20]  # the forest's grid only
    assert multi.values("epsilon") == [0.1, 0.2, 0.5, 1.0]
    assert multi.series() == {
        "fletcher_islam/permute_flip": "fletcher_islam · permute_flip (ε-DP)",
        "fletcher_islam/smooth_em": "fletcher_islam · smooth_em (NOT DP)",
        "jpw": "jpw (ε-DP)",
        "friedman_schuster": "friedman_schuster (ε-DP)",
        "dpboost": "dpboost (ε-DP)",
    }
    assert multi.describe().startswith(
        "4 ε values × 4 algorithms: fletcher_islam (2 mechanisms × 2 tree counts), jpw, "
        "friedman_schuster, dpboost, on the same folds, 2-fold CV"
    )
    table = multi.algorithm_table()
    assert list(table.algorithm) == [FI, "jpw", "friedman_schuster", "dpboost"]
    assert table.privacy[0] == "ε-DP (permute_flip) / NOT DP (smooth_em)"
    assert "max_depth 3" in table.settings[2] and "n_estimators 10" in table.settings[3]
    candidate = multi.candidate(0.5, "accuracy", FIXED)
    assert list(candidate.columns)[0] == "algorithm"
    assert list(candidate.guarantee) == ["0.5-DP", "NONE (not DP)", "0.5-DP", "0.5-DP", "0.5-DP"]
    changes = list(candidate["vs non-private"])
    assert changes[0].endswith("vs non-private forest")
    assert changes[1].endswith("vs non-private forest")
    assert changes[2].endswith("vs jpw trees, true majority labels")
    assert changes[3] == "—"  # scikit-learn's forest was not asked for
    assert changes[4].endswith("vs scikit-learn HistGradientBoosting")
    only = multi.candidate(0.5, "f1", FIXED, series=["dpboost"])
    assert list(only.algorithm) == ["dpboost (ε-DP)"]


def test_figure_draws_one_line_and_band_per_algorithm_with_privacy_labels(multi):
    fig = curve_figure(
        multi.summary,
        metric="accuracy",
        fixed=FIXED,
        statuses={**multi.statuses, "friedman_schuster": APPROXIMATE},  # as if MCMC ran
        folds=2,
        highlight_epsilon=0.5,
    )
    drawn = lines(fig)
    assert list(drawn) == [
        "fletcher_islam · permute_flip (ε-DP)",
        "fletcher_islam · smooth_em (NOT DP)",
        "jpw (ε-DP)",
        "friedman_schuster (approximate — NOT DP)",
        "dpboost (ε-DP)",
    ]
    assert drawn["jpw (ε-DP)"].line.dash == "solid"
    assert drawn["fletcher_islam · smooth_em (NOT DP)"].line.dash == "dash"
    assert drawn["friedman_schuster (approximate — NOT DP)"].line.dash == "dashdot"
    # one band per line, in the line's legend group; every line has its own colour/marker
    bands = [t for t in fig.data if t.fill == "toself"]
    assert sorted(b.legendgroup for b in bands) == sorted(drawn)
    styles = {(t.line.color, t.marker.symbol) for t in drawn.values()}
    assert len(styles) == len(drawn)
    for trace in drawn.values():
        assert list(trace.x) == [0.1, 0.2, 0.5, 1.0]
    summary = multi.summary
    boost = summary[(summary.series == SERIES_DP) & (summary.algorithm == "dpboost")]
    assert np.allclose(drawn["dpboost (ε-DP)"].y, 100 * boost.sort_values("epsilon").accuracy_mean)
    references = {t.name for t in fig.data if t.mode == "lines"}
    majority = 100 * summary["majority_accuracy_mean"].iloc[0]
    assert references == {
        "non-private forest (NOT DP)",
        "jpw trees, true majority labels (NOT DP)",
        "scikit-learn HistGradientBoosting (NOT DP)",
        f"majority class (trivial baseline): {majority:.1f}%",
    }
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text.startswith("ε")
    assert fig.layout.yaxis.title.text == "Accuracy on held-out folds (%)"
    assert "4 algorithms on the same folds" in fig.layout.title.text
    note = fig.layout.annotations[0].text
    assert "the same folds for every algorithm" in note and "dash-dot: approximate" in note


def test_view_changes_only_filter_the_summary(multi):
    fig = curve_figure(
        multi.summary, metric="f1", fixed=FIXED, series=["jpw", "dpboost"], highlight="dpboost"
    )
    drawn = lines(fig)
    assert list(drawn) == ["jpw (ε-DP)", "dpboost (ε-DP)"]
    assert drawn["dpboost (ε-DP)"].line.width > drawn["jpw (ε-DP)"].line.width
    assert drawn["jpw (ε-DP)"].opacity < 1 == drawn["dpboost (ε-DP)"].opacity
    names = {t.name for t in fig.data if t.mode == "lines"}
    assert "non-private forest (NOT DP)" not in names  # the forest is not shown
    assert fig.layout.yaxis.title.text.startswith("F1")
    # against the trees only the forest has a grid
    trees = lines(curve_figure(multi.summary, x="n_estimators", fixed={**FIXED, "epsilon": 0.5}))
    assert set(trees) == {
        "fletcher_islam · permute_flip (ε-DP)",
        "fletcher_islam · smooth_em (NOT DP)",
        "non-private forest (NOT DP)",  # it varies with the trees too
    }


def test_settings_errors_are_messages():
    data = support.prepare_demo("demo_csv")
    with pytest.raises(ValueError, match="at least one algorithm"):
        app_curves.run(data, app_curves.SweepSettings(algorithms=()))
    with pytest.raises(ValueError, match="unknown algorithm 'magic'"):
        app_curves.run(data, app_curves.SweepSettings(algorithms=("magic",)))
    with pytest.raises(ValueError, match="settings were given for jpw"):
        app_curves.run(data, app_curves.SweepSettings(presets={"jpw": {"n_estimators": 5}}))
    with pytest.raises(ValueError, match="no parameter 'trees'"):
        app_curves.grids(
            app_curves.SweepSettings(algorithms=("jpw",), presets={"jpw": {"trees": 5}})
        )
    # the forest's grid is not needed when the forest is not chosen
    plan = app_curves.grids(app_curves.SweepSettings(algorithms=("jpw",), mechanisms=()))
    assert [name for name, _ in plan] == ["jpw"]


# --- the page ------------------------------------------------------------------------------


def key(name: str) -> str:
    return f"keep.{name}"


def test_curves_page_compares_two_algorithms_and_switches_the_metric():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/curves.py").run()
    assert not at.exception, at.exception
    picker = at.multiselect(key=key("curves.algorithms"))
    assert picker.value == [FI]  # the fast forest alone by default
    assert "dpboost" in picker.options[-1] or any("dpboost" in o for o in picker.options)
    picker.set_value([FI, "dpboost"]).run()
    assert not at.exception, at.exception
    status = "\n".join(str(m.value) for m in at.markdown)
    assert (
        "`fletcher_islam` · **ε-DP (laplace_counts, permute_flip) / NOT DP (smooth_em)**" in status
    )
    assert "`dpboost` · **ε-DP**" in status
    at.number_input(key=key("curves.dpboost.n_estimators")).set_value(10)
    for name, value in {
        "low": 0.1,
        "high": 1.0,
        "per_decade": 3,
        "trees": [10],
        "mechs": ["permute_flip", "smooth_em"],
        "folds": 2,
        "sklearn": False,
    }.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert not at.error
    sweep_run = at.session_state["dpviz.sweep"]
    assert sweep_run.settings.algorithms == (FI, "dpboost")
    assert sweep_run.settings.presets["dpboost"]["n_estimators"] == 10

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    names = [t.get("name") for t in spec["data"] if t.get("mode") == "lines+markers"]
    assert names == [
        "fletcher_islam · permute_flip (ε-DP)",
        "fletcher_islam · smooth_em (NOT DP)",
        "dpboost (ε-DP)",
    ]
    refs = {t.get("name") for t in spec["data"] if t.get("mode") == "lines"}
    assert "scikit-learn HistGradientBoosting (NOT DP)" in refs
    assert spec["layout"]["xaxis"]["type"] == "log"

    at.radio(key=key("curves.metric")).set_value("auc").run()
    at.selectbox(key=key("curves.highlight")).set_value("dpboost").run()
    assert not at.exception, at.exception
    assert at.session_state["dpviz.sweep"] is sweep_run  # the view never reruns the sweep
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["yaxis"]["title"]["text"].startswith("ROC AUC")
    widths = {
        t["name"]: t["line"]["width"] for t in spec["data"] if t.get("mode") == "lines+markers"
    }
    assert widths["dpboost (ε-DP)"] > widths["fletcher_islam · permute_flip (ε-DP)"]
    candidate = at.dataframe[-1].value
    assert list(candidate.columns)[0] == "algorithm" and len(candidate) == 3


@pytest.mark.skipif(not DPEA_HAS_MCMC, reason="the registry has no DPEA MCMC steps (d > 2)")
def test_curves_page_without_the_forest_says_an_approximate_algorithm_has_no_guarantee():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/curves.py").run()
    at.multiselect(key=key("curves.algorithms")).set_value(["dpea"]).run()
    at.number_input(key=key("curves.dpea.steps")).set_value(3).run()
    at.number_input(key=key("curves.dpea.mcmc_steps")).set_value(20).run()
    status = "\n".join(str(m.value) for m in at.markdown)
    assert "`dpea` · **approximate — NOT DP**" in status
    assert "grid of fletcher_islam, which is not chosen" in "\n".join(
        str(c.value) for c in at.caption
    )
    for name, value in {"low": 0.5, "high": 1.0, "per_decade": 3, "folds": 2}.items():
        at.get_by_key(key(f"curves.{name}")).set_value(value)
    at.checkbox(key=key("curves.sklearn")).uncheck()
    at.button[0].click().run()
    assert not at.exception, at.exception
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    (line,) = [t for t in spec["data"] if t.get("mode") == "lines+markers"]
    assert line["name"] == "dpea (approximate — NOT DP)" and line["line"]["dash"] == "dashdot"
    assert "No series shown carries a guarantee" in "\n".join(str(w.value) for w in at.warning)
    assert set(at.dataframe[-1].value["guarantee"]) == {"NONE (approximate: MCMC)"}


# --- the command line ----------------------------------------------------------------------


def test_cli_sweeps_several_algorithms(tmp_path, capsys):
    from dpviz.cli import main

    frame, schema = make_synth("SynthA", 600, seed=0)
    data, schema_path = tmp_path / "d.csv", tmp_path / "s.json"
    frame.to_csv(data, index=False)
    schema_path.write_text(schema.to_json())
    out, summary = tmp_path / "r.csv", tmp_path / "s.csv"
    common = ["sweep", "--data", str(data), "--label", "label", "--schema", str(schema_path)]
    status = main(
        [
            *common,
            "--epsilons",
            "0.5,2",
            "--trees",
            "10",
            "--algorithm",
            "fletcher_islam, jpw,dpboost",
            "--folds",
            "2",
            "--quiet",
            "--out",
            str(out),
            "--summary",
            str(summary),
        ]
    )
    assert status == 0, capsys.readouterr().err
    results = pd.read_csv(out)
    dp = results[results.series == SERIES_DP]
    assert set(dp.algorithm) == {FI, "jpw", "dpboost"}
    assert (results.series == SERIES_HGB).sum() == 2  # once per fold
    assert set(pd.read_csv(summary).algorithm) >= {FI, "jpw", "dpboost"}
    status = main([*common, "--epsilons", "1", "--algorithm", "jpw,magic", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and err[-1].startswith("error: unknown algorithm 'magic'")
