"""Shared test helpers, in one module: the seed sentence, small own models, tiny Hugging Face
checkpoints built offline, figures read back from AppTest, and the served app in Chromium.

Heavy libraries (transformers, tokenizers, playwright) are imported inside the helpers that
need them, so that importing this module stays cheap.
"""

from __future__ import annotations

import base64
import contextlib
import html
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
    ``app_pages.frame.common.literal``)."""
    unescaped = html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown))
    return unescaped.replace("\u2060", "")  # the word joiners that keep URLs from linking


def messages(elements) -> str:
    """Every message of a kind (``at.error``, ``at.info``, ...) as a reader sees it, joined."""
    return " ".join(shown(element.value) for element in elements)


def page_script(url_path: str) -> str:
    """The script of the page a URL's path names ("lesson_hand" → app_pages/lessons/hand.py;
    "start" or "" the default page)."""
    from app_pages.frame.navigation import PAGES

    return next(spec.path for spec in PAGES
                if spec.url_path == url_path or (spec.default and url_path in ("", "start")))


def app_test(page: str | None = None, timeout: float = 300, **state):
    """Run the app under AppTest on the CPU with ``state`` in ``st.session_state``, then (if
    given) switch to the page whose URL path is ``page`` ("explore", "lesson_hand")."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    at.session_state["device"] = "cpu"
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page is not None:
        at.switch_page(page_script(page)).run()
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


# --- the served app in Chromium ---------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_app(timeout: float = 90.0) -> Iterator[str]:
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
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("the app did not start") from None
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def chromium_page(width: int = 1280, height: int = 800, color_scheme: str = "light"):
    """A Playwright page in headless Debian Chromium (``color_scheme``: the system's light or
    dark preference, which Streamlit's default theme follows)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height},
                                    color_scheme=color_scheme)
            yield page
        finally:
            browser.close()


def choose_model(page, spec: str) -> None:
    """Choose ``spec`` in the sidebar's Model box."""
    choose(page, "Model", spec)


def choose(page, label: str, option: str) -> None:
    """Choose ``option`` in the select box labelled ``label``, and check that the box shows it:
    a click that lands while the page is redrawn can leave the menu open and the value as it
    was, so the choice is tried again until the box shows the option."""
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.wait_for(timeout=120_000)  # a loaded machine may still be drawing the page
    found = page.get_by_role("option", name=option, exact=True)
    for _attempt in range(4):
        # a box low in a long sidebar is scrolled to first: a click while it scrolls only
        # focuses it, and the menu stays closed
        box.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        box.click()
        try:
            found.wait_for(timeout=5_000)
            found.click()
        except Exception:  # the menu did not open, or it closed under the pointer
            page.keyboard.press("Escape")
            continue
        page.wait_for_timeout(500)
        try:
            page.wait_for_function(
                """([label, option]) => [...document.querySelectorAll('[role="combobox"]')]
                    .some(b => b.getAttribute('aria-label') === label
                          && (b.value === option
                              || b.closest('[data-baseweb="select"]')?.innerText.trim()
                                 === option))""",
                arg=[label, option], timeout=5_000)
            return
        except Exception:  # the click did not take: close the menu, and try again
            page.keyboard.press("Escape")
    raise AssertionError(f"{label!r} does not show {option!r} after four tries")


def selected(page, label: str) -> str:
    """What the select box labelled ``label`` shows."""
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def wait_for_run(page) -> None:
    """Until the page's run is over: no running status and no spinner (a model loading), twice
    in a row (a new page's run may start a moment after the click)."""
    idle = ("!document.querySelector('[data-testid=\"stStatusWidget\"]')"
            " && !document.querySelector('[data-testid=\"stSpinner\"]')")
    for _ in range(2):
        page.wait_for_timeout(700)
        page.wait_for_function(idle, timeout=240_000)
    page.wait_for_timeout(1000)
