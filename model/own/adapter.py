"""The own Transformer as a :class:`~model.interface.LoadedModel`: ``own-random`` (and, through
:mod:`model.own.translator`, the trained translator).

``own-random`` is the seed-default encoder-decoder (d_model 512, 8 heads, 6 + 6 layers, d_ff 2048)
with weights drawn from a fixed seed, so every load gives the same model. It has no trained
vocabulary: :meth:`OwnModel.trace` builds a word-level vocabulary from the text it is given
(ids in order of first appearance, case-insensitive, at most ``RANDOM_VOCAB - 4`` distinct
words). The encoder reads the words; the decoder, teacher-forced, reads ``<bos>`` followed by
the target words, which default to the source words themselves (the source shifted right by
one position, as in training a copy task). Its attention shows structure (positions,
repeated words) but no learned meaning.
"""

from __future__ import annotations

import numpy as np
import torch

from i18n import _
from model.budget import Lengths, dense_bytes
from model.device import dtype_name, resolve_device, resolve_dtype
from model.errors import UnknownWordsError
from model.interface import Intervenes
from model.meta import CAUSAL_KINDS, Family, ModelDims, PositionInfo, Step, model_facts
from model.own import moves
from model.own.config import TransformerConfig
from model.own.hooks import capture
from model.own.position_encoding import sinusoidal_table
from model.own.transformer import (
    ATTENTION_MODULES,
    Embeddings,
    MultiHeadAttention,
    PositionwiseFFN,
    Transformer,
    attention_hook_name,
    causal_mask,
    padding_mask,
)
from model.own.vocab import BOS, SPECIALS, WordVocab, split_words
from model.reading.batch import AttentionBatch, padded_from_traces
from model.store import DenseStore
from model.text import check_text
from model.trace import TOKEN_FIELDS, AttentionTrace

RANDOM_SEED = 0
RANDOM_VOCAB = 1024


def stacks_from_capture(store: dict[str, torch.Tensor], batch_index: int = 0,
                        hook: str = "hook_pattern") -> dict:
    """Turn captured ``hook_pattern`` (or ``hook_scores``) tensors into trace arrays.

    Args:
        store: ``hook name -> [batch, head, query, key]`` from :func:`model.own.hooks.capture`.
        batch_index: which sequence of the batch to keep.
        hook: which hook point's values to collect.

    Returns:
        ``{"encoder.self" | "decoder.self" | "decoder.cross": float32 [layer, head, query, key]}``.
    """
    stacks = {}
    for kind in ATTENTION_MODULES:
        layers = []  # [head, query, key] per layer, while the store holds the next layer
        while (name := attention_hook_name(kind, len(layers), hook)) in store:
            layers.append(store[name][batch_index].float().cpu().numpy())
        if layers:
            stacks[kind] = np.stack(layers)  # [layer, head, query, key]
    return stacks


