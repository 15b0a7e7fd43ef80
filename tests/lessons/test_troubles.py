"""Lesson 3.8, the Transformer's own troubles: the KV-cache formula against the translator's real
cache and the published configs' arithmetic, the attention timing's table and its bounds (a
length beyond the server's request memory refused, the time budget), the MoE formula against a
small Mixtral built by transformers, own-translator's accuracy by length against its own
translations, and the page under AppTest (its numbers follow its inputs)."""

from __future__ import annotations

import html
import random

import numpy as np
import pytest
import torch

from model.lessons.generation import kv_growth
from model.lessons.troubles import (
    DEEPSEEK_V2,
    HEADS,
    LENGTHS,
    MIXTRAL_8X7B,
    PUBLISHED_KV,
    MoEConfig,
    attention_bytes,
    chained,
    kv_bytes,
    kv_rows,
    loaded_kv_model,
    longest_length,
    mla_as_mha_per_token,
    moe_parameters,
    read_longer,
    time_attention,
    training_max_words,
    word_accuracy,
)
from model.own.training_pairs import make_corpus
from model.own.vocab import split_words
from tests.helpers import app_test, figures, plotly_array


@pytest.fixture(scope="module")
def translator():
    from model import load

    return load("own-translator", device="cpu")


# --- the KV cache ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["The cat sat on the mat",
                                  "The cat chased the mouse because it was hungry"])
def test_the_kv_formula_equals_the_translators_cache_measured_from_its_tensors(translator, text):
    generation = translator.generate(text)
    measured = kv_growth(generation, generation.trace.dims).total  # bytes of the cache tensors
    model = loaded_kv_model(translator.name, translator.dims, translator.dtype)
    assert model.attention == "MHA" and model.bytes_per_element == 4  # float32, 4 K/V heads
    assert np.array_equal(kv_bytes(model, generation.cached_tokens), measured)
    assert model.per_token == measured[1] - measured[0]


def test_the_published_caches_follow_their_config_values():
    per_token = {row.name: row.per_token for row in kv_rows(4096)}
    assert per_token["Llama-2-7B"] == 2 * 32 * 32 * 128 * 2  # 512 KB a token
    assert per_token["Llama-3-8B"] == 2 * 32 * 8 * 128 * 2  # GQA: a quarter of it
    assert per_token["DeepSeek-V2"] == 60 * (512 + 64) * 2  # MLA: 67.5 KB
    assert mla_as_mha_per_token() == 60 * 128 * (128 + 64 + 128) * 2
    for row in kv_rows(4096):
        assert row.total == row.per_token * 4096 and row.source and row.config
    deepseek = PUBLISHED_KV[-1]
    assert deepseek.latent == DEEPSEEK_V2["kv_lora_rank"] + DEEPSEEK_V2["qk_rope_head_dim"]


def test_an_encoder_only_model_keeps_no_kv_cache():
    from model.meta import ModelDims

    encoder = ModelDims(d_model=384, n_heads=12, n_kv_heads=12, d_head=32, d_ff=1536,
                        n_encoder_layers=6, n_decoder_layers=0)
    assert loaded_kv_model("minilm", encoder, "float32") is None
    gqa = ModelDims(d_model=576, n_heads=9, n_kv_heads=3, d_head=64, d_ff=1536,
                    n_encoder_layers=0, n_decoder_layers=30)
    smollm2 = loaded_kv_model("smollm2", gqa, "bfloat16")
    assert smollm2.attention == "GQA" and smollm2.per_token == 2 * 30 * 3 * 64 * 2
    assert kv_rows(100, smollm2)[0].name == "smollm2"


# --- O(n²) -------------------------------------------------------------------------------------

def test_the_attention_table_has_the_lengths_asked_positive_medians_and_the_scores_bytes():
    cost = time_attention(1024, "cpu", repeats=2, run_seconds=1e9)
    assert cost.lengths.tolist() == [256, 512, 1024] and cost.stopped_at is None
    assert (cost.explicit_s > 0).all() and (cost.fused_s > 0).all()
    assert cost.score_bytes.tolist() == [n * n * 4 * HEADS for n in (256, 512, 1024)]
    assert cost.ratios().shape == (2,)
    assert cost.largest_error < 1e-4  # the explicit attention and torch's fused kernel agree
    assert cost.explicit_peak is None  # measured on CUDA only


def test_the_explicit_attention_agrees_with_torch():
    from model.lessons import troubles

    q, k, v = torch.randn(3, 1, 2, 7, 16).unbind(0)
    out, score_bytes = troubles._explicit(q, k, v)
    reference = torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1) @ v
    assert torch.allclose(out, reference, atol=1e-6) and score_bytes == 2 * 7 * 7 * 4


def test_the_measurement_stops_when_the_next_length_would_take_too_long():
    cost = time_attention(4096, "cpu", repeats=1, run_seconds=1e-9)
    assert cost.lengths.tolist() == [256] and cost.stopped_at == 512 and cost.asked == 4096


def test_the_longest_length_fits_the_limit():
    assert attention_bytes(1024) == 4 * 8 * 1024 * 64 * 4 + 2 * 8 * 1024 ** 2 * 4
    limit = attention_bytes(4096)
    assert longest_length(limit) == 4096 and longest_length(limit - 1) == 2048
    assert longest_length(1) == 0 and max(LENGTHS) == 32768


