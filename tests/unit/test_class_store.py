"""The class database (app_pages.live.store) against SQLite and a real PostgreSQL server.

PostgreSQL: ``$ATTENTION_EXPLORER_TEST_DATABASE_URL`` (a throwaway database: every test empties
it; .ci/run starts one with tests/postgres.sh), else a server this module starts with that
script; where none can start, the PostgreSQL cases skip and say why."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from app_pages.live import store as live
from app_pages.live.store import ClassError, ClassLimits, Store

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "tests" / "postgres.sh"


@pytest.fixture(scope="session")
def postgres_url():
    url = os.environ.get("ATTENTION_EXPLORER_TEST_DATABASE_URL", "").strip()
    if url:
        yield url
        return
    started = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        pytest.skip("no PostgreSQL server could start for the class database's tests: "
                    + (started.stderr.strip().splitlines() or ["?"])[-1])
    url = started.stdout.strip()
    yield url
    subprocess.run(["bash", str(SCRIPT), "stop", url], check=False)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite'}"
    url = request.getfixturevalue("postgres_url")
    engine = sa.create_engine(url)
    with engine.begin() as db:  # an empty database for each test
        db.execute(sa.text("DROP SCHEMA public CASCADE"))
        db.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()
    return url


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def opened(url, **limits):
    clock = Clock()
    store = Store(url, ClassLimits(**limits), clock)
    return store, store.open_class(), clock


def test_thirty_students_answering_at_once_lose_no_answer_and_the_counts_are_the_rows(url):
    store, cls, _clock = opened(url)
    keys = [store.join(cls.code, f"student {i}", f"client {i}") for i in range(30)]
    tokens = ["猫", "坐", "在", "垫子", "上"]
    question = store.ask(cls.teacher_key, "choice", "Which word does 坐 look at most?", tokens,
                         {"weights": [0.5, 0.1, 0.1, 0.2, 0.1], "answer": 0})
    start = threading.Barrier(30)
    failures = []

    def tap(i: int, key: str) -> None:
        start.wait()
        try:
            store.answer(key, question, i % 5)
        except Exception as error:  # noqa: BLE001 - every failure is reported
            failures.append(error)

    threads = [threading.Thread(target=tap, args=(i, key)) for i, key in enumerate(keys)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert store.answered(cls.teacher_key, question) == 30
    with store.engine.connect() as db:  # the distribution shown is the stored rows
        stored = dict(db.execute(sa.select(live.answers.c.value, sa.func.count())
                                 .where(live.answers.c.question_id == question)
                                 .group_by(live.answers.c.value)).all())
    results = store.reveal(cls.teacher_key, question)
    assert results.votes == tuple(int(stored.get(float(i), 0)) for i in range(5)) == (6,) * 5
    assert results.answered == 30 and results.truth["answer"] == 0
    assert results.question.revealed


def test_a_later_tap_replaces_the_answer(url):
    store, cls, clock = opened(url)
    key = store.join(cls.code)
    question = store.ask(cls.teacher_key, "choice", "?", ["a", "b"], 1)
    assert store.current(key)[1] is None  # not answered yet
    store.answer(key, question, 0)
    clock.now += 1
    store.answer(key, question, 1)
    assert store.current(key)[1] == 1
    assert store.results(cls.teacher_key, question).votes == (0, 1)
    assert store.answered(cls.teacher_key, question) == 1
    # once the next question is asked, a late tap on this one is refused, not counted
    store.ask(cls.teacher_key, "number", "??")
    with pytest.raises(ClassError, match="new question"):
        store.answer(key, question, 0)
    assert store.results(cls.teacher_key, question).votes == (0, 1)


def test_a_restart_keeps_the_class_and_its_answers(url):
    store, cls, clock = opened(url)
    key = store.join(cls.code, "Ann")
    question = store.ask(cls.teacher_key, "number", "softmax([8, -3]) for 8?", truth=0.99998)
    store.answer(key, question, 0.9)
    store.dispose()
    again = Store(url, ClassLimits(), clock)  # a new server process on the same database
    assert again.revision == store.revision == "0001"
    assert again.status(cls.teacher_key)["students"] == 1
    assert again.current(key)[1] == pytest.approx(0.9)
    assert again.results(cls.teacher_key, question).numbers == (pytest.approx(0.9),)


def test_the_migrations_build_exactly_the_stores_tables(url):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    store = Store(url)
    with store.engine.connect() as db:
        differences = compare_metadata(MigrationContext.configure(db), live.metadata)
    assert differences == []


def test_a_student_cannot_reveal_export_or_reach_another_class(url):
    store, cls, _clock = opened(url)
    other = store.open_class()
    student = store.join(cls.code, "Ann")
    question = store.ask(cls.teacher_key, "choice", "?", ["a", "b"], 0)
    theirs = store.ask(other.teacher_key, "choice", "?", ["x", "y"], 1)
    for teacher_only in (store.reveal, store.results, store.answered):
        with pytest.raises(ClassError, match="teacher link"):
            teacher_only(student, question)
    for teacher_only in (store.export_csv, store.close, store.status):
        with pytest.raises(ClassError, match="teacher link"):
            teacher_only(student)
    with pytest.raises(ClassError, match="teacher link"):
        store.ask(student, "choice", "?", ["a", "b"])
    with pytest.raises(ClassError, match="not one of this class"):
        store.answer(student, theirs, 0)  # another class's question
    with pytest.raises(ClassError, match="not one of this class"):
        store.reveal(cls.teacher_key, theirs)  # another teacher's question
    with pytest.raises(ClassError, match="student link"):
        store.current(cls.teacher_key)  # a teacher's key is no student's
    assert store.current(student)[0].truth is None  # no answer before the reveal
    store.reveal(cls.teacher_key, question)
    assert store.current(student)[0].truth == 0
    with pytest.raises(ClassError, match="revealed"):
        store.answer(student, question, 1)


def test_keys_are_stored_as_digests_only(url):
    store, cls, _clock = opened(url)
    student = store.join(cls.code)
    with store.engine.connect() as db:
        stored = [str(value) for table in (live.classes, live.students)
                  for row in db.execute(sa.select(table)).all() for value in row]
    assert cls.teacher_key not in stored and student not in stored


def test_an_expired_or_closed_class_refuses_answers_and_joins_with_a_message(url):
    store, cls, clock = opened(url, hours=1.0)
    key = store.join(cls.code)
    question = store.ask(cls.teacher_key, "choice", "?", ["a", "b"], 0)
    clock.now += 3601
    with pytest.raises(ClassError, match="ended"):
        store.answer(key, question, 0)
    with pytest.raises(ClassError, match="ended"):
        store.join(cls.code)
    with pytest.raises(ClassError, match="ended"):
        store.ask(cls.teacher_key, "choice", "?", ["a", "b"])
    assert store.status(cls.teacher_key)["ended"]
    assert "class" in store.export_csv(cls.teacher_key)  # the teacher still exports

    store2, cls2, _clock2 = opened(url)
    key2 = store2.join(cls2.code)
    question2 = store2.ask(cls2.teacher_key, "number", "?", truth=1.0)
    store2.close(cls2.teacher_key)
    with pytest.raises(ClassError, match="closed"):
        store2.answer(key2, question2, 1.0)
    with pytest.raises(ClassError, match="closed"):
        store2.current(key2)


def test_wrong_codes_are_rate_limited_per_client(url):
    store, cls, clock = opened(url, wrong_codes_per_minute=3)
    wrong = "".join("3" if c != "3" else "4" for c in cls.code)
    for _ in range(3):
        with pytest.raises(ClassError, match="No class has the code"):
            store.join(wrong, client="guesser")
    with pytest.raises(ClassError, match="Too many wrong codes"):
        store.join(cls.code, client="guesser")  # even the right code, for a minute
    assert store.join(cls.code, client="someone else")
    clock.now += 61
    assert store.join(f" {cls.code[:3].lower()}-{cls.code[3:]} ", client="guesser")


def test_the_limits_refuse_with_their_numbers(url):
    store, cls, clock = opened(url, students_per_class=2, open_classes=2, name_chars=5,
                               answers_per_minute=2)
    with pytest.raises(ClassError, match="at most 5 characters"):
        store.join(cls.code, "Annabel")
    key = store.join(cls.code, "  Ann  ")
    store.join(cls.code)
    with pytest.raises(ClassError, match="full"):
        store.join(cls.code)
    store.open_class()
    with pytest.raises(ClassError, match="2 classes open"):
        store.open_class()
    question = store.ask(cls.teacher_key, "choice", "?", ["a", "b"], 0)
    store.answer(key, question, 0)
    store.answer(key, question, 1)
    with pytest.raises(ClassError, match="Too many answers"):
        store.answer(key, question, 0)
    clock.now += 60
    store.answer(key, question, 0)
    with pytest.raises(ClassError, match="options"):
        store.answer(key, question, 2)
    with pytest.raises(ClassError, match="options"):
        store.answer(key, question, 0.5)
    with pytest.raises(ClassError, match="finite"):
        store.answer(key, question, float("nan"))
    with pytest.raises(ClassError, match="2 to"):
        store.ask(cls.teacher_key, "choice", "?", ["only one"])
    with pytest.raises(ClassError, match="hours"):
        store.open_class(hours=100)
    assert store.status(cls.teacher_key)["students"] == 2


def test_the_export_is_one_row_per_answer_and_no_cell_is_a_formula(url):
    store, cls, _clock = opened(url)
    mean = store.join(cls.code, "=HYPERLINK(1)")
    plain = store.join(cls.code, "李雷")
    question = store.ask(cls.teacher_key, "choice", "它 → ?", ["猫", "老鼠"], {"answer": 0})
    store.answer(mean, question, 1)
    store.answer(plain, question, 0)
    rows = list(csv.DictReader(io.StringIO(store.export_csv(cls.teacher_key))))
    assert [(row["student"], row["answer_label"]) for row in rows] == [
        ("'=HYPERLINK(1)", "老鼠"), ("李雷", "猫")]
    assert {row["class"] for row in rows} == {cls.code}
    assert all(row["model_answer"] == '{"answer": 0}' for row in rows)


def test_the_limits_come_from_the_environment():
    limits = ClassLimits.from_environ({"ATTENTION_EXPLORER_CLASS_STUDENTS": "40",
                                       "ATTENTION_EXPLORER_CLASS_HOURS": "1.5"})
    assert (limits.students_per_class, limits.hours) == (40, 1.5)
    assert isinstance(limits.students_per_class, int)
    for bad in ("0", "-1", "many", "nan", "inf"):
        with pytest.raises(ValueError, match="ATTENTION_EXPLORER_CLASS_OPEN"):
            ClassLimits.from_environ({"ATTENTION_EXPLORER_CLASS_OPEN": bad})


def test_the_default_database_is_a_file_in_the_apps_cache(tmp_path):
    assert live.default_url({"ATTENTION_EXPLORER_DATABASE_URL": " postgresql://x/y "}) == (
        "postgresql://x/y")
    url = live.default_url({"ATTENTION_EXPLORER_CACHE": str(tmp_path / "cache")})
    assert url == f"sqlite:///{tmp_path / 'cache' / 'classes.sqlite'}"
    assert Store(url).revision == "0001"


def test_the_join_links_qr_code_reads_back_as_the_link_with_the_code():
    import zxingcpp  # an independent QR reader (requirements-dev.txt)

    from app_pages.live import join

    link = join.join_link("http://127.0.0.1:8501/", " ap9-33m ")
    assert link == "http://127.0.0.1:8501/join?code=AP933M"
    assert [found.text for found in zxingcpp.read_barcodes(join.qr_pixels(link))] == [link]
    svg = join.qr_svg(link)
    assert svg.startswith("<svg") and 'fill="#fff"' in svg  # light ground in either theme
    assert join.teacher_link("https://x.org/explorer", "a b") == (
        "https://x.org/explorer/class?teacher=a+b")


def test_two_servers_starting_at_once_on_a_new_database_both_open_it(url):
    script = ("import sys; from app_pages.live.store import Store; "
              "print(Store(sys.argv[1]).revision)")
    runs = [subprocess.Popen([sys.executable, "-c", script, url], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _out, err in outputs]
    assert [out.strip() for out, _err in outputs] == ["0001"] * 3
