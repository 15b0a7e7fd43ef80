"""Streamlit pages (thin: widgets, cached loads, figures), listed explicitly in app.py.

Named app_pages, not pages: Streamlit runs a `pages/` folder beside the main script as an
old-style multipage app on a fresh server's first request, bypassing app.py.
"""
