"""The settings every page shares, kept in ``st.session_state``: the language, presentation
mode, model, device and text, their defaults and names, and what a link or an earlier run left."""

from __future__ import annotations

import streamlit as st

import i18n
from i18n import N_, _
from model.corpus.sentences import decode_text
from model.meta import KIND_NAMES, kind_name  # noqa: F401  (pages name kinds from here)

DEFAULT_MODEL = "own-translator"
DEFAULT_TEXT = "The cat sat on the mat"
DEVICES = ("auto", "cpu", "cuda")
# The precisions a model loads in (model.load's dtype): auto is bfloat16 on a GPU, float32 on
# the CPU.
PRECISIONS = ("auto", "float32", "bfloat16", "float16")
OTHER = "other…"
MODEL_HELP = {  # in English, translated where shown
    "own-translator": N_("the lesson's encoder-decoder, trained to translate a small English "
                         "vocabulary into Chinese (The cat sat on the mat → 猫 坐 在 垫子 上)"),
    "own-random": N_("the lesson's full-size encoder-decoder (512 wide, 8 heads, 6 + 6 layers) "
                     "with random weights; its vocabulary is built from your text"),
    "own-rnn": N_("the lesson's plain RNN translator (§3.6), trained on the same corpus: no "
                  "attention, its decoder reads the encoder's last state, one vector"),
    "own-gru": N_("the lesson's GRU translator (§3.6), trained on the same corpus: no "
                  "attention, its decoder reads the encoder's last state, one vector"),
    "own-bahdanau": N_("the lesson's GRU translator with Bahdanau's additive attention (§3.6, "
                       "attention's first form): one cross-attention head, no self-attention"),
    "minilm": N_("all-MiniLM-L6-v2: a pretrained 6-layer BERT encoder (12 heads) for any "
                 "English text"),
    "smollm2": N_("SmolLM2-135M-Instruct: a pretrained 30-layer Llama decoder, 9 query / 3 "
                  "key-value heads, for any text"),
    OTHER: N_("a Hugging Face hub id (needs network) or a local checkpoint folder or .gguf "
              "file"),
}
# Models whose weights were never trained: their attention shows structure, not meaning.
RANDOM_WEIGHTS = ("own-random",)
KIND_LABELS = {  # in English, translated where shown
    "encoder.self": N_("encoder self-attention"),
    "decoder.self": N_("decoder masked self-attention"),
    "decoder.cross": N_("decoder cross-attention (target → source)"),
}
def kind_label(name: str) -> str:
    """Attention kind ``name`` as a menu offers it: its longer description (cross-attention
    says which way it reads, target → source), in the current language."""
    return _(KIND_LABELS[name]) if name in KIND_LABELS else kind_name(name)


# The names of a trace's family and positional scheme, as pages show them (translated there).
FAMILY_NAMES = {"encoder-only": N_("encoder-only"), "decoder-only": N_("decoder-only"),
                "encoder-decoder": N_("encoder-decoder")}
SCHEME_NAMES = {"sinusoidal": N_("sinusoidal"), "rope": N_("rope"), "learned": N_("learned"),
                "relative bias": N_("relative bias"),
                "recurrence": N_("recurrence")}


# How a trace's weights were captured (its ``meta["capture"]``), as pages say it.
CAPTURE_NAMES = {
    "own": N_("weights: recorded by the own model's hooks"),
    "recorded": N_("weights: queries and keys recorded through transformers' attention "
                   "interface, each head recomputed exactly"),
    "eager": N_("weights: the model's own eager output_attentions (its attention does not go "
                "through transformers' attention interface, so every layer's weights are kept "
                "in memory)"),
    "additive": N_("weights: Bahdanau's additive attention, recorded at each step of the "
                   "recurrent decoder, the only attention this model has (it has no "
                   "self-attention: its encoder and decoder carry a state from word to word)"),
    "last state": N_("no attention: at every step this model's decoder reads the encoder's last "
                     "state, the whole sentence squeezed into one vector; drawn as a weight of "
                     "1 on the last word, which is exactly what it reads"),
}


