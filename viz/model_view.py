"""Model view: every layer × every head as a small tile in one heatmap (one trace, light)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from i18n import _
from viz.pooling import block_factor, pool_weights
from viz.sizes import TILE_SIDE
from viz.style import TRANSPARENT, WEIGHT_SCALE, themed


def model_view(trace, name: str, tile: int = TILE_SIDE, title: str = "", tiles=None) -> go.Figure:
    """All heads of all layers of ``name``: layers as rows, heads as columns.

    Each head is pooled to at most ``tile`` × ``tile`` cells (rows still sum to 1) and drawn
    as a tile of one heatmap; gaps between tiles are empty. ``customdata`` of every cell is
    ``[layer, head]``, so a selected point names its head.

    Args:
        trace: an AttentionTrace (anything with ``layers``, ``n_heads``, ``axes``, ``weights``).
        name: the attention kind.
        tile: cells per tile side at most.
        title: the figure's title.
        tiles: every head already pooled where the model ran, float ``[layer, head, tq, tk]``
            (see :class:`model.reading.blocks.LayerSummary`); ``tile`` is then unused.

    Returns:
        a figure with one ``go.Heatmap``.
    """
    n_layers, n_heads = trace.layers(name), trace.n_heads
    q_tokens, k_tokens = trace.axes(name)
    fq, fk = block_factor(len(q_tokens), tile), block_factor(len(k_tokens), tile)
    tq, tk = -(-len(q_tokens) // fq), -(-len(k_tokens) // fk)
    if tiles is not None:
        tiles = np.asarray(tiles, dtype=np.float64)
        if tiles.ndim != 4 or tiles.shape[:2] != (n_layers, n_heads):
            raise ValueError(f"tiles of shape {tiles.shape} do not match {n_layers} layers × "
                             f"{n_heads} heads")
        tq, tk = tiles.shape[2:]
    gap = 1
    z = np.full((n_layers * (tq + gap), n_heads * (tk + gap)), np.nan)
    small = np.int8 if max(n_layers, n_heads) < 128 else np.int16  # sent as typed arrays
    custom = np.full(z.shape + (2,), -1, dtype=small)
    for layer in range(n_layers):
        for head in range(n_heads):
            pooled = tiles[layer, head] if tiles is not None else pool_weights(
                trace.weights(name, layer, head).astype(np.float64), fq, fk)
            r, c = layer * (tq + gap), head * (tk + gap)
            z[r:r + tq, c:c + tk] = pooled
            custom[r:r + tq, c:c + tk] = (layer, head)
    fig = go.Figure(go.Heatmap(
        z=z.astype(np.float32), customdata=custom, coloraxis="coloraxis", hoverongaps=False,
        hovertemplate=_("layer %{customdata[0]} · head %{customdata[1]}<br>weight %{z:.3f}"
                        "<extra></extra>")))
    tile_px = max(22, min(60, 1100 // max(n_layers, 1)))
    fig.add_trace(click_targets(
        [(layer * (tq + gap) + (tq - 1) / 2, head * (tk + gap) + (tk - 1) / 2, layer, head)
         for layer in range(n_layers) for head in range(n_heads)], size=tile_px * 0.8))
    fig.update_layout(
        title=title, height=150 + tile_px * n_layers, width=max(420, 160 + tile_px * n_heads),
        # the head labels sit on top, below the room Plotly's toolbar takes
        margin={"l": 70, "r": 20, "t": 100 if title else 70, "b": 40},
        coloraxis={"colorscale": WEIGHT_SCALE, "cmin": 0, "cmax": 1,
                   "colorbar": {"title": {"text": _("weight")}, "len": 0.5}},
        clickmode="event+select")
    fig.update_xaxes(tickmode="array", tickvals=[h * (tk + gap) + (tk - 1) / 2
                                                 for h in range(n_heads)],
                     ticktext=[_("H{head}").format(head=h) for h in range(n_heads)],
                     side="top", showgrid=False, zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=[layer * (tq + gap) + (tq - 1) / 2
                                                 for layer in range(n_layers)],
                     ticktext=[_("L{layer}").format(layer=layer) for layer in range(n_layers)],
                     autorange="reversed", showgrid=False, zeroline=False)
    return themed(fig)


def click_targets(cells, size: float) -> go.Scatter:
    """Invisible markers over heatmap cells: Plotly heatmaps send no selection events, markers
    do. ``cells`` are ``(y, x, layer, head)``; each marker's customdata is ``[layer, head]``."""
    ys, xs, layers, heads = zip(*cells)
    return go.Scatter(
        x=xs, y=ys, mode="markers", name="open a head", showlegend=False,
        customdata=np.stack([layers, heads], axis=-1),
        marker={"size": size, "symbol": "square", "color": TRANSPARENT},
        hovertemplate=_("layer %{customdata[0]} · head %{customdata[1]}: click to open"
                        "<extra></extra>"))
