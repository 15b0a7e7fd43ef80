"""Lesson §3.8, the Transformer's own troubles, each measured live: attention's time and memory
against the length n on this device, the KV cache of the sidebar's model and of published MHA,
GQA and MLA models, own-translator past the longest sentence it was trained on, and a mixture of
experts' parameters; then the spiral back to linear cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.cache.getters import (
    get_attention_cost,
    get_generation,
    get_length_reading,
    get_model,
)
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.classroom import table
from app_pages.frame.errors import explained_errors
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import presenting, settings
from app_pages.lessons.lesson import DEFAULT_SENTENCE, footer, header
from i18n import _
from model.lessons.troubles import (
    D_HEAD,
    HEADS,
    LENGTHS,
    MIXTRAL_8X7B,
    RUN_SECONDS,
    kv_rows,
    loaded_kv_model,
    measured_cache,
    moe_parameters,
)
from viz.lessons.troubles import accuracy_by_length, attention_memory, attention_time, kv_cache
from viz.lessons.troubles import moe_parameters as moe_figure
from viz.numbers import byte_size, short_count, thousands, tiny

PATH = script("lesson_troubles")
CONTEXTS = tuple(2 ** k for k in range(10, 18))  # 1,024 .. 131,072 tokens


def _two() -> tuple:
    """Two columns for a pair of charts, or (on a projector) the page's full width each."""
    if presenting():
        return st.container(), st.container()
    return tuple(st.columns(2))


def _share() -> float:
    return 1.0 if presenting() else 0.5


header(PATH)
st.markdown(_("The Transformer is not the end of the road: it brought troubles of its own "
              "(lesson §3.8). The lesson's table names four, each with today's remedy; this "
              "page measures each of them, live, on this server's device and on the project's "
              "models."))
st.markdown(_("| trouble | in plain words | remedy |\n|---|---|---|\n"
              "| O(n²) | double the text, four times the work | `FlashAttention` (same maths, "
              "other memory traffic), sparse or sliding-window attention |\n"
              "| the KV cache eats memory | generating keeps every earlier token's K and V | "
              "grouped-query attention (heads share K/V), multi-head latent attention "
              "(compress before storing) |\n"
              "| lost beyond the training length | trained on 4K, given 100K | RoPE "
              "extrapolation, `YaRN` and other long-context methods |\n"
              "| the FFN costs parameters | a bigger model, exploding parameter counts | "
              "mixture of experts: many experts, few active per token |"))

sidebar_spec, device = settings()

# --- 1. O(n²) ---------------------------------------------------------------------------------
st.header(_("1. O(n²): double the text, four times the work"))
st.markdown(_("One layer's attention at the lesson's sizes ({heads} heads of d_head = {d_head}, "
              "float32, one sentence) for n tokens, timed on this device two ways: written "
              "out, softmax(QKᵀ/√d)·V, which holds the n × n matrix of scores, and `torch`'s "
              "fused kernel, which computes the same numbers in blocks without keeping that "
              "matrix.").format(heads=HEADS, d_head=D_HEAD))
largest = widgets.select_slider(_("longest n to time (tokens)"), LENGTHS, 2048, key="tr_n",
                                format_func=thousands,
                                help=_("Lengths double from 256. The explicit attention's "
                                       "memory is checked against the server's limit first; "
                                       "the measurement stops early when the next length "
                                       "would take more than {seconds} s a run.").format(
                                    seconds=RUN_SECONDS * 4))
with explained_errors():
    cost = get_attention_cost(device, largest)
last = len(cost.lengths) - 1
ratios = cost.ratios()
c1, c2, c3 = st.columns(3)
c1.metric(_("explicit, n = {n:,}").format(n=int(cost.lengths[last])),
          _("{seconds:.4f} s").format(seconds=cost.explicit_s[last]),
          _("×{ratio:.1f} for n doubled").format(ratio=ratios[-1]) if last else None,
          delta_color="off", delta_arrow="off")
c2.metric(_("fused kernel, n = {n:,}").format(n=int(cost.lengths[last])),
          _("{seconds:.4f} s").format(seconds=cost.fused_s[last]),
          _("×{ratio:.1f} for n doubled").format(ratio=cost.ratios("fused")[-1]) if last
          else None, delta_color="off", delta_arrow="off")
c3.metric(_("n × n scores, n = {n:,}").format(n=int(cost.lengths[last])),
          byte_size(cost.score_bytes[last]),
          _("×{ratio:.0f} for n doubled").format(
              ratio=cost.score_bytes[last] / cost.score_bytes[last - 1]) if last else None,
          delta_color="off", delta_arrow="off")