def named(names: dict[str, str], value) -> str:
    """``value`` (a family, a scheme) by its translated name; an unknown one as it is."""
    return _(names[str(value)]) if str(value) in names else str(value)


# The sidebar's text file; server.maxUploadSize (2 MB, .streamlit/config.toml) caps every upload.
MAX_UPLOAD_MB = 1


SHARED_KEYS = ("model_choice", "model_other", "device", "dtype", "text", "target", "lang",
               "present", "palette")
# Pages' widgets whose values outlive a visit to another page (what a user typed or chose on
# Compare and Corpus); a reload keeps what the page's link carries.
KEPT_KEYS = ("cmp_mode", "cmp_a", "cmp_b", "cmp_kind", "cmp_layer", "cmp_head", "cmp_text",
             "cmp_model_b", "cmp_ma_kind", "cmp_ma_layer", "cmp_ma_head", "cmp_mb_kind",
             "cmp_mb_layer", "cmp_mb_head", "cmp_stage_source", "cmp_stage_target",
             "cmp_stage_layer", "cmp_stage_head",
             "cp_pasted", "cp_queries", "cp_keys", "cp_before", "cp_kind", "cp_metric",
             "cp_layer", "cp_head", "cp_view")
PALETTES = {  # what colours weights: the default, or a colour-blind-safe scale
    "default": N_("Blues (default)"),
    "cividis": N_("Cividis (colour-blind safe)"),
    "viridis": N_("Viridis (colour-blind safe)"),
}


def choose_language() -> str:
    """The language of this run: the sidebar's choice, else the link's (``lang=``), else the
    browser's locale, else English; it is set for every string of the run."""
    code = st.session_state.get("lang")
    if code not in i18n.LANGUAGES:
        code = i18n.normalise(st.context.locale) or i18n.DEFAULT
        st.session_state["lang"] = code
    i18n.set_language(code)
    return code


def presenting() -> bool:
    """Whether presentation mode is on (large fonts for a projector, values in cells)."""
    return bool(st.session_state.get("present", False))


def initial(key: str, value) -> dict:
    """A widget's default, given only while session state (a link, an earlier run) holds no
    value for it: Streamlit warns when a widget gets both."""
    return {} if key in st.session_state else {"value": value}


def model_label(choice: str) -> str:
    """How the model menu names a choice (the bundled names stay as they are)."""
    return _("other…") if choice == OTHER else choice


def settings() -> tuple[str, str]:
    """The chosen ``(model spec, device)``; the spec is empty until an 'other' one is typed."""
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    spec = str(st.session_state.get("model_other", "")).strip() if choice == OTHER else choice
    return spec, st.session_state.get("device", "auto")


def precision() -> str:
    """The chosen precision (:data:`PRECISIONS`; an unknown value reads as auto)."""
    value = st.session_state.get("dtype", "auto")
    return value if value in PRECISIONS else "auto"


def current_text(max_chars: int | None = None) -> tuple[str, str | None]:
    """The text to analyse and, for an uploaded file, the encoding it was read in (else
    None): an uploaded file's text, else the text box's.

    Raises:
        ValueError: the file cannot be read, or the text is longer than ``max_chars``.
    """
    upload = st.session_state.get("upload")
    if upload is not None:
        text, encoding = decode_text(upload.getvalue(), upload.name)
    else:
        text, encoding = str(st.session_state.get("text", DEFAULT_TEXT)), None
    what = _("the file") if upload is not None else _("the text")
    return within(text, max_chars, what), encoding


def within(text: str, max_chars: int | None, what: str) -> str:
    """``text``, refused (``ValueError``) when longer than ``max_chars``."""
    if max_chars is not None and len(text) > max_chars:
        raise ValueError(_("{what} has {count:,} characters; this server reads at most "
                           "{limit:,}. Shorten it.").format(what=what, count=len(text),
                                                          limit=max_chars))
    return text
