"""The project's own Transformer, written in the order and vocabulary of the seed.

Seed 4.9 gives the attention function and multi-head attention; seed 3.3 the post-norm residual
sublayer ``LayerNorm(x + sublayer(x))``; seed 3.2 the encoder and decoder stacks; seed 3.4 the
positional encodings and the causal mask. Encoder-only, decoder-only and encoder-decoder models
are configurations of the same classes (see :class:`model.own.config.TransformerConfig`).

Every attention module carries identity hook points (:class:`model.own.hooks.HookPoint`):
``hook_q``, ``hook_k``, ``hook_v`` (per-head projections), ``hook_scores`` (QKᵀ/√d_head before
masking), ``hook_pattern`` (weights after softmax) and ``hook_z`` (weights · V).

Hook names are set when a :class:`Transformer` is built (:func:`model.own.hooks.name_hooks`):
each module's path, recorded by :func:`model.own.hooks.record` (``out``: what the module
returns; ``in``: what it receives, by parameter name). ``{stack}`` is ``encoder`` or
``decoder``, ``{embed}`` its embeddings (``src_embed``, ``tgt_embed``), ``{attn}``
``self_attn`` or ``cross_attn`` (:func:`attention_hook_name`), ``{res}`` the residual module of
a sublayer (``residual_attn``, ``residual_ffn``; in the decoder ``residual_self``,
``residual_cross``, ``residual_ffn``). The residual stream is ``[B, L, d_model]`` throughout::

    {embed}.token                       out [B, L, d_model]   token rows, before × √d_model
    {embed}                             out [B, L, d_model]   the stream entering layer 0
    {stack}.layers.{i}.{res}            in  x [B, L, d_model] the stream entering the sublayer,
                                            sublayer_out [B, L, d_model] the sublayer's update
                                        out [B, L, d_model]   LayerNorm(x + sublayer(x)): the
                                                              stream leaving the sublayer
    {stack}.layers.{i}.{res}.norm       in  input [B, L, d_model]  x + sublayer(x)
    {stack}.layers.{i}.{attn}           in  query [B, L_q, d_model], key, value [B, L_k, d_model],
                                            mask (broadcastable to [B, h, L_q, L_k])
                                        out (output [B, L_q, d_model], weights [B, h, L_q, L_k])
    {stack}.layers.{i}.{attn}.hook_q    out [B, h, L_q, d_head]  (hook_k, hook_v: L_k)
    {stack}.layers.{i}.{attn}.hook_scores, .hook_pattern   out [B, h, L_q, L_k]
    {stack}.layers.{i}.{attn}.hook_z    out [B, h, L_q, d_head]  weights · V
    {stack}.layers.{i}.{attn}.W_O       in  input [B, L_q, d_model]  the heads side by side
    {stack}.layers.{i}.ffn.W_1          out [B, L, d_ff]      the hidden layer, before ReLU
    {stack}.layers.{i}.ffn              out [B, L, d_model]   the FFN's update

Names follow the config: ``d_head`` is the seed's d_k (the width of one head), ``n_heads`` its h.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from i18n import _
from model.meta import Family
from model.own.config import TransformerConfig
from model.own.hooks import HookPoint, name_hooks
from model.own.position_encoding import rope_rotate, sinusoidal_table


def causal_mask(length: int, device: torch.device | str | None = None,
                past: int = 0) -> torch.Tensor:
    """Lower-triangular mask of seed 3.4 step 2a: ``[1, 1, L, past + L]`` bool, True = may
    attend; ``past``: tokens already in a :class:`KVCache`, which every new query may read."""
    ones = torch.ones(length, past + length, dtype=torch.bool, device=device)
    return torch.tril(ones, diagonal=past)[None, None]


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Keys that are not padding: ``[B, 1, 1, L]`` bool, True = may attend."""
    return (ids != pad_id)[:, None, None, :]


# Where each attention kind lives in a Transformer: (stack, the layer's attribute).
ATTENTION_MODULES = {"encoder.self": ("encoder", "self_attn"),
                     "decoder.self": ("decoder", "self_attn"),
                     "decoder.cross": ("decoder", "cross_attn")}


