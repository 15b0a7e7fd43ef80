"""Shapes and costs of the current run (seed 3.5 and 3.8): tensor shapes per stage, parameters
in attention versus FFN, the size of the attention matrices and of the KV cache."""

from __future__ import annotations

from collections import Counter

from .trace import AttentionTrace

_ATTENTION = {"self_attn", "cross_attn", "attn", "attention", "self", "selfattention",
              "encdecattention", "encoder_attn", "crossattention"}
_FFN = ("mlp", "ffn", "intermediate", "densereludense", "fc1", "fc2", "feed_forward")
_EMBEDDINGS = ("embed", "wte", "wpe", "shared")


def dims(loaded) -> dict:
    """``d_model, n_heads, n_kv_heads, d_head, d_ff`` of a loaded model."""
    from .hf import HFModel

    if not isinstance(loaded, HFModel):
        cfg = loaded.config
        return {"d_model": cfg.d_model, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_heads,
                "d_head": cfg.d_head, "d_ff": cfg.d_ff}
    cfg = loaded.config
    d_model = getattr(cfg, "hidden_size", None) or getattr(cfg, "d_model", None) or cfg.n_embd
    n_heads = cfg.num_attention_heads
    d_head = getattr(cfg, "head_dim", None) or getattr(cfg, "d_kv", None) or d_model // n_heads
    d_ff = (getattr(cfg, "intermediate_size", None) or getattr(cfg, "d_ff", None)
            or getattr(cfg, "encoder_ffn_dim", None) or getattr(cfg, "n_inner", None)
            or 4 * d_model)
    return {"d_model": d_model, "n_heads": n_heads,
            "n_kv_heads": getattr(cfg, "num_key_value_heads", None) or n_heads,
            "d_head": d_head, "d_ff": d_ff}


def parameter_split(loaded) -> dict[str, int]:
    """Parameters in attention, FFN, embeddings and the rest (norms, output head)."""
    from .hf import HFModel

    module = loaded.model if isinstance(loaded, HFModel) else loaded.network
    counts: Counter[str] = Counter()
    seen = set()
    for name, parameter in module.named_parameters():
        if id(parameter) in seen:  # tied weights count once
            continue
        seen.add(id(parameter))
        parts = name.lower().split(".")
        if any(p in _ATTENTION or p.endswith("attention") for p in parts):
            kind = "attention"
        elif any(p.startswith(_FFN) for p in parts) or ("output" in parts and "dense" in parts):
            kind = "ffn"
        elif any(p.startswith(_EMBEDDINGS) or p.endswith(_EMBEDDINGS) for p in parts):
            kind = "embeddings"
        else:
            kind = "other"
        counts[kind] += parameter.numel()
    counts["total"] = sum(counts.values())
    return {k: int(counts.get(k, 0)) for k in ("attention", "ffn", "embeddings", "other",
                                                 "total")}


def stage_shapes(loaded, trace: AttentionTrace) -> list[tuple[str, str, str]]:
    """``(stage, shape, note)`` of seed 3.5's data flow for this run (batch of 1)."""
    d = dims(loaded)
    rows = []
    stacks = [("encoder", trace.source_tokens if trace.family == "encoder-decoder"
               else trace.tokens)] if trace.family != "decoder-only" else []
    if trace.family != "encoder-only":
        stacks.append(("decoder", trace.target_tokens if trace.family == "encoder-decoder"
                       else trace.tokens))
    B, H, Hkv, dh, D, F = 1, d["n_heads"], d["n_kv_heads"], d["d_head"], d["d_model"], d["d_ff"]
    for stack, tokens in stacks:
        L = len(tokens)
        n = trace.layers(f"{stack}.self")
        rows += [
            (f"{stack}: token ids", f"({B}, {L})", "B = batch, L = tokens"),
            (f"{stack}: embeddings (+ positions)", f"({B}, {L}, {D})", "d_model"),
            (f"{stack}: Q after the head split", f"({B}, {H}, {L}, {dh})", "d_head = d_model/h"
             if H * dh == D else "d_head from the config"),
            (f"{stack}: K, V", f"({B}, {Hkv}, {L}, {dh})",
             f"{Hkv} K/V heads shared by {H // Hkv} query heads each" if Hkv < H else ""),
            (f"{stack}: scores QKᵀ/√d_k", f"({B}, {H}, {L}, {L})", "the O(L²) part"),
            (f"{stack}: weights × V, heads joined, W_O", f"({B}, {L}, {D})", ""),
            (f"{stack}: FFN {D}→{F}→{D}", f"({B}, {L}, {D})", f"repeated for {n} layers"),
        ]
    if trace.family == "encoder-decoder":
        S, T = len(trace.source_tokens), len(trace.target_tokens)
        rows.insert(len(rows) - 1, ("decoder: cross-attention scores", f"({B}, {H}, {T}, {S})",
                                    "target queries × source keys"))
    return rows


def attention_costs(loaded, trace: AttentionTrace, bytes_per_value: int = 4) -> dict:
    """Sizes for this input: attention weights of every layer and head, and the KV cache."""
    d = dims(loaded)
    elements = 0
    for name in trace.names:
        q, k = (len(t) for t in trace.axes(name))
        elements += trace.layers(name) * trace.n_heads * q * k
    kv = 0
    for name in trace.names:
        q, k = (len(t) for t in trace.axes(name))
        if name in ("decoder.self", "decoder.cross"):  # what generation keeps per layer
            kv += 2 * trace.layers(name) * d["n_kv_heads"] * d["d_head"] * k
    kv_mha = kv * d["n_heads"] // d["n_kv_heads"]
    return {"attention_values": elements, "attention_bytes": elements * bytes_per_value,
            "kv_cache_bytes": kv * bytes_per_value, "kv_cache_bytes_without_gqa":
            kv_mha * bytes_per_value}
