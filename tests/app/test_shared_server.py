"""One student cannot freeze, flood or starve a shared server, and nobody's work is lost: user
patterns match in linear time, Compare's figures are bounded, compute slots are handed out fairly
between a long run's batches, a run whose session has gone stops, and what was typed or run on
Compare and Corpus survives another page and a reload."""

from __future__ import annotations

import contextlib
import re
import threading
import time

import numpy as np
import pytest

from app_pages.cache.shared import Cancelled, SharedCache, Slots
from model.corpus.engine import corpus_table
from model.corpus.statistics import MAX_PATTERN, Span, matches
from tests.helpers import app_test, figures, messages, plotly_array, tiny_own_model, until
from viz.pooling import pool_weights

EVIL = "(a+)+$"  # backtracks exponentially under Python's re on a run of a's and a b
EVIL_TOKEN = "a" * 26 + "b"


# --- patterns -------------------------------------------------------------------------------

def test_an_exponential_pattern_returns_in_under_a_second_while_another_trace_runs():
    tiny = tiny_own_model()
    busy = threading.Event()
    done = threading.Event()

    def other_session():
        while not done.is_set():
            tiny.trace(" ".join(f"w{i}" for i in range(60)))
            busy.set()

    thread = threading.Thread(target=other_session, daemon=True)
    thread.start()
    try:
        assert busy.wait(60)
        start = time.perf_counter()
        queries, keys = Span(EVIL, "cat").compiled()
        found = matches(queries, [EVIL_TOKEN, "a" * 5000 + "b", "aaaa", "CAT"])
        table, skipped = corpus_table(tiny, [f"the {EVIL_TOKEN} sat on the cat"],
                                      span=Span(EVIL, "cat"))
        elapsed = time.perf_counter() - start
        assert thread.is_alive()  # the other session's traces ran all along
    finally:
        done.set()
        thread.join(60)
    assert elapsed < 1.0, f"{elapsed:.2f} s"
    assert found.tolist() == [False, False, True, False]  # RE2 means what re means
    assert not skipped and len(table["span"])
    # the same answers as Python's re on inputs where re is quick
    tokens = ["cat", "Cat", "cats", "mat", "it", "垫子"]
    for pattern in ("cat|mat", "c.t", "[a-z]+s", "垫子|it"):
        expected = [re.fullmatch(pattern, t, re.IGNORECASE) is not None for t in tokens]
        assert matches(Span(pattern, "x").compiled()[0], tokens).tolist() == expected


@pytest.mark.parametrize("pattern, message", [
    (r"(a)\1", "no back-references"), ("(?<=a)b", "no back-references or look-arounds"),
    ("(", "missing )"), ("x" * (MAX_PATTERN + 1), f"at most {MAX_PATTERN}"),
    ("x{1000}{1000}", "bad repetition")])
def test_a_pattern_the_server_cannot_match_safely_gets_one_message(pattern, message):
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        Span(pattern, "cat").compiled()
    assert "\n" not in str(error.value)


def test_the_corpus_page_runs_the_exponential_pattern_at_once():
    start = time.perf_counter()
    at = app_test("corpus", model_choice="own-random",
                  cp_pasted=f"the {EVIL_TOKEN} sat on the cat\nthe dog sat", cp_queries=EVIL,
                  cp_keys="cat")
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, messages(at.error)
    assert "2 of 2 sentences ran" in messages(at.success)
    assert time.perf_counter() - start < 120  # (AppTest and the model; the match is instant)


def test_html_in_a_pattern_stays_text_in_the_chart():
    pattern = 'cat|<a href="https://example.com">x</a>'
    at = app_test("corpus", model_choice="own-random", cp_pasted="the cat sat because it sat",
                  cp_queries="it", cp_keys=pattern)
    at.button(key="cp_run").click().run()
    at.selectbox(key="cp_metric").set_value("span").run()
    assert not at.exception
    title = figures(at)[0]["layout"]["title"]["text"]
    assert "<a " not in title and "&lt;a href" in title


# --- Compare's figures ----------------------------------------------------------------------