left, right = _two()
with left:
    chart(attention_time(cost.lengths, cost.explicit_s, cost.fused_s,
                         title=_("One layer's attention: median seconds against n")),
          key="tr_time", share=_share(), name=("attention-time", cost.device))
with right:
    chart(attention_memory(cost.lengths, cost.score_bytes, cost.explicit_peak, cost.fused_peak,
                           title=_("Memory against n")),
          key="tr_memory", share=_share(), name=("attention-memory", cost.device))
st.caption(_("Measured on {device}: the median of {repeats} runs after one warm-up at each n; "
             "the numbers above the explicit line are each time ÷ the time at half the n. "
             "Short lengths are dominated by fixed costs, so the ratio approaches 4 as n "
             "grows. The two methods' outputs agree to {error}.").format(
    device=cost.device, repeats=cost.repeats, error=tiny(cost.largest_error)))
if cost.stopped_at:
    st.info(_("Stopped before n = {n:,}: at n = {last:,} the explicit attention took {seconds:.2f} "
              "s a run, so the next length would take about {next:.1f} s, more than this "
              "server lets one measurement hold the device.").format(
        n=cost.stopped_at, last=int(cost.lengths[last]), seconds=cost.explicit_s[last],
        next=4 * cost.explicit_s[last]))
if cost.explicit_peak is None:
    st.caption(_("The scores' bytes are read from the tensor the explicit attention made "
                 "(n² × 4 bytes × {heads} heads: ×4 whenever n doubles). Peak memory is "
                 "measured on a CUDA device only (`torch.cuda.max_memory_allocated`); choose "
                 "cuda in the sidebar where there is one.").format(heads=HEADS))
else:
    st.caption(_("The scores' bytes are read from the tensor the explicit attention made "
                 "(n² × 4 bytes × {heads} heads); the peaks are "
                 "`torch.cuda.max_memory_allocated` above what was held before each method "
                 "ran: the fused kernel's grows with n, not n².").format(heads=HEADS))
st.markdown(_("**The remedies.** `FlashAttention` does not change the maths, only the memory "
              "traffic: it walks through the keys in tiles held in the GPU's fast on-chip "
              "memory and never writes the n × n matrix to main memory, so the work is still "
              "n², but memory grows like n. **Sparse or sliding-window attention** changes "
              "the maths: each token reads only w neighbours (or a chosen few), n·w instead of "
              "n² (the masks lesson of §3.4 draws a sliding window)."))

# --- 2. the KV cache --------------------------------------------------------------------------
st.header(_("2. The KV cache eats memory"))
st.markdown(_("While a decoder writes, every layer keeps the keys and values of every token so "
              "far (lesson §3.4, step 3), so the cache grows by the same amount with every "
              "token. Per layer and token, multi-head attention (`MHA`) keeps one key and one "
              "value per head; grouped-query attention (`GQA`) lets several query heads share "
              "one K/V head; multi-head latent attention (`MLA`) keeps one compressed vector "
              "and a small RoPE key instead."))
tokens = widgets.select_slider(_("context length (tokens)"), CONTEXTS, 4096, key="tr_context",
                               format_func=thousands)
sidebar = None
if sidebar_spec:
    try:
        loaded = get_model(sidebar_spec, device)
    except ValueError as error:
        st.warning(literal(_("The sidebar's model {model} could not be loaded ({reason}); the "
                             "published models are shown.").format(model=sidebar_spec,
                                                                   reason=error)))
    else:
        sidebar = loaded_kv_model(loaded.name, loaded.dims, loaded.dtype, loaded.kinds)
        if sidebar is None and loaded.dims.n_decoder_layers == 0:
            st.caption(literal(_("The sidebar's model, {model}, is encoder-only: it writes no "
                                 "tokens, so it keeps no KV cache. The published decoders are "
                                 "shown.").format(model=sidebar_spec)))
        elif sidebar is None:
            st.caption(literal(_("The sidebar's model, {model}, is recurrent: it keeps no KV "
                                 "cache growing as it writes, only one state of {width} numbers "
                                 "carried from word to word (lesson 3.6). The published "
                                 "decoders are shown.").format(
                model=sidebar_spec, width=loaded.dims.d_model)))
with explained_errors():
    rows = kv_rows(tokens, sidebar)
chart(kv_cache([r.name for r in rows], [r.total for r in rows], [r.attention for r in rows],
               tokens=tokens, highlight=0 if sidebar is not None else None,
               title=_("KV cache of one sequence of {tokens:,} tokens").format(tokens=tokens)),
      key="tr_kv", name=("kv-cache", f"{tokens}"))
