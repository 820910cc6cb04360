"""The logic split off the pages into ``dpviz.app`` (issue 16): the forms' first values, the
Negotiate page's choices, the Data page's missing-value offer and what the Curves page's
view states for the lines shown; and the page layout Streamlit relies on (``pages/ui``
is never a page, no page or unit is long)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpviz.app import curves as app_curves
from dpviz.app import data as app_data
from dpviz.app import negotiate as app_negotiate
from dpviz.app import support as support
from dpviz.app import train as app_train
from dpviz.app.sweep import SKLEARN_DEFAULT_MAX_ROWS
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.figures.curves import EPS_DP
from dpviz.privacy.schema import Feature, Schema
from tests.conftest import NEGOTIATE_SWEEP

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "pages"
MAX_LINES = 200


# --- the forms' first values ---------------------------------------------------------------


def test_train_form_starts_on_the_forest_with_secret_noise():
    values = app_train.form_defaults(100)
    assert values["algorithm"] == "fletcher_islam" and values["eps"] == values["eps_slider"] == 1
    assert values["replay"] is False and values["folds"] == 3 and values["seed"] == 0
    # the defaults are valid settings of the algorithm they name
    settings = app_train.TrainSettings(
        algorithm=values["algorithm"], epsilon=values["eps"], folds=values["folds"]
    )
    assert settings.noise_seed is None
    assert app_train.nearest_epsilon(values["eps"]) == values["eps_slider"]


@pytest.mark.parametrize("form", [app_train.form_defaults, app_curves.form_defaults])
def test_scikit_learns_forest_is_ticked_only_on_small_data(form):
    assert form(SKLEARN_DEFAULT_MAX_ROWS)["sklearn"] is True
    assert form(SKLEARN_DEFAULT_MAX_ROWS + 1)["sklearn"] is False


def test_curves_form_defaults_are_a_sweep_the_page_can_run():
    values = app_curves.form_defaults(100)
    settings = app_curves.SweepSettings(
        eps_low=values["low"],
        eps_high=values["high"],
        per_decade=values["per_decade"],
        mechanisms=tuple(values["mechs"]),
        n_estimators=tuple(values["trees"]),
        depths=tuple(values["depths"]),
        data_splits=tuple(values["splits"]),
        folds=values["folds"],
        seed=values["seed"],
        algorithms=tuple(values["algorithms"]),
    )
    assert settings == app_curves.SweepSettings(folds=5)  # the module's own defaults
    app_curves.check(settings)
    assert settings.epsilons[0] == 0.01 and settings.epsilons[-1] == 10.0
    assert values["per_decade"] in app_curves.PER_DECADE
    assert set(values["trees"]) <= set(app_curves.TREE_CHOICES)


# --- Negotiate ---------------------------------------------------------------------------


def test_the_negotiate_sweep_takes_the_chosen_trees_and_folds_only():
    settings = app_negotiate.sweep_settings(25, 3)
    assert settings.n_estimators == (25,) and settings.folds == 3
    default = app_negotiate.DEFAULT_SWEEP
    assert dataclasses.replace(settings, n_estimators=default.n_estimators, folds=5) == default


def test_a_curve_dimension_is_offered_only_when_the_sweep_varied_it():
    choices = {
        "mechanism": ["permute_flip"],
        "n_estimators": [10, 50],
        "depth_rule": ["theorem2"],
        "data_split": ["disjoint", "shared"],
    }
    assert app_negotiate.offered_keys(choices) == ["mechanism", "n_estimators", "data_split"]
    one = {k: v[:1] for k, v in choices.items()}
    assert app_negotiate.offered_keys(one) == ["mechanism"]  # always offered, even alone
    assert set(app_negotiate.CURVE_LABELS) == set(app_negotiate.CURVE_KEYS)


def test_the_attackers_priors_are_probabilities_in_order():
    priors = app_negotiate.PRIORS
    assert list(priors) == sorted(priors) and 0 < priors[0] and priors[-1] < 1
    assert 0.5 in priors  # the page's first value


def test_the_chosen_epsilon_follows_the_suggestion_until_people_move_it():
    options = app_negotiate.chosen_options([0.5, 1.0, 2.0])
    follow = app_negotiate.follow_suggestion
    assert follow(None, None, options, 1.0)  # first visit: take the suggestion
    assert not follow(1.0, 1.0, options, 1.0)  # already on it
    assert not follow(2.0, 1.0, options, 1.0)  # moved by the people deciding: kept
    assert follow(2.0, 1.0, options, 0.5)  # the suggestion moved (a new target): follow it
    assert follow(5.0, 1.0, options, 1.0)  # not a swept ε (another sweep): reset
    assert not follow(None, None, options, None)  # no ε meets the target: "not chosen" stays


# --- Data ------------------------------------------------------------------------------------


def test_missing_values_are_offered_for_continuous_features_with_missing_cells():
    schema = Schema(
        "label",
        ("a", "b"),
        (
            Feature("x", "continuous", 0.0, 1.0, missing="low"),
            Feature("y", "continuous", 0.0, 1.0),
            Feature("z", "continuous", 0.0, 1.0, missing="low"),
            Feature("w", "continuous", 0.0, 1.0),
            Feature("c", "discrete", values=("p", "q")),
        ),
    )
    frame = pd.DataFrame(
        {
            "x": [0.1, np.nan],
            "y": [np.nan, 0.2],
            "z": [0.3, 0.4],
            "w": [0.5, 0.6],
            "c": ["p", None],
            "label": ["a", "b"],
        }
    )
    offer = app_data.missing_choice(frame, schema)
    assert offer.offered == ["x", "y"]  # a discrete feature keeps missing as a category
    assert offer.preset == ["x"]  # the schema file's rule, where cells are missing
    assert offer.kept == ["z"]  # the rule still holds where no cell is missing here
    assert app_data.missing_choice(frame.fillna(0.0), schema).offered == []


# --- Curves: what the view states for the lines shown ----------------------------------


@pytest.fixture(scope="module")
def sweep():
    return app_curves.run(support.prepare_demo(DEFAULT_DEMO), NEGOTIATE_SWEEP)


def test_risk_sentences_apply_only_when_a_shown_line_has_a_guarantee(sweep):
    lines = list(sweep.series())
    private = [s for s in lines if sweep.series_status(s) == EPS_DP]
    not_dp = [s for s in lines if sweep.series_status(s) != EPS_DP]
    assert private and not_dp
    assert sweep.guarantee_shown(lines) and sweep.guarantee_shown(private)
    assert not sweep.guarantee_shown(not_dp) and not sweep.guarantee_shown([])
    inferred = dataclasses.replace(sweep, schema_inferred=True)
    assert not inferred.guarantee_shown(lines)  # an inferred schema voids every guarantee


def test_the_ledger_shown_is_the_first_proven_forest_mechanism():
    first = app_curves.ledger_mechanism
    assert first(["fletcher_islam/smooth_em", "fletcher_islam/permute_flip"]) == "permute_flip"
    assert first(["fletcher_islam/smooth_em", "fletcher_islam/none"]) == "smooth_em"
    assert first(["jpw", "dpboost"]) is None and first([]) is None


# --- the layout ------------------------------------------------------------------------------


def test_only_the_registered_pages_sit_directly_in_pages():
    """Streamlit lists every ``pages/*.py`` as a page; its subfolders never. The shared
    rendering in ``pages/ui`` must stay a subfolder, and app.py registers every page."""
    registered = set(re.findall(r'st\.Page\("pages/(\w+\.py)"', (ROOT / "app.py").read_text()))
    assert {p.name for p in PAGES.glob("*.py")} == registered
    assert (PAGES / "ui" / "__init__.py").exists()


def test_the_app_registers_no_helper_as_a_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    scripts = {
        Path(str(info["script_path"])).resolve()
        for info in at._registered_pages.values()  # what st.navigation registered
        if info.get("script_path")
    }
    pages = {p for p in scripts if p.parent == PAGES.resolve()}
    assert len(pages) == 8 and all(p.parent.name != "ui" for p in scripts)
    at.switch_page("pages/train.py").run()  # a page that imports pages.ui runs
    assert not at.exception, at.exception


def _units(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, node.end_lineno - start + 1


def test_no_page_and_no_app_unit_is_long():
    files = [*PAGES.glob("*.py"), *(PAGES / "ui").glob("*.py")]
    long_pages = {p.name: n for p in files if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long_pages, f"pages over {MAX_LINES} lines: {long_pages}"
    sources = [*files, ROOT / "app.py", *(ROOT / "dpviz" / "app").glob("*.py")]
    long_units = {
        f"{path.name}:{name}": n for path in sources for name, n in _units(path) if n > MAX_LINES
    }
    assert not long_units, f"classes or functions over {MAX_LINES} lines: {long_units}"
