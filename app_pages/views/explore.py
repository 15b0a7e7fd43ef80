"""Explore: one head's attention as a heatmap, and every head of the layer side by side."""

from __future__ import annotations

import streamlit as st

import viz
from app_pages.cache.getters import get_head_view, get_layer_summary, get_region
from app_pages.frame import live, widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import FROM_MOVES, kind_selector
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import PAGES, script
from app_pages.frame.run import load_run
from app_pages.frame.settings import CAPTURE_NAMES, FAMILY_NAMES, SCHEME_NAMES, kind_name, named
from app_pages.frame.sink import sink_drawn, sink_toggle
from i18n import N_, _
from model.analysis import questions
from model.analysis.cuts import (
    FIT_ABOVE,
    colour_ceiling,
    query_rows,
    region_window,
    row_shortfall,
    window_mask,
    writes_words,
)
from viz import export
from viz.pooling import block_labels, masked_blocks
from viz.sizes import HEAD_SIDE

HIGHLIGHT = "explore_highlight"  # a cell another page asked to outline (a lesson's pair)
# the lesson that opens heads with a cell outlined, by its title (in English)
SEE_IT = next(page.title for page in PAGES if page.path == script("lesson_see_it"))

st.title(_("Explore attention"))
run = load_run()
trace = run.trace
if "open_head" in st.session_state:  # a click in another view chose a head
    opened = st.session_state.pop("open_head")
    try:  # (kind, layer, head), or with the cell to outline: (query, key, its two labels)
        kind, layer_, head_ = opened[:3]
        st.session_state.update(kind=kind, layer=layer_, head=head_)
        st.session_state[HIGHLIGHT] = (kind, layer_, head_, *opened[3]) \
            if len(opened) > 3 else None
    except (TypeError, ValueError):  # a leftover of another shape: open what the widgets hold
        st.session_state[HIGHLIGHT] = None


def highlighted_cell(name: str, rows, k_tokens) -> tuple | None:
    """The outlined pair, ``(layer, head, query, key, label, origin)``, when it belongs to this
    kind and to this trace (its row and column still name the same words); else None, and a
    pair of another text is forgotten. ``origin``: the page that asked (:data:`FROM_MOVES`, or
    None for the lesson that finds pairs)."""
    stored = st.session_state.get(HIGHLIGHT)
    try:
        kind, layer_, head_, query, key, query_label, key_label, *origin = stored
        if kind != name:
            return None
        if not (0 <= query < len(rows.labels) and 0 <= key < len(k_tokens)
                and rows.labels[query] == query_label and k_tokens[key] == key_label
                and 0 <= layer_ < trace.layers(name) and 0 <= head_ < trace.n_heads):
            raise ValueError(stored)
    except (TypeError, ValueError):
        if stored is not None:
            st.session_state[HIGHLIGHT] = None
        return None
    return layer_, head_, query, key, f"{query_label} → {key_label}", (origin or [None])[0]


left, mid, right = st.columns([2, 1, 1])
name = kind_selector(trace, left)
n_layers = trace.layers(name)
layer = widgets.selectbox(_("Layer"), range(n_layers), key="layer", container=mid)
group = trace.n_heads // trace.n_kv_heads
head = widgets.selectbox(
    _("Head"), range(trace.n_heads), key="head", container=right,
    format_func=lambda h: _("{head} (K/V head {kv_head})").format(head=h, kv_head=trace.kv_head(h))
    if group > 1 else str(h))

rows, k_tokens = query_rows(trace, name), trace.axes(name)[1]
pair = highlighted_cell(name, rows, k_tokens)
cell = pair[2:4] if pair is not None and pair[:2] == (layer, head) else None
COLOUR_SCALES = {"auto": None, "full": False, "fit": True}
scale = widgets.radio(
    _("Colour scale"), list(COLOUR_SCALES), key="colour_scale", horizontal=True,
    format_func={"auto": _("automatic"), "full": _("0 to 1"),
                 "fit": _("fitted to this layer")}.get,
    help=_("Long inputs spread each row over many tokens, so every weight is small. Fitted, the "
           "layer's largest weight is the darkest; automatic fits past {fit_above} tokens."
           ).format(fit_above=FIT_ABOVE))
