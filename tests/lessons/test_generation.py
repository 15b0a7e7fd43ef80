"""Lessons 3.4 (generation and the KV cache), 3.7 (three families) and 4.8 (complexity).

The KV-cache sizes are read from the cache tensors of a real cached decoding (the translator's
own, transformers' DynamicCache for decoder-only checkpoints) and checked against the formula
2 × layers × kv_heads × d_head × tokens × bytes at every step; cached decoding is checked
against a full pass (the same tokens and probabilities). The complexity chart's labels are
checked at their lines' x on the log axis.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import i18n
from model import load
from model.interface import Generates, Generation
from model.meta import Family, ModelDims, Step
from tests.helpers import SEED_SENTENCE, app_test, figures, plotly_array

CAT = "The cat chased the mouse because it was hungry"


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


@pytest.fixture(scope="module")
def tiny_llama(tiny_checkpoints):
    return load(str(tiny_checkpoints["llama"]), device="cpu")


def _formula(layers: int, kv_heads: int, d_head: int, tokens, bytes_per_element: int):
    return [2 * layers * kv_heads * d_head * t * bytes_per_element for t in tokens]


# --- the translator's cached decoding -----------------------------------------------------------

def test_the_translators_kv_cache_equals_the_formula_at_every_step(translator):
    cfg = translator.network.cfg
    d_head = cfg.d_model // cfg.n_heads
    for text in (SEED_SENTENCE, CAT):
        generation = translator.generate(text)
        n = len(generation.steps)
        # step t has fed <bos> and the t - 1 words written: t tokens per layer
        assert list(generation.cached_tokens) == list(range(1, n + 1))
        per_layer = _formula(1, cfg.n_heads, d_head, range(1, n + 1), 4)
        for step in range(n):
            assert list(generation.self_cache_bytes[step]) == [per_layer[step]] * \
                cfg.n_decoder_layers
        assert generation.self_cache_bytes.sum(axis=1).tolist() == _formula(
            cfg.n_decoder_layers, cfg.n_heads, d_head, range(1, n + 1), 4)
        # cross-attention: the source's keys and values, once, whatever the step
        n_source = len(text.split())
        assert generation.cross_cache_bytes.tolist() == _formula(
            1, cfg.n_heads, d_head, [n_source], 4) * cfg.n_decoder_layers
        assert generation.bytes_per_element == 4


def test_cached_decoding_writes_what_a_full_pass_writes_with_the_same_probabilities(translator):
    for text in (SEED_SENTENCE, CAT):
        generation = translator.generate(text)
        full = translator.trace(text)  # one causal pass over the greedy translation
        assert [s.token for s in generation.steps] == [s.token for s in full.steps]
        assert " ".join(s.token for s in generation.steps[:-1]) == translator.translate(text)
        for cached, whole in zip(generation.steps, full.steps):
            assert cached.probability == pytest.approx(whole.probability, abs=1e-5)
            assert [w for w, _p in cached.top_k] == [w for w, _p in whole.top_k]
        assert list(generation.trace.target_tokens) == ["<bos>", *(
            s.token for s in generation.steps[:-1])]
    assert [s.token for s in translator.generate(SEED_SENTENCE).steps] == [
        "猫", "坐", "在", "垫子", "上", "<eos>"]


def test_a_step_limit_stops_writing_and_keeps_the_counts_consistent(translator):
    generation = translator.generate(SEED_SENTENCE, max_new_tokens=3)
    assert [s.token for s in generation.steps] == ["猫", "坐", "在"]
    assert generation.cached_tokens.tolist() == [1, 2, 3]
    assert len(generation.trace.target_tokens) == 3  # <bos> 猫 坐: what the cache holds


def test_unknown_words_are_refused_before_generating(translator):
    from model import UnknownWordsError

    with pytest.raises(UnknownWordsError):
        translator.generate("The cat sat on the spaceship")
    with pytest.raises(ValueError):
        translator.generate("   ")


def test_the_generation_record_checks_its_shapes_and_is_read_only(translator):
    generation = translator.generate(SEED_SENTENCE)
    with pytest.raises(ValueError):
        generation.cached_tokens[0] = 5
    with pytest.raises(ValueError):
        Generation(model="x", prompt_tokens=("a",), steps=(Step(0, "b", 1.0, ()),),
                   cached_tokens=np.array([1, 2]), self_cache_bytes=np.zeros((1, 3)),
                   cross_cache_bytes=np.zeros(3), bytes_per_element=4,
                   trace=generation.trace)
    assert isinstance(translator, Generates)
    assert not isinstance(load("own-random", device="cpu"), Generates)


# --- decoder-only checkpoints: transformers' own cache ------------------------------------------

def _check_hf_generation(loaded, prompt: str, n_new: int) -> Generation:
    """The cache measured at every step equals the formula, and cached decoding equals
    transformers' own greedy ``generate`` and the probabilities of one full pass."""
    import torch

    generation = loaded.generate(prompt, n_new)
    config = loaded.model.config
    layers = config.num_hidden_layers
    kv_heads = config.num_key_value_heads
    d_head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    ids = loaded.tokenizer(prompt, return_tensors="pt")["input_ids"]
    n_prompt = ids.shape[1]
    n = len(generation.steps)
    tokens = [n_prompt + t for t in range(n)]  # the prefill caches the prompt, each step one more
    assert generation.cached_tokens.tolist() == tokens
    assert generation.self_cache_bytes.sum(axis=1).tolist() == _formula(
        layers, kv_heads, d_head, tokens, 4)
    assert not generation.cross_cache_bytes.any()
    with torch.inference_mode():
        reference = loaded.model.generate(ids, max_new_tokens=n_new, do_sample=False,
                                          num_beams=1, pad_token_id=loaded.tokenizer.eos_token_id)
        written = reference[0, n_prompt:].tolist()[:n]
        logits = loaded.model(reference[:, :n_prompt + n - 1]).logits[0, n_prompt - 1:]
    probabilities = torch.softmax(logits.float(), dim=-1)
    for t, step in enumerate(generation.steps):
        assert step.probability == pytest.approx(float(probabilities[t, written[t]]), abs=1e-4)
    from model.hf.labels import display_tokens

    labels, _special = display_tokens(loaded.tokenizer, [*ids[0].tolist(), *written])
    assert [step.token for step in generation.steps] == labels[n_prompt:]  # greedy alike
    assert len(generation.trace.tokens) == tokens[-1]  # the trace covers what the cache held
    return generation


