"""Streamlit pages (thin: widgets, cached loads, figures). Listed explicitly in app.py."""
