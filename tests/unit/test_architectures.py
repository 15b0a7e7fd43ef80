"""Every text architecture in transformers is exact or refused with a reason (the sweep of
:mod:`tests.architectures`), and the families that once went wrong, by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model import CaptureError, ModelLoadError, load
from tests.architectures import Row, build, check, model_types, sweep, sweep_root, table

# The sweep's floor: at least this many of the 217 text types are exact (the rest refused with
# a reason); it only ever goes up.
MIN_EXACT = 200


@pytest.fixture(scope="module")
def root():
    return sweep_root()


def _load(model_type: str, root):
    return load(str(build(model_type, model_types()[model_type], root)), device="cpu")


@pytest.mark.slow
def test_every_text_architecture_is_exact_or_refused_with_a_reason(root):
    rows = sweep(root=root)
    print("\n" + table(rows))
    failed = [row for row in rows if not row.passed]
    assert not failed, "\n".join(f"{r.model_type}: {r.status}: {r.detail}" for r in failed)
    for row in rows:
        if row.status in ("refused", "skipped"):
            assert len(row.detail.split()) >= 4, row  # a reason in words, not a bare class name
    exact = [row for row in rows if row.status == "exact"]
    assert len(exact) >= MIN_EXACT, table(rows).splitlines()[-1]


def test_a_row_passes_only_when_exact_refused_or_skipped():
    assert Row("x", "causal", "exact").passed and Row("x", "causal", "refused").passed
    assert not Row("x", "causal", "wrong").passed and not Row("x", "causal", "error").passed


@pytest.mark.parametrize("model_type", ["granite_swa", "granitemoe_swa"])
def test_sliding_windows_with_sinks_are_the_weights_the_model_mixes_its_values_with(
        model_type, root):
    """An independent reference: each head's weights times the layer's values give exactly the
    attention output the model passes to its output projection (its sink takes the rest)."""
    model = _load(model_type, root)
    for layer in model.model.model.layers:  # sinks of some weight (a random model's are 0)
        layer.self_attn.sinks.data.copy_(torch.linspace(0.0, 3.0, len(layer.self_attn.sinks)))
    text = "A dog slept under the table yesterday because it was tired."
    trace = model.trace(text)
    config = model.config
    seen = {}
    hooks = []
    for i, layer in enumerate(model.model.model.layers):
        attention = layer.self_attn
        hooks.append(attention.v_proj.register_forward_hook(
            lambda _m, _i, out, i=i: seen.__setitem__(("v", i), out.detach())))
        hooks.append(attention.o_proj.register_forward_pre_hook(
            lambda _m, args, i=i: seen.__setitem__(("o", i), args[0].detach())))
    try:
        with torch.inference_mode():
            model.model(**model.prepare_inputs([text]), use_cache=False)
    finally:
        for hook in hooks:
            hook.remove()
    d = config.hidden_size // config.num_attention_heads
    group = config.num_attention_heads // config.num_key_value_heads
    window = config.sliding_window
    for i, kind in enumerate(config.layer_types):
        weights = trace.stack("decoder.self")[i]  # [head, query, key]
        values = seen["v", i][0].view(-1, config.num_key_value_heads, d)  # [key, kv head, d]
        mixed = seen["o", i][0].view(-1, config.num_attention_heads, d)  # [query, head, d]
        for h in range(config.num_attention_heads):
            np.testing.assert_allclose(weights[h] @ values[:, h // group].numpy(),
                                       mixed[:, h].numpy(), atol=1e-5)
        sums = weights.sum(-1)  # the sink's share is taken, not renormalised away
        assert (sums <= 1 + 1e-6).all() and (sums < 1 - 1e-3).any()
        n = weights.shape[-1]
        far = np.tril(np.ones((n, n), bool), k=-window)  # keys window or more behind
        allowed = trace.mask("decoder.self", i)  # the mask the layer received
        if kind == "sliding_attention":
            assert (weights[:, far] == 0).all() and not allowed[far].any()
        else:
            assert allowed[far].all()


def test_differential_attention_shows_one_map_per_layer(root):
    row = check("diffllama", "causal", root)
    assert row.status == "exact", row
    model = _load("diffllama", root)
    assert model.trace("The cat sat on the mat.").layers("decoder.self") == \
        model.config.num_hidden_layers


def test_compressed_keys_take_their_share_of_each_row_and_are_not_shown(root):
    """DeepSeek-V4 attends to compressed keys after the tokens: exact against eager on the
    tokens' columns, and each row short of 1 by what they took, never renormalised."""
    row = check("deepseek_v4", "causal", root)
    assert row.status == "exact", row
    model = _load("deepseek_v4", root)
    trace = model.trace("A dog slept under the table yesterday because it was tired.")
    compressed = [i for i, kind in enumerate(model.config.layer_types)
                  if kind == "compressed_sparse_attention"]
    assert compressed
    for layer in compressed:
        sums = trace.layer_weights("decoder.self", layer).sum(-1)
        assert (sums < 1 - 1e-3).any() and (sums <= 1 + 1e-6).all()


