"""A live class on the teacher's pages: open a class (its code, join link and QR code), ask the
questions a page prepares from its trace, the live count of answers, the reveal beside the
model's answer, close and export. The student's screen is ``app_pages/views/join.py``; the
class itself is kept by :mod:`app_pages.live.store`.

The teacher's key lives in this browser session only (and in the private teacher link, which
opens the ``class`` page and leaves the address bar at once, so a projector never shows it).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterable

import streamlit as st
from sqlalchemy.exc import SQLAlchemyError

import i18n
from app_pages.frame import links, widgets
from app_pages.frame.charts import chart
from app_pages.frame.markdown import literal
from app_pages.frame.settings import choose_language, presenting
from app_pages.live.join import join_link, qr_pixels, teacher_link
from app_pages.live.store import ClassError, ClassLimits, Results, Store
from i18n import _
from model.analysis.questions import Prepared, correct
from viz.live import numbers_figure, votes_figure

log = logging.getLogger("attention_explorer")

TEACHER = "class_teacher"  # session state: the key of the class this browser leads
ADOPTED = "class_teacher_link"  # the teacher link this session took its key from
STUDENT = "class_student"  # session state: the key of the student this browser is (join.py)
PUBLIC_URL = "ATTENTION_EXPLORER_PUBLIC_URL"  # the address students reach the server at
REFRESH_S = 1.0  # the teacher's count and the student's question are read this often
# the teacher link's history entry, rewritten without its key (adopt_teacher_link)
FORGET_TEACHER_JS = """<script>
(() => {
  const url = new URL(window.location.href);
  if (url.searchParams.has('teacher')) {
    url.searchParams.delete('teacher');
    window.history.replaceState(window.history.state, '', url.toString());
  }
})();
</script>"""


@st.cache_resource(show_spinner=False)
def store() -> Store:
    """The server's class database (one per process; its sessions share it)."""
    return Store()


def opened_store() -> Store | None:
    """The class database, or None with the reason on the page when it cannot open."""
    try:
        return store()
    except Exception as error:  # an unreachable PostgreSQL, a read-only folder
        log.exception("the class database could not open")
        st.error(_("The class database could not be opened ({error}). Ask the server's "
                   "operator (docs/operating.md, live class).").format(error=type(error).__name__))
        return None


def guarded(draw: Callable) -> Callable:
    """``draw`` with the class database's trouble said on the page in one line (a refusal as
    it is; a database that does not answer, logged): never a page's error, nor a fragment's
    bare traceback (a fragment's rerun does not pass through app.py's handler)."""
    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        try:
            return draw(*args, **kwargs)
        except ClassError as error:
            st.warning(literal(str(error)), icon=":material/info:")
        except SQLAlchemyError:
            log.exception("the class database did not answer")
            st.error(_("The class database did not answer: try again in a moment."),
                     icon=":material/database:")
        return None
    return drawn


def teacher_key() -> str | None:
    return st.session_state.get(TEACHER)


def app_root() -> str:
    """Where students reach this app: the operator's public address when set, else the address
    the teacher's browser opened."""
    return (os.environ.get(PUBLIC_URL, "").strip() or links.app_root()).rstrip("/")


def adopt_teacher_link() -> bool:
    """On the class page, take the teacher's key from its private link into this session and
    out of the browser: True on the run that took it, which must leave the address alone.

    Streamlit writes a new address as soon as a run changes the query parameters, before any
    script the run draws has run, so the entry the link opened would stay in the history
    (Back on the projector would show the key). This run therefore changes nothing: its script
    rewrites the link's own entry in place, and installs the one-entry-per-page history, so
    that the next run's address (without the key, :func:`links.panel`) replaces it."""
    key = st.query_params.get("teacher")
    if not key or st.session_state.get(ADOPTED) == key:
        return False
    st.session_state[TEACHER] = st.session_state[ADOPTED] = str(key)[:64]
    st.html(links.ONE_ENTRY_PER_PAGE + FORGET_TEACHER_JS, unsafe_allow_javascript=True)
    return True


def status_of(db: Store, key: str) -> dict | None:
    """The class of the teacher's key, or None when it opens none (said, and the key
    forgotten in this session)."""
    try:
        return db.status(key)
    except ClassError as error:
        st.warning(literal(str(error)), icon=":material/link_off:")
        st.session_state.pop(TEACHER, None)
        return None


