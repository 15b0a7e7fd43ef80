"""The one cache of traces and analyses every session shares (:class:`SharedCache`): bounded by
the bytes it holds (:func:`nbytes`), least recently used first out; a result another session is
computing is waited for, not computed twice. At most ``concurrent_runs`` computations run at
once (:class:`Slots`: in the order asked, one per session); a run whose session has gone stops
at its next batch (:class:`Cancelled`)."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np
from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

from app_pages.cache.memory import trim_freed_memory
from i18n import language


def nbytes(value: Any, _seen: set[int] | None = None) -> int:
    """The bytes of every numpy array reachable from ``value`` (through dataclasses, objects'
    attributes, mappings and sequences), each counted once, plus strings and bytes."""
    seen = set() if _seen is None else _seen
    if id(value) in seen or value is None or isinstance(value, (bool, int, float, type)):
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        base = value.base if isinstance(value.base, np.ndarray) else None
        return nbytes(base, seen) if base is not None else value.nbytes
    if isinstance(value, (str, bytes)):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sum(nbytes(k, seen) + nbytes(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sum(nbytes(v, seen) for v in value)
    if is_dataclass(value):
        return sum(nbytes(getattr(value, f.name), seen) for f in fields(value))
    if hasattr(value, "__dict__"):
        return nbytes(vars(value), seen)
    return 0


class _Pending:
    """A result being computed: whoever asks meanwhile waits for it (or for its error)."""

    def __init__(self):
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.language = ""  # of the session computing it: its error's message is in it
        self.waiters = 0  # sessions waiting for it


class Cancelled(Exception):  # noqa: N818 (what happened, not an error of the user's)
    """The session that asked for a long run has gone (its tab closed): the run stopped at
    its next batch. Whoever else waited for the same result computes it again."""


def session_id() -> str | None:
    """The Streamlit session this thread runs for (None outside a session: the API, tests)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def session_active(session: str | None) -> bool:
    """Whether ``session`` still has a browser connected (True outside a server)."""
    from streamlit.runtime import Runtime

    if session is None or not Runtime.exists():
        return True
    return Runtime.instance().is_active_session(session)


