"""Shapes and costs of the current run (seed 3.5 and 3.8): tensor shapes per stage, parameters
in attention versus FFN, the size of the attention matrices and of the KV cache.

Everything here reads a :class:`~model.interface.LoadedModel` and its trace through their
interfaces, whichever adapter built them.
"""

from __future__ import annotations

from collections import Counter

from i18n import _
from model.interface import PARAMETER_KINDS, LoadedModel
from model.meta import Family, ModelDims
from model.trace import AttentionTrace


def parameter_split(loaded: LoadedModel) -> dict[str, int]:
    """Parameters in attention, FFN, embeddings and the rest (norms, output head), and the total.

    A parameter counts once (tied weights too), for the first kind whose modules hold it.
    """
    counts: Counter[str] = Counter()
    seen: set[int] = set()
    groups = loaded.parameter_modules()
    owners = [(kind, module) for kind in PARAMETER_KINDS for module in groups.get(kind, ())]
    owners.append(("other", loaded.module))
    for kind, module in owners:
        for parameter in module.parameters():
            if id(parameter) not in seen:
                seen.add(id(parameter))
                counts[kind] += parameter.numel()
    counts["total"] = sum(counts.values())
    return {k: int(counts.get(k, 0)) for k in (*PARAMETER_KINDS, "other", "total")}


def stage_shapes(dims: ModelDims, trace: AttentionTrace) -> list[tuple[str, str, str]]:
    """``(stage, shape, note)`` of seed 3.5's data flow for this run (batch of 1); stages and
    notes in the current language."""
    rows = []
    B, H, Hkv, dh, D, F = (1, dims.n_heads, dims.n_kv_heads, dims.d_head, dims.d_model,
                           dims.d_ff)
    for stack in trace.family.stacks:
        tokens = trace.axes(f"{stack}.self")[0]
        L = len(tokens)
        n = trace.layers(f"{stack}.self")
        s = {"encoder": _("encoder"), "decoder": _("decoder")}.get(stack, stack)
        rows += [
            (_("{stack}: token ids").format(stack=s), f"({B}, {L})",
             _("B = batch, L = tokens")),
            (_("{stack}: embeddings (+ positions)").format(stack=s), f"({B}, {L}, {D})",
             "d_model"),
            (_("{stack}: Q after the head split").format(stack=s), f"({B}, {H}, {L}, {dh})",
             "d_head = d_model/h" if H * dh == D else _("d_head from the config")),
            (_("{stack}: K, V").format(stack=s), f"({B}, {Hkv}, {L}, {dh})",
             _("{kv_heads} K/V heads shared by {group} query heads each").format(
                 kv_heads=Hkv, group=H // Hkv) if Hkv < H else ""),
            (_("{stack}: scores QKᵀ/√d_k").format(stack=s), f"({B}, {H}, {L}, {L})",
             _("the O(L²) part")),
            (_("{stack}: weights × V, heads joined, W_O").format(stack=s), f"({B}, {L}, {D})",
             ""),
            (_("{stack}: FFN {d_model}→{d_ff}→{d_model}").format(stack=s, d_model=D, d_ff=F),
             f"({B}, {L}, {D})", _("repeated for {count} layers").format(count=n)),
        ]
    if trace.family is Family.ENCODER_DECODER:
        S, T = len(trace.source_tokens), len(trace.target_tokens)
        rows.insert(len(rows) - 1, (_("decoder: cross-attention scores"),
                                    f"({B}, {H}, {T}, {S})",
                                    _("target queries × source keys")))
    return rows


def attention_costs(dims: ModelDims, trace: AttentionTrace, bytes_per_value: int = 4) -> dict:
    """Sizes for this input: attention weights of every layer and head, and the KV cache."""
    elements = 0
    kv = 0
    for name in trace.names:
        q, k = (len(t) for t in trace.axes(name))
        elements += trace.layers(name) * trace.n_heads * q * k
        if name.startswith("decoder."):  # what generation keeps per layer
            kv += 2 * trace.layers(name) * dims.n_kv_heads * dims.d_head * k
    kv_mha = kv * dims.group
    return {"attention_values": elements, "attention_bytes": elements * bytes_per_value,
            "kv_cache_bytes": kv * bytes_per_value, "kv_cache_bytes_without_gqa":
            kv_mha * bytes_per_value}


def longest_axis(trace: AttentionTrace) -> int:
    """The longest token axis of the trace: the n of n²·d."""
    return max(len(t) for name in trace.names for t in trace.axes(name))