def test_a_decoder_only_checkpoints_kv_cache_equals_the_formula_at_every_step(tiny_llama):
    from model.lessons.generation import kv_growth

    generation = _check_hf_generation(tiny_llama, "The cat sat on the", 6)
    dims = tiny_llama.dims
    assert dims.n_kv_heads < dims.n_heads  # grouped-query attention: 2 K/V heads for 4
    growth = kv_growth(generation, dims)
    assert growth.without_gqa.tolist() == [2 * b for b in growth.total.tolist()]


def test_encoder_checkpoints_do_not_generate(tiny_checkpoints):
    bert = load(str(tiny_checkpoints["bert"]), device="cpu")
    with pytest.raises(ValueError, match="decoder-only"):
        bert.generate("The cat sat")


@pytest.mark.slow
def test_smollm2s_kv_cache_equals_the_formula_at_every_step_with_and_without_gqa():
    from model.lessons.generation import kv_growth

    smollm2 = load("smollm2", device="cpu")
    generation = _check_hf_generation(smollm2, "The cat sat on the", 8)
    tokens = generation.cached_tokens.tolist()
    growth = kv_growth(generation, smollm2.dims)
    # 30 layers, 3 K/V heads of 64, float32; without GQA each of the 9 query heads has its own
    assert growth.total.tolist() == [2 * 30 * 3 * 64 * t * 4 for t in tokens]
    assert growth.without_gqa.tolist() == [2 * 30 * 9 * 64 * t * 4 for t in tokens]
    assert growth.formula.tolist() == growth.total.tolist()


# --- the numbers of the generation lesson -------------------------------------------------------