def _loopback_warning() -> None:
    address = str(st.get_option("server.address") or "")
    if address in ("127.0.0.1", "localhost", "::1") and not os.environ.get(PUBLIC_URL):
        st.caption(_("This server listens on {address} only: students' devices cannot reach "
                     "it. Start it with --server.address 0.0.0.0 (or behind the school's "
                     "proxy) for a class.").format(address=address))


@guarded
def sidebar_panel() -> None:
    """The sidebar's live class: start one (in presentation mode), or the class this browser
    leads: its code, the teacher's private link, close and export."""
    key = teacher_key()
    if key is None and not presenting():
        return
    with st.sidebar.expander(_("Live class"), icon=":material/groups:", expanded=False):
        # the database is opened only once a class is asked for: presenting alone never
        # touches it
        db = opened_store() if key else None
        status = status_of(db, key) if db is not None else None
        if status is None:
            st.caption(_("Students join from their phones with a code, answer the questions "
                         "you ask from the pages, and see the model's answer when you reveal "
                         "it."))
            try:
                limits = ClassLimits.from_environ()
            except ValueError as error:  # the operator's setting: said, not a broken page
                st.error(literal(str(error)))
                return
            hours = st.number_input(_("Lasts (hours)"), min_value=min(0.25, limits.max_hours),
                                    max_value=float(limits.max_hours),
                                    value=float(min(limits.hours, limits.max_hours)),
                                    step=0.5, key="class_hours")
            if st.button(_("Start a class"), icon=":material/play_arrow:", key="class_start"):
                db = opened_store()
                try:
                    if db is not None:
                        st.session_state[TEACHER] = db.open_class(hours).teacher_key
                        st.rerun()
                except ClassError as error:
                    st.error(literal(str(error)))
            _loopback_warning()
            return
        st.markdown(_("Code **{code}**").format(code=status["code"]))
        if status["ended"]:
            st.info(_("This class is closed: it takes no more answers."))
        else:
            st.caption(_("Ends at {time} (server time).").format(
                time=time.strftime("%H:%M", time.localtime(status["expires_at"]))))
        with st.popover(_("Private teacher link"), icon=":material/key:"):
            st.caption(_("Whoever opens this link leads the class: asks, reveals, closes and "
                         "exports. Keep it off the projector."))
            st.code(teacher_link(app_root(), key), language=None, wrap_lines=True)
        st.download_button(_("Answers (CSV)"), data=lambda: db.export_csv(key),
                           file_name=f"class-{status['code']}.csv", mime="text/csv",
                           key="class_csv", on_click="ignore", icon=":material/download:")
        if not status["ended"] and st.button(_("Close the class"), icon=":material/stop:",
                                             key="class_close"):
            db.close(key)
            st.rerun()
        if status["ended"] and st.button(_("Forget this class here"), key="class_forget"):
            st.session_state.pop(TEACHER, None)
            st.rerun()


def join_card(db: Store, status: dict, big: bool = False) -> None:
    """How students join: the code, the link and its QR code."""
    link = join_link(app_root(), status["code"],
                     lang="" if i18n.language() == i18n.DEFAULT else i18n.language())
    qr, words = st.columns([1, 2] if big else [1, 3], vertical_alignment="center")
    # a PNG at one image pixel per screen pixel, so that no scaling blurs the modules
    # (Streamlit's HTML drops inline SVG)
    pixels = qr_pixels(link, scale=8 if big else 5)
    qr.image(pixels, width=pixels.shape[1], caption=_("QR code of the join link"))
    with words:
        st.markdown(_("### Join: code **{code}**").format(code=status["code"]))
        if big:  # the code itself as large as the back of the room needs (its letters are
            # the app's own alphabet: nothing to escape)
            st.markdown(f'<p data-testid="class-code" style="font-size:120px;font-weight:700;'
                        f'letter-spacing:0.12em;line-height:1.1;margin:0;font-family:monospace">'
                        f'{status["code"]}</p>', unsafe_allow_html=True)
        joined()
        st.code(link, language=None, wrap_lines=True)


@st.fragment(run_every=REFRESH_S)
@guarded
def joined() -> None:
    """How many students have joined, read every second."""
    choose_language()  # a fragment's own rerun does not pass through app.py, which sets it
    teacher = teacher_key()
    db = opened_store() if teacher else None
    students = db.status(teacher)["students"] if db is not None else 0
    st.markdown(_("Open the link or scan the code; {students} joined.").format(
        students=students))


@guarded
def banner() -> None:
    """At the top of the teacher's page while a class is open: how to join, folded once a
    question has been asked."""
    key = teacher_key()
    if key is None:
        return
    db = opened_store()
    status = status_of(db, key) if db is not None else None
    if status is None or status["ended"]:
        return
    with st.expander(_("Live class {code}").format(code=status["code"]),
            icon=":material/groups:", expanded=status["question"] is None):
        join_card(db, status)


