"""Widgets that survive their options changing.

A browser (or the session) can hold a widget's old value after its options change: another
model has fewer heads or no encoder, another text fewer tokens or steps. Before drawing, each
wrapper here replaces a remembered value its new options do not hold with a valid one (the
default, the values still offered, or the nearest end of a range). Writing it through session
state, rather than forgetting it, makes Streamlit send the new value to the browser, which would
otherwise keep showing the old one. A widget whose key is in session state is drawn without a
default of its own, so that the state is its only value.

A value that came from a link (:mod:`app_pages.frame.links`) and is replaced is said on the page:
the link asked for something this model or text does not have.

The wrappers also give Streamlit's own words in the page's language where the app can: the
select boxes' placeholders, and the file uploader's button and limits (:func:`file_uploader`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

import streamlit as st

import i18n
from app_pages.frame.markdown import literal
from i18n import _

LINKED = "_linked"  # keys whose values came from a link and have not been drawn yet


def from_link(key: str) -> None:
    """Mark ``key``'s value as read from a link: replacing it will be said on the page."""
    st.session_state.setdefault(LINKED, set()).add(key)


def _replace(key: str, label: str, new, shown=None) -> None:
    """Replace the remembered value of ``key`` with ``new`` (``shown`` as the widget shows
    it), saying so when a link asked for it."""
    linked = st.session_state.get(LINKED, set())
    if key in linked:
        linked.discard(key)
        old = st.session_state[key]
        shown = new if shown is None else shown
        st.warning(literal(_("The link asks for {label} “{value}”, which this view does not "
                             "have; it shows {shown} instead.").format(
            label=label, value=str(old)[:40], shown=shown)), icon=":material/link_off:")
    st.session_state[key] = new


def _drawn(key: str) -> None:
    st.session_state.get(LINKED, set()).discard(key)


def _holds(options: Sequence, value) -> bool:
    try:
        return value in options
    except TypeError:  # an unhashable or incomparable leftover
        return False


def _remembered(key: str) -> bool:
    return key in st.session_state


def _one_of(widget, label: str, options, key: str, index: int, kwargs: dict):
    """Draw a one-choice ``widget`` whose remembered value falls back to ``options[index]``."""
    options = list(options)
    index = min(index, max(len(options) - 1, 0))
    if _remembered(key) and options and not _holds(options, st.session_state[key]):
        _replace(key, label, options[index], kwargs.get("format_func", str)(options[index]))
    _drawn(key)
    default = {} if _remembered(key) else {"index": index}
    return widget(label, options, key=key, **default, **kwargs)


def selectbox(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.selectbox`` whose remembered value falls back to ``options[index]`` when the
    options lost it; its placeholder in the page's language (Streamlit's own is English)."""
    kwargs.setdefault("placeholder", _("Choose an option"))
    return _one_of(container.selectbox, label, options, key, index, kwargs)


def radio(label: str, options, *, key: str, container=st, index: int = 0, **kwargs):
    """``st.radio`` whose remembered value falls back to ``options[index]``."""
    return _one_of(container.radio, label, options, key, index, kwargs)


def select_slider(label: str, options, value, *, key: str, container=st, **kwargs):
    """``st.select_slider`` (one value or a range) whose remembered value falls back to
    ``value`` unless every end of it is still an option."""
    options = list(options)
    if _remembered(key):
        remembered = st.session_state[key]
        is_range = isinstance(value, tuple)
        ends = tuple(remembered) if isinstance(remembered, list | tuple) else (remembered,)
        if is_range != isinstance(remembered, list | tuple) or not all(
                _holds(options, end) for end in ends):
            st.session_state[key] = value
    default = {} if _remembered(key) else {"value": value}
    return container.select_slider(label, options, key=key, **default, **kwargs)


def multiselect(label: str, options, *, key: str, default=(), container=st, **kwargs):
    """``st.multiselect`` that keeps the remembered values ``options`` still offers, or falls
    back to ``default`` when none is left; its placeholder in the page's language."""
    kwargs.setdefault("placeholder", _("Choose options"))
    options = list(options)
    default = [v for v in default if _holds(options, v)]
    if _remembered(key):
        remembered = st.session_state[key]
        kept = ([v for v in remembered if _holds(options, v)]
                if isinstance(remembered, list | tuple) else [])
        if not isinstance(remembered, list | tuple) or len(kept) < len(remembered):
            st.session_state[key] = kept or default
    initial = {} if _remembered(key) else {"default": default}
    return container.multiselect(label, options, key=key, **initial, **kwargs)