table(pd.DataFrame({
    _("model"): [r.name for r in rows], _("attention"): [r.attention for r in rows],
    _("bytes per token"): [r.per_token for r in rows],
    _("bytes for {tokens:,} tokens").format(tokens=tokens): [r.total for r in rows],
    _("config values"): [r.config for r in rows],
    _("where published"): [r.source for r in rows]}),
    hide_index=True)
st.markdown(_("**The formulas.** `MHA` and `GQA`: 2 (K and V) × layers × K/V heads × "
              "d_head × tokens × bytes. `MLA`: layers × (`kv_lora_rank` + `qk_rope_head_dim`) "
              "× tokens × bytes. The published models' values are from their `config.json` "
              "files, in the table; their weights are 2 bytes a number (bfloat16 or "
              "float16)."))
if sidebar is not None:
    st.caption(literal(_("The first bar is the sidebar's model, {model}: {layers} decoder layers "
                         "× {kv_heads} K/V heads × d_head {d_head} × {size} bytes ({dtype}), "
                         "from its loaded sizes.").format(
        model=sidebar.name, layers=sidebar.layers, kv_heads=sidebar.kv_heads,
        d_head=sidebar.d_head, size=sidebar.bytes_per_element, dtype=loaded.dtype)))
with explained_errors():
    get_model("own-translator", device)
    generation = get_generation("own-translator", device, DEFAULT_SENTENCE, None)
cache = measured_cache(generation)
growth, measured, cached, formula = cache.growth, cache.measured, cache.tokens, cache.formula
st.markdown(_("**Checked against the real cache:** own-translator translating “{text}” holds "
              "{tokens} tokens in each decoder layer's cache at the end; its cache tensors "
              "measure **{measured:,} bytes**, and the formula gives **{formula:,} bytes** "
              "(2 × {layers} × {kv_heads} × {d_head} × {tokens} × {size}). The Generation "
              "lesson follows it step by step.").format(
    text=DEFAULT_SENTENCE, tokens=cached, measured=measured, formula=formula,
    layers=growth.layers, kv_heads=growth.kv_heads, d_head=growth.d_head,
    size=growth.bytes_per_element))

# --- 3. beyond the training length ------------------------------------------------------------
st.header(_("3. Beyond the training length, the model gets lost"))
st.markdown(_("own-translator was trained on sentences from a small grammar: one clause, or "
              "two joined by “and” or “because”. Here it reads longer ones from the same "
              "grammar and words, up to six clauses chained with “and”, and each translation "
              "is compared with the grammar's own Chinese."))
left, right = st.columns(2)
per_length = widgets.slider(_("sentences of each clause count"), 10, 50, 20, step=10,
                            key="tr_per_length", container=left)
seed = widgets.slider(_("sample (random seed)"), 0, 99, 1, key="tr_seed", container=right,
                      help=_("Another seed, other sentences."))
with explained_errors():
    reading = get_length_reading(device, per_length, seed)
within, beyond = reading.within(), reading.beyond()
c1, c2, c3 = st.columns(3)
c1.metric(_("longest training sentence"), _("{n} words").format(n=reading.training_max),
          _("of {count:,} training pairs").format(count=reading.training_pairs),
          delta_color="off",
          delta_arrow="off")
c2.metric(_("up to {n} words").format(n=reading.training_max),
          _("{exact:.0%} exact").format(exact=within[0]),
          _("{words:.0%} of words right").format(words=within[1]), delta_color="off",
          delta_arrow="off")
c3.metric(_("longer than {n} words").format(n=reading.training_max),
          _("{exact:.0%} exact").format(exact=beyond[0]),
          _("{words:.0%} of words right").format(words=beyond[1]), delta_color="off",
          delta_arrow="off")
chart(accuracy_by_length(reading.bins, reading.bin_exact, reading.bin_accuracy,
                         reading.bin_count, training_max=reading.training_max,
                         title=_("own-translator against the sentence's length")),
      key="tr_length", name=("length", f"seed{seed}", f"n{per_length}"))
st.caption(_("{count:,} sentences, {per_length} of each clause count 1 to 6, grouped by "
             "length in words; the hover gives each group's size. Word accuracy is 1 − the "
             "word error rate (edits ÷ the reference's words). The training maximum is "
             "counted in the training corpus itself, rebuilt from its seed.").format(
    count=int(reading.words.size), per_length=per_length))