def test_compare_draws_long_sentences_in_blocks_and_every_figure_stays_small():
    words = [f"w{i % 250}" for i in range(300)]
    first, second = " ".join(words), " ".join(words[:-1] + ["other"])
    at = app_test("compare", model_choice="own-random", cmp_a=first, cmp_b=second)
    assert not at.exception and not at.error, messages(at.error)
    drawn = figures(at)
    assert len(drawn) == 3
    sizes = [len(chart.proto.spec) for chart in at.get("plotly_chart")]
    assert max(sizes) < 1_000_000, sizes  # unpooled, the difference alone sent 8 MB
    difference = drawn[2]
    assert "in blocks of 2×2" in difference["layout"]["title"]["text"]
    # the pooled difference is the difference of the pooled heads (an independent reference)
    from app_pages.cache.getters import get_trace

    traces = [get_trace("own-random", "cpu", text) for text in (first, second)]
    exact = [pool_weights(t.weights("encoder.self", 0, 0).astype(np.float64), 2, 2)
             for t in traces]
    shown = plotly_array(difference["data"][0]["z"]).reshape(exact[0].shape)
    np.testing.assert_allclose(shown, exact[1] - exact[0], atol=1e-6)


def test_a_chart_over_the_bound_is_refused_with_a_message(monkeypatch):
    import app_pages.frame.charts as common

    monkeypatch.setattr(common, "MAX_FIGURE_BYTES", 1_000)
    at = app_test("compare")
    assert not at.exception
    assert not at.get("plotly_chart")
    assert "this server sends at most" in messages(at.warning)


# --- fair slots, yielding and cancellation --------------------------------------------------

@pytest.fixture
def sessions(monkeypatch):
    """Threads ask for slots as the session this dict names for them (else none)."""
    import app_pages.cache.shared as cache

    names: dict[int, str] = {}
    monkeypatch.setattr(cache, "session_id", lambda: names.get(threading.get_ident()))
    return names


def test_a_session_gets_one_slot_and_waits_behind_others_for_a_second():
    slots = Slots(2)
    order, started, release = [], threading.Barrier(2), threading.Event()

    def use(name: str, owner: str, barrier=None):
        with slots.hold(owner):
            order.append(name)
            if barrier is not None:
                barrier.wait()
                release.wait(10)

    first = threading.Thread(target=use, args=("a1", "A", started))
    first.start()
    started.wait()  # A holds a slot until released
    threads = []
    for name, owner, arrived in (("a2", "A", lambda: slots.queued == 1),
                                 ("b", "B", lambda: "b" in order),
                                 ("c", "C", lambda: "c" in order)):
        threads.append(threading.Thread(target=use, args=(name, owner)))
        threads[-1].start()
        until(arrived, threads[-1])
    release.set()
    for thread in (first, *threads):
        thread.join(10)
    assert order == ["a1", "b", "c", "a2"]


def test_a_request_waiting_for_a_slot_is_told_how_many_are_ahead():
    slots = Slots(1)
    seen: list[int] = []
    held, release = threading.Event(), threading.Event()

    def holder(owner):
        with slots.hold(owner):
            held.set()
            release.wait(10)

    threading.Thread(target=holder, args=("A",), daemon=True).start()
    held.wait(5)
    second = threading.Thread(target=lambda: slots.hold("B").__enter__(), daemon=True)
    second.start()
    until(lambda: slots.queued == 1, second)  # B waits

    def waiting(ahead: int):
        seen.append(ahead)
        if len(seen) >= 3:
            release.set()

    with slots.hold("C", waiting=waiting):
        pass
    assert seen and max(seen) == 1  # B was ahead of C; C got the slot B gave back


def test_a_short_request_is_served_within_a_second_while_two_corpus_runs_go_on(sessions):
    cache = SharedCache(1 << 30, workers=2)
    tiny = tiny_own_model("decoder-only")
    sentences = [" ".join(f"w{(i + j) % 40}" for j in range(24)) for i in range(400)]
    progress = {"A": 0, "B": 0}
    running = {"A": threading.Event(), "B": threading.Event()}

    def corpus(owner: str):
        sessions[threading.get_ident()] = owner

        def each(done, total):
            progress[owner] = done
            running[owner].set()

        cache.get(("corpus", owner), lambda: corpus_table(
            tiny, sentences, batch_size=4, progress=each, batch=cache.slot), slot=False)

    runs = [threading.Thread(target=corpus, args=(owner,), daemon=True) for owner in "AB"]
    for run in runs:
        run.start()
    assert all(event.wait(60) for event in running.values())
    sessions[threading.get_ident()] = "C"
    start = time.perf_counter()
    trace = cache.get(("trace", "C"), lambda: tiny.trace("the cat sat on the mat"))
    waited = time.perf_counter() - start
    both_going = all(run.is_alive() for run in runs) and all(
        0 < progress[o] < len(sentences) for o in "AB")
    for run in runs:
        run.join(300)
    assert trace.names == ("decoder.self",)
    assert both_going, progress  # answered while both runs were still going
    assert waited < 1.0, f"{waited:.2f} s"