def test_keys_that_are_not_tokens_are_refused_for_other_models(root, monkeypatch):
    """A model not known to append its extra keys after the tokens is refused, with why."""
    import model.hf.adapter as adapter

    monkeypatch.setattr(adapter, "KEYS_AFTER_TOKENS", set())
    with pytest.raises(ModelLoadError, match="keys that are not tokens"):
        _load("deepseek_v4", root)


@pytest.mark.parametrize("model_type", ["bloom", "falcon", "gpt_neo", "mpt", "deberta-v2",
                                        "roformer", "longformer", "big_bird"])
def test_models_that_bypass_the_attention_interface_are_exact_through_their_eager_pass(
        model_type, root):
    row = check(model_type, model_types()[model_type], root)
    assert row.status == "exact", row
    model = _load(model_type, root)
    assert model.route == "eager" and model.route_reason
    assert model.trace("The cat sat on the mat.").meta["capture"] == "eager"


@pytest.mark.parametrize("model_type", ["qwen3_next", "jamba", "bamba", "nemotron_h"])
def test_hybrid_models_trace_their_attention_layers_and_say_which(model_type, root):
    row = check(model_type, "causal", root)
    assert row.status == "exact", row
    model = _load(model_type, root)
    trace = model.trace("The cat sat on the mat.")
    numbers = trace.meta["attention_layers"]["decoder.self"]
    assert len(numbers) == trace.layers("decoder.self") < model.dims.n_decoder_layers
    types = getattr(model.config, "layer_types", None)
    if isinstance(types, list):  # the layers its config names as attention, in order
        assert numbers == [i for i, kind in enumerate(types) if "attention" in kind
                           and "linear" not in kind]


@pytest.mark.parametrize("model_type", ["m2m_100", "nllb-moe", "blenderbot", "blenderbot-small",
                                        "led", "bigbird_pegasus", "switch_transformers"])
def test_every_kind_of_encoder_decoder_traces_a_target_and_its_own_translation(
        model_type, root):
    row = check(model_type, "seq2seq", root)  # the target, teacher-forced, against eager
    assert row.status == "exact", row
    model = _load(model_type, root)
    trace = model.trace("The cat sat on the mat.")  # its own greedy output
    assert trace.steps and len(trace.steps) == len(trace.target_tokens)
    assert int(trace.target_ids[0]) == model._decoder_start()


@pytest.mark.parametrize("model_type", ["mamba", "rwkv", "fnet", "falcon_mamba", "xlstm", "blt"])
def test_models_without_attention_are_refused_with_the_reason(model_type, root):
    with pytest.raises(ModelLoadError) as refused:
        _load(model_type, root)
    message = str(refused.value)
    assert "attention" in message and len(message.split()) > 8, message


def test_a_state_space_config_is_refused_before_any_weights_are_read(root, monkeypatch):
    import transformers

    def never(*args, **kwargs):
        raise AssertionError("weights were read")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", never)
    with pytest.raises(ModelLoadError, match="no attention heads"):
        _load("mamba", root)


def test_an_input_that_takes_another_path_is_refused_never_shown(root, monkeypatch):
    """A pass that records fewer calls than the model has layers raises a typed error, for a
    trace and for the corpus's batches alike."""
    model = _load("llama", root)
    real = model._record

    def one_layer_short(inputs):
        return real(inputs)[:-1]

    monkeypatch.setattr(model, "_record", one_layer_short)
    with pytest.raises(CaptureError, match="could not be captured exactly"):
        model.trace("The cat sat on the mat.")
    with pytest.raises(CaptureError, match="could not be captured exactly"):
        model.attention_batch(["The cat sat on the mat.", "A dog slept."])


