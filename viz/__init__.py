"""Plotly figure builders: traces or plain arrays in, ``go.Figure`` out.

Imports numpy and plotly only (never streamlit, torch or transformers). Builders are pure.
"""

from .bars import distribution_bars
from .heatmap import attention_heatmap, heads_grid

__all__ = ["attention_heatmap", "distribution_bars", "heads_grid"]
