"""End to end in a real browser, as a data owner with their own file (issue 14): upload
a `;`-separated CSV with decimal commas, an ID column, a name column and missing ages,
change nothing outside the app, declare the schema, train, and download the released
model: its trees never see the ID or the name.

Needs the playwright Python package and Debian's /usr/bin/chromium; skips, saying why,
when either is missing.
"""

import json

from dpviz.privacy.schema import DECLARED_ON_DATA_PAGE
from tests.browser import (
    ROOT,
    WAIT_MS,
    browser_page,
    download_from,
    playwright_or_skip,
)

TITANIC = ROOT / "tests" / "data_owner" / "titanic_eu.csv"


def test_own_csv_with_ids_decimal_commas_and_missing_values_trains(server, tmp_path):
    sync_api = playwright_or_skip()
    expect = sync_api.expect
    with browser_page(sync_api, 2600) as page:
        page.goto(server + "/data")
        expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
        page.get_by_text("My own CSV file", exact=True).click()
        page.locator('input[type="file"]').first.set_input_files(str(TITANIC))
        alerts = page.locator('[data-testid="stAlert"]')
        expect(alerts.filter(has_text="'Age' uses decimal commas").first).to_be_visible()
        # the uploaded file is previewed (never the demo), the label guessed
        expect(page.get_by_text("Your file · titanic_eu.csv · 600 rows")).to_be_visible()
        label = page.get_by_role("combobox", name="Label column (what to predict)")
        expect(label).to_have_value("Survived")
        expect(page.get_by_text("guessed — check it", exact=False)).to_be_visible()
        drops = page.locator('[data-testid="stMultiSelect"]').filter(
            has_text="Leave out these columns"
        )
        expect(drops).to_contain_text("PassengerId")
        expect(drops).to_contain_text("Name")
        expect(alerts.filter(has_text="the data's own min and max").first).to_be_visible()
        page.get_by_text("I declare the class list", exact=False).click()
        sidebar = page.locator('[data-testid="stSidebar"]')
        expect(sidebar.get_by_text("Schema declaration", exact=False)).to_be_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        sidebar.get_by_role("link", name="Train", exact=True).click()
        page.get_by_role("button", name="Train", exact=True).click()
        accuracy = page.locator('[data-testid="stMetric"]').filter(has_text="Accuracy")
        expect(accuracy.first).to_be_visible(timeout=WAIT_MS)
        download = download_from(
            page,
            sync_api,
            page.get_by_role("button", name="Download the released model (JSON)"),
        )
        path = tmp_path / "model.json"
        download.save_as(path)
        model = json.loads(path.read_text())
        names = [f["name"] for f in model["schema"]["features"]]
        assert names == ["Pclass", "Sex", "Age", "Fare", "Embarked"]
        assert model["schema"]["declaration"] == DECLARED_ON_DATA_PAGE
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=str(tmp_path / "dpviz_own_csv.png"), full_page=True)
