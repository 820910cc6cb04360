"""The look of a tree figure: class colours, titles (the released view and the NOT-private
diagnostics say which they are), legend entries, and text cut or wrapped to fit.

Pure presentation: nothing here reads a model or records.
"""

from __future__ import annotations

import textwrap

import plotly.graph_objects as go

# Okabe–Ito colours for classes, starting with two the mechanism curves do not use.
CLASS_COLORS = (
    "#56B4E9",  # sky blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#000000",  # black
)
STRUCTURE_COLOR = "#EEEEEE"
EMPTY_COLOR = "#FFFFFF"
FLIPPED_COLOR = "#000000"
RELEASED_TITLE = "Released model: structure and released labels (what an outsider sees)"
RELEASED_COUNTS_TITLE = (
    "Released model: structure and released noisy counts (what an outsider sees)"
)
DIAGNOSTICS_TITLE = "Data-owner diagnostics: true counts and flips (NOT private)"


def class_color(index: int) -> str:
    return CLASS_COLORS[index % len(CLASS_COLORS)]


def leaf_legend(name: str, *, diagnostics: bool, counts: bool) -> str:
    """A leaf colour's legend entry: the true majority (diagnostics), the class of the
    largest released noisy count (count mechanisms: the label is derived, not released)
    or the released label."""
    if diagnostics:
        return f"true majority {name}"
    return f"largest noisy count {name}" if counts else f"released label {name}"


def released_title(diagnostics: bool, releases_counts: bool) -> str:
    if diagnostics:
        return DIAGNOSTICS_TITLE
    return RELEASED_COUNTS_TITLE if releases_counts else RELEASED_TITLE


def class_index(classes) -> dict[str, int]:
    return {str(c): i for i, c in enumerate(classes)}


# Labels are cut to what fits beside their neighbours (full text on hover): one character
# of the 10–11 px label font is about CHAR_PX wide on a tree drawn about PLOT_PX wide.
CHAR_PX = 6.5
PLOT_PX = 780  # a colour bar or narrow column leaves about this much
LABEL_CHARS = 24  # icicle box labels and link values: longer ones end in "…"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters ending in "…" ("" when not even 4 fit)."""
    text = str(text)
    if len(text) <= limit:
        return text
    return "" if limit < 4 else text[: limit - 1] + "…"


TITLE_CHARS = 80  # the 17 px title: about this many characters on a 720 px figure
NOTE_CHARS = 110  # the 12 px note under it


def wrap(text: str, width: int) -> str:
    """``text`` broken into lines of at most ``width`` characters (plotly never wraps a
    title or an annotation: a long one is cut at the figure's edge); ``<br>`` stays."""
    lines = []
    for line in str(text).split("<br>"):
        lines.extend(textwrap.wrap(line, width, break_on_hyphens=False) or [""])
    return "<br>".join(lines)


def tree_title(name: str, title: str) -> str:
    """ "<name> · <title>" on one line when it fits, else the name and the title on lines
    of their own (each wrapped to :data:`TITLE_CHARS`)."""
    full = f"{name} · {title}"
    if len(full) <= TITLE_CHARS:
        return full
    return f"{wrap(name, TITLE_CHARS)}<br>{wrap(title, TITLE_CHARS)}"


def _lines(text: str) -> int:
    return str(text).count("<br>") + 1


def top_margin(title: str, note: str) -> int:
    """Room above the plot for the title's and the note's lines."""
    return 24 + 24 * _lines(title) + 17 * _lines(note) + 12


def title_layout(title: str) -> dict:
    """The title pinned to the top of the figure, so that its lines never run into the
    note below it."""
    return {"text": title, "yref": "container", "y": 1, "yanchor": "top", "pad": {"t": 16}}


def legend_entry(fig: go.Figure, name: str, color: str, outline: str = "#000000") -> None:
    """A legend-only square (no data drawn): explains a colour the figure uses."""
    fig.add_trace(
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            marker={
                "symbol": "square",
                "size": 12,
                "color": color,
                "line": {"color": outline, "width": 1},
            },
            name=name,
            hoverinfo="skip",
        )
    )
