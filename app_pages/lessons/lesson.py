"""What every lesson page shares: its header (the seed's section) and the previous / next links
that walk the lessons in the seed's order."""

from __future__ import annotations

from typing import NamedTuple

import streamlit as st

from app_pages.cache.getters import get_model, get_trace
from app_pages.frame import widgets
from app_pages.frame.classroom import LESSON_BACK, LESSON_NEXT, keys_caption
from app_pages.frame.errors import describe_error, explained_errors
from app_pages.frame.navigation import LESSON_PAGES, PageSpec
from app_pages.frame.run import random_weights_note
from app_pages.frame.settings import settings
from i18n import N_, _

# The project's own models a lesson that looks inside the network may run.
OWN_MODELS = {"own-translator": N_("trained to translate; d_model 128, 4 heads, 3 + 3 layers"),
              "own-random": N_("random weights at the lesson's sizes: d_model 512, 8 heads, "
                               "6 + 6 layers")}
DEFAULT_SENTENCE = "The cat sat on the mat"
MAX_SENTENCE = 300


def _spec(path: str) -> PageSpec:
    return next(page for page in LESSON_PAGES if page.path == path)


def header(path: str) -> None:
    """The lesson's title (which starts with its section of the lesson text, e.g. "4.3 By
    hand") and where it is among the lessons.

    Args:
        path: the page's script (``app_pages/lessons/hand.py``).
    """
    spec = _spec(path)
    number = LESSON_PAGES.index(spec) + 1
    st.title(_(spec.title))
    st.caption(_("Lesson {number} of {count}, in the order of the lesson text (its section "
                 "number comes first in the title).").format(number=number,
                                                            count=len(LESSON_PAGES)))


def footer(path: str) -> None:
    """Links to the previous and the next lesson."""
    spec = _spec(path)
    index = LESSON_PAGES.index(spec)
    st.divider()
    keys_caption(lesson=True)
    back, _middle, forward = st.columns([2, 1, 2])
    # the keys (app_pages.frame.classroom) follow these links past a lesson's ends
    back, forward = back.container(key=LESSON_BACK), forward.container(key=LESSON_NEXT)
    if index > 0:
        before = LESSON_PAGES[index - 1]
        back.page_link(before.path, label=_("Previous: {title}").format(title=_(before.title)),
                       icon=":material/arrow_back:")
    if index + 1 < len(LESSON_PAGES):
        after = LESSON_PAGES[index + 1]
        forward.page_link(after.path, label=_("Next: {title}").format(title=_(after.title)),
                          icon=":material/arrow_forward:")


class LessonRun(NamedTuple):
    """What a lesson page runs: the model's spec, the device, the sentence, the loaded model
    and its trace."""

    spec: str
    device: str
    text: str
    model: object
    trace: object


def own_model_run(prefix: str, help: str = "") -> LessonRun:
    """A lesson's own model and sentence, chosen on the page (the sidebar's model is for the
    other pages), loaded and traced; a problem is explained and the page stops.

    Args:
        prefix: the page's widget keys start with it (``{prefix}_model``, ``{prefix}_text``).
        help: more help for the model choice.
    """

    left, right = st.columns([2, 3])
    spec = widgets.radio(_("Model"), list(OWN_MODELS), key=f"{prefix}_model", container=left,
                         format_func=lambda m: f"{m}: {_(OWN_MODELS[m])}",
                         help=_("The lessons look inside the project's own Transformer; the "
                                "sidebar's model is for the other pages.")
                         + (" " + help if help else ""))
    key = f"{prefix}_text"
    if not isinstance(st.session_state.get(key, ""), str):
        st.session_state[key] = DEFAULT_SENTENCE
    text = right.text_input(_("Sentence (English words)"), key=key, max_chars=MAX_SENTENCE,
                            **({} if key in st.session_state else {"value": DEFAULT_SENTENCE}))
    _spec, device = settings()
    with explained_errors(_("Could not load {model}: ").format(model=spec)):
        loaded = get_model(spec, device)
    random_weights_note(spec)
    if not text.strip():
        st.info(_("Type a sentence to run the model on."))
        st.stop()
    with explained_errors(describe=describe_error(spec)):
        trace = get_trace(spec, device, text)
    return LessonRun(spec, device, text, loaded, trace)
