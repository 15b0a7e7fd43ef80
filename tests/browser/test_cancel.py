"""In Chromium against a served app: a corpus run whose tab is closed stops at its next batch,
and the server goes idle instead of running every sentence for nobody. (Two things end it:
Streamlit asks a closed tab's script to stop, which takes effect at the run's next progress
update, and each batch's slot is refused to a session with no browser.)"""

from __future__ import annotations

import time
import urllib.parse

import psutil
import pytest

from bench.soak import listening_pid
from tests.helpers import chromium_page, served_app, wait_for_run

pytestmark = pytest.mark.slow

# own-random (the lesson's full size) on 1,000 sentences of 120 words: 100 sentences of 60
# words take about 6 s here, so the whole run would take minutes
SENTENCES = "\n".join(" ".join(f"w{(i + j) % 10}" for j in range(120)) for i in range(1000))


def _busy_seconds(process: psutil.Process, seconds: float) -> float:
    """CPU seconds the server used over a window of ``seconds`` of wall time (psutil measures
    it over the window)."""
    return process.cpu_percent(interval=seconds) / 100 * seconds


def test_a_corpus_run_stops_when_its_tab_is_closed(monkeypatch):
    monkeypatch.setenv("ATTENTION_EXPLORER_MAX_CHARS", str(len(SENTENCES) + 1))  # the server's
    with served_app() as url:
        server = psutil.Process(listening_pid(url))
        with chromium_page(1280, 900) as page:
            query = urllib.parse.urlencode({"model": "own-random", "sentences": SENTENCES})
            page.goto(f"{url}/corpus?{query}")
            wait_for_run(page)
            page.get_by_role("button", name="Run 1,000 sentences").click()
            page.get_by_text("Running the sentences…").first.wait_for(timeout=240_000)
            used, deadline = 0.0, time.monotonic() + 120
            while used < 0.5:  # the run is going (a busy machine gives it less of a core)
                assert time.monotonic() < deadline, "the corpus run did not start"
                used += _busy_seconds(server, 1.0)
            page.close()  # the tab is closed mid-run
        # a batch takes well under a second here, a few seconds on a busy machine
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if _busy_seconds(server, 2.0) < 0.3:  # idle: the run stopped
                break
        else:
            pytest.fail("the server kept running the corpus after its tab was closed")