with st.expander(_("The longest sentence of each clause count")):
    table(pd.DataFrame({_("English"): [e[0] for e in reading.examples],
                        _("the grammar's Chinese"): [e[1] for e in reading.examples],
                        _("own-translator wrote"): [e[2] for e in reading.examples]}),
          hide_index=True)
st.markdown(_("**Honestly:** own-translator uses **sinusoidal** positions (lesson §3.4), its "
              "table covering {positions} positions, so every sentence here is read at "
              "positions it has a code for; what it never saw is a source past position "
              "{n} and more than two clauses, and it stops or loses its way. The project has "
              "no trained RoPE model, so the remedies are described here, not measured: "
              "**RoPE** turns a query and a key by angles that grow with their positions, and "
              "past the training length the angles are new to the model; position "
              "interpolation squeezes the long positions back into the trained range, and "
              "`YaRN` squeezes the slow rotations but leaves the fast ones (and sharpens "
              "attention a little), then a short fine-tuning on long texts.").format(
    positions=reading.positions, n=reading.training_max))

# --- 4. MoE -----------------------------------------------------------------------------------
st.header(_("4. The FFN costs parameters: a mixture of experts"))
st.markdown(_("In a dense Transformer every token goes through the one FFN of each layer, the "
              "largest part of its parameters. A mixture of experts keeps several FFNs "
              "(experts) per layer and a small router that sends each token to a few of them: "
              "parameters grow with the experts, the work per token only with the active "
              "ones. The numbers below are computed from `{model}`'s config (hidden "
              "{hidden:,}, intermediate {inter:,}, {layers} layers, {heads} heads and "
              "{kv_heads} K/V heads, vocabulary {vocab:,}), with the experts you "
              "choose.").format(model=MIXTRAL_8X7B.name, hidden=MIXTRAL_8X7B.hidden_size,
                                inter=MIXTRAL_8X7B.intermediate_size,
                                layers=MIXTRAL_8X7B.num_hidden_layers,
                                heads=MIXTRAL_8X7B.num_attention_heads,
                                kv_heads=MIXTRAL_8X7B.num_key_value_heads,
                                vocab=MIXTRAL_8X7B.vocab_size))
left, right = st.columns(2)
experts = widgets.slider(_("experts per layer"), 1, 64, MIXTRAL_8X7B.num_local_experts,
                         key="tr_experts", container=left)
active = widgets.slider(_("experts per token"), 1, experts, min(
    MIXTRAL_8X7B.num_experts_per_tok, experts), key="tr_active", container=right)
with explained_errors():
    parts = moe_parameters(MIXTRAL_8X7B.with_experts(experts, active))
c1, c2, c3 = st.columns(3)
c1.metric(_("all parameters"), short_count(parts.total, 3))
c2.metric(_("used by one token"), short_count(parts.active, 3),
          _("{share:.0%} of them").format(share=parts.active / parts.total),
          delta_color="off", delta_arrow="off")
c3.metric(_("one expert of one layer"), short_count(parts.expert, 3),
          f"3 × {MIXTRAL_8X7B.hidden_size:,} × {MIXTRAL_8X7B.intermediate_size:,}",
          delta_color="off", delta_arrow="off")
chart(moe_figure(parts.shared, parts.active_experts, parts.experts - parts.active_experts,
                 title=_("{experts} experts, {active} per token").format(experts=experts,
                                                                          active=active)),
      key="tr_moe", name=("moe", f"{experts}x{active}"))
st.caption(_("Embeddings 2 × vocabulary × hidden; per layer attention hidden × d_head × (2 "
             "heads + 2 K/V heads), two norms, a router hidden × experts and experts × 3 × "
             "hidden × intermediate (gate, up and down projections). Source: {source}; with "
             "8 experts and 2 active this gives the 46.7B and 12.9B parameters Mistral AI "
             "published. The tests count the parameters of a small Mixtral built by "
             "`transformers` the same way.").format(source=f"`{MIXTRAL_8X7B.source}`"))

# --- the spiral -------------------------------------------------------------------------------
st.header(_("The spiral back"))
st.markdown(_("The lesson ends the section with a twist: state-space models such as `Mamba` "
              "pick up the RNN's linear cost again (one fixed-size state carried from token to "
              "token, n·d² rather than n²·d, and no KV cache growing with the text) while "
              "keeping training parallel over the whole sequence. Architectures do not simply "
              "replace each other; each rebalances the trade-offs. Lesson §3.6 times an RNN "
              "beside the Transformer, and §4.8 compares n²·d with n·d²."))
footer(PATH)