@guarded
def offer(key: str, *builders: Callable[[], Prepared | Iterable[Prepared]]) -> None:
    """The page's questions for the class, while this browser leads one: choose, ask, and the
    class's answers live below. Each of ``builders`` makes a question, or several, from the
    page's trace (called only while a class is open); one the trace cannot give (a
    ``ValueError``) is left out."""
    teacher = teacher_key()
    if teacher is None:
        return
    db = opened_store()
    if db is None:
        return
    try:
        status = db.status(teacher)
    except ClassError:
        return
    if status["ended"]:
        return
    with st.container(border=True, key=f"class_ask_{key}"):
        st.markdown(_("#### Ask the class"))
        prepared: list[Prepared] = []
        for build in builders:
            try:
                made = build()
            except (ValueError, MemoryError, RuntimeError):  # not for this text or model (no
                continue  # decoder, no such cell), or more than the machine holds
            for question in [made] if isinstance(made, Prepared) else made:
                if question not in prepared:
                    prepared.append(question)
        if prepared:
            picked = widgets.selectbox(_("Question"), range(len(prepared)),
                                       key=f"{key}_question",
                                       format_func=lambda index: prepared[index].prompt)
            if st.button(_("Ask"), icon=":material/campaign:", key=f"{key}_ask",
                         type="primary"):
                question = prepared[picked]
                try:
                    db.ask(teacher, question.kind, question.prompt, question.options,
                           question.truth)
                except ClassError as error:
                    st.error(literal(str(error)))
        else:
            st.caption(_("This view has no question to ask for this text."))
        live_question()


@st.fragment(run_every=REFRESH_S)
@guarded
def live_question() -> None:
    """The class's current question: how many have answered (read every second), the reveal
    button, and after it the class's answers beside the model's."""
    choose_language()  # a fragment's own rerun does not pass through app.py, which sets it
    teacher = teacher_key()
    db = opened_store() if teacher else None
    if db is None:
        return
    status = db.status(teacher)
    if status["question"] is None:
        st.caption(_("No question asked yet."))
        return
    results = db.results(teacher, status["question"])
    question = results.question
    st.markdown(_("**Now asked:** {prompt}").format(prompt=literal(question.prompt)))
    answered = _("{answered} of {students} answered").format(answered=results.answered,
                                                           students=status["students"])
    st.markdown(f'<p data-testid="class-count" style="font-size:1.6em;margin:0">'
                f"{answered}</p>", unsafe_allow_html=True)
    refused = st.session_state.pop("class_reveal_refused", None)
    if refused:
        st.error(literal(refused))
    if not question.revealed:
        # revealed in the button's callback, so that this run draws the reveal and no button
        st.button(_("Reveal the model's answer"), icon=":material/visibility:",
                  key="class_reveal", on_click=_reveal,
                  args=(db, teacher, question.id))
        return
    reveal(results)


def _reveal(db: Store, teacher: str, question_id: int) -> None:
    choose_language()  # a callback runs before the run that sets it
    try:
        db.reveal(teacher, question_id)
    except (ClassError, SQLAlchemyError) as error:
        st.session_state["class_reveal_refused"] = (
            str(error) if isinstance(error, ClassError) else
            _("The class database did not answer: try again in a moment."))


def number_text(value: float) -> str:
    """A number as a class reads it: a whole number in full (1,000,036 cells, not 1e+06), else
    six significant digits."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:.6g}"


def reveal(results: Results) -> None:
    """The class's answers beside the model's: bars of votes over the real weights, or the
    numbers' histogram with the model's number."""
    question, truth = results.question, results.truth or {}
    answer = truth.get("answer")
    if question.kind == "choice":
        figure = votes_figure(question.options, results.votes, weights=truth.get("weights"),
                              answer=None if answer is None else int(answer),
                              title=_("The class's votes and the model's weights"))
        right = results.votes[int(answer)] if answer is not None else 0
        told = question.options[int(answer)] if answer is not None else "?"
    else:
        figure = numbers_figure(results.numbers, float(answer),
                                title=_("The class's numbers and the model's"))
        right = sum(correct(truth, "number", value) for value in results.numbers)
        told = number_text(float(answer))
    st.markdown(_("The model's answer: **{answer}** · {right} of {answered} right").format(
        answer=literal(told), right=right, answered=results.answered))
    chart(figure, key=f"class_reveal_{question.id}", name=("class", question.id))
