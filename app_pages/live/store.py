"""The class database: classes, students, questions and answers, through SQLAlchemy.

An embedded SQLite file by default (no set-up for ``make run``); PostgreSQL, or any database
SQLAlchemy speaks, when the operator sets ``ATTENTION_EXPLORER_DATABASE_URL`` (several server
processes behind a proxy share it). The schema is created and versioned by Alembic
(``app_pages/live/migrations``) when a :class:`Store` opens, so that a server restart keeps every
class and answer and a newer server upgrades an older file.

Who may do what is decided by keys, not by pages: the teacher's key (in the teacher's private
link) alone can ask, reveal, close and export; a student's key reaches only that student's
class, its current question and that student's own answer. Keys are stored as SHA-256 digests,
never in the clear. Every limit is a :class:`ClassLimits` field read from the environment.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from i18n import _

# The join code's letters: no 0/O, 1/I/L, 2/Z, 5/S, 8/B, so that a code read off a projector is
# typed right. 6 of these 25: 244 million codes, and wrong codes are rate-limited per client.
CODE_ALPHABET = "34679ACDEFGHJKMNPQRTUVWXY"
CODE_LENGTH = 6

metadata = sa.MetaData()

classes = sa.Table(
    "classes", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("code", sa.String(16), nullable=False, unique=True),
    sa.Column("teacher_key", sa.String(64), nullable=False, unique=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("closed_at", sa.Float, nullable=True),
)
students = sa.Table(
    "students", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("class_id", sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("key", sa.String(64), nullable=False, unique=True),
    sa.Column("name", sa.String(80), nullable=False),
    sa.Column("joined_at", sa.Float, nullable=False),
    # the answer rate: answers since window_start (a one-minute window)
    sa.Column("window_start", sa.Float, nullable=False),
    sa.Column("window_count", sa.Integer, nullable=False),
)
questions = sa.Table(
    "questions", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("class_id", sa.ForeignKey("classes.id", ondelete="CASCADE"), nullable=False,
              index=True),
    sa.Column("kind", sa.String(16), nullable=False),  # "choice" (tap one option) or "number"
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("options", sa.JSON, nullable=False),  # the options' labels (empty for a number)
    sa.Column("truth", sa.JSON, nullable=False),  # the model's answer, shown on reveal
    sa.Column("asked_at", sa.Float, nullable=False),
    sa.Column("revealed_at", sa.Float, nullable=True),
)
answers = sa.Table(
    "answers", metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("question_id", sa.ForeignKey("questions.id", ondelete="CASCADE"), nullable=False),
    sa.Column("student_id", sa.ForeignKey("students.id", ondelete="CASCADE"), nullable=False),
    sa.Column("value", sa.Float, nullable=False),  # the option's index, or the number
    sa.Column("answered_at", sa.Float, nullable=False),
    sa.UniqueConstraint("question_id", "student_id", name="one_answer_per_student"),
)
join_failures = sa.Table(  # wrong join codes per client, in the database: shared by processes
    "join_failures", metadata,
    sa.Column("client", sa.String(128), primary_key=True),
    sa.Column("window_start", sa.Float, nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
)

KINDS = ("choice", "number")


class ClassError(ValueError):
    """What a teacher or student is told when the class refuses (a message for the page)."""


@dataclass(frozen=True)
class ClassLimits:
    """The class limits of a server, each set by its variable in :attr:`ENVIRON` (the
    settings table of docs/operating.md)."""

    students_per_class: int = 200
    open_classes: int = 50  # classes open at once on the server (its database)
    answers_per_minute: int = 30  # per student: a later tap replaces the answer, but counts
    name_chars: int = 40
    wrong_codes_per_minute: int = 10  # per client: 244 million codes take years to guess
    hours: float = 3.0  # a class expires this long after it opened
    max_hours: float = 24.0
    options: int = 64  # options of one question (a token question: the sentence's tokens)
    prompt_chars: int = 2000

    ENVIRON = {"students_per_class": "ATTENTION_EXPLORER_CLASS_STUDENTS",
               "open_classes": "ATTENTION_EXPLORER_CLASS_OPEN",
               "answers_per_minute": "ATTENTION_EXPLORER_CLASS_ANSWERS_PER_MINUTE",
               "name_chars": "ATTENTION_EXPLORER_CLASS_NAME_CHARS",
               "wrong_codes_per_minute": "ATTENTION_EXPLORER_CLASS_WRONG_CODES_PER_MINUTE",
               "hours": "ATTENTION_EXPLORER_CLASS_HOURS",
               "max_hours": "ATTENTION_EXPLORER_CLASS_MAX_HOURS"}

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> ClassLimits:
        """The defaults, each replaced by its environment variable where one is set (a
        positive number; anything else is refused with the variable's name)."""
        values: dict[str, Any] = {}
        for field in fields(cls):
            name = cls.ENVIRON.get(field.name)
            raw = environ.get(name, "").strip() if name else ""
            if not raw:
                continue
            try:
                number = float(raw)
            except ValueError:
                number = math.nan
            if not number > 0 or not math.isfinite(number):
                raise ValueError(_("{name}={value} must be a positive number").format(
                    name=name, value=repr(raw)))
            values[field.name] = int(number) if field.type == "int" else number
        return cls(**values)


@dataclass(frozen=True)
class Opened:
    """A class just opened: its join code and the teacher's key (shown once, in the link)."""

    code: str
    teacher_key: str
    expires_at: float


@dataclass(frozen=True)
class Question:
    """A question as a student sees it: no truth until it is revealed."""

    id: int
    kind: str
    prompt: str
    options: tuple[str, ...]
    revealed: bool
    truth: Any  # None until revealed


@dataclass(frozen=True)
class Results:
    """A question's answers for the teacher: how many answered, the votes per option (a
    choice) or every number given (a number), and the model's answer."""

    question: Question
    answered: int
    votes: tuple[int, ...]  # per option (a choice question)
    numbers: tuple[float, ...]  # sorted (a number question)
    truth: Any


def default_url(environ: Mapping[str, str] = os.environ) -> str:
    """``$ATTENTION_EXPLORER_DATABASE_URL``, or an SQLite file in the app's cache folder
    (``$ATTENTION_EXPLORER_CACHE``, or ~/.cache/attention-explorer: the GGUF cache's)."""
    url = environ.get("ATTENTION_EXPLORER_DATABASE_URL", "").strip()
    if url:
        return url
    base = environ.get("ATTENTION_EXPLORER_CACHE")
    folder = Path(base) if base else Path.home() / ".cache" / "attention-explorer"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'classes.sqlite'}"


