"""The sizes views are drawn at: cells a side before tokens are pooled into blocks, and the
widths charts are shown at, which decide how many token labels fit and how wide exports are.

One home for them: viz's builders take them as their defaults, and the app passes them to
model/ (which never imports viz) where a summary is computed at the size a page draws:
:func:`model.analysis.statistics.summary_of` takes ``tile`` and ``grid``.
"""

from __future__ import annotations

HEAD_SIDE = 256  # cells a side of one head's heatmap: longer axes are drawn in blocks of tokens
GRID_SIDE = 64  # cells a side of each head in a grid of a layer's heads (Explore)
TILE_SIDE = 16  # cells a side of each head's tile in the model view (every layer and head)

# The width of a full-width chart, as measured in Chromium (Streamlit's wide layout pads the
# page by 80 px a side; a chart in one of n columns gets about 1/n of it):
SCREEN_CHART_PX = 560  # a 1024 px screen with the sidebar open: what figures are fitted to
PROJECTOR_CHART_PX = 1760  # a 1920×1080 projector, the sidebar closed (presentation mode)
SMALL_PROJECTOR_CHART_PX = 1120  # a 1280×720 projector (a common one in schools)

# The budget of builders that thin their own labels before a page fits them (viz.compare): no
# more labels than fit this width. What a chart shows is fitted to the chart widths above, its
# plot area found from its margins (viz.labels.plot_box).
SCREEN_PLOT_PX = 600