def test_kv_growth_reads_the_measured_sizes_and_multiplies_by_the_group(translator):
    from model.analysis.costs import attention_costs
    from model.lessons.generation import kv_growth

    generation = translator.generate(SEED_SENTENCE)
    growth = kv_growth(generation, translator.dims)
    assert growth.total.tolist() == generation.self_cache_bytes.sum(axis=1).tolist()
    assert growth.formula.tolist() == growth.total.tolist()
    assert growth.without_gqa.tolist() == growth.total.tolist()  # no GQA: 4 K/V heads of 4
    assert growth.per_token == 2 * 3 * 4 * 32 * 4
    # at the last step, self-attention plus the cross-attention K/V are the Shapes page's
    # KV cache of the same translation
    shapes = attention_costs(translator.dims, generation.trace)
    assert growth.total[-1] + growth.cross == shapes["kv_cache_bytes"]
    gqa = ModelDims(d_model=64, n_heads=8, n_kv_heads=2, d_head=8, d_ff=128,
                    n_encoder_layers=0, n_decoder_layers=3)
    fake = Generation(model="x", prompt_tokens=("a",), steps=(Step(0, "b", 1.0, ()),) * 2,
                      cached_tokens=np.array([1, 2]),
                      self_cache_bytes=np.array([[128] * 3, [256] * 3]),
                      cross_cache_bytes=np.zeros(3), bytes_per_element=4,
                      trace=generation.trace)
    assert kv_growth(fake, gqa).without_gqa.tolist() == [384 * 4, 768 * 4]


def test_each_step_adds_rows_to_the_causal_pattern_and_earlier_rows_stay(translator):
    from model.lessons.generation import next_words, pattern_at_step

    generation = translator.generate(SEED_SENTENCE)
    weights = generation.trace.weights("decoder.self", 2, 1)
    for step in range(1, len(generation.steps) + 1):
        now = pattern_at_step(generation, step, 2, 1)
        assert (now.first_new, now.rows) == (step - 1, step)
        np.testing.assert_allclose(now.weights[:step], weights[:step], atol=1e-6)
        assert np.isnan(now.weights[step:]).all()
        np.testing.assert_allclose(now.weights[:step].sum(axis=1), 1, atol=1e-5)
        assert now.written == generation.steps[step - 1].token
        words, probabilities, chosen = next_words(generation, step)
        assert words[chosen] == now.written and probabilities == sorted(probabilities)[::-1]
    assert pattern_at_step(generation, 4, 2).written == "垫子"
    assert pattern_at_step(generation, 4, 2).read == "在"
    with pytest.raises(ValueError):
        pattern_at_step(generation, 7, 0)


def test_the_growing_pattern_outlines_the_new_rows_and_leaves_later_ones_empty():
    from viz.lessons.generation import growing_pattern

    n = 5
    weights = np.tril(np.ones((n, n)))
    weights /= weights.sum(axis=1, keepdims=True)
    weights[3:] = np.nan
    labels = list("abcde")
    fig = growing_pattern(weights, np.tril(np.ones((n, n), bool)), labels, labels,
                          first_new=2, rows=3)
    shown, masked, later = fig.data
    assert np.isnan(np.array(shown.z, float)[3:]).all()
    assert np.count_nonzero(np.array(masked.z, float) == 1) == 4 + 3 + 2  # above 3 rows
    assert np.count_nonzero(np.array(later.z, float) == 1) == 2 * n
    (box,) = fig.layout.shapes
    assert (box.y0, box.y1) == (1.5, 2.5)


def test_the_cache_grid_colours_the_tokens_cached_before_and_by_the_step():
    from viz.lessons.generation import cache_grid

    fig = cache_grid(4, list("abcdef"), before=3, now=4, bytes_per_cell=512)
    before, added = (np.array(trace.z, float) for trace in fig.data[:2])
    assert np.count_nonzero(before == 1) == 4 * 3 and np.count_nonzero(added == 1) == 4
    assert "512" in fig.data[0].hovertemplate


# --- the generation page ----------------------------------------------------------------------

def _table(at) -> dict:
    frame = at.dataframe[0].value
    return {column: frame[column].tolist() for column in frame.columns}


def test_the_generation_page_shows_the_cache_growing_by_the_formula():
    at = app_test("lesson_generation", gen_step=4)
    assert not at.exception
    table = _table(at)
    tokens = table["tokens cached"]
    assert tokens == list(range(1, 7)) and table["written"][3] == "垫子"
    expected = [2 * 3 * 4 * 32 * t * 4 for t in tokens]  # own-translator: 3 layers, 4 heads
    assert table["KV cache (bytes, measured)"] == expected == table["formula (bytes)"]
    charts = figures(at)
    pattern, _next_words, grid, sizes = charts
    step = at.slider(key="gen_step").value
    assert pattern["layout"]["shapes"][0]["y1"] == step - 0.5  # the step's row, outlined
    measured = next(t for t in sizes["data"] if t.get("meta") == "measured")
    assert plotly_array(measured["y"]).tolist() == expected
    assert any(f"{expected[step - 1]:,} bytes" in m.value for m in at.markdown)
    assert any("computed once" in c.value for c in at.caption)
    at.button(key="gen_step_next").click().run()
    assert at.slider(key="gen_step").value == step + 1
    grid = figures(at)[2]
    assert np.count_nonzero(plotly_array(grid["data"][1]["z"]) == 1) == 3  # 3 layers, 1 token