def engine_for(url: str) -> Engine:
    """An engine for ``url``: SQLite waits for the writer (30 s) and keeps a write-ahead log,
    so that readers are never blocked by a student's answer; foreign keys are enforced."""
    if not url.startswith("sqlite"):
        return sa.create_engine(url, pool_pre_ping=True)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if ":memory:" not in url:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    return engine


_MIGRATING = threading.Lock()


def migrate(engine: Engine) -> str:
    """Bring the database's schema to the newest revision (Alembic's ``upgrade head``) and
    return that revision."""
    from alembic import command
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with _MIGRATING, _across_processes(engine), engine.begin() as connection:
        if engine.dialect.name == "postgresql":  # two servers starting at once: one migrates
            connection.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"),
                               {"key": MIGRATION_LOCK})
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
        return MigrationContext.configure(connection).get_current_revision()


MIGRATION_LOCK = 0x4154544E  # PostgreSQL's advisory lock of the class schema's migrations


def _across_processes(engine: Engine):
    """A lock file beside an SQLite file while its schema is migrated (processes of one
    machine); PostgreSQL locks inside the transaction instead (:data:`MIGRATION_LOCK`)."""
    from contextlib import nullcontext

    from filelock import FileLock

    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        return nullcontext()
    return FileLock(f"{database}.migrate.lock", timeout=120)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def normalise_code(code: str) -> str:
    """A typed code as stored: capitals, no spaces or dashes."""
    return "".join(str(code).split()).replace("-", "").upper()


