"""Long inputs at real sizes: the limits a server derives from where it listens, the masks a long
trace keeps (none for a causal or full one), and every page at 8,192 tokens of smollm2 and at
32,768 tokens of a random Llama whose position table allows it, under ``make run``'s defaults."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from app_pages.cache.limits import (
    LOCAL_ANALYSIS_TOKENS,
    LOCAL_MARGIN_MIN,
    Limits,
    token_budget,
)
from model.budget import Lengths
from model.hf.capture import _Band, _Mask
from model.policy import GB

PAGES = ("explore", "stats", "model_view", "rollout")


def test_on_loopback_a_request_may_take_the_free_memory_less_a_margin_and_the_cache(monkeypatch):
    for name in ("REQUEST_GB", "ANALYSIS_TOKENS", "MAX_CHARS", "TRACE_CACHE_GB",
                 "CONCURRENT_RUNS"):
        monkeypatch.delenv(f"ATTENTION_EXPLORER_{name}", raising=False)
    classroom = Limits.from_env("0.0.0.0", available=20 * GB)
    assert classroom == Limits()  # reachable from other machines: the classroom's defaults
    assert Limits.from_env(None, available=20 * GB) == Limits()  # Streamlit's default address
    local = Limits.from_env("127.0.0.1", available=20 * GB)
    # 20 GB free: a fifth (4 GB) left to the machine, the rest shared by two runs at once and
    # a trace cache that holds what one of them makes
    assert local.request_bytes == local.trace_cache_bytes == (20 * GB - 4 * GB) // 3
    assert local.analysis_tokens == LOCAL_ANALYSIS_TOKENS and local.max_chars >= 150_000
    assert Limits.from_env("localhost", available=20 * GB) == local
    small = Limits.from_env("::1", available=3 * GB)  # a small machine: never below a classroom's
    assert small.request_bytes == Limits().request_bytes and LOCAL_MARGIN_MIN == 2 * GB
    assert small.trace_cache_bytes == Limits().trace_cache_bytes
    monkeypatch.setenv("ATTENTION_EXPLORER_REQUEST_GB", "0.5")  # the operator's word wins
    assert Limits.from_env("127.0.0.1", available=20 * GB).request_bytes == GB // 2


def _mask_of(allowed: np.ndarray) -> _Mask:
    return _Mask(allowed)


@pytest.mark.parametrize("n_q, n_k, offset", [(50, 50, 0), (7, 50, 43), (50, 50, None),
                                              (1, 30, 29), (40, 30, -10)])
def test_a_mask_kept_as_a_band_reads_as_the_same_mask_kept_as_arrays(n_q, n_k, offset):
    band = _Band(n_q, n_k, offset)
    allowed = np.ones((n_q, n_k), bool) if offset is None else np.tri(n_q, n_k, offset, bool)
    arrays = _mask_of(allowed)
    np.testing.assert_array_equal(band.allowed, allowed)
    assert band.everything == arrays.everything
    rng = np.random.default_rng(0)
    for _ in range(40):
        start = int(rng.integers(0, n_q))
        stop = int(rng.integers(start + 1, n_q + 1))
        assert band.extent(start, stop) == arrays.extent(start, stop)
        assert band.first_forbidden(start, stop) == arrays.first_forbidden(start, stop)
        assert band.dead(start, stop) == arrays.dead(start, stop)
        k0 = int(rng.integers(0, n_k))
        ke = int(rng.integers(k0 + 1, n_k + 1))
        cpu = torch.device("cpu")
        assert torch.equal(band.forbidden(start, stop, k0, ke, cpu),
                           arrays.forbidden(start, stop, k0, ke, cpu))


def test_a_causal_trace_keeps_no_token_by_token_mask_and_equals_eager(tiny_checkpoints):
    from model import load

    llama = load(str(tiny_checkpoints["llama"]), device="cpu")
    text = "The cat sat on the mat because it was tired, and the dog slept."
    trace = llama.trace(text)
    store = trace.attention["decoder.self"]
    assert all(isinstance(mask, _Band) for mask in store._masks.values())
    n = len(trace.tokens)
    np.testing.assert_array_equal(trace.mask("decoder.self", 0), np.tri(n, n, dtype=bool))
    from transformers import AutoModelForCausalLM

    eager = AutoModelForCausalLM.from_pretrained(tiny_checkpoints["llama"],
                                                 attn_implementation="eager").eval()
    with torch.no_grad():
        out = eager(torch.tensor([list(trace.ids)]), output_attentions=True)
    for layer, reference in enumerate(out.attentions):
        for head in range(reference.shape[1]):
            np.testing.assert_allclose(trace.weights("decoder.self", layer, head),
                                       reference[0, head].numpy(), atol=1e-6)


@contextlib.contextmanager
def served_on_loopback():
    """The app's limits as ``make run`` makes them: the server listens on 127.0.0.1."""
    from streamlit import config

    from app_pages.cache.getters import limits

    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    limits.clear()
    try:
        yield limits()
    finally:
        config.set_option("server.address", before)
        limits.clear()


