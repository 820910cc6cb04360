"""End to end in a real browser (issue 27): an Excel-EU export — `;`-separated, decimal
commas, a `dd.mm.yyyy` date column, a `€1.234,50` amount column, a column of people's
names and a Yes/No label — uploaded on the Data page and trained on the Train page with
no edit outside the app. The date and the amount are continuous features (dates as days
since 1970-01-01), the names are left out by default with the reason.

Needs the playwright Python package and Debian's /usr/bin/chromium; skips, saying why,
when either is missing.
"""

import json

import numpy as np
import pandas as pd

from tests.browser import (
    WAIT_MS,
    browser_page,
    download_from,
    playwright_or_skip,
)

FIRST = ("Anna", "Luca", "Marie", "Jonas", "Sofia", "Paul", "Lena", "Tomás", "Eva", "Noah")
LAST = ("Rossi", "Müller", "Dubois", "Jansen", "García", "Novak", "Berg", "Costa", "Weber")
SHOT = "/tmp/dpviz_currency_dates_data_page.png"


def excel_eu_export(path, rows: int = 400) -> None:
    """What Excel writes in a German or French locale: `;`, decimal commas, dates as
    dd.mm.yyyy, amounts as €1.234,50. Fixed seed; the label depends on the amount and
    the date, so a tree has something to learn."""
    rng = np.random.default_rng(27)
    days = rng.integers(18262, 18262 + 700, rows)  # 2020-01-01 onwards
    cents = rng.integers(500, 500_000, rows)
    age = rng.normal(45, 12, rows).round(1)
    names = [
        f"{FIRST[i]} {LAST[j]}"
        for i, j in zip(rng.integers(0, 10, rows), rng.integers(0, 9, rows))
    ]
    score = (cents > 250_000).astype(int) + (days > 18262 + 350).astype(int)
    flip = rng.random(rows) < 0.1
    approved = np.where((score >= 1) ^ flip, "Yes", "No")
    euros = [f"€{c // 100:,}".replace(",", ".") + f",{c % 100:02d}" for c in cents]
    frame = pd.DataFrame(
        {
            "Name": names,
            "Datum": pd.to_datetime(days, unit="D").strftime("%d.%m.%Y"),
            "Betrag": euros,
            "Alter": [f"{a:.1f}".replace(".", ",") for a in age],
            "Approved": approved,
        }
    )
    frame.to_csv(path, sep=";", index=False)


def test_excel_eu_export_with_dates_and_euros_trains(server, tmp_path):
    sync_api = playwright_or_skip()
    expect = sync_api.expect
    data = tmp_path / "export_eu.csv"
    excel_eu_export(data)
    with browser_page(sync_api, 2400) as page:
        page.goto(server + "/data")
        expect(page.get_by_role("heading", name="Data", exact=True)).to_be_visible()
        page.get_by_text("My own CSV file", exact=True).click()
        page.locator('input[type="file"]').first.set_input_files(str(data))
        alerts = page.locator('[data-testid="stAlert"]')
        expect(alerts.filter(has_text="'Datum' holds dates (dd.mm.yyyy)").first).to_be_visible()
        expect(alerts.filter(has_text="'Betrag' holds amounts in '€'").first).to_be_visible()
        expect(page.get_by_text("Your file · export_eu.csv · 400 rows")).to_be_visible()
        label = page.get_by_role("combobox", name="Label column (what to predict)")
        expect(label).to_have_value("Approved")
        drops = page.locator('[data-testid="stMultiSelect"]').filter(
            has_text="Leave out these columns"
        )
        expect(drops).to_contain_text("Name")
        # The Columns table (its cells are in the page for screen readers).
        columns = page.locator('[data-testid="stDataFrame"]').filter(has_text="suggestion")
        expect(columns).to_contain_text("drop — personal data: its name 'Name' says")
        current = page.get_by_text("3 continuous and 0 discrete features", exact=False)
        expect(current).to_be_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        page.screenshot(path=SHOT, full_page=True)
        schema_file = download_from(
            page, sync_api, page.get_by_role("button", name="Download the schema JSON")
        )
        schema_path = tmp_path / "schema.json"
        schema_file.save_as(schema_path)
        kinds = {f["name"]: f["type"] for f in json.loads(schema_path.read_text())["features"]}
        assert kinds == {"Datum": "continuous", "Betrag": "continuous", "Alter": "continuous"}
        sidebar = page.locator('[data-testid="stSidebar"]')
        sidebar.get_by_role("link", name="Train", exact=True).click()
        page.get_by_role("button", name="Train", exact=True).click()
        accuracy = page.locator('[data-testid="stMetric"]').filter(has_text="Accuracy")
        expect(accuracy.first).to_be_visible(timeout=WAIT_MS)
        assert "%" in accuracy.first.inner_text()
        assert page.locator('[data-testid="stException"]').count() == 0
