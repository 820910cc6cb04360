"""The Curves page's algorithm picker: the algorithms to compare, from the registry, with
the settings of those other than the forest and the privacy status each has with them."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from dpviz.app import curves as app_curves
from dpviz.app.train import privacy_status
from dpviz.evaluation.sweep import FLETCHER_ISLAM
from dpviz.models.registry import ALGORITHMS
from pages.ui import parameters


def algorithm_picker(K: dict, key_of: Callable) -> tuple[list[str], dict]:
    """The algorithms to compare (from the registry) and the settings of those other
    than the forest, with the privacy status each has with them (``K``: the page's
    session keys; ``key_of(algorithm, parameter)``: a parameter's)."""
    options = app_curves.algorithm_options()
    kept = [a for a in st.session_state[K["algorithms"]] if a in options]
    if kept != st.session_state[K["algorithms"]]:
        st.session_state[K["algorithms"]] = kept
    chosen = st.multiselect(
        "Algorithms to compare — every one runs on the same folds",
        list(options),
        format_func=options.get,
        key=K["algorithms"],
        help="The forest sweeps ε in about one fit per fold; the greedy trees and DPBoost "
        "read the data to grow, so they are fitted again for every ε and fold (slower).",
    )
    presets = {}
    lines = []
    for algorithm in chosen:
        entry = ALGORITHMS[algorithm]
        if algorithm == FLETCHER_ISLAM:
            mechanisms = st.session_state[K["mechs"]] or [entry.defaults()["mechanism"]]
            lines.append(
                f"- `{algorithm}` · **{app_curves.forest_privacy(mechanisms)}** · "
                "its mechanisms, trees and depth rules are swept below"
            )
            continue
        with st.expander(f"{algorithm}: settings ({entry.name})"):
            st.caption(entry.description)
            presets[algorithm] = {
                p.name: parameters.sweep_input(p, key_of(algorithm, p.name))
                for p in entry.parameters
            }
        try:
            status = privacy_status(algorithm, presets[algorithm]).text
        except ValueError as exc:
            status = f"settings not valid: {exc}"
        lines.append(f"- `{algorithm}` · {status}")
    if lines:
        st.markdown("\n".join(lines))
    return chosen, presets
