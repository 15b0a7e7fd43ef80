"""What the own models' attention moves, and what happens without parts of it (issue 26), through
their hook points: the adapter's ``attention_parts``, ``layer_outputs`` and ``ablation``
(:class:`model.own.adapter.OwnModel` calls these with itself)."""

from __future__ import annotations

import numpy as np
import torch

from model.analysis.faithfulness import Ablation, AttentionParts, ablation_outcome
from model.meta import Family
from model.own.ablation import heads_ablated, layer_output, value_zeroed
from model.own.hooks import capture, hook_name, record
from model.own.transformer import attention_hook_name


def _layers(model, kind: str) -> int:
    return len(getattr(model.network, kind.split(".")[0]).layers)


def _attention(model, kind: str, layer: int):
    stack = getattr(model.network, kind.split(".")[0]).layers[layer]
    return stack.cross_attn if kind == "decoder.cross" else stack.self_attn


def own_target(model, text: str, target: str | None) -> str | None:
    """The target every pass reads: ``target``, or an encoder-decoder's own translation."""
    if target is not None or model.family.single_stack:
        return target
    return " ".join(model.trace(text).axes("decoder.cross")[0][1:])  # without <bos>


def attention_parts(model, text: str, target: str | None = None) -> AttentionParts:
    """:class:`AttentionParts` of one pass of an own ``model`` on ``text``."""
    target = own_target(model, text, target)
    wanted = ("hook_q", "hook_k", "hook_v")
    with capture(model.network, lambda name: name.rsplit(".", 1)[-1] in wanted) as store:
        trace = model.trace(text, target)
    parts: dict[str, dict] = {"values": {}, "w_o": {}, "queries": {}, "keys": {}}
    for kind in model.family.kinds:
        for layer in range(_layers(model, kind)):
            def hooked(hook: str, kind=kind, layer=layer) -> np.ndarray:
                return store[attention_hook_name(kind, layer, hook)][0].float().cpu().numpy()

            parts["values"].setdefault(kind, []).append(hooked("hook_v"))
            parts["queries"].setdefault(kind, []).append(hooked("hook_q"))
            parts["keys"].setdefault(kind, []).append(hooked("hook_k"))
            parts["w_o"].setdefault(kind, []).append(
                _attention(model, kind, layer).W_O.weight.detach().float().cpu().numpy())
    return AttentionParts(trace=trace, target=target, **parts)


def layer_outputs(model, text: str, kind: str, layer: int, zero_keys: list[int],
                  target: str | None = None) -> np.ndarray:
    """``[1 + len(zero_keys), query, d_model]`` float64: what ``layer`` of ``kind``'s stack gives,
    unchanged and with each of ``zero_keys``' value zeroed in every head (one pass each)."""
    target = own_target(model, text, target)
    out = [layer_output(model, text, target, kind, layer).cpu().numpy()]
    for key in zero_keys:
        with value_zeroed(model.network, kind, layer, int(key)):
            out.append(layer_output(model, text, target, kind, layer).cpu().numpy())
    return np.stack(out)


def _output(model, text: str, target: str | None) -> tuple[np.ndarray, str]:
    """What the model gives for ``text`` in this thread (interventions open apply): the
    next-token distributions it writes (decoder-only: at the last position; encoder-decoder: at
    every position of ``target``) or an encoder's final hidden states, and what it writes."""
    network = model.network
    module = network.encoder if model.family is Family.ENCODER_ONLY else network.generator
    with record([module]) as store:
        model.trace(text, target)
    out = store[hook_name(module)][0].double()
    if model.family is Family.ENCODER_ONLY:
        return out.cpu().numpy(), ""
    probs = torch.softmax(out, dim=-1).cpu().numpy()
    if model.family is Family.DECODER_ONLY:
        _source, vocab = model._vocabs(text, target)
        return probs[-1], vocab.itos[int(probs[-1].argmax())]
    return probs, ""


def ablation(model, text: str, kind: str, layer: int, heads: list[int],
             target: str | None = None) -> Ablation:
    """:class:`Ablation` of ``heads`` of ``kind``'s attention in ``layer`` of an own model: an
    encoder-decoder's translation is written again greedily with the heads left out, and its
    distributions compared on the unchanged translation, teacher-forced."""
    base_target = own_target(model, text, target)
    before, written_before = _output(model, text, base_target)
    with heads_ablated(model.network, kind, layer, heads) as chosen:
        after, written_after = _output(model, text, base_target)
        if model.family is Family.ENCODER_DECODER:
            written_after = own_target(model, text, None)
    if model.family is Family.ENCODER_DECODER:
        written_before = base_target or ""
    return ablation_outcome(model.family, chosen, before, after, written_before,
                            written_after or "")
