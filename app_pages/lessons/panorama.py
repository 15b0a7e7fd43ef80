"""Lesson §5.1–5.2, the panorama: the text's table of RNN, LSTM, GRU and Transformer, beside the
same rows measured on this project's own models (lesson 3.6's measurements, shared through the
cache) and counted on real torch modules; then the three insights, the first drawn as the
information path's length against the sentence's."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import (
    get_model,
    get_rnn_forgetting,
    get_rnn_gradient_profile,
    get_rnn_timing,
)
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.errors import explained_errors
from app_pages.frame.navigation import script
from app_pages.frame.settings import settings
from app_pages.lessons.lesson import footer, header
from i18n import N_, _
from model.lessons.panorama import (
    ARCHITECTURES,
    MODEL_OF,
    PROFILE_TEXTS,
    TIMED_LENGTHS,
    layer_parameters,
    measured,
    module_kinds,
    path_lengths,
)
from viz.lessons.panorama import path_figure
from viz.numbers import count, significant

PATH = script("lesson_panorama")
WIDTHS = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
LENGTHS = (8, 32, 128, 512, 2048, 8192, 32768)
# The text's table (§5.1), row by row: the dimension, then RNN, LSTM, GRU and Transformer.
TEXT_TABLE = (
    (N_("core mechanism"), N_("a hidden state passed on"), N_("three gates + a cell state"),
     N_("two gates + linear interpolation"), N_("self-attention")),
    (N_("parallel in time"), N_("❌ O(n) serial"), N_("❌ O(n) serial"), N_("❌ O(n) serial"),
     N_("✅ O(1) parallel")),
    (N_("longest information path"), N_("O(n)"), N_("O(n) (but the gradient can pass "
                                                    "without loss)"),
     N_("O(n)"), N_("O(1)")),
    (N_("complexity per layer"), N_("O(n·d²)"), N_("O(n·d²), constant ×4"),
     N_("O(n·d²), constant ×3"), N_("O(n²·d) + O(n·d²)")),
    (N_("long-range dependencies"), N_("very weak"), N_("fairly strong"), N_("fairly strong"),
     N_("strong")),
    (N_("layers it can stack"), N_("2–4"), N_("2–4"), N_("2–4"),
     N_("tens to hundreds")),
    (N_("interpretability"), N_("poor"), N_("poor"), N_("poor"),
     N_("attention weights can be drawn")),
    (N_("scalability"), N_("poor"), N_("poor"), N_("poor"),
     N_("very strong (scaling laws hold)")),
    (N_("main weakness"), N_("vanishing gradients"), N_("slow, many parameters"),
     N_("limited memory"), N_("O(n²) cost, KV cache memory")),
)
NOT_TRAINED = N_("not trained here")


def _percent(value: float | None) -> str:
    return _(NOT_TRAINED) if value is None else f"{100 * value:.0f}%"


header(PATH)
st.markdown(_(
    "The lesson ends with one table: RNN, LSTM, GRU and Transformer on every dimension the "
    "lesson discussed. Below is the text's table, and then the same rows **measured** on this "
    "project's own models (the plain RNN, the GRU and the Transformer of lesson 3.6, trained "
    "on the same sentences) and **counted** on real `torch` modules at the width you choose."))
_spec, device = settings()

st.header(_("5.1 The panorama table"))
st.table({_("dimension"): [_(row[0]) for row in TEXT_TABLE],
          **{name: [_(row[1 + i]) for row in TEXT_TABLE]
             for i, name in enumerate(ARCHITECTURES)}})

st.subheader(_("The same rows, measured here"))
left, right = st.columns(2)
width = widgets.select_slider(_("width d (numbers per word)"), WIDTHS, 128, key="pn_width",
                              container=left,
                              help=_("A recurrent cell reads d numbers and keeps d; the "
                                     "Transformer layer has d_model = d and d_ff = 4d."))
n = widgets.select_slider(_("words in the sentence n"), LENGTHS, 512, key="pn_length",
                          container=right)
with explained_errors():
    translator = get_model("own-translator", device)
    forgetting = get_rnn_forgetting(device)
    profile = get_rnn_gradient_profile(device, PROFILE_TEXTS)
    timing = get_rnn_timing(device, TIMED_LENGTHS)
rows = measured(forgetting, profile, timing)
layers = layer_parameters(int(width), int(n))
depth = translator.dims.n_encoder_layers
paths = path_lengths([int(n)])
steps = {"RNN": int(paths.recurrent[0]), "LSTM": int(paths.recurrent[0]),
         "GRU": int(paths.recurrent[0]), "Transformer": int(paths.transformer[0])}
# a recurrent layer takes one step per word; a Transformer layer one step for all of them
serial = {name: int(n) if name != "Transformer" else 1 for name in ARCHITECTURES}


def _per_token(name: str) -> str:
    """The row "time per token": first → cheapest → last length, in µs."""
    if name not in rows.per_token:
        return _("not timed (the same loop as the GRU's)") if name != "LSTM" else _(NOT_TRAINED)
    values = [significant(1e6 * t, 3) for t in rows.per_token[name]]
    cheapest = rows.cheapest(name)
    middle = (f" → {values[rows.timed.index(cheapest)]} (n = {cheapest:,})"
              if cheapest not in (rows.timed[0], rows.timed[-1]) else "")
    return f"{values[0]}{middle} → {values[-1]}"


def _far_over_near(name: str) -> str:
    value = rows.far_over_near[name]
    return _(NOT_TRAINED) if value is None else f"×{value:.2f}"


first, last = rows.lengths
st.table({
    _("dimension"): [
        _("sequential steps of one layer's pass over n = {n:,} words").format(n=n),
        _("µs per token of one encoder pass, {first:,} → {last:,} tokens").format(
            first=first, last=last),
        _("steps from the first word to the output, n = {n:,}").format(n=n),
        _("parameters of one layer, d = {d:,}").format(d=width),
        _("multiply-adds of one layer over n = {n:,} words").format(n=n),
        _("longest held-out sentences ({first}–{last} words) exactly right").format(
            first=rows.longest[0], last=rows.longest[1]),
        _("gradient at far words ÷ near ones (median of {count} texts)").format(
            count=profile.texts)],
    **{name: [f"{serial[name]:,}", _per_token(name), f"{steps[name]:,}",
              _("{count} (×{ratio:.1f})").format(count=count(layers.parameters[name]),
                                                 ratio=layers.ratio(name)),
              count(layers.multiply_adds[name]), _percent(rows.exact_longest[name]),
              _far_over_near(name)]
       for name in ARCHITECTURES}})
st.caption(_(
    "Models: RNN is {rnn}, GRU {gru}, Transformer {transformer} ({depth} encoder layers), "
    "all trained here on the same corpus; no LSTM was trained, so only its cell is counted "
    "(`torch.nn.LSTMCell`). Parameters and multiply-adds are counted on `nn.RNNCell`, "
    "`nn.LSTMCell`, `nn.GRUCell` and the own encoder layer at width d: every weight is used once "
    "per word, and attention adds its two n × n products (2·n²·d). Times: one encoder pass "
    "on {device}, median of five (lesson 3.6, section 4). The GRU with attention (Bahdanau) "
    "gets {bahdanau} of the longest sentences: lesson 3.6, section 2.").format(
        rnn=MODEL_OF["RNN"], gru=MODEL_OF["GRU"], transformer=MODEL_OF["Transformer"],
        depth=depth, device=rows.device,
        bahdanau=_percent(forgetting.exact_match["own-bahdanau"][
            forgetting.bins.index(rows.longest)])))

st.header(_("5.2 Three insights"))
st.subheader(_("1. Architecture evolves by shortening the information path"))
shown = [length for length in LENGTHS if length <= n] or [n]
drawn = path_lengths(shown)
chart(path_figure(drawn.lengths, drawn.recurrent, drawn.attention_rnn, drawn.transformer),
      key="pn_paths", name=("paths",))
st.markdown(_(
    "The fewest steps by which the first word's signal reaches what the output reads: in the "
    "RNN, into the first state and then one step per word to the last state, the only one the "
    "decoder reads ({rnn:,} steps at n = {n:,}); with attention (Seq2Seq + attention, "
    "Bahdanau) the decoder \"skims\" back to that first state directly (2 steps, though "
    "between two source words the encoder's chain is still n − 1); in the Transformer any "
    "word reads any other in one self-attention step of any layer (1). Gradients and "
    "information fade along long paths, so the shorter the path, the deeper and larger a "
    "model can be trained. ResNet's residual connections are the same idea: a short "
    "cut.").format(n=n, rnn=steps["RNN"]))

st.subheader(_("2. Parallelism decides how much compute an architecture can use"))
per_token = {name: [significant(1e6 * t, 3) for t in rows.per_token[name]]
             for name in rows.per_token}
at = rows.timed.index(rows.cheapest("Transformer"))
said = _(
    "The RNN was beaten by how little of the hardware it could use, not by its results. "
    "Measured here on {device}, per token: the GRU's pass costs {gru_first} µs at {first:,} "
    "tokens and {gru_last} µs at {last:,}: each of its n steps waits for the one before, so "
    "more tokens never make a step cheaper. The Transformer's encoder costs {t_first} µs per "
    "token at {first:,} tokens and {t_last} µs at {last:,}.").format(
        device=rows.device, first=first, last=last, gru_first=per_token["GRU"][0],
        gru_last=per_token["GRU"][-1], t_first=per_token["Transformer"][0],
        t_last=per_token["Transformer"][-1])
if 0 < at < len(rows.timed) - 1:
    said += " " + _(
        "Its cost per token is lowest at {cheapest:,} tokens ({t_cheapest} µs): up to there "
        "the tokens share the same matrix products, the work a GPU runs at once, which is why "
        "scaling laws could hold for it; past it, its n² attention takes over, the table's last "
        "row, measured in lesson 3.8.").format(cheapest=rows.timed[at],
                                               t_cheapest=per_token["Transformer"][at])
elif at == len(rows.timed) - 1:
    said += " " + _("Its cost per token only falls as the tokens grow: they share the same "
                    "matrix products, the work this device runs at once, which is why scaling "
                    "laws could hold for it.")
else:
    said += " " + _("Its cost per token grows from the start on this device: its n² attention "
                    "outweighs what the shared matrix products save (the table's last row, "
                    "measured in lesson 3.8); on a GPU they run at once.")
st.markdown(said)

st.subheader(_("3. A good architecture is simple modules that compose"))
kinds = module_kinds(translator.network)
st.markdown(_(
    "Every piece of a Transformer is simple: matrix products, softmax, residual connections, "
    "LayerNorm, ReLU. The own translator is built of only these kinds of `torch` module "
    "(softmax and ReLU are functions, not modules): {kinds}. The same shape in and out of "
    "every layer lets the parts come apart (BERT keeps the encoder, GPT the decoder: lesson "
    "3.7), scale (layers, width, heads) and be swapped (positions: sinusoidal or RoPE, lesson "
    "3.4).").format(
        kinds=", ".join(f"`{name}` × {count}" for name, count in kinds.items())))
footer(PATH)