def attention_hook_name(kind: str, layer: int, hook: str = "") -> str:
    """The hook name of ``kind``'s attention module in ``layer`` (``hook`` given: of that hook
    point in it): ``attention_hook_name("decoder.cross", 0, "hook_pattern")`` is
    ``"decoder.layers.0.cross_attn.hook_pattern"``."""
    stack, attribute = ATTENTION_MODULES[kind]
    return f"{stack}.layers.{int(layer)}.{attribute}" + (f".{hook}" if hook else "")


class KVCache:
    """Keys and values of one kind of attention, per layer, kept between forward passes (as
    transformers' ``Cache``): a pass over the newest tokens projects only them.

    Args:
        static: the keys and values are projected once, on the first pass, and read as they are
            afterwards (cross-attention: they come from the encoder's output, which does not
            change); otherwise each pass appends its tokens' keys and values (self-attention).
    """

    def __init__(self, static: bool = False):
        self.static = static
        self.keys: list[torch.Tensor] = []  # per layer: [batch, head, key, d_head]
        self.values: list[torch.Tensor] = []

    def __len__(self) -> int:
        """How many layers hold keys and values."""
        return len(self.keys)

    @property
    def tokens(self) -> int:
        """How many key positions a layer holds (0 before the first pass)."""
        return self.keys[0].size(2) if self.keys else 0

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """Append ``k``, ``v`` ``[batch, head, new, d_head]`` to ``layer``'s cache (a static
        cache keeps the first ones) and return everything it holds, ``(keys, values)``."""
        if layer == len(self.keys):
            self.keys.append(k)
            self.values.append(v)
        elif not self.static:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)
        return self.keys[layer], self.values[layer]

    def nbytes(self) -> list[int]:
        """Bytes of each layer's keys plus values."""
        return [k.numel() * k.element_size() + v.numel() * v.element_size()
                for k, v in zip(self.keys, self.values)]


class DecoderCache:
    """What a decoder keeps between passes (transformers' ``EncoderDecoderCache``): the
    self-attention's keys and values (one more token each pass), the cross-attention's (the
    encoder's output projected once) and which cached tokens are not padding (``keep``,
    ``[batch, 1, 1, tokens]``), so that a pass over the newest tokens with the cache equals the
    full pass over every token."""

    def __init__(self):
        self.self_attn = KVCache()
        self.cross_attn = KVCache(static=True)
        self.keep: torch.Tensor | None = None

    @property
    def tokens(self) -> int:
        """How many target tokens the cache has seen."""
        return 0 if self.keep is None else self.keep.size(-1)


