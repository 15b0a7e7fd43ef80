"""Lesson §3.7: one sentence through the three families side by side: an encoder (minilm), a
decoder (smollm2) and an encoder-decoder (own-translator), each with its mask and one head."""

from __future__ import annotations

import streamlit as st

from app_pages.cache.getters import get_model, get_models, get_trace, loaded
from app_pages.frame import widgets
from app_pages.frame.charts import chart
from app_pages.frame.errors import describe_error
from app_pages.frame.markdown import literal
from app_pages.frame.navigation import script
from app_pages.frame.settings import DEFAULT_TEXT, KIND_LABELS, settings
from app_pages.lessons.lesson import footer, header
from i18n import N_, _
from model import UnknownWordsError
from model.errors import listed
from model.lessons.families import family_view, telling_head
from viz.lessons.families import family_panels

PATH = script("lesson_families")
MAX_CHARS = 300  # one sentence: three models draw every token
LOADED = "fam_loaded"  # the models this session asked to load (own-translator loads at once)
# (model, family, the models of that family in the lesson, what it sees, load time)
COLUMNS = (
    ("minilm", N_("Encoder-only"), "BERT",
     N_("**Bidirectional:** no mask. Every token sees every token, to its left and to its "
        "right. Pretrained by filling in blanks, it is made for understanding: "
        "classification, search, sentence vectors."),
     N_("minilm (a 6-layer BERT encoder) loads in a few seconds.")),
    ("smollm2", N_("Decoder-only"), "GPT, Llama",
     N_("**Causal:** a token sees itself and the tokens to its left, never the ones after it "
        "(the lower triangle). Pretrained by continuing text, it is made for writing: chat, "
        "stories, code."),
     N_("smollm2 (a 30-layer Llama decoder) loads in a few seconds; the first time on a "
        "server it converts its GGUF file first, about 30 s.")),
    ("own-translator", N_("Encoder-decoder"), "T5",
     N_("**Cross:** each word being written (a row) sees every word of the source. Inside "
        "each stack the encoder is bidirectional and the decoder causal. Made for writing "
        "one text from another: translation, summaries."), ""),
)


# Why the head shown first was chosen (model.lessons.families.telling_head).
WHY_THIS_HEAD = {
    "encoder.self": N_("The head shown first reads most to the right of each token: only a "
                       "bidirectional model can."),
    "decoder.self": N_("The head shown first reads most from earlier tokens (the first one "
                       "aside), the only ones a causal model has."),
    "decoder.cross": N_("The head shown first spreads its rows over the most source words: "
                        "each word written looks up its own source word."),
}


def _asked() -> set[str]:
    """The models this session asked to load (own-translator always)."""
    asked = st.session_state.get(LOADED)
    asked = set(asked) if isinstance(asked, list | tuple | set) else set()
    return {name for name in asked if isinstance(name, str)} | {"own-translator"}


def _loaded(device: str) -> set[str]:
    """The models the page shows: those this session asked for, and those the server has
    loaded already (as it started, app_pages.cache.preload, or for another session), which
    cost no wait."""
    return _asked() | {spec for spec, *_rest in COLUMNS if loaded(spec, device)}


def _load(*specs: str) -> None:
    st.session_state[LOADED] = sorted(_asked() | set(specs))