def test_a_run_whose_session_has_gone_stops_at_its_next_batch(sessions, monkeypatch):
    import app_pages.cache.shared as cache_module

    cache = SharedCache(1 << 30, workers=2)
    tiny = tiny_own_model("decoder-only")
    sentences = [f"w{i} w{i + 1} w{i + 2}" for i in range(40)]
    batches, alive = [], {"yes": True}
    monkeypatch.setattr(cache_module, "session_active", lambda session: alive["yes"])
    sessions[threading.get_ident()] = "gone-soon"

    def each(done, total):
        batches.append(done)
        if done >= 8:
            alive["yes"] = False  # the tab is closed

    with pytest.raises(Cancelled):
        cache.get("corpus", lambda: corpus_table(
            tiny, sentences, batch_size=4, progress=each,
            batch=lambda: cache.slot(stop_when_gone=True)), slot=False)
    assert batches == [4, 8]  # nothing ran after it went
    assert cache.slots.held == 0 and cache.slots.queued == 0
    # another session asking for the same result computes it itself
    alive["yes"] = True
    sessions[threading.get_ident()] = "another"
    table, skipped = cache.get("corpus", lambda: corpus_table(tiny, sentences, batch_size=4),
                               slot=False)
    assert len(np.unique(table["sentence"])) == 40 and not skipped


# --- nothing lost ---------------------------------------------------------------------------

def test_compare_keeps_what_was_typed_over_another_page():
    at = app_test("compare")
    at.text_input(key="cmp_a").set_value("the dog sat on the mat").run()
    at.radio(key="cmp_mode").set_value("models").run()
    at.text_input(key="cmp_text").set_value("the bird sat on the mat").run()
    at.switch_page("app_pages/views/explore.py").run()
    assert not at.exception
    at.switch_page("app_pages/views/compare.py").run()
    assert not at.exception
    assert at.radio(key="cmp_mode").value == "models"
    assert at.text_input(key="cmp_text").value == "the bird sat on the mat"
    at.radio(key="cmp_mode").set_value("sentences").run()
    assert at.text_input(key="cmp_a").value == "the dog sat on the mat"


def test_a_reload_reopens_compare_from_its_link():
    from tests.app.test_links import link_of, opened

    at = app_test("compare")
    at.text_input(key="cmp_a").set_value("the dog sat on the mat").run()
    link = link_of(at)
    assert link["a"] == "the dog sat on the mat" and link["mode"] == "sentences"
    again = opened("compare", **link)  # a fresh session: a reload or another browser
    assert not again.exception
    assert again.text_input(key="cmp_a").value == "the dog sat on the mat"
    assert again.text_input(key="cmp_b").value == link["b"]


def test_corpus_results_survive_another_page_and_a_reload():
    from tests.app.test_links import link_of, opened

    pasted = "the cat sat on the mat\nthe dog sat on the sofa"
    at = app_test("corpus", model_choice="own-random", cp_pasted=pasted)
    at.button(key="cp_run").click().run()
    assert "2 of 2 sentences ran" in messages(at.success)
    at.switch_page("app_pages/views/explore.py").run()
    at.switch_page("app_pages/views/corpus.py").run()
    assert not at.exception
    assert at.text_area(key="cp_pasted").value == pasted
    assert "2 of 2 sentences ran" in messages(at.success)  # no second click
    link = link_of(at)
    assert link["sentences"] == pasted
    again = opened("corpus", **link)  # found again in the shared cache: nothing runs
    assert not again.exception
    assert again.text_area(key="cp_pasted").value == pasted
    assert "2 of 2 sentences ran" in messages(again.success)


def test_uploaded_sentence_files_are_kept_over_another_page_until_forgotten():
    at = app_test("corpus", model_choice="own-random")
    at.file_uploader(key="cp_files").set_value(
        [("class.txt", b"the cat sat\nthe dog sat\n", "text/plain")]).run()
    assert at.button(key="cp_run").label == "Run 2 sentences"
    at.switch_page("app_pages/views/explore.py").run()
    at.switch_page("app_pages/views/corpus.py").run()
    assert not at.exception
    assert "Using the files uploaded before you left this page: class.txt" in \
        messages(at.caption)
    assert at.button(key="cp_run").label == "Run 2 sentences"
    at.button(key="cp_forget_files").click().run()
    assert "Upload a file or paste" in messages(at.info)


