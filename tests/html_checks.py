"""What the report tests share: the network addresses an HTML document would load."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_URL_ATTRIBUTES = ("src", "href", "action", "srcset", "data", "poster")


class _Urls(HTMLParser):
    """URL-bearing attributes of the markup (script bodies are not markup)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in _URL_ATTRIBUTES and value:
                self.urls.append(value)


def network_urls(html: str) -> list[str]:
    """Every src/href/... of the markup that points at a network address."""
    parser = _Urls()
    parser.feed(html)
    return [u for u in parser.urls if re.match(r"\s*(https?:)?//", u, re.IGNORECASE)]
