"""Pretrained-checkpoint capture equals transformers' own eager output_attentions."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

from model import ModelLoadError, load
from model.hf import HFModel
from model.hf.config import detect_family
from model.hf.labels import display_tokens

TEXTS = ["The cat sat on the mat.", "A dog slept under the table yesterday because it was tired."]
TARGETS = ["猫 坐 在 垫子 上", "emoji 😀"]
AUTO = {"encoder-only": AutoModel, "decoder-only": AutoModelForCausalLM,
        "encoder-decoder": AutoModelForSeq2SeqLM}


def _eager(path, family):
    return AUTO[family].from_pretrained(path, attn_implementation="eager").eval()


def _assert_equal_to_eager(model: HFModel, texts, targets=None):
    inputs = model.prepare_inputs(texts, targets)
    traces = model.trace_batch(texts, targets)
    eager = _eager(model.name, model.family)
    with torch.inference_mode():
        out = eager(**inputs, output_attentions=True, use_cache=False)
    if model.family == "encoder-decoder":
        reference = {"encoder.self": out.encoder_attentions,
                     "decoder.self": out.decoder_attentions,
                     "decoder.cross": out.cross_attentions}
        rows = {"encoder.self": ("attention_mask", "attention_mask"),
                "decoder.self": ("decoder_attention_mask", "decoder_attention_mask"),
                "decoder.cross": ("decoder_attention_mask", "attention_mask")}
    else:
        name = "encoder.self" if model.family == "encoder-only" else "decoder.self"
        reference = {name: out.attentions}
        rows = {name: ("attention_mask", "attention_mask")}
    for b, trace in enumerate(traces):
        assert set(trace.names) == set(reference)
        for name, layers in reference.items():
            q_real = inputs[rows[name][0]][b].bool()
            k_real = inputs[rows[name][1]][b].bool()
            expected = torch.stack(layers)[:, b][:, :, q_real][:, :, :, k_real].numpy()
            np.testing.assert_allclose(trace.stack(name), expected, atol=1e-5, rtol=0,
                                       err_msg=f"{model.name} {name} sequence {b}")
    return traces


@pytest.mark.parametrize("name, family", [
    ("bert", "encoder-only"), ("gpt2", "decoder-only"), ("llama", "decoder-only"),
    ("mistral", "decoder-only"), ("t5", "encoder-decoder"), ("bart", "encoder-decoder")])
def test_capture_equals_eager_output_attentions_with_padding(tiny_checkpoints, name, family):
    model = HFModel.load(str(tiny_checkpoints[name]), device="cpu")
    assert model.family == family
    assert model.model.config._attn_implementation.startswith("attention_explorer")
    targets = TARGETS if family == "encoder-decoder" else None
    traces = _assert_equal_to_eager(model, TEXTS, targets)
    lengths = [len(t.tokens if t.tokens is not None else t.source_tokens) for t in traces]
    assert lengths[0] < lengths[1]  # the first sequence was padded, its trace is not


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_greedy_output_of_encoder_decoder_models_is_traced_exactly(tiny_checkpoints, name):
    model = HFModel.load(str(tiny_checkpoints[name]), device="cpu")
    trace = _assert_equal_to_eager(model, TEXTS[:1])[0]
    with torch.inference_mode():  # transformers' own greedy output, independently
        generated = model.model.generate(**model.tokenizer(TEXTS[:1], return_tensors="pt"),
                                         max_new_tokens=64, do_sample=False, num_beams=1)[0]
    labels, _special = display_tokens(model.tokenizer, generated.tolist())
    # row t reads token t and writes token t + 1: the rows read all but the last token written
    assert list(trace.target_tokens) == labels[:-1]
    assert [step.token for step in trace.steps] == labels[1:]
    for step in trace.steps:  # greedy: each written token is the most probable one
        assert step.top_k[0][0] == step.token
        assert step.probability == pytest.approx(step.top_k[0][1])


def test_grouped_query_heads_are_expanded_and_their_sharing_reported(tiny_checkpoints):
    trace = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu").trace(TEXTS[0])
    assert (trace.n_heads, trace.n_kv_heads) == (4, 2)
    assert trace.stack("decoder.self").shape[1] == 4
    assert [trace.kv_head(h) for h in range(4)] == [0, 0, 1, 1]
    assert trace.positional == "rope"


def test_sliding_window_mask_is_reflected_exactly(tiny_checkpoints):
    trace = HFModel.load(str(tiny_checkpoints["mistral"]), device="cpu").trace(TEXTS[1])
    n = len(trace.tokens)
    q, k = np.indices((n, n))
    allowed = (k <= q) & (q - k < 4)
    np.testing.assert_array_equal(trace.mask("decoder.self"), allowed)
    stack = trace.stack("decoder.self")
    assert (stack[..., ~allowed] == 0).all() and (stack[..., allowed] > 0).all()


def test_family_is_detected_from_the_config(tiny_checkpoints):
    from transformers import AutoConfig

    families = {name: detect_family(AutoConfig.from_pretrained(path))
                for name, path in tiny_checkpoints.items()}
    assert families == {"bert": "encoder-only", "gpt2": "decoder-only", "llama": "decoder-only",
                        "mistral": "decoder-only", "t5": "encoder-decoder",
                        "bart": "encoder-decoder"}


def test_concurrent_traces_on_one_shared_model_never_mix(tiny_checkpoints):
    model = HFModel.load(str(tiny_checkpoints["llama"]), device="cpu")
    texts = [TEXTS[0], TEXTS[1], "猫 坐 在 垫子 上"]
    expected = {t: model.trace(t).stack("decoder.self") for t in texts}
    barrier = threading.Barrier(len(texts))
    failures: list = []

    def run(text):
        try:
            barrier.wait()
            for _ in range(10):
                np.testing.assert_array_equal(model.trace(text).stack("decoder.self"),
                                              expected[text])
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=run, args=(t,)) for t in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def test_export_of_a_local_checkpoint_expands_gqa_heads(tiny_checkpoints, tmp_path):
    trace = load(str(tiny_checkpoints["llama"]), device="cpu").trace(TEXTS[0])
    path = trace.save(tmp_path / "llama.npz")
    with np.load(path) as data:
        n = len(data["tokens"])
        assert data["decoder.self"].shape == (2, 4, n, n)
        assert data["decoder.self"].dtype == np.float32
        assert '"n_kv_heads": 2' in str(data["meta"])


def test_an_unreachable_hub_id_gives_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="not in the local Hugging Face cache"):
        load("someone/not-a-cached-model", device="cpu")


def test_bad_paths_are_explained():
    with pytest.raises(ModelLoadError, match="no GGUF file"):
        load("/nowhere/model.gguf")
    with pytest.raises(ModelLoadError, match="no checkpoint folder"):
        load("./no/such/folder")


@pytest.mark.parametrize("name", ["llama", "t5"])
def test_models_without_sdpa_are_captured_through_their_own_eager_function(tiny_checkpoints, name):
    from model.hf.capture import ATTN_EAGER

    model = HFModel.load(str(tiny_checkpoints[name]), device="cpu")
    model.model.set_attn_implementation(ATTN_EAGER)
    targets = TARGETS if model.family == "encoder-decoder" else None
    _assert_equal_to_eager(model, TEXTS, targets)


def test_text_longer_than_the_model_reads_is_refused_clearly(tiny_checkpoints):
    bert = HFModel.load(str(tiny_checkpoints["bert"]), device="cpu")
    with pytest.raises(ValueError, match="reads at most 128: shorten it"):
        bert.trace(" ".join(["cat"] * 400))
