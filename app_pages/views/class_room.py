"""The teacher's class page, opened by the private teacher link (or from the sidebar's live
class): how students join, large enough for the back of the room (the code, the link, the QR
code), and the class's current question live with its reveal. Questions are asked from the
pages that prepare them (Explore, Translate, Causal mask and the lessons)."""

from __future__ import annotations

import streamlit as st

from app_pages.frame.live import join_card, live_question, opened_store, status_of, teacher_key
from i18n import _

st.title(_("Live class"))
key = teacher_key()
db = opened_store()
if db is None:
    st.stop()
if key is None:
    st.info(_("No class is led from this browser. Start one in the sidebar's “Live class” "
              "(in presentation mode), or open your private teacher link."))
    st.stop()
status = status_of(db, key)  # a key that opens no class: said, and forgotten
if status is None:
    st.stop()
if status["ended"]:
    st.info(_("This class is closed: it takes no more answers. Its answers can still be "
              "exported from the sidebar."))
else:
    join_card(db, status, big=True)
st.caption(_("Ask a question from Explore, Translate, Causal mask or a lesson: each prepares "
             "its questions from what it shows."))
live_question()
