"""The Teach and Negotiate pages through Streamlit's AppTest: widgets set, buttons
pressed, rendered elements checked (charts, numbers, NOT DP badges, the report's
content), and never an exception on the page.

The page logic is unit-tested in tests/test_app_teach_negotiate_logic.py and the
figures in tests/test_figures_teach.py; these tests check the wiring and what the user
is told.

How a page is opened: like tests/test_pages.py (app.py first, then ``switch_page``) once
app.py lists the page in its ``st.navigation``; until then AppTest refuses to switch to
an unregistered page, and the page file runs on its own with what app.py would have put
in the session (the frame flag and the default demo dataset).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.proto.Metric_pb2 import Metric as MetricProto
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from dpviz.app import curves as app_curves
from dpviz.app import support as support
from dpviz.app.session import DATA_KEY, FRAME_KEY, KEEP_PREFIX, SWEEP_KEY
from dpviz.evaluation.demos import DEFAULT_DEMO
from dpviz.evaluation.sweep import SERIES_NONPRIVATE, SweepResult
from dpviz.figures.common import majority_mean
from tests.conftest import NEGOTIATE_SWEEP
from tests.html_checks import network_urls
from tests.rare_data import rare_data

ROOT = Path(__file__).resolve().parent.parent.parent
APP = str(ROOT / "app.py")
TEACH, NEGOTIATE = "pages/teach.py", "pages/negotiate.py"
REPORT_NAME = re.compile(r"dpviz_decision_epsilon_.*\.html")


def key(name: str) -> str:
    return KEEP_PREFIX + name


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def values(array) -> list:
    """A trace's data array: plotly 6 sends numpy arrays as base64 typed arrays."""
    if isinstance(array, dict) and "bdata" in array:
        raw = base64.b64decode(array["bdata"])
        return np.frombuffer(raw, dtype=np.dtype(array["dtype"])).tolist()
    return list(array)


