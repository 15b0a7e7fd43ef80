"""The written seams: both adapters are LoadedModels, every store an AttentionStore, and every
trace carries the same facts, whichever adapter made it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from model import Family, LoadedModel, ModelLoadError, load
from model.analysis.costs import parameter_split
from model.analysis.positions import model_positions
from model.meta import FACT_KEYS, ModelDims, Step
from model.store import AttentionStore, DenseStore
from model.trace import AttentionTrace
from tests.helpers import SEED_SENTENCE, tiny_own_model

DATA = Path(__file__).resolve().parents[1] / "data"
# (n_encoder_layers, n_decoder_layers, d_head, d_ff, n_kv_heads) of the tiny checkpoints
TINY = {"bert": (2, 0, 8, 64, 4), "gpt2": (0, 2, 8, 128, 4), "llama": (0, 2, 8, 64, 2),
        "mistral": (0, 2, 8, 64, 2), "t5": (2, 2, 8, 64, 4), "bart": (2, 2, 8, 64, 4)}


@pytest.fixture(scope="module")
def tiny_models(tiny_checkpoints):
    return {name: load(str(path), device="cpu") for name, path in tiny_checkpoints.items()}


def _models(own_random, tiny_models):
    return {"own-random": own_random, "tiny-decoder": tiny_own_model("decoder-only", "rope"),
            **tiny_models}


def test_every_adapter_is_a_loaded_model_with_the_facts_of_its_traces(own_random, tiny_models):
    for name, loaded in _models(own_random, tiny_models).items():
        assert isinstance(loaded, LoadedModel), name
        assert isinstance(loaded.family, Family) and isinstance(loaded.dims, ModelDims), name
        trace = loaded.trace(SEED_SENTENCE)
        assert trace.family is loaded.family, name
        assert set(FACT_KEYS) <= set(trace.meta), name  # the same facts for every model
        assert trace.dims == loaded.dims, name
        assert trace.positions == loaded.positions, name
        assert (trace.n_heads, trace.n_kv_heads) == (loaded.dims.n_heads, loaded.dims.n_kv_heads)
        for kind in trace.names:
            assert isinstance(trace.attention[kind], AttentionStore), (name, kind)
            stack = kind.split(".")[0]  # decoder.cross lives in the decoder's layers
            assert trace.layers(kind) == loaded.dims.layers(stack), (name, kind)


def test_checkpoint_configs_are_read_into_dims_per_stack(tiny_models):
    for name, (enc, dec, d_head, d_ff, kv) in TINY.items():
        d = tiny_models[name].dims
        assert (d.n_encoder_layers, d.n_decoder_layers, d.d_head, d.d_ff, d.n_kv_heads) == (
            enc, dec, d_head, d_ff, kv), name
        assert d.d_model == 32 and d.n_heads == 4, name
    assert tiny_models["mistral"].positions.sliding_window == 4
    assert tiny_models["llama"].positions.scheme == "rope"
    assert tiny_models["t5"].positions.scheme == "relative bias"
    assert tiny_models["bert"].positions.max_positions == 128


# (attention, ffn, embeddings, other) as the split by parameter names gave them before the
# interface. BERT's attention, for one: 2 layers × (4 linear maps 32×32 + 32, and the LayerNorm
# of its output block, 64) = 8,576; its FFN 2 × (32×64 + 64 + 64×32 + 32) = 8,384.
SPLITS = {"bert": (8576, 8384, 15392, 1184), "gpt2": (8448, 16704, 15264, 320),
          "llama": (6144, 12288, 11168, 11328), "mistral": (6144, 12288, 11168, 11328),
          "t5": (24640, 16384, 11168, 384), "bart": (25344, 16768, 19488, 768)}


def test_parameter_split_counts_every_parameter_once_by_its_kind(tiny_models):
    for name, loaded in tiny_models.items():
        split = parameter_split(loaded)
        kinds = (split["attention"], split["ffn"], split["embeddings"], split["other"])
        assert kinds == SPLITS[name], name
        unique = {id(p): p.numel() for p in loaded.module.parameters()}
        assert split["total"] == sum(unique.values()), name  # tied embeddings count once


def test_the_models_own_positions_are_read_through_the_interface(own_random, tiny_models):
    assert set(model_positions(own_random)) == {"scheme", "table"}
    rope = model_positions(tiny_own_model("decoder-only", "rope"))
    assert rope["scheme"] == "rope" and rope["theta"] == 10000.0 and len(rope["periods"]) == 4
    gpt2 = model_positions(tiny_models["gpt2"], n_positions=10)
    assert gpt2["parameter"].endswith("wpe.weight") and gpt2["similarity"].shape == (10, 10)
    assert model_positions(tiny_models["t5"]) == {"scheme": "relative bias"}


def test_a_config_without_layers_is_refused_before_its_weights_load(tiny_checkpoints, tmp_path):
    path = shutil.copytree(tiny_checkpoints["llama"], tmp_path / "no-layers")
    config = json.loads((path / "config.json").read_text())
    config["num_hidden_layers"] = 0
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelLoadError, match="no layers"):
        load(str(path), device="cpu")


def test_family_is_typed_and_still_equals_its_name(seed_trace):
    assert seed_trace.family is Family.ENCODER_DECODER
    assert seed_trace.family == "encoder-decoder" and f"{seed_trace.family}" == "encoder-decoder"
    assert Family.DECODER_ONLY.kinds == ("decoder.self",)
    assert Family.ENCODER_DECODER.axes("decoder.cross") == ("target", "source")
    with pytest.raises(ValueError, match="family must be one of"):
        Family.parse("encoder-encoder")


def _softmax(x: np.ndarray) -> np.ndarray:
    top = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0))
    return e / e.sum(-1, keepdims=True)


def test_dense_and_lazy_stores_answer_the_same_questions(seed_trace, tiny_models):
    mistral = tiny_models["mistral"].trace("A dog slept under the table because it was tired.")
    n = len(mistral.tokens)
    q, k = np.indices((n, n))
    rules = {  # (trace, kind) -> the mask it must report
        ("own", "encoder.self"): np.ones((6, 6), bool),
        ("own", "decoder.self"): np.tril(np.ones((7, 7), bool)),
        ("own", "decoder.cross"): np.ones((7, 6), bool),
        ("mistral", "decoder.self"): (k <= q) & (q - k < 4),  # causal, a window of 4
    }
    for label, trace in (("own", seed_trace), ("mistral", mistral)):
        for name in trace.names:
            store = trace.attention[name]
            for layer in range(store.shape[0]):
                np.testing.assert_array_equal(store.stack()[layer], store.layer(layer))
                mask = store.mask(layer)
                np.testing.assert_array_equal(mask, rules[label, name])
                for head in range(store.shape[1]):
                    np.testing.assert_array_equal(store.layer(layer)[head], store[layer, head])
                    softmax = _softmax(np.where(mask, store.scores(layer, head), -np.inf))
                    np.testing.assert_allclose(softmax, store[layer, head], atol=1e-6)


def test_a_store_keeping_weights_only_says_it_has_no_scores():
    weights = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    with pytest.raises(ValueError, match="holds no scores"):
        DenseStore(weights).scores(0, 0)


def test_special_positions_are_a_validated_field():
    weights = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    common = dict(model="m", family="encoder-only", attention={"encoder.self": weights},
                  n_heads=1, n_kv_heads=1, tokens=["[CLS]", "a"], ids=[1, 2])
    trace = AttentionTrace(**common, special_positions={"tokens": [0]})
    assert trace.special("encoder.self") == ([0], [0])
    with pytest.raises(ValueError, match="fall outside"):
        AttentionTrace(**common, special_positions={"tokens": [2]})
    with pytest.raises(ValueError, match="token axes"):
        AttentionTrace(**common, special_positions={"source": [0]})
    with pytest.raises(TypeError, match="AttentionStore"):
        AttentionTrace(**{**common, "attention": {"encoder.self": [[[[1.0]]]]}})


def test_steps_are_typed_and_survive_the_export(tmp_path):
    trace = load("own-translator", device="cpu").trace(SEED_SENTENCE)
    assert all(isinstance(step, Step) for step in trace.steps)
    again = AttentionTrace.load(trace.save(tmp_path / "t.npz"))
    assert again.steps == trace.steps
    assert again.special_positions == trace.special_positions == {"source": (),
                                                                  "target": (0,)}
    assert again.dims == trace.dims


def test_every_trace_exports_the_same_meta_keys(own_random, tiny_models, tmp_path):
    expected = {*FACT_KEYS, "model", "family", "n_layers", "layers", "n_heads", "n_kv_heads",
                "positional", "device", "dtype", "special", "unknown", "steps"}
    for name, loaded in _models(own_random, tiny_models).items():
        path = loaded.trace(SEED_SENTENCE).save(tmp_path / f"{name}.npz")
        with np.load(path) as data:
            assert set(json.loads(str(data["meta"]))) == expected, name
    with np.load(tmp_path / "llama.npz") as data:
        assert json.loads(str(data["meta"]))["model_type"] == "llama"


def test_exports_written_before_the_interface_still_load():
    """tests/data/*-v1.npz were written by the code of commit 41c73e7."""
    translator = AttentionTrace.load(DATA / "own-translator-v1.npz")
    assert [step.token for step in translator.steps] == ["猫", "坐", "在", "垫子", "上", "<eos>"]
    assert translator.steps[3].top_k[0][0] == "垫子"
    assert translator.special_positions == {"source": (), "target": (0,)}
    assert translator.dims == load("own-translator", device="cpu").dims
    mistral = AttentionTrace.load(DATA / "tiny-mistral-v1.npz")
    n = len(mistral.tokens)
    q, k = np.indices((n, n))
    np.testing.assert_array_equal(mistral.mask("decoder.self", 1), (k <= q) & (q - k < 4))
    assert mistral.meta["model_type"] == "mistral" and mistral.positions.rope_theta == 10000.0
    with pytest.raises(ValueError, match="holds no scores"):
        mistral.scores("decoder.self", 0, 0)


def test_special_positions_given_the_old_way_in_meta_are_kept(tmp_path):
    weights = np.full((1, 1, 2, 2), 0.5, dtype=np.float32)
    trace = AttentionTrace(model="m", family="encoder-only", attention={"encoder.self": weights},
                           n_heads=1, n_kv_heads=1, tokens=["[CLS]", "a"], ids=[1, 2],
                           meta={"special": {"tokens": [0]}})
    assert trace.special("encoder.self") == ([0], [0])
    assert AttentionTrace.load(trace.save(tmp_path / "t.npz")).special_positions == {
        "tokens": (0,)}
