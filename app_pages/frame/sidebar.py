"""The shared sidebar (language, presentation mode, colours, device; the model on pages that
read no text) and, at the top of the analysis pages, the model and the text: a newcomer finds
the box to type in without scrolling, above the page it feeds."""

from __future__ import annotations

import streamlit as st

import i18n
import model
from app_pages.cache.getters import policy
from app_pages.frame import widgets
from app_pages.frame.markdown import literal
from app_pages.frame.settings import (
    DEFAULT_MODEL,
    DEFAULT_TEXT,
    DEVICES,
    KEPT_KEYS,
    MAX_UPLOAD_MB,
    MODEL_HELP,
    OTHER,
    PALETTES,
    PRECISIONS,
    SHARED_KEYS,
    initial,
    model_label,
    presenting,
)
from i18n import _


def sidebar(with_text: bool = True) -> None:
    """Draw the shared sidebar: language, presentation mode, colours and device, and the
    model unless the page reads text (``with_text``: :func:`inputs` draws it there)."""
    # Streamlit forgets a widget's value after a run that does not draw it (the Translate and
    # Positions pages hide the text). Writing the values back makes them plain session state,
    # which lasts until the widget is drawn again.
    for key in (*SHARED_KEYS, *KEPT_KEYS):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]

    with st.sidebar:
        widgets.radio(_("Language"), list(i18n.LANGUAGES), key="lang", horizontal=True,
                      format_func=i18n.LANGUAGES.get)
        st.toggle(_("Presentation mode"), key="present",
                       help=_("Presentation mode: fonts large enough for a projector, the value "
                              "written in each cell of small matrices, steps shown one at a "
                              "time, the sidebar closed."))
        widgets.selectbox(_("Colours"), list(PALETTES), key="palette",
                          format_func=lambda p: _(PALETTES[p]),
                          help=_("The colours of attention weights; Cividis and Viridis read "
                                 "the same to every kind of colour vision and in grey print."))
        if not with_text:  # the analysis pages have it at their top (inputs)
            _model(st.sidebar)
        widgets.radio(_("Device"), DEVICES, key="device", horizontal=True,
                      help=_("auto runs on CUDA when this machine has a GPU, else on the CPU."))
        widgets.selectbox(_("Precision"), PRECISIONS, key="dtype",
                          help=_("The precision of the model's weights. auto: bfloat16 on a GPU "
                                 "(float16 on older ones), float32 on the CPU. Half precision "
                                 "takes half the memory; attention weights are still computed "
                                 "in float32."))


def _model(container) -> str:
    """The model menu, what the chosen one is, and the box for an 'other' one."""
    choices = (DEFAULT_MODEL, *(m for m in model.BUNDLED if m != DEFAULT_MODEL))
    choices += (OTHER,) if policy().other else ()
    choice = widgets.selectbox(
        _("Model"), choices, key="model_choice", format_func=model_label, container=container,
        help="\n".join(f"- **{model_label(c)}**: {_(h)}" for c, h in MODEL_HELP.items()
                       if c in choices))
    container.caption(_(MODEL_HELP[choice]))
    if choice == OTHER:
        container.text_input(_("Hub id or local path"), key="model_other",
                             max_chars=model.MAX_SPEC,
                             placeholder=_("e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf"))
    return choice


def inputs() -> None:
    """The top of a page that reads text: the model beside the text box, with the file upload
    and the target text folded beneath (open while either is in use)."""
    uploaded = st.session_state.get("upload") is not None
    # On a projector the page is the lesson, not its inputs (a prepared link set them): they
    # fold into one line that names them.
    text = " ".join(str(st.session_state.get("text", DEFAULT_TEXT)).split())
    folded = st.expander(_("Model and text: {model} · {text}").format(
        model=model_label(st.session_state.get("model_choice", DEFAULT_MODEL)),
        text=literal(text[:60]) + ("…" if len(text) > 60 else ""))) if presenting() else None
    with folded or st.container(border=True, key="inputs"):
        left, right = st.columns([2, 3])
        _model(left)
        # no max_chars: the browser would cut a long paste silently; the page refuses a text
        # over the limit with a message and keeps it in the box (load_run)
        right.text_area(_("Text"), **initial("text", DEFAULT_TEXT), key="text", height=100,
                        disabled=uploaded,
                        help=_("Type or paste text (Ctrl+Enter to apply); it is tokenised as "
                               "the model does. While a file is loaded, the file is analysed "
                               "instead."))
        more = uploaded or bool(str(st.session_state.get("target", "")).strip())
        with st.expander(_("Upload a text file, or give the decoder a target"), expanded=more):
            widgets.file_uploader(
                _("…or upload a text file"), type=["txt", "md"], key="upload",
                max_upload_size=MAX_UPLOAD_MB,
                help=_("UTF-8, or GB18030/GBK as Chinese Windows saves it. While a file is "
                       "loaded it replaces the text box; remove it (×) to type again."))
            st.text_input(_("Target text (encoder-decoder models, optional)"), key="target",
                          placeholder=_("e.g. 猫 坐 在 垫子 上"),
                          help=_("The output the decoder is fed word by word (teacher forcing). "
                                 "Leave it empty to trace the model's own output. For "
                                 "own-translator: Chinese words separated by spaces."))
