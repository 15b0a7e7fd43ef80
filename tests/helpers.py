"""Shared test helpers, in one module: the seed sentence, small own models, tiny Hugging Face
checkpoints built offline, figures read back from AppTest, and the served app in Chromium.

Heavy libraries (transformers, tokenizers, playwright) are imported inside the helpers that
need them, so that importing this module stays cheap.
"""

from __future__ import annotations

import base64
import contextlib
import html
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED_SENTENCE = "The cat sat on the mat"


# --- own models -------------------------------------------------------------------------------

def tiny_own_model(family: str = "encoder-decoder", positional: str = "sinusoidal",
                   seed: int = 0):
    """A small own Transformer (d_model 32, 4 heads, 2 layers per stack) on the CPU."""
    import torch

    from model.own.adapter import OwnModel
    from model.own.config import TransformerConfig
    from model.own.transformer import Transformer

    layers = {"encoder-decoder": (2, 2), "encoder-only": (2, 0), "decoder-only": (0, 2)}[family]
    cfg = TransformerConfig(src_vocab_size=64, d_model=32, n_heads=4, n_encoder_layers=layers[0],
                            n_decoder_layers=layers[1], d_ff=64, positional=positional)
    torch.manual_seed(seed)
    return OwnModel(f"tiny-{family}", Transformer(cfg), torch.device("cpu"))


# --- figures ----------------------------------------------------------------------------------

def plotly_array(value) -> np.ndarray:
    """Decode an array from a figure's JSON (plain lists or Plotly's typed-array dicts)."""
    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        if "shape" in value:
            shape = [int(s) for s in str(value["shape"]).split(",")]
            array = array.reshape(shape)
        return array
    return np.array(value, dtype=float)


def figures(at) -> list[dict]:
    """Every Plotly figure an AppTest run drew, as JSON dicts, in page order."""
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def shown(markdown: str) -> str:
    """The text a reader sees of a markdown message: character references and backslash escapes
    decoded (the app writes the punctuation of user text as references, see
    ``app_pages.frame.markdown.literal``)."""
    unescaped = html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown))
    return unescaped.replace("\u2060", "")  # the word joiners that keep URLs from linking


def messages(elements) -> str:
    """Every message of a kind (``at.error``, ``at.info``, ...) as a reader sees it, joined."""
    return " ".join(shown(element.value) for element in elements)


def app_test(page: str | None = None, timeout: float = 300, **state):
    """Run the app under AppTest on the CPU with ``state`` in ``st.session_state``, then (if
    given) switch to the page whose URL path is ``page`` ("explore", "lesson_hand")."""
    from streamlit.testing.v1 import AppTest

    from app_pages.frame.navigation import script

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.session_state["device"] = "cpu"
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page is not None:
        at.switch_page(script(page)).run()
    return at


# --- tiny Hugging Face checkpoints ------------------------------------------------------------

CORPUS = ["The cat sat on the mat.", "The cat chased the mouse because it was hungry.",
          "A dog slept under the table yesterday.", "猫 坐 在 垫子 上", "emoji 😀 and café"]
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def byte_level_tokenizer():
    """A byte-level BPE tokenizer (GPT-2 style) trained on a few sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def _configs(vocab: int) -> dict:
    from transformers import (
        BartConfig,
        BartForConditionalGeneration,
        BertConfig,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        T5Config,
        T5ForConditionalGeneration,
    )

    ids = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
    small = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=128, **ids)
    return {
        "bert": (BertModel, BertConfig(**small)),
        "gpt2": (GPT2LMHeadModel, GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4,
                                             n_positions=128, **ids)),
        "llama": (LlamaForCausalLM, LlamaConfig(**small, num_key_value_heads=2)),
        "mistral": (MistralForCausalLM, MistralConfig(**small, num_key_value_heads=2,
                                                      sliding_window=4)),
        "t5": (T5ForConditionalGeneration, T5Config(
            vocab_size=vocab, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
            num_heads=4, relative_attention_num_buckets=8, decoder_start_token_id=0, **ids)),
        "bart": (BartForConditionalGeneration, BartConfig(
            vocab_size=vocab, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
            decoder_ffn_dim=64, max_position_embeddings=128, decoder_start_token_id=2, **ids)),
    }


def build_tiny_checkpoints(root: Path) -> dict[str, Path]:
    """Save one tiny random checkpoint per family member under ``root``; return their paths."""
    import torch

    tokenizer = byte_level_tokenizer()
    paths = {}
    for name, (model_class, config) in _configs(len(tokenizer)).items():
        torch.manual_seed(0)
        model = model_class(config).eval()
        path = root / name
        model.save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[name] = path
    return paths


# --- waiting for a state, never for a fixed time ----------------------------------------------

def until(condition, thread, seconds: float = 60.0) -> None:
    """Wait until ``condition()`` holds while ``thread`` works towards it: between looks the
    wait is for ``thread`` to end, so that a thread that ends without reaching the state fails
    the test at once instead of at the deadline."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert thread.is_alive() or condition(), "the thread ended before the state was reached"
        assert time.monotonic() < deadline, "timed out"
        thread.join(0.01)


