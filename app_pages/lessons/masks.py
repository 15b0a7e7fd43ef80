"""Lesson §3.4, every mask: bidirectional, causal, sliding-window and prefix-LM masks applied to
one real head's scores (scores → mask → softmax), the mask the model itself uses named from its
family, and padding: two sentences of different lengths run together in one padded batch."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import get_trace, heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import kind_selector, self_attention_kinds
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.run import load_run
from app_pages.frame.settings import FAMILY_NAMES, kind_label, presenting
from app_pages.lessons.lesson import MAX_SENTENCE, footer, header, own_model_run
from i18n import N_, _
from model.lessons.masks import (
    MASKS,
    every_mask,
    head_scores,
    largest_difference,
    matching_masks,
    model_mask,
    padded_batch,
)
from model.lessons.network import own_network
from model.own.vocab import SPECIALS
from viz.lessons.masks import mask_steps
from viz.numbers import tiny

PATH = script("lesson_masks")
SOURCES = {"own": N_("the lesson's own model"), "sidebar": N_("the sidebar's model and text")}
# Each mask: its name, who uses it, and what it is for (the width and prefix filled in).
MASK_TEXT = {
    "bidirectional": (N_("Bidirectional"), N_("encoders: BERT, the translator's encoder"),
                      N_("Nothing is hidden but padding: every token sees every token, to its "
                         "left and to its right. An encoder reads a whole text it is given, "
                         "to understand it.")),
    "causal": (N_("Causal"), N_("decoders: GPT, Llama, the translator's decoder"),
               N_("Each token sees itself and the tokens before it, never the ones after: the "
                  "writer's blindfold of §3.4 step 2a, so that in training a word cannot copy "
                  "the word it must predict.")),
    "sliding": (N_("Sliding window"), N_("local attention"),
                N_("Causal, and only the {width} latest tokens, itself included, as in "
                   "`Mistral`: each row costs the same however long the text, and layers "
                   "stacked on each other still reach further back.")),
    "prefix": (N_("Prefix-LM"), N_("a prefix language model"),
               N_("The first {prefix} tokens (the prompt, the text to continue) see each other "
                  "both ways; every token after them sees the prefix and the tokens before it, "
                  "causally, as in T5's prefix language model and `UniLM`.")),
}
SECOND_SENTENCE = "The dog chased the cat because it was angry"
PAD_DRAWN = 40  # the most tokens a side the padded batch's head is drawn with
STACK_IDS = {"encoder": N_("source ids {shape}"), "decoder": N_("target ids {shape}")}

header(PATH)
st.markdown(_(
    "Attention lets every query score every key; a **mask** says which of those scores count. "
    "The seed's attention function applies any mask in one line (§4.9), "
    "`scores.masked_fill(mask == 0, float(\"-inf\"))`: a forbidden score becomes **−∞**, and "
    "after the softmax its weight is exactly **0**. The decoder's causal mask (§3.4 step 2a) is "
    "one such mask; below, four masks are applied to the same real head's scores, and padding "
    "is shown in a real batch."))

source = widgets.radio(_("Scores from"), list(SOURCES), key="masks_source", horizontal=True,
                       format_func=lambda s: _(SOURCES[s]),
                       help=_("The lesson's own model and sentence, or whatever the sidebar has "
                              "loaded (its text too), where its trace holds the scores."))
if source == "own":
    spec, device, text, loaded, trace = own_model_run("masks")
    dtype = "auto"
else:
    run = load_run()
    spec, device, text, dtype = run.key.spec, run.key.device, run.key.text, run.key.dtype
    loaded, trace = run.model, run.trace

kinds = self_attention_kinds(trace, _("This lesson"))
a, b, c = st.columns([3, 1, 1])
name = kind_selector(trace, a, key="masks_kind", kinds=kinds)
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="masks_layer", container=b)
head = widgets.selectbox(_("Head"), range(trace.n_heads), key="masks_head", container=c)
with explained_errors(_("This trace holds no scores, only weights (a loaded export?): ")):
    view = head_scores(trace, name, layer, head)
n = view.n
if n > 1:
    left, right = st.columns(2)
    width = widgets.slider(_("Sliding window's width w (tokens)"), 1, n, min(3, n),
                           key="masks_window", container=left)
    prefix = widgets.slider(_("Prefix-LM's prefix p (tokens)"), 0, n, min(3, n),
                            key="masks_prefix", container=right)
else:
    width, prefix = 1, 1
results = every_mask(view.scores, width=width, prefix=prefix)
own = model_mask(trace.family, name)
matches = matching_masks(view.own_mask, results)
family = FAMILY_NAMES.get(str(trace.family), str(trace.family))
found = (_("In the trace, the mask it applied equals the {mask} mask below.").format(
    mask=_(MASK_TEXT[matches[0]][0]).lower()) if matches else
    _("In the trace, the mask it applied is none of the four below (padding, or a window of "
      "its own)."))
st.info(_("{model} is {family}: its {kind} uses the **{mask}** mask.").format(
    model=literal(spec), family=_(family), kind=kind_label(name),
    mask=_(MASK_TEXT[own][0]).lower()) + " " + found, icon=":material/visibility_off:")
if view.cut:
    st.caption(_("The first {n} of the {total} tokens are shown, as if the text ended there.")
               .format(n=n, total=view.total))

for mask in MASKS:
    title, users, purpose = MASK_TEXT[mask]
    result = results[mask]
    st.subheader(_("{mask} ({users})").format(mask=_(title), users=_(users))
                 + (" · " + _("this model's mask") if mask == own else ""))
    st.markdown(_(purpose).format(width=width, prefix=prefix))
    chart(mask_steps(view.scores, result.allowed, result.weights, view.query_labels,
                     view.key_labels, query_hover=view.query_hover, key_hover=view.key_hover,
                     special=view.special, projector=presenting(),
                     title=_("{mask} · layer {layer} · head {head}").format(
                         mask=_(title), layer=layer, head=head)),
          key=f"masks_chart_{mask}", name=(name, f"layer {layer}", f"head {head}", mask))
    sums = largest_difference(result.weights.sum(axis=-1), 1.0)
    zeros = int((result.weights[~result.allowed] == 0).sum())
    note = (_("{seen} of {cells} query–key pairs allowed. Every row sums to 1 (within "
              "{sums}); {zeros} of the {masked} forbidden cells are exactly 0.")
            if result.seen < n * n else
            _("All {cells} query–key pairs allowed: nothing is forbidden. Every row sums to 1 "
              "(within {sums}).")).format(
        seen=result.seen, cells=n * n, sums=tiny(sums), masked=n * n - result.seen,
        zeros=zeros)
    if mask in matches and view.complete:
        note += " " + _("With this mask the softmax of the head's scores is the model's own "
                        "weights: largest difference {difference}.").format(
            difference=tiny(largest_difference(result.weights, view.own_weights)))
    st.caption(note)

st.subheader(_("Padding: two sentences in one batch"))
st.markdown(_(
    "A GPU runs many sentences at once as one tensor, so the shorter ones are filled up with "
    "a padding token to the longest one's length. The padding must change nothing: a "
    "**padding mask** hides the padding keys from every query (−∞, weight 0), whatever the "
    "other mask is. Here the lesson's sentence and a second one run *together*, one batch of "
    "two, through the model on its device."))
try:
    own_network(loaded)
except ValueError:
    st.info(_("The padded batch runs the project's own Transformer: choose “the lesson's own "
              "model” above, or own-translator or own-random in the sidebar."))
else:
    key = "masks_second"
    if not isinstance(st.session_state.get(key, ""), str):
        st.session_state[key] = SECOND_SENTENCE
    second = st.text_input(_("Second sentence of the batch"), key=key, max_chars=MAX_SENTENCE,
                           **({} if key in st.session_state else {"value": SECOND_SENTENCE}))
    other = None
    if not second.strip():
        st.info(_("Type a second sentence to batch with the first."))
    else:
        try:
            other = get_trace(spec, device, second, None, dtype)
        except ValueError as error:
            st.error(literal(describe_error(spec)(error)))
    if other is not None:
        with heavy_work(_("running the padded batch")):
            batch = padded_batch(loaded, (trace, other), name, layer, head)
        padded = batch.padded
        n_k, m_k = batch.lengths[padded][1], batch.lengths[1 - padded][1]
        shapes = " · ".join(_(STACK_IDS[stack]).format(shape=shape)
                            for stack, shape in batch.shapes.items())
        st.markdown(_("**The batch:** {shapes}, on {device}.").format(
            shapes=shapes, device=literal(batch.device)) + "\n\n"
            + _("**Largest weight any query gives a padding key:** {weight:g}").format(
                weight=batch.padded_weight) + "\n\n"
            + _("**Largest change of a weight from the sentence run alone:** "
                "{difference}").format(difference=tiny(max(batch.difference))))
        st.caption(_("Every attention weight of every layer and head: {compared:,} weights of "
                     "the first sentence and {other:,} of the second, each compared with its "
                     "own trace run alone.").format(compared=batch.compared[0],
                                                     other=batch.compared[1]))
        which = _("The lesson's sentence") if padded == 0 else _("The second sentence")
        if n_k == m_k:
            st.info(_("In {kind} both sentences have {count} keys: nothing is padded there. "
                      "Type a second sentence of another length.").format(
                kind=kind_label(name), count=n_k))
        elif max(len(batch.query_tokens[padded]), len(batch.key_tokens[padded])) > PAD_DRAWN:
            st.info(_("The batch is too long to draw here ({count} tokens a side); its numbers "
                      "are above.").format(count=len(batch.key_tokens[padded])))
        else:
            q_tokens, k_tokens = batch.query_tokens[padded], batch.key_tokens[padded]
            special = ([i for i, t in enumerate(q_tokens) if t in SPECIALS],
                       [j for j, t in enumerate(k_tokens) if t in SPECIALS])
            chart(mask_steps(batch.scores[padded], batch.allowed[padded],
                             batch.weights[padded], q_tokens, k_tokens, special=special,
                             projector=presenting(),
                             title=_("In the batch · layer {layer} · head {head}").format(
                                 layer=layer, head=head)),
                  key="masks_padding", name=(name, f"layer {layer}", f"head {head}", "padding"))
            st.caption(_(
                "{sentence} has {real} keys, padded with {pads} × `<pad>` to the batch's {total}. "
                "② is the model's own mask (its key-padding mask{causal}): the `<pad>` columns "
                "are −∞ in every row, so ③ gives them exactly 0 and each real row is the row "
                "of the sentence run alone. The `<pad>` rows are computed too, and thrown "
                "away.")
                .format(sentence=which, real=n_k, pads=len(k_tokens) - n_k,
                        total=len(k_tokens),
                        causal=_(", with the causal triangle") if name == "decoder.self"
                        else ""))
footer(PATH)
