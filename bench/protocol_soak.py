"""Protocol soak: many sessions at once against one served app, each a lightweight client that
speaks Streamlit's own websocket protocol instead of a browser.

    .venv/bin/python -m bench.protocol_soak [--sessions 30] [--rounds 1] [--seed 0]
                                            [--timeout 180] [--max-seconds 1800] [--steps N]
                                            [--ramp 0] [--warmup]
                                            [--url http://127.0.0.1:8501 [--pid PID]]
                                            [--json FILE] [--by-action]

``bench.soak`` drives Chromium, and 25 Chromiums on the server's 2 cores say more about the
browsers than about the server. Here one asyncio task per session opens the app's websocket
(``/_stcore/stream``, the subprotocol ``streamlit``), sends the ``BackMsg`` a browser sends
(``rerun_script``: the URL's query string, the page by its URL path or its script hash, widget
states) and reads the ``ForwardMsg`` stream back (``new_session``, ``navigation``, ``delta``,
``page_info_changed``, ``script_finished``). Nothing is drawn; the times are the server's own.
No XSRF token or cookie is needed (Streamlit checks them on the websocket only to read login
cookies), and none of the page's static files are fetched.

Each session walks (seeded, with small random variations, a user's pause of 0.2-1.2 s between
actions): the start page; Explore (own-translator, the default model); a sentence of the
session's own in the sidebar's Text box; another layer and another head (widget states); a link
``/explore?model=minilm&text=…`` and another head; a link ``/explore?model=smollm2&text=…
&layer=…&head=…`` (minilm and smollm2 in a random order; a link is a fresh session, as a page
load is); one of Head view, Model view, Causal mask, Rollout, Head statistics; Explore again; a
sentence own-translator knows in the Text box, and own-translator in the Model box.
``--rounds`` repeats the walk, ``--steps`` cuts it short; ``--warmup`` walks once alone
first, untimed, so that model loads are not counted (without it the figures are a class's
first minute: every session arrives at a server that has loaded nothing).

Each action is timed from sending its ``rerun_script`` to (a) the first ``plotly_chart`` delta
of its run and (b) its ``script_finished`` (a run the app restarts itself, ``st.rerun`` or
``st.switch_page``, is followed to the end). Failures: no ``script_finished`` in ``--timeout``
("timeout"), a run that drew no chart ("no chart"), an ``exception`` element ("exception"), an
error box ("error box"), a link or widget value the run did not take, as the address the app
publishes shows ("not applied"), a page not found, a closed connection ("connection"), an
action still going at ``--max-seconds`` ("cut short").

The server's CPU time (its process and children, user and system) and resident memory are
sampled every 0.5 s, and this client's own CPU time beside them. Without ``--url`` the app is
started on a free local port (``tests.helpers.served_app``, its file watcher off); with
``--url`` a running app is used, its CPU and memory those of ``--pid`` (else of the process
listening on the URL's port, when it is on this machine and psutil may see it).

Every loop is bounded: a run waits at most ``--timeout`` seconds, the whole soak at most
``--max-seconds`` (sessions still walking then are stopped and reported as "cut short").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qsl, urlencode, urlparse

import numpy as np
import psutil

from bench.soak import BASES, number_words, own_sentences, report, sampled, target_server

PRETRAINED = ("minilm", "smollm2")  # bundled models that read any text
OTHER_PAGES = ("head_view", "model_view", "mask", "rollout", "stats")  # by URL path
DEFAULT_MODEL = "own-translator"
ERROR = 1  # Alert.Format.ERROR
FINISHED = (0, 1)  # ScriptFinishedStatus: FINISHED_SUCCESSFULLY, FINISHED_WITH_COMPILE_ERROR
EARLY = 2  # FINISHED_EARLY_FOR_RERUN: the run is followed into the next one
WIDGETS = ("selectbox", "text_area", "text_input")  # the widgets a walk sets
MAX_MESSAGES = 100_000  # per run: a run that sends more is a failure, not an endless loop


@dataclass
class Action:
    session: int
    name: str
    to_chart: float | None = None  # seconds from the rerun sent to its first plotly_chart
    to_finished: float | None = None  # ... to its script_finished
    to_started: float | None = None  # ... to its new_session (the run started)
    charts: int = 0
    received_bytes: int = 0
    failure: str | None = None
    detail: str = ""


@dataclass
class Session:
    index: int
    actions: list[Action] = field(default_factory=list)
    seconds: float = 0.0
    aborted: str = ""


@dataclass
class Widget:
    id: str
    kind: str
    options: list[str]
    value: str  # what the widget shows, as the frontend would send it


class Failed(Exception):
    """An action that went wrong: ``kind`` (timeout, connection, ...) and a detail."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