class Store:
    """The class database of one server (shared by its sessions; thread-safe)."""

    def __init__(self, url: str | None = None, limits: ClassLimits | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.url = url or default_url()
        self.limits = limits or ClassLimits.from_environ()
        self.clock = clock
        self.engine = engine_for(self.url)
        self.revision = migrate(self.engine)

    def dispose(self) -> None:
        self.engine.dispose()

    # --- the teacher ------------------------------------------------------------------------

    def open_class(self, hours: float | None = None) -> Opened:
        """Open a class for ``hours`` (the server's default when None); refused when the server
        has as many open classes as it allows."""
        hours = self.limits.hours if hours is None else float(hours)
        if not 0 < hours <= self.limits.max_hours:
            raise ClassError(_("A class lasts more than 0 and at most {hours:g} hours.").format(
                hours=self.limits.max_hours))
        now = self.clock()
        teacher_key = secrets.token_urlsafe(24)
        with self.engine.begin() as db:
            open_now = db.execute(sa.select(sa.func.count()).select_from(classes).where(
                classes.c.closed_at.is_(None), classes.c.expires_at > now)).scalar_one()
            if open_now >= self.limits.open_classes:
                raise ClassError(_("This server has {count} classes open, as many as it allows: "
                                   "close one, or wait for one to end.").format(count=open_now))
            for _attempt in range(20):  # a code already taken (by an old class) is drawn again
                code = "".join(secrets.choice(CODE_ALPHABET) for _index in range(CODE_LENGTH))
                taken = db.execute(sa.select(classes.c.id).where(classes.c.code == code)).first()
                if taken is None:
                    break
            else:  # pragma: no cover - 244 million codes
                raise ClassError(_("No free join code was found: try again."))
            db.execute(classes.insert().values(
                code=code, teacher_key=_digest(teacher_key), created_at=now,
                expires_at=now + hours * 3600, closed_at=None))
        return Opened(code, teacher_key, now + hours * 3600)

    def _teacher_class(self, db, teacher_key: str, *, usable: bool = True):
        row = db.execute(sa.select(classes).where(
            classes.c.teacher_key == _digest(str(teacher_key)))).first()
        if row is None:
            raise ClassError(_("This teacher link does not open a class."))
        if usable:
            self._check_open(row)
        return row

    def _check_open(self, row) -> None:
        if row.closed_at is not None:
            raise ClassError(_("This class is closed."))
        if row.expires_at <= self.clock():
            raise ClassError(_("This class has ended (it expired)."))

    def code_of(self, teacher_key: str) -> str:
        """The join code of the teacher's class (closed or not)."""
        with self.engine.connect() as db:
            return self._teacher_class(db, teacher_key, usable=False).code

    def status(self, teacher_key: str) -> dict[str, Any]:
        """The class for the teacher: code, expiry, closed, students joined, and the id of the
        students' current question (the latest asked; None before the first)."""
        with self.engine.connect() as db:
            row = self._teacher_class(db, teacher_key, usable=False)
            joined = db.execute(sa.select(sa.func.count()).select_from(students).where(
                students.c.class_id == row.id)).scalar_one()
            latest = _latest_question(db, row.id)
        return {"code": row.code, "expires_at": row.expires_at, "closed": row.closed_at is not None,
                "ended": row.closed_at is not None or row.expires_at <= self.clock(),
                "students": joined, "question": latest}

    def ask(self, teacher_key: str, kind: str, prompt: str, options: Sequence[str] = (),
            truth: Any = None) -> int:
        """Ask the class a question (it becomes the students' current one); return its id.
        ``truth``: the model's answer (JSON), shown only on reveal."""
        if kind not in KINDS:
            raise ClassError(_("A question is a choice or a number."))
        options = [str(option) for option in options]
        if kind == "choice" and not 2 <= len(options) <= self.limits.options:
            raise ClassError(_("A choice question has 2 to {count} options.").format(
                count=self.limits.options))
        if kind == "number":
            options = []
        prompt = str(prompt)[: self.limits.prompt_chars]
        truth = json.loads(json.dumps(truth))  # refused here, not on reveal, if not JSON
        with self.engine.begin() as db:
            row = self._teacher_class(db, teacher_key)
            return db.execute(questions.insert().values(
                class_id=row.id, kind=kind, prompt=prompt, options=options, truth=truth,
                asked_at=self.clock(), revealed_at=None)).inserted_primary_key[0]

    def _teacher_question(self, db, teacher_key: str, question_id: int, usable: bool = False):
        row = self._teacher_class(db, teacher_key, usable=usable)
        question = db.execute(sa.select(questions).where(
            questions.c.id == int(question_id), questions.c.class_id == row.id)).first()
        if question is None:
            raise ClassError(_("This question is not one of this class's."))
        return question

    def answered(self, teacher_key: str, question_id: int) -> int:
        """How many students have answered the question (the teacher's live count)."""
        with self.engine.connect() as db:
            question = self._teacher_question(db, teacher_key, question_id)
            return db.execute(sa.select(sa.func.count()).select_from(answers).where(
                answers.c.question_id == question.id)).scalar_one()

    def reveal(self, teacher_key: str, question_id: int) -> Results:
        """Reveal the model's answer to the class (students see it too) and return the
        class's answers beside it."""
        with self.engine.begin() as db:
            question = self._teacher_question(db, teacher_key, question_id)
            if question.revealed_at is None:
                db.execute(questions.update().where(questions.c.id == question.id).values(
                    revealed_at=self.clock()))
        return self.results(teacher_key, question_id)

    def results(self, teacher_key: str, question_id: int) -> Results:
        """The class's answers to the question, for the teacher only (revealed or not)."""
        with self.engine.connect() as db:
            question = self._teacher_question(db, teacher_key, question_id)
            values = db.execute(sa.select(answers.c.value).where(
                answers.c.question_id == question.id)).scalars().all()
        shown = _question(question, reveal=True)
        votes = [0] * len(shown.options)
        for value in values:
            if question.kind == "choice" and 0 <= int(value) < len(votes):
                votes[int(value)] += 1
        numbers = tuple(sorted(values)) if question.kind == "number" else ()
        return Results(shown, len(values), tuple(votes), numbers, question.truth)

    def close(self, teacher_key: str) -> None:
        """Close the class now: it refuses joins and answers from then on."""
        with self.engine.begin() as db:
            row = self._teacher_class(db, teacher_key, usable=False)
            if row.closed_at is None:
                db.execute(classes.update().where(classes.c.id == row.id).values(
                    closed_at=self.clock()))

    def export_csv(self, teacher_key: str) -> str:
        """Every answer of the class: one row per answer, with its question and the model's
        answer (a teacher's spreadsheet)."""
        with self.engine.connect() as db:
            row = self._teacher_class(db, teacher_key, usable=False)
            rows = db.execute(
                sa.select(questions.c.id, questions.c.kind, questions.c.prompt,
                          questions.c.options, questions.c.truth, students.c.name,
                          answers.c.value, answers.c.answered_at)
                .select_from(answers.join(questions).join(students))
                .where(questions.c.class_id == row.id)
                .order_by(questions.c.id, answers.c.answered_at, answers.c.id)).all()
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["class", "question", "kind", "prompt", "student", "answer",
                         "answer_label", "model_answer", "answered_at"])
        for (qid, kind, prompt, options, truth, name, value, at) in rows:
            label = (options[int(value)] if kind == "choice" and 0 <= int(value) < len(options)
                     else "")
            answer = int(value) if kind == "choice" else value
            writer.writerow([row.code, qid, kind, _safe_cell(prompt), _safe_cell(name), answer,
                             _safe_cell(label), json.dumps(truth, ensure_ascii=False),
                             time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))])
        return out.getvalue()

    # --- a student --------------------------------------------------------------------------

    def join(self, code: str, name: str = "", client: str = "") -> str:
        """Join the class of ``code`` as ``name`` (empty: anonymous); return the student's
        key. ``client`` (the browser's address or session) is rate-limited on wrong codes."""
        code = normalise_code(code)
        name = " ".join(str(name).split())
        if len(name) > self.limits.name_chars:
            raise ClassError(_("A name has at most {count} characters.").format(
                count=self.limits.name_chars))
        now = self.clock()
        client = str(client)[:128]
        with self.engine.begin() as db:
            failed = db.execute(sa.select(join_failures).where(
                join_failures.c.client == client)).first()
            if (failed is not None and now - failed.window_start < 60
                    and failed.count >= self.limits.wrong_codes_per_minute):
                raise ClassError(_("Too many wrong codes: wait a minute and try again."))
            row = db.execute(sa.select(classes).where(classes.c.code == code)).first()
        if row is None:
            self._count_wrong_code(client, now)
            raise ClassError(_("No class has the code {code}.").format(code=code or "…"))
        self._check_open(row)
        key = secrets.token_urlsafe(24)
        with self.engine.begin() as db:
            joined = db.execute(sa.select(sa.func.count()).select_from(students).where(
                students.c.class_id == row.id)).scalar_one()
            if joined >= self.limits.students_per_class:
                raise ClassError(_("This class is full ({count} students).").format(
                    count=joined))
            db.execute(students.insert().values(
                class_id=row.id, key=_digest(key), name=name or _("anonymous"), joined_at=now,
                window_start=now, window_count=0))
        return key

    def _count_wrong_code(self, client: str, now: float) -> None:
        with self.engine.begin() as db:
            failed = db.execute(sa.select(join_failures).where(
                join_failures.c.client == client)).first()
            if failed is None:
                db.execute(join_failures.insert().values(client=client, window_start=now,
                                                         count=1))
            elif now - failed.window_start >= 60:
                db.execute(join_failures.update().where(join_failures.c.client == client)
                           .values(window_start=now, count=1))
            else:
                db.execute(join_failures.update().where(join_failures.c.client == client)
                           .values(count=join_failures.c.count + 1))

    def _student(self, db, student_key: str):
        found = db.execute(sa.select(students, classes).join(classes).where(
            students.c.key == _digest(str(student_key)))).first()
        if found is None:
            raise ClassError(_("This student link does not open a class: join again."))
        return found

    def current(self, student_key: str) -> tuple[Question | None, float | None]:
        """The student's current question (the class's latest) and the student's answer to it;
        a closed or expired class refuses with a message."""
        with self.engine.connect() as db:
            found = self._student(db, student_key)
            self._check_open(found)
            latest = _latest_question(db, found.class_id)
            question = None if latest is None else db.execute(
                sa.select(questions).where(questions.c.id == latest)).first()
            if question is None:
                return None, None
            mine = db.execute(sa.select(answers.c.value).where(
                answers.c.question_id == question.id,
                answers.c.student_id == found.id)).scalar_one_or_none()
        return _question(question), mine

    def answer(self, student_key: str, question_id: int, value: float) -> None:
        """The student's answer to the question: an option's index, or a number. One answer
        per student and question: a later one replaces it."""
        now = self.clock()
        with self.engine.begin() as db:
            found = self._student(db, student_key)
            self._check_open(found)
            question = db.execute(sa.select(questions).where(
                questions.c.id == int(question_id),
                questions.c.class_id == found.class_id)).first()
            if question is None:
                raise ClassError(_("This question is not one of this class's."))
            if question.revealed_at is not None:
                raise ClassError(_("The answer has been revealed: no more answers."))
            # a tap sent just before the next question showed
            if _latest_question(db, found.class_id) != question.id:
                raise ClassError(_("A new question has been asked: answer that one."))
            value = _valid_answer(question, value)
            # the answer rate, counted in the same transaction as the answer
            if now - found.window_start >= 60:
                window = {"window_start": now, "window_count": 1}
            elif found.window_count >= self.limits.answers_per_minute:
                raise ClassError(_("Too many answers in a minute: wait a moment."))
            else:
                window = {"window_count": students.c.window_count + 1}
            db.execute(students.update().where(students.c.id == found.id).values(**window))
            insert = _upsert(self.engine.dialect.name)(answers).values(
                question_id=question.id, student_id=found.id, value=value, answered_at=now)
            db.execute(insert.on_conflict_do_update(
                index_elements=["question_id", "student_id"],
                set_={"value": value, "answered_at": now}))


def _latest_question(db, class_id: int) -> int | None:
    """The id of the class's current question: the latest asked (None before the first)."""
    return db.execute(sa.select(sa.func.max(questions.c.id)).where(
        questions.c.class_id == class_id)).scalar_one()


def _upsert(dialect: str):
    """The dialect's INSERT with ON CONFLICT (SQLite and PostgreSQL both have it)."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise ClassError(_("The class database must be SQLite or PostgreSQL, not {name}.")
                         .format(name=dialect))
    return insert


def _valid_answer(question, value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ClassError(_("An answer is a number.")) from None
    if not math.isfinite(number):
        raise ClassError(_("An answer is a finite number."))
    if question.kind == "choice" and (number != int(number)
                                      or not 0 <= number < len(question.options)):
        raise ClassError(_("Pick one of the options."))
    return number


def _question(row, reveal: bool = False) -> Question:
    revealed = row.revealed_at is not None
    return Question(row.id, row.kind, row.prompt, tuple(row.options), revealed,
                    row.truth if revealed or reveal else None)


def _safe_cell(text: str) -> str:
    """A user's string in a CSV cell that a spreadsheet will not run as a formula."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