def attention(Q, K, V, mask=None, *, scores_hook=None, pattern_hook=None):
    """Scaled dot-product attention of seed 4.9, returning (output, weights).

    Args:
        Q: ``[B, n_heads, L_q, d_head]`` queries.
        K: ``[B, n_heads, L_k, d_head]`` keys.
        V: ``[B, n_heads, L_k, d_v]`` values.
        mask: broadcastable to ``[B, n_heads, L_q, L_k]``; where it is 0/False gets -inf.
        scores_hook: optional callable applied to the scaled scores before masking.
        pattern_hook: optional callable applied to the weights after softmax.

    Returns:
        ``(output [B, n_heads, L_q, d_v], weights [B, n_heads, L_q, L_k])``.
    """
    d_head = Q.size(-1)  # the seed's d_k
    # ① scores: every q against every k -> [batch, head, query, key]
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_head)
    if scores_hook is not None:
        scores = scores_hook(scores)
    # ② mask: forbidden positions get -inf (causal mask / padding)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    # ③ softmax: each row becomes weights summing to 1
    weights = F.softmax(scores, dim=-1)
    if pattern_hook is not None:
        weights = pattern_hook(weights)
    # ④ weighted sum of V -> [batch, head, query, d_v]
    return torch.matmul(weights, V), weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention with W_Q, W_K, W_V, W_O (seed 4.6, 4.9).

    Args:
        d_model: model width.
        n_heads: number of heads (the seed's h); each has ``d_head = d_model / n_heads``.
        rope_base: when given, Q and K are rotated by position (RoPE) before the scores.
    """

    def __init__(self, d_model: int = 512, n_heads: int = 8, rope_base: float | None = None):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_head = d_model // n_heads
        self.n_heads = n_heads
        self.rope_base = rope_base
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.hook_q = HookPoint()
        self.hook_k = HookPoint()
        self.hook_v = HookPoint()
        self.hook_scores = HookPoint()
        self.hook_pattern = HookPoint()
        self.hook_z = HookPoint()

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, L, d_model] -> [B, n_heads, L, d_head]``."""
        B = x.size(0)
        # [batch, pos, d_model] -> [batch, head, pos, d_head]
        return x.view(B, -1, self.n_heads, self.d_head).transpose(1, 2)

    def forward(self, query, key, value, mask=None, q_positions=None, k_positions=None,
                cache: KVCache | None = None, layer: int = 0):
        """Attend from ``query [B, L_q, d_model]`` to ``key``/``value [B, L_k, d_model]``.

        With a ``cache``, ``key``/``value`` are the newest tokens only: their keys and values
        join ``layer``'s cache and the queries read everything it holds (a static cache that
        already holds ``layer``'s are read as they are, and ``key``/``value`` are not
        projected). Hooks see what this pass computes: ``hook_k``, ``hook_v`` the newest keys
        and values, ``hook_scores``, ``hook_pattern`` ``[B, h, L_q, every cached key]``.

        Returns:
            ``(output [B, L_q, d_model], weights [B, h, L_q, L_k])``.
        """
        B = query.size(0)
        Q = self.split_heads(self.W_Q(query))  # [batch, head, query, d_head]
        if self.rope_base is not None:
            if q_positions is None:
                q_positions = torch.arange(Q.size(2), device=Q.device)
            Q = rope_rotate(Q, q_positions, self.rope_base)
        Q = self.hook_q(Q)
        if cache is not None and cache.static and layer < len(cache):
            K, V = cache.keys[layer], cache.values[layer]  # projected by an earlier pass
        else:
            K, V = self._keys_values(key, value, k_positions)
            if cache is not None:
                K, V = cache.update(layer, K, V)  # [batch, head, every cached key, d_head]
        z, weights = attention(
            Q, K, V, mask, scores_hook=self.hook_scores, pattern_hook=self.hook_pattern
        )
        z = self.hook_z(z)  # [batch, head, query, d_head]
        # [batch, head, query, d_head] -> [batch, query, d_model]
        out = z.transpose(1, 2).contiguous().view(B, -1, self.n_heads * self.d_head)
        return self.W_O(out), weights

    def _keys_values(self, key, value, k_positions=None):
        """``key``/``value [B, L_k, d_model]`` -> hooked ``(K, V) [B, h, L_k, d_head]``, K
        rotated by position under RoPE."""
        K = self.split_heads(self.W_K(key))  # [batch, head, key, d_head]
        V = self.split_heads(self.W_V(value))  # [batch, head, key, d_head]
        if self.rope_base is not None:
            if k_positions is None:
                k_positions = torch.arange(K.size(2), device=K.device)
            K = rope_rotate(K, k_positions, self.rope_base)
        return self.hook_k(K), self.hook_v(V)


class PositionwiseFFN(nn.Module):
    """The position-wise feed-forward network: d_model -> d_ff -> ReLU -> d_model."""

    def __init__(self, d_model: int = 512, d_ff: int = 2048):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, L, d_model] -> [B, L, d_model]``."""
        return self.W_2(F.relu(self.W_1(x)))


class ResidualNorm(nn.Module):
    """Post-norm residual of seed 3.3: ``LayerNorm(x + Dropout(sublayer(x)))``."""

    def __init__(self, d_model: int, dropout: float):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, sublayer_out: torch.Tensor) -> torch.Tensor:
        """Add the sublayer's output to ``x`` and normalise."""
        return self.norm(x + self.dropout(sublayer_out))


