"""Models load in the precision asked for (float32, bfloat16, float16; ``auto``: float32 on the
CPU) and their traces stay exact: weights computed in float32 from the queries and keys the model
computed in its precision, equal to transformers' own eager weights of the same model in the same
precision (to that precision's rounding), rows summing to 1 in every precision. A model larger
than the memory available is refused before it loads, and one spread over several places by
accelerate traces as it does on one device."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from model import ModelLoadError, load
from model.device import resolve_dtype
from model.hf import adapter as hf_adapter
from model.hf.adapter import HFModel, weight_count

TEXT = "The cat chased the mouse because it was hungry."
TARGET = "the cat sat"  # T5's teacher-forced target
ARCHITECTURES = ("llama", "gpt2", "bert", "t5")
HALF = ("bfloat16", "float16")
ROW_SUM_ATOL = 1e-6  # float32 accumulation, in every precision
# Against transformers' eager output_attentions of the same model in the same precision. Eager
# rounds its scores (bfloat16: q·kᵀ is returned in bfloat16) and its weights to the model's
# precision, we compute both in float32 from the same queries and keys; the difference is that
# rounding. Measured on the tiny checkpoints with TEXT (max |ours - eager| over every layer and
# head): bfloat16 llama 1.6e-3, gpt2 1.7e-3, bert 2.5e-4, t5 5.8e-3 (its position bias is in
# bfloat16 too); float16 llama 2.4e-4, gpt2 2.4e-4, bert 3.1e-5, t5 7.0e-4. The tolerances are a
# little above the worst.
EAGER_ATOL = {"bfloat16": 1e-2, "float16": 2e-3}
# Against the float32 trace of the same checkpoint: the weights themselves are rounded to the
# precision, so the traces agree within it, taken as two of its epsilons (bfloat16 2⁻⁷ · 2 =
# 0.016, float16 2⁻¹⁰ · 2 = 0.002). Measured: bfloat16 at most 4.0e-3 (t5; llama, gpt2, bert
# under 7e-5), float16 at most 6.2e-4 (t5).
FLOAT32_ATOL = {name: 2 * torch.finfo(getattr(torch, name)).eps for name in HALF}


def _eager_weights(path: Path, name: str, dtype: str, inputs: dict) -> dict[str, np.ndarray]:
    """transformers' own eager ``output_attentions`` of the checkpoint loaded in ``dtype``:
    ``kind -> [layer, head, query, key]`` float32 (first sequence)."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    auto = {"llama": AutoModelForCausalLM, "gpt2": AutoModelForCausalLM, "bert": AutoModel,
            "t5": AutoModelForSeq2SeqLM}[name]
    model = auto.from_pretrained(path, dtype=getattr(torch, dtype),
                                 attn_implementation="eager").eval()
    assert model.dtype == getattr(torch, dtype)
    with torch.inference_mode():
        out = model(**inputs, output_attentions=True)
    fields = {"encoder.self": "encoder_attentions", "decoder.self": "decoder_attentions",
              "decoder.cross": "cross_attentions"} if name == "t5" else \
        {"encoder.self" if name == "bert" else "decoder.self": "attentions"}
    return {kind: torch.stack(getattr(out, field))[:, 0].float().numpy()
            for kind, field in fields.items()}


@pytest.fixture(scope="module")
def float32_traces(tiny_checkpoints):
    return {name: load(str(tiny_checkpoints[name]), device="cpu", dtype="float32").trace(
        TEXT, target=TARGET if name == "t5" else None) for name in ARCHITECTURES}


def test_auto_is_float32_on_the_cpu_and_half_precision_on_cuda():
    assert resolve_dtype("auto", "cpu") is torch.float32
    assert resolve_dtype(None, "cpu") is torch.float32
    assert resolve_dtype("bfloat16", "cpu") is torch.bfloat16
    assert resolve_dtype(" float16 ", "cpu") is torch.float16
    assert resolve_dtype(torch.float32) is torch.float32
    assert resolve_dtype("torch.bfloat16") is torch.bfloat16


