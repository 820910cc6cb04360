"""End to end in a real browser: upload a CSV, open the Audit page, run the membership
attack and see its ROC chart; start the whole-release audit and stop it: the page shows
the bound over the fits made, marked stopped, and keeps the attack's results.

Needs the playwright Python package and Debian's /usr/bin/chromium; skips, saying why,
when either is missing.
"""

import re

from tests.browser import (
    ROOT,
    WAIT_MS,
    browser_page,
    playwright_or_skip,
)

DEMO = ROOT / "data" / "demo.csv"


def test_audit_page_draws_the_roc_chart_of_an_uploaded_csv_and_stops_the_audit(server, tmp_path):
    sync_api = playwright_or_skip()
    expect = sync_api.expect
    with browser_page(sync_api, 2400) as page:
        page.goto(server + "/data")
        expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
        page.get_by_text("My own CSV file", exact=True).click()
        page.locator('input[type="file"]').first.set_input_files(str(DEMO))
        expect(page.get_by_text("Your file · demo.csv · 2,000 rows")).to_be_visible()
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_role("link", name="Audit", exact=True).click()
        expect(page.get_by_role("heading", name="Audit", exact=True)).to_be_visible()
        page.get_by_role("button", name="Run the attack", exact=True).click()
        chart = page.locator('[data-testid="stPlotlyChart"]')
        expect(chart.first).to_be_visible(timeout=WAIT_MS)
        expect(chart.first).to_contain_text("Membership attack ROC")
        expect(chart.first).to_contain_text("what ε = 1 DP allows")
        expect(
            page.get_by_text(re.compile(r"Held-out advantage -?\d\.\d{3}, 95% interval")).first
        ).to_be_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(tmp_path / "dpviz_audit.png"), full_page=True)
        # The audit with many fits, stopped: the page shows the bound over the fits made.
        runs = page.get_by_role("spinbutton", name="Fits per dataset")
        runs.fill("20000")
        runs.press("Enter")
        # The click can land in the rerun that applies the new number and be lost (seen
        # once in CI: no progress for 300 s). Click once the page is idle; if no
        # progress shows within a minute (one pair of fits takes well under a second),
        # the click was lost: click again, at most three times.
        running = page.locator('[data-testid="stStatusWidget"]')
        progress = page.get_by_text("fits on each of D and D′", exact=False)
        for _ in range(3):
            expect(running).to_have_count(0, timeout=WAIT_MS)
            page.get_by_role("button", name="Run the audit", exact=True).click()
            try:
                expect(progress).to_be_visible(timeout=60_000)
                break
            except AssertionError:
                continue
        expect(progress).to_be_visible()
        page.get_by_role("button", name="Stop", exact=False).click()
        verdict = page.get_by_text(
            re.compile(r"Stopped after [\d,]+ fits? per dataset \(of 20,000 asked\)")
        )
        expect(verdict).to_be_visible()
        # The uploaded CSV's inferred schema may leave the release without a claimed ε.
        expect(verdict).to_contain_text(
            re.compile(r"still a valid lower bound, .*Lower bound \d\.\d{3} on ε|proves no ε")
        )
        expect(page.get_by_role("button", name="Stop", exact=False)).to_have_count(0)
        expect(page.get_by_text("fits on each of D and D′", exact=False)).to_have_count(0)
        expect(chart.first).to_be_visible()  # the attack's results stay
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(tmp_path / "dpviz_audit_stopped.png"), full_page=True)
