"""A student's screen in a live class, made for a phone: join with the class's code (and a
name, or none), then the current question with large tap targets, and nothing else.

The student's key goes into this page's address (``?student=``), so that a reload or a phone's
locked screen keeps the student (and their answers) rather than joining anew. The key reaches
only this student's class, its current question and this student's own answer."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

import i18n
from app_pages.frame.live import REFRESH_S, STUDENT, guarded, number_text, opened_store
from app_pages.frame.markdown import literal
from app_pages.frame.settings import choose_language
from app_pages.live.store import ClassError, normalise_code
from i18n import LANGUAGES, _
from model.analysis.questions import correct

# A phone's screen: no sidebar or toolbar, the question large, every option a full-width button
# a thumb hits (at least 56 px high: WCAG's 44 px target, with room for a long token).
st.html("""<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stToolbar"], [data-testid="stHeader"] { display: none; }
.block-container { padding: 1rem 1rem 3rem; max-width: 40rem; }
.stMainBlockContainer p, .stMainBlockContainer li { font-size: 20px; }
.stButton button, .stFormSubmitButton button { min-height: 56px; font-size: 22px; }
[data-testid="stNumberInput"] input { font-size: 24px; min-height: 56px; }
</style>""")


def _switch_language() -> None:
    """The language chosen here, for this page and in its address (a reload keeps it)."""
    st.session_state["lang"] = st.session_state[JOIN_LANGUAGE]
    st.query_params["lang"] = st.session_state["lang"]


# The language lives in session state under its own key, never a widget's: Streamlit dropped
# the widget's value now and then between the page's runs (its question is read every
# second), and a phone fell back to English mid-class. The address's language comes first (a
# phone reloading the page).
JOIN_LANGUAGE = "join_lang"
linked = i18n.normalise(st.query_params.get("lang", ""))
if linked is not None:
    st.session_state["lang"] = linked
st.session_state[JOIN_LANGUAGE] = choose_language()
st.radio(_("Language"), list(LANGUAGES), key=JOIN_LANGUAGE, horizontal=True,
         format_func=LANGUAGES.get, label_visibility="collapsed", on_change=_switch_language)
db = opened_store()
if db is None:
    st.stop()

if STUDENT not in st.session_state and st.query_params.get("student"):
    st.session_state[STUDENT] = str(st.query_params.get("student"))[:64]


def _session_id() -> str:
    context = get_script_run_ctx()
    return context.session_id if context is not None else "none"


def _client() -> str:
    """Who is counted for wrong codes: the browser's address (a session alone is new on every
    reload)."""
    # behind a proxy that hides the address, each browser session counts alone (one shared
    # "unknown" would let one student's typos lock the whole class out)
    return str(st.context.ip_address or "") or f"session {_session_id()}"


if STUDENT not in st.session_state:
    st.title(_("Join a class"))
    with st.form("join"):
        code = st.text_input(_("Code"), value=normalise_code(st.query_params.get("code", "")),
                             max_chars=16, placeholder="ABC123")
        name = st.text_input(_("Your name (or leave it empty to stay anonymous)"),
                             max_chars=db.limits.name_chars)
        joined = st.form_submit_button(_("Join"), type="primary", width="stretch")
    if joined:
        try:
            key = db.join(code, name, client=_client())
        except ClassError as error:
            st.error(literal(str(error)))
        else:
            st.session_state[STUDENT] = key
            st.query_params.clear()
            st.query_params["student"] = key
            st.query_params["lang"] = st.session_state["lang"]
            st.rerun()
    st.stop()


@st.fragment(run_every=REFRESH_S)
@guarded
def question() -> None:
    """The class's current question, read every second; a tap answers (a later tap replaces
    the answer until the teacher reveals)."""
    choose_language()  # a fragment's own rerun does not pass through app.py, which sets it
    key = st.session_state[STUDENT]
    try:
        current, mine = db.current(key)
    except ClassError as error:
        st.info(literal(str(error)), icon=":material/info:")
        if st.button(_("Join another class")):
            st.session_state.pop(STUDENT, None)
            st.query_params.clear()
            st.rerun(scope="app")
        return
    if current is None:
        st.markdown(_("### Waiting for the first question…"))
        return
    st.markdown("### " + literal(current.prompt))
    truth = current.truth if current.revealed else None

    def send(value: float) -> None:
        choose_language()  # a callback runs before the run that sets it
        try:
            db.answer(key, current.id, value)
        except ClassError as error:
            st.session_state["class_refused"] = str(error)

    refused = st.session_state.pop("class_refused", None)
    if current.kind == "choice":
        for index, option in enumerate(current.options):
            chosen = mine is not None and int(mine) == index
            st.button(("✓ " if chosen else "") + literal(option), key=f"q{current.id}_{index}",
                      type="primary" if chosen else "secondary", disabled=current.revealed,
                      on_click=send, args=(index,), width="stretch")
        told = current.options[int(mine)] if mine is not None else None
    else:
        # a form: the number typed and the tap on Send arrive together (a box alone sends its
        # number only when it loses the focus)
        with st.form(f"q{current.id}_form", border=False):
            value = st.number_input(_("Your answer"), value=None, format="%.4f",
                                    key=f"q{current.id}_number", disabled=current.revealed)
            sent = st.form_submit_button(_("Send"), type="primary", width="stretch",
                                         disabled=current.revealed)
        if sent:
            if value is None:
                refused = _("Type a number first.")
            else:
                send(value)
                refused = st.session_state.pop("class_refused", None)
                current, mine = db.current(key)
        told = number_text(mine) if mine is not None else None
    if refused:
        st.warning(literal(refused))
    if truth is not None:
        right = truth.get("answer")
        shown = current.options[int(right)] if current.kind == "choice" else number_text(right)
        hit = mine is not None and correct(truth, current.kind, mine)
        st.success(_("The model's answer: {answer}. {verdict}").format(
            answer=literal(shown), verdict=_("You had it.") if hit else (
                _("You answered {mine}.").format(mine=literal(told)) if told else
                _("You did not answer."))))
    elif told is not None:
        st.caption(_("Your answer: {answer}. Tap another to change it until the reveal.")
                   .format(answer=literal(told)))


question()
