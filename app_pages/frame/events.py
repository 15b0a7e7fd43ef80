"""Selection events of ``st.plotly_chart``, parsed in one place.

Plotly heatmaps send no selection events, so the figures carry invisible markers whose
``customdata`` names what a click chose (``viz.model_view.click_targets``); Streamlit sends an
array's entries keyed ``"0"``, ``"1"``.
"""

from __future__ import annotations


def points(event) -> list[dict]:
    """The selected points of a chart's event (empty when nothing is selected)."""
    try:
        return list(event["selection"]["points"])
    except (KeyError, TypeError):
        return []


def selected_head(event) -> tuple[int, int] | None:
    """``(layer, head)`` of the first selected tile or cell that names a head, if any."""
    for point in points(event):
        custom = point.get("customdata")
        if isinstance(custom, dict):
            custom = [custom.get("0"), custom.get("1")]
        if custom is not None and len(custom) == 2 and None not in custom and custom[0] >= 0:
            return int(custom[0]), int(custom[1])
    return None


def clicked_token(event) -> int | None:
    """The position of the first clicked token of the head view's left (query) column."""
    for point in points(event):
        if point.get("x") == 0 and "customdata" in point:
            return int(point["customdata"])
    return None
