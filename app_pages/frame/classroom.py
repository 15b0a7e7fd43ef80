"""What a class in front of a projector needs from every page: text a room can read in
presentation mode (Streamlit's own HTML: prose, captions, labels, tables, links, values), and
keys that step the page from anywhere, as a presenter's clicker sends them.

The keys: → / PageDown / Space step a page's stepper forward, ← / PageUp / Shift+Space back,
wherever the focus is except where a key means something already (a text box, a slider's thumb,
a menu, a radio group); past the last step of a lesson → opens the next lesson, before the first
← the previous one. The steppers (:func:`app_pages.frame.controls.stepper`) and the lessons'
previous / next links (:func:`app_pages.lessons.lesson.footer`) carry the keys these look for.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.frame.settings import presenting
from i18n import _

STEPPER = "stepper_"  # a stepper's container key starts with it (then the stepper's key)
LESSON_BACK, LESSON_NEXT = "lesson_back", "lesson_next"  # the lessons' previous / next links

# Presentation mode's floors, in px (measured in the browser by tests/browser/test_projector.py).
PROSE_PX = 26  # paragraphs and list items
SMALL_PX = 22  # captions, widget labels, table cells, links, buttons, slider values, code
HEADINGS_PX = (52, 40, 32, 28)  # h1 … h4

KEYS_JS = """
(() => {
  if (window.__attentionExplorerKeys) return;
  window.__attentionExplorerKeys = true;
  // where a key already means something: typing, a slider's thumb, menus, radio groups, tabs
  const OWN_KEYS = 'input, textarea, select, [contenteditable=""], [contenteditable="true"], '
    + '[role="slider"], [role="combobox"], [role="listbox"], [role="option"], [role="radio"], '
    + '[role="radiogroup"], [role="tab"], [role="menu"], [role="menuitem"], [role="dialog"]';
  const press = element => {
    if (!element || element.disabled) return false;
    element.click();
    return true;
  };
  document.addEventListener('keydown', event => {
    if (event.defaultPrevented || event.ctrlKey || event.altKey || event.metaKey) return;
    const space = event.key === ' ';
    const forward = event.key === 'ArrowRight' || event.key === 'PageDown'
      || (space && !event.shiftKey);
    const back = event.key === 'ArrowLeft' || event.key === 'PageUp' || (space && event.shiftKey);
    if (!forward && !back) return;
    const target = event.target instanceof Element ? event.target : null;
    if (target && target.closest(OWN_KEYS)) return;
    // Space on a focused button or link presses it already
    if (space && target && target.closest('button, a, summary')) return;
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main) return;
    const stepper = main.querySelector('[class*="st-key-STEPPER"]');
    const end = forward ? '_next' : '_back';
    const button = stepper && stepper.querySelector(`[class*="${end}"] button`);
    const lesson = main.querySelector(
      `.st-key-${forward ? 'LESSON_NEXT' : 'LESSON_BACK'} a`);
    if (press(button) || press(lesson)) event.preventDefault();
  }, true);
})();
""".replace("STEPPER", STEPPER).replace("LESSON_NEXT", LESSON_NEXT).replace("LESSON_BACK",
                                                                             LESSON_BACK)

_MAIN = '[data-testid="stMain"]'
PRESENTATION_CSS = f"""
<style>
{_MAIN} [data-testid="stMarkdownContainer"] p, {_MAIN} [data-testid="stMarkdownContainer"] li,
{_MAIN} [data-testid="stAlertContainer"] p {{ font-size: {PROSE_PX}px; line-height: 1.45; }}
{_MAIN} h1 {{ font-size: {HEADINGS_PX[0]}px; }}
{_MAIN} h2 {{ font-size: {HEADINGS_PX[1]}px; }}
{_MAIN} h3 {{ font-size: {HEADINGS_PX[2]}px; }}
{_MAIN} h4, {_MAIN} h5, {_MAIN} h6 {{ font-size: {HEADINGS_PX[3]}px; }}
{_MAIN} [data-testid="stCaptionContainer"], {_MAIN} [data-testid="stCaptionContainer"] p,
{_MAIN} [data-testid="stCaptionContainer"] li,
{_MAIN} [data-testid="stWidgetLabel"] p, {_MAIN} [data-testid="stWidgetLabel"],
{_MAIN} label p, {_MAIN} label div,
{_MAIN} [data-testid="stTable"] td, {_MAIN} [data-testid="stTable"] th,
{_MAIN} [data-testid="stTable"] td p, {_MAIN} [data-testid="stTable"] th p,
{_MAIN} [data-testid="stMarkdownContainer"] td, {_MAIN} [data-testid="stMarkdownContainer"] th,
{_MAIN} [data-testid="stPageLink"] p, {_MAIN} [data-testid="stPageLink"] span, {_MAIN} a,
{_MAIN} button p, {_MAIN} button div, {_MAIN} summary p, {_MAIN} summary span,
{_MAIN} [data-testid="stSliderThumbValue"], {_MAIN} [data-testid="stSliderTickBarMin"],
{_MAIN} [data-testid="stSliderTickBarMax"], {_MAIN} [data-testid="stSliderThumbValue"] p,
{_MAIN} [data-baseweb="select"] div, {_MAIN} [data-baseweb="tag"] span,
{_MAIN} [data-testid="stMultiSelect"] *, {_MAIN} [data-testid="stSelectbox"] *,
{_MAIN} input, {_MAIN} textarea,
{_MAIN} [data-testid="stMetricLabel"] p, {_MAIN} [data-testid="stMetricDelta"] div,
{_MAIN} [data-testid="stMetricDelta"],
{_MAIN} [data-testid="stCode"] code, {_MAIN} [data-testid="stCode"] span,
{_MAIN} pre, {_MAIN} pre code, {_MAIN} code,
{_MAIN} [data-testid="stMarkdownContainer"] code,
{_MAIN} [data-testid="stFileUploaderDropzoneInstructions"] span,
{_MAIN} [data-testid="stFileUploaderDropzoneInstructions"] small,
{_MAIN} [data-testid="stFileUploaderDropzoneInstructions"] div
{{ font-size: {SMALL_PX}px; }}
{_MAIN} [data-testid="stMetricValue"], {_MAIN} [data-testid="stMetricValue"] div
{{ font-size: 44px; }}
{_MAIN} [data-testid="stMarkdownContainer"] p code,
{_MAIN} [data-testid="stMarkdownContainer"] li code {{ font-size: {PROSE_PX - 2}px; }}
{_MAIN} .katex {{ font-size: 1.5em; }}
[data-baseweb="popover"] li, [data-baseweb="popover"] li div, [data-baseweb="menu"] li
{{ font-size: {SMALL_PX}px; }}
</style>
"""


def classroom() -> None:
    """Install the stepping keys (once per browser page) and, in presentation mode, the large
    text of every page."""
    st.html(f"<script>{KEYS_JS}</script>", unsafe_allow_javascript=True)
    if presenting():
        st.html(PRESENTATION_CSS)


def keys_caption(lesson: bool) -> None:
    """In presentation mode, say which keys step the page (``lesson``: they cross lessons)."""
    if presenting():
        st.caption(_("Keys: → PageDown Space next step, ← PageUp previous step, from anywhere "
                     "on the page but a text box.")
                   + (" " + _("Past the last step → opens the next lesson, before the first "
                              "← the previous one.") if lesson else ""))


def table(data, container=st, **kwargs):
    """A table: ``st.dataframe`` (sortable, selectable; ``kwargs`` are its own), or in
    presentation mode an HTML table, whose cells take the projector's font size (a data frame
    draws on a canvas at a fixed size). Returns the data frame's selection state, else None."""
    if not presenting():
        return container.dataframe(data, **kwargs)
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    if kwargs.get("hide_index"):
        frame = frame.style.hide(axis="index")
    container.table(frame)
    return None