def test_auto_on_cuda_is_bfloat16_where_the_gpu_supports_it_else_float16(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_dtype("auto", cuda) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_dtype("auto", cuda) is torch.float16


@pytest.mark.parametrize("dtype", ["float8", "int8", "half", "", torch.float64])
def test_an_unknown_precision_is_refused_with_the_ones_there_are(dtype):
    with pytest.raises(ValueError, match="use auto, float32, bfloat16 or float16"):
        resolve_dtype(dtype, "cpu")
    with pytest.raises(ValueError, match="use auto, float32, bfloat16 or float16"):
        load("own-random", device="cpu", dtype=dtype)


def test_auto_loads_float32_on_the_cpu(tiny_checkpoints):
    loaded = load(str(tiny_checkpoints["llama"]), device="cpu")
    assert loaded.dtype == "float32" and loaded.model.dtype is torch.float32
    assert loaded.trace(TEXT).dtype == "float32"


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_half_precision_traces_equal_eager_in_that_precision_and_the_float32_trace(
        tiny_checkpoints, float32_traces, name, dtype):
    path = tiny_checkpoints[name]
    loaded = load(str(path), device="cpu", dtype=dtype)
    assert loaded.dtype == dtype and loaded.route == "recorded", loaded.route_reason
    kept = set(getattr(loaded.module, "_keep_in_fp32_modules", None) or ())  # T5's wo, in float16
    assert {p.dtype for n, p in loaded.module.named_parameters()
            if not kept & set(n.split("."))} == {getattr(torch, dtype)}
    trace = loaded.trace(TEXT, target=TARGET if name == "t5" else None)
    assert trace.dtype == dtype
    inputs = loaded.prepare_inputs([TEXT], [TARGET] if name == "t5" else None)
    eager = _eager_weights(path, name, dtype, inputs)
    assert set(eager) == set(trace.names)
    for kind in trace.names:
        got = trace.stack(kind)  # [layer, head, query, key]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=0, atol=ROW_SUM_ATOL)
        np.testing.assert_allclose(got, eager[kind], rtol=0, atol=EAGER_ATOL[dtype])
        np.testing.assert_allclose(got, float32_traces[name].stack(kind), rtol=0,
                                   atol=FLOAT32_ATOL[dtype])
        head = trace.weights(kind, layer=1, head=2)
        np.testing.assert_allclose(head.sum(-1), 1.0, rtol=0, atol=ROW_SUM_ATOL)


@pytest.mark.parametrize("dtype", HALF)
def test_queries_and_keys_are_kept_in_the_models_precision(tiny_checkpoints, dtype):
    loaded = load(str(tiny_checkpoints["llama"]), device="cpu", dtype=dtype)
    calls = loaded._captured(loaded.prepare_inputs([TEXT]))
    stored = np.uint16 if dtype == "bfloat16" else np.float16  # bfloat16: its raw bits
    for call in calls:
        assert call.dtype == dtype and call.q.dtype == stored and call.k.dtype == stored
        assert not call.q.flags.writeable
    # the memory estimate counts them at their size: half a float32 trace's queries and keys
    from model.budget import lazy_bytes

    n = loaded.count_tokens(TEXT)
    assert loaded.memory_needed(n) == lazy_bytes(loaded.dims, loaded.family, n, element_bytes=2)
    full = load(str(tiny_checkpoints["llama"]), device="cpu", dtype="float32")
    assert full.memory_needed(n) == lazy_bytes(full.dims, full.family, n, element_bytes=4)


@pytest.mark.parametrize("dtype", HALF)
def test_a_padded_batch_in_half_precision_equals_each_sentences_trace(tiny_checkpoints, dtype):
    loaded = load(str(tiny_checkpoints["gpt2"]), device="cpu", dtype=dtype)
    texts = [TEXT, "The cat sat on the mat."]
    batch = loaded.attention_batch(texts)
    for layer in range(2):
        weights = batch.weights("decoder.self", layer).numpy()  # [batch, head, query, key]
        for b, text in enumerate(texts):
            alone = loaded.trace(text).stack("decoder.self")[layer]
            n = alone.shape[-1]
            np.testing.assert_allclose(weights[b, :, :n, :n], alone, rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", HALF)
def test_the_own_models_run_in_half_precision_with_float32_weights(own_random, dtype):
    from model.own.translator import Translator

    half = load("own-random", device="cpu", dtype=dtype)
    assert half.dtype == dtype and own_random.dtype == "float32"
    trace = half.trace("The cat sat on the mat")
    full = own_random.trace("The cat sat on the mat")
    assert trace.dtype == dtype
    for kind in trace.names:
        got = trace.stack(kind)
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=0, atol=ROW_SUM_ATOL)
        np.testing.assert_allclose(got, full.stack(kind), rtol=0, atol=FLOAT32_ATOL[dtype])
    translator = Translator.from_files(device="cpu", dtype=dtype)
    assert translator.dtype == dtype
    translated = translator.trace("the cat sat on the mat")
    np.testing.assert_allclose(translated.stack("decoder.cross").sum(-1), 1.0, rtol=0,
                               atol=ROW_SUM_ATOL)


def test_the_command_line_exports_in_the_precision_asked_for(tiny_checkpoints, tmp_path,
                                                             capsys):
    from model.__main__ import main

    out = tmp_path / "trace.npz"
    assert main(["export", "--model", str(tiny_checkpoints["llama"]), "--text", TEXT,
                 "--out", str(out), "--device", "cpu", "--dtype", "bfloat16"]) == 0
    with np.load(out) as data:
        meta = json.loads(str(data["meta"]))
        assert meta["dtype"] == "bfloat16" and data["decoder.self"].dtype == np.float32
    assert main(["export", "--model", "own-random", "--text", TEXT, "--out",
                 str(tmp_path / "x.npz"), "--dtype", "float64"]) == 2
    assert "--dtype" in capsys.readouterr().err


# --- models larger than the machine, and spread over several places ---------------------------

def test_weights_are_counted_without_loading_them(tiny_checkpoints):
    for name in ARCHITECTURES:
        path = tiny_checkpoints[name]
        loaded = load(str(path), device="cpu")
        stored = {id(p): p.numel() for p in loaded.module.parameters()}
        from_headers = weight_count(str(path), True, loaded.config, loaded.family)
        from_config = weight_count(str(path), False, loaded.config, loaded.family)  # meta model
        assert from_config == sum(stored.values()), name
        assert from_headers in (from_config, from_config + loaded.config.vocab_size *
                                loaded.dims.d_model), name  # tied weights may be stored twice


def test_a_model_larger_than_the_memory_available_is_refused_before_it_loads(
        tiny_checkpoints, monkeypatch):
    path = tiny_checkpoints["llama"]
    count = weight_count(str(path), True, load(str(path), device="cpu").config,
                         load(str(path), device="cpu").family)
    monkeypatch.setattr(hf_adapter, "available_memory", lambda *args, **kwargs: 1000)
    read = []
    real = hf_adapter.from_pretrained

    def counting(loader, *args, **kwargs):
        read.append(loader.__name__)
        return real(loader, *args, **kwargs)

    monkeypatch.setattr(hf_adapter, "from_pretrained", counting)
    with pytest.raises(ModelLoadError) as caught:
        load(str(path), device="cpu", dtype="bfloat16")
    message = str(caught.value)
    assert "too large for this machine" in message
    assert f"{count * 2 / 1e6:.1f} MB in bfloat16" in message
    assert "0.0 MB available" in message and "available RAM" in message
    assert read == ["AutoConfig"]  # no tokenizer, no weights
    monkeypatch.setattr(hf_adapter, "available_memory", lambda *args, **kwargs: count * 3)
    assert load(str(path), device="cpu", dtype="bfloat16").dtype == "bfloat16"  # 2 bytes fit
    with pytest.raises(ModelLoadError, match="in float32"):
        load(str(path), device="cpu", dtype="float32")  # 4 do not


def test_a_model_spread_over_the_cpu_and_disk_traces_as_on_one_device(tiny_checkpoints,
                                                                      tmp_path):
    path = tiny_checkpoints["llama"]
    one = load(str(path), device="cpu")
    placement = {"model.embed_tokens": "cpu", "model.rotary_emb": "cpu", "model.layers.0": "cpu",
                 "model.layers.1": "disk", "model.norm": "disk", "lm_head": "disk"}
    spread = HFModel.load(str(path), device="cpu", device_map=placement,
                          offload_folder=str(tmp_path / "offload"))
    assert spread.spread and not one.spread and spread.route == "recorded"
    hooked = [m for m in spread.module.modules() if hasattr(m, "_hf_hook")]
    assert hooked, "accelerate's hooks place the layers"
    assert any(p.device.type == "meta" for p in spread.module.parameters())  # on disk
    a, b = one.trace(TEXT), spread.trace(TEXT)
    assert b.device == "cpu+disk" and a.device == "cpu"
    np.testing.assert_array_equal(b.stack("decoder.self"), a.stack("decoder.self"))
    store = b.attention["decoder.self"]
    assert [store.device_of(layer).type for layer in range(2)] == ["cpu", "cpu"]
    batch = spread.attention_batch([TEXT, "The cat sat on the mat."])
    alone = one.attention_batch([TEXT, "The cat sat on the mat."])
    for layer in range(2):
        np.testing.assert_array_equal(batch.weights("decoder.self", layer).numpy(),
                                      alone.weights("decoder.self", layer).numpy())


# --- real sizes --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_gguf_model_loads_dequantised_to_bfloat16(tmp_path, monkeypatch):
    from safetensors import safe_open

    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(tmp_path / "cache"))
    loaded = load("smollm2", device="cpu", dtype="bfloat16")
    assert loaded.dtype == "bfloat16" and loaded.route == "recorded", loaded.route_reason
    assert {p.dtype for p in loaded.module.parameters()} == {torch.bfloat16}
    (folder,) = [p for p in (tmp_path / "cache" / "gguf").iterdir() if p.is_dir()]
    assert folder.name.endswith("-bfloat16")  # its own cache, beside a float32 one
    with safe_open(str(folder / "model.safetensors"), "pt") as stored:
        assert stored.get_slice(next(iter(stored.keys()))).get_dtype() == "BF16"
    trace = loaded.trace("The cat sat on the mat.")
    np.testing.assert_allclose(trace.stack("decoder.self").sum(-1), 1.0, rtol=0,
                               atol=ROW_SUM_ATOL)


