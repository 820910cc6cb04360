"""Fixtures of the app's tests."""

import pytest

from tests.browser import ROOT, streamlit_app


@pytest.fixture
def server(tmp_path):
    """The app on a free port of 127.0.0.1, for the browser tests; always terminated."""
    with streamlit_app(ROOT / "app.py", tmp_path / "streamlit.log") as url:
        yield url