class OwnModel(Intervenes):
    """The own Transformer with its vocabularies, ready to trace text (a ``LoadedModel``).

    Args:
        name: the SPEC it was loaded as.
        network: the :class:`~model.own.transformer.Transformer`, in the precision it runs in
            (float32, or bfloat16/float16: see :meth:`_make_trace` for how its weights are
            read then).
        device: where it runs.
        src_vocab, tgt_vocab: fixed vocabularies; ``None`` builds one from each text.
    """

    _moves = moves  # What moves through model.own.moves: the hook points

    def __init__(self, name: str, network: Transformer, device: torch.device,
                 src_vocab: WordVocab | None = None, tgt_vocab: WordVocab | None = None):
        self.name = name
        self.network = network.to(device).eval()
        self.device = device
        self.src_vocab = src_vocab
        self.tgt_vocab = tgt_vocab

    @property
    def config(self) -> TransformerConfig:
        return self.network.cfg

    @property
    def dtype(self) -> str:
        """The precision of its weights: ``"float32"``, ``"bfloat16"`` or ``"float16"``."""
        return dtype_name(next(self.network.parameters()).dtype)

    @property
    def family(self) -> Family:
        return self.config.family

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every attention kind of its family."""
        return self.family.kinds

    @property
    def dims(self) -> ModelDims:
        cfg = self.config
        return ModelDims(d_model=cfg.d_model, n_heads=cfg.n_heads, n_kv_heads=cfg.n_heads,
                         d_head=cfg.d_head, d_ff=cfg.d_ff, n_encoder_layers=cfg.n_encoder_layers,
                         n_decoder_layers=cfg.n_decoder_layers)

    @property
    def positions(self) -> PositionInfo:
        cfg = self.config
        return PositionInfo(cfg.positional, max_positions=cfg.max_len,
                            rope_theta=cfg.rope_base if cfg.positional == "rope" else None)

    @property
    def module(self) -> torch.nn.Module:
        return self.network

    def parameter_modules(self) -> dict[str, list[torch.nn.Module]]:
        """Attention (W_Q, W_K, W_V, W_O), the FFNs and the token embeddings; the rest is the
        LayerNorms and the output projection."""
        kinds = {"attention": MultiHeadAttention, "ffn": PositionwiseFFN,
                 "embeddings": Embeddings}
        return {kind: [m for m in self.network.modules() if isinstance(m, cls)]
                for kind, cls in kinds.items()}

    def position_embeddings(self, n_positions: int) -> None:
        """None: the own models add a fixed table (or rotate by RoPE); they learn no vectors."""
        return None

    def position_table(self, n_positions: int) -> np.ndarray | None:
        """The sinusoidal table the embeddings add (seed 3.4), or None with RoPE."""
        if self.config.positional != "sinusoidal":
            return None
        return sinusoidal_table(n_positions, self.config.d_model).double().numpy()

    def count_tokens(self, text: str, target: str | None = None) -> Lengths:
        """The token counts a trace of ``text`` (and ``target``) would run on; nothing runs."""
        n_source = len(split_words(text))
        if self.family is not Family.ENCODER_DECODER:
            return Lengths(n_source)
        n_target = len(split_words(target)) if target is not None else \
            self._default_target_words(n_source)
        return Lengths(n_source, n_target + 1)  # <bos> and the words

    def _default_target_words(self, n_source: int) -> int:
        """How many words the target holds when none is given (own-random: the source's)."""
        return n_source

    def memory_needed(self, n: Lengths) -> int:
        """Peak bytes of a trace of ``n`` tokens (every weight and score kept)."""
        return dense_bytes(self.dims, self.family, n)

    @classmethod
    def random(cls, device: str = "auto", dtype: str = "auto") -> OwnModel:
        """``own-random``: the seed-default encoder-decoder with weights from a fixed seed
        (drawn in float32, then cast to ``dtype``: see :func:`~model.device.resolve_dtype`)."""
        cfg = TransformerConfig(src_vocab_size=RANDOM_VOCAB, tgt_vocab_size=RANDOM_VOCAB)
        generator_state = torch.random.get_rng_state()
        try:
            torch.manual_seed(RANDOM_SEED)
            network = Transformer(cfg)
        finally:
            torch.random.set_rng_state(generator_state)
        device_t = resolve_device(device)
        return cls("own-random", network.to(resolve_dtype(dtype, device_t)), device_t)

    def _vocabs(self, text: str, target: str | None) -> tuple[WordVocab, WordVocab]:
        if self.src_vocab is not None:
            return self.src_vocab, self.tgt_vocab or self.src_vocab
        vocab = WordVocab.from_text(text, target or "")
        if len(vocab) > self.config.src_vocab_size:
            raise ValueError(
                _("the text has {count} distinct words; {model} holds at most {most}").format(
                    count=len(vocab) - 4, model=self.name, most=self.config.src_vocab_size - 4))
        return vocab, vocab

    def trace(self, text: str, target: str | None = None) -> AttentionTrace:
        """Run the model on ``text`` and capture every attention pattern.

        Args:
            text: the source sentence (encoder input; the whole input of a single-stack model).
            target: encoder-decoder only: the target text, teacher-forced; ``None`` uses the
                source words.

        Returns:
            an :class:`~model.trace.AttentionTrace`.

        Raises:
            TypeError: ``text`` or ``target`` is not a string.
            ValueError: the text holds no words or invalid Unicode (a lone surrogate), a word
                outside a fixed vocabulary, or a target given to a single-stack model.
        """
        check_text(text)
        if target is not None:
            check_text(target, _("the target"))
            if self.family is not Family.ENCODER_DECODER:
                raise ValueError(_("a target text applies to encoder-decoder models; {model} is "
                                   "{family}").format(model=self.name, family=self.family.value))
        words = split_words(text)
        if not words:
            raise ValueError(_("the text holds no words"))
        src_vocab, tgt_vocab = self._vocabs(text, target)
        src_ids = _encode(src_vocab, words, "source")
        if self.family is Family.ENCODER_DECODER:
            if target is None:
                tgt_words = self._own_target(words, src_ids)
            else:
                tgt_words = split_words(target)
            tgt_ids = [tgt_vocab.bos_id, *_encode(tgt_vocab, tgt_words, "target")]
            src = torch.tensor([src_ids], device=self.device)  # [batch, source]
            tgt = torch.tensor([tgt_ids], device=self.device)  # [batch, target]
            tokens = dict(source_tokens=words, source_ids=src_ids,
                          target_tokens=[BOS, *tgt_words], target_ids=tgt_ids)
        else:
            src = tgt = torch.tensor([src_ids], device=self.device)  # [batch, pos]
            tokens = dict(tokens=words, ids=src_ids)
        with torch.inference_mode(), capture(self.network, _is_attention) as store:
            logits = self.network(src_ids=src, tgt_ids=tgt)[0]  # [position, vocab]
        return self._make_trace(store, tokens, steps=self._steps(logits, tokens))

    def attention_batch(self, texts: list[str]) -> AttentionBatch:
        """Trace each text (the own models run one sentence at a time) and hand their weights
        out as one padded batch (:class:`~model.reading.batch.AttentionBatch`)."""
        return padded_from_traces([self.trace(text) for text in texts], self.device)

    def _own_target(self, words: list[str], src_ids: list[int]) -> list[str]:
        """The target traced when none is given: own-random copies the source words."""
        return words

    def _steps(self, logits: torch.Tensor, tokens: dict) -> tuple[Step, ...]:
        """Per-step next-token distributions for the trace (none for an untrained model)."""
        return ()

    def _make_trace(self, store: dict, tokens: dict, steps=()) -> AttentionTrace:
        """The trace of one pass's captured hooks. In float32 the weights are the ones the
        model computed (``hook_pattern``); in half precision, whose softmax rounds each weight
        to that precision (rows summing to 1 only within about 1e-3), they are the softmax in
        float32 of the scores the model computed (``hook_scores``), masked as the model masks
        them: rows sum to 1 within float32 rounding, as in every trace."""
        scores = stacks_from_capture(store, hook="hook_scores")
        if next(self.network.parameters()).dtype == torch.float32:
            weights = stacks_from_capture(store)
        else:
            weights = {name: self._float32_weights(scores[name], name, tokens)
                       for name in scores}
        attention = {name: DenseStore(weights[name], scores[name], causal=name in CAUSAL_KINDS)
                     for name in self.family.kinds}
        return AttentionTrace(
            model=self.name, family=self.family, attention=attention,
            n_heads=self.dims.n_heads, n_kv_heads=self.dims.n_kv_heads,
            positional=self.positions.scheme, device=str(self.device),
            dtype=self.dtype,
            steps=steps, special_positions=_special_positions(tokens),
            meta=model_facts(self.dims, self.positions, model_type="own"), **tokens)


    def _float32_weights(self, scores: np.ndarray, kind: str, tokens: dict) -> np.ndarray:
        """``softmax(scores)`` in float32 with the mask the model applies to ``kind``
        (padding, and the causal triangle of decoder self-attention): ``[layer, head, query,
        key]``, float32."""
        source = tokens.get("source_ids", tokens.get("ids"))
        target = tokens.get("target_ids", tokens.get("ids"))
        pad = self.config.pad_id
        keys = torch.tensor([target if kind == "decoder.self" else source])  # [batch, key]
        allowed = padding_mask(keys, pad)[0]  # [1, 1, key]
        if kind == "decoder.self":
            allowed = allowed & causal_mask(keys.shape[1])[0]  # [1, query, key]
        s = torch.from_numpy(scores).float().masked_fill(~allowed, float("-inf"))
        return torch.softmax(s, dim=-1).numpy()  # [layer, head, query, key]


def _encode(vocab: WordVocab, words: list[str], side: str) -> list[int]:
    """Ids of ``words``; unknown words are reported with the text (source or target) they
    came from."""
    try:
        return vocab.encode(words)
    except UnknownWordsError as error:
        raise UnknownWordsError(error.words, side=side) from None


def _special_positions(tokens: dict) -> dict[str, list[int]]:
    """Where ``<bos>``-style tokens stand, per token axis (``tokens``, ``source``, ``target``)."""
    return {axis: [i for i, t in enumerate(tokens[field]) if t in SPECIALS]
            for axis, (field, _ids) in TOKEN_FIELDS.items() if field in tokens}


def _is_attention(name: str) -> bool:
    return name.endswith(("hook_pattern", "hook_scores"))
