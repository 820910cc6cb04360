"""Figures: every plotly figure dpviz draws (trees, leaves, curves, teaching), unit-tested.

Imports only dpviz.privacy, dpviz.models and dpviz.evaluation; never streamlit.
"""