sink_on = sink_toggle()
with explained_errors():  # running out of memory, explained on the page
    summary = get_layer_summary(run, name, layer)  # every head of the layer, once
    weights, factors = get_head_view(run, name, layer, head, HEAD_SIDE)
allowed = trace.mask(name, layer)
zmax, fitted = colour_ceiling(summary.peak, len(k_tokens), COLOUR_SCALES[scale])
model_weights = weights
sunk = sink_drawn(sink_on, weights, allowed, factors, str(k_tokens[0]))
weights = sunk.weights
zmax_head = sunk.zmax or zmax
sunk_grid = sink_drawn(sink_on, summary.grid, allowed, summary.grid_factors, str(k_tokens[0]))
heatmap = viz.attention_heatmap(
    weights, rows.labels, k_tokens, allowed=allowed, factors=factors, max_side=HEAD_SIDE,
    title=_("{name} · layer {layer} · head {head}").format(name=kind_name(name), layer=layer,
                                                           head=head),
    y_title=rows.title, special=(rows.special, trace.special(name)[1]), zmax=zmax_head,
    query_hover=rows.hover, highlight=cell)
grid = viz.heads_grid(sunk_grid.weights, rows.labels, k_tokens, allowed=allowed,
                      factors=summary.grid_factors, cols=3 if trace.n_heads % 3 == 0 else 4,
                      zmax=sunk_grid.zmax or zmax, query_hover=rows.hover,
                      highlight=None if cell is None else (head, *cell))
shortfall = row_shortfall(model_weights, allowed) if tuple(factors) == (1, 1) else 0.0  # exact
if sunk.note:
    st.caption(sunk.note)
elif shortfall > 1e-3:
    st.caption(_("Rows of this head sum to less than 1 (by up to {share:.1%}): the rest goes to "
                 "what is not a token, a learned attention sink or compressed keys. The weights "
                 "are shown as the model mixes the values with them, not rescaled.").format(
                     share=shortfall))
if fitted and not sunk.note:
    st.caption(_("Colours fitted to this layer: the darkest colour is its largest weight away "
                 "from the first token, {zmax:.3f}; weights on the first token (often an "
                 "'attention sink') may be larger and are drawn darkest too."
                 ).format(zmax=zmax))
if cell is not None and pair[5] == FROM_MOVES:
    st.info(_("Outlined: {pair}, weight {weight:.2f}: the row of the query you clicked in What "
              "moves' map of queries and keys, at its largest weight.").format(
        pair=pair[4], weight=float(get_region(run, name, layer, head, range(cell[0], cell[0] + 1),
                                             range(cell[1], cell[1] + 1))[0, 0])),
        icon=":material/highlight_alt:")
elif cell is not None:
    st.info(_("Outlined: {pair}, weight {weight:.2f}. The lesson “{lesson}” searched every layer "
              "and head for this pair's largest weight and found it here.").format(
        pair=pair[4], weight=float(get_region(run, name, layer, head, range(cell[0], cell[0] + 1),
                                             range(cell[1], cell[1] + 1))[0, 0]),
        lesson=_(SEE_IT)),
        icon=":material/highlight_alt:")
elif pair is not None and pair[5] != FROM_MOVES:
    st.caption(_("The pair {pair} the lesson “{lesson}” pointed at is outlined in layer "
                 "{layer}, head {head}.").format(pair=pair[4], lesson=_(SEE_IT), layer=pair[0],
                                                 head=pair[1]))
def shown_table(weights=weights, factors=factors, allowed=allowed) -> bytes:
    """The weights drawn as CSV (masked cells empty): every token's, or a long input's blocks
    (exact weights of any region are in the zoom)."""
    fq, fk = factors
    return export.matrix_csv(masked_blocks(weights, allowed, factors),
                             block_labels(rows.labels, fq), block_labels(k_tokens, fk),
                             corner=_("query \\ key"))


chart(heatmap, key="head_heatmap", name=(name, f"layer {layer}", f"head {head}"),
      table=shown_table)
st.caption(_("Rows: the word the decoder is writing (it reads the word before). Columns: the "
             "token it looks at (key). Each row sums to 1. Grey cells are masked: the model may "
             "not look there. Grey italic labels are special tokens.")
           if writes_words(trace, name) else
           _("Rows: the token that is looking (query). Columns: the token it looks at (key). "
             "Each row sums to 1. Grey cells are masked: the model may not look there. Grey "
             "italic labels are special tokens."))
