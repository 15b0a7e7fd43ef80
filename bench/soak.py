"""Soak test: many browser sessions at once against one served app.

    .venv/bin/python -m bench.soak [--sessions 25] [--rounds 1] [--seed 0] [--timeout 180]
                                   [--url http://127.0.0.1:8501 [--pid PID]] [--json FILE]
                                   [--by-action] [--screenshots DIR]

Without ``--url`` the app is started on a free local port (``tests.helpers.served_app``) and its
memory is sampled; with ``--url`` a running app is used, and its memory only with ``--pid``.

One headless Chromium holds one browser context (a fresh user, 1280×900) per session; all
sessions start at once and walk the app (seeded, with small random variations): the start page;
Explore; a sentence of the session's own in the sidebar's Text box (Ctrl+Enter); a layer and a
head; minilm and smollm2 in a random order, each with text of the session's own; two other
pages (head view, model view, mask, rollout, statistics); back to own-translator (which only
knows a small English vocabulary, so it gets sentences like "the dog saw the cat") and Explore.
``--rounds`` repeats the walk.

Each action is timed from the action to the chart drawn: the page's last Plotly redraw, once
the run is over (no running indicator, no spinner) and a chart is visible. Failures: timeouts,
choices the page did not take, exceptions shown on the page (``stException``), page crashes and
other browser errors; error boxes (``st.error``) are counted separately as "errors shown". The
server's resident memory (the process and its children) is sampled every 0.5 s.

Started here, the server does not watch its files (others' edits would prompt reruns); to keep
its log, start it yourself and pass ``--url`` and ``--pid``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from urllib.parse import urlparse

import numpy as np
import psutil

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, SEED_SENTENCE, served_app

VIEWPORT = {"width": 1280, "height": 900}
PRETRAINED = ("minilm", "smollm2")  # bundled models that read any text
OTHER_PAGES = ("Head view", "Model view", "Causal mask", "Rollout", "Head statistics")

# own-translator's vocabulary (model/own/training_pairs.py), a part of it: sentences it can read.
ANIMALS = ("cat", "dog", "mouse", "bird", "rabbit", "duck", "horse", "tiger", "monkey", "bear",
           "pig", "frog", "fox", "sheep", "cow")
PLACES = ("mat", "sofa", "carpet", "table", "chair", "bed", "box", "tree", "floor", "roof")
INTRANSITIVE = ("sat", "slept", "lay", "stood", "waited", "played")
PREPOSITIONS = ("on", "under", "in", "near", "behind")
TRANSITIVE = ("chased", "saw", "ate", "found", "liked", "bit", "watched")
TIMES = ("", " yesterday", " today")
# Free text for the pretrained models: a base sentence and the session's number in words.
BASES = (SEED_SENTENCE, "A small dog slept under the kitchen table",
         "The old bear waited near the river bank", "My neighbour's parrot repeats every word")
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen")
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")

# In every page: the time (performance.now()) of the last change inside a Plotly chart (hover
# labels left out), and of the last error box or exception added; an action is timed to these.
OBSERVER = """
window.__soakPlot = 0;
window.__soakAlert = 0;
const ALERT = '[data-testid="stAlertContentError"], [data-testid="stException"]';
new MutationObserver((mutations) => {
  for (const m of mutations) {
    const el = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    if (el && el.closest('.js-plotly-plot') && !el.closest('.hoverlayer')) {
      window.__soakPlot = performance.now();
    }
    if (el && el.closest(ALERT)) {  // an error box rewritten in place
      window.__soakAlert = performance.now();
    }
    for (const n of m.addedNodes) {
      if (n.nodeType === 1 && (n.matches(ALERT) || n.querySelector(ALERT))) {
        window.__soakAlert = performance.now();
      }
    }
  }
}).observe(document, {childList: true, subtree: true, characterData: true});
"""
# The run is over: no running icon (the status widget also shows "File change." prompts, which
# are not runs), no spinner, and connected.
IDLE = ("!document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
        " && !document.querySelector('[data-testid=\"stSpinner\"]')"
        " && !document.querySelector('[data-testid=\"stConnectionStatus\"]')")
SHOWN = ("[...document.querySelectorAll('.js-plotly-plot')].some("
         "e => e.getBoundingClientRect().height > 0)"
         " || !!document.querySelector('[data-testid=\"stException\"]')"
         " || !!document.querySelector('[data-testid=\"stAlertContentError\"]')")
EXCEPTION = "[data-testid='stException']"
VISIBLE_TEXTS = ("(selector) => [...document.querySelectorAll(selector)]"
                 ".filter(e => e.checkVisibility()).map(e => e.innerText.slice(0, 400))")
ERROR_BOX = "[data-testid='stAlertContentError']"


def number_words(n: int) -> str:
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else f" {ONES[n % 10]}")
    return f"{number_words(n // 100)} hundred" + ("" if n % 100 == 0 else
                                                  f" {number_words(n % 100)}")


def own_sentences(seed: int) -> list[str]:
    """Every sentence of the grammar above, shuffled by ``seed`` (sessions take disjoint runs)."""
    pool = [f"the {a} {v} {p} the {place}{t}" for a in ANIMALS for v in INTRANSITIVE
            for p in PREPOSITIONS for place in PLACES for t in TIMES]
    pool += [f"the {a} {v} the {b}{t}" for a in ANIMALS for v in TRANSITIVE for b in ANIMALS
             if a != b for t in TIMES]
    random.Random(seed).shuffle(pool)
    return pool


@dataclass
class Action:
    session: int
    name: str
    seconds: float | None  # to the chart drawn; None for a failed action
    failure: str | None = None  # timeout, not applied, exception, crash, browser
    error_shown: bool = False  # an error box this action brought up
    error_still_shown: bool = False  # an earlier action's error box, still on the page
    detail: str = ""


@dataclass
class Session:
    index: int
    actions: list[Action] = field(default_factory=list)
    seconds: float = 0.0
    aborted: str = ""


class NotApplied(Exception):
    """An action that could not be done or left the page as it was (a choice not taken)."""


# --- server memory --------------------------------------------------------------------------

def listening_pid(url: str) -> int | None:
    """The pid of the process listening on ``url``'s port: among this process's descendants
    (the server ``served_app`` started, whatever its launcher), else any on this machine that
    psutil may see; None when none is found."""
    port = urlparse(url).port
    if port is None:
        return None

    def listens(process: psutil.Process) -> bool:
        with contextlib.suppress(psutil.Error):
            return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                       for c in process.net_connections(kind="tcp"))
        return False

    for child in psutil.Process().children(recursive=True):
        if listens(child):
            return child.pid
    with contextlib.suppress(psutil.Error, OSError):
        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return c.pid
    return None


def _tree(process: psutil.Process, leave_out: int | None = None) -> list[psutil.Process]:
    """``process`` and its descendants, without ``leave_out``'s subtree."""
    tree = [process, *process.children(recursive=True)]
    if leave_out is not None:
        skip = {leave_out}
        with contextlib.suppress(psutil.Error):
            skip |= {c.pid for c in psutil.Process(leave_out).children(recursive=True)}
        tree = [p for p in tree if p.pid not in skip]
    return tree