class EncoderLayer(nn.Module):
    """Self-attention, Add & Norm, FFN, Add & Norm (seed 3.3)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        rope = cfg.rope_base if cfg.positional == "rope" else None
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, rope_base=rope)
        self.ffn = PositionwiseFFN(cfg.d_model, cfg.d_ff)
        self.residual_attn = ResidualNorm(cfg.d_model, cfg.dropout)
        self.residual_ffn = ResidualNorm(cfg.d_model, cfg.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """``[B, L, d_model] -> [B, L, d_model]``."""
        a, _weights = self.self_attn(x, x, x, mask)
        x = self.residual_attn(x, a)
        return self.residual_ffn(x, self.ffn(x))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention (encoder-decoder only), FFN; each with Add & Norm.

    RoPE, when configured, applies to self-attention only: in cross-attention queries and keys
    come from different sequences, so a relative offset between them means nothing.
    """

    def __init__(self, cfg: TransformerConfig, with_cross: bool):
        super().__init__()
        rope = cfg.rope_base if cfg.positional == "rope" else None
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, rope_base=rope)
        self.residual_self = ResidualNorm(cfg.d_model, cfg.dropout)
        if with_cross:
            self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads)
            self.residual_cross = ResidualNorm(cfg.d_model, cfg.dropout)
        else:
            self.cross_attn = None
        self.ffn = PositionwiseFFN(cfg.d_model, cfg.d_ff)
        self.residual_ffn = ResidualNorm(cfg.d_model, cfg.dropout)

    def forward(self, x, tgt_mask, memory=None, src_mask=None, cache: DecoderCache | None = None,
                layer: int = 0, positions=None):
        """``x [B, T, d_model]``, ``memory [B, S, d_model]`` -> ``[B, T, d_model]``.

        With a ``cache`` (this is decoder layer ``layer``), ``x`` holds the newest tokens, at
        ``positions`` ``[T]``, and the attention reads and extends the cached keys and values.
        """
        self_cache = cross_cache = None
        if cache is not None:
            self_cache, cross_cache = cache.self_attn, cache.cross_attn
        a, _weights = self.self_attn(x, x, x, tgt_mask, positions, positions,
                                     cache=self_cache, layer=layer)
        x = self.residual_self(x, a)
        if self.cross_attn is not None:
            c, _weights = self.cross_attn(x, memory, memory, src_mask,
                                          cache=cross_cache, layer=layer)
            x = self.residual_cross(x, c)
        return self.residual_ffn(x, self.ffn(x))


