"""own-translator: held-out accuracy, the seed's sentences, alignment, causal traces, export."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from model import UnknownWordsError, load
from model.own.hooks import capture
from model.own.train import evaluate
from model.own.training_pairs import make_corpus
from model.own.translator import CARD
from model.own.vocab import split_words


@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


@pytest.mark.slow  # translates 500 sentences
def test_held_out_exact_match_is_at_least_95_percent(translator):
    card = json.loads(CARD.read_text(encoding="utf-8"))
    corpus = make_corpus(card["corpus"]["seed"])
    assert len(corpus.train) == card["corpus"]["n_train"]
    score = evaluate(translator, corpus.test)
    assert score["sentences"] == 500
    assert score["exact_match"] >= 0.95
    assert score["exact_match"] == pytest.approx(card["held_out"]["exact_match"])


@pytest.mark.parametrize("en, zh", [
    ("The cat sat on the mat", "猫 坐 在 垫子 上"),
    ("The cat chased the mouse because it was hungry", "猫 追 老鼠 ， 因为 它 饿 了"),
])
def test_seed_sentences_translate_exactly(translator, en, zh):
    assert translator.translate(en) == zh


def test_last_layer_cross_attention_aligns_mat_and_cat(translator):
    trace = translator.trace("The cat sat on the mat")
    written = [step.token for step in trace.steps]
    assert written == ["猫", "坐", "在", "垫子", "上", "<eos>"]
    alignment = trace.mean_weights("decoder.cross", trace.layers("decoder.cross") - 1)
    source = list(trace.source_tokens)
    # row t is the step that wrote word t + 1
    assert source[alignment[written.index("垫子")].argmax()] == "mat"
    assert source[alignment[written.index("猫")].argmax()] == "cat"


def test_trace_holds_every_step_with_causal_and_normalised_patterns(translator):
    trace = translator.trace("The cat chased the mouse because it was hungry")
    assert " ".join(trace.target_tokens) == "<bos> 猫 追 老鼠 ， 因为 它 饿 了"
    assert len(trace.steps) == len(trace.target_tokens)
    for name in trace.names:
        np.testing.assert_allclose(trace.stack(name).sum(-1), 1.0, atol=1e-5)
    causal = trace.stack("decoder.self")
    assert (causal[..., ~trace.mask("decoder.self")] == 0).all()
    for step in trace.steps:
        probs = [p for _, p in step.top_k]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6
        assert step.top_k[0][0] == step.token  # greedy: the most probable word


def test_final_pass_rows_equal_step_by_step_decoding(translator):
    trace = translator.trace("The cat sat on the mat")
    net = translator.network
    src = torch.tensor([list(trace.source_ids)])
    target_ids = list(trace.target_ids)
    for t in range(1, len(target_ids) + 1):
        prefix = torch.tensor([target_ids[:t]])
        with torch.inference_mode(), capture(net, lambda n: n.endswith("hook_pattern")) as store:
            net(src_ids=src, tgt_ids=prefix)
        for layer in range(3):
            step_cross = store[f"decoder.layers.{layer}.cross_attn.hook_pattern"][0, :, -1]
            np.testing.assert_allclose(trace.stack("decoder.cross")[layer, :, t - 1],
                                       step_cross.numpy(), atol=1e-5)
            step_self = store[f"decoder.layers.{layer}.self_attn.hook_pattern"][0, :, -1]
            np.testing.assert_allclose(trace.stack("decoder.self")[layer, :, t - 1, :t],
                                       step_self.numpy(), atol=1e-5)


def test_unknown_words_are_all_reported(translator):
    with pytest.raises(UnknownWordsError) as error:
        translator.trace("The zebra sat on the spaceship")
    assert error.value.words == ["zebra", "spaceship"]


def test_teacher_forced_target_is_traced(translator):
    trace = translator.trace("The cat sat on the mat", target="猫 坐 在 地毯 上")
    assert list(trace.target_tokens) == ["<bos>", "猫", "坐", "在", "地毯", "上"]
    step = trace.steps[3]
    assert step.token == "地毯" and step.probability < 0.5


def test_export_of_own_translator_has_consistent_shapes(tmp_path, translator):
    path = translator.trace("The cat sat on the mat").save(tmp_path / "t.npz")
    with np.load(path) as data:
        S, T = len(data["source_tokens"]), len(data["target_tokens"])
        assert (S, T) == (6, 6)
        assert data["encoder.self"].shape == (3, 4, S, S)
        assert data["decoder.self"].shape == (3, 4, T, T)
        assert data["decoder.cross"].shape == (3, 4, T, S)
        meta = json.loads(str(data["meta"]))
        assert meta["model"] == "own-translator" and len(meta["steps"]) == T


def test_the_recorded_training_stages_learn_the_alignment():
    """Compare's training stages: at step 0 the cross-attention is spread evenly over the
    source; the run's trained model aligns each Chinese word with the English word it
    translates."""
    from model.own.translator import Translator, training_stages

    stages = training_stages()
    assert stages[0] == 0 and len(stages) >= 3
    entropies, aligned = [], []
    for step in (stages[0], stages[-1]):
        model = Translator.from_files(device="cpu", stage=step)
        assert model.name == f"own-translator@step{step}"
        trace = model.trace("the cat sat on the mat", target="猫 坐 在 垫子 上")
        w = trace.mean_weights("decoder.cross", trace.layers("decoder.cross") - 1)
        entropies.append(float(-(w * np.log(np.clip(w, 1e-12, 1))).sum(-1).mean()))
        aligned.append([trace.source_tokens[k] for k in w.argmax(-1)])
    assert entropies[0] > 0.9 * np.log(6) > entropies[1] * 4  # even at first, then sharp
    # rows read <bos> 猫 坐 在 and write 猫 坐 在 垫子: cat, sat, on, mat
    assert aligned[1][:4] == ["cat", "sat", "on", "mat"]


# --- the decoder's KV cache: one cached pass per token equals the full pass ---------------------

def _tiny(n_encoder_layers: int, positional: str):
    from model.own.config import TransformerConfig
    from model.own.transformer import Transformer

    torch.manual_seed(1)
    cfg = TransformerConfig(src_vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=
                            n_encoder_layers, n_decoder_layers=3, d_ff=32, dropout=0.0,
                            positional=positional, max_len=12)
    return Transformer(cfg).eval()


@pytest.mark.parametrize("n_encoder_layers", [2, 0], ids=["encoder-decoder", "decoder-only"])
@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_cached_decoding_equals_the_full_pass_at_every_step(n_encoder_layers, positional):
    """A prompt of 3 tokens, then one token a pass: each pass's output is the full pass's
    rows of those tokens, its attention the full pass's rows, with padding in the batch."""
    from model.own.transformer import DecoderCache

    net = _tiny(n_encoder_layers, positional)
    tgt = torch.randint(1, 23, (2, 9))
    tgt[1, 6:] = 0  # padding written by a finished sequence
    memory = src_mask = None
    if n_encoder_layers:
        src = torch.randint(1, 23, (2, 7))
        src[1, 4:] = 0
        memory, src_mask = net.encode(src)
    cache = DecoderCache()
    bounds = [0, 3, *range(4, 10)]
    with torch.inference_mode():
        for start, end in zip(bounds, bounds[1:]):
            with capture(net) as cached:
                out = net.decode(tgt[:, start:end], memory, src_mask, cache=cache)
            with capture(net) as full:
                whole = net.decode(tgt[:, :end], memory, src_mask)
            torch.testing.assert_close(out, whole[:, start:], atol=1e-5, rtol=1e-5)
            assert cache.tokens == cache.self_attn.tokens == end
            for name, pattern in cached.items():
                if name.endswith(("hook_pattern", "hook_scores")):
                    torch.testing.assert_close(pattern, full[name][:, :, start:], atol=1e-5,
                                               rtol=1e-5, equal_nan=True)
            crossed = [name for name in cached if ".cross_attn.hook_k" in name]
            # the encoder's keys are projected on the first pass only
            assert len(crossed) == (3 if n_encoder_layers and start == 0 else 0)
    assert len(cache.cross_attn) == (3 if n_encoder_layers else 0)
    with pytest.raises(ValueError, match="max_len"):
        net.decode(tgt[:, :4], memory, src_mask, cache=cache)  # 9 + 4 > max_len 12
    assert cache.tokens == 9  # a refused pass leaves the cache as it was


