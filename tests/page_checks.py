"""What the AppTest page tests share: widget keys, and the text and charts of a page."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from dpviz.app.session import KEEP_PREFIX


def key(name: str) -> str:
    """The session key of a widget whose value the app keeps across pages."""
    return KEEP_PREFIX + name


def texts(elements) -> str:
    """The values of rendered elements, one a line."""
    return "\n".join(str(e.value) for e in elements)


def charts(at: AppTest) -> list:
    """The page's plotly charts."""
    return list(at.get("plotly_chart"))


def chart_spec(at: AppTest, index: int = 0) -> dict:
    """The plotly figure of the page's ``index``-th chart."""
    return json.loads(charts(at)[index].proto.spec)