def test_a_length_beyond_the_servers_request_memory_is_refused_naming_the_limit(monkeypatch):
    from app_pages.cache import getters

    monkeypatch.setenv("ATTENTION_EXPLORER_REQUEST_GB", "0.1")  # 102 MB: n = 1,024 fits
    getters.limits.clear()
    try:
        at = app_test("lesson_troubles", tr_n=2048)
        assert not at.exception, at.exception
        (error,) = at.error
        message = html.unescape(error.value)
        assert "ATTENTION_EXPLORER_REQUEST_GB" in message and "102 MB" in message
        assert "n goes up to 1,024" in message
        assert not figures(at)  # nothing was timed or drawn
    finally:
        getters.limits.clear()


# --- beyond the training length ----------------------------------------------------------------

def test_the_training_maximum_is_the_longest_training_sentence():
    corpus = make_corpus(0)  # the seed own-translator's card records
    longest = training_max_words()
    assert all(len(split_words(p.en)) <= longest for p in corpus.train)
    assert any(len(split_words(p.en)) == longest for p in corpus.train)


def test_chained_sentences_use_the_grammar_and_grow_with_clauses():
    rng = random.Random(0)
    pairs = [chained(rng, clauses) for clauses in (1, 3, 6)]
    assert [p.en.count(" and ") for p in pairs] == [0, 2, 5]
    assert [p.zh.count("，") for p in pairs] == [0, 2, 5]
    assert len(split_words(pairs[-1].en)) > training_max_words()


def test_word_accuracy_is_one_minus_the_word_error_rate():
    assert word_accuracy(list("abcd"), list("abcd")) == 1.0
    assert word_accuracy(list("abxd"), list("abcd")) == 0.75  # one substitution
    assert word_accuracy(list("abd"), list("abcd")) == 0.75  # one deletion
    assert word_accuracy([], list("abcd")) == 0.0
    assert word_accuracy(list("abcdefghij"), list("ab")) == 0.0  # never below 0


def test_accuracy_by_length_is_what_the_translator_writes_one_sentence_at_a_time(translator):
    reading = read_longer(translator, per_length=4, seed=3, max_clauses=3)
    rng = random.Random(3)
    pairs = [chained(rng, clauses) for clauses in (1, 2, 3) for _n in range(4)]
    exact = [translator.translate(p.en).split() == p.zh.split() for p in pairs]
    assert reading.exact.tolist() == exact
    assert reading.words.tolist() == [len(split_words(p.en)) for p in pairs]
    assert reading.bin_count.sum() == 12 and len(reading.examples) == 3
    full = ~np.isnan(reading.bin_exact)
    assert np.isclose(np.nansum(reading.bin_exact * reading.bin_count), sum(exact))
    assert (reading.bin_count[full] > 0).all()


# --- MoE ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("tied", [False, True])
def test_the_moe_formula_counts_a_tiny_mixtrals_parameters(tied):
    from transformers import MixtralConfig, MixtralForCausalLM

    sizes = dict(vocab_size=97, hidden_size=32, intermediate_size=40, num_hidden_layers=3,
                 num_attention_heads=4, num_key_value_heads=2, num_local_experts=5,
                 num_experts_per_tok=2, tie_word_embeddings=tied)
    model = MixtralForCausalLM(MixtralConfig(**sizes))
    total = sum(p.numel() for p in model.parameters())  # tied weights counted once
    experts = sum(p.numel() for name, p in model.named_parameters() if ".experts." in name)
    idle = experts * (5 - 2) // 5  # the three experts a token skips, every layer
    parts = moe_parameters(MoEConfig("tiny", **sizes))
    assert parts.total == total and parts.experts == experts
    assert parts.active == total - idle


def test_mixtral_8x7b_has_its_published_parameter_counts():
    parts = moe_parameters(MIXTRAL_8X7B)
    assert round(parts.total / 1e9, 1) == 46.7 and round(parts.active / 1e9, 1) == 12.9
    dense = moe_parameters(MIXTRAL_8X7B.with_experts(1, 1))
    assert dense.total == dense.active
    with pytest.raises(ValueError):
        MIXTRAL_8X7B.with_experts(4, 5)


# --- the page ----------------------------------------------------------------------------------

def _metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def test_the_page_runs_and_its_numbers_follow_its_inputs():
    at = app_test("lesson_troubles", tr_n=512)
    assert not at.exception, at.exception
    assert not at.error
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert len(titles) == 5, titles
    length = next(f for f in figures(at) if "length" in f["layout"]["title"]["text"])
    before = [plotly_array(t["y"]).tolist() for t in length["data"]]
    total = _metric(at, "all parameters")
    at.slider(key="tr_seed").set_value(7).run()
    assert not at.exception, at.exception
    length = next(f for f in figures(at) if "length" in f["layout"]["title"]["text"])
    after = [plotly_array(t["y"]).tolist() for t in length["data"]]
    assert after != before  # other sentences, other scores
    at.slider(key="tr_experts").set_value(16).run()
    assert _metric(at, "all parameters") != total