def _column(container, spec: str, family: str, examples: str, sees: str, cost: str,
            text: str, device: str) -> None:
    """One family: what it sees, then (once loaded) its mask and one head."""
    container.markdown("#### " + _("{family}: {model}").format(family=_(family), model=spec))
    container.caption(_("Like {examples}.").format(examples=examples))
    container.markdown(_(sees))
    if spec not in _loaded(device):
        container.info(_(cost))
        container.button(_("Load {model}").format(model=spec), key=f"fam_load_{spec}",
                         on_click=_load, args=(spec,), icon=":material/download:")
        return
    try:
        get_model(spec, device)
        trace = get_trace(spec, device, text)
    except UnknownWordsError as error:
        container.error(literal(_("{model} does not know: {words}. It reads a small English "
                                  "vocabulary (the Translate page lists it); the other two "
                                  "columns read any text.").format(
            model=spec, words=listed(error.words, lambda word: f"“{word}”"))))
        return
    except ValueError as error:
        container.error(literal(describe_error(spec)(error)))
        return
    kind = None
    if spec == "own-translator":
        kind = widgets.radio(_("Attention"), list(trace.names), key="fam_kind",
                             index=len(trace.names) - 1, container=container,
                             format_func=lambda n: _(KIND_LABELS[n]))
    kind = kind or trace.names[0]
    best_layer, best_head = telling_head(trace, kind)
    left, right = container.columns(2)
    layer = widgets.selectbox(_("Layer"), range(trace.layers(kind)), index=best_layer,
                              key=f"fam_layer_{spec}_{kind}", container=left)
    head = widgets.selectbox(_("Head"), range(trace.n_heads), index=best_head,
                             key=f"fam_head_{spec}_{kind}", container=right)
    view = family_view(trace, layer, head, kind)
    with container:
        chart(family_panels(
            view.allowed, view.weights, view.query_labels, view.key_labels,
            query_hover=view.query_hover, special=view.special,
            mask_title=_("mask: {seen} of {cells} allowed").format(seen=view.seen,
                                                                 cells=view.cells),
            head_title=_("layer {layer} · head {head}").format(layer=layer, head=head)),
            key=f"fam_chart_{spec}", share=1 / 3, name=(spec, kind, f"L{layer}", f"H{head}"))
    container.caption(_("{kind}: {seen} of {cells} query–key pairs are allowed "
                        "({share:.0%}).").format(kind=_(KIND_LABELS[kind]), seen=view.seen,
                                                 cells=view.cells,
                                                 share=view.seen / view.cells)
                      + " " + _(WHY_THIS_HEAD[kind]))


header(PATH)
st.markdown(_("After the original encoder-decoder, models kept one half or both (lesson §3.7: "
              "three ways to stack the blocks). What separates them is **what a token may "
              "see**, and that is the mask. Below, one sentence runs through one model of each "
              "family; each column shows its mask (✓ may attend, ✗ masked) and one of its "
              "heads, chosen as the head that shows that family's view best (pick any "
              "other)."))
if not isinstance(st.session_state.get("fam_text", ""), str):
    st.session_state["fam_text"] = DEFAULT_TEXT
st.session_state.setdefault("fam_text", DEFAULT_TEXT)
text = st.text_input(_("Sentence"), key="fam_text", max_chars=MAX_CHARS,
                     help=_("own-translator reads a small English vocabulary (listed on the "
                            "Translate page); minilm and smollm2 read any English text."))
_spec, device = settings()
shown = _loaded(device)
missing = [spec for spec, *_rest in COLUMNS if spec not in shown]
if missing:
    st.button(_("Load all three models"), key="fam_load_all", on_click=_load, args=missing,
              icon=":material/download:",
              help=_("Loads minilm and smollm2 for this page (the first time on a server "
                     "about 30 s for smollm2, then seconds)."))
if not text.strip():
    st.info(_("Type a sentence to see it through the three families."))
    st.stop()
# the models not loaded yet load first, one after another, in a box that names each
get_models([spec for spec, *_rest in COLUMNS if spec in shown], device)
for column, spec_info in zip(st.columns(3), COLUMNS):
    _column(column, *spec_info, text=text, device=device)
st.caption(_("Why did decoder-only models win? Their pretraining task (continue the text) is "
             "the task they are used for, and a causal token never has to be recomputed when "
             "later ones arrive, so generation can keep its KV cache (see the previous lesson). "
             "A bidirectional encoder such as BERT cannot write word by word: it was trained "
             "seeing both sides."))
footer(PATH)
