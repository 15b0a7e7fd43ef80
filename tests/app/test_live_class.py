"""A live class through the pages under AppTest: the teacher opens a class in presentation mode
and asks a question Explore prepared from its trace, students join on the join page and tap,
and the reveal draws the class's votes over the head's real weights. Every count is checked
against the database's own rows."""

from __future__ import annotations

import numpy as np
import pytest

from app_pages.live.store import Store
from tests.helpers import app_test, figures


@pytest.fixture
def class_db(tmp_path, monkeypatch):
    """A fresh class database for the app's sessions (the app keeps one per process)."""
    from app_pages.frame import live

    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_EXPLORER_DATABASE_URL", url)
    live.store.clear()
    yield Store(url)
    live.store.clear()


def _button(at, label: str):
    return next(button for button in at.button if button.label == label)


def _teacher_on_explore():
    at = app_test("explore", present=True, lang="en")
    _button(at, "Start a class").click().run()
    assert not at.exception
    return at


def test_a_teacher_asks_explores_question_and_students_answers_are_the_stored_rows(class_db):
    from app_pages.frame.live import TEACHER

    at = _teacher_on_explore()
    key = at.session_state[TEACHER]
    status = class_db.status(key)
    assert status["students"] == 0 and status["question"] is None
    code = status["code"]
    # the banner says how to join: the code and a join link
    assert any(code in block.value for block in at.markdown)
    assert any(f"/join?code={code}" in block.value for block in at.code)

    prompts = at.selectbox(key="explore_question")
    assert "attend to most" in prompts.options[0]
    _button(at, "Ask").click().run()
    assert not at.exception
    status = class_db.status(key)
    question = class_db.results(key, status["question"]).question
    assert question.kind == "choice"
    assert question.prompt.startswith("Layer 0, head 0 (encoder self-attention)")

    # three students join on the join page and tap
    taps = [0, 1, 1]
    for tap in taps:
        student = app_test("join")
        student.text_input[0].input(code)
        next(b for b in student.button if b.label == "Join").click().run()
        assert not student.exception
        options = [b for b in student.button if b.key and b.key.startswith(f"q{question.id}_")]
        assert len(options) == len(question.options)
        options[tap].click().run()
        assert not student.exception
    results = class_db.results(key, question.id)
    assert results.answered == 3 and results.votes[:2] == (1, 2)

    at.run()  # the count on the teacher's page
    assert any("3 of 3 answered" in block.value for block in at.markdown)
    _button(at, "Reveal the model's answer").click().run()
    assert not at.exception
    bars = [figure for figure in figures(at)
            if figure["data"] and figure["data"][0].get("type") == "bar"
            and figure["data"][0].get("orientation") == "h"
            and len(figure["data"]) == 2 and figure["data"][1].get("type") == "scatter"]
    assert bars, "the reveal draws votes and weights"
    votes, weights = bars[-1]["data"]
    stored = class_db.results(key, question.id)
    assert [c[0] for c in votes["customdata"]] == list(stored.votes)
    np.testing.assert_allclose(weights["x"], stored.truth["weights"])
    assert stored.question.revealed


def test_a_student_link_cannot_reach_the_teachers_controls(class_db):
    from app_pages.frame.live import TEACHER

    opened = class_db.open_class()
    student = app_test("join")
    student.text_input[0].input(opened.code)
    next(b for b in student.button if b.label == "Join").click().run()
    labels = {button.label for button in student.button}
    assert not labels & {"Ask", "Reveal the model's answer", "Close the class", "Start a class"}
    assert TEACHER not in student.session_state
    assert not student.sidebar.button and not student.sidebar.selectbox
    # a wrong code is refused with a message
    other = app_test("join")
    other.text_input[0].input("XXXXXX")
    next(b for b in other.button if b.label == "Join").click().run()
    assert any("No class has the code" in error.value for error in other.error)