def titles(at: AppTest) -> list[str]:
    return [c["layout"].get("title", {}).get("text", "") for c in charts(at)]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def open_page(page: str, sweep: app_curves.SweepRun | None = None) -> AppTest:
    """The page as app.py shows it (the default demo loaded), optionally with a sweep."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    try:
        at.switch_page(page)
    except ValueError:  # not in app.py's navigation yet: the page file on its own
        at = AppTest.from_file(str(ROOT / page), default_timeout=60)
        at.session_state[FRAME_KEY] = True
        at.session_state[DATA_KEY] = support.prepare_demo(DEFAULT_DEMO)
    if sweep is not None:
        at.session_state[SWEEP_KEY] = sweep
    at.run()
    assert not at.exception, at.exception
    return at


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


# --- Teach --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def teach() -> AppTest:
    return open_page(TEACH)


def test_teach_shows_every_section_with_its_chart(teach):
    assert [h.value for h in teach.header] == [
        "1 · One leaf, every mechanism",
        "2 · The papers' tables, recomputed live",
        "3 · Why the 2017 mechanism is not DP",
        "4 · A tree grows",
    ]
    shown = titles(teach)
    assert len(shown) == 3
    assert shown[0].startswith("What each mechanism releases for this leaf")
    assert shown[1] == "Worst-case privacy loss of smooth_em (NOT DP), ε = 1"
    assert shown[2].startswith("1. The structure is drawn without the data")


def test_playground_has_every_mechanism_badged_and_the_gap_explained(teach):
    spec = charts(teach)[0]
    assert len([t for t in spec["data"] if t["type"] == "bar"]) == 6
    panels = [a["text"] for a in spec["layout"]["annotations"]]
    assert "smooth_em (NOT DP)" in panels and "none (NOT DP)" in panels
    assert "laplace_counts (ε-DP): noisy argmax" in panels
    markdown = texts(teach.markdown)
    assert ":red-badge[smooth_em: NOT DP]" in markdown
    assert ":green-badge[permute_flip: ε-DP]" in markdown
    cards = metrics(teach)
    # counts (5, 10) at ε = 0.5: j = 5, e^(−2.5) = 0.0821
    assert cards["Gap j"] == "5" and cards["Smooth sensitivity"] == "0.0821"
    assert "leads the runner-up A (5) by j = 5 records" in markdown
    assert "NOT differentially private" in markdown


def test_more_classes_and_a_draw_overlay_the_empirical_frequencies():
    at = open_page(TEACH)
    at.radio(key=key("teach.k")).set_value(3)
    run(at)
    at.number_input(key=key("teach.count2")).set_value(12)
    at.select_slider(key=key("teach.eps")).set_value(1.0)
    run(at)
    assert metrics(at)["Gap j"] == "2"  # (5, 10, 12): 12 − 10
    assert metrics(at)["Smooth sensitivity"] == "0.135"
    assert not [t for t in charts(at)[0]["data"] if t["type"] == "scatter"]
    at.button(key="teach.draw_button").click()
    run(at)
    diamonds = [t for t in charts(at)[0]["data"] if t["type"] == "scatter"]
    assert len(diamonds) == 6 and diamonds[0]["name"] == "drawn 1,000 times: share of draws"
    assert all(abs(sum(values(t["y"])) - 1.0) < 1e-9 for t in diamonds)
    first = values(diamonds[1]["y"])
    at.button(key="teach.draw_button").click()  # a new seed: new draws
    run(at)
    assert values([t for t in charts(at)[0]["data"] if t["type"] == "scatter"][1]["y"]) != first
    at.number_input(key=key("teach.count0")).set_value(30)
    run(at)
    assert not [t for t in charts(at)[0]["data"] if t["type"] == "scatter"]
    assert "press the button to draw again" in texts(at.caption)


def test_table2_and_table6_are_live_with_the_printed_values_beside(teach):
    table2, table6 = teach.table[0].value, teach.table[1].value
    assert list(table2["gap j"]) == [0, 1, 5, 10, 50, 100, 500]
    assert list(table6["f_A"]) == [5, 105, 0, 0, 10, 10]
    # The printed values ship inside the package: shown from any clone or install.
    assert list(table2["ε = 0.1 · printed"])[:2] == ["1.00000", "0.90483"]
    assert table2["ε = 0.1 · dpviz"].iloc[1] == "0.904837"
    assert list(table6["count_em (ε-DP) · printed"])[:3] == ["62.2", "62.2", "52.5"]
    assert "All 21 printed values of Table 2 and 12 of Table 6 agree" in texts(teach.caption)


def test_loss_map_marks_smooth_em_and_clears_the_proven_mechanisms():
    at = open_page(TEACH)
    assert ":red-badge[:material/gpp_bad: smooth_em: NOT DP]" in texts(at.markdown)
    assert "breaks it in 110 of 121 cells" in texts(at.error)
    assert metrics(at)["Leaves above ε"] == "110 of 121"
    marks = [t for t in charts(at)[1]["data"] if t["type"] == "scatter"][0]
    assert marks["name"].startswith("✕ loss above ε = 1") and len(values(marks["x"])) == 110
    assert "Naoise Holohan" in texts(at.markdown)  # the addendum story
    at.selectbox(key=key("teach.loss_mech")).set_value("permute_flip")
    at.slider(key=key("teach.loss_size")).set_value(6)
    run(at)
    assert "keeps every cell within it" in texts(at.success)
    assert metrics(at)["Leaves above ε"] == "0 of 49"
    assert ":green-badge[:material/verified_user: permute_flip: ε-DP]" in texts(at.markdown)
    at.selectbox(key=key("teach.loss_mech")).set_value("none")
    run(at)
    assert metrics(at)["Worst privacy loss"] == "∞"


def test_a_tree_grows_one_click_per_step_on_the_current_dataset():
    at = open_page(TEACH)
    assert "Grown on the current dataset, demo.csv" in texts(at.warning)
    assert "NOT private" in texts(at.warning)
    assert at.button(key="teach.walk_back").disabled
    expected = [
        "2. Training records fall into the leaves (counts: NOT private)",
        "3. Each leaf releases a noisy label",
        "4. A test record collects the tree's vote",
    ]
    for step, title in enumerate(expected, start=2):
        at.button(key="teach.walk_next").click()
        run(at)
        assert titles(at)[2].startswith(title)
        assert f"Step {step} of 4" in at.get("progress")[-1].proto.text
    assert at.button(key="teach.walk_next").disabled
    assert "Privacy ledger of this one-tree model" in texts(at.caption)
    at.button(key="teach.walk_back").click()
    run(at)
    table = at.dataframe[-1].value
    assert {"true_majority 🔒", "flip_probability 🔒", "released_label"} <= set(table.columns)
    assert "NOT private, never released" in texts(at.caption)
    at.button(key="teach.walk_again").click()
    run(at)
    assert titles(at)[2].startswith("1. The structure")
    assert at.session_state["teach.walk_seed"] == 1


def test_walk_with_a_not_dp_mechanism_is_badged():
    at = open_page(TEACH)
    at.selectbox(key=key("teach.walk_mech")).set_value("smooth_em")
    run(at)
    badges = [m for m in texts(at.markdown).splitlines() if "badge[" in m]
    assert sum("smooth_em: NOT DP" in b for b in badges) >= 2  # the loss map's and the walk's


# --- Negotiate ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep() -> app_curves.SweepRun:
    """The Negotiate tests' small sweep of the default demo (one mechanism NOT DP)."""
    return app_curves.run(support.prepare_demo(DEFAULT_DEMO), NEGOTIATE_SWEEP)