class Sampler(threading.Thread):
    """Every ``interval`` seconds: the resident memory of the server (its process and children)
    and the CPU time the server and the browser side (this process's other descendants:
    Playwright's driver, Chromium) have used."""

    def __init__(self, server: int | None, interval: float = 0.5):
        super().__init__(daemon=True)
        self.server = psutil.Process(server) if server else None
        self.interval = interval
        self.rss: list[tuple[float, int]] = []  # (seconds, bytes) of the server
        self.cpu = {"server": 0.0, "browser": 0.0}  # CPU seconds
        self._last: dict[int, float] = {}
        self._t0 = time.monotonic()
        self.stopped = threading.Event()

    def _cpu(self, side: str, tree: list[psutil.Process]) -> None:
        for process in tree:  # per process, so that one that ends keeps what it used
            with contextlib.suppress(psutil.Error):
                times = process.cpu_times()
                total = times.user + times.system
                self.cpu[side] += max(0.0, total - self._last.get(process.pid, 0.0))
                self._last[process.pid] = total

    def sample(self) -> None:
        now = time.monotonic() - self._t0
        if self.server is not None and self.server.is_running():
            tree = _tree(self.server)
            total = 0
            for process in tree:
                with contextlib.suppress(psutil.Error):
                    total += process.memory_info().rss
            self.rss.append((now, total))
            self._cpu("server", tree)
        me = psutil.Process()
        self._cpu("browser", [p for p in _tree(me, self.server and self.server.pid)
                              if p.pid != me.pid])

    def run(self) -> None:
        while not self.stopped.is_set():
            with contextlib.suppress(psutil.Error):
                self.sample()
            self.stopped.wait(self.interval)

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        self.seconds = time.monotonic() - self._t0


