"""Attention Explorer: the frame (page config, shared sidebar, navigation)."""

from __future__ import annotations

import streamlit as st

from pages.common import sidebar

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
page = st.navigation([
    st.Page("pages/explore.py", title="Explore", icon="🔍", default=True),
])
sidebar()
page.run()
