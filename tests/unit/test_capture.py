"""Hook capture: exact patterns, hooks removed, no leaks between concurrent runs."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from model.own.hooks import HookPoint, capture
from tests.helpers import SEED_SENTENCE, tiny_own_model


def _hook_count(module: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) for m in module.modules() if isinstance(m, HookPoint))


def test_hooks_are_removed_after_capture():
    own = tiny_own_model()
    ids = torch.tensor([[4, 5, 6]])
    with torch.inference_mode(), capture(own.network) as store:
        assert _hook_count(own.network) > 0
        own.network(src_ids=ids, tgt_ids=ids)
    assert _hook_count(own.network) == 0
    assert "decoder.layers.1.cross_attn.hook_pattern" in store
    own.trace(SEED_SENTENCE)
    assert _hook_count(own.network) == 0


def test_hooks_are_removed_when_the_forward_pass_raises():
    own = tiny_own_model()
    too_long = torch.zeros(1, own.config.max_len + 1, dtype=torch.long)
    with pytest.raises(ValueError, match="longer than max_len"):
        with capture(own.network):
            own.network(src_ids=too_long, tgt_ids=too_long)
    assert _hook_count(own.network) == 0


def test_every_row_sums_to_one_and_causal_patterns_are_zero_above_the_diagonal(seed_trace):
    for name in seed_trace.names:
        stack = seed_trace.stack(name)
        np.testing.assert_allclose(stack.sum(-1), 1.0, atol=1e-5)
        assert (stack >= 0).all()
    causal = seed_trace.stack("decoder.self")
    upper = np.triu(np.ones(causal.shape[-2:], dtype=bool), k=1)
    assert (causal[..., upper] == 0).all()
    assert (causal[..., ~upper] > 0).all()


def test_captured_pattern_equals_a_manual_recomputation():
    own = tiny_own_model("encoder-only")
    trace = own.trace(SEED_SENTENCE)
    ids = torch.tensor([list(trace.ids)])
    net = own.network
    x = net.src_embed(ids)
    attn = net.encoder.layers[0].self_attn
    Q, K = attn.split_heads(attn.W_Q(x)), attn.split_heads(attn.W_K(x))
    expected = torch.softmax(Q @ K.transpose(-2, -1) / attn.d_head ** 0.5, dim=-1)[0]
    np.testing.assert_allclose(trace.weights("encoder.self", 0, 2), expected[2].detach().numpy(),
                               atol=1e-6)


def test_rope_decoder_only_model_traces_causal_patterns():
    trace = tiny_own_model("decoder-only", positional="rope").trace("a b c a b c")
    assert trace.names == ("decoder.self",)
    stack = trace.stack("decoder.self")
    assert stack.shape == (2, 4, 6, 6)
    assert (stack[..., ~trace.mask("decoder.self")] == 0).all()


def test_concurrent_traces_on_one_shared_model_do_not_mix():
    own = tiny_own_model()
    texts = ["The cat sat on the mat", "a b c d e f g h i j", "one two three"]
    expected = {text: own.trace(text) for text in texts}
    results: dict[tuple[int, int], object] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(texts))

    def run(worker: int, text: str) -> None:
        try:
            barrier.wait()
            for i in range(15):
                results[worker, i] = own.trace(text)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(w, t)) for w, t in enumerate(texts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for (worker, _), trace in results.items():
        reference = expected[texts[worker]]
        for name in reference.names:
            np.testing.assert_array_equal(trace.stack(name), reference.stack(name))
    assert _hook_count(own.network) == 0
