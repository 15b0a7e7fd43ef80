"""Figures of the lesson §3.2–3.3: the clickable architecture and the sizes around each
Add & Norm.

Pure builders: plain arrays and strings in, a ``go.Figure`` out. The architecture's blocks carry
invisible markers whose ``customdata`` is the block's id (see :data:`BLOCKS`);
:func:`clicked_block` reads a chart's selection event back into that id.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from i18n import N_, _
from viz.lessons.layout import BORDER, FILLS, arrow
from viz.style import (
    BAR_COLOR,
    CELL_TEXT_COLOR,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    TRANSPARENT,
    themed,
)

X_RANGE = (-8, 109)
Y_RANGE = (-2, 101)
ENC_X, DEC_X, HALF_WIDTH = 28.0, 74.0, 17.0


# id -> (column centre, bottom, top, fill, label); labels are translated where drawn.
BLOCKS: dict[str, tuple[float, float, float, str, str]] = {
    "src_embed": (ENC_X, 8, 15, "embed", N_("Embeddings +<br>positional encoding")),
    "enc_self": (ENC_X, 22, 30, "attention", N_("Multi-head<br>self-attention")),
    "enc_norm1": (ENC_X, 33, 38, "norm", N_("Residual + LayerNorm")),
    "enc_ffn": (ENC_X, 42, 50, "ffn", N_("Feed-forward<br>network (FFN)")),
    "enc_norm2": (ENC_X, 53, 58, "norm", N_("Residual + LayerNorm")),
    "tgt_embed": (DEC_X, 8, 15, "embed", N_("Embeddings +<br>positional encoding")),
    "dec_self": (DEC_X, 22, 30, "attention", N_("Masked multi-head<br>self-attention")),
    "dec_norm1": (DEC_X, 33, 38, "norm", N_("Residual + LayerNorm")),
    "dec_cross": (DEC_X, 42, 50, "attention", N_("Cross-attention<br>Q: decoder<br>K, V: "
                                                 "encoder")),
    "dec_norm2": (DEC_X, 53, 58, "norm", N_("Residual + LayerNorm")),
    "dec_ffn": (DEC_X, 62, 70, "ffn", N_("Feed-forward<br>network (FFN)")),
    "dec_norm3": (DEC_X, 73, 78, "norm", N_("Residual + LayerNorm")),
    "output": (DEC_X, 86, 93, "output", N_("Linear + softmax<br>→ the next word")),
}
# The stacks' frames: id -> (column centre, bottom, top); their labels name the layer count.
FRAMES = {"enc_stack": (ENC_X, 19, 61), "dec_stack": (DEC_X, 19, 81)}
# Each sublayer and the Add & Norm it feeds (the residual's bypass is drawn around it).
RESIDUAL_PAIRS = (("enc_self", "enc_norm1"), ("enc_ffn", "enc_norm2"), ("dec_self", "dec_norm1"),
                  ("dec_cross", "dec_norm2"), ("dec_ffn", "dec_norm3"))
FLOW = (("src_embed", "enc_self"), ("enc_self", "enc_norm1"), ("enc_norm1", "enc_ffn"),
        ("enc_ffn", "enc_norm2"), ("tgt_embed", "dec_self"), ("dec_self", "dec_norm1"),
        ("dec_norm1", "dec_cross"), ("dec_cross", "dec_norm2"), ("dec_norm2", "dec_ffn"),
        ("dec_ffn", "dec_norm3"), ("dec_norm3", "output"))
ALL_TARGETS = (*BLOCKS, *FRAMES)


def architecture_diagram(n_encoder: int, n_decoder: int, *, d_model: int, n_heads: int,
                         d_ff: int, selected: Sequence[str] = (),
                         targets: Mapping[str, str] | None = None,
                         source: str = "", target: str = "", font_size: int = 13) -> go.Figure:
    """The encoder-decoder of §3.2 as blocks, encoder on the left, decoder on the right.

    Every block and each stack's frame is covered by invisible markers whose ``customdata`` is
    its id (:data:`ALL_TARGETS`), so a click on a chart drawn with selections names it.

    Args:
        n_encoder, n_decoder: layers per stack (the frames say "× N").
        d_model, n_heads, d_ff: sizes written in the blocks.
        selected: ids drawn with a highlighted border.
        targets: id -> the view a click opens (its title), said when hovering.
        source, target: the words entering each stack, written under them.
        font_size: the blocks' text (larger for a projector); the notes are 1 px smaller.

    Returns:
        a figure of shapes and annotations, and one marker trace (named ``blocks``).
    """
    targets = dict(targets or {})
    fig = go.Figure()
    for frame, (cx, bottom, top) in FRAMES.items():
        fig.add_shape(type="rect", x0=cx - HALF_WIDTH - 4, x1=cx + HALF_WIDTH + 6, y0=bottom,
                      y1=top, line={"color": HIGHLIGHT_COLOR if frame in selected else BORDER,
                                    "width": 3 if frame in selected else 1.2, "dash": "dash"},
                      fillcolor=TRANSPARENT, layer="below")
        count = n_encoder if frame == "enc_stack" else n_decoder
        label = (_("{count} ×<br>encoder<br>layers") if frame == "enc_stack"
                 else _("{count} ×<br>decoder<br>layers")).format(count=count)
        # the encoder's count on its left, the decoder's on its right: the path between the
        # stacks carries the encoder's output
        left = frame == "enc_stack"
        fig.add_annotation(x=cx - HALF_WIDTH - 5 if left else cx + HALF_WIDTH + 6.5,
                           y=(bottom + top) / 2, text=label, showarrow=False,
                           xanchor="right" if left else "left", font={"size": font_size})
    for block, (cx, bottom, top, kind, label) in BLOCKS.items():
        chosen = block in selected
        fig.add_shape(type="rect", x0=cx - HALF_WIDTH, x1=cx + HALF_WIDTH, y0=bottom, y1=top,
                      line={"color": HIGHLIGHT_COLOR if chosen else BORDER,
                            "width": 4 if chosen else 1.2},
                      fillcolor=FILLS[kind], layer="below")
        text = _(label)
        if block in ("enc_ffn", "dec_ffn"):
            text += f"<br>{d_model} → {d_ff} → {d_model}"
        elif block == "enc_self":
            text += "<br>" + _("{heads} heads × {d_head}").format(heads=n_heads,
                                                                  d_head=d_model // n_heads)
        fig.add_annotation(x=cx, y=(bottom + top) / 2, text=text, showarrow=False,
                           font={"color": CELL_TEXT_COLOR, "size": font_size})
    for below, above in FLOW:
        x, _b, top, *_rest = BLOCKS[below]
        bottom = BLOCKS[above][1]
        arrow(fig, x, top, x, bottom)
    for sublayer, norm in RESIDUAL_PAIRS:  # the residual bypass: x goes around the sublayer
        cx, bottom, *_rest = BLOCKS[sublayer]
        n_bottom, n_top = BLOCKS[norm][1:3]
        side = cx + HALF_WIDTH + 3
        y_norm = (n_bottom + n_top) / 2
        fig.add_shape(type="path", path=f"M {cx},{bottom - 1.6} H {side} V {y_norm}",
                      line={"color": GUIDE_COLOR, "width": 1.6}, layer="below")
        arrow(fig, side, y_norm, cx + HALF_WIDTH, y_norm)
    # the encoder's output (every token's vector) feeds every decoder layer's cross-attention
    enc_top = FRAMES["enc_stack"][2]
    cross_y = (BLOCKS["dec_cross"][1] + BLOCKS["dec_cross"][2]) / 2
    bend = (ENC_X + HALF_WIDTH + DEC_X - HALF_WIDTH) / 2 + 1
    fig.add_shape(type="path", path=f"M {ENC_X},{enc_top} V {enc_top + 5} H {bend} "
                                    f"V {cross_y}", line={"color": HIGHLIGHT_COLOR, "width": 2.2},
                  layer="below")
    arrow(fig, bend, cross_y, DEC_X - HALF_WIDTH, cross_y)
    arrow(fig, ENC_X, BLOCKS["enc_norm2"][2], ENC_X, enc_top)
    fig.add_annotation(x=ENC_X, y=enc_top + 6, text=_("encoder output: one vector per "
                                                      "token<br>(K, V of cross-attention)"),
                       showarrow=False, yanchor="bottom", font={"size": font_size - 1})
    arrow(fig, DEC_X, BLOCKS["output"][2], DEC_X, BLOCKS["output"][2] + 4)
    for cx, words, title in ((ENC_X, source, _("source")), (DEC_X, target,
                                                          _("target so far"))):
        if words:
            fig.add_annotation(x=cx, y=3.5, text=f"{title}: {html.escape(words, quote=False)}",
                               showarrow=False, font={"size": font_size - 1})
            arrow(fig, cx, 5.6, cx, 8)
    fig.add_trace(_click_markers(targets))
    fig.update_layout(height=780, margin={"l": 10, "r": 10, "t": 20, "b": 10},
                      showlegend=False, clickmode="event+select", dragmode=False,
                      hovermode="closest", hoverdistance=30)
    fig.update_xaxes(range=list(X_RANGE), visible=False, fixedrange=True)
    fig.update_yaxes(range=list(Y_RANGE), visible=False, fixedrange=True)
    return themed(fig)


def _click_markers(targets: Mapping[str, str]) -> go.Scatter:
    """Invisible markers over every block and frame label; ``customdata`` is the id."""
    xs, ys, ids, hovers = [], [], [], []
    for block, (cx, bottom, top, _kind, label) in BLOCKS.items():
        # dense enough that every point of a block is within a marker's reach (a click
        # selects the nearest marker within ``hoverdistance`` pixels)
        for dx in np.arange(-HALF_WIDTH + 1.5, HALF_WIDTH - 1, 2.5):
            for y in np.arange(bottom + 1, top - 0.4, 1.6):
                xs.append(cx + dx)
                ys.append(y)
                ids.append(block)
                hovers.append(_hover(_(label), targets.get(block)))
    for frame, (cx, bottom, top) in FRAMES.items():
        name = _("the encoder's layers") if frame == "enc_stack" else _("the decoder's layers")
        for y in np.arange(bottom + 3, top - 2, 4.0):
            xs.append(cx - HALF_WIDTH - 9 if frame == "enc_stack" else cx + HALF_WIDTH + 11)
            ys.append(y)
            ids.append(frame)
            hovers.append(_hover(name, targets.get(frame)))
    return go.Scatter(
        x=xs, y=ys, mode="markers", name="blocks", customdata=ids, hovertext=hovers,
        hovertemplate="%{hovertext}<extra></extra>", showlegend=False,
        marker={"size": 18, "symbol": "square", "color": TRANSPARENT})


def _hover(label: str, view: str | None) -> str:
    label = label.replace("<br>", " ")
    return label if not view else _("{block}<br>click: {view}").format(block=label, view=view)


def clicked_block(event) -> str | None:
    """The id of the first clicked block in a chart's selection event (None if none).

    Streamlit sends a point's ``customdata`` as it was (a string here), or an array's entries
    keyed ``"0"``, ``"1"``.
    """
    try:
        points = list(event["selection"]["points"])
    except (KeyError, TypeError):
        return None
    for point in points:
        custom = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(custom, dict):
            custom = custom.get("0")
        elif isinstance(custom, list | tuple):
            custom = custom[0] if custom else None
        if isinstance(custom, str) and custom in ALL_TARGETS:
            return custom
    return None


# The four sizes around one Add & Norm, in order, and their colours.
SIZE_PARTS = (N_("‖x‖ (what enters)"), N_("‖sublayer(x)‖"), N_("‖x + sublayer(x)‖"),
              N_("‖LayerNorm(x + sublayer(x))‖"))
SIZE_COLORS = ("#7f7f7f", HIGHLIGHT_COLOR, "#9467bd", BAR_COLOR)


def residual_sizes(sizes, sublayers: Sequence[str], *, d_model: int, title: str = "",
                   chosen: int | None = None) -> go.Figure:
    """Grouped bars: for each sublayer, the L2 norms of x, sublayer(x), their sum and
    LayerNorm's output, with a line at √d_model (the size of a vector LayerNorm leaves at mean
    0 and variance 1, before its learned scale).

    Args:
        sizes: ``[sublayer, 4]`` norms, parts as :data:`SIZE_PARTS`.
        sublayers: the sublayers' names (translated), one per row of ``sizes``.
        d_model: the width (for the √d_model line).
        title: the figure's title.
        chosen: a sublayer whose name is drawn bold.

    Returns:
        a figure with four ``go.Bar`` traces, one per part, and the dotted line's entry in
        the legend (a ``go.Scatter`` without points).
    """
    sizes = np.asarray(sizes, dtype=float)
    if sizes.shape != (len(sublayers), len(SIZE_PARTS)):
        raise ValueError(f"sizes of shape {sizes.shape} for {len(sublayers)} sublayers")
    names = [f"<b>{s}</b>" if i == chosen else s for i, s in enumerate(sublayers)]
    fig = go.Figure([
        go.Bar(x=list(range(len(sublayers))), y=sizes[:, part], name=_(SIZE_PARTS[part]),
               marker_color=SIZE_COLORS[part], text=[f"{v:.1f}" for v in sizes[:, part]],
               textposition="outside", cliponaxis=False,
               hovertemplate="%{y:.3f}<extra>" + _(SIZE_PARTS[part]) + "</extra>")
        for part in range(len(SIZE_PARTS))])
    root = math.sqrt(d_model)
    # the line runs beneath the bars and their values, and is named in the legend: a label on
    # the plot sat on the first group's bars (grey on the grey bar of ‖x‖), whatever the
    # language or the size of the text
    fig.add_hline(y=root, line_dash="dot", line_color=GUIDE_COLOR, layer="below")
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=_(
        "√d_model = {root:.1f}").format(root=root), hoverinfo="skip",
        line={"color": GUIDE_COLOR, "dash": "dot", "width": 2}))
    fig.update_layout(title=title, barmode="group", height=430, bargap=0.25,
                      margin={"l": 60, "r": 20, "t": 60 if title else 30, "b": 40},
                      legend={"orientation": "h", "y": -0.12})
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(sublayers))), ticktext=names)
    fig.update_yaxes(title_text=_("size (L2 norm)"), gridcolor=GRID_COLOR, rangemode="tozero")
    return themed(fig)