# --- the served app in Chromium ---------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
# Each page counts its app's script runs on the app's own websocket (``watch_runs``): a run
# requested (a BackMsg with ``rerun_script``, field 11, sent) and a run finished (a ForwardMsg
# with ``script_finished``, field 6, received, other than FINISHED_EARLY_FOR_RERUN = 2: a run
# stopped for the next one). One sequence numbers both, so "finished after the last request"
# is exact, however busy the machine.
RUNS_JS = """
(() => {
  if (window.__runs) return;
  const runs = window.__runs = {seq: 0, requested: 0, finished: 0};
  const bytes = data => data instanceof ArrayBuffer ? new Uint8Array(data)
    : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : null;
  // a protobuf message's top-level field, as [number, value of a varint field or null]
  const field = (b, wanted) => {
    let i = 0;
    const varint = () => {
      let value = 0, scale = 1, byte;
      do { byte = b[i++]; value += (byte & 0x7f) * scale; scale *= 128; } while (byte & 0x80);
      return value;
    };
    while (i < b.length) {
      const key = varint(), number = Math.floor(key / 8), wire = key % 8;
      let value = null;
      if (wire === 0) value = varint();
      else if (wire === 1) i += 8;
      else if (wire === 2) { const length = varint(); i += length; }  // (not i += varint())
      else if (wire === 5) i += 4;
      else return null;
      if (number === wanted) return [number, value];
    }
    return null;
  };
  const Native = window.WebSocket, send = Native.prototype.send;
  Native.prototype.send = function (data) {
    const b = bytes(data);
    if (b && field(b, 11)) runs.requested = ++runs.seq;
    return send.call(this, data);
  };
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', event => {
        const b = bytes(event.data), finished = b && field(b, 6);
        if (finished && finished[1] !== 2) runs.finished = ++runs.seq;
      });
    }
  };
})();
"""
# The page is idle after the run it asked for last (and one asked for after ``since``): that run
# finished, the app shows it (connected, not running, no spinner, no stale element, no element
# whose code is still loading: a chart is a placeholder until Plotly's code has come), and has
# shown it for two frames in a row (the app draws what a message says a moment after it comes).
IDLE_JS = """
([since, token]) => {
  const runs = window.__runs, app = document.querySelector('[data-testid="stApp"]');
  const idle = !!runs && !!app && runs.finished > runs.requested && runs.requested > since
    && app.dataset.testConnectionState === 'CONNECTED'
    && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSpinner"]')
    && !document.querySelector('[data-testid="stElementContainer"][data-stale="true"], '
                               + '[data-testid="stElementContainer"] [data-testid="stSkeleton"]');
  const seen = window.__idle;
  if (!idle) { window.__idle = null; return false; }
  if (seen && seen.token === token && seen.seq === runs.seq) return true;
  window.__idle = {token, seq: runs.seq};
  return false;
}
"""
# Ready for a screenshot: the web fonts loaded, every chart of the page drawn by Plotly.
DRAWN_JS = """
() => document.fonts.status === 'loaded'
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(chart => {
       const plot = chart.querySelector('.js-plotly-plot');
       return plot && plot._fullLayout && Array.isArray(plot.data)
              && plot.querySelector('.main-svg') && !plot._transitioning;
     })
"""
# Bring an element into view at once (no smooth scrolling) and resolve when it has kept its
# place on the screen for a frame.
STEADY_JS = """
element => new Promise(done => {
  element.scrollIntoView({block: 'center', behavior: 'instant'});
  let last = null;
  const look = () => {
    const r = element.getBoundingClientRect(), now = [r.x, r.y, r.width, r.height].join();
    if (now === last) done(); else { last = now; requestAnimationFrame(look); }
  };
  requestAnimationFrame(look);
})
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_app(timeout: float = 120.0) -> Iterator[str]:
    """Start ``streamlit run app.py`` on a free local port; yield its URL; stop it by pid."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app_pages.serve", "run", str(ROOT / "app.py"),
         "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless",
         "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the app did not start") from None
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=0.5)  # between looks: the server may have stopped
                    raise RuntimeError("the app stopped before it served") from None
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def watch_runs(page):
    """Count the app's script runs on ``page`` from its next load on (see ``RUNS_JS``); return
    the page. ``chromium_page`` does it; a page made otherwise needs it before its ``goto``."""
    page.add_init_script(RUNS_JS)
    return page