def slider(label: str, min_value, max_value, value, *, key: str, container=st, **kwargs):
    """``st.slider`` (one value or a range) whose remembered value is moved into the new range
    (a range keeps its order; a value of the wrong shape falls back to ``value``)."""
    if _remembered(key):
        remembered = st.session_state[key]
        is_range = isinstance(value, tuple)
        try:
            if is_range != isinstance(remembered, list | tuple):
                raise TypeError
            values = tuple(remembered) if is_range else (remembered,)
            clamped = tuple(min(max(v, min_value), max_value) for v in values)
        except TypeError:
            _replace(key, label, value)
        else:
            if clamped != values:
                _replace(key, label, clamped if is_range else clamped[0])
    _drawn(key)
    default = {} if _remembered(key) else {"value": value}
    return container.slider(label, min_value, max_value, key=key, **default, **kwargs)


def number_value(key: str, default: float, label: str, limit: float,
                 empty_ok: bool = False) -> None:
    """Before a ``st.number_input`` keyed ``key`` is drawn: a remembered value it cannot show
    (text, NaN, ±∞, beyond ±``limit``; None unless ``empty_ok``) goes back to ``default``,
    and the page says so."""
    value = st.session_state.setdefault(key, default)
    if value is None and empty_ok:
        return
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and abs(value) <= limit:
        return
    st.warning(literal(_("{label} held “{value}”, which is not a number from −{limit:g} to "
                         "{limit:g}; it is back to the lesson's {default:g}.").format(
        label=label, value=str(value)[:20], limit=limit, default=default)))
    st.session_state[key] = default


BASES = "_widget_bases"  # what each set of derived widgets was last drawn for


def derived(basis, defaults: dict) -> None:
    """Before drawing widgets whose meaning comes from the text, the model or the step (a span
    of tokens, a token, a window, a step): when ``basis`` (what they were derived from, e.g.
    the run's key and the attention kind) differs from the last time this page drew them, they
    go back to ``defaults``. Written through session state, so that the browser shows the
    defaults too and never a value left from another text. Their first draw keeps what is
    remembered (a link's values)."""
    bases = st.session_state.setdefault(BASES, {})
    which = tuple(sorted(defaults))
    fingerprint = hashlib.sha256(repr(basis).encode()).hexdigest()
    if which in bases and bases[which] != fingerprint:
        for key, value in defaults.items():
            st.session_state[key] = value
    bases[which] = fingerprint


# Streamlit's file uploader writes two things of its own, in English, that no argument sets: its
# button ("Upload") and the line of its limits ("1MB per file • TXT, MD"). In another language
# the line is hidden and said in a caption beneath, and the button shows its word over the
# English one (kept for screen readers), by CSS on the test ids Streamlit's own tests select
# (a Streamlit without them shows its English again, and the caption still holds the limits).
_DROPZONE = '[data-testid="stFileUploaderDropzone"]'
_BUTTON_WORD = f'{_DROPZONE} button [data-testid="stMarkdownContainer"] p'


def uploader_css() -> str:
    """The style that puts the uploader's button word and limits in the page's language."""
    word = json.dumps(_("Upload"), ensure_ascii=False)  # a CSS string, quotes escaped
    return ("<style>"
            f'{_DROPZONE} [data-testid="stFileUploaderDropzoneInstructions"] {{display: none;}}'
            f"{_BUTTON_WORD} {{-webkit-text-fill-color: transparent; position: relative;}}"
            f"{_BUTTON_WORD}::after {{content: {word}; -webkit-text-fill-color: currentColor;"
            " position: absolute; inset: 0; text-align: center;}"
            "</style>")


def file_uploader(label: str, type=None, *, key: str, container=st,
                  max_upload_size: int | None = None, **kwargs):
    """``st.file_uploader`` (the same arguments) whose button and limits are in the page's
    language: in English Streamlit's own; in another, :func:`uploader_css` and a caption of
    the file types and the largest size."""
    files = container.file_uploader(label, type, key=key, max_upload_size=max_upload_size,
                                    **kwargs)
    if i18n.language() != i18n.DEFAULT:
        container.html(uploader_css())
        types = [type] if isinstance(type, str) else list(type or ())
        size = max_upload_size or st.get_option("server.maxUploadSize")
        text = (_("{types} files, up to {size} MB each") if types else
                _("Up to {size} MB a file")).format(
            types="/".join(t.removeprefix(".").upper() for t in types), size=size)
        container.caption(text)
    return files
