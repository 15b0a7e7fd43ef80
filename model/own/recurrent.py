"""The lesson's RNN half: recurrent encoder-decoders of our own, on the translator's corpus
(seed 3.1, 3.6, 5.1).

Three models share every module and size; they differ in their cell and in what the decoder
reads from the source at each step:

- ``own-rnn``: Elman's plain tanh RNN, the single vector (the "RNN" column of seed 5.1);
- ``own-gru`` (Cho et al. 2014): a gated GRU, the **single vector**. The encoder's last hidden
  state is the whole sentence's "note"; the decoder starts from it and reads the same vector at
  every step. Nothing else of the source reaches it (the information bottleneck of seed 3.1).
- ``own-bahdanau`` (Bahdanau et al. 2014, "attention's first form"): **additive attention**.
  At every step the decoder scores each of the encoder's hidden states against its own previous
  state, ``e_j = vᵀ tanh(W_s s_{t−1} + W_h h_j)``, turns the scores into weights with a softmax
  (padding masked) and reads their weighted average ``c_t = Σ_j α_tj h_j``. The weights ``α``
  are its alignment: row t is where the decoder looked while writing word t. Simplified from
  the paper in one respect: the encoder reads left to right only (the paper's annotations join
  a forward and a backward pass) and the decoder starts from its last state, as the
  single-vector models do, so that the three differ in attention alone.

All read one word per step, left to right, with a :class:`torch.nn.GRUCell` or
:class:`torch.nn.RNNCell` (seed 3.6: serial, O(n) steps). Weights ship in ``weights/`` with a
JSON card; :mod:`model.own.train_recurrent` reproduces them bit for bit.

:class:`RecurrentTranslator` is a :class:`~model.interface.LoadedModel` (``load("own-gru")``): its
trace is an encoder-decoder trace holding the one attention it has, ``decoder.cross`` (one layer,
one head, target × source): Bahdanau's weights as the decoder computed them at each step, and
for the single-vector models the read they make instead, all of it on the encoder's last state
(the context they read at every step is that state, ``c_t = h_n``: a weight of 1 on the last
word and 0 elsewhere, exactly). Neither has self-attention: the encoder and the decoder each
carry a state from word to word instead.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from i18n import _
from model.budget import Lengths, dense_bytes
from model.device import dtype_name, resolve_device, resolve_dtype
from model.errors import CaptureError
from model.loader import RECURRENT
from model.meta import (
    ADDITIVE,
    LAST_STATE,
    RECURRENCE,
    Family,
    ModelDims,
    PositionInfo,
    model_facts,
)
from model.own.vocab import BOS, WordVocab, split_words
from model.store import DenseStore
from model.text import check_text

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
# The single-vector models (a plain tanh RNN, a GRU), then the GRU with additive attention
# (named once, where load() routes them).
MODELS = RECURRENT
CELLS = {"rnn": nn.RNNCell, "gru": nn.GRUCell}


def weights_path(name: str, folder: Path = WEIGHTS_DIR) -> Path:
    """Where ``name``'s weights are kept (safetensors)."""
    return folder / f"{name}.safetensors"


def card_path(name: str, folder: Path = WEIGHTS_DIR) -> Path:
    """Where ``name``'s card (config, vocabularies, training, held-out scores) is kept."""
    return folder / f"{name}.json"