# Each page that prepares questions, and the key its "Ask the class" box is drawn under.
ASKING_PAGES = [("explore", "explore"), ("translate", "translate"), ("mask", "mask"),
                ("lesson_see_it", "see_it"), ("lesson_generation", "generation"),
                ("lesson_qkv", "qkv"), ("lesson_hand", "hand"), ("lesson_scaling", "scaling"),
                ("lesson_multihead", "multihead")]


@pytest.mark.parametrize(("page", "key"), ASKING_PAGES, ids=[page for page, _key in ASKING_PAGES])
def test_every_asking_page_prepares_a_question_from_what_it_shows(class_db, page, key):
    from app_pages.frame.live import TEACHER

    opened = class_db.open_class()
    at = app_test(page, **{TEACHER: opened.teacher_key})
    assert not at.exception
    offered = at.selectbox(key=f"{key}_question")
    assert offered.options, f"{page} offers no question"
    next(button for button in at.button if button.key == f"{key}_ask").click().run()
    assert not at.exception
    asked = class_db.results(opened.teacher_key, class_db.status(opened.teacher_key)["question"])
    assert asked.question.prompt == offered.options[0]
    assert "answer" in asked.truth  # the model's answer, kept for the reveal
    if asked.question.kind == "choice":
        assert 0 <= int(asked.truth["answer"]) < len(asked.question.options)


def test_pages_draw_no_class_box_without_a_class(class_db):
    at = app_test("explore")
    assert not [box for box in at.selectbox if box.key == "explore_question"]


def test_the_class_pages_survive_keys_and_choices_they_no_longer_hold(class_db):
    from app_pages.frame.live import STUDENT, TEACHER

    teacher = app_test("class", **{TEACHER: "not-a-key"})
    assert not teacher.exception
    # said once where it was found (the first page), then the key is forgotten
    assert TEACHER not in teacher.session_state
    assert any("No class is led from this browser" in info.value for info in teacher.info)
    student = app_test("join", **{STUDENT: "not-a-key"})
    assert not student.exception
    assert any("join again" in info.value for info in student.info)
    # a question chosen on a longer text: the box falls back to the first of this text's
    opened = class_db.open_class()
    at = app_test("explore", **{TEACHER: opened.teacher_key, "explore_question": 999})
    assert not at.exception
    assert at.selectbox(key="explore_question").index == 0


def test_a_closed_class_refuses_a_student_with_a_message_and_its_teacher_still_exports(class_db):
    from app_pages.frame.live import TEACHER

    opened = class_db.open_class()
    student = app_test("join")
    student.text_input[0].input(opened.code)
    next(b for b in student.button if b.label == "Join").click().run()
    class_db.close(opened.teacher_key)
    student.run()
    assert any("This class is closed" in info.value for info in student.info)
    teacher = app_test("explore", present=True, **{TEACHER: opened.teacher_key})
    assert not teacher.exception
    assert any(button.label == "Answers (CSV)" for button in teacher.get("download_button"))


def test_a_number_question_takes_a_typed_number_and_the_reveal_counts_it_right(class_db):
    from app_pages.frame.live import TEACHER

    opened = class_db.open_class()
    at = app_test("lesson_scaling", **{TEACHER: opened.teacher_key})
    assert at.selectbox(key="scaling_question").options[0].startswith("softmax([8, -3])")
    next(button for button in at.button if button.key == "scaling_ask").click().run()
    student = app_test("join")
    student.text_input[0].input(opened.code)
    next(b for b in student.button if b.label == "Join").click().run()
    student.number_input[0].set_value(0.9999)
    next(b for b in student.button if b.label == "Send").click().run()
    assert not student.exception
    question = class_db.status(opened.teacher_key)["question"]
    results = class_db.reveal(opened.teacher_key, question)
    assert results.numbers == (0.9999,)
    # softmax([8, −3]) by torch, the seed's 1.000
    import torch
    expected = torch.softmax(torch.tensor([8.0, -3.0], dtype=torch.float64), 0)[0].item()
    assert abs(results.truth["answer"] - expected) < 1e-6
    student.run()
    assert any("You had it." in block.value for block in student.success)
