"""Figures of the lessons on the Transformer's insides: the clickable architecture (§3.2–3.3),
the sizes around each Add & Norm, one token's query against every key (§4.2), and one layer's
heads from the split to W_O (§4.6).

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
from plotly.subplots import make_subplots

from i18n import N_, _
from viz.labels import axis_ticks, escape
from viz.style import (
    BAR_COLOR,
    CELL_TEXT_COLOR,
    DIVERGING_SCALE,
    GRID_COLOR,
    GUIDE_COLOR,
    HIGHLIGHT_COLOR,
    MASK_COLOR,
    TRANSPARENT,
    head_color,
    head_name,
    themed,
)

# --- §3.2–3.3: the architecture ---------------------------------------------------------------

# Fills of the blocks (the colours of the original paper's figure), light enough for dark text
# on both themes.
FILLS = {"embed": "#f7cfd8", "attention": "#fbd9a9", "norm": "#f1f0b0", "ffn": "#c4e1f5",
         "output": "#d6cdf0"}
BORDER = "#555555"
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


def _arrow(fig: go.Figure, x0: float, y0: float, x1: float, y1: float) -> None:
    """An arrow from ``(x0, y0)`` to ``(x1, y1)`` in data units."""
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                       text="", showarrow=True, arrowhead=2, arrowsize=1.2, arrowwidth=1.6,
                       arrowcolor=GUIDE_COLOR)


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
        _arrow(fig, x, top, x, bottom)
    for sublayer, norm in RESIDUAL_PAIRS:  # the residual bypass: x goes around the sublayer
        cx, bottom, *_rest = BLOCKS[sublayer]
        n_bottom, n_top = BLOCKS[norm][1:3]
        side = cx + HALF_WIDTH + 3
        y_norm = (n_bottom + n_top) / 2
        fig.add_shape(type="path", path=f"M {cx},{bottom - 1.6} H {side} V {y_norm}",
                      line={"color": GUIDE_COLOR, "width": 1.6}, layer="below")
        _arrow(fig, side, y_norm, cx + HALF_WIDTH, y_norm)
    # the encoder's output (every token's vector) feeds every decoder layer's cross-attention
    enc_top = FRAMES["enc_stack"][2]
    cross_y = (BLOCKS["dec_cross"][1] + BLOCKS["dec_cross"][2]) / 2
    bend = (ENC_X + HALF_WIDTH + DEC_X - HALF_WIDTH) / 2 + 1
    fig.add_shape(type="path", path=f"M {ENC_X},{enc_top} V {enc_top + 5} H {bend} "
                                    f"V {cross_y}", line={"color": HIGHLIGHT_COLOR, "width": 2.2},
                  layer="below")
    _arrow(fig, bend, cross_y, DEC_X - HALF_WIDTH, cross_y)
    _arrow(fig, ENC_X, BLOCKS["enc_norm2"][2], ENC_X, enc_top)
    fig.add_annotation(x=ENC_X, y=enc_top + 6, text=_("encoder output: one vector per "
                                                      "token<br>(K, V of cross-attention)"),
                       showarrow=False, yanchor="bottom", font={"size": font_size - 1})
    _arrow(fig, DEC_X, BLOCKS["output"][2], DEC_X, BLOCKS["output"][2] + 4)
    for cx, words, title in ((ENC_X, source, _("source")), (DEC_X, target,
                                                          _("target so far"))):
        if words:
            fig.add_annotation(x=cx, y=3.5, text=f"{title}: {html.escape(words, quote=False)}",
                               showarrow=False, font={"size": font_size - 1})
            _arrow(fig, cx, 5.6, cx, 8)
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
        a figure with four ``go.Bar`` traces, one per part.
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
    fig.add_hline(y=root, line_dash="dot", line_color=GUIDE_COLOR,
                  annotation_text=_("√d_model = {root:.1f}").format(root=root),
                  annotation_position="top left")
    fig.update_layout(title=title, barmode="group", height=430, bargap=0.25,
                      margin={"l": 60, "r": 20, "t": 60 if title else 30, "b": 40},
                      legend={"orientation": "h", "y": -0.12})
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(sublayers))), ticktext=names)
    fig.update_yaxes(title_text=_("size (L2 norm)"), gridcolor=GRID_COLOR, rangemode="tozero")
    return themed(fig)


# --- §4.2: one query against every key --------------------------------------------------------

def _symmetric(values) -> float:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(np.abs(finite).max()) if finite.size and np.abs(finite).max() > 0 else 1.0


def vector_strips(rows: Sequence[tuple[str, np.ndarray]], *, title: str = "",
                  x_title: str | None = None) -> go.Figure:
    """Vectors of one length as stripes of colour, one row each (red-blue, 0 white).

    Args:
        rows: ``(label, vector [d])`` pairs, drawn top to bottom.
        title: the figure's title.
        x_title: the x axis's title (default "dimension").

    Returns:
        a figure with one ``go.Heatmap`` ``[row, dimension]``.
    """
    if not rows:
        raise ValueError("no vectors to draw")
    z = np.stack([np.asarray(v, dtype=float) for _label, v in rows])
    labels = [label for label, _v in rows]
    zmax = _symmetric(z)
    fig = go.Figure(go.Heatmap(
        z=z, zmin=-zmax, zmax=zmax, colorscale=DIVERGING_SCALE, reversescale=True,
        customdata=np.repeat(np.array(labels, dtype=object)[:, None], z.shape[1], axis=1),
        colorbar={"title": {"text": _("value")}, "len": 0.9},
        hovertemplate=_("%{customdata}<br>dimension %{x}: %{z:.3f}") + "<extra></extra>"))
    fig.update_layout(title=title, height=110 + 44 * len(rows),
                      margin={"l": 20, "r": 20, "t": 50 if title else 20, "b": 45})
    fig.update_xaxes(title_text=_("dimension") if x_title is None else x_title, showgrid=False,
                     zeroline=False)
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(rows))), ticktext=labels,
                     autorange="reversed", showgrid=False, zeroline=False, automargin=True)
    return themed(fig)


def projection(x, weight, bias, result, *, letter: str, title: str = "") -> go.Figure:
    """``x · Wᵀ + b = result`` for one head's slice of a projection, as aligned matrices: x on
    top of W's columns, b and the result beside W's rows (row i of W times x, plus b_i, gives
    result_i).

    Args:
        x: ``[d_model]`` the input vector.
        weight: ``[d_head, d_model]`` the head's rows of W_Q, W_K or W_V.
        bias: ``[d_head]`` and ``result``: ``[d_head]`` (q, k or v).
        letter: ``Q``, ``K`` or ``V``.
        title: the figure's title.

    Returns:
        a figure of four heatmaps on one red-blue scale each (x, W, b, result).
    """
    x, weight = np.asarray(x, dtype=float), np.asarray(weight, dtype=float)
    bias, result = np.asarray(bias, dtype=float), np.asarray(result, dtype=float)
    d_head, d_model = weight.shape
    if x.shape != (d_model,) or bias.shape != (d_head,) or result.shape != (d_head,):
        raise ValueError(f"shapes x {x.shape}, W {weight.shape}, b {bias.shape}, "
                         f"result {result.shape} do not fit")
    small = letter.lower()
    fig = make_subplots(rows=2, cols=3, column_widths=[0.86, 0.07, 0.07],
                        row_heights=[0.1, 0.9], horizontal_spacing=0.015, vertical_spacing=0.03,
                        subplot_titles=["x", "", "", "", "b",
                                        f"{small} = x·W<sub>{letter}</sub>ᵀ + b"])
    hover = _("%{y}, %{x}: %{z:.3f}") + "<extra></extra>"
    for z, row, col, name in ((x[None, :], 1, 1, "x"), (weight, 2, 1, f"W_{letter}"),
                              (bias[:, None], 2, 2, "b"), (result[:, None], 2, 3, small)):
        zmax = _symmetric(z)
        fig.add_trace(go.Heatmap(z=z, zmin=-zmax, zmax=zmax, colorscale=DIVERGING_SCALE,
                                 reversescale=True, showscale=False, name=name,
                                 hovertemplate=hover), row=row, col=col)
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False, autorange="reversed")
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    fig.update_yaxes(showticklabels=False, row=1, col=1)
    fig.update_xaxes(title_text=_("input dimension (d_model = {d})").format(d=d_model), row=2,
                     col=1)
    fig.update_yaxes(title_text=_("rows of W<sub>{letter}</sub> (d_head = {d})").format(
        letter=letter, d=d_head), row=2, col=1)
    for col in (2, 3):
        fig.update_xaxes(showticklabels=False, row=2, col=col)
        fig.update_yaxes(showticklabels=False, row=2, col=col)
    fig.update_layout(title=title, height=min(760, 240 + 9 * d_head),
                      margin={"l": 70, "r": 20, "t": 80 if title else 50, "b": 50})
    return themed(fig)


def query_key_bars(keys: Sequence[str], scaled, weights, allowed, *, d_head: int,
                   title: str = "") -> go.Figure:
    """One query against every key: ``q · k ÷ √d_head`` (left) and the weight after the mask
    and softmax (right), a bar per key, the numbers written on the bars.

    Args:
        keys: the key tokens.
        scaled: ``[key]`` scaled dot products; ``weights``: ``[key]`` attention weights.
        allowed: bool ``[key]``: masked keys are drawn grey (their score becomes −∞).
        d_head: the head's width (for the axis title).
        title: the figure's title.

    Returns:
        a figure with two ``go.Bar`` traces (named "scores" and "weights").
    """
    scaled, weights = np.asarray(scaled, dtype=float), np.asarray(weights, dtype=float)
    allowed = np.asarray(allowed, dtype=bool)
    n = len(keys)
    if scaled.shape != (n,) or weights.shape != (n,) or allowed.shape != (n,):
        raise ValueError(f"{scaled.shape} scores, {weights.shape} weights, {allowed.shape} "
                         f"mask for {n} keys")
    labels = escape(keys)
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[_("q · k ÷ √{d_head}").format(d_head=d_head),
                                        _("weight after softmax")])
    masked = _("masked: −∞ before softmax")
    score_text = [f"{v:.2f}" if ok else f"{v:.2f} ✗" for v, ok in zip(scaled, allowed)]
    fig.add_trace(go.Bar(
        x=scaled, y=list(range(n)), orientation="h", name="scores",
        marker_color=[BAR_COLOR if ok else MASK_COLOR for ok in allowed],
        text=score_text, textposition="outside", cliponaxis=False,
        customdata=[[label, "" if ok else masked] for label, ok in zip(labels, allowed)],
        hovertemplate=_("key %{customdata[0]}<br>q·k ÷ √d_head = %{x:.4f}") + "<br>"
        + "%{customdata[1]}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(
        x=weights, y=list(range(n)), orientation="h", name="weights",
        marker_color=[HIGHLIGHT_COLOR if ok else MASK_COLOR for ok in allowed],
        text=[f"{v:.2f}" for v in weights], textposition="outside", cliponaxis=False,
        customdata=labels,
        hovertemplate=_("key %{customdata}<br>weight %{x:.4f}") + "<extra></extra>"),
        row=1, col=2)
    spread = _symmetric(scaled)
    low = min(0.0, float(np.min(scaled)))
    fig.update_xaxes(range=[low - 0.25 * spread, max(0.0, float(np.max(scaled)))
                            + 0.3 * spread], gridcolor=GRID_COLOR, zeroline=True, row=1, col=1)
    fig.update_xaxes(range=[0, 1.2], gridcolor=GRID_COLOR, row=1, col=2)
    fig.update_yaxes(autorange="reversed", **axis_ticks(keys), row=1, col=1)
    fig.update_layout(title=title, showlegend=False, height=max(260, 110 + 34 * n),
                      margin={"l": 90, "r": 30, "t": 80 if title else 50, "b": 30}, bargap=0.25)
    return themed(fig)


# --- §4.6: multi-head ---------------------------------------------------------------------------

# The stages of one multi-head attention module, with how the seed writes their shapes.
HEAD_STAGES = (
    ("input", N_("input x"), "(B, L, d_model)"),
    ("q", N_("W<sub>Q</sub>, W<sub>K</sub>, W<sub>V</sub>, then split into heads"),
     "(B, h, L, d_head)"),
    ("pattern", N_("each head's weights"), "(B, h, L<sub>q</sub>, L<sub>k</sub>)"),
    ("z", N_("each head: weights · V"), "(B, h, L, d_head)"),
    ("concat", N_("heads concatenated"), "(B, L, h·d_head)"),
    ("output", N_("W<sub>O</sub> mixes them back"), "(B, L, d_model)"),
)


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def heads_flow(shapes: Mapping[str, Sequence[int]], n_heads: int, *, shown: int | None = None,
               title: str = "", font_size: int = 14) -> go.Figure:
    """The path of one multi-head attention module as boxes left to right, each with the
    seed's symbolic shape and the real one of this run; the split stages draw one stripe per
    head in its colour.

    Args:
        shapes: stage -> real shape (the stages of :data:`HEAD_STAGES`).
        n_heads: heads in the layer.
        shown: how many stages to draw (the rest left empty, for a step-by-step reveal).
        title: the figure's title.
        font_size: the stages' text (larger for a projector).

    Returns:
        a figure of shapes and annotations.
    """
    shown = len(HEAD_STAGES) if shown is None else max(1, min(shown, len(HEAD_STAGES)))
    fig = go.Figure()
    width, gap = 14.0, 3.2
    for i, (stage, label, symbolic) in enumerate(HEAD_STAGES[:shown]):
        x0 = i * (width + gap)
        split = stage in ("q", "pattern", "z")
        if split:
            for h in range(n_heads):
                y0 = 1 + h * 8 / n_heads
                fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=y0, y1=y0 + 8 / n_heads,
                              fillcolor=head_color(h), opacity=0.55,
                              line={"color": BORDER, "width": 0.6})
        else:
            fig.add_shape(type="rect", x0=x0, x1=x0 + width, y0=1, y1=9,
                          fillcolor=FILLS["attention"] if stage != "concat" else FILLS["norm"],
                          line={"color": BORDER, "width": 1})
        real = shapes.get(stage)
        text = f"<b>{_(label)}</b><br>{symbolic}"
        if real is not None:
            text += f"<br><b>{_shape_text(real)}</b>"
        fig.add_annotation(x=x0 + width / 2, y=9.6, text=text, showarrow=False,
                           yanchor="bottom", font={"size": font_size})
        if i:
            _arrow(fig, x0 - gap + 0.2, 5, x0 - 0.2, 5)
    fig.update_layout(title=title, height=250, showlegend=False, dragmode=False,
                      margin={"l": 10, "r": 10, "t": 50 if title else 10, "b": 10})
    right = len(HEAD_STAGES) * (width + gap) - gap
    fig.update_xaxes(range=[-1, right + 1], visible=False, fixedrange=True)
    fig.update_yaxes(range=[0.5, 16.5], visible=False, fixedrange=True)
    return themed(fig)


def concat_bars(concat_row, output_row, n_heads: int, *, title: str = "") -> go.Figure:
    """One token's concatenation of the heads (each head's d_head numbers in its colour) above
    what W_O makes of it.

    Args:
        concat_row: ``[d_model]`` W_O's input for the token; ``output_row``: ``[d_model]``
            the module's output.
        n_heads: heads (the concatenation holds ``d_model / n_heads`` numbers of each).
        title: the figure's title.

    Returns:
        a figure with two ``go.Bar`` traces (named "concat" and "output").
    """
    concat_row = np.asarray(concat_row, dtype=float)
    output_row = np.asarray(output_row, dtype=float)
    d_model = concat_row.size
    if output_row.shape != (d_model,) or d_model % n_heads:
        raise ValueError(f"{concat_row.shape} and {output_row.shape} for {n_heads} heads")
    d_head = d_model // n_heads
    dims = np.arange(d_model)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.2,
                        subplot_titles=[
                            _("concatenation: head 0's {d_head} numbers, then head 1's, …")
                            .format(d_head=d_head),
                            _("after W<sub>O</sub>: every number mixes every head")])
    fig.add_trace(go.Bar(x=dims, y=concat_row, name="concat",
                         marker_color=[head_color(i // d_head) for i in dims],
                         customdata=[head_name(i // d_head) for i in dims],
                         hovertemplate=_("dimension %{x} (%{customdata}): %{y:.3f}")
                         + "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=dims, y=output_row, name="output", marker_color=BAR_COLOR,
                         hovertemplate=_("dimension %{x}: %{y:.3f}") + "<extra></extra>"),
                  row=2, col=1)
    for h in range(1, n_heads):
        fig.add_vline(x=h * d_head - 0.5, line_dash="dot", line_color=GUIDE_COLOR, row=1, col=1)
    top = _symmetric(concat_row)
    for h in range(n_heads):
        fig.add_annotation(x=(h + 0.5) * d_head - 0.5, y=top * 1.15, xref="x", yref="y",
                           text=head_name(h), showarrow=False,
                           font={"color": head_color(h), "size": 13})
    fig.update_yaxes(range=[-top * 1.3, top * 1.35], gridcolor=GRID_COLOR, row=1, col=1)
    fig.update_yaxes(gridcolor=GRID_COLOR, row=2, col=1)
    fig.update_xaxes(title_text=_("dimension (d_model = {d})").format(d=d_model), row=2, col=1)
    fig.update_layout(title=title, showlegend=False, height=480, bargap=0.05,
                      margin={"l": 60, "r": 20, "t": 80 if title else 50, "b": 50})
    return themed(fig)