# a live class: which token does a row of this head attend to most, which head links a pair
live.offer("explore", lambda: questions.row_questions(trace, name, layer, head),
           lambda: questions.sharpest_link(trace, name, layer, len(rows.labels) - 1))

if factors != (1, 1):  # drawn in blocks: any region can be seen token by token
    with st.expander(_("Zoom: a region token by token, exact weights"), expanded=False):
        n_q, n_k = len(rows.labels), len(k_tokens)
        zoom_q, zoom_k = st.columns(2)
        widgets.derived((run.key, name), {"zoom_q": (0, min(n_q, HEAD_SIDE)),
                                          "zoom_k": (0, min(n_k, HEAD_SIDE))})
        qa, qb = widgets.slider(_("Queries"), 0, n_q, (0, min(n_q, HEAD_SIDE)), key="zoom_q",
                                container=zoom_q)
        ka, kb = widgets.slider(_("Keys"), 0, n_k, (0, min(n_k, HEAD_SIDE)), key="zoom_k",
                                container=zoom_k)
        if qb - qa > HEAD_SIDE or kb - ka > HEAD_SIDE:
            qb, kb = min(qb, qa + HEAD_SIDE), min(kb, ka + HEAD_SIDE)
            st.caption(_("At most {side} tokens a side are drawn token by token: showing "
                         "queries {qa}–{qb} and keys {ka}–{kb}.").format(
                side=HEAD_SIDE, qa=qa, qb=qb - 1, ka=ka, kb=kb - 1))
        if qb > qa and kb > ka:
            with explained_errors():
                region = get_region(run, name, layer, head, range(qa, qb), range(ka, kb))
            zoom = region_window(trace, name, range(qa, qb), range(ka, kb))
            chart(viz.attention_heatmap(
                region, zoom.query_tokens, zoom.key_tokens,
                allowed=window_mask(trace, name, layer, zoom), max_side=HEAD_SIDE, zmax=zmax,
                y_title=rows.title, query_hover=zoom.query_labels, key_hover=zoom.key_labels,
                title=_("Queries {qa}–{qb} × keys {ka}–{kb}, token by token").format(
                    qa=qa, qb=qb - 1, ka=ka, kb=kb - 1)),
                key="zoom_heatmap", name=(name, f"layer {layer}", f"head {head}", "zoom"))
        else:
            st.info(_("Choose at least one query and one key."))

st.subheader(_("All {n_heads} heads of layer {layer}").format(n_heads=trace.n_heads, layer=layer))
if group > 1:
    st.caption(_("Grouped-query attention: {n_kv_heads} key/value heads, each shared by "
                 "{group} consecutive query heads.").format(n_kv_heads=trace.n_kv_heads,
                                                           group=group))
chart(grid, key="heads_grid", name=(name, f"layer {layer}", "all heads"))
# The positional scheme said as one phrase: a scheme's name in Chinese already ends in 位置编码
# (正弦位置编码), so "{scheme} positions" said it twice; another scheme is named as it comes.
POSITIONS = {"sinusoidal": N_("sinusoidal positions"), "rope": N_("RoPE positions"),
             "learned": N_("learned positions"), "relative bias": N_("relative position bias"),
             "recurrence": N_("no position encoding (a recurrent model reads in order)")}
about = dict(model=literal(trace.model), family=named(FAMILY_NAMES, trace.family),
             n_layers=trace.n_layers, n_heads=trace.n_heads, n_kv_heads=trace.n_kv_heads,
             positions=_(POSITIONS[trace.positional]) if trace.positional in POSITIONS else
             _("{positional} positions").format(
                 positional=literal(named(SCHEME_NAMES, trace.positional))),
             device=trace.device, dtype=trace.dtype)
st.caption(_("{model} · {family} · {n_layers} layers × {n_heads} heads ({n_kv_heads} K/V) · "
             "{positions} · ran on {device} ({dtype})").format(**about)
           if group > 1 else
           _("{model} · {family} · {n_layers} layers × {n_heads} heads · {positions} · ran on "
             "{device} ({dtype})").format(**about))
if trace.meta.get("capture") in CAPTURE_NAMES:
    st.caption(named(CAPTURE_NAMES, trace.meta["capture"]))