@pytest.mark.slow
def test_a_billion_parameter_model_takes_half_the_memory_in_bfloat16(tmp_path):
    import shutil

    from bench import precision_memory

    if shutil.disk_usage(tmp_path).free < 6e9:
        pytest.skip("needs 6 GB of free disk for a 2 GB checkpoint")
    path = precision_memory.build(tmp_path / "llama")  # ~1e9 parameters, saved in bfloat16
    result = precision_memory.compare(path)
    full, half = result["float32"], result["bfloat16"]
    assert full["dtype"] == "float32" and half["dtype"] == "bfloat16"
    assert 0.95e9 < full["parameters"] == half["parameters"] < 1.1e9
    assert result["ratio_parameter_bytes"] == 0.5
    assert full["parameter_bytes"] / 4 == full["parameters"]
    # what the process holds once loaded: half (measured 2.01 GB against 3.93 GB, 0.51)
    assert 0.4 < result["ratio_resident_rise"] < 0.65, result
    # at its peak a float32 load also maps the 2 GB bfloat16 file it casts from (measured 5.84
    # GB against 2.01 GB, 0.34); a bfloat16 load holds little more than its weights
    assert 0.25 < result["ratio_peak_rise"] < 0.65, result
    assert half["peak_rise"] < 1.2 * half["parameter_bytes"], result
