"""Issue 17 on the pages: a model trained on an inferred schema is not offered for
download (its file would list the records' own values), and the download's tooltip says
what a released model file holds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.app.test_pages import downloads, open_page, set_forest_trees, trained, upload_csv
from tests.page_checks import key, texts


def email_csv() -> bytes:
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame(
        {
            "email": [f"person{i}@example.org" for i in range(n)],
            "age": rng.integers(18, 80, n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    return frame.to_csv(index=False).encode()


def test_inferred_schema_model_is_not_offered_for_download():
    at = upload_csv(open_page("pages/data.py"), "people.csv", email_csv())
    at.switch_page("pages/train.py").run()
    set_forest_trees(at, 5)
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    assert "Download the released model (JSON)" not in downloads(at)
    warnings = texts(at.warning)
    assert "schema was inferred" in warnings and "@example.org" not in warnings


def test_model_download_tooltip_says_the_file_holds_the_declared_schema():
    at = trained(trees=5)
    button = next(
        d for d in at.get("download_button") if d.proto.label.startswith("Download the released")
    )
    assert "public schema you declared" in button.proto.help
    assert "no records" in button.proto.help
