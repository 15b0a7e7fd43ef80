"""Plotly figure builders: traces or plain arrays in, ``go.Figure`` out.

Imports numpy and plotly only (never streamlit, torch or transformers). Builders are pure.

- one view each: :mod:`.heatmap` (a head, a layer's heads), :mod:`.model_view`,
  :mod:`.head_view`, :mod:`.mask_view`, :mod:`.rollout` (a rollout pooled to what is drawn),
  :mod:`.compare` (the difference of two heads), :mod:`.stats`, :mod:`.bars`,
  :mod:`.live` (a live class's votes beside the model's answer), :mod:`.moves` (What moves'
  methods, heads ranked by ablation, the query–key map),
  :mod:`.positional`, :mod:`.costs`;
- shared: :mod:`.sizes` (the sizes views are drawn at), :mod:`.pooling` (long axes in blocks),
  :mod:`.labels` (token labels, fitted so that none overlap), :mod:`.style` (colours and fonts),
  :mod:`.numbers` (how numbers are written), :mod:`.present` (charts fitted to a screen or a
  projector, colour-blind palettes), :mod:`.export` (PNG/SVG/PDF, HTML, CSV, for slides);
- :mod:`.lessons`: the lessons' figures, one module per lesson.
"""

from viz.bars import distribution_bars
from viz.compare import difference_heatmap
from viz.costs import complexity_curves
from viz.head_view import head_view
from viz.heatmap import attention_heatmap, heads_grid
from viz.mask_view import mask_view
from viz.model_view import model_view
from viz.positional import (
    clock_hands,
    rope_circles,
    rope_offsets,
    rope_periods,
    similarity_matrix,
    sinusoidal_heatmap,
)
from viz.rollout import rollout_heatmap
from viz.stats import stats_heatmap

__all__ = [
    "attention_heatmap", "clock_hands", "complexity_curves", "difference_heatmap",
    "distribution_bars", "head_view",
    "heads_grid", "mask_view", "model_view", "rollout_heatmap", "rope_circles", "rope_offsets",
    "rope_periods",
    "similarity_matrix", "sinusoidal_heatmap", "stats_heatmap",
]
