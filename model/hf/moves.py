"""What a Hugging Face model's attention moves, and what happens without parts of it (issue 26),
through the same attention function that records its weights (:mod:`model.hf.capture`).

A :class:`Probe` opened in the asking thread (:func:`model.hf.capture.probing`) sees every
attention call's values and its output per head (``[batch, query, head, d_head]``, before the
output projection), and may change them: zero one key's value (a different key in each
sequence of a batch, for value zeroing) or zero some heads' output (head ablation, the same as
transformers' old ``head_mask``). The output projection W_O is found, not named: during a pass
every ``nn.Linear`` (and GPT-2's ``Conv1D``) is watched, and the one whose input equals an
attention call's output, merged over heads, is that call's W_O. A model that changes the output
on the way (a norm or a gate between attention and its projection) has none found, and the view
says so for that model rather than guess.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers.pytorch_utils import Conv1D

from i18n import _
from model.analysis.faithfulness import Ablation, AttentionParts, ablation_outcome
from model.errors import CaptureError
from model.hf.capture import current_probe, probing, recorded_tensor, recording
from model.meta import Family


@dataclass
class Probe:
    """What the attention calls of one block of passes read and give.

    Attributes:
        names: module id → name in the model.
        record: keep each call's values and output (the last pass's).
        zero_keys: module name → ``[batch]`` the key whose value is zeroed in each sequence
            (−1: none).
        zero_heads: module name → heads whose output is zeroed.
        outer: the probe open around this one (its changes apply first: probes nest).
    """

    names: dict[int, str]
    record: bool = False
    zero_keys: dict[str, torch.Tensor] = field(default_factory=dict)
    zero_heads: dict[str, list[int]] = field(default_factory=dict)
    values: dict[str, torch.Tensor] = field(default_factory=dict)
    outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    outer: Probe | None = None

    def _name(self, module) -> str:
        return self.names.get(id(module), type(module).__name__)

    def value(self, module, query: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        if self.outer is not None:
            value = self.outer.value(module, query, value)
        name = self._name(module)
        keys = self.zero_keys.get(name)
        if keys is not None:
            if keys.numel() != value.shape[0] or int(keys.max()) >= value.shape[2]:
                raise CaptureError(f"value zeroing of {name}: {keys.numel()} keys for a batch "
                                   f"of {value.shape[0]} with {value.shape[2]} keys")
            rows = torch.nonzero(keys >= 0).flatten()
            value = value.clone()
            value[rows, :, keys[rows].to(value.device)] = 0
        if self.record:
            self.values[name] = value.detach()
        return value

    def output(self, module, query: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        if self.outer is not None:
            out = self.outer.output(module, query, out)
        name = self._name(module)
        if out.ndim != 4 or out.shape[1] != query.shape[2] or out.shape[2] != query.shape[1]:
            raise CaptureError(f"{name} gives its output as {tuple(out.shape)}, not [batch, "
                               "query, head, d_head]: its heads cannot be told apart")
        heads = self.zero_heads.get(name)
        if heads:
            out = out.clone()
            out[:, :, heads] = 0
        if self.record:
            self.outputs[name] = out.detach()
        return out


def module_names(model: torch.nn.Module) -> dict[int, str]:
    return {id(m): name for name, m in model.named_modules()}


@contextmanager
def probe(model: torch.nn.Module, **settings) -> Iterator[Probe]:
    """A :class:`Probe` of ``model``'s attention calls in this thread inside the block."""
    with probing(Probe(module_names(model), outer=current_probe(), **settings)) as opened:
        yield opened


def _projection_weight(module: torch.nn.Module) -> torch.Tensor:
    """The weight as ``nn.Linear`` keeps it, ``[out, in]`` (``Conv1D`` keeps ``[in, out]``)."""
    return module.weight.detach().T if isinstance(module, Conv1D) else module.weight.detach()


@contextmanager
def watching_projections(model: torch.nn.Module, opened: Probe) -> Iterator[dict[str, str]]:
    """Inside the block, find each attention call's output projection: the ``nn.Linear`` (or
    ``Conv1D``) whose input is the call's output (recorded by ``opened``) merged over heads.
    Yields the mapping attention module name → projection module name, filled as passes run."""
    found: dict[str, str] = {}
    handles = []

    def check(name: str):
        def hook(_module, args):
            x = args[0] if args else None
            if not isinstance(x, torch.Tensor):
                return
            for attention, out in opened.outputs.items():
                if attention in found or x.shape[:-1] != out.shape[:2] or \
                        x.shape[-1] != out.shape[2] * out.shape[3]:
                    continue
                if torch.equal(x, out.reshape(x.shape).to(x.dtype)):
                    found[attention] = name
                    return
        return hook

    for name, module in model.named_modules():
        if isinstance(module, (torch.nn.Linear, Conv1D)):
            handles.append(module.register_forward_pre_hook(check(name)))
    try:
        yield found
    finally:
        for handle in handles:
            handle.remove()