@dataclass(frozen=True)
class RecurrentConfig:
    """Sizes of a GRU encoder-decoder.

    Args:
        src_vocab_size, tgt_vocab_size: vocabulary sizes (specials included).
        d_embed: width of a word embedding.
        d_hidden: width of the GRU's hidden state (the "note").
        attention: additive attention (``own-bahdanau``) or the single vector (``own-gru``,
            ``own-rnn``).
        cell: ``"gru"`` (gated, Cho et al. 2014) or ``"rnn"`` (Elman's plain
            ``h = tanh(W x + U h + b)``, the RNN of seed 5.1).
        pad_id: the padding id of both vocabularies.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_embed: int = 64
    d_hidden: int = 128
    attention: bool = False
    cell: str = "gru"
    pad_id: int = 0

    def __post_init__(self):
        if self.cell not in CELLS:
            raise ValueError(f"cell must be one of {tuple(CELLS)}, not {self.cell!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class AdditiveAttention(nn.Module):
    """Bahdanau's score ``vᵀ tanh(W_s s + W_h h_j)``, softmax over the source, weighted sum."""

    def __init__(self, d_hidden: int):
        super().__init__()
        self.W_s = nn.Linear(d_hidden, d_hidden, bias=False)
        self.W_h = nn.Linear(d_hidden, d_hidden, bias=True)
        self.v = nn.Linear(d_hidden, 1, bias=False)

    def forward(self, state: torch.Tensor, keys: torch.Tensor, annotations: torch.Tensor,
                allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step's context and weights.

        Args:
            state: the decoder's previous state ``[batch, d_hidden]``.
            keys: ``W_h h_j`` for every source position ``[batch, source, d_hidden]``.
            annotations: the encoder's states ``h_j`` ``[batch, source, d_hidden]``.
            allowed: ``[batch, source]``, False at padding.

        Returns:
            the context ``[batch, d_hidden]`` and the weights ``[batch, source]``.
        """
        scores = self.v(torch.tanh(self.W_s(state)[:, None] + keys))[..., 0]  # [batch, source]
        # the softmax in float32 whatever the weights' precision (a no-op in float32): rows sum
        # to 1 to float32 precision in half precision too
        weights = torch.softmax(scores.float().masked_fill(~allowed, float("-inf")), dim=-1)
        return (weights.to(annotations.dtype)[..., None] * annotations).sum(1), weights


class RecurrentSeq2Seq(nn.Module):
    """A GRU encoder and a GRU decoder, with or without additive attention."""

    def __init__(self, cfg: RecurrentConfig):
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_embed, padding_idx=cfg.pad_id)
        cell = CELLS[cfg.cell]
        self.encoder = cell(cfg.d_embed, cfg.d_hidden)
        self.decoder = cell(cfg.d_embed + cfg.d_hidden, cfg.d_hidden)
        self.attention = AdditiveAttention(cfg.d_hidden) if cfg.attention else None
        self.out = nn.Linear(2 * cfg.d_hidden + cfg.d_embed, cfg.tgt_vocab_size)

    def encode_embedded(self, x: torch.Tensor, allowed: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """Read embedded words one at a time, left to right (padding leaves the state alone).

        Args:
            x: ``[batch, source, d_embed]``.
            allowed: ``[batch, source]``, False at padding.

        Returns:
            every step's state ``[batch, source, d_hidden]`` and the last real word's state
            ``[batch, d_hidden]`` (the single vector).
        """
        h = x.new_zeros(x.shape[0], self.cfg.d_hidden)
        states = []
        for t in range(x.shape[1]):  # one word per step: the serial path of seed 3.6
            h = torch.where(allowed[:, t, None], self.encoder(x[:, t], h), h)
            states.append(h)
        return torch.stack(states, dim=1), h

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``src`` ``[batch, source]`` → states, last state, and where words are (not padding)."""
        allowed = src != self.cfg.pad_id  # [batch, source]
        states, last = self.encode_embedded(self.src_embed(src), allowed)
        return states, last, allowed

    def decode(self, states: torch.Tensor, last: torch.Tensor, allowed: torch.Tensor,
               tgt_in: torch.Tensor | None = None, max_len: int = 0, eos_id: int = -1,
               bos_id: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Write the target one word per step, teacher-forced (``tgt_in``) or greedily.

        Args:
            states, last, allowed: from :meth:`encode`.
            tgt_in: ``[batch, target]`` decoder inputs (``<bos>`` then the words), or None to
                write greedily up to ``max_len`` words, stopping when every row wrote ``eos_id``.

        Returns:
            logits ``[batch, step, vocab]``, the ids written or fed ``[batch, step]`` (greedy:
            the argmax of each step), and the attention ``[batch, step, source]`` (the single
            vector's model: all zeros, it has none).
        """
        keys = self.attention.W_h(states) if self.attention is not None else None
        state = last
        batch = states.shape[0]
        steps = tgt_in.shape[1] if tgt_in is not None else max_len
        word = tgt_in[:, 0] if tgt_in is not None else \
            torch.full((batch,), bos_id, dtype=torch.long, device=states.device)
        logits, written, alignment = [], [], []
        done = torch.zeros(batch, dtype=torch.bool, device=states.device)
        for t in range(steps):
            if self.attention is not None:
                context, weights = self.attention(state, keys, states, allowed)
            else:  # the single vector, read again at every step
                context, weights = last, states.new_zeros(states.shape[:2])
            embedded = self.tgt_embed(word)
            state = self.decoder(torch.cat([embedded, context], -1), state)
            step_logits = self.out(torch.cat([state, context, embedded], -1))  # [batch, vocab]
            logits.append(step_logits)
            alignment.append(weights)
            if tgt_in is not None:
                written.append(tgt_in[:, t])
                if t + 1 < steps:
                    word = tgt_in[:, t + 1]
            else:
                word = step_logits.argmax(-1)
                written.append(word)
                done = done | (word == eos_id)
                if bool(done.all()):
                    break
        return torch.stack(logits, 1), torch.stack(written, 1), torch.stack(alignment, 1)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits ``[batch, target, vocab]`` for ``tgt_in`` ``[batch, target]``."""
        states, last, allowed = self.encode(src)
        return self.decode(states, last, allowed, tgt_in)[0]


@dataclass(frozen=True)
class Translation:
    """One sentence through a recurrent model.

    Attributes:
        source: the English words read.
        target: the Chinese words written (without ``<eos>``).
        alignment: ``[target word, source word]`` float32, row t the weights the decoder read
            while writing word t (rows sum to 1); None for the single-vector model.
    """

    source: tuple[str, ...]
    target: tuple[str, ...]
    alignment: np.ndarray | None


class RecurrentTranslator:
    """A trained recurrent model with its vocabularies (one of :data:`MODELS`), and a
    :class:`~model.interface.LoadedModel`: an encoder-decoder whose trace holds its one
    attention kind, ``decoder.cross`` (see the module's docstring)."""

    family = Family.ENCODER_DECODER

    def __init__(self, name: str, network: RecurrentSeq2Seq, device: torch.device,
                 src_vocab: WordVocab, tgt_vocab: WordVocab, card: dict | None = None):
        self.name = name
        self.network = network.to(device).eval()
        self.device = device
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.card = card or {}

    @classmethod
    def from_files(cls, name: str, device: str = "auto", folder: Path = WEIGHTS_DIR,
                   dtype: str = "auto") -> RecurrentTranslator:
        """Load ``name`` (one of :data:`MODELS`) from its safetensors and card, in ``dtype``
        (see :func:`~model.device.resolve_dtype`: float32 on the CPU)."""
        if name not in MODELS:
            raise ValueError(_("no recurrent model is named {name} (there are {names})").format(
                name=name, names=", ".join(MODELS)))
        weights, card = weights_path(name, folder), card_path(name, folder)
        if not weights.exists() or not card.exists():
            raise ValueError(_("{name} weights are missing ({file}); train them with "
                               "`python -m model.own.train_recurrent`").format(name=name,
                                                                              file=weights))
        info = json.loads(card.read_text(encoding="utf-8"))
        network = RecurrentSeq2Seq(RecurrentConfig(**info["config"]))
        network.load_state_dict(load_file(str(weights)))
        device_t = resolve_device(device)
        return cls(name, network.to(resolve_dtype(dtype, device_t)), device_t,
                   WordVocab(info["src_vocab"][4:]), WordVocab(info["tgt_vocab"][4:]), info)

    # --- the LoadedModel interface -----------------------------------------------------------

    @property
    def kinds(self) -> tuple[str, ...]:
        """The attention kinds its traces hold: cross-attention only (no self-attention)."""
        return ("decoder.cross",)

    @property
    def dtype(self) -> str:
        """The precision of its weights (``"float32"`` on the CPU)."""
        return dtype_name(next(self.network.parameters()).dtype)

    @property
    def dims(self) -> ModelDims:
        """One recurrent layer a stack, the hidden state as d_model; one head (Bahdanau's
        score reads the whole state); no position-wise FFN (d_ff 0)."""
        d = self.network.cfg.d_hidden
        return ModelDims(d_model=d, n_heads=1, n_kv_heads=1, d_head=d, d_ff=0,
                         n_encoder_layers=1, n_decoder_layers=1)

    @property
    def positions(self) -> PositionInfo:
        """No position encoding: the words' order is the order the cells read them."""
        return PositionInfo(RECURRENCE)

    @property
    def module(self) -> torch.nn.Module:
        return self.network

    def parameter_modules(self) -> dict[str, list[torch.nn.Module]]:
        """Bahdanau's attention (W_s, W_h, v) and the embeddings; no FFN. The recurrent cells
        and the output projection are the rest."""
        net = self.network
        return {"attention": [net.attention] if net.attention is not None else [], "ffn": [],
                "embeddings": [net.src_embed, net.tgt_embed]}

    def position_embeddings(self, n_positions: int) -> None:
        """None: a recurrent model learns no position vectors."""
        return None

    def position_table(self, n_positions: int) -> None:
        """None: a recurrent model adds no position table."""
        return None

    def count_tokens(self, text: str, target: str | None = None) -> Lengths:
        """The token counts a trace of ``text`` (and ``target``) would run on; nothing runs.
        Without a target, greedy decoding writes at most ``2 n + 10`` words."""
        n_source = len(split_words(text))
        n_target = len(split_words(target)) if target is not None else 2 * n_source + 10
        return Lengths(n_source, n_target + 1)  # <bos> and the words

    def memory_needed(self, n: Lengths) -> int:
        """Peak bytes of a trace of ``n`` tokens: its one kind's weights kept whole."""
        return dense_bytes(self.dims, self.family, n, kinds=self.kinds)

    def attention_batch(self, texts: list[str]):
        """Trace each text and hand their weights out as one padded batch
        (:class:`~model.reading.batch.AttentionBatch`)."""
        from model.reading.batch import padded_from_traces

        return padded_from_traces([self.trace(text) for text in texts], self.device)

    def attention_parts(self, text: str, target: str | None = None):
        """Refused: see :meth:`_no_moves`."""
        raise self._no_moves()

    def layer_outputs(self, text: str, kind: str, layer: int, zero_keys: list[int],
                      target: str | None = None):
        """Refused: see :meth:`_no_moves`."""
        raise self._no_moves()

    def ablation(self, text: str, kind: str, layer: int, heads: list[int],
                 target: str | None = None):
        """Refused: see :meth:`_no_moves`."""
        raise self._no_moves()

    def _no_moves(self) -> CaptureError:
        """What moves (:class:`~model.interface.Intervenes`) reads values, output projections
        and heads to leave out; a recurrent translator has none of them."""
        if not self.has_attention:
            return CaptureError(_("{model} has no attention to take apart: its decoder reads "
                                  "the encoder's last state").format(model=self.name))
        return CaptureError(_("{model} is a recurrent translator: its attention averages the "
                              "encoder's states themselves, with no value or output projection "
                              "and one head").format(model=self.name))

    @torch.inference_mode()
    def trace(self, text: str, target: str | None = None):
        """Run the model on ``text`` and keep what its decoder read of the source.

        Args:
            text: the English source.
            target: the Chinese words, teacher-forced; None traces the greedy translation.

        Returns:
            an :class:`~model.trace.AttentionTrace` of the encoder-decoder family holding
            ``decoder.cross`` ``[1 layer, 1 head, target, source]``: the target axis is
            ``<bos>`` and the words; row t is the step that read token t and wrote the next
            (its :class:`~model.meta.Step` the distribution it wrote from). Bahdanau's rows are
            the weights it computed; a single-vector model's rows put 1 on the last word, the
            state its context is (``meta["capture"]`` says which).

        Raises:
            TypeError: ``text`` or ``target`` is not a string.
            ValueError: no words, invalid Unicode, or a word outside the vocabulary (an
                :class:`~model.errors.UnknownWordsError` naming it and its side).
        """
        from model.own.adapter import _encode, _special_positions
        from model.own.decoding import steps_from_logits
        from model.trace import AttentionTrace

        check_text(text)
        if target is not None:
            check_text(target, _("the target"))
        words = split_words(text)
        if not words:
            raise ValueError(_("the text holds no words"))
        src_ids = _encode(self.src_vocab, words, "source")
        tgt_words = split_words(target) if target is not None else \
            self.tgt_vocab.decode(self.translate_ids([src_ids])[0])
        tgt_ids = [self.tgt_vocab.bos_id, *_encode(self.tgt_vocab, tgt_words, "target")]
        src = torch.tensor([src_ids], device=self.device)  # [batch, source]
        states, last, allowed = self.network.encode(src)
        tgt = torch.tensor([tgt_ids], device=self.device)  # [batch, target]: <bos> and words
        logits, _fed, weights = self.network.decode(states, last, allowed, tgt)
        if self.has_attention:
            cross = weights[0].float().cpu().numpy()  # [target, source]
        else:  # the context of every step is the last state: all of it on the last word
            cross = np.zeros((len(tgt_ids), len(src_ids)), dtype=np.float32)
            cross[:, -1] = 1.0
        tokens = dict(source_tokens=words, source_ids=src_ids,
                      target_tokens=[BOS, *tgt_words], target_ids=tgt_ids)
        written = [*tgt_ids[1:], self.tgt_vocab.eos_id]  # what each step wrote
        return AttentionTrace(
            model=self.name, family=self.family,
            attention={"decoder.cross": DenseStore(cross[None, None])},  # [layer, head, q, k]
            n_heads=1, n_kv_heads=1, positional=RECURRENCE, device=str(self.device),
            dtype=self.dtype, steps=steps_from_logits(logits[0], written, self.tgt_vocab.itos),
            special_positions=_special_positions(tokens),
            meta=model_facts(self.dims, self.positions, model_type="own",
                             capture=ADDITIVE if self.has_attention else LAST_STATE),
            **tokens)

    def english_words(self) -> list[str]:
        """The words it reads, sorted (the translator's English vocabulary)."""
        return self.src_vocab.words()

    @property
    def has_attention(self) -> bool:
        return self.network.attention is not None

    def source_ids(self, text: str) -> list[int]:
        """The ids of ``text``'s words (an unknown word raises, naming it)."""
        check_text(text)
        words = split_words(text)
        if not words:
            raise ValueError(_("the text holds no words"))
        return self.src_vocab.encode(words)

    @torch.inference_mode()
    def translate_ids(self, src_ids: list[list[int]],
                      max_len: int | None = None) -> list[list[int]]:
        """Greedy-decode a batch of source id lists; target ids without ``<eos>``."""
        pad = self.network.cfg.pad_id
        width = max(len(s) for s in src_ids)
        src = torch.full((len(src_ids), width), pad, dtype=torch.long)
        for row, ids in enumerate(src_ids):
            src[row, :len(ids)] = torch.tensor(ids)
        states, last, allowed = self.network.encode(src.to(self.device))
        eos = self.tgt_vocab.eos_id
        _logits, written, _weights = self.network.decode(
            states, last, allowed, max_len=max_len or 2 * width + 10, eos_id=eos,
            bos_id=self.tgt_vocab.bos_id)
        results = []
        for row in written.tolist():  # [batch, step]
            results.append(row[:row.index(eos)] if eos in row else row)
        return results

    @torch.inference_mode()
    def translate(self, text: str, target: str | None = None) -> Translation:
        """``text`` through the model: its greedy translation, or ``target`` teacher-forced,
        with the alignment the decoder read (Bahdanau's model).

        Raises:
            ValueError: no words, or a word outside the vocabulary (named).
        """
        trace = self.trace(text, target)  # the one pass: greedy, or teacher-forced
        words = tuple(str(w).lower() for w in trace.target_tokens[1:])  # <bos> is read only
        # step t reads word t and writes word t + 1: rows 0..T-1 write the words
        alignment = trace.weights("decoder.cross", 0, 0)[:len(words)] if self.has_attention \
            else None
        return Translation(tuple(str(w) for w in trace.source_tokens), words, alignment)

