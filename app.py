"""Attention Explorer: the frame (page config, shared sidebar, navigation)."""

from __future__ import annotations

import streamlit as st

from app_pages.common import sidebar
from app_pages.navigation import PAGES

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
pages = [(spec, st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec.default))
         for spec in PAGES]
sections: dict[str, list] = {}
for spec, page in pages:
    sections.setdefault(spec.group, []).append(page)
current = st.navigation(sections)
spec = next(spec for spec, page in pages if page is current)
sidebar(with_text=spec.reads_text)
current.run()