class Slots:
    """``n`` compute slots, handed out in the order they were asked for, at most one per
    session at a time: a session that asks again while it holds one (another tab's run is
    another session) waits behind the others instead of taking a second.

    A long run takes a slot per batch (:meth:`hold`) and gives it back in between, so that
    whoever asked meanwhile is served first.
    """

    POLL = 0.25  # seconds between calls of ``waiting`` and checks that the session is there

    def __init__(self, n: int):
        self.n = max(1, n)
        self._cond = threading.Condition()
        self._queue: deque[tuple[object, Hashable]] = deque()  # (ticket, owner), in order
        self._holders: dict[Hashable, int] = {}  # owner -> slots held

    @property
    def held(self) -> int:
        with self._cond:
            return sum(self._holders.values())

    @property
    def queued(self) -> int:
        with self._cond:
            return len(self._queue)

    def _ahead(self, ticket: object) -> int | None:
        """How many requests are before ``ticket`` in the queue; None when it may take a slot
        now (a free slot, and no earlier request that may take it; a request whose session
        holds a slot already waits for that one)."""
        free = self.n - sum(self._holders.values())
        busy = set(self._holders)
        ahead = 0
        for queued, owner in self._queue:
            if owner not in busy and free > 0:
                if queued is ticket:
                    return None
                free -= 1
                busy.add(owner)
            if queued is ticket:
                return ahead
            ahead += 1
        return ahead

    @contextmanager
    def hold(self, owner: Hashable | None = None,
             waiting: Callable[[int], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> Iterator[None]:
        """Hold a slot for the block.

        Args:
            owner: who asks (a session id; None: nobody else's, a slot of its own).
            waiting: called with the number of requests ahead, now and then while it waits
                (outside the lock: it may draw on the page, or raise to give up).
            cancelled: whether to give up; checked while waiting (raises :class:`Cancelled`).
        """
        ticket = object()
        owner = ticket if owner is None else owner
        with self._cond:
            self._queue.append((ticket, owner))
        try:
            while True:
                with self._cond:
                    ahead = self._ahead(ticket)
                    if ahead is None:
                        self._queue.remove((ticket, owner))
                        self._holders[owner] = self._holders.get(owner, 0) + 1
                        break
                    self._cond.wait(self.POLL)
                    ahead = self._ahead(ticket)
                    if ahead is None:
                        continue
                if cancelled is not None and cancelled():
                    raise Cancelled()
                if waiting is not None:
                    waiting(ahead)
        except BaseException:
            with self._cond:
                if (ticket, owner) in self._queue:
                    self._queue.remove((ticket, owner))
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self._holders[owner] -= 1
                if not self._holders[owner]:
                    del self._holders[owner]
                self._cond.notify_all()


class SharedCache:
    """A least-recently-used cache bounded by bytes, shared by every session, that computes each
    key once and at most ``workers`` computations at a time.

    Whoever asks for a key being computed waits and gets the same result (or the same error),
    even when the result is too large to keep. A computation may ask the cache again (an
    analysis asking for its trace): a thread that holds a worker slot does not wait for
    another. Slots go to sessions in the order they asked (:class:`Slots`).

    Args:
        max_bytes: the most it holds; a result larger than this is returned but not kept.
        workers: computations running at once.
    """

    def __init__(self, max_bytes: int, workers: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._running: dict[Hashable, _Pending] = {}
        self.slots = Slots(workers)
        self._held = threading.local()

    @property
    def size(self) -> int:
        """Bytes held now."""
        with self._lock:
            return sum(size for _value, size in self._items.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def peek(self, key: Hashable) -> tuple[bool, Any]:
        """``(True, value)`` when ``key`` is held (it becomes the most recently used), else
        ``(False, None)``."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True, self._items[key][0]
            return False, None

    @contextmanager
    def slot(self, waiting: Callable[[int], None] | None = None,
             stop_when_gone: bool = False) -> Iterator[None]:
        """Hold one of the worker slots for a computation (at once if this thread holds one),
        as this thread's session (:func:`session_id`).

        Args:
            waiting: called with the requests ahead while it waits (see :meth:`Slots.hold`).
            stop_when_gone: raise :class:`Cancelled` instead of computing when the session
                has no browser any more (a long run's next batch).
        """
        depth = getattr(self._held, "depth", 0)
        if depth:
            self._held.depth = depth + 1
            try:
                yield
            finally:
                self._held.depth = depth
            return
        session = session_id()
        gone = (lambda: not session_active(session)) if stop_when_gone else None
        if gone is not None and gone():
            raise Cancelled()
        with self.slots.hold(session, waiting=waiting, cancelled=gone):
            self._held.depth = 1
            try:
                yield
            finally:
                self._held.depth = 0

    def get(self, key: Hashable, compute: Callable[[], Any], slot: bool = True) -> Any:
        """The cached value of ``key``, else ``compute()`` (once, whoever asks meanwhile).

        ``slot``: compute in a worker slot; False for a long run that takes one per batch
        itself (:meth:`slot`)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
            pending = self._running.get(key)
            mine = pending is None
            if mine:
                pending = self._running[key] = _Pending()
            else:
                pending.waiters += 1
        if not mine:
            pending.done.wait()
            if pending.error is not None:
                if isinstance(pending.error, (Cancelled, ScriptControlException)):
                    # its session left, or stopped or reran its script (Streamlit stops a
                    # closed tab's run at its next call): ours still wants the result
                    return self.get(key, compute, slot)
                if pending.language != language():
                    # its message is in the other session's language: fail in ours (errors
                    # are not kept, so this computes again, once per language at most)
                    return self.get(key, compute, slot)
                raise pending.error
            return pending.value
        pending.language = language()
        try:
            if slot:
                with self.slot():
                    pending.value = compute()
            else:
                pending.value = compute()
            self._put(key, pending.value)
        except BaseException as error:
            pending.error = error
            raise
        finally:
            with self._lock:
                del self._running[key]
            pending.done.set()
        return pending.value

    def _put(self, key: Hashable, value: Any) -> None:
        size = nbytes(value)
        if size > self.max_bytes:
            return
        evicted = []
        with self._lock:
            self._items[key] = (value, size)
            total = sum(size for _value, size in self._items.values())
            while total > self.max_bytes:
                _key, (old, dropped) = self._items.popitem(last=False)
                evicted.append(old)
                total -= dropped
        if evicted:
            del evicted, old  # freed here unless a session still holds them
            trim_freed_memory()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