def test_the_generation_page_opens_at_its_first_step_and_gives_no_later_token_away():
    at = app_test("lesson_generation")
    assert not at.exception
    assert at.slider(key="gen_step").value == 1
    assert _table(at)["written"] == ["猫", "?", "?", "?", "?", "?"]
    pattern = figures(at)[0]
    assert pattern["layout"]["yaxis"]["ticktext"][1:] == ["?"] * 5  # later rows unnamed
    assert "垫子" not in " ".join(m.value for m in at.markdown)
    at.button(key="gen_step_next").click().run()
    assert _table(at)["written"][:3] == ["猫", "坐", "?"]


def test_the_generation_page_reads_a_new_sentence_and_explains_unknown_words():
    at = app_test("lesson_generation", gen_step=3)
    at.text_input(key="gen_text_own-translator").set_value(CAT).run()
    assert _table(at)["written"][:3] == ["猫", "追", "老鼠"]
    at.text_input(key="gen_text_own-translator").set_value("The cat sat on the spaceship").run()
    assert not at.exception and "spaceship" in at.error[0].value


@pytest.mark.slow
def test_the_generation_page_runs_smollm2_with_gqa():
    at = app_test("lesson_generation")
    at.selectbox(key="gen_layer").set_value(0).run()
    at.radio(key="gen_model").set_value("smollm2").run()
    assert not at.exception
    assert at.selectbox(key="gen_layer").value == 29  # the new model's last layer
    assert at.slider(key="gen_step").value == 1  # a new model starts at its first step
    table = _table(at)
    prompt_tokens = 5  # "The cat sat on the"
    assert table["tokens cached"] == [prompt_tokens + t for t in range(8)]
    assert table["KV cache (bytes, measured)"] == [
        2 * 30 * 3 * 64 * t * 4 for t in table["tokens cached"]]
    assert table["without GQA (bytes)"] == [3 * b for b in table["KV cache (bytes, measured)"]]
    assert any("3× as much" in str(m.proto.delta) for m in at.metric)


def test_the_lesson_pages_run_in_chinese():
    with i18n.use("zh"):
        for page in ("lesson_generation", "lesson_families", "lesson_complexity"):
            at = app_test(page, lang="zh")
            assert not at.exception, page
            assert at.get("plotly_chart"), page


# --- three families -----------------------------------------------------------------------------

def test_telling_head_finds_the_head_that_shows_its_familys_view():
    from model.lessons.families import family_view, telling_head
    from model.trace import AttentionTrace

    n = 5
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1
    weights = np.stack([np.stack([uniform, uniform]), np.stack([uniform, previous])])
    causal = AttentionTrace(model="toy", family=Family.DECODER_ONLY, tokens=list("abcde"),
                            ids=list(range(n)), n_heads=2, n_kv_heads=2,
                            attention={"decoder.self": weights.astype(np.float32)})
    assert telling_head(causal, "decoder.self") == (1, 1)
    view = family_view(causal, 1, 1)
    assert view.kind == "decoder.self" and view.seen == n * (n + 1) // 2 and view.cells == n * n
    nxt = np.eye(n, k=1)
    nxt[-1, -1] = 1
    full = np.full((n, n), 1 / n)
    both = np.stack([np.stack([full, nxt]), np.stack([full, full])])
    encoder = AttentionTrace(model="toy", family=Family.ENCODER_ONLY, tokens=list("abcde"),
                             ids=list(range(n)), n_heads=2, n_kv_heads=2,
                             attention={"encoder.self": both.astype(np.float32)})
    assert telling_head(encoder, "encoder.self") == (0, 1)  # reads to the right
    assert family_view(encoder, 0, 1).seen == n * n


