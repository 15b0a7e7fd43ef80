"""The sizes views are drawn at: cells a side before tokens are pooled into blocks, and the plot
widths that decide how many token labels fit.

One home for them: viz's builders take them as their defaults, and the app passes them to
model/ (which never imports viz) where a summary is computed at the size a page draws:
:func:`model.analysis.statistics.summary_of` takes ``tile`` and ``grid``.
"""

from __future__ import annotations

HEAD_SIDE = 256  # cells a side of one head's heatmap: longer axes are drawn in blocks of tokens
GRID_SIDE = 64  # cells a side of each head in a grid of a layer's heads (Explore)
TILE_SIDE = 16  # cells a side of each head's tile in the model view (every layer and head)

# The plot width a full-width heatmap gets on a 1024 px screen; half-width ones (Translate's
# columns) hold short sentences, whose labels all fit anyway.
SCREEN_PLOT_PX = 600
# The plot area a full-width chart gets on a projector at 1920×1080 with the sidebar closed (the
# page's content is about 1,750 px wide; margins and colour bar take the rest).
PROJECTOR_PLOT_PX = 1450