def parts_of_pass(model: torch.nn.Module, run_pass, names: Callable[[], list[str]]):
    """Run ``run_pass()`` once recording every attention call's values and finding its output
    projection.

    Args:
        names: called after the pass: the attention modules wanted, in order.

    Returns:
        ``{attention module name: (values [batch, kv_head, key, d_head] float32 on the CPU,
        W_O [d_model, heads × d_head] float32 on the CPU)}`` for ``names()``.

    Raises:
        CaptureError: a call whose output projection was not found (named in the message).
    """
    with probe(model, record=True) as opened, watching_projections(model, opened) as found:
        run_pass()
    modules = dict(model.named_modules())
    wanted = names()
    missing = [name for name in wanted if name not in found]
    if missing:
        raise CaptureError(_("the output projection of {module} could not be found: no linear "
                             "layer reads its attention output unchanged (a norm or a gate "
                             "comes between them), so what each key moves cannot be computed "
                             "for this model").format(module=missing[0]))
    parts = {}
    for name in wanted:
        weight = _projection_weight(modules[found[name]]).float().cpu().numpy()
        values = opened.values[name].float().cpu().numpy()
        if weight.shape[1] != opened.outputs[name].shape[2] * opened.outputs[name].shape[3]:
            raise CaptureError(f"{found[name]} takes {weight.shape[1]} inputs, not heads × "
                               "d_head")
        parts[name] = (values, weight)
    return parts


def layer_module(attention_name: str) -> str:
    """The layer (block) holding an attention module: its name up to the layer's number
    (``model.layers.3.self_attn`` → ``model.layers.3``; BERT's
    ``bert.encoder.layer.3.attention.self`` → ``bert.encoder.layer.3``).

    Raises:
        CaptureError: a name with no layer number.
    """
    pieces = attention_name.split(".")
    numbered = [i for i, piece in enumerate(pieces) if piece.isdigit()]
    if not numbered:
        raise CaptureError(f"{attention_name} names no layer number")
    return ".".join(pieces[:numbered[-1] + 1])


@contextmanager
def layer_output_recorded(model: torch.nn.Module, layer_name: str) -> Iterator[list]:
    """Inside the block, each pass appends what ``layer_name`` gives (its hidden states,
    ``[batch, query, d_model]``) to the yielded list."""
    outputs: list[torch.Tensor] = []
    module = dict(model.named_modules())[layer_name]

    def hook(_module, _args, out):
        outputs.append((out[0] if isinstance(out, tuple) else out).detach())

    handle = module.register_forward_hook(hook)
    try:
        yield outputs
    finally:
        handle.remove()


# What the adapter offers (:class:`model.hf.adapter.HFModel` calls these with itself)

# each model's attention modules per kind, in layer order: the same for every input, read from
# the calls of its first pass here (weakly keyed: a model reloaded is another module)
_NAMES: weakref.WeakKeyDictionary[torch.nn.Module, dict[str, list[str]]] = \
    weakref.WeakKeyDictionary()


def _inputs(hf, text: str, target: str | None):
    inputs, steps = hf._inputs_and_steps([text], None if target is None else [target])
    return inputs, (steps[0] if steps else ())


def _reachable(hf) -> None:
    from model.hf.adapter import EAGER  # (the adapter imports this module)

    if hf.route == EAGER:
        raise CaptureError(_("{model}'s attention runs through transformers' eager path, where "
                             "its values and heads cannot be reached by hooks: what moves and "
                             "head ablation are not available for it").format(model=hf.name))


def _extra(hf) -> dict:
    return {"logits_to_keep": 1} if hf.family is Family.DECODER_ONLY else {}


def _float(array: np.ndarray, dtype: str) -> np.ndarray:
    return recorded_tensor(array, dtype).float().numpy()


def _remember_names(hf, calls) -> None:
    names: dict[str, list[str]] = {}
    for call in calls:
        names.setdefault(hf._classify(call.module_name), []).append(call.module_name)
    _NAMES[hf.model] = names


def _attention_name(hf, inputs, kind: str, layer: int) -> str:
    """The module of ``kind``'s attention in ``layer`` (one recorded pass on ``inputs`` the
    first time a model is asked)."""
    if hf.model not in _NAMES:
        with torch.inference_mode(), recording(hf.model) as recorder:
            hf.model(**inputs, use_cache=False, **_extra(hf))
        _remember_names(hf, recorder.calls)
    names = _NAMES[hf.model].get(kind, [])
    if not 0 <= layer < len(names):
        raise ValueError(f"layer {layer} is not in 0..{len(names) - 1} of {kind}")
    return names[layer]


