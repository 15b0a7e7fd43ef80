"""The shared sidebar: language, presentation mode, colours, model, device and (for the analysis
pages) the text."""

from __future__ import annotations

import streamlit as st

import i18n
import model
from app_pages.cache.getters import policy
from app_pages.frame import widgets
from app_pages.frame.settings import (
    DEFAULT_MODEL,
    DEFAULT_TEXT,
    DEVICES,
    KEPT_KEYS,
    MAX_UPLOAD_MB,
    MODEL_HELP,
    OTHER,
    PALETTES,
    SHARED_KEYS,
    initial,
    model_label,
)
from i18n import _


def sidebar(with_text: bool = True) -> None:
    """Draw the shared sidebar: language, presentation mode, model, device and (for the
    analysis pages) the text."""
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
        choices = (DEFAULT_MODEL, *(m for m in model.BUNDLED if m != DEFAULT_MODEL))
        choices += (OTHER,) if policy().other else ()
        choice = widgets.selectbox(
            _("Model"), choices, key="model_choice", format_func=model_label,
            help="\n".join(f"- **{model_label(c)}**: {_(h)}" for c, h in MODEL_HELP.items()
                           if c in choices))
        st.caption(_(MODEL_HELP[choice]))
        if choice == OTHER:
            st.text_input(_("Hub id or local path"), key="model_other",
                          max_chars=model.MAX_SPEC,
                          placeholder=_("e.g. gpt2, ./my-checkpoint, ~/models/tiny.gguf"))
        if with_text:
            uploaded = st.session_state.get("upload") is not None
            # no max_chars: the browser would cut a long paste silently; the page refuses a
            # text over the limit with a message and keeps it in the box (load_run)
            st.text_area(_("Text"), **initial("text", DEFAULT_TEXT), key="text", height=100,
                         disabled=uploaded,
                         help=_("Type or paste text (Ctrl+Enter to apply); it is tokenised as "
                                "the model does. While a file is loaded, the file is analysed "
                                "instead."))
            st.file_uploader(_("…or upload a text file"), type=["txt", "md"], key="upload",
                             max_upload_size=MAX_UPLOAD_MB,
                             help=_("UTF-8, or GB18030/GBK as Chinese Windows saves it. While a "
                                    "file is loaded it replaces the box above; remove it (×) to "
                                    "type again."))
            st.text_input(_("Target text (encoder-decoder models, optional)"), key="target",
                          placeholder=_("e.g. 猫 坐 在 垫子 上"),
                          help=_("The output the decoder is fed word by word (teacher forcing). "
                                 "Leave it empty to trace the model's own output. For "
                                 "own-translator: Chinese words separated by spaces."))
        widgets.radio(_("Device"), DEVICES, key="device", horizontal=True,
                      help=_("auto runs on CUDA when this machine has a GPU, else on the CPU."))
