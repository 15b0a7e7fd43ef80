"""Lesson §4.9, the minimal implementation: the listing is the lesson's code (in Chinese, word
for word its comments too), and run, it gives §4.3's numbers on the worked example and, with
an own layer's weights, that module's own output and weights and the trace's weights; the
shapes it shows follow the sentence typed."""

from __future__ import annotations

import math
import re
import sys
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import i18n
from app_pages.frame.navigation import PAGES
from model import load
from model.lessons import hand
from model.lessons import implementation as im
from tests.helpers import ROOT, SEED_SENTENCE, app_test, tiny_own_model
from viz.lessons import implementation as text_fig

# The lesson text: beside the checkout (shared/) or inside it.
SEED_CANDIDATES = (ROOT / "seed" / "000_514d64c05bd4d35c.txt",
                   ROOT / "shared" / "seed" / "000_514d64c05bd4d35c.txt",
                   ROOT.parent / "shared" / "seed" / "000_514d64c05bd4d35c.txt")


def _seed_text() -> str | None:
    for path in SEED_CANDIDATES:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _normal(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


@pytest.fixture(scope="module")
def seed_trace(translator):
    return translator.trace(SEED_SENTENCE)


# --- the listing ------------------------------------------------------------------------------

def test_in_chinese_the_listing_is_the_lessons_code_line_for_line():
    """The seed prints its code without indentation: compared line by line, spaces aside."""
    seed = _seed_text()
    if seed is None:
        pytest.skip("the seed text is not in this checkout")
    start = seed.index("import math\nimport torch")
    end = seed.index("return self.W_O(out), w", start) + len("return self.W_O(out), w")
    printed = [_normal(line) for line in seed[start:end].splitlines() if line.strip()]
    with i18n.use("zh"):
        shown = [_normal(im.translated_line(line.code)) for line in im.listing()
                 if line.code.strip()]
    assert shown == printed


def test_every_comment_and_docstring_line_is_translated_and_the_code_left_as_it_is():
    lines = im.listing()
    with i18n.use("en"):
        assert [im.translated_line(line.code) for line in lines] == [line.code for line in lines]
    texts = [line.code.split("#", 1)[1].strip() for line in lines if "#" in line.code]
    texts += [line.code.strip() for line in lines if line.code.strip() in im.CODE_COMMENTS]
    assert set(texts) == set(im.CODE_COMMENTS)
    with i18n.use("zh"):
        for line in lines:
            chinese = im.translated_line(line.code)
            assert chinese.split("#")[0].rstrip() == line.code.split("#")[0].rstrip() or \
                line.code.strip() in im.CODE_COMMENTS
            assert len(chinese) - len(chinese.lstrip()) == len(line.code) - len(line.code.lstrip())


def test_the_listing_is_this_modules_live_source():
    source = (ROOT / "model/lessons/implementation.py").read_text(encoding="utf-8")
    for line in im.listing():
        assert line.code in source.splitlines()  # every line, indentation included
    assert [line.number for line in im.listing()] == list(range(1, len(im.listing()) + 1))
    assert im.listing()[im.line_of("d_k = Q.size(-1)") - 1].function == "attention"


def test_each_line_of_the_lessons_table_links_to_its_lesson():
    """The seed's table: matmul(Q, Kᵀ) → 4.3, / sqrt(d_k) → 4.4, masked_fill → 3.4 masks,
    softmax → 4.3, matmul(weights, V) → 4.3, view / transpose → 4.6."""
    paths = {page.url_path for page in PAGES}
    expected = {"torch.matmul(Q, K.transpose(-2, -1))": {"lesson_hand", "lesson_scaling"},
                "masked_fill": {"lesson_masks"}, "F.softmax": {"lesson_hand"},
                "torch.matmul(weights, V)": {"lesson_hand"},
                ".view(B, -1, self.h, self.d_k).transpose(1, 2)": {"lesson_multihead"},
                "out.transpose(1, 2).contiguous()": {"lesson_multihead"}}
    for fragment, lessons in expected.items():
        line = im.listing()[im.line_of(fragment) - 1]
        assert {url for url, _what in line.sections} == lessons, fragment
    for block in im.blocks():
        assert {url for url, _what in block.sections} <= paths
    numbers = [n for block in im.blocks() for n in block.numbers]
    assert numbers == [line.number for line in im.listing() if line.code.strip()]


# --- ① §4.3's example ---------------------------------------------------------------------------

def test_on_the_worked_example_the_listing_gives_the_lessons_numbers():
    run = im.hand_run()
    torch_output, torch_weights = hand.run_attention(hand.seed_inputs())
    np.testing.assert_allclose(run.output, torch_output, atol=1e-12)
    np.testing.assert_allclose(run.weights, torch_weights, atol=1e-12)
    # the seed's own numbers: 0.71 / 0.00 / 0.50 / 0.71, 30% / 15% / 25% / 30%, [0.85, 1.25]
    np.testing.assert_allclose(run.weights, [0.30, 0.15, 0.25, 0.30], atol=0.006)
    np.testing.assert_allclose(run.output, [0.85, 1.25], atol=0.01)  # the seed rounds each step
    np.testing.assert_allclose(run.lesson.output, [0.85, 1.25])
    np.testing.assert_allclose(run.lesson.weights, [0.30, 0.15, 0.25, 0.30])
    scaled = run.seen[im.line_of("/ math.sqrt(d_k)")].values["scores"].ravel()
    np.testing.assert_allclose(scaled, np.array([1.0, 0.0, 0.7, 1.0]) / math.sqrt(2))
    np.testing.assert_allclose(np.round(scaled, 2), [0.71, 0.00, 0.49, 0.71])
    assert run.seen[im.line_of("d_k = Q.size(-1)")].values == {"d_k": 2}
    assert im.line_of("masked_fill") not in run.seen  # no mask: the line never ran
    assert im.masked_entries(run.seen) is None
    numbers = im.lesson_numbers(run)
    np.testing.assert_allclose(numbers[im.line_of("F.softmax")], [0.30, 0.15, 0.25, 0.30])


# --- ② an own layer ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["encoder.self", "decoder.self", "decoder.cross"])
@pytest.mark.parametrize("layer", [0, 2])
def test_the_listing_with_a_layers_weights_is_that_layer(translator, seed_trace, name, layer):
    run = im.layer_run(translator, seed_trace, name, layer)
    assert torch.allclose(torch.tensor(run.output), torch.tensor(run.module_output), atol=1e-6)
    assert torch.allclose(torch.tensor(run.weights), torch.tensor(run.module_weights), atol=1e-6)
    assert torch.allclose(torch.tensor(run.weights), torch.tensor(run.trace_weights), atol=1e-6)
    assert run.output_difference <= 1e-6 and run.trace_difference <= 1e-6
    # an independent reference: torch's softmax of the traced Q, K, with the mask applied
    line = run.seen[im.line_of("out, w = attention(Q, K, V, mask)")]
    Q = torch.tensor(run.seen[im.line_of("Q = self.W_Q")].values["Q"])
    K = torch.tensor(run.seen[im.line_of("K = self.W_K")].values["K"])
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    scores = scores.masked_fill(~torch.tensor(run.allowed), float("-inf"))
    # (in float64 here, float32 in the model: scores near 60 keep about 6 digits)
    np.testing.assert_allclose(F.softmax(scores, dim=-1).numpy(), line.values["w"], atol=1e-5)
    masked = im.masked_entries(run.seen)
    assert masked == (~run.allowed).sum() * run.n_heads


def test_the_shapes_read_as_the_lesson_writes_them(translator, seed_trace):
    run = im.layer_run(translator, seed_trace, "encoder.self", 1)
    n = len(seed_trace.source_tokens)
    shapes = {key: shape for entry in run.seen.values() for key, shape in entry.shapes.items()}
    assert shapes["query"] == (1, n, 128)
    assert shapes["Q"] == shapes["K"] == shapes["V"] == (1, 4, n, 32)
    assert shapes["scores"] == shapes["weights"] == shapes["w"] == (1, 4, n, n)
    assert run.seen[im.line_of("out = out.transpose")].shapes["out"] == (1, n, 128)
    assert run.seen[im.line_of("return self.W_O(out), w")].shapes["return[0]"] == (1, n, 128)
    assert run.seen[im.line_of("self.d_k = d_model // h")].values == {"self.d_k": 32}
    assert run.seen[im.line_of("self.W_Q = ")].shapes == {"self.W_Q.weight": (128, 128)}
    cross = im.layer_run(translator, seed_trace, "decoder.cross", 0)
    n_target = len(seed_trace.target_tokens)
    assert cross.seen[im.line_of("F.softmax")].shapes["weights"] == (1, 4, n_target, n)


def test_the_weights_copied_are_the_modules(translator):
    module = translator.network.encoder.layers[1].self_attn
    copy = im.copied_module(module)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        assert torch.equal(getattr(copy, name).weight, getattr(module, name).weight)
        assert torch.equal(getattr(copy, name).bias, getattr(module, name).bias)
    assert copy.d_k == module.d_head and copy.h == module.n_heads


def test_a_rotary_model_is_refused_with_a_reason():
    model = tiny_own_model("encoder-only", positional="rope")
    trace = model.trace("the cat sat")
    with pytest.raises(ValueError, match="RoPE"):
        im.layer_run(model, trace, "encoder.self", 0)


def test_the_tracer_puts_back_the_one_before_and_traces_only_its_thread():
    calls = []

    def other(frame, event, arg):
        calls.append(event)
        return None

    before = sys.gettrace()
    sys.settrace(other)
    try:
        im.hand_run()
        assert sys.gettrace() is other
    finally:
        sys.settrace(before)
    # runs in several threads at once: each records its own lines
    results = {}

    def worker(key):
        results[key] = im.hand_run().seen

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(set(s) == set(results[0]) for s in results.values())


def test_first_runs_in_several_threads_at_once_read_the_source_once(monkeypatch):
    # Python 3.11's AST constructor shares one recursion counter between threads: inspect,
    # parsing this module for a class in four sessions' first runs at once, failed with "AST
    # constructor recursion depth mismatch" (14 of 600 threaded runs, before the source was
    # kept). Each function's source is now read and parsed once, under a lock, however many
    # threads ask.
    import ast
    import inspect
    import types

    from model.lessons import source

    monkeypatch.setattr(source, "_LINES", {})
    monkeypatch.setattr(source, "_PARSED", {})
    reads, parses = [], []  # (what, whether the lock was held while it was read)
    real_read, real_parse = inspect.getsourcelines, ast.parse

    def read(item):
        reads.append((item, source._LOCK.locked()))
        return real_read(item)

    def parse(text):
        parses.append((text, source._LOCK.locked()))
        return real_parse(text)

    # the source module's own inspect and ast, not the modules every caller shares
    monkeypatch.setattr(source, "inspect", types.SimpleNamespace(getsourcelines=read))
    monkeypatch.setattr(source, "ast", types.SimpleNamespace(parse=parse))
    errors, runs = [], {}

    def worker(key):
        try:
            runs[key] = [(set(im.hand_run().seen), set(im.hand.attention_lines()))
                         for _ in range(3)]
        except Exception as error:  # noqa: BLE001 - the failure is what is counted
            errors.append(repr(error))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(runs) == 4 and all(seen == runs[0] for seen in runs.values())
    items = [item for item, _locked in reads]
    assert len(items) == len(set(items))  # no source read twice
    assert im.MultiHeadAttention in items and im.attention in items
    assert len(parses) == 1  # the own attention() of lesson 4.3, parsed once
    # every read and parse happened under the lock: never two at once, in whichever order the
    # threads ran
    assert all(locked for _what, locked in reads + parses)


# --- how values are written -------------------------------------------------------------------

def test_shapes_numbers_and_small_tensors_are_written_as_the_lesson_does():
    assert text_fig.shape_text((1, 4, 6, 32)) == "(1, 4, 6, 32)"
    assert text_fig.shape_text((6,)) == "(6,)"
    assert text_fig.values_text([0.7071, -np.inf, 0.0], 2, more=True) == "[0.71, −∞, 0.00, …]"
    assert text_fig.values_text(np.array([True, False])) == "[True, False]"
    assert text_fig.matrix_text(np.array([[[[1.0, 0.0], [0.7, 0.7]]]]), 1) == \
        "[[1.0, 0.0], [0.7, 0.7]]"
    values = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    np.testing.assert_array_equal(im.peek(values, head=1, row=9), [35, 36, 37, 38])
    assert im.peeked((1, 1, 1, 6), head=2, row=2) == (None, None)
    assert im.peeked((1, 4, 6, 32), head=2, row=9) == (2, 5)


# --- the page ---------------------------------------------------------------------------------

def _markdown(at) -> str:
    return "\n".join(element.value for element in at.main.markdown)


def test_the_page_shows_shapes_that_follow_the_sentence(translator):
    at = app_test("lesson_implementation")
    assert not at.exception, at.exception
    n = len(translator.trace(SEED_SENTENCE).source_tokens)
    text = _markdown(at)
    assert f"`Q` ({1}, 4, {n}, 32)" in text and f"`query` (1, {n}, 128)" in text
    assert "`[0.30, 0.15, 0.25, 0.30]`" in text and "[0.85, 1.25]" in text  # the lesson's
    assert "[0.8507, 1.2408]" in text  # what the listing returns on it
    longer = "The cat sat on the mat because it was tired"
    at.text_input(key="impl_text").set_value(longer).run()
    assert not at.exception, at.exception
    m = len(translator.trace(longer).source_tokens)
    assert m != n
    text = _markdown(at)
    assert f"`Q` (1, 4, {m}, 32)" in text and f"`scores` (1, 4, {m}, {m})" in text
    assert f"`Q` (1, 4, {n}, 32)" not in text
    assert len(at.main.code) == len(im.blocks())
    links = [element.proto.page for element in at.get("page_link")]
    assert {"lesson_hand", "lesson_scaling", "lesson_masks", "lesson_qkv",
            "lesson_multihead"} <= set(links)


def test_the_page_in_chinese_shows_the_lessons_comments():
    with i18n.use("zh"):
        at = app_test("lesson_implementation", lang="zh")
    assert not at.exception, at.exception
    code = "\n".join(element.value for element in at.main.code)
    assert "# ① 打分：每个 q 与所有 k 点乘 → (B, h, L_q, L_k)" in code
    assert "# 拼接后混合" in code and "Q: (B, h, L_q, d_k) 查询" in code
    assert "scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)" in code


@pytest.mark.slow
def test_own_random_reads_as_the_lesson_writes_it():
    at = app_test("lesson_implementation", impl_model="own-random", impl_kind="decoder.self",
                  impl_layer=5, impl_head=7)
    assert not at.exception, at.exception
    text = _markdown(at)
    assert re.search(r"`Q` \(1, 8, \d+, 64\)", text)
    assert re.search(r"`self.W_Q.weight` \(512, 512\)", text)
    assert re.search(r"[1-9]\d* scores set to −∞", text)  # the causal mask's