def _text_of(loaded, n_tokens: int) -> str:
    from bench.request_memory import text_of

    text = text_of(loaded, n_tokens)
    while loaded.count_tokens(text).source > n_tokens:  # at most n_tokens, the special included
        text = text.rsplit(" ", 1)[0]
    return text


def _opens_every_analysis_page(spec: str, text: str, n_tokens: int, **state) -> None:
    from tests.helpers import app_test, figures, messages

    at = app_test("explore", timeout=1200, model_choice=spec, text=text, **state)
    for page in PAGES:
        if page != "explore":
            at.switch_page(f"app_pages/views/{page}.py").run()
        assert not at.exception, (page, at.exception)
        assert not at.error, (page, messages(at.error))
        assert figures(at), page  # it drew its charts
    stated = messages(at.sidebar.caption)
    # the limit in tokens for the loaded model, in its precision; the analyses no further
    assert f"reads texts of up to {n_tokens:,} tokens" in stated, stated
    assert "cpu · float32" in stated and f"rollout up to {n_tokens:,} tokens" in stated, stated


@pytest.mark.slow
def test_smollm2_at_8192_tokens_opens_every_analysis_page_under_make_runs_defaults(monkeypatch):
    from app_pages.cache.getters import get_model

    for name in ("REQUEST_GB", "ANALYSIS_TOKENS", "MAX_CHARS"):
        monkeypatch.delenv(f"ATTENTION_EXPLORER_{name}", raising=False)
    with served_on_loopback() as bounds:
        smollm2 = get_model("smollm2", "cpu")
        assert token_budget(smollm2, bounds.request_bytes) >= 8192, bounds
        assert smollm2.memory_needed(Lengths(8192)) <= bounds.request_bytes
        text = _text_of(smollm2, 8192)
        assert smollm2.count_tokens(text).source > 8150
        _opens_every_analysis_page("smollm2", text, 8192)


@pytest.mark.slow
def test_32k_tokens_of_a_llama_open_every_analysis_page_under_make_runs_defaults(
        tmp_path_factory, monkeypatch):
    from app_pages.cache.getters import get_model
    from bench.local_models import random_llama

    for name in ("REQUEST_GB", "ANALYSIS_TOKENS", "MAX_CHARS"):
        monkeypatch.delenv(f"ATTENTION_EXPLORER_{name}", raising=False)
    path = str(random_llama(tmp_path_factory.mktemp("llama-32k"), positions=32768, layers=2,
                            heads=4, kv_heads=2, d_model=64))
    with served_on_loopback() as bounds:
        loaded = get_model(path, "cpu")
        assert token_budget(loaded, bounds.request_bytes) >= 32768
        text = _text_of(loaded, 32768)
        assert loaded.count_tokens(text).source > 32700
        _opens_every_analysis_page("other…", text, 32768, model_other=path)


def test_the_sidebars_precision_loads_the_model_in_it_and_a_link_carries_it():
    from tests.app.test_links import link_of, opened
    from tests.helpers import messages

    at = opened("explore", model="own-random", text="The cat sat on the mat", dtype="bfloat16")
    assert not at.exception and not at.error, messages(at.error)
    assert at.sidebar.selectbox(key="dtype").value == "bfloat16"
    assert link_of(at)["dtype"] == "bfloat16"
    from app_pages.cache.getters import get_model

    assert get_model("own-random", "cpu", "bfloat16").dtype == "bfloat16"
    at.sidebar.selectbox(key="dtype").set_value("auto").run()  # auto is float32 on the CPU
    assert not at.exception and "dtype" not in link_of(at)
    bad = opened("explore", model="own-random", dtype="float8")
    assert not bad.exception and "precision “float8”" in messages(bad.warning)
    assert bad.sidebar.selectbox(key="dtype").value == "auto"


def test_an_unknown_precision_left_in_the_session_reads_as_auto():
    from tests.helpers import app_test

    at = app_test("explore", model_choice="own-random", dtype="int4")
    assert not at.exception and not at.error
    assert at.sidebar.selectbox(key="dtype").value == "auto"