class Embeddings(nn.Module):
    """Token embedding scaled by √d_model, plus the sinusoidal table when configured."""

    def __init__(self, vocab_size: int, cfg: TransformerConfig):
        super().__init__()
        self.d_model = cfg.d_model
        self.max_len = cfg.max_len
        self.token = nn.Embedding(vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.dropout = nn.Dropout(cfg.dropout)
        if cfg.positional == "sinusoidal":
            self.register_buffer("pe", sinusoidal_table(cfg.max_len, cfg.d_model), persistent=False)
        else:
            self.pe = None

    def forward(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """``ids [B, L] -> [B, L, d_model]``; ``start``: the position of the first id (the
        tokens a :class:`DecoderCache` already holds)."""
        L = start + ids.size(1)
        if L > self.max_len:
            raise ValueError(_("sequence of {length} tokens is longer than max_len={max_len}")
                             .format(length=L, max_len=self.max_len))
        x = self.token(ids) * math.sqrt(self.d_model)  # [batch, pos, d_model]
        if self.pe is not None:
            x = x + self.pe[start:L]
        return self.dropout(x)


class Encoder(nn.Module):
    """A stack of encoder layers."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _layer in range(cfg.n_encoder_layers))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        """``[B, S, d_model] -> [B, S, d_model]``."""
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Decoder(nn.Module):
    """A stack of decoder layers (with cross-attention when the model has an encoder)."""

    def __init__(self, cfg: TransformerConfig, with_cross: bool):
        super().__init__()
        self.layers = nn.ModuleList(
            DecoderLayer(cfg, with_cross) for _layer in range(cfg.n_decoder_layers)
        )

    def forward(self, x, tgt_mask, memory=None, src_mask=None, cache: DecoderCache | None = None,
                positions=None):
        """``[B, T, d_model] -> [B, T, d_model]``; with a ``cache``, ``x`` holds the newest
        tokens, at ``positions`` (see :meth:`DecoderLayer.forward`)."""
        if cache is None:
            for layer in self.layers:
                x = layer(x, tgt_mask, memory, src_mask)
            return x
        for i, layer in enumerate(self.layers):
            x = layer(x, tgt_mask, memory, src_mask, cache=cache, layer=i, positions=positions)
        return x


class Transformer(nn.Module):
    """Encoder-only, decoder-only or encoder-decoder Transformer with an output projection.

    The output projection maps to the target vocabulary (the source vocabulary for an
    encoder-only model).
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        has_encoder = cfg.n_encoder_layers > 0
        has_decoder = cfg.n_decoder_layers > 0
        self.src_embed = Embeddings(cfg.src_vocab_size, cfg) if has_encoder else None
        self.encoder = Encoder(cfg) if has_encoder else None
        self.tgt_embed = Embeddings(cfg.tgt_vocab_size, cfg) if has_decoder else None
        self.decoder = Decoder(cfg, with_cross=has_encoder) if has_decoder else None
        out_vocab = cfg.tgt_vocab_size if has_decoder else cfg.src_vocab_size
        self.generator = nn.Linear(cfg.d_model, out_vocab)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        name_hooks(self)  # every module's hook name: its path ("decoder.layers.0.cross_attn")

    def encode(self, src_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the encoder: ``src_ids [B, S]`` -> ``(memory [B, S, d_model], src_mask)``."""
        if self.encoder is None:
            raise ValueError("this configuration has no encoder")
        src_mask = padding_mask(src_ids, self.cfg.pad_id)  # [batch, 1, 1, key]
        return self.encoder(self.src_embed(src_ids), src_mask), src_mask

    def decode(self, tgt_ids, memory=None, src_mask=None,
               cache: DecoderCache | None = None) -> torch.Tensor:
        """Run the decoder: ``tgt_ids [B, T]`` -> ``[B, T, d_model]`` (causal + padding mask).

        With a ``cache``, ``tgt_ids`` are the tokens after those the cache holds: only they are
        computed, their keys and values join the cache, and the output equals the last ``T``
        rows of the full pass over every token (the decoder is causal). The cross-attention's
        keys and values are projected from ``memory`` on the first pass only.
        """
        if self.decoder is None:
            raise ValueError("this configuration has no decoder")
        T = tgt_ids.size(1)
        if cache is None:
            tgt_mask = causal_mask(T, tgt_ids.device) & padding_mask(tgt_ids, self.cfg.pad_id)
            return self.decoder(self.tgt_embed(tgt_ids), tgt_mask, memory, src_mask)
        start = cache.tokens
        x = self.tgt_embed(tgt_ids, start)  # [batch, new, d_model]
        keep = padding_mask(tgt_ids, self.cfg.pad_id)  # [batch, 1, 1, new]
        cache.keep = keep if cache.keep is None else torch.cat([cache.keep, keep], dim=-1)
        tgt_mask = causal_mask(T, tgt_ids.device, past=start) & cache.keep  # [b, 1, new, all]
        positions = torch.arange(start, start + T, device=tgt_ids.device)
        return self.decoder(x, tgt_mask, memory, src_mask, cache=cache, positions=positions)

    def forward(self, src_ids=None, tgt_ids=None) -> torch.Tensor:
        """Logits ``[B, L, vocab]`` for the target (or, encoder-only, the source) positions."""
        family = self.cfg.family
        if family is Family.ENCODER_ONLY:
            memory, _mask = self.encode(src_ids)
            return self.generator(memory)
        if family is Family.DECODER_ONLY:
            return self.generator(self.decode(tgt_ids))
        memory, src_mask = self.encode(src_ids)
        return self.generator(self.decode(tgt_ids, memory, src_mask))
