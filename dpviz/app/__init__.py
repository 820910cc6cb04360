"""App logic: what each Streamlit page does, without streamlit.

Owns the session state, datasets and uploads, training runs, sweeps, the Negotiate page's
choice and the HTML decision report. Pages lay out widgets and call this. Imports every
layer below it (privacy, models, evaluation, figures); never streamlit.
"""