def test_the_families_page_shows_the_translator_at_once_and_the_others_on_demand(monkeypatch):
    from app_pages.cache import getters

    # on a server that has loaded none of them (this process may have, for other tests)
    monkeypatch.setattr(getters, "_LOADED", set())
    at = app_test("lesson_families")
    assert not at.exception
    (cross,) = figures(at)
    mask = plotly_array(cross["data"][0]["z"])
    assert mask.shape == (6, 6) and mask.all()  # cross: every target row sees every word
    rows = cross["layout"]["yaxis2"]["ticktext"]
    weights = plotly_array(cross["data"][1]["z"])
    source = cross["layout"]["xaxis2"]["ticktext"]
    assert source[int(np.argmax(weights[rows.index("垫子")]))] == "mat"
    assert {b.key for b in at.button} >= {"fam_load_minilm", "fam_load_smollm2",
                                          "fam_load_all"}
    at.radio(key="fam_kind").set_value("decoder.self").run()
    mask = plotly_array(figures(at)[0]["data"][0]["z"])
    np.testing.assert_array_equal(mask, np.tril(np.ones((6, 6))))


@pytest.mark.slow
def test_the_families_page_shows_three_masks_side_by_side():
    at = app_test("lesson_families")
    if any(button.key == "fam_load_all" for button in at.button):  # this process has not
        at.button(key="fam_load_all").click().run()  # loaded all three yet (others' tests may)
    assert not at.exception
    encoder, decoder, cross = figures(at)
    assert plotly_array(encoder["data"][0]["z"]).all()  # bidirectional
    causal = plotly_array(decoder["data"][0]["z"])
    np.testing.assert_array_equal(causal, np.tril(np.ones(causal.shape)))
    assert plotly_array(cross["data"][0]["z"]).all()
    captions = " ".join(c.value for c in at.caption)
    assert "(100%)" in captions and "21 of 36" in captions  # smollm2: 6 tokens, causal


# --- complexity ---------------------------------------------------------------------------------

def _annotations_at_their_lines(fig: dict) -> None:
    """Every vertical line has a label at log10 of its x (the x axis is logarithmic)."""
    assert fig["layout"]["xaxis"]["type"] == "log"
    lines = [shape["x0"] for shape in fig["layout"]["shapes"]]
    labels = {round(a["x"], 9): a["text"] for a in fig["layout"]["annotations"]}
    assert len(lines) == 2
    for x in lines:
        assert round(math.log10(x), 9) in labels, (x, labels)


@pytest.mark.parametrize("n, d", [(256, 512), (65536, 4096), (512, 512), (1, 64)])
def test_the_complexity_labels_sit_at_their_lines_on_the_log_axis(n, d):
    from viz.lessons.complexity import complexity_lesson

    fig = complexity_lesson(n, d).to_plotly_json()
    _annotations_at_their_lines(fig)
    labels = {a["text"]: a["x"] for a in fig["layout"]["annotations"]}
    assert labels[f"n = d = {d}"] == pytest.approx(math.log10(d))
    assert labels[f"chosen n = {n:,}"] == pytest.approx(math.log10(n))
    points = [t for t in fig["data"] if t.get("meta") == "at n"]
    assert sorted(p["y"][0] for p in points) == sorted([n * n * d, n * d * d])
    (crossover,) = [t for t in fig["data"] if t.get("meta") == "crossover"]
    assert (crossover["x"][0], crossover["y"][0]) == (d, d ** 3)


def test_the_complexity_page_counts_operations_for_the_chosen_n_and_d():
    from model.lessons.complexity import operation_counts

    assert operation_counts(7, 512).attention == 7 * 7 * 512
    assert operation_counts(7, 512).ratio == pytest.approx(512 / 7)
    at = app_test("lesson_complexity")
    assert not at.exception
    at.select_slider(key="cx_n").set_value(4096).run()
    at.select_slider(key="cx_d").set_value(1024).run()
    metrics = {m.label: m for m in at.metric}
    assert metrics["self-attention n²·d"].value == "1.72 × 10¹⁰"  # 4096² · 1024
    assert metrics["RNN n·d²"].value == "4.29 × 10⁹"  # 4096 · 1024²
    assert "4.0× more" in metrics["n·d² ÷ n²·d = d ÷ n"].proto.delta
    _annotations_at_their_lines(figures(at)[0])
    with pytest.raises(ValueError):
        operation_counts(0, 512)