# --- server CPU and memory --------------------------------------------------------------------

class Sampler(threading.Thread):
    """Every ``interval`` seconds: the server's resident memory (its process and children), and
    the CPU time (user, system) the server and this client have used."""

    def __init__(self, server: int | None, interval: float = 0.5):
        super().__init__(daemon=True)
        self.server = psutil.Process(server) if server else None
        self.interval = interval
        self.rss: list[tuple[float, int]] = []  # (seconds, bytes)
        self.cpu: list[tuple[float, float]] = []  # (seconds, server CPU seconds so far)
        self.user = self.system = 0.0  # server CPU seconds since the start
        self._last: dict[int, tuple[float, float]] = {}
        self._me = psutil.Process()
        self._me_start = self._me.cpu_times()
        self.client = 0.0
        self._t0 = time.monotonic()
        self.seconds = 0.0
        self.stopped = threading.Event()
        if self.server is not None:  # what the server used before the soak does not count
            for process in self._tree():
                with contextlib.suppress(psutil.Error):
                    times = process.cpu_times()
                    self._last[process.pid] = (times.user, times.system)

    def _tree(self) -> list[psutil.Process]:
        return [self.server, *self.server.children(recursive=True)]

    def sample(self) -> None:
        now = time.monotonic() - self._t0
        if self.server is not None and self.server.is_running():
            total = 0
            for process in self._tree():  # per process: one that ends keeps what it used
                with contextlib.suppress(psutil.Error):
                    total += process.memory_info().rss
                    times = process.cpu_times()
                    user, system = self._last.get(process.pid, (0.0, 0.0))
                    self.user += max(0.0, times.user - user)
                    self.system += max(0.0, times.system - system)
                    self._last[process.pid] = (times.user, times.system)
            self.rss.append((now, total))
            self.cpu.append((now, self.user + self.system))
        times = self._me.cpu_times()
        self.client = (times.user - self._me_start.user) + (times.system - self._me_start.system)

    def run(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(psutil.Error):
                self.sample()
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        with contextlib.suppress(psutil.Error):
            self.sample()
        self.seconds = time.monotonic() - self._t0

    def peak_cores(self, window: float = 5.0) -> float | None:
        """The most cores the server kept busy over any ``window`` seconds."""
        if len(self.cpu) < 2:
            return None
        best, j = 0.0, 0
        for i in range(1, len(self.cpu)):
            while self.cpu[i][0] - self.cpu[j][0] > window:
                j += 1
            span = self.cpu[i][0] - self.cpu[j][0]
            if span >= 0.9 * window:
                best = max(best, (self.cpu[i][1] - self.cpu[j][1]) / span)
        if not best:  # a run shorter than the window: its mean
            span = self.cpu[-1][0] - self.cpu[0][0]
            best = (self.cpu[-1][1] - self.cpu[0][1]) / span if span > 0 else 0.0
        return best


# --- the protocol -----------------------------------------------------------------------------

def _protos():
    """Streamlit's message classes (imported when a soak starts: importing streamlit takes a
    second)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    return BackMsg, ForwardMsg


def _widget(element) -> tuple[str, Widget] | None:
    """(label, widget) for an element the walk may set, else None."""
    kind = element.WhichOneof("type")
    if kind not in WIDGETS:
        return None
    proto = getattr(element, kind)
    if kind == "selectbox":
        options = list(proto.options)
        if proto.set_value and proto.HasField("raw_value"):
            value = proto.raw_value
        else:
            value = options[proto.default] if 0 <= proto.default < len(options) else ""
        return proto.label, Widget(proto.id, kind, options, value)
    value = proto.value if proto.set_value else proto.default
    return proto.label, Widget(proto.id, kind, [], value)


class Client:
    """One user: a websocket to the app at a time (a link opens a fresh one, as a page load
    does), the widgets and pages the last run drew, the address the app published."""

    def __init__(self, url: str, timeout: float):
        parsed = urlparse(url)
        self.origin = f"{parsed.scheme}://{parsed.netloc}"
        self.base = parsed.path.rstrip("/")  # server.baseUrlPath, if any
        scheme = "wss" if parsed.scheme == "https" else "ws"
        self.stream = f"{scheme}://{parsed.netloc}{self.base}/_stcore/stream"
        self.timeout = timeout
        self.ws = None
        self.pages: dict[str, str] = {}  # URL path -> page script hash
        self.page = ""  # the URL path of the page shown
        self.query = ""  # the query string the app published (the address bar)
        self.widgets: dict[str, Widget] = {}  # by label, as the last finished run drew them

    async def connect(self) -> None:
        from websockets.asyncio.client import connect

        await self.close()
        # No ping: a server busy for a while must not look dead to the client (a browser does
        # not ping either); the runs' own timeouts bound every wait. No size limit: a figure may
        # be as large as server.maxMessageSize.
        self.ws = await connect(self.stream, subprotocols=["streamlit"], origin=self.origin,
                                max_size=None, ping_interval=None, open_timeout=self.timeout,
                                close_timeout=5)

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
            self.ws = None

    async def open(self, record: Action, page: str = "", query: dict | None = None) -> None:
        """A page load: a fresh session at ``/{page}?{query}``."""
        self.pages, self.widgets = {}, {}
        self.page, self.query = page, urlencode(query or {})
        started = time.monotonic()
        try:
            await asyncio.wait_for(self.connect(), self.timeout)
        except Exception as error:  # noqa: BLE001 - any failure to connect is one failure
            raise Failed("connection", f"{type(error).__name__}: {error}"[:300]) from error
        left = self.timeout - (time.monotonic() - started)
        await self.run(record, page=page, name_only=True, t0=started, limit=left)

    async def rerun(self, record: Action, *, page: str | None = None,
                    values: dict[str, str] | None = None) -> None:
        """A rerun of this session: a click on ``page`` in the navigation (the query string is
        the page's own then), or new ``values`` (label -> value) in the widgets shown."""
        if self.ws is None:
            raise Failed("connection", "no connection")
        states = []
        for label, value in (values or {}).items():
            widget = self.widgets.get(label)
            if widget is None:
                raise Failed("not applied", f"the page has no {label!r} box")
            states.append((widget, value))
        if page is not None:
            self.page, self.query = page, ""
        await self.run(record, page=self.page, states=states)
        for widget, value in states:  # the frontend keeps what was chosen
            widget.value = value

    async def run(self, record: Action, *, page: str, states=(), name_only: bool = False,
                  t0: float | None = None, limit: float | None = None) -> None:
        """Send one ``rerun_script`` and read its run to the end, filling ``record``."""
        BackMsg, ForwardMsg = _protos()
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_name = page
        if not name_only and page in self.pages:  # the frontend names a known page by hash
            state.page_script_hash = self.pages[page]
        state.context_info.url = (f"{self.origin}{self.base}/{page}"
                                  + (f"?{self.query}" if self.query else ""))
        state.context_info.locale = "en-GB"
        state.context_info.timezone = "UTC"
        for widget, value in states:
            proto = state.widget_states.widgets.add()
            proto.id = widget.id
            proto.string_value = value
        t0 = time.monotonic() if t0 is None else t0
        deadline = time.monotonic() + (self.timeout if limit is None else max(1.0, limit))
        try:
            await self.ws.send(msg.SerializeToString())
        except Exception as error:  # noqa: BLE001
            raise Failed("connection", f"{type(error).__name__}: {error}"[:300]) from error
        started = False  # a new_session after the rerun was sent: this run's messages follow
        drawn: dict[str, Widget] = {}
        problems: list[tuple[str, str]] = []
        shown_page = None
        for _ in range(MAX_MESSAGES):
            left = deadline - time.monotonic()
            if left <= 0:
                raise Failed("timeout", f"no script_finished in {self.timeout:.0f} s"
                              + ("" if started else " (the run did not start)"))
            try:
                data = await asyncio.wait_for(self.ws.recv(), left)
            except TimeoutError:
                continue
            except Exception as error:  # noqa: BLE001 - a closed connection, mostly
                raise Failed("connection", f"{type(error).__name__}: {error}"[:300]) from error
            record.received_bytes += len(data)
            forward = ForwardMsg()
            forward.ParseFromString(data)
            kind = forward.WhichOneof("type")
            now = time.monotonic() - t0
            if kind == "new_session":
                if not started:
                    record.to_started = now
                started = True
                drawn = {}
            elif not started:
                continue  # the end of an earlier run
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash
                              for p in forward.navigation.app_pages}
                shown_page = next((p.url_pathname for p in forward.navigation.app_pages
                                   if p.page_script_hash == forward.navigation.page_script_hash),
                                  None)
            elif kind == "page_not_found":
                problems.append(("page not found", forward.page_not_found.page_name or page))
            elif kind == "page_info_changed":
                self.query = forward.page_info_changed.query_string
            elif kind == "session_event" and forward.session_event.HasField(
                    "script_compilation_exception"):
                error = forward.session_event.script_compilation_exception
                problems.append(("exception", f"{error.type}: {error.message}"))
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                element = forward.delta.new_element
                element_kind = element.WhichOneof("type")
                if element_kind == "plotly_chart":
                    record.charts += 1
                    if record.to_chart is None:
                        record.to_chart = now
                elif element_kind == "exception":
                    problems.append(("exception",
                                     f"{element.exception.type}: {element.exception.message}"))
                elif element_kind == "alert" and element.alert.format == ERROR:
                    problems.append(("error box", element.alert.body))
                else:
                    found = _widget(element)
                    if found is not None and found[0] not in drawn:
                        drawn[found[0]] = found[1]
            elif kind == "script_finished":
                status = forward.script_finished
                if status == EARLY:  # the app reruns itself: its next run follows
                    continue
                if status in FINISHED:
                    record.to_finished = now
                    break
        else:
            raise Failed("timeout", f"more than {MAX_MESSAGES} messages in one run")
        self.widgets = drawn
        if shown_page is not None:
            self.page = shown_page
        if problems:
            kind, detail = problems[0]
            raise Failed(kind, detail[:400])
        if record.charts == 0:
            raise Failed("no chart", f"the run on {self.page or 'the start page'!r} drew none")

    def published(self) -> dict[str, str]:
        """The parameters of the address the app published for the view shown."""
        return dict(parse_qsl(self.query, keep_blank_values=True))


# --- one session ------------------------------------------------------------------------------

class Walker:
    """One user walking the app; records each action's times and outcome."""

    def __init__(self, url: str, index: int, args, sentences: list[str]):
        self.index, self.args = index, args
        self.rng = random.Random(f"{args.seed}-{index}")
        self.sentences = iter(sentences)
        self.client = Client(url, args.timeout)
        self.session = Session(index)
        self.steps = 0

    def done(self) -> bool:
        return self.args.steps is not None and self.steps >= self.args.steps

    async def act(self, name: str, action, expect: dict | None = None,
                  page: str | None = None) -> None:
        """Run ``action`` (a coroutine function taking the record), then check that the address
        the app published holds ``expect`` and that the page shown is ``page``."""
        if self.done():
            return
        self.steps += 1
        record = Action(self.index, name)
        self.session.actions.append(record)
        try:
            await action(record)
            published = self.client.published()
            wrong = {k: published.get(k) for k, v in (expect or {}).items()
                     if published.get(k) != v}
            if wrong:
                raise Failed("not applied", f"asked {expect}, the address holds {wrong}")
            if page is not None and self.client.page != page:
                raise Failed("not applied", f"asked the page {page!r}, the run showed "
                                            f"{self.client.page!r}")
        except Failed as failure:
            record.failure, record.detail = failure.kind, failure.detail
        except asyncio.CancelledError:  # past --max-seconds: the action in flight is not timed
            record.failure, record.detail = "cut short", "stopped at --max-seconds"
            raise
        except Exception as error:  # noqa: BLE001 - every failure is counted, then walked on
            record.failure, record.detail = "client", f"{type(error).__name__}: {error}"[:300]
        await asyncio.sleep(self.rng.uniform(0.2, 1.2))  # a user's pause

    async def choose(self, record: Action, label: str, option: str | None = None) -> str:
        """Choose ``option`` (else a random other one) in the select box ``label``; return the
        index chosen (the value of a range box such as Layer or Head)."""
        widget = self.client.widgets.get(label)
        if widget is None or not widget.options:
            raise Failed("not applied", f"the page has no {label!r} box")
        if option is None:
            others = [o for o in widget.options if o != widget.value] or widget.options
            option = self.rng.choice(others)
        if option not in widget.options:
            raise Failed("not applied", f"{label!r} does not offer {option!r}")
        await self.client.rerun(record, values={label: option})
        return str(widget.options.index(option))

    def pick(self, label: str) -> int:
        """The index of a random option of ``label`` other than the one shown (0 if none)."""
        widget = self.client.widgets.get(label)
        if widget is None or not widget.options:
            return 0
        others = [i for i, o in enumerate(widget.options) if o != widget.value]
        return self.rng.choice(others) if others else 0

    async def walk_once(self, round_: int) -> None:
        c, i, rng = self.client, self.index, self.rng
        await self.act("open start page", lambda r: c.open(r, ""), page="")
        await self.act("page: Explore", lambda r: c.rerun(r, page="explore"), page="explore")
        own = next(self.sentences)
        await self.act("text (own-translator)", lambda r: c.rerun(r, values={"Text": own}),
                       expect={"text": own})
        for label in ("Layer", "Head"):
            index = self.pick(label)
            option = (c.widgets[label].options[index] if label in c.widgets else "")
            await self.act(label.lower(), lambda r, lab=label, o=option: self.choose(r, lab, o),
                           expect={label.lower(): str(index)})
        order = list(PRETRAINED)
        rng.shuffle(order)
        for n, spec in enumerate(order):
            free = (f"{rng.choice(BASES)} {number_words(i + 1)} times, round "
                    f"{number_words(round_)}, link {number_words(n + 1)}")
            query = {"model": spec, "text": free}
            if n == 1:  # the second link also names a layer and a head
                query.update(layer=str(rng.randint(0, 3)), head=str(rng.randint(0, 3)))
            await self.act(f"link: {spec}", lambda r, q=query: c.open(r, "explore", q),
                           expect=query, page="explore")
            if n == 0:
                index = self.pick("Head")
                option = c.widgets["Head"].options[index] if "Head" in c.widgets else ""
                await self.act("head", lambda r, o=option: self.choose(r, "Head", o),
                               expect={"head": str(index)})
        other = rng.choice(OTHER_PAGES)
        await self.act(f"page: {other}", lambda r: c.rerun(r, page=other), page=other)
        await self.act("page: Explore", lambda r: c.rerun(r, page="explore"), page="explore")
        # a sentence own-translator knows, typed before switching to it
        own = next(self.sentences)
        await self.act(f"text ({order[1]})", lambda r: c.rerun(r, values={"Text": own}),
                       expect={"text": own})
        await self.act("model: own-translator",
                       lambda r: self.choose(r, "Model", DEFAULT_MODEL),
                       expect={"model": DEFAULT_MODEL})

    async def run(self) -> Session:
        started = time.monotonic()
        try:
            if self.args.ramp:
                await asyncio.sleep(self.args.ramp * self.index / max(1, self.args.sessions))
            for round_ in range(self.args.rounds):
                await self.walk_once(round_)
        except asyncio.CancelledError:
            self.session.aborted = f"cut short at --max-seconds {self.args.max_seconds:.0f}"
        except Exception as error:  # noqa: BLE001 - reported with the session
            self.session.aborted = f"{type(error).__name__}: {error}"[:300]
        finally:
            await self.client.close()
            self.session.seconds = time.monotonic() - started
        return self.session


async def run_sessions(url: str, args) -> list[Session]:
    """Walk ``args.sessions`` sessions at once; stop every walk at ``args.max_seconds``."""
    pool = own_sentences(args.seed)
    per_session = 2 * args.rounds
    walkers = [Walker(url, i, args, pool[i * per_session:(i + 1) * per_session] * 2)
               for i in range(args.sessions)]
    tasks = [asyncio.create_task(w.run()) for w in walkers]
    done_count = 0
    deadline = time.monotonic() + args.max_seconds
    pending = set(tasks)
    while pending and time.monotonic() < deadline:
        finished, pending = await asyncio.wait(pending, timeout=deadline - time.monotonic(),
                                               return_when=asyncio.FIRST_COMPLETED)
        for task in finished:
            session = task.result()
            done_count += 1
            failed = sum(a.failure is not None for a in session.actions)
            note = f", aborted: {session.aborted}" if session.aborted else ""
            print(f"[{done_count}/{args.sessions}] session {session.index} done in "
                  f"{session.seconds:.0f} s: {len(session.actions)} actions, {failed} failed"
                  f"{note}", file=sys.stderr, flush=True)
    for task in pending:  # past --max-seconds
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=30)
    return [w.session for w in walkers]


