"""dpviz.app.report: the HTML decision report is self-contained, escaped and discreet."""

import math
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import pytest

from dpviz.app.report import (
    REPORT_SECTIONS,
    SECTION_NOT_PRIVATE,
    WITHHELD,
    decision_report,
    dpviz_version,
    redact_figure,
)
from dpviz.models.forest.estimator import build_ledger
from dpviz.privacy.risk import candidate_table, smallest_epsilon
from dpviz.privacy.schema import Feature, Schema

N_RECORDS = 98_765
EVIL = "<script>alert('x')</script>"
WHEN = datetime(2024, 5, 17, 9, 30, tzinfo=UTC)
CHROMIUM = Path("/usr/bin/chromium")


class Links(HTMLParser):
    """Tags and the URL-bearing attributes of a document."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[tuple[str, str, str]] = []
        self.scripts_with_src = 0
        self.meta: list[dict] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        for name in ("src", "href", "action", "data", "poster", "srcset", "xlink:href"):
            if attrs.get(name):
                self.urls.append((tag, name, attrs[name]))
        if tag == "script" and "src" in attrs:
            self.scripts_with_src += 1
        if tag == "meta":
            self.meta.append(attrs)


def parse(html: str) -> Links:
    parser = Links()
    parser.feed(html)
    return parser


def schema(label="label", classes=("no", "yes"), inferred=False):
    return Schema(
        label=label,
        classes=classes,
        features=(
            Feature("age", "continuous", 0.0, 120.0),
            Feature("colour", "discrete", values=("red", "blue")),
        ),
        inferred=inferred,
    )


def summary():
    rows = [
        {
            "series": "dp_forest",
            "mechanism": "permute_flip",
            "epsilon": eps,
            "n_estimators": 10,
            "depth_rule": "theorem2",
            "data_split": "disjoint",
            "accuracy_mean": mean,
            "accuracy_std": 0.01,
            "private": True,
        }
        for eps, mean in [(0.1, 0.7), (0.5, 0.85), (1.0, 0.88), (2.0, 0.89)]
    ]
    rows.append(
        {**rows[0], "series": "nonprivate_forest", "epsilon": math.inf, "accuracy_mean": 0.9}
    )
    return pd.DataFrame(rows)


def leaky_figure() -> go.Figure:
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], name=f"trained on {N_RECORDS:,} records"))
    fig.update_layout(
        title={"text": f"Accuracy on {N_RECORDS} records"},
        annotations=[{"text": f"{N_RECORDS:,} records, 10-fold", "x": 0, "y": 1}],
    )
    return fig


def report(**overrides):
    choice = smallest_epsilon(summary(), "accuracy", 3.0)
    args = {
        "schema": schema(),
        "algorithm": "fletcher_islam",
        "parameters": {"mechanism": "permute_flip", "n_estimators": 10, "depth": "theorem2"},
        "seeds": {"model": 42, "folds": 7},
        "chosen_epsilon": 1.0,
        "rationale": "Two points are fine.\n" + EVIL,
        "approvers": "Ada (privacy officer) & Bob <bob@example.org>",
        "candidates": candidate_table([0.5, 1.0, 2.0], 0.1, summary()),
        "prior": 0.1,
        "choice": choice,
        "ledger": build_ledger("permute_flip", 1.0, 10, "disjoint", schema_inferred=False),
        "n_records": N_RECORDS,
        "dataset_name": "clinic <visits>",
        "created": WHEN,
    }
    args.update(overrides)
    return decision_report(**args)


@pytest.fixture(scope="module")
def html():
    return report()


def test_no_external_urls_anywhere_in_markup(html):
    """Parsed with html.parser: no src/href to http(s) or protocol-relative URLs, no
    <link>, <img>, <iframe> or external script, and a CSP that forbids fetching."""
    links = parse(html)
    assert links.scripts_with_src == 0
    for tag, name, url in links.urls:
        assert not re.match(r"\s*(https?:)?//", url, re.I), (tag, name, url)
    assert not {"link", "img", "iframe", "object", "embed"} & set(links.tags)
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    assert "http" not in style and "@import" not in style and "url(" not in style
    csp = [m for m in links.meta if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]


def test_plotly_is_inlined_once(html):
    assert html.count("plotly.js v") == 1  # the bundle's own header comment
    assert html.count('class="plotly-graph-div"') == 2  # ε curve and attacker region
    assert '"displaylogo": false' in html


def test_record_count_hidden_unless_allowed():
    hidden = report(figures={"leaky": leaky_figure()})
    for form in (str(N_RECORDS), f"{N_RECORDS:,}"):
        assert form not in hidden
    assert "Record count: not disclosed" in hidden
    assert WITHHELD in hidden  # redacted from the figure's title, note and legend
    shown = report(disclose_record_count=True)
    assert f"{N_RECORDS:,}" in shown and "disclosed by decision of the user" in shown


def test_record_count_in_the_dataset_name_is_withheld_too():
    hidden = report(dataset_name=f"clinic ({N_RECORDS:,} rows)")
    assert f"{N_RECORDS:,}" not in hidden and f"clinic ({WITHHELD} rows)" in hidden
    shown = report(dataset_name=f"clinic ({N_RECORDS:,} rows)", disclose_record_count=True)
    assert f"clinic ({N_RECORDS:,} rows)" in shown


def test_redact_figure_leaves_other_numbers():
    fig = redact_figure(leaky_figure(), N_RECORDS)
    assert fig.layout.title.text == f"Accuracy on {WITHHELD} records"
    assert fig.layout.annotations[0].text == f"{WITHHELD} records, 10-fold"
    assert fig.data[0].name == f"trained on {WITHHELD} records"
    assert list(fig.data[0].y) == [3, 4]
    assert (
        redact_figure(
            go.Figure(layout={"title": {"text": "1987654 rows"}}), 98765
        ).layout.title.text
        == "1987654 rows"
    )


def test_user_text_is_escaped(html):
    assert EVIL not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "Bob &lt;bob@example.org&gt;" in html and "clinic &lt;visits&gt;" in html
    nasty = report(
        schema=schema(label="<b>y</b>", classes=("<i>a</i>", "b\"'")),
        parameters={"<img src=x>": "<svg onload=1>"},
        seeds={"seed<": ">1"},
        figures=[],
    )
    assert "<b>y</b>" not in nasty and "<i>a</i>" not in nasty
    assert "<img" not in nasty and "<svg" not in nasty
    assert "&lt;img src=x&gt;" in nasty


def test_contents(html):
    assert f"dpviz {dpviz_version()}" in html and "2024-05-17" in html
    assert "Chosen ε = 1" in html
    for needle in (
        "fletcher_islam",
        "permute_flip",
        "theorem2",
        "model",
        "42",
        "Each of 10 trees",  # the ledger in words
        "[0, 120]",  # the public domain
        "red, blue",
        "23.2%",  # posterior bound at prior 10%, ε = 1
        "46.2 points",  # membership advantage at ε = 1
        "45.1%",  # attribute of a person known to be in the data: prior 10%, ε = 1 (2ε)
        "smallest swept value",
        "NOT private",
    ):
        assert needle in html, needle
    assert "NOT DIFFERENTIALLY PRIVATE" not in html


def test_risk_is_said_for_membership_attributes_and_per_record(html):
    """Membership moves the odds by e^ε; the attribute of a person known to be in the
    data by e^(2ε) (two neighbour steps); and all of it holds per record."""
    assert "odds that a person is in the data can change by at most ×" in html
    assert "attacker's belief that a person is in the data at most (prior 10%)" in html
    assert "an attribute of a person known to be in the data at most (prior 10%)" in html
    assert "be at most 23.2% sure that she is in it" in html
    assert "about a person known to be in the data" in html and "be at most 45.1% sure" in html
    assert "p·e^(2ε)/(1 − p + p·e^(2ε))" in html and "1 − e^(−ε)" in html
    assert "a person with k records in the data is protected only at k·ε" in html
    assert "ε = 2 for 2 records" in html  # the chosen ε = 1
    assert "a person with k records gets k·ε" in html  # the closing note
    lowered = html.lower()
    for phrase in ("anyone&#x27;s odds", "anyone's odds", "sensitive fact", "would reveal"):
        assert phrase not in lowered, phrase


def test_a_candidate_table_without_the_attribute_column_still_reports_it():
    legacy = candidate_table([1.0], 0.5, summary()).drop(columns="attribute_posterior_bound")
    page = report(candidates=legacy, chosen_epsilon=1.0, figures=[])
    assert "88.1%" in page and "73.1%" in page


def test_not_private_configurations_are_flagged():
    inferred = report(schema=schema(inferred=True), ledger=None, choice=None, candidates=[1.0])
    assert "The schema was inferred from the data" in inferred
    assert "[0, 120]" not in inferred and "withheld: inferred" in inferred
    unproven = report(
        parameters={"mechanism": "smooth_em"},
        ledger=build_ledger("smooth_em", 1.0, 10, "disjoint", schema_inferred=False),
        choice=None,
        candidates=[1.0],
    )
    assert "NOT DIFFERENTIALLY PRIVATE" in unproven
    assert "no guarantee (NOT DP)" in unproven and "46.2 points" not in unproven
    assert unproven.count("<td>no guarantee (NOT DP)</td>") == 5  # the 5 risk columns
    assert "45.1%" not in unproven


def test_no_decision_yet_and_bad_inputs():
    undecided = report(chosen_epsilon=None, choice=None, candidates=[], figures=None)
    assert "No ε has been chosen yet" in undecided and "plotly.js v" not in undecided
    with pytest.raises(ValueError, match="chosen ε"):
        report(chosen_epsilon=-1)
    with pytest.raises(ValueError, match="n_records"):
        report(n_records=-5)
    with pytest.raises(ValueError, match="Schema"):
        report(schema={"label": "y"})


def test_report_opens_offline_in_a_browser(html, tmp_path):
    """Chromium with the network switched off loads the file: plotly runs, both figures
    render, and the page requests nothing but the file itself."""
    playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium to run this test)")
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    requests, errors = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            context = browser.new_context(offline=True)
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri())
            page.wait_for_function("document.querySelectorAll('.main-svg').length >= 2")
            assert page.evaluate("typeof Plotly") == "object"
            assert page.locator(".js-plotly-plot").count() == 2
        finally:
            browser.close()
    assert errors == []
    assert all(url.startswith("file://") for url in requests), requests


def test_the_trivial_baseline_is_a_column_and_a_line():
    summary = pd.DataFrame(
        {
            "series": ["dp_forest"] * 3 + ["nonprivate_forest"],
            "mechanism": ["permute_flip"] * 3 + ["none"],
            "epsilon": [0.5, 1.0, 2.0, math.inf],
            "accuracy_mean": [0.9, 0.95, 0.97, 0.97],
            "accuracy_std": [0.01, 0.01, 0.0, 0.0],
            "private": [True, True, True, False],
        }
    )
    choice = smallest_epsilon(summary, "accuracy", 2.0)
    table = candidate_table([0.5, 1.0], 0.5, summary, "accuracy")
    table["one_class_share"] = [0.0, 1.0]
    html = decision_report(
        schema=schema(),
        algorithm="fletcher_islam",
        parameters={"mechanism": "permute_flip"},
        seeds={},
        chosen_epsilon=1.0,
        candidates=table,
        choice=choice,
        majority=0.97,
        created=WHEN,
    )
    assert (
        "<th>majority class (trivial baseline): always the majority class (NOT private)</th>"
        in html
    )
    assert html.count('<td class="num">97.0%</td>') == 2
    assert "95.0% ± 1.0 (predicts one class only, in every fold)" in html
    assert "90.0% ± 1.0 (predicts" not in html
    assert "majority class (trivial baseline): 97.0%" in html  # the curve's line
    plain = decision_report(
        schema=schema(),
        algorithm="fletcher_islam",
        parameters={"mechanism": "permute_flip"},
        seeds={},
        chosen_epsilon=1.0,
        candidates=candidate_table([0.5, 1.0], 0.5, summary, "accuracy"),
        choice=choice,
        created=WHEN,
    )
    assert "trivial baseline" not in plain  # nothing to show without a baseline


def test_every_section_is_in_the_report_manifest_and_not_private_ones_say_so(html):
    """Each <h2> section is named in REPORT_SECTIONS; a section of held-out scores (NOT
    private) says so inside itself."""
    sections = re.split(r"<h2>", html)[1:]
    headings = [section.split("</h2>", 1)[0] for section in sections]
    assert headings and set(headings) <= set(REPORT_SECTIONS), headings
    for heading, section in zip(headings, sections):
        if REPORT_SECTIONS[heading] == SECTION_NOT_PRIVATE:
            assert "NOT private" in section, heading
