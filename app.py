"""Attention Explorer: the frame (page config, shared sidebar, navigation)."""

from __future__ import annotations

import streamlit as st

from app_pages.common import sidebar

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
page = st.navigation({
    "Look at attention": [
        st.Page("app_pages/explore.py", title="Explore", icon="🔍", default=True),
        st.Page("app_pages/model_view.py", title="Model view", icon="🧱"),
        st.Page("app_pages/head_view.py", title="Head view", icon="🔗"),
        st.Page("app_pages/mask.py", title="Causal mask", icon="🎭"),
        st.Page("app_pages/rollout.py", title="Rollout", icon="🌊"),
        st.Page("app_pages/stats.py", title="Head statistics", icon="📊"),
    ],
    "Understand the parts": [
        st.Page("app_pages/positions.py", title="Positions", icon="🕰️"),
        st.Page("app_pages/shapes.py", title="Shapes and costs", icon="📐"),
        st.Page("app_pages/translate.py", title="Translate", icon="🈯"),
    ],
})
sidebar(with_text=page.url_path not in ("translate", "positions"))
page.run()