# --- one session ----------------------------------------------------------------------------

class Walker:
    """One browser context walking the app; records each action's time and outcome."""

    def __init__(self, browser, url: str, index: int, args, sentences: list[str]):
        self.browser, self.url, self.index, self.args = browser, url, index, args
        self.rng = random.Random(f"{args.seed}-{index}")
        self.sentences = iter(sentences)
        self.session = Session(index)
        self.crashed = False
        self.expect: tuple[str, str] | None = None

    # page helpers: async counterparts of tests.helpers.choose and wait_for_run (those drive a
    # sync Playwright page), with the waits that pad wait_for_run cut short so as to time runs

    async def settle(self, page, t0: float) -> float:
        """Seconds from ``t0`` (page clock) to the chart drawn, once the run is over.

        Every action of the walk redraws a chart, so the wait is for a redraw (or a new error
        box or exception) after ``t0``, with no run going on and a chart or error on the page:
        an overloaded server may start the action's run seconds late, and the old chart must
        not count."""
        deadline = time.monotonic() + self.args.timeout
        changed = f"(window.__soakPlot > {t0} || window.__soakAlert > {t0})"
        for _ in range(2):  # twice: a rerun may start a moment after the first one ends
            left = max(1.0, (deadline - time.monotonic()) * 1000)
            await page.wait_for_function(f"{changed} && ({IDLE}) && ({SHOWN})", timeout=left,
                                         polling=100)
            await page.wait_for_timeout(400)
        drawn = await page.evaluate("Math.max(window.__soakPlot, window.__soakAlert)")
        return (drawn - t0) / 1000

    async def act(self, page, name: str, action, load: bool = False) -> None:
        """Run ``action`` (a coroutine function), then wait for and time its chart; ``load``: the
        action loads a new document (timed from its navigation start, its clock's zero)."""
        if self.crashed:
            return
        await page.mouse.move(2, VIEWPORT["height"] - 2)  # away from the charts' hover
        record = Action(self.index, name, None)
        self.expect = None  # (label, option) a choice should leave in its select box
        try:
            before = set(await page.evaluate(VISIBLE_TEXTS, ERROR_BOX))
            t0 = 0.0 if load else await page.evaluate("performance.now()")
            await action()
            record.seconds = await self.settle(page, t0)
            if self.expect is not None:
                label, option = self.expect
                shown = await page.get_by_role("combobox", name=label, exact=True).first \
                    .input_value()
                if shown != option:
                    raise NotApplied(f"{label} shows {shown!r}, not the {option!r} chosen")
            await page.mouse.move(2, VIEWPORT["height"] - 2)
            exceptions = await page.evaluate(VISIBLE_TEXTS, EXCEPTION)
            if exceptions:
                record.failure, record.detail = "exception", exceptions[0]
            errors = await page.evaluate(VISIBLE_TEXTS, ERROR_BOX)
            new = [e for e in errors if e not in before]
            if new:
                record.error_shown = True
                record.detail = record.detail or new[0]
            elif errors:  # an earlier action's error box, still on the page after this one
                record.error_still_shown = True
                record.detail = record.detail or errors[0]
        except Exception as error:  # noqa: BLE001 - every failure is counted, then walked on
            if self.crashed:
                record.failure, record.detail = "crash", "the page crashed"
            elif isinstance(error, NotApplied):
                record.failure, record.detail = "not applied", str(error)
            elif type(error).__name__ == "TimeoutError":
                record.failure = "timeout"
                record.detail = str(error).splitlines()[0][:300]
            else:
                record.failure = "browser"
                record.detail = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        if record.failure:
            record.seconds = None
        self.session.actions.append(record)
        noted = record.failure or record.error_shown or record.error_still_shown
        if self.args.screenshots and noted and not self.crashed:
            n = len(self.session.actions)
            path = f"{self.args.screenshots}/session{self.index:02d}-{n:02d}.png"
            with contextlib.suppress(Exception):
                await page.screenshot(path=path)
                record.detail += f" [{path}]"
        await page.wait_for_timeout(self.rng.randint(200, 1200))  # a user's pause

    async def choose(self, page, label: str, option: str | None = None) -> None:
        """Choose ``option`` (else a random other one) in the select box labelled ``label``."""
        box = page.get_by_role("combobox", name=label, exact=True).first
        if not await box.count():  # the last run is over: the page has no such box
            raise NotApplied(f"the page has no {label} box")
        current = await box.input_value()
        await box.click()
        options = page.get_by_role("option")
        await options.first.wait_for()
        if option is None:  # among those the (virtualised) list shows
            names = [n.strip() for n in await options.all_inner_texts()]
            names = [n for n in names if n and n != current] or names
            option = self.rng.choice(names)
        # typing filters the list down to a few options: a long list scrolls under the click
        await page.keyboard.type(option)
        await page.get_by_role("option", name=option, exact=True).click()
        self.expect = (label, option)

    async def type_text(self, page, text: str) -> None:
        box = page.get_by_role("textbox", name="Text", exact=True)
        await box.fill(text)
        await box.press("Control+Enter")

    async def navigate(self, page, title: str) -> None:
        await page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).click()

    async def walk_once(self, page, round_: int) -> None:
        i, rng = self.index, self.rng
        if round_ == 0:
            await self.act(page, "open start page", lambda: page.goto(self.url), load=True)
        else:
            await self.act(page, "page: Start here", lambda: self.navigate(page, "Start here"))
        await self.act(page, "page: Explore", lambda: self.navigate(page, "Explore"))
        await self.act(page, "text (own-translator)",
                       lambda: self.type_text(page, next(self.sentences)))
        await self.act(page, "layer", lambda: self.choose(page, "Layer"))
        await self.act(page, "head", lambda: self.choose(page, "Head"))
        order = list(PRETRAINED)
        rng.shuffle(order)
        free = f"{rng.choice(BASES)} {number_words(i + 1)} times, round {number_words(round_)}"
        await self.act(page, f"model: {order[0]}", lambda: self.choose(page, "Model", order[0]))
        await self.act(page, f"text ({order[0]})", lambda: self.type_text(page, free))
        await self.act(page, "head", lambda: self.choose(page, "Head"))
        for title in rng.sample(OTHER_PAGES, 2):
            await self.act(page, f"page: {title}", lambda t=title: self.navigate(page, t))
            if title in ("Head view", "Causal mask"):
                await self.act(page, "layer", lambda: self.choose(page, "Layer"))
        await self.act(page, f"model: {order[1]}", lambda: self.choose(page, "Model", order[1]))
        # a sentence own-translator knows, typed before switching to it
        await self.act(page, f"text ({order[1]})",
                       lambda: self.type_text(page, next(self.sentences)))
        await self.act(page, "model: own-translator",
                       lambda: self.choose(page, "Model", "own-translator"))
        await self.act(page, "page: Explore", lambda: self.navigate(page, "Explore"))
        await self.act(page, "layer", lambda: self.choose(page, "Layer"))

    async def run(self) -> Session:
        started = time.monotonic()
        context = None
        try:
            context = await self.browser.new_context(viewport=VIEWPORT)
            await context.add_init_script(OBSERVER)
            page = await context.new_page()

            def crashed(_page) -> None:
                self.crashed = True

            page.on("crash", crashed)
            page.set_default_timeout(self.args.timeout * 1000)
            for round_ in range(self.args.rounds):
                await self.walk_once(page, round_)
            if self.crashed:
                self.session.aborted = "page crashed"
        except Exception as error:  # noqa: BLE001 - reported with the session
            self.session.aborted = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        finally:
            if context is not None:
                with contextlib.suppress(Exception):
                    await context.close()
        self.session.seconds = time.monotonic() - started
        return self.session


