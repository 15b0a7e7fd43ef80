"""Lesson §4.9, the minimal implementation: the lesson's listing (``attention()`` and
``MultiHeadAttention``) line by line, each line beside the lesson that explains it and the
tensors it made when it ran: on §4.3's worked example, and with the weights of one attention
module of the own model, on the sentence typed."""

from __future__ import annotations

import numpy as np
import streamlit as st

import viz
from app_pages.cache.getters import heavy_work
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.controls import kind_selector
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import PAGES, script
from app_pages.lessons.lesson import footer, header, own_model_run
from i18n import _
from model.analysis.cuts import query_rows
from model.lessons.implementation import (
    blocks,
    hand_run,
    layer_run,
    lesson_numbers,
    line_of,
    listing,
    masked_entries,
    peek,
    peeked,
    translated_line,
)
from model.lessons.network import query_choices
from viz.lessons.implementation import matrix_text, shape_text, values_text
from viz.lessons.numbers import vector
from viz.numbers import tiny

PATH = script("lesson_implementation")
TITLES = {page.url_path: page.title for page in PAGES}


def written(seen, head: int, row: int, decimals: int, lesson=None, whole: bool = False
            ) -> list[str]:
    """One markdown line per value a line made: its name, shape and a few numbers (``whole``:
    every number, for the small example)."""
    shown = []
    for name, value in seen.values.items():
        if isinstance(value, np.ndarray):
            shape = seen.shapes[name]
            if whole:
                text = f"`{name}` {shape_text(shape)}: `{matrix_text(value, decimals)}`"
            else:
                few = peek(value, head, row)
                text = (f"`{name}` {shape_text(shape)}: "
                        f"`{values_text(few, decimals, more=few.size < value.size)}`")
                used_head, used_row = peeked(shape, head, row)
                where = ([_("head {head}").format(head=used_head)] if used_head is not None
                         else []) + ([_("row {row}").format(row=used_row)]
                                     if used_row is not None else [])
                if where:
                    text += " (" + ", ".join(where) + ")"
        else:
            text = f"`{name} = {value}`"
        shown.append(text)
    if lesson is not None and shown:
        shown.append(_("the lesson writes {values}").format(values=f"`{vector(lesson, 2)}`"))
    return shown


header(PATH)
st.markdown(_(
    "The lesson's whole mechanism in about thirty lines of PyTorch: `attention()` (§4.3–4.4) "
    "and `MultiHeadAttention` (§4.6). Read against §4.3's example, every line matches. Here "
    "the code runs: beside each line, the lessons that explain it and what the line made, "
    "with real shapes and numbers, on **① §4.3's example** (q of 它 against the keys and "
    "values of 猫 / 追 / 老鼠 / 它) and on **② one layer of the own model**, its W_Q, W_K, W_V "
    "and W_O copied into this class, on the sentence you type."))

spec, device, text, loaded, trace = own_model_run(
    "impl", help=_("own-random has the lesson's sizes, (B, L, 512) → (B, 8, L, 64)."))
a, b, c, d = st.columns([3, 1, 1, 3])
name = kind_selector(trace, a, key="impl_kind")
layer = widgets.selectbox(_("Layer"), range(trace.layers(name)), key="impl_layer", container=b)
with heavy_work(_("running the lesson's code with the model's weights")), explained_errors(
        _("The lesson's code cannot run on this model: ")):
    layered = layer_run(loaded, trace, name, layer)
worked = hand_run()
head = widgets.selectbox(_("Head"), range(layered.n_heads), key="impl_head", container=c)
choices = query_choices(trace, name)
widgets.derived((choices, name), {"impl_row": min(2, len(choices) - 1)})
row = widgets.selectbox(_("Row (token) shown"), range(len(choices)), key="impl_row",
                        container=d, index=min(2, len(choices) - 1),
                        format_func=lambda i: choices[i])

lesson = lesson_numbers(worked)
masked_line = line_of("masked_fill")
label_hand = _("① §4.3")
label_layer = _("② {model}, layer {layer}").format(model=literal(spec), layer=layer)

st.info(_(
    "**Is this what the app runs?** Nearly. `model/own/transformer.py` holds the project's "
    "own `attention()` and `MultiHeadAttention`, written after this listing: the same steps "
    "in the same order, the same W_Q, W_K, W_V and W_O, the same split with `view` and "
    "`transpose` and the same concatenation. It adds hook points where the app reads the "
    "scores and the weights (they change no number), names the lesson's d_k and h `d_head` "
    "and `n_heads`, can rotate Q and K by position (RoPE, off in both own models) and keeps "
    "keys and values in a cache while generating. Run with the module's weights on what the "
    "module received, this listing gives the module's output to within {output}, its weights "
    "to within {weights}, and the trace's weights to within {trace}.").format(
    output=tiny(layered.output_difference),
    weights=tiny(layered.weights_difference),
    trace=tiny(layered.trace_difference)), icon=":material/fact_check:")
st.caption(_("The comments give the lesson's sizes (d_model 512, 8 heads of 64); the values "
             "beside them are this run's: d_model {d_model}, {heads} heads of {d_head}, "
             "L = {n} tokens.").format(d_model=layered.d_model, heads=layered.n_heads,
                                       d_head=layered.d_model // layered.n_heads,
                                       n=len(layered.query_tokens)))

for block in blocks(listing()):
    numbers = block.numbers
    code, beside = st.columns([1, 1])
    first, last = numbers[0], numbers[-1]
    code.caption(_("line {first}").format(first=first) if first == last
                 else _("lines {first}–{last}").format(first=first, last=last))
    code.code("\n".join(translated_line(line.code) for line in block.lines), language="python",
              wrap_lines=True)
    for url_path, what in block.sections:
        beside.page_link(script(url_path), label=f"{_(TITLES[url_path])} — {_(what)}",
                         icon=":material/school:")
    if block.function == "attention":
        notes = [t for n in numbers if n in worked.seen
                 for t in written(worked.seen[n], 0, 0, 4, lesson.get(n), whole=True)]
        if masked_line in numbers and masked_line not in worked.seen:
            notes.append(_("`mask` is `None`: the line does not run"))
        if notes:
            beside.markdown(f"**{label_hand}**: " + "; ".join(notes))
    lines_layer = [t for n in numbers if n in layered.seen
                   for t in written(layered.seen[n], head, row, 3)]
    if masked_line in numbers:
        count = masked_entries(layered.seen)
        lines_layer.append(_("`mask` is `None`: the line does not run") if count is None else
                           _("{count} scores set to −∞").format(count=count))
    if lines_layer:
        beside.markdown(f"**{label_layer}**: " + "; ".join(lines_layer))

st.subheader(_("What the listing returns: the weights of head {head}").format(head=head))
rows = query_rows(trace, name)
chart(viz.attention_heatmap(layered.weights[head], rows.labels, layered.key_tokens,
                            allowed=layered.allowed, query_hover=rows.hover,
                            title=_("the lesson's code, {model}, layer {layer}, head {head}")
                            .format(model=spec, layer=layer, head=head)),
      key="impl_weights", name=(name, f"layer {layer}", f"head {head}"))
st.caption(_("The `w` of the last line, drawn: the same as the trace's weights of this head, "
             "which the other pages show (largest difference {difference}). On §4.3's "
             "example the listing's output is {output}, the lesson's {lesson}: the lesson rounds "
             "every step to 2 decimals.").format(
    difference=tiny(layered.head_trace_difference(head)),
    output=vector(worked.output, 4), lesson=vector(worked.lesson.output, 2)))
footer(PATH)