# --- figures ----------------------------------------------------------------------------------

def quantiles(values) -> dict:
    values = np.array([v for v in values if v is not None], dtype=float)
    if not len(values):
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {"n": int(len(values)), "p50": float(np.percentile(values, 50)),
            "p95": float(np.percentile(values, 95)), "max": float(values.max())}


def figures(sessions: list[Session], sampler: Sampler, wall: float) -> dict:
    actions = [a for s in sessions for a in s.actions]
    ok = [a for a in actions if a.failure is None]
    failures: dict[str, int] = {}
    for a in actions:
        if a.failure:
            failures[a.failure] = failures.get(a.failure, 0) + 1
    by_action = {}
    for name in sorted({a.name for a in actions}):
        these = [a for a in actions if a.name == name]
        by_action[name] = {
            "actions": len(these),
            "to_chart_s": quantiles(a.to_chart for a in these if a.failure is None),
            "to_finished_s": quantiles(a.to_finished for a in these if a.failure is None),
            "failures": sum(a.failure is not None for a in these)}
    gb = [rss / 1e9 for _, rss in sampler.rss]
    seconds = max(sampler.seconds, 1e-9)
    measured = sampler.server is not None
    cpu = sampler.user + sampler.system
    return {
        "sessions": len(sessions),
        "actions": len(actions),
        # the actions that succeeded (a failed one has no time to judge the server by)
        "time_to_chart_s": quantiles(a.to_chart for a in ok),
        "time_to_finished_s": quantiles(a.to_finished for a in ok),
        "time_to_start_s": quantiles(a.to_started for a in ok),
        "failures": sum(failures.values()),
        "failures_by_kind": failures,
        "aborted_sessions": {s.index: s.aborted for s in sessions if s.aborted},
        "server_rss_gb": ({"start": gb[0], "peak": max(gb), "end": gb[-1]} if gb else None),
        "server_cpu": ({"user_s": sampler.user, "system_s": sampler.system,
                        "percent_of_one_core": 100 * cpu / seconds,
                        "cores_mean": cpu / seconds, "cores_peak_5s": sampler.peak_cores()}
                       if measured else None),
        "client_cpu_s": sampler.client,
        "cpu_cores_available": psutil.cpu_count(),
        "load_average": list(os.getloadavg()),
        "received_mb": sum(a.received_bytes for a in actions) / 1e6,
        "wall_s": wall,
        "by_action": by_action,
        "by_session": [{"session": s.index, "actions": len(s.actions),
                        "charts": sum(a.charts for a in s.actions),
                        "actions_with_chart": sum(a.charts > 0 for a in s.actions),
                        "failures": sum(a.failure is not None for a in s.actions),
                        "seconds": s.seconds, "aborted": s.aborted} for s in sessions],
        "problems": [asdict(a) for a in actions if a.failure],
    }


