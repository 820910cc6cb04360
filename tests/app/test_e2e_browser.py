"""End to end in a real browser: `streamlit run app.py`, upload data/demo.csv on the Data
page, train on the Train page, see the scores; the sidebar summary follows across pages.

Needs the playwright Python package and Debian's /usr/bin/chromium (playwright's own
browser download is not used). Skips, saying why, when either is missing.
"""

import re

from tests.browser import (
    ROOT,
    WAIT_MS,
    browser_page,
    free_port,
    playwright_or_skip,
    streamlit_app,
)


def test_upload_train_and_see_the_charts(server, tmp_path):
    sync_api = playwright_or_skip()
    with browser_page(sync_api, 2200) as page:
        # A deep link as the fresh server's first request: Streamlit then runs the
        # page file alone; the page has app.py draw its frame and comes back.
        page.goto(server + "/data")
        sidebar = page.locator('[data-testid="stSidebar"]')
        sync_api.expect(sidebar.get_by_text("not trained yet")).to_be_visible()
        sync_api.expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
        # The page, and the address's mark of where the data came from (never more).
        assert page.url.split("?")[0].endswith("/data")
        page.get_by_text("My own CSV file", exact=True).click()
        page.locator('input[type="file"]').first.set_input_files(str(ROOT / "data/demo.csv"))
        # no schema uploaded: the page must say the guarantee is void
        void = page.locator('[data-testid="stAlert"]').filter(has_text="guarantee is VOID")
        sync_api.expect(void.first).to_be_visible()
        sidebar.get_by_role("link", name="Train", exact=True).click()
        page.get_by_role("button", name="Train", exact=True).click()
        chart = page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot')
        sync_api.expect(chart).to_have_count(1, timeout=WAIT_MS)
        accuracy = page.locator('[data-testid="stMetric"]').filter(has_text="Accuracy · DP forest")
        sync_api.expect(accuracy).to_be_visible()
        assert re.search(r"\d+\.\d% ± \d+\.\d", accuracy.inner_text())
        assert "NO privacy guarantee" in page.locator("body").inner_text()
        # the sidebar, drawn by app.py around every page, now names the model
        sync_api.expect(sidebar.get_by_text("accuracy", exact=False)).to_be_visible()
        assert "demo.csv" in sidebar.inner_text()
        assert page.locator('[data-testid="stException"]').count() == 0
        # No Deploy button in a tool for sensitive data (.streamlit/config.toml).
        assert page.get_by_role("button", name="Deploy").count() == 0
        assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
        shot = tmp_path / "dpviz_home_upload.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000


def test_a_server_restart_says_the_upload_was_lost(tmp_path):
    """Upload a CSV, restart the server on the same port: the page the browser still
    shows reconnects to a new session, which says the upload is gone (the address kept
    ?data=upload, nothing of the file) instead of silently showing the demo."""
    sync_api = playwright_or_skip()
    port = free_port()
    with browser_page(sync_api, 1600) as page:
        with streamlit_app(ROOT / "app.py", tmp_path / "first.log", port) as url:
            page.goto(url + "/data")
            page.get_by_text("My own CSV file", exact=True).click()
            page.locator('input[type="file"]').first.set_input_files(str(ROOT / "data/demo.csv"))
            sidebar = page.locator('[data-testid="stSidebar"]')
            sync_api.expect(sidebar.get_by_text("Data: demo.csv", exact=False)).to_be_visible()
            page.wait_for_url("**data=upload**")
        with streamlit_app(ROOT / "app.py", tmp_path / "second.log", port):
            page.reload()
            notice = page.get_by_text("Your uploaded file is gone", exact=False)
            sync_api.expect(notice).to_be_visible()
            assert page.locator('[data-testid="stException"]').count() == 0