@pytest.mark.parametrize("page, key, what", [
    ("corpus", "cp_pasted", "the pasted text"), ("compare", "cmp_a", "sentence A")])
def test_a_text_over_the_limit_is_refused_with_a_message_and_kept(monkeypatch, page, key, what):
    from app_pages.cache.getters import limits

    monkeypatch.setenv("ATTENTION_EXPLORER_MAX_CHARS", "300")
    limits.clear()
    try:
        text = "the cat sat on the mat " * 20
        at = app_test(page, **{key: text})
        assert not at.exception
        assert f"{what} has {len(text)} characters; this server reads at most 300" in \
            messages(at.error)
        box = at.text_area(key=key) if page == "corpus" else at.text_input(key=key)
        assert box.value == text  # nothing cut
    finally:
        limits.clear()


def test_a_corpus_file_name_is_never_markdown_in_a_label():
    at = app_test("corpus", model_choice="own-random")
    name = "[click](https://example.com) **bold** ![x](y.png).csv"
    at.file_uploader(key="cp_files").set_value(
        [(name, b"sentence,other\nthe cat sat,1\n", "text/csv")]).run()
    assert not at.exception
    (box,) = [b for b in at.selectbox if b.key.startswith("cp_column_")]
    assert "](" not in box.label and "**" not in box.label


def test_an_empty_upload_says_the_file_is_empty():
    at = app_test("explore")
    at.file_uploader(key="upload").set_value([("empty.txt", b"", "text/plain")]).run()
    assert not at.exception
    assert "empty.txt holds no text" in messages(at.info).replace("&#46;", ".")


def test_server_batches_hold_at_most_their_tokens_and_the_table_is_the_same():
    from app_pages.cache.getters import SERVER_BATCH_TOKENS
    from model.budget import Lengths
    from model.corpus.engine import cut

    tiny = tiny_own_model("decoder-only")
    sizes = [Lengths(256)] * 10 + [Lengths(30)] * 40
    batches = list(cut(tiny, sizes, 32, 1 << 40, SERVER_BATCH_TOKENS))
    assert batches[:3] == [(0, 4), (4, 8), (8, 12)]  # 4 × 256 = 1,024 tokens
    assert all((stop - start) * max(s.source for s in sizes[start:stop]) <= SERVER_BATCH_TOKENS
               for start, stop in batches)
    sentences = [" ".join(f"w{(i * j) % 50}" for j in range(3 + i % 20)) for i in range(30)]
    whole, _skipped = corpus_table(tiny, sentences)
    small, _skipped = corpus_table(tiny, sentences, max_batch_tokens=40)
    assert whole.keys() == small.keys()
    for key in whole:
        if whole[key].dtype.kind == "f":
            np.testing.assert_allclose(small[key], whole[key], rtol=1e-5, atol=1e-6)
        else:
            assert (small[key] == whole[key]).all(), key


@pytest.mark.parametrize("stopped", ["cancelled", "stop", "rerun"])
def test_a_waiter_on_a_run_its_session_stopped_computes_the_result_itself(stopped):
    # the computing session's tab closed (Cancelled at its next batch), or Streamlit stopped or
    # reran its script from inside the computation: another session waiting for the same
    # result is not stopped with it
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException, StopException

    error = {"cancelled": Cancelled(), "stop": StopException(),
             "rerun": RerunException(None)}[stopped]
    cache = SharedCache(1 << 30, workers=2)
    started, finish = threading.Event(), threading.Event()

    def stopped_run():
        started.set()
        finish.wait(5)
        raise error

    def leave():
        with contextlib.suppress(type(error)):
            cache.get("k", stopped_run)

    leaver = threading.Thread(target=leave, daemon=True)
    leaver.start()
    started.wait(5)
    result = []
    waiter = threading.Thread(target=lambda: result.append(cache.get("k", lambda: 7)))
    waiter.start()
    until(lambda: cache._running["k"].waiters == 1, waiter)  # it waits for the run that will stop
    finish.set()
    waiter.join(5)
    leaver.join(5)
    assert result == [7]