async def run_sessions(url: str, args) -> list[Session]:
    from playwright.async_api import async_playwright

    pool = own_sentences(args.seed)
    per_session = 2 * args.rounds
    done = 0
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                          headless=True)
        try:
            walkers = [Walker(browser, url, i, args,
                              pool[i * per_session:(i + 1) * per_session] * 2)
                       for i in range(args.sessions)]
            sessions = []
            for finished in asyncio.as_completed([w.run() for w in walkers]):
                session = await finished
                sessions.append(session)
                done += 1
                failed = sum(a.failure is not None for a in session.actions)
                note = f", aborted: {session.aborted}" if session.aborted else ""
                print(f"[{done}/{args.sessions}] session {session.index} done in "
                      f"{session.seconds:.0f} s: {len(session.actions)} actions, "
                      f"{failed} failed{note}", file=sys.stderr, flush=True)
        finally:
            await browser.close()
    return sorted(sessions, key=lambda s: s.index)


# --- figures --------------------------------------------------------------------------------

def figures(sessions: list[Session], sampler: Sampler, wall: float) -> dict:
    actions = [a for s in sessions for a in s.actions]
    times = np.array([a.seconds for a in actions if a.seconds is not None])

    def quantiles(values: np.ndarray) -> dict:
        if not len(values):
            return {"p50": None, "p95": None, "max": None}
        return {"p50": float(np.percentile(values, 50)), "p95": float(np.percentile(values, 95)),
                "max": float(values.max())}

    failures: dict[str, int] = {}
    for a in actions:
        if a.failure:
            failures[a.failure] = failures.get(a.failure, 0) + 1
    gb = [rss / 1e9 for _, rss in sampler.rss]
    by_action = {}
    for name in sorted({a.name for a in actions}):
        these = [a for a in actions if a.name == name]
        by_action[name] = {
            "actions": len(these),
            **quantiles(np.array([a.seconds for a in these if a.seconds is not None])),
            "failures": sum(a.failure is not None for a in these),
            "errors_shown": sum(a.error_shown for a in these)}
    problems = [asdict(a) for a in actions if a.failure or a.error_shown or a.error_still_shown]
    seconds = max(sampler.seconds, 1e-9)
    return {
        "sessions": len(sessions),
        "actions": len(actions),
        "time_to_chart_s": quantiles(times),
        "failures": sum(failures.values()),
        "failures_by_kind": failures,
        "errors_shown": sum(a.error_shown for a in actions),
        "errors_still_shown": sum(a.error_still_shown for a in actions),
        "aborted_sessions": {s.index: s.aborted for s in sessions if s.aborted},
        "server_rss_gb": ({"start": gb[0], "peak": max(gb), "end": gb[-1]} if gb else None),
        "cpu_cores_mean": {side: used / seconds for side, used in sampler.cpu.items()},
        "cpu_cores_available": psutil.cpu_count(),
        "wall_s": wall,
        "by_action": by_action,
        "problems": problems,
    }