def table(fig: dict, by_action: bool = False) -> str:
    def s(value, digits: int = 1) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    def q(d: dict) -> str:
        return f"{s(d['p50'])} / {s(d['p95'])} / {s(d['max'])} s"

    rss, cpu = fig["server_rss_gb"], fig["server_cpu"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(fig["failures_by_kind"].items()))
    rows = [
        ("sessions / actions", f"{fig['sessions']} / {fig['actions']}"),
        ("time to first chart p50 / p95 / max", q(fig["time_to_chart_s"])),
        ("time to finished p50 / p95 / max", q(fig["time_to_finished_s"])),
        ("time to run start p50 / p95 / max", q(fig["time_to_start_s"])),
        ("failures", f"{fig['failures']}" + (f" ({kinds})" if kinds else "")),
        ("server RSS start / peak / end",
         f"{s(rss['start'], 2)} / {s(rss['peak'], 2)} / {s(rss['end'], 2)} GB"
         if rss else "not measured (give --pid)"),
        ("server CPU user / system",
         f"{s(cpu['user_s'])} / {s(cpu['system_s'])} s: {s(cpu['percent_of_one_core'], 0)} % "
         f"of one core on average, {s(cpu['cores_peak_5s'], 2)} cores at the busiest 5 s "
         f"(of {fig['cpu_cores_available']})" if cpu else "not measured (give --pid)"),
        ("client CPU", f"{s(fig['client_cpu_s'])} s"),
        ("received", f"{fig['received_mb']:.1f} MB"),
        ("load average (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in fig["load_average"])),
        ("wall time", f"{fig['wall_s']:.0f} s"),
    ]
    if fig["aborted_sessions"]:
        rows.append(("aborted sessions", str(len(fig["aborted_sessions"]))))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if by_action:
        lines += ["", f"{'action':<24} {'n':>4} {'chart p50':>9} {'p95':>6} {'done p50':>9} "
                      f"{'p95':>6} {'fail':>5}"]
        for name, a in fig["by_action"].items():
            c, f = a["to_chart_s"], a["to_finished_s"]
            lines.append(f"{name:<24} {a['actions']:>4} {s(c['p50']):>9} {s(c['p95']):>6} "
                         f"{s(f['p50']):>9} {s(f['p95']):>6} {a['failures']:>5}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="concurrent sessions (30)")
    parser.add_argument("--rounds", type=int, default=1, help="times each session walks (1)")
    parser.add_argument("--steps", type=int, help="actions per session at most (the whole walk)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", help="a running app (default: start one on a free port)")
    parser.add_argument("--pid", type=int, help="with --url: the server's pid, for its CPU and "
                                                "memory (default: the local process listening "
                                                "on the URL's port)")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds one run may take to its script_finished (180)")
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="seconds the whole soak may take; walks still going are stopped "
                             "(1800)")
    parser.add_argument("--ramp", type=float, default=0.0,
                        help="seconds over which the sessions start (0: all at once)")
    parser.add_argument("--warmup", action="store_true",
                        help="walk once alone before the soak, untimed (models loaded, caches "
                             "filled: the steady state rather than a class's first minute)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--by-action", action="store_true",
                        help="also print the times per kind of action")
    args = parser.parse_args(argv)
    if args.sessions < 1 or args.rounds < 1 or args.timeout <= 0 or args.max_seconds <= 0:
        parser.error("--sessions, --rounds, --timeout and --max-seconds must be positive")

    _protos()  # import streamlit's messages before the clock starts
    with contextlib.ExitStack() as stack:
        url, pid = target_server(args, stack)
        if args.warmup:  # one walk alone first, untimed: models loaded, caches filled
            warm = asyncio.run(Walker(url, args.sessions, args,
                                      own_sentences(args.seed + 1)[:4]).run())
            failed = sum(a.failure is not None for a in warm.actions)
            print(f"warm-up walk done in {warm.seconds:.0f} s: {len(warm.actions)} actions, "
                  f"{failed} failed", file=sys.stderr, flush=True)
        sessions, sampler, wall = sampled(
            url, pid, f"{args.sessions} protocol sessions × {args.rounds} round(s)",
            lambda: asyncio.run(run_sessions(url, args)), Sampler(pid))
    fig = figures(sessions, sampler, wall)
    report(fig, args, lambda problem: problem["failure"], table(fig, args.by_action))
    return 0


if __name__ == "__main__":
    sys.exit(main())
