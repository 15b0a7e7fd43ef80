"""The bundled pretrained models: exact capture on a 20-token sentence, readable tokens."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM

from model import load
from model.hf.checkpoints import resolve

pytestmark = pytest.mark.slow
SENTENCE = "The cat chased the mouse because it was hungry, and then it sat on the warm mat."


@pytest.mark.parametrize("spec, auto, name", [
    ("minilm", AutoModel, "encoder.self"),
    ("smollm2", AutoModelForCausalLM, "decoder.self"),
])
def test_bundled_model_capture_equals_eager_output_attentions(spec, auto, name):
    model = load(spec, device="cpu")
    trace = model.trace(SENTENCE)
    n = len(trace.tokens)
    assert 18 <= n <= 24  # a sentence of about 20 tokens
    eager = auto.from_pretrained(resolve(spec)[0], attn_implementation="eager",
                                 dtype=torch.float32).eval()
    inputs = model.prepare_inputs([SENTENCE])
    with torch.inference_mode():
        attentions = eager(**inputs, output_attentions=True).attentions
    expected = torch.stack(attentions)[:, 0].numpy()  # [layer, head, query, key]
    np.testing.assert_allclose(trace.stack(name), expected, atol=1e-5, rtol=0)


def test_smollm2_is_a_grouped_query_llama_with_readable_tokens():
    trace = load("smollm2", device="cpu").trace("The cat 猫 😀")
    assert (trace.n_layers, trace.n_heads, trace.n_kv_heads) == (30, 9, 3)
    assert trace.positional == "rope" and trace.meta["rope_theta"] == 100000.0
    labels = list(trace.tokens)
    assert labels[:2] == ["The", " cat"]
    assert any(label.startswith(" 猫[1/") for label in labels)
    assert any("😀[" in label for label in labels)
    assert not any("Ġ" in label for label in labels)


def test_minilm_marks_its_special_tokens():
    trace = load("minilm", device="cpu").trace("The cat sat on the mat")
    assert list(trace.tokens) == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]
    assert trace.special_positions == {"tokens": (0, 7)}
    assert trace.special("encoder.self") == ([0, 7], [0, 7])
    assert (trace.n_layers, trace.n_heads) == (6, 12)