def table(fig: dict, by_action: bool = False) -> str:
    def s(value, digits: int = 1) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    t, rss, cpu = fig["time_to_chart_s"], fig["server_rss_gb"] or {}, fig["cpu_cores_mean"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(fig["failures_by_kind"].items()))
    still = fig["errors_still_shown"]
    rows = [
        ("sessions", str(fig["sessions"])),
        ("actions", str(fig["actions"])),
        ("time to chart p50 / p95 / max", f"{s(t['p50'])} / {s(t['p95'])} / {s(t['max'])} s"),
        ("failures", f"{fig['failures']}" + (f" ({kinds})" if kinds else "")),
        ("errors shown", f"{fig['errors_shown']}" + (
            f" (+ {still} actions after which an earlier one was still on the page)"
            if still else "")),
        ("server RSS start / peak / end",
         f"{s(rss.get('start'), 2)} / {s(rss.get('peak'), 2)} / {s(rss.get('end'), 2)} GB"
         if rss else "not measured (give --pid)"),
        ("CPU used, server / browser", f"{s(cpu['server'] if rss else None)} / "
         f"{s(cpu['browser'])} cores on average (of {fig['cpu_cores_available']})"),
        ("wall time", f"{fig['wall_s']:.0f} s"),
    ]
    if fig["aborted_sessions"]:
        rows.append(("aborted sessions", str(len(fig["aborted_sessions"]))))
    width = max(len(k) for k, _ in rows)
    lines = [f"{k:<{width}}  {v}" for k, v in rows]
    if by_action:
        lines += ["", f"{'action':<26} {'n':>4} {'p50':>6} {'p95':>6} {'max':>6} {'fail':>5} "
                      f"{'err':>4}"]
        for name, a in fig["by_action"].items():
            lines.append(f"{name:<26} {a['actions']:>4} {s(a['p50']):>6} {s(a['p95']):>6} "
                         f"{s(a['max']):>6} {a['failures']:>5} {a['errors_shown']:>4}")
    return "\n".join(lines)