@pytest.fixture
def deferred(monkeypatch) -> dict:
    """The data callables of deferred download buttons, by file name: AppTest cannot
    click a download, so the test calls what the button would have sent."""
    captured = {}
    original = MediaFileManager.add_deferred

    def spy(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        captured[file_name] = (data_callable, mimetype)
        return original(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    return captured


def report_of(deferred: dict) -> str:
    names = [n for n in deferred if n and REPORT_NAME.fullmatch(n)]
    assert names, f"no decision report button among {list(deferred)}"
    build, mime = deferred[names[-1]]
    assert mime == "text/html"
    deferred.clear()  # the next run registers the button again
    return build()


def without_scripts(html: str) -> str:
    return re.sub(r"<script\b.*?</script>", "<script></script>", html, flags=re.DOTALL)


def test_negotiate_without_a_sweep_runs_one_here():
    at = open_page(NEGOTIATE)
    assert "no sweep in this session yet" in texts(at.info)
    assert not charts(at) and SWEEP_KEY not in at.session_state
    at.selectbox(key=key("negotiate.trees")).set_value(25)
    at.number_input(key=key("negotiate.folds")).set_value(2)
    at.button[0].click()
    run(at)
    sweep = at.session_state[SWEEP_KEY]
    assert sweep.settings.n_estimators == (25,) and sweep.settings.folds == 2
    assert sweep.settings.mechanisms == ("laplace_counts",)  # the default forest's
    assert "done in" in at.get("progress")[0].proto.text
    assert titles(at) == [
        "How much accuracy does each ε cost?",
        "What an attacker cannot do: error rates of guessing membership",
    ]
    run(at)  # the sweep stays: the page now uses it
    assert "Using this session's sweep" in texts(at.caption)


def test_acceptable_loss_gives_the_smallest_epsilon_on_the_curve(sweep):
    at = open_page(NEGOTIATE, sweep)
    at.number_input(key=key("negotiate.loss")).set_value(8.0)
    run(at)
    choice = texts(at.success).splitlines()[0]
    found = re.search(r"Smallest ε that meets it: ([\d.]+)\.", choice)
    assert found, texts(at.success)
    eps = float(found.group(1))
    curve = charts(at)[0]
    marks = [t["name"] for t in curve["data"]]
    assert f"chosen ε = {eps:g}, the smallest meeting it" in marks
    assert any(n.startswith("target: at most 8 points less") for n in marks)
    assert at.select_slider(key=key("negotiate.chosen")).value == eps
    # the chosen ε moves on its own only when the suggestion changes
    at.select_slider(key=key("negotiate.chosen")).set_value(10.0)
    run(at)
    assert "chosen ε = 10" in [t["name"] for t in charts(at)[0]["data"]]
    at.radio(key=key("negotiate.metric")).set_value("f1")
    at.number_input(key=key("negotiate.loss")).set_value(0.0)
    run(at)
    assert "No swept ε meets it" in texts(at.warning) or "Smallest ε" in texts(at.success)
    assert charts(at)[0]["layout"]["title"]["text"] == "How much F1 does each ε cost?"


def test_candidates_side_by_side_with_the_risk_in_numbers_and_words(sweep):
    at = open_page(NEGOTIATE, sweep)
    at.multiselect(key=key("negotiate.candidates")).set_value([0.5, 1.0, 2.0])
    at.select_slider(key=key("negotiate.prior")).set_value(0.1)
    run(at)
    assert [s.value for s in at.subheader][:3] == ["ε = 0.5", "ε = 1", "ε = 2"]
    lines = texts(at.markdown)
    for number in ("×1.65", "×2.72", "×7.39"):
        assert f"Odds ratio bound: **{number}**" in lines
    assert "Best membership advantage: **46.2 points**" in lines
    # prior 10%, ε = 1: 0.1·e/(0.9 + 0.1·e) = 23.2%
    assert "Attacker's belief at most: **23.2%**" in lines
    assert "at most 23.2% sure" in texts(at.caption)
    utility = [m for m in at.metric if m.label == "Accuracy (NOT private)"]
    assert len(utility) == 3 and all(re.fullmatch(r"\d+\.\d% ± \d+\.\d", m.value) for m in utility)
    assert all(m.delta.endswith(" pts") for m in utility)
    region = charts(at)[1]
    assert [t["name"] for t in region["data"] if t.get("fill") == "tozeroy"] == [
        "ε = 2: out of reach below this line",
        "ε = 1: out of reach below this line",
        "ε = 0.5: out of reach below this line",
    ]
    assert "false positive: says 'in' about someone who is not" in texts(at.caption)


def test_the_majority_baseline_is_on_the_curve_and_every_card(sweep):
    at = open_page(NEGOTIATE, sweep)
    baseline = 100 * majority_mean(sweep.summary, "accuracy")
    curve = charts(at)[0]
    line = next(t for t in curve["data"] if t["name"].startswith("majority class (trivial"))
    assert line["name"] == f"majority class (trivial baseline): {baseline:.1f}%"
    low, high = curve["layout"]["yaxis"]["range"]
    assert low <= values(line["y"])[0] <= high
    cards = [m for m in at.markdown if m.value.startswith("Always the majority class")]
    assert len(cards) == len(at.session_state[key("negotiate.candidates")])
    assert all(f"**{baseline:.1f}%**" in m.value for m in cards)


def test_a_candidate_predicting_one_class_is_warned_about():
    settings = dataclasses.replace(
        NEGOTIATE_SWEEP, mechanisms=("permute_flip",), eps_low=0.5, folds=3, noise_seed=0
    )
    data = rare_data()
    rare = app_curves.run(data, settings)
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    at.session_state[DATA_KEY] = data
    at.session_state[SWEEP_KEY] = rare
    at.switch_page(NEGOTIATE).run()
    assert not at.exception, at.exception
    assert "predicts a single class in every fold: no better than always" in texts(at.warning)
    assert "Careful: at ε = " in texts(at.warning)  # the suggestion is met trivially
    utility = [m for m in at.metric if m.label == "Accuracy (NOT private)"]
    assert utility and all(m.proto.color == MetricProto.MetricColor.RED for m in utility)
    assert "Always the majority class: **97.0%**" in texts(at.markdown)


def test_not_dp_mechanism_is_badged_and_gets_no_risk_bound(sweep):
    at = open_page(NEGOTIATE, sweep)
    assert at.selectbox(key=key("negotiate.pin.mechanism")).value == "permute_flip"
    at.selectbox(key=key("negotiate.pin.mechanism")).set_value("smooth_em")
    run(at)
    assert ":red-badge[:material/gpp_bad: smooth_em: NOT DP]" in texts(at.markdown)
    assert "no proof of differential privacy" in texts(at.error)
    # The ledger of a chosen ε (whether or not any ε of the sweep meets the target).
    at.select_slider(key=key("negotiate.chosen")).set_value(10.0)
    run(at)
    assert "NO privacy guarantee" in texts(at.error)
    assert "Odds ratio bound" not in texts(at.markdown)
    assert len(charts(at)) == 1  # the curve; no hypothesis-testing region


def test_ledger_in_words_follows_the_chosen_epsilon(sweep):
    at = open_page(NEGOTIATE, sweep)
    at.select_slider(key=key("negotiate.chosen")).set_value(2.0)
    run(at)
    ledger = texts(at.success)
    # The class prior's share (10% of ε) and, from ε = 2, the floor's check (5%) are
    # booked apart from the leaves'.
    assert "Each of 10 trees saw a disjoint ~10% of the records and spent ε = 1.7" in ledger
    assert "Noisy class histogram" in ledger and "out-of-bag gain" in ledger
    assert "the released model is 2-differentially private" in ledger


def test_decision_report_download_is_self_contained_html(sweep, deferred):
    at = open_page(NEGOTIATE, sweep)
    # Chosen first: the sweep's noise is fresh, and in some runs no ε meets the default
    # target, so nothing is preselected and there is no decision to report yet.
    at.select_slider(key=key("negotiate.chosen")).set_value(1.0)
    run(at)
    button = at.get("download_button")
    assert [b.proto.label for b in button] == ["Download the decision report (HTML)"]
    at.text_area(key=key("negotiate.rationale")).input("Two points are fine <b>here</b>.")
    at.text_input(key=key("negotiate.approvers")).input("Ada (privacy officer)")
    run(at)
    html = report_of(deferred)
    assert network_urls(html) == []
    assert html.count("<script") >= 1  # plotly.js inlined, not fetched
    page = without_scripts(html)  # 5 MB less for pytest to print if a check fails
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "Chosen ε = 1" in page
    assert "Two points are fine &lt;b&gt;here&lt;/b&gt;." in page
    assert "Ada (privacy officer)" in page
    assert "Record count: not disclosed" in page and "2,000" not in page
    at.checkbox(key=key("negotiate.disclose")).check()
    run(at)
    assert "Records used: 2,000" in without_scripts(report_of(deferred))


def test_a_sweep_without_its_reference_is_a_message_not_a_traceback(sweep):
    results = sweep.result.results
    # replace(): the init fields only, never the cached properties of the original
    broken = dataclasses.replace(
        sweep, result=SweepResult(results[results["series"] != SERIES_NONPRIVATE])
    )
    at = open_page(NEGOTIATE, broken)
    assert "no nonprivate_forest reference" in texts(at.error)
    assert not charts(at)
