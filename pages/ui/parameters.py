"""A registry parameter (``dpviz.models.registry.Parameter``) as a widget, read through
``dpviz.app.train.parameter_widget``: the Train page's inputs and the Curves page's."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from dpviz.app import train as app_train


def train_inputs(choice: app_train.AlgorithmChoice, key_of: Callable) -> dict:
    """The Train page's widget per registry parameter of the algorithm (``key_of(algorithm,
    name)`` names each one's session key); returns their values."""
    values = {}
    for w in choice.widgets:
        key = key_of(choice.id, w.name)
        st.session_state.setdefault(key, w.initial)
        if w.kind == "choice":
            options = list(w.options)
            if w.captions and len(options) <= 3:
                chosen = st.radio(
                    w.label,
                    options,
                    format_func=w.option_text,
                    key=key,
                    horizontal=True,
                    captions=list(w.captions),
                    help=w.help,
                )
            else:
                chosen = st.selectbox(
                    w.label, options, format_func=w.option_text, key=key, help=w.help
                )
            number = None
            if w.number_option and chosen == w.number_option:
                number_key = f"{key}.number"
                st.session_state.setdefault(number_key, w.number_default)
                number = st.number_input(
                    f"{w.label}: the number",
                    1,
                    int(w.high or app_train.FIXED_NUMBER_MAX),
                    key=number_key,
                )
            values[w.name] = w.value(chosen, number)
        elif w.kind == "int":
            values[w.name] = int(
                st.number_input(
                    w.label, min_value=w.low, max_value=w.high, step=1, key=key, help=w.help
                )
            )
        elif w.kind == "float":
            values[w.name] = float(
                st.number_input(
                    w.label,
                    min_value=w.low,
                    max_value=w.high,
                    step=w.step,
                    format=w.format,
                    key=key,
                    help=w.help,
                )
            )
        elif w.kind == "bool":
            values[w.name] = st.checkbox(w.label, key=key, help=w.help)
        else:
            values[w.name] = st.text_input(w.label, key=key, help=w.help)
    return values


def sweep_input(parameter, key: str):
    """The Curves page's compact widget of one registry parameter (session key ``key``);
    returns its value."""
    w = app_train.parameter_widget(parameter)
    st.session_state.setdefault(key, w.initial)
    if w.kind == "choice":
        chosen = st.selectbox(w.label, w.options, format_func=w.option_text, key=key, help=w.help)
        number = None
        if w.number_option is not None and chosen == w.number_option:
            number = st.number_input(
                f"{w.label}: value", 1, 50, w.number_default, key=key + ".number"
            )
        return w.value(chosen, number)
    if w.kind == "bool":
        return st.checkbox(w.label, key=key, help=w.help)
    if w.kind in ("int", "float"):
        return st.number_input(
            w.label, w.low, w.high, step=w.step, format=w.format, key=key, help=w.help
        )
    return st.text_input(w.label, key=key, help=w.help)
