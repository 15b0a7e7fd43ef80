"""The one recomputation of attention weights from recorded calls (model/hf/capture.py
``recompute``), on both of its paths: a trace's lazy store (:class:`LazyAttention`, per sentence
in row blocks) and a padded batch (``padded_weights``, every sentence at once). Both equal
transformers' own eager ``output_attentions`` of each sentence run alone, for every feature a
recorded call carries: T5's position bias, Gemma 2's soft-capping, sliding windows (Mistral,
Gemma 2, Qwen2, gpt-oss), gpt-oss's attention sinks, grouped K/V heads, padding and causal
masks; and a numpy formula on hand-built calls. The one statistics kernel
(model/reading/statistics.py) on a padded batch equals each sentence's statistics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

from model.analysis.statistics import STATS, head_stats
from model.hf import HFModel
from model.hf.capture import Call, LazyAttention, padded_weights
from model.reading import blocks as blocked
from model.reading.statistics import means, row_sums

# lengths differ (padding), the longest is not the first, and the long ones pass the windows
TEXTS = ["The cat sat on the mat.", "A dog slept under the table yesterday because it was tired.",
         "猫 坐 在 垫子 上", "The cat chased the mouse because it was hungry."]
AUTO = {"encoder-only": AutoModel, "decoder-only": AutoModelForCausalLM,
        "encoder-decoder": AutoModelForSeq2SeqLM}
WINDOW = 4


def _extra_configs(vocab: int) -> dict:
    """Tiny configs of what the shared tiny checkpoints lack: soft-capping, sinks, windows."""
    from transformers import (
        Gemma2Config,
        Gemma2ForCausalLM,
        GptOssConfig,
        GptOssForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    small = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return {
        # layer 0 slides, layer 1 sees everything; scores soft-capped at 2
        "gemma2": (Gemma2ForCausalLM, Gemma2Config(
            **small, head_dim=8, sliding_window=WINDOW, attn_logit_softcapping=2.0,
            query_pre_attn_scalar=8)),
        # learned sinks, layer 0 slides
        "gpt_oss": (GptOssForCausalLM, GptOssConfig(
            **small, head_dim=8, sliding_window=WINDOW, num_local_experts=2,
            num_experts_per_tok=1)),
        # layer 1 slides (layers from max_window_layers on), through SDPA's bool masks
        "qwen2": (Qwen2ForCausalLM, Qwen2Config(
            **small, sliding_window=WINDOW, use_sliding_window=True, max_window_layers=1)),
    }


@pytest.fixture(scope="module")
def checkpoints(tiny_checkpoints, tmp_path_factory):
    """The shared tiny checkpoints and three more, every feature of a call made to matter:
    Gemma 2's queries scaled up so that soft-capping bends its scores, gpt-oss's sinks drawn
    large enough to take a visible share."""
    from tests.helpers import byte_level_tokenizer

    tokenizer = byte_level_tokenizer()
    root = tmp_path_factory.mktemp("recomputed")
    paths = dict(tiny_checkpoints)
    for name, (model_class, config) in _extra_configs(len(tokenizer)).items():
        torch.manual_seed(0)
        model = model_class(config).eval()
        with torch.no_grad():
            for module_name, module in model.named_modules():
                if name == "gemma2" and module_name.endswith("q_proj"):
                    module.weight.mul_(30)
                if name == "gpt_oss" and hasattr(module, "sinks"):
                    module.sinks.normal_(0, 1)
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        paths[name] = root / name
    return paths


def _eager_alone(model: HFModel, inputs: dict, b: int) -> dict[str, np.ndarray]:
    """Transformers' eager weights of sentence ``b`` of padded ``inputs`` run on its own (its
    real tokens only): kind → float32 ``[layer, head, query, key]``."""
    eager = AUTO[model.family.value].from_pretrained(model.name,
                                                     attn_implementation="eager").eval()
    real = inputs["attention_mask"][b].bool()
    alone = {"input_ids": inputs["input_ids"][b:b + 1, real],
             "attention_mask": inputs["attention_mask"][b:b + 1, real]}
    if "decoder_input_ids" in inputs:
        dec = inputs["decoder_attention_mask"][b].bool()
        alone.update(decoder_input_ids=inputs["decoder_input_ids"][b:b + 1, dec],
                     decoder_attention_mask=inputs["decoder_attention_mask"][b:b + 1, dec])
    with torch.inference_mode():
        out = eager(**alone, output_attentions=True, use_cache=False)
    if "decoder_input_ids" in inputs:
        found = {"encoder.self": out.encoder_attentions, "decoder.self": out.decoder_attentions,
                 "decoder.cross": out.cross_attentions}
    else:
        found = {model.family.kinds[0]: out.attentions}
    return {kind: torch.stack(layers)[:, 0].numpy() for kind, layers in found.items()}


@pytest.fixture(scope="module")
def batched(checkpoints):
    """Per checkpoint: (model, its AttentionBatch of TEXTS, each sentence's eager weights)."""
    out = {}
    for name, path in checkpoints.items():
        model = HFModel.load(str(path), device="cpu")
        batch = model.attention_batch(TEXTS)
        inputs = model.prepare_inputs(TEXTS)
        out[name] = model, batch, [_eager_alone(model, inputs, b) for b in range(len(TEXTS))]
    return out


NAMES = ["bert", "gpt2", "llama", "mistral", "t5", "bart", "gemma2", "gpt_oss", "qwen2"]


@pytest.mark.parametrize("name", NAMES)
def test_batch_and_lazy_weights_equal_each_sentences_eager_weights(batched, name):
    _model, batch, eager = batched[name]
    trace = batch.traces[0]
    assert set(trace.names) == set(eager[0])
    for kind in trace.names:
        n_q, n_k = batch.lengths(kind)
        for layer in range(trace.layers(kind)):
            w = batch.weights(kind, layer).numpy()  # [sentence, head, query, key]
            assert w.shape == (len(TEXTS), trace.n_heads, n_q.max(), n_k.max())
            for b, expected in enumerate(eager):
                what = f"{name} {kind} layer {layer} sentence {b}"
                np.testing.assert_allclose(w[b, :, :n_q[b], :n_k[b]], expected[kind][layer],
                                           atol=1e-5, rtol=0, err_msg=f"batch: {what}")
                assert not w[b, :, n_q[b]:].any() and not w[b, :, :, n_k[b]:].any(), what
                # the lazy store of the same run, in blocks of a few rows
                lazy = blocked.assemble(
                    batch.traces[b].blocks(kind, layer, budget=600), trace.n_heads,
                    range(n_q[b]), n_k[b])
                np.testing.assert_allclose(lazy, expected[kind][layer], atol=1e-5, rtol=0,
                                           err_msg=f"lazy: {what}")
    lengths = batch.lengths(trace.names[0])[0]
    assert len(set(lengths)) > 1 and lengths.argmax() != 0  # the batch was padded


def _calls(batch, kind: str) -> list[Call]:
    return batch.traces[0].attention[kind].calls


def _without(batch, kind: str, layer: int, **change) -> np.ndarray:
    """The batch's weights of one layer recomputed with a feature of its call taken away."""
    stores = [t.attention[kind] for t in batch.traces]
    call = dataclasses.replace(_calls(batch, kind)[layer], **change)
    return padded_weights(call, [s.q_index for s in stores], [s.k_index for s in stores]).numpy()


def _largest_change(batch, kind: str, **change) -> float:
    return max(float(np.abs(_without(batch, kind, layer, **change)
                            - batch.weights(kind, layer).numpy()).max())
               for layer in range(batch.traces[0].layers(kind)))


def test_every_feature_of_a_call_was_recorded_and_matters_to_the_weights(batched):
    """The eager comparison above proves each feature only if the calls hold it and the
    weights change without it."""
    t5 = batched["t5"][1]
    for kind in ("encoder.self", "decoder.self"):
        assert all(c.bias is not None for c in _calls(t5, kind))
        assert _largest_change(t5, kind, bias=None) > 1e-3, kind
    gemma = batched["gemma2"][1]
    assert all(c.softcap == 2.0 for c in _calls(gemma, "decoder.self"))
    assert _largest_change(gemma, "decoder.self", softcap=None) > 1e-2
    oss = batched["gpt_oss"][1]
    assert all(c.sinks is not None for c in _calls(oss, "decoder.self"))
    assert _largest_change(oss, "decoder.self", sinks=None) > 1e-2
    assert (oss.weights("decoder.self", 0).sum(-1)[1] < 0.99).all()  # the sinks' share
    for name, sliding in (("mistral", [0, 1]), ("gemma2", [0]), ("gpt_oss", [0]),
                          ("qwen2", [1])):
        batch = batched[name][1]
        long = int(batch.lengths("decoder.self")[0].argmax())
        store = batch.traces[long].attention["decoder.self"]
        n = store.shape[2]
        q, k = np.indices((n, n))
        for layer in range(store.shape[0]):
            window = (k <= q) & ((q - k < WINDOW) if layer in sliding else True)
            np.testing.assert_array_equal(store.mask(layer), window, err_msg=f"{name} {layer}")
    assert len(_calls(batched["llama"][1], "decoder.self")[0].k[0]) == 2  # grouped K/V heads


# --- hand-built calls against the formula in numpy --------------------------------------------

def _numpy_weights(call: Call, b: int) -> np.ndarray:
    """Sequence ``b``'s weights by the formula, in float64 numpy: ``[head, query, key]``."""
    n_heads, n_kv = call.q.shape[1], call.k.shape[1]
    out = []
    for h in range(n_heads):
        s = (call.q[b, h].astype(np.float64) @ call.k[b, h // (n_heads // n_kv)].T) * call.scaling
        n_q, n_k = s.shape
        if call.bias is not None:
            s = s + call.bias[min(b, len(call.bias) - 1), min(h, call.bias.shape[1] - 1)]
        if call.softcap:
            s = np.tanh(s / call.softcap) * call.softcap
        if call.mask is None:
            allowed = np.ones((n_q, n_k), bool)
            if call.causal:
                allowed = np.tril(allowed, k=n_k - n_q)
        else:
            mask = call.mask[min(b, len(call.mask) - 1), 0]
            if mask.dtype == bool:
                allowed = mask
            else:
                s = s + mask
                allowed = mask > -1e30
        s = np.where(allowed, s, -np.inf)
        sink = -np.inf if call.sinks is None else float(call.sinks[h])
        top = np.maximum(s.max(-1, keepdims=True), sink)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(s - top)
        total = e.sum(-1, keepdims=True) + np.exp(sink - top)
        out.append(np.divide(e, total, out=np.zeros_like(e), where=total > 0))
    return np.stack(out)


def _hand_built_calls():
    """Calls as the models record them, for a batch of three sequences of 13 positions: the
    real positions of each (the third one left-padded, so that they are not a prefix)."""
    rng = np.random.default_rng(3)
    b, n, d, heads, kv = 3, 13, 8, 4, 2
    f32 = np.float32
    index = [np.arange(9), np.arange(13), np.arange(4, 13)]
    real = np.zeros((b, n), bool)
    for s, i in enumerate(index):
        real[s, i] = True
    q_pos, k_pos = np.indices((n, n))
    causal = k_pos <= q_pos
    window = causal & (q_pos - k_pos < 3)
    padded = real[:, None, None, :]  # [batch, 1, 1, key]: padding keys forbidden
    bool_mask = window[None, None] & padded
    bool_mask[1, 0, 5] = False  # a real row that may see no key: all 0, not NaN
    additive = np.where(causal[None, None] & padded, rng.normal(0, 0.1, (b, 1, n, n)),
                        np.finfo(f32).min).astype(f32)

    def call(**kw):
        return Call("layer", q=rng.normal(size=(b, heads, n, d)).astype(f32),
                    k=rng.normal(size=(b, kv, n, d)).astype(f32), scaling=d ** -0.5,
                    **{"mask": None, "causal": False, **kw})

    calls = {
        "bias, soft-capping, additive mask, sinks": call(
            mask=additive, bias=rng.normal(size=(b, heads, n, n)).astype(f32), softcap=3.0,
            sinks=rng.normal(size=heads).astype(f32)),
        "sliding window and padding, bool mask, a dead row": call(mask=bool_mask),
        "sliding window with sinks": call(mask=bool_mask, sinks=rng.normal(size=heads)
                                          .astype(f32)),
        "causal without a mask, shared bias": call(
            causal=True, bias=rng.normal(size=(1, heads, n, n)).astype(f32)),
        "no mask at all, one bias for every head": call(
            bias=rng.normal(size=(1, 1, n, n)).astype(f32)),
    }
    return calls, index


@pytest.mark.parametrize("case", list(_hand_built_calls()[0]))
def test_both_paths_follow_the_formula_on_hand_built_calls(case):
    calls, index = _hand_built_calls()
    call = calls[case]
    if call.mask is None:  # the recorded shapes say every position is real
        index = [np.arange(call.q.shape[2])] * len(index)
    batch = padded_weights(call, index, index).numpy()
    for b, i in enumerate(index):
        expected = _numpy_weights(call, b)[:, i][:, :, i]
        n = len(i)
        np.testing.assert_allclose(batch[b, :, :n, :n], expected, atol=1e-6, rtol=0,
                                   err_msg=f"batch {case} {b}")
        assert not batch[b, :, n:].any() and not batch[b, :, :, n:].any()
        store = LazyAttention([call], b, i, i)
        for chosen in ([0, 1, 2, 3], [3, 0]):
            for budget in (200, 1 << 20):
                got = blocked.assemble(store.blocks(0, chosen, budget=budget, align=(2, 2)),
                                       len(chosen), range(n), n)
                np.testing.assert_allclose(got, expected[chosen], atol=1e-6, rtol=0,
                                           err_msg=f"lazy {case} {b} {chosen} {budget}")
        assert not np.isnan(batch).any()


# --- the one statistics kernel ----------------------------------------------------------------

def _numpy_stats(w: np.ndarray, same_axis: bool) -> dict[str, np.ndarray]:
    """The five statistics of one sentence's ``[head, query, key]`` weights, in numpy."""
    w = w.astype(np.float64)
    n_q, n_k = w.shape[1:]
    q_pos, k_pos = np.arange(n_q)[:, None], np.arange(n_k)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(w > 0, w * np.log(w), 0.0)
    nan = np.full(w.shape[0], np.nan)
    out = {"entropy": -plogp.sum(-1).mean(-1), "first_token": w[..., 0].mean(-1),
           "distance": nan, "self": nan, "previous_token": nan}
    if same_axis:
        out["distance"] = (w * np.abs(q_pos - k_pos)).sum(-1).mean(-1)
        out["self"] = np.diagonal(w, axis1=1, axis2=2).mean(-1)
        if n_q > 1:
            out["previous_token"] = np.diagonal(w, offset=-1, axis1=1, axis2=2).mean(-1)
    return out


@pytest.mark.parametrize("name", ["bert", "llama", "bart", "gpt_oss"])
def test_the_statistics_kernel_on_a_padded_batch_equals_each_sentences_statistics(batched,
                                                                                    name):
    _model, batch, _eager = batched[name]
    trace = batch.traces[0]
    for kind in trace.names:
        same_axis = kind.endswith(".self")
        n_q, _n_k = batch.lengths(kind)
        alone = [head_stats(t, kind) for t in batch.traces]  # the Head statistics page
        for layer in range(trace.layers(kind)):
            w = batch.weights(kind, layer)
            got = means(row_sums(w, 0, same_axis), n_q, same_axis)
            for b, t in enumerate(batch.traces):
                exact = _numpy_stats(t.layer_weights(kind, layer), same_axis)
                for key in STATS:
                    what = f"{name} {kind} layer {layer} sentence {b} {key}"
                    assert got[key].shape == (len(TEXTS), trace.n_heads)
                    np.testing.assert_allclose(got[key][b], exact[key], atol=1e-6, rtol=0,
                                               equal_nan=True, err_msg=what)
                    np.testing.assert_allclose(got[key][b], alone[b][key][layer], atol=1e-6,
                                               rtol=0, equal_nan=True, err_msg=what)


def test_row_sums_of_blocks_from_any_start_add_up_to_the_whole():
    rng = np.random.default_rng(5)
    w = rng.dirichlet(np.ones(11), size=(3, 9)).astype(np.float32)  # [head, query, key]
    w[:, 2, 4] = 0.0  # an exact zero: 0 · log 0 = 0
    tensor = torch.from_numpy(w)
    for same_axis in (True, False):
        whole = row_sums(tensor, 0, same_axis)
        for cuts in ([0, 9], [0, 1, 9], [0, 4, 5, 9], [0, 3, 6, 9]):
            parts = [row_sums(tensor[:, a:b], a, same_axis) for a, b in zip(cuts, cuts[1:])]
            for key, value in whole.items():
                np.testing.assert_allclose(sum(p[key] for p in parts).numpy(), value.numpy(),
                                           atol=1e-9, err_msg=f"{cuts} {key}")
        got = means(whole, 9, same_axis)
        for key, value in _numpy_stats(w, same_axis).items():
            np.testing.assert_allclose(got[key], value, atol=1e-6, equal_nan=True, err_msg=key)
    one_row = means(row_sums(tensor[:, :1], 0, True), 1, True)
    assert np.isnan(one_row["previous_token"]).all()
