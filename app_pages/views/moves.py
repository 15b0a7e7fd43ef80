"""What moves: one head's raw weights beside what its keys actually add (weight × ‖value‖), value
zeroing and norm-based rollout; heads left out and ranked; the head's queries and keys in one
map."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages.cache.getters import (
    get_ablation,
    get_attention_parts,
    get_head_ranking,
    get_norm_rollout,
    get_qk_map,
    get_trace_with_moves,
    get_value_zeroing,
)
from app_pages.frame import widgets
from app_pages.frame.charts import chart, export_name
from app_pages.frame.controls import FROM_MOVES, kind_selector
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.run import load_run, trace_bytes
from app_pages.frame.settings import kind_name, presenting
from i18n import N_, _
from model.analysis.cuts import query_rows
from model.analysis.moves import check_keys, what_moves
from model.errors import CaptureError
from viz.moves import ablation_bars, method_heatmap, qk_scatter

# each method: its name and its recipe with the paper it comes from
METHODS = {
    "raw": (N_("Raw weights"), N_(
        "α_ij, the softmax of the scores: how much query i weighs key j. It says nothing of "
        "how large key j's value is.")),
    "norm": (N_("Weight × ‖value‖"), N_(
        "α_ij ‖v_j W_Oʰ‖, each row divided by its sum: the length of the vector key j actually "
        "adds to query i's output through this head (Kobayashi et al. 2020, “Attention is not "
        "only a weight”). A key with a large weight and a small value moves little.")),
    "zeroing": (N_("Value zeroing"), N_(
        "Key j's value set to zero in every head of the layer, the layer run again: 1 − cos "
        "between its output at query i with and without, each row divided by its sum (Mohebbi "
        "et al. 2023). One pass per key; the whole layer, not one head.")),
    "rollout": (N_("Norm-based rollout"), N_(
        "Each layer's ‖Σ_h α_ij v_j W_Oʰ‖, rows divided by their sums, mixed half and half with "
        "the identity for the residual stream and multiplied through the layers below "
        "(Abnar & Zuidema 2020's rollout on Kobayashi's norms). The stack up to this layer, "
        "not one head."))}
MEASURES = {"next token": N_("the next-token distribution (total variation)"),
            "translation": N_("the translation's distributions (total variation)"),
            "hidden states": N_("the final hidden states (1 − cos)")}

st.title(_("What moves"))
st.caption(_("A large attention weight is not yet a large effect: the key's value may be small. "
             "Four readings of the same head side by side, each row summing to 1 on one colour "
             "scale."))
run = load_run()
trace = run.trace
left, mid, right = st.columns([2, 1, 1])
name = kind_selector(trace, left, key="wm_kind")
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="wm_layer", container=mid)
head = widgets.selectbox(_("Head"), range(trace.n_heads), key="wm_head", container=right)
try:
    check_keys(trace, name)  # before anything runs
except ValueError as error:
    st.info(str(error))
    st.stop()
with explained_errors():
    try:
        parts = get_attention_parts(run)
    except CaptureError as error:
        st.warning(literal(_("This view needs the values and the output projection of every "
                             "attention layer, and {model} does not give them: {reason}").format(
            model=run.key.spec, reason=error)))
        st.stop()
    zeroing = get_value_zeroing(run, name, layer)
    flows = get_norm_rollout(run, name) if name.endswith(".self") else None
    found = what_moves(run.model, run.key.text, name, layer, head, parts=parts, zeroing=zeroing,
                       rollout=None if flows is None else flows[layer])

rows, k_tokens = query_rows(trace, name), list(trace.axes(name)[1])
special = (rows.special, trace.special(name)[1])
shown = [m for m in METHODS if found.method(m) is not None]
# two side by side on a projector (1920 px); one under another on a 1024 px screen, where two
# columns beside the sidebar left each heatmap a few cells wide
per_row = 2 if presenting() else 1
for start in range(0, len(shown), per_row):
    columns = st.columns(per_row)
    for column, method in zip(columns, shown[start:start + per_row]):
        title, recipe = METHODS[method]
        with column:
            chart(method_heatmap(found.method(method), rows.labels, k_tokens,
                                 largest=found.largest(method),
                                 differs=found.disagreement(method), allowed=found.allowed,
                                 title=_(title), y_title=rows.title,
                                 query_hover=rows.hover, special=special,
                                 scale_title=None if method == "raw" else _("share")),
                  key=f"wm_{method}", name=(name, f"layer {layer}", f"head {head}", method),
                  share=1 / per_row)
            st.caption(_(recipe))
if flows is None:
    st.caption(_("No rollout for cross-attention: rollout follows one token stream through its "
                 "layers, and cross-attention's keys come from the other stack."))
st.caption(_("Outlined in orange: a row's largest key where it is not the raw weights' largest. "
             "The longest vector a key adds through this head here has length {norm:.3f}.").format(
    norm=found.norm_absolute.max()))

st.download_button(
    _("This trace with what moves (.npz)"), data=lambda: trace_bytes(get_trace_with_moves(run)),
    file_name=f"{export_name('trace', 'moves')}.npz", mime="application/octet-stream",
    key="wm_npz", on_click="ignore", icon=":material/download:",
    help=_("The weights and, beside them, every layer's weight × ‖value‖, value zeroing and "
           "rollout (the export format's optional arrays); computed when downloaded."))

# --- head ablation ---------------------------------------------------------------------------
st.subheader(_("Leave heads out"))
st.caption(_("The chosen heads' output set to zero (what transformers' head_mask did): only the "
             "other heads and W_O's bias remain. For a model that writes, the change of its "
             "next-token distributions; for an encoder, of its final hidden states."))
chosen = widgets.multiselect(_("Heads to leave out of layer {layer}").format(layer=layer),
                             list(range(trace.n_heads)), key="wm_ablate")
if chosen:
    with explained_errors():
        ablation = get_ablation(run, name, layer, tuple(sorted(chosen)))
    st.metric(_(MEASURES[ablation.measure]), f"{ablation.change:.4f}")
    if ablation.before or ablation.after:
        same = ablation.before == ablation.after
        st.markdown(literal(_("Without them: {after}").format(after=ablation.after)) + "  \n" +
                    literal(_("With every head: {before}").format(before=ablation.before)))
        st.caption(_("The output is the same.") if same else _("The output changed."))
if st.toggle(_("Rank every head of this layer"), key="wm_rank",
             help=_("Leaves each head out alone, one run per head.")):
    with explained_errors():
        ranked = get_head_ranking(run, name, layer)
    chart(ablation_bars([a.heads[0] for a in ranked], [a.change for a in ranked],
                        measure=_(MEASURES[ranked[0].measure]),
                        changed=[a.before != a.after for a in ranked]),
          key="wm_ranking", name=(name, f"layer {layer}", "ablation"))
    if any(a.before != a.after for a in ranked):
        st.caption(_("Orange: leaving that head out changes what the model writes."))

# --- the query-key map -----------------------------------------------------------------------
st.subheader(_("Queries and keys in one map"))
PROJECTIONS = {"pca": N_("PCA"), "tsne": N_("t-SNE")}
method = widgets.radio(_("Projection"), list(PROJECTIONS), key="wm_projection", horizontal=True,
                       format_func=lambda m: _(PROJECTIONS[m]))
with explained_errors():
    mapped = get_qk_map(run, name, layer, head, method)
shared = trace.n_heads // trace.n_kv_heads
title = _("{name} · layer {layer} · head {head}: queries and keys").format(
    name=kind_name(name), layer=layer, head=head)
event = chart(qk_scatter(mapped.points, mapped.n_queries, rows.labels, k_tokens, title=title),
              key="wm_qk", name=(name, f"layer {layer}", f"head {head}", "qk"),
              on_select="rerun", selection_mode="points")
st.caption(_("Every query (circle) and key (diamond) of this head, projected together. The keys "
             "are moved so that their mean is the queries' mean, and queries and keys scaled to "
             "the same mean length (AttentionViz, Yeh et al. 2023); neither changes any row's "
             "softmax, so a query tends to attend to the keys near it. Click a query to open "
             "its row in Explore.") + (
    " " + _("This head's keys serve {count} query heads (grouped-query attention): they are "
            "drawn once.").format(count=shared) if shared > 1 else ""))
points = (event or {}).get("selection", {}).get("points", []) if event else []
for point in points:
    is_key, position = (point.get("customdata") or [None, None])[:2]
    if is_key == 0 and position is not None and 0 <= position < len(rows.labels):
        key = int(np.nanargmax(np.where(found.allowed[position], found.raw[position], np.nan)))
        st.session_state["open_head"] = (name, layer, head, (
            position, key, rows.labels[position], k_tokens[key], FROM_MOVES))
        st.switch_page(script("explore"))