def target_server(args, stack: contextlib.ExitStack) -> tuple[str, int | None]:
    """The app a soak drives and its server's pid: ``--url`` (its pid: ``--pid``, else the
    process listening on it when it is on this machine), or one started here on a free port
    (its file watcher off, so that others' edits do not rerun its sessions)."""
    if args.url:
        url = args.url.rstrip("/")
        local = urlparse(url).hostname in ("127.0.0.1", "localhost", "::1")
        return url, args.pid or (listening_pid(url) if local else None)
    os.environ.setdefault("STREAMLIT_SERVER_FILE_WATCHER_TYPE", "none")  # (passed to Streamlit)
    url = stack.enter_context(served_app())
    return url, listening_pid(url)


def sampled(url: str, pid: int | None, what: str, run: Callable[[], list], sampler=None
            ) -> tuple[list, Sampler, float]:
    """``run()`` (the sessions) while ``sampler`` (default :class:`Sampler` of ``pid``)
    samples the server: ``(sessions, sampler, wall seconds)``."""
    sampler = sampler or Sampler(pid)
    sampler.start()
    print(f"{what} against {url}" + (f" (server pid {pid})" if pid else ""), file=sys.stderr,
          flush=True)
    started = time.monotonic()
    try:
        sessions = run()
    finally:
        sampler.stop()
    return sessions, sampler, time.monotonic() - started


def report(fig: dict, args, kind: Callable[[dict], str], table_text: str) -> None:
    """Print a soak's table and its first problems (``kind``: what each went wrong with), and
    write the figures to ``--json`` when asked."""
    print(table_text)
    for problem in fig["problems"][:10]:
        print(f"  session {problem['session']}, {problem['name']}: {kind(problem)}: "
              f"{problem['detail'][:200]!r}")
    if len(fig["problems"]) > 10:
        print(f"  … and {len(fig['problems']) - 10} more (see --json)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": vars(args), **fig}, f, indent=2, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=25, help="concurrent sessions (25)")
    parser.add_argument("--rounds", type=int, default=1, help="times each session walks (1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--url", help="a running app (default: start one on a free port)")
    parser.add_argument("--pid", type=int, help="with --url: the server's pid, for its memory")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds an action may take to its chart (180)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--by-action", action="store_true",
                        help="also print the times per kind of action")
    parser.add_argument("--screenshots", metavar="DIR",
                        help="save a screenshot after each action that failed or left an "
                             "error box")
    args = parser.parse_args(argv)

    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
    with contextlib.ExitStack() as stack:
        url, pid = target_server(args, stack)
        sessions, sampler, wall = sampled(
            url, pid, f"{args.sessions} sessions × {args.rounds} round(s)",
            lambda: asyncio.run(run_sessions(url, args)))
    fig = figures(sessions, sampler, wall)
    report(fig, args, lambda problem: problem["failure"] or (
        "error shown" if problem["error_shown"] else "earlier error still shown"),
        table(fig, args.by_action))
    return 0


if __name__ == "__main__":
    sys.exit(main())