def test_a_recorded_formula_that_is_not_the_models_falls_back_to_its_eager_weights(
        root, monkeypatch):
    """The load compares the recorded weights of its probe sentence with the model's own eager
    ones: were the recomputation wrong for a model, that model would take the eager route."""
    import model.hf.capture as capture

    real = capture.recompute

    def without_the_mask(product, call, **kwargs):
        return real(product, call, **{**kwargs, "forbidden": None})  # the causal mask forgotten

    monkeypatch.setattr(capture, "recompute", without_the_mask)
    model = _load("llama", root)
    assert model.route == "eager" and "differ from its eager" in model.route_reason
    monkeypatch.setattr(capture, "recompute", real)
    assert _load("llama", root).route == "recorded"


def test_a_translation_tokenizer_shared_by_threads_never_mixes_source_and_target(nllb_style):
    """NLLB's tokenizer switches its special tokens while it reads a target: sources read at
    the same time still start with the source language."""
    import sys
    import threading

    model = load(str(nllb_style), device="cpu")
    english = model.tokenizer.convert_tokens_to_ids("eng_Latn")
    firsts, errors = [], []

    def targets():
        for _ in range(500):
            model.count_tokens("The cat sat.", target="猫 坐")

    def sources():
        try:
            for _ in range(500):
                firsts.append(int(model._encode(["The cat sat."])["input_ids"][0, 0]))
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often: without the lock, a few mix
    try:
        threads = [threading.Thread(target=targets), threading.Thread(target=sources)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors and set(firsts) == {english}


# --- an NLLB-style translation model --------------------------------------------------------

def test_an_nllb_style_model_writes_chinese_first_and_traces_exactly(nllb_style):
    from tests.architectures import eager_reference

    model = load(str(nllb_style), device="cpu")
    assert model.tokenizer.tgt_lang == "zho_Hans"
    assert model.forced_bos == model.tokenizer.convert_tokens_to_ids("zho_Hans")
    trace = model.trace("The cat sat on the mat.")
    assert list(trace.target_tokens[:2]) == ["</s>", "zho_Hans"]  # as NLLB's generate writes
    assert trace.steps[0].token == "zho_Hans"
    for target in (None, ["猫 坐 在 垫子 上"]):
        inputs = model.prepare_inputs(["The cat sat on the mat."], target)
        traced = model.trace_batch(["The cat sat on the mat."], target)[0]
        reference = eager_reference(nllb_style, "seq2seq", "encoder-decoder", inputs)
        for kind, maps in reference.items():
            np.testing.assert_allclose(traced.stack(kind), torch.stack(maps)[:, 0].numpy(),
                                       atol=1e-5, err_msg=kind)


@pytest.mark.parametrize("model_type", ["bloom", "deberta-v2", "qwen3_next", "granite_swa",
                                        "deepseek_v4", "dory"])
def test_a_padded_batch_of_any_route_gives_each_sentence_its_own_weights(model_type, root):
    """The corpus's batches (:meth:`attention_batch`) on the eager route, a hybrid and sinks:
    each sentence's block is its trace's weights, zeros after them."""
    model = _load(model_type, root)
    texts = ["The cat sat on the mat.",
             "A dog slept under the table yesterday because it was tired."]
    batch = model.attention_batch(texts)
    name = batch.traces[0].names[0]
    for layer in range(batch.traces[0].layers(name)):
        weights = batch.weights(name, layer).cpu().numpy()
        for b, trace in enumerate(batch.traces):
            alone = model.trace(texts[b]).layer_weights(name, layer)
            np.testing.assert_allclose(trace.layer_weights(name, layer), alone, atol=1e-5)
            n_q, n_k = alone.shape[1:]
            np.testing.assert_allclose(weights[b, :, :n_q, :n_k], alone, atol=1e-5)
            assert not weights[b, :, n_q:].any() and not weights[b, :, :, n_k:].any()
