"""Attention Explorer: the frame (page config, shared sidebar, navigation)."""

from __future__ import annotations

import streamlit as st

from app_pages.common import sidebar

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
page = st.navigation([
    st.Page("app_pages/explore.py", title="Explore", icon="🔍", default=True),
    st.Page("app_pages/translate.py", title="Translate", icon="🈯"),
])
sidebar()
page.run()
