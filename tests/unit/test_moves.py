"""What attention moves on Hugging Face models and the own translator (issue 26), each method
against an independent reference: transformers' own eager weights and the modules' own
projections applied by hand, torch forward hooks that change a module's output (not our probe),
and matrix products written out."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoModelForCausalLM

from model import load
from model.analysis import moves
from model.analysis.faithfulness import (
    AttentionParts,
    layer_contributions,
    norm_rollout,
    row_normalised,
    total_variation,
)
from tests.helpers import SEED_SENTENCE

TEXT = "The cat sat on the mat."
# where each tiny architecture keeps the modules the reference reads, by hand
MODULES = {
    "llama": dict(auto=AutoModelForCausalLM, layers="model.layers.{i}",
                  attention="model.layers.{i}.self_attn", value="model.layers.{i}.self_attn.v_proj",
                  out="model.layers.{i}.self_attn.o_proj", kind="decoder.self"),
    "bert": dict(auto=AutoModel, layers="encoder.layer.{i}",
                 attention="encoder.layer.{i}.attention.self",
                 value="encoder.layer.{i}.attention.self.value",
                 out="encoder.layer.{i}.attention.output.dense", kind="encoder.self"),
}


@pytest.fixture(scope="module", params=sorted(MODULES))
def tiny(request, tiny_checkpoints):
    """(architecture, our loaded model, transformers' own copy in eager mode)."""
    path = str(tiny_checkpoints[request.param])
    ours = load(path, device="cpu")
    theirs = MODULES[request.param]["auto"].from_pretrained(path, attn_implementation="eager")
    return request.param, ours, theirs.eval()


def _module(model, pattern: str, layer: int) -> torch.nn.Module:
    return dict(model.named_modules())[pattern.format(i=layer)]


def _their_pass(arch: str, theirs, ids: np.ndarray, layer: int, change_value=None,
                change_out=None):
    """transformers' own eager pass on ``ids``: its weights of ``layer`` [head, query, key], the
    value projection's output, the output projection's input and output, the layer's output;
    ``change_value`` / ``change_out`` replace what those projections give (a torch hook)."""
    names = MODULES[arch]
    seen = {}

    def keep(key, change=None):
        def hook(_module, args, out):
            seen[key + ".in"] = args[0].detach()
            changed = change(out) if change is not None else out
            seen[key] = changed.detach()
            return changed
        return hook

    handles = [_module(theirs, names["value"], layer).register_forward_hook(
                   keep("value", change_value)),
               _module(theirs, names["out"], layer).register_forward_hook(
                   keep("out", change_out)),
               _module(theirs, names["layers"], layer).register_forward_hook(
                   lambda _m, _a, out: seen.__setitem__(
                       "layer", (out[0] if isinstance(out, tuple) else out).detach()))]
    try:
        with torch.no_grad():
            out = theirs(input_ids=torch.from_numpy(np.asarray(ids, np.int64))[None],
                         output_attentions=True, output_hidden_states=True)
    finally:
        for handle in handles:
            handle.remove()
    seen["weights"] = out.attentions[layer][0].double()
    seen["output"] = out
    return seen


def test_weight_times_value_norm_equals_the_modules_own_tensors(tiny):
    arch, ours, theirs = tiny
    kind = MODULES[arch]["kind"]
    parts = ours.attention_parts(TEXT)
    ids = np.asarray(parts.trace.ids)
    config = theirs.config
    heads, kv_heads = config.num_attention_heads, getattr(config, "num_key_value_heads",
                                                          config.num_attention_heads)
    d_head = config.hidden_size // heads
    for layer in range(config.num_hidden_layers):
        seen = _their_pass(arch, theirs, ids, layer)
        weights = seen["weights"]  # [head, query, key], transformers' eager weights
        values = seen["value"][0].double().view(len(ids), kv_heads, d_head)  # [key, kv, d]
        w_o = _module(theirs, MODULES[arch]["out"], layer).weight.detach().double()
        ours_moved = moves.norm_based(parts, kind, layer)
        added = torch.zeros(len(ids), w_o.shape[0], dtype=torch.float64)
        for h in range(heads):
            w_h = w_o[:, h * d_head:(h + 1) * d_head]
            kv = h // (heads // kv_heads)
            for i in range(len(ids)):
                for j in range(len(ids)):
                    vector = weights[h, i, j] * (w_h @ values[j, kv])
                    assert ours_moved[h, i, j] == pytest.approx(float(vector.norm()), rel=1e-4,
                                                                abs=1e-6)
                    added[i] += vector
        # the pieces add up to what the output projection gave, less its bias
        bias = _module(theirs, MODULES[arch]["out"], layer).bias
        total = seen["out"][0].double() - (0 if bias is None else bias.detach().double())
        torch.testing.assert_close(added, total, atol=1e-5, rtol=1e-4)
        # and the output projection was found where transformers keeps it
        np.testing.assert_array_equal(parts.w_o[kind][layer], w_o.float().numpy())


def test_value_zeroing_equals_the_layer_with_the_value_zeroed_by_a_torch_hook(tiny):
    arch, ours, theirs = tiny
    kind = MODULES[arch]["kind"]
    parts = ours.attention_parts(TEXT)
    ids = np.asarray(parts.trace.ids)
    keys = [0, 2, len(ids) - 1]
    outputs = ours.layer_outputs(TEXT, kind, 1, keys)
    base = _their_pass(arch, theirs, ids, 1)["layer"][0].double().numpy()
    np.testing.assert_allclose(outputs[0], base, atol=1e-5)
    for row, key in enumerate(keys, start=1):
        def zero(out, key=key):
            changed = out.clone()
            changed[:, key] = 0
            return changed
        zeroed = _their_pass(arch, theirs, ids, 1, change_value=zero)["layer"][0].double()
        np.testing.assert_allclose(outputs[row], zeroed.numpy(), atol=1e-5)
        assert np.abs(outputs[row] - outputs[0]).max() > 1e-4  # the key moved something


def test_zeroing_a_value_that_is_already_zero_changes_nothing(tiny):
    arch, ours, _theirs = tiny
    kind = MODULES[arch]["kind"]
    key = 2
    value = _module(ours.model, MODULES[arch]["value"], 0)

    def zero(_module, _args, out):
        changed = out.clone()
        changed[:, key] = 0
        return changed

    handle = value.register_forward_hook(zero)  # key 2's value is zero in every pass
    try:
        parts = ours.attention_parts(TEXT)
        zeroing = moves.layer_value_zeroing(ours, TEXT, parts, kind, 0)
        outputs = ours.layer_outputs(TEXT, kind, 0, [key])
    finally:
        handle.remove()
    np.testing.assert_array_equal(outputs[1], outputs[0])
    assert np.all(zeroing[:, key] == 0)
    np.testing.assert_allclose(zeroing.sum(axis=-1), 1.0)
    moved = moves.norm_based(parts, kind, 0)
    assert np.all(moved[:, :, key] == 0)  # nothing to move, whatever its weight


def test_ablating_every_head_equals_removing_the_attention_sublayers_contribution(tiny):
    arch, ours, theirs = tiny
    kind = MODULES[arch]["kind"]
    heads = list(range(theirs.config.num_attention_heads))
    ablated = ours.ablation(TEXT, kind, 1, heads)
    ids = np.asarray(ours.trace(TEXT).ids)
    bias = _module(theirs, MODULES[arch]["out"], 1).bias

    def only_bias(out):
        return torch.zeros_like(out) + (0 if bias is None else bias.detach())

    before = _their_pass(arch, theirs, ids, 1)["output"]
    after = _their_pass(arch, theirs, ids, 1, change_out=only_bias)["output"]
    if arch == "bert":
        expected = float(1 - torch.nn.functional.cosine_similarity(
            before.last_hidden_state[0].double(), after.last_hidden_state[0].double(),
            dim=-1).clamp(max=1).mean())
        assert ablated.measure == "hidden states"
    else:
        p, q = (torch.softmax(o.logits[0, -1].double(), -1).numpy() for o in (before, after))
        expected = total_variation(p, q)
        assert ablated.measure == "next token"
    assert ablated.change == pytest.approx(expected, rel=1e-3, abs=1e-6)
    assert ablated.change > 0
    one = ours.ablation(TEXT, kind, 1, [0])
    assert one.heads == (0,) and one.change < ablated.change * 10


def test_an_ablation_in_one_thread_leaves_another_threads_pass_unchanged(tiny):
    arch, ours, _theirs = tiny
    kind = MODULES[arch]["kind"]
    base = ours.layer_outputs(TEXT, kind, 1, [])
    from model.hf.moves import probe

    seen = {}
    inside, done = threading.Event(), threading.Event()

    def other():
        inside.wait(10)
        seen["outputs"] = ours.layer_outputs(TEXT, kind, 1, [])
        done.set()

    thread = threading.Thread(target=other)
    thread.start()
    names = [c for c in dict(ours.model.named_modules()) if c == MODULES[arch]["attention"]
             .format(i=1)]
    with probe(ours.model, zero_heads={names[0]: [0, 1, 2, 3]}):
        inside.set()
        done.wait(30)
        changed = ours.layer_outputs(TEXT, kind, 1, [])
    thread.join()
    np.testing.assert_array_equal(seen["outputs"], base)
    assert np.abs(changed - base).max() > 1e-4


def test_a_model_whose_output_projection_reads_something_else_is_said_to_be_unreachable(
        tiny_checkpoints):
    from model.errors import CaptureError

    ours = load(str(tiny_checkpoints["llama"]), device="cpu")
    o_proj = ours.model.model.layers[0].self_attn.o_proj
    handle = o_proj.register_forward_pre_hook(lambda _m, args: (args[0] * 1.5,))  # a "gate"
    try:
        with pytest.raises(CaptureError, match="output projection"):
            ours.attention_parts(TEXT)
    finally:
        handle.remove()


# --- the methods' arithmetic ----------------------------------------------------------------

def test_norm_rollout_is_the_product_of_the_mixed_layers():
    rng = np.random.default_rng(1)
    layers = [np.abs(rng.normal(size=(4, 4))) for _ in range(3)]
    flow = norm_rollout(layers)
    expected = np.eye(4)
    for layer, c in enumerate(layers):
        mixed = 0.5 * np.eye(4) + 0.5 * c / c.sum(axis=1, keepdims=True)
        expected = mixed @ expected
        np.testing.assert_allclose(flow[layer], expected, rtol=1e-12)
    np.testing.assert_allclose(flow.sum(axis=-1), 1.0)


def test_layer_contributions_sum_the_heads_before_the_norm():
    rng = np.random.default_rng(2)
    weights = rng.dirichlet(np.ones(3), size=(2, 3))  # [head, query, key]
    values = rng.normal(size=(2, 3, 4))
    w_o = rng.normal(size=(5, 8))
    contributions = layer_contributions(weights, values, w_o)
    for i in range(3):
        for j in range(3):
            vector = sum(weights[h, i, j] * (w_o[:, h * 4:(h + 1) * 4] @ values[h, j])
                         for h in range(2))
            assert contributions[i, j] == pytest.approx(np.linalg.norm(vector))


def _parts(queries: np.ndarray, keys: np.ndarray, n_heads: int = 1, n_kv: int = 1):
    class Trace:
        n_heads = 1

        @staticmethod
        def kv_head(head: int) -> int:
            return head * n_kv // n_heads

    return AttentionParts(trace=Trace, target=None, values={}, w_o={},
                          queries={"encoder.self": [queries]}, keys={"encoder.self": [keys]})


def test_the_qk_map_places_each_query_on_its_key_when_they_are_equal():
    rng = np.random.default_rng(3)
    same = rng.normal(size=(1, 12, 8))
    for method in ("pca", "tsne"):
        found = moves.qk_map(_parts(same, same), "encoder.self", 0, 0, method)
        queries, keys = found.points[:12], found.points[12:]
        if method == "pca":
            np.testing.assert_allclose(queries, keys, atol=1e-9)
        else:  # t-SNE places the two copies of one point next to each other
            distances = np.linalg.norm(queries[:, None] - keys[None], axis=-1)
            assert list(distances.argmin(axis=1)) == list(range(12))
        assert found.scale == pytest.approx(1.0) and np.allclose(found.shift, 0)


def test_the_qk_normalisation_changes_no_rows_softmax():
    rng = np.random.default_rng(4)
    q, k = rng.normal(size=(5, 6)) + 3, rng.normal(size=(7, 6)) * 4 - 1
    q2, k2, shift, c = moves.joint_normalised(q, k)
    softmax = lambda s: np.exp(s - s.max(-1, keepdims=True)) / np.exp(  # noqa: E731
        s - s.max(-1, keepdims=True)).sum(-1, keepdims=True)
    np.testing.assert_allclose(softmax(q2 @ k2.T), softmax(q @ k.T), rtol=1e-9)
    np.testing.assert_allclose(k2.mean(0) * c, q.mean(0), rtol=1e-9)
    assert np.linalg.norm(q2, axis=-1).mean() == pytest.approx(np.linalg.norm(k2, axis=-1).mean())


def test_a_grouped_query_heads_keys_are_its_kv_heads(tiny_checkpoints):
    ours = load(str(tiny_checkpoints["llama"]), device="cpu")  # 4 heads, 2 K/V heads
    parts = ours.attention_parts(TEXT)
    a = moves.qk_map(parts, "decoder.self", 0, 0)
    b = moves.qk_map(parts, "decoder.self", 0, 1)
    n = a.n_queries
    assert parts.keys["decoder.self"][0].shape[0] == 2
    np.testing.assert_array_equal(parts.keys["decoder.self"][0][0],
                                  parts.keys["decoder.self"][0][ours.trace(TEXT).kv_head(1)])
    assert a.points.shape == b.points.shape == (2 * n, 2)


# --- the own translator: the head that aligns 垫子 with mat ---------------------------------

@pytest.fixture(scope="module")
def translator():
    return load("own-translator", device="cpu")


def test_the_translator_does_not_need_any_one_of_its_mat_heads_but_needs_the_layer(translator):
    """Measured on the shipped weights: when the decoder writes 垫子, all four heads of cross
    layer 2 put weight 1.00 on "mat". Leaving any one or any two of them out keeps the
    translation (the change of the distributions stays under 0.04); leaving all four out
    writes another sentence. The alignment is redundant: no single head carries it."""
    import itertools

    trace = translator.trace(SEED_SENTENCE)
    rows, keys = trace.axes("decoder.cross")
    writing = list(rows).index("在")  # the row that reads 在 writes 垫子
    mat = list(keys).index("mat")
    aligned = [h for h in range(trace.n_heads)
               if trace.weights("decoder.cross", 2, h)[writing, mat] > 0.99]
    assert aligned == [0, 1, 2, 3]
    for heads in [*itertools.combinations(aligned, 1), *itertools.combinations(aligned, 2)]:
        found = translator.ablation(SEED_SENTENCE, "decoder.cross", 2, list(heads))
        assert found.after == found.before == "猫 坐 在 垫子 上", heads
        assert found.change < 0.04
    every = translator.ablation(SEED_SENTENCE, "decoder.cross", 2, aligned)
    assert "垫子" not in every.after and every.change > 0.3
    ranked = moves.rank_heads(translator, SEED_SENTENCE, "decoder.cross", 2)
    assert [a.change for a in ranked] == sorted((a.change for a in ranked), reverse=True)
    assert sorted(a.heads[0] for a in ranked) == [0, 1, 2, 3]


def test_what_moves_on_the_translator_sums_each_row_to_one(translator):
    parts = translator.attention_parts(SEED_SENTENCE)
    for kind in ("encoder.self", "decoder.cross"):
        found = moves.what_moves(translator, SEED_SENTENCE, kind, 1, 0, parts=parts)
        for method in moves.METHODS:
            matrix = found.method(method)
            if matrix is None:
                assert kind == "decoder.cross" and method == "rollout"
                continue
            # to the precision each is made in: the raw weights are the model's float32
            # softmax (a row may sum to one float32 step, 1.19e-7, off 1, as its kernels round
            # on this CPU: seen in CI); the others are normalised in float64
            atol = 4 * np.finfo(np.float32).eps if method == "raw" else 1e-9
            np.testing.assert_allclose(matrix.sum(axis=-1), 1.0, atol=atol)
        np.testing.assert_allclose(found.norm, row_normalised(found.norm_absolute))


def test_what_moves_refuses_a_text_past_its_limit_before_running(translator, monkeypatch):
    monkeypatch.setattr(moves, "MOVES_LIMIT", 5)
    monkeypatch.setattr(translator, "attention_parts", lambda *a: pytest.fail("it ran"))
    with pytest.raises(ValueError, match="up to 5 tokens.*has 6"):
        moves.what_moves(translator, SEED_SENTENCE, "encoder.self", 0, 0)


# --- the export's optional arrays ------------------------------------------------------------

def test_the_export_carries_what_moves_and_reads_it_back(translator, tmp_path):
    from model.analysis.faithfulness import value_zeroing_scores
    from model.trace import AttentionTrace

    trace = moves.with_extras(translator, SEED_SENTENCE)
    path = trace.save(tmp_path / "moves.npz")
    back = AttentionTrace.load(path)
    assert set(back.extras) == {f"{k}.{m}" for k in trace.names for m in ("norm", "value_zeroing")
                                } | {"encoder.self.rollout", "decoder.self.rollout"}
    parts = translator.attention_parts(SEED_SENTENCE)
    for kind in trace.names:
        for layer in range(trace.layers(kind)):
            found = moves.what_moves(translator, SEED_SENTENCE, kind, layer, 0, parts=parts)
            np.testing.assert_allclose(back.extras[f"{kind}.norm"][layer, 0],
                                       found.norm_absolute, rtol=1e-5, atol=1e-6)
            outputs = translator.layer_outputs(SEED_SENTENCE, kind, layer,
                                               list(range(len(trace.axes(kind)[1]))),
                                               parts.target)
            np.testing.assert_allclose(back.extras[f"{kind}.value_zeroing"][layer],
                                       value_zeroing_scores(outputs[0], outputs[1:]), atol=1e-6)
            if found.rollout is not None:
                np.testing.assert_allclose(back.extras[f"{kind}.rollout"][layer], found.rollout,
                                           atol=1e-6)
    # read with numpy alone, as the format's documentation says
    with np.load(path) as data:
        assert data["encoder.self.norm"].dtype == np.float32
        assert data["decoder.cross.value_zeroing"].shape == (3, 6, 6)


def test_an_older_export_without_them_still_loads():
    from pathlib import Path

    from model.trace import AttentionTrace

    old = AttentionTrace.load(Path(__file__).parents[1] / "data" / "own-translator-v1.npz")
    assert old.extras == {}


def test_extras_of_the_wrong_name_or_shape_are_refused(translator):
    import dataclasses

    trace = translator.trace(SEED_SENTENCE)
    with pytest.raises(ValueError, match="kind.method"):
        dataclasses.replace(trace, extras={"encoder.self.attribution": np.zeros((3, 6, 6))})
    with pytest.raises(ValueError, match="expected"):
        dataclasses.replace(trace, extras={"encoder.self.rollout": np.zeros((3, 5, 6))})
    with pytest.raises(ValueError, match="unknown methods"):
        moves.with_extras(translator, SEED_SENTENCE, methods=("lrp",))


def test_the_command_line_writes_them(tmp_path, capsys):
    from model.__main__ import main

    out = tmp_path / "cli.npz"
    assert main(["export", "--model", "own-translator", "--text", SEED_SENTENCE, "--out",
                 str(out), "--device", "cpu", "--moves", "norm"]) == 0
    assert "encoder.self.norm (3, 4, 6, 6)" in capsys.readouterr().out
    with np.load(out) as data:
        assert "encoder.self.norm" in data.files and "encoder.self.rollout" not in data.files
