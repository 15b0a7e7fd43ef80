"""Attention Explorer: the frame (page config, shared sidebar, navigation), and the last line of
defence: an unexpected error shows one short message and goes to the server's log, never a
traceback in the browser (``ATTENTION_EXPLORER_DEBUG=1`` lets it through, as the tests do)."""

from __future__ import annotations

import logging
import os
import uuid

import pandas  # noqa: F401  (see below)
import streamlit as st

import i18n
from app_pages.frame import links, live
from app_pages.frame.charts import EXPORT_CONTEXT, FIGURES, page_downloads
from app_pages.frame.classroom import classroom
from app_pages.frame.navigation import ALL_PAGES, HIDDEN_PAGES, PAGES
from app_pages.frame.settings import choose_language, presenting
from app_pages.frame.sidebar import inputs, sidebar
from app_pages.live.join import CLASS_PATH, JOIN_PATH
from i18n import _

log = logging.getLogger("attention_explorer")

links.restore_settings()  # language, presentation mode: needed before anything is drawn
choose_language()
st.set_page_config(page_title=_("Attention Explorer"), page_icon="🔍", layout="wide",
                   initial_sidebar_state="collapsed" if presenting() else "auto")
pages = [(spec, st.Page(spec.path, title=_(spec.title), icon=spec.icon, default=spec.default,
                        url_path=spec.url_path or None,
                        visibility="hidden" if spec in HIDDEN_PAGES else "visible"))
         for spec in ALL_PAGES]
sections: dict[str, list] = {}
for spec, page in pages:
    # the class's pages go under the last section, hidden: only their links open them
    group = PAGES[-1].group if spec in HIDDEN_PAGES else spec.group
    sections.setdefault(_(group), []).append(page)
current = st.navigation(sections, expanded=True)  # every lesson listed, not "View 10 more"
spec = next(spec for spec, page in pages if page is current)
links.restore_page(spec)
# pandas is imported above, by every session before it draws: plotly looks for pandas in
# sys.modules without importing it, so a session drawing while another was still importing
# pandas failed with "partially initialized module 'pandas'" (9 times in a 25-session soak).
st.session_state[FIGURES] = {}  # this run's figures and what names their files: set anew
st.session_state[EXPORT_CONTEXT] = ()  # by each page, so no page names files after another's
# The page's language, for the browser (the CJK font it picks, screen readers): Streamlit's
# page always declares lang="en".
st.html(f"<script>document.documentElement.lang = "
        f"{'zh-CN' if i18n.language() == 'zh' else 'en'!r};</script>",
        unsafe_allow_javascript=True)
student_page = spec.url_path == JOIN_PATH  # a student's phone: the question, nothing else
if not student_page:
    classroom()  # the stepping keys, and presentation mode's large text
# the teacher's private link: its key taken, the address left alone on that run (see there)
quiet_address = spec.url_path == CLASS_PATH and live.adopt_teacher_link()
try:
    if student_page:
        current.run()
        st.stop()
    sidebar(with_text=spec.reads_text)
    live.sidebar_panel()
    # The link to this view, made before the page runs (a page may stop early, with a
    # message instead of a chart, and Streamlit draws nothing after a stop), and again after
    # it, once its widgets have replaced any value out of range.
    link_slot = st.sidebar.empty()
    if not quiet_address:
        links.panel(spec, link_slot, uploaded=st.session_state.get("upload") is not None)
    links.notes()
    if spec.reads_text:
        inputs()
    if spec.url_path != CLASS_PATH:
        live.banner()  # how students join, while this browser leads a class
    current.run()
    page_downloads()
    if not quiet_address:
        links.panel(spec, link_slot, uploaded=st.session_state.get("upload") is not None)
except Exception:  # Streamlit's own stop and rerun are BaseExceptions: they pass through
    if os.environ.get("ATTENTION_EXPLORER_DEBUG", "") not in ("", "0"):
        raise
    incident = uuid.uuid4().hex[:8]
    log.exception("unexpected error on the page %r (incident %s)", spec.title, incident)
    st.error(_("Something went wrong on this page, and it has been written to the server's log "
               "(incident {incident}). Try another text or model, or reload the page.").format(
        incident=incident))
