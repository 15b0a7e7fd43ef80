"""Selection events of Streamlit's plotly charts, parsed in app_pages/frame/events.py."""

from __future__ import annotations

from app_pages.frame.events import clicked_token, selected_head


def test_selected_head_reads_a_streamlit_selection_event():
    event = {"selection": {"points": [{"x": 3, "y": 9, "customdata": [4, 2]}]}}
    assert selected_head(event) == (4, 2)
    # what Streamlit really sends for an array customdata
    streamlit_event = {"selection": {"points": [{"curve_number": 1, "customdata": {"0": 2,
                                                                                  "1": 3}}]}}
    assert selected_head(streamlit_event) == (2, 3)
    assert selected_head({"selection": {"points": []}}) is None
    assert selected_head(None) is None


def test_a_gap_between_tiles_opens_no_head():
    gap = {"selection": {"points": [{"customdata": {"0": -1, "1": -1}}]}}
    assert selected_head(gap) is None


def test_clicked_token_is_a_query_of_the_left_column_only():
    left = {"selection": {"points": [{"x": 0, "y": 2, "customdata": 2}]}}
    right = {"selection": {"points": [{"x": 1, "y": 2, "customdata": 2}]}}
    assert clicked_token(left) == 2
    assert clicked_token(right) is None
    assert clicked_token({}) is None and clicked_token(None) is None