@contextlib.contextmanager
def chromium_page(width: int = 1280, height: int = 800, color_scheme: str = "light"):
    """A Playwright page in headless Debian Chromium (``color_scheme``: the system's light or
    dark preference, which Streamlit's default theme follows), counting the app's runs."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height},
                                    color_scheme=color_scheme)
            yield watch_runs(page)
        finally:
            browser.close()


def run_mark(page) -> int:
    """Where the page's count of runs stands: ``wait_for_run(page, since=mark)`` after an
    interaction waits for a run that the interaction asked for."""
    return page.evaluate("() => window.__runs ? window.__runs.seq : 0")


_WAITS = itertools.count()  # each wait's own token: two frames in a row of the same wait


def wait_for_run(page, since: int = -1, timeout: float = 240_000) -> None:
    """Until the run the page asked for last is over and shown (with ``since``, a run asked for
    after that ``run_mark``). A page that was just opened waits for its first run."""
    page.wait_for_function(IDLE_JS, arg=[since, next(_WAITS)], polling="raf", timeout=timeout)


def settled(page, timeout: float = 240_000) -> None:
    """Ready for a screenshot: the run over, the fonts loaded, every chart drawn."""
    wait_for_run(page, timeout=timeout)
    page.wait_for_function(DRAWN_JS, polling="raf", timeout=timeout)


def bring_into_view(locator) -> None:
    """Scroll ``locator`` into the middle of the screen at once and wait until it stays put."""
    locator.wait_for(timeout=120_000)
    locator.evaluate(STEADY_JS)


def click_for_run(page, click, tries: int = 3) -> None:
    """Call ``click()`` (a click that asks the app for a run, on a chart or a link) until the
    page has asked for a run, then wait for that run. A click that lands while the page is
    redrawn may not take; it is tried again, and a click that never asks fails."""
    for _attempt in range(tries):
        mark = run_mark(page)
        click()
        try:
            page.wait_for_function("mark => window.__runs.requested > mark", arg=mark,
                                   timeout=30_000)
        except Exception:  # the click did not take
            continue
        wait_for_run(page, since=mark)
        return
    raise AssertionError(f"the click asked for no run after {tries} tries")


def choose_model(page, spec: str) -> None:
    """Choose ``spec`` in the sidebar's Model box."""
    choose(page, "Model", spec)


SHOWS_JS = """([label, option]) => [...document.querySelectorAll('[role="combobox"]')]
    .some(b => b.getAttribute('aria-label') === label
          && (b.value === option
              || b.closest('[data-baseweb="select"]')?.innerText.trim() === option))"""


def choose(page, label: str, option: str) -> None:
    """Choose ``option`` in the select box labelled ``label`` once the page is idle; return when
    the box shows it and the app was asked to run with it. A click that lands while the page is
    redrawn can leave the menu open and the value as it was, so the choice is tried again until
    the box shows the option. An option outside the menu's visible window is typed to filter
    the list to it. (A box that shows it already is left alone: choosing it again
    would ask for no run.)"""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.wait_for(timeout=120_000)  # a loaded machine may still be drawing the page
    wait_for_run(page)
    if page.evaluate(SHOWS_JS, [label, option]):
        return
    found = page.get_by_role("option", name=option, exact=True)
    for _attempt in range(4):
        # a box low in a long sidebar is scrolled to first: a click while it scrolls only
        # focuses it, and the menu stays closed
        bring_into_view(box)
        mark = run_mark(page)
        box.click()
        try:
            try:
                found.wait_for(timeout=5_000)
            except Exception:
                # the menu draws only the options in its visible window (a virtual list): one
                # further down is not in the page until the typed text filters the list to it
                page.keyboard.type(option)
                found.wait_for(timeout=30_000)
            found.click()
        except Exception:  # the menu did not open, or it closed under the pointer
            page.keyboard.press("Escape")
            continue
        try:
            page.wait_for_function(
                f"([label, option, mark]) => ({SHOWS_JS})([label, option])"
                " && window.__runs.requested > mark",
                arg=[label, option, mark], timeout=30_000)
            return
        except Exception:  # the click did not take: close the menu, and try again
            page.keyboard.press("Escape")
            wait_for_run(page)
    raise AssertionError(f"{label!r} does not show {option!r} after four tries")


def selected(page, label: str) -> str:
    """What the select box labelled ``label`` shows."""
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def nllb_style_checkpoint(root: Path) -> Path:
    """A tiny random NLLB-style translation checkpoint under ``root``: an M2M100 model (NLLB's
    architecture) with an NLLB tokenizer whose vocabulary is the corpus's characters and its
    200 language codes (``eng_Latn``, ``zho_Hans``, ...), source language English and no target
    language set, as a user's NLLB checkpoint comes."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    path = root / "nllb-style"
    if (path / "config.json").exists():
        return path
    characters = sorted({c for text in CORPUS for c in text if not c.isspace()})
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "▁": 4}
    for c in characters:
        vocab.setdefault(c, len(vocab))
    tokenizer = NllbTokenizer(vocab=vocab, merges=[], src_lang="eng_Latn")
    config = M2M100Config(
        vocab_size=len(tokenizer), d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=128, pad_token_id=1, bos_token_id=0,
        eos_token_id=2, decoder_start_token_id=2)
    torch.manual_seed(0)
    M2M100ForConditionalGeneration(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