def test_the_greedy_loop_writes_what_recomputing_every_prefix_writes(translator):
    """The cached greedy loop against greedy decoding that recomputes the whole prefix at
    every step (held-out sentences in one padded batch): the same ids and, at every step, the
    same logits."""
    from model.own.decoding import greedy

    card = json.loads(CARD.read_text(encoding="utf-8"))
    pairs = make_corpus(card["corpus"]["seed"]).test[:8]
    ids = [translator.src_vocab.encode(split_words(p.en)) for p in pairs]
    net, pad, eos = translator.network, translator.config.pad_id, translator.tgt_vocab.eos_id
    src = torch.tensor([row + [pad] * (max(map(len, ids)) - len(row)) for row in ids])
    with torch.inference_mode():
        memory, src_mask = net.encode(src)
        out = torch.full((len(ids), 1), translator.tgt_vocab.bos_id)
        done = torch.zeros(len(ids), dtype=torch.bool)
        for logits, next_id, _cache in greedy(net, out[:, :1], [eos], 30, memory, src_mask):
            full = net.generator(net.decode(out, memory, src_mask)[:, -1])
            torch.testing.assert_close(logits, full, atol=1e-4, rtol=1e-5)
            expected = full.argmax(-1).masked_fill(done, pad)
            assert next_id.tolist() == expected.tolist()
            out = torch.cat([out, expected[:, None]], dim=1)
            done |= expected == eos
    assert done.all()
    assert translator.translate_ids(ids) == [
        row[:row.index(eos)] for row in out[:, 1:].tolist()]


def test_steps_from_logits_equal_numpys_softmax_and_top_k():
    from model.meta import TOP_K
    from model.own.decoding import steps_from_logits

    logits = torch.randn(4, 11, generator=torch.Generator().manual_seed(0))
    itos = [f"w{i}" for i in range(11)]
    steps = steps_from_logits(logits, [3, 0, 10, 5], itos)
    z = logits.double().numpy()
    probs = np.exp(z - z.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    for t, (step, written) in enumerate(zip(steps, [3, 0, 10, 5])):
        assert (step.step, step.token) == (t, itos[written])
        assert step.probability == pytest.approx(probs[t, written], abs=1e-6)
        best = np.argsort(-probs[t])[:TOP_K]
        assert [w for w, _p in step.top_k] == [itos[i] for i in best]
        np.testing.assert_allclose([p for _w, p in step.top_k], probs[t, best], atol=1e-6)
