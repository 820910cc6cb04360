"""dpviz home page (placeholder until the pages land)."""

import streamlit as st

st.set_page_config(page_title="dpviz", layout="wide")
st.title("dpviz")