def attention_parts(hf, text: str, target: str | None = None) -> AttentionParts:
    """:class:`~model.analysis.faithfulness.AttentionParts` of one pass of ``hf`` on ``text``."""
    _reachable(hf)
    inputs, steps = _inputs(hf, text, target)
    recorded = {}

    def run_pass():
        with torch.inference_mode(), recording(hf.model) as recorder:
            hf.model(**inputs, use_cache=False, **_extra(hf))
        recorded["calls"] = recorder.calls

    def names() -> list[str]:
        problem = hf._recorded_problem(recorded["calls"], inputs)
        if problem is not None:
            raise CaptureError(problem)
        return [call.module_name for call in recorded["calls"]]

    parts = parts_of_pass(hf.model, run_pass, names)
    calls = recorded["calls"]
    _remember_names(hf, calls)
    trace = hf._make_trace(calls, inputs, 0, text, steps)
    per_kind = hf._per_kind(calls)
    values: dict = {}
    w_o: dict = {}
    queries: dict = {}
    keys: dict = {}
    for kind, kind_calls in per_kind.items():
        store = trace.attention[kind]
        q_index, k_index = store.q_index, store.k_index
        for call in kind_calls:
            v, weight = parts[call.module_name]
            group = call.q.shape[1] // v.shape[1]
            values.setdefault(kind, []).append(np.repeat(v[0][:, k_index], group, axis=0))
            w_o.setdefault(kind, []).append(weight)
            queries.setdefault(kind, []).append(_float(call.q, call.dtype)[0][:, q_index])
            keys.setdefault(kind, []).append(_float(call.k, call.dtype)[0][:, k_index])
    if target is None and not hf.family.single_stack:
        target = _translation(hf, inputs)
    return AttentionParts(trace=trace, target=target, values=values, w_o=w_o, queries=queries,
                          keys=keys)


def _translation(hf, inputs) -> str:
    """The target an encoder-decoder's ``inputs`` feed its decoder, as text."""
    return hf.tokenizer.decode(inputs["decoder_input_ids"][0][1:], skip_special_tokens=True)


def layer_outputs(hf, text: str, kind: str, layer: int, zero_keys: list[int],
                  target: str | None = None, chunk: int = 16) -> np.ndarray:
    """What the layer holding ``kind``'s attention ``layer`` gives at every real query,
    unchanged and with each of ``zero_keys``' value zeroed in every head: ``[1 + len(zero_keys),
    query, d_model]`` float64, in batches of ``chunk`` passes."""
    _reachable(hf)
    inputs, _steps = _inputs(hf, text, target)
    name = _attention_name(hf, inputs, kind, layer)
    real_q = inputs["decoder_attention_mask" if kind.startswith("decoder") and
                    "decoder_attention_mask" in inputs else "attention_mask"][0].bool()
    real_k = inputs["attention_mask" if kind != "decoder.self" or
                    "decoder_attention_mask" not in inputs else "decoder_attention_mask"][0]
    positions = torch.nonzero(real_k.bool()).cpu().flatten()
    wanted = [-1, *[int(positions[k]) for k in zero_keys]]
    out = []
    for start in range(0, len(wanted), chunk):
        piece = wanted[start:start + chunk]
        batch = {key: value.expand(len(piece), *value.shape[1:]) for key, value in inputs.items()}
        with torch.inference_mode(), probe(hf.model, zero_keys={name: torch.tensor(piece)}), \
                layer_output_recorded(hf.model, layer_module(name)) as outputs:
            hf.model(**batch, use_cache=False, **_extra(hf))
        out.append(outputs[-1][:, real_q.to(outputs[-1].device)].double().cpu().numpy())
    return np.concatenate(out)


def ablation(hf, text: str, kind: str, layer: int, heads: list[int],
             target: str | None = None) -> Ablation:
    """:class:`~model.analysis.faithfulness.Ablation` of ``heads`` of ``kind``'s ``layer``: one
    pass without and one with the heads (an encoder-decoder teacher-forced on its translation
    of ``text``, or ``target``), and an encoder-decoder's translation written again without
    them."""
    _reachable(hf)
    n_heads = hf.dims.n_heads
    heads = sorted({int(h) for h in heads})
    if not heads or not all(0 <= h < n_heads for h in heads):
        raise ValueError(f"heads {heads} are not among 0..{n_heads - 1}")
    inputs, _steps = _inputs(hf, text, target)
    name = _attention_name(hf, inputs, kind, layer)
    left_out = {"zero_heads": {name: heads}}

    def run(settings: dict) -> np.ndarray:
        with torch.inference_mode(), probe(hf.model, **settings):
            if hf.family is Family.ENCODER_ONLY:
                out = hf.model(**inputs, output_hidden_states=True)
                given = out.hidden_states[-1][0][inputs["attention_mask"][0].bool()]
            else:
                logits = hf.model(**inputs, use_cache=False, **_extra(hf)).logits[0].float()
                given = torch.softmax(logits[-1] if hf.family is Family.DECODER_ONLY else
                                      logits[inputs["decoder_attention_mask"][0].bool()], dim=-1)
        return given.double().cpu().numpy()

    before, after = run({}), run(left_out)
    if hf.family is Family.DECODER_ONLY:
        written = [hf.tokenizer.decode([int(p.argmax())]) for p in (before, after)]
    elif hf.family is Family.ENCODER_DECODER:
        with probe(hf.model, **left_out):
            again, _steps = _inputs(hf, text, None)
        written = [target if target is not None else _translation(hf, inputs),
                   _translation(hf, again)]
    else:
        written = ["", ""]
    return ablation_outcome(hf.family, heads, before, after, *written)
