"""Numbers of two lessons of §3.4 on the own models: why attention needs positions, and who looks
at whom in the own translator.

Why positions: attention compares every token with every other one, so on its own it does not
know their order. Shuffle the words of a sentence and, without positional encoding, each
token's attention row is the same row, reordered (the encoder is *permutation equivariant*);
with positional encoding the weights themselves change. :func:`compare_orders` runs the own
encoder both ways. The positional encoding is switched off without touching the shared model:
the encoder stack is called on the token embeddings alone (``token(ids) · √d_model``, the
sinusoidal table left out); for a RoPE model, on a copy of the stack whose attention modules
do not rotate.

Who looks at whom: the lesson's claims (sat → cat and mat, the → mat, it → cat, 垫子 → mat) are
found in a trace: :func:`find_pair` returns the layer and head where a pair's weight is largest,
computed from every head, never a head fixed in advance.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from i18n import _
from model.analysis.cuts import query_rows
from model.own.hooks import capture
from model.own.transformer import Transformer, padding_mask
from model.own.vocab import WordVocab, split_words
from model.trace import AttentionTrace

MAX_WORDS = 24  # a shuffled sentence stays readable as a heatmap


# --- why positions ----------------------------------------------------------------------------

def shuffle_order(n: int, seed: int) -> np.ndarray:
    """A seeded permutation of ``range(n)`` that moves at least one word (for ``n > 1``).

    The shuffled sentence is ``[words[i] for i in order]``: position ``p`` of the shuffled
    sentence holds the original word ``order[p]``.
    """
    order = np.random.default_rng(seed).permutation(n)
    if n > 1 and np.array_equal(order, np.arange(n)):
        order = np.roll(order, 1)  # the identity would show nothing
    return order


def reorder(weights: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``weights [..., query, key]`` with rows and columns both taken in ``order``."""
    order = np.asarray(order)
    return weights[..., order, :][..., :, order]


@dataclass(frozen=True)
class OrderRuns:
    """Encoder self-attention of a sentence and of its shuffled words, one way (with or without
    positional encoding).

    Attributes:
        original: ``[layer, head, query, key]`` of the sentence as written.
        shuffled: ``[layer, head, query, key]`` of the shuffled sentence.
        order: the shuffle (see :func:`shuffle_order`).
    """

    original: np.ndarray
    shuffled: np.ndarray
    order: np.ndarray

    @property
    def reordered(self) -> np.ndarray:
        """The original run's weights moved to the shuffled order: what the shuffled run gives
        when order does not matter."""
        return reorder(self.original, self.order)

    @property
    def difference(self) -> np.ndarray:
        """``|shuffled − reordered|``, ``[layer, head, query, key]`` in the shuffled order."""
        return np.abs(self.shuffled - self.reordered)

    @property
    def largest(self) -> float:
        """The largest difference over every layer, head and cell."""
        return float(self.difference.max())

    def largest_in(self, layer: int, head: int) -> float:
        """The largest difference in one head."""
        return float(self.difference[layer, head].max())


@dataclass(frozen=True)
class PositionLesson:
    """A sentence, its shuffle, and the encoder's attention with and without positions.

    Attributes:
        words, shuffled_words: the tokens in each order.
        order: the shuffle (``shuffled_words[p] == words[order[p]]``).
        with_positions, without_positions: the two runs.
        positional: the model's scheme (``sinusoidal`` or ``rope``).
    """

    words: list[str]
    shuffled_words: list[str]
    order: np.ndarray
    with_positions: OrderRuns
    without_positions: OrderRuns
    positional: str


def _network(loaded) -> Transformer:
    network = getattr(loaded, "network", None)
    if not isinstance(network, Transformer) or network.encoder is None:
        raise ValueError(_("this lesson runs the encoder of an own model (own-translator or "
                           "own-random)"))
    return network


def source_ids(loaded, sentence: str) -> tuple[list[str], list[int]]:
    """The words of ``sentence`` and their ids in ``loaded``'s source vocabulary (a model
    without one, own-random, gets a vocabulary of the sentence's words; a shuffle holds the
    same words, so it gets the same ids).

    Raises:
        ValueError: no words, too many words, or words outside a fixed vocabulary
            (:class:`~model.errors.UnknownWordsError`).
    """
    words = split_words(sentence)
    if not words:
        raise ValueError(_("the text holds no words"))
    if len(words) > MAX_WORDS:
        raise ValueError(_("{count} words: this lesson shuffles at most {most}").format(
            count=len(words), most=MAX_WORDS))
    vocab = getattr(loaded, "src_vocab", None) or WordVocab.from_text(sentence)
    network = _network(loaded)
    if len(vocab) > network.cfg.src_vocab_size:
        raise ValueError(_("the text has {count} distinct words; {model} holds at most {most}")
                         .format(count=len(vocab) - 4, model=loaded.name,
                                 most=network.cfg.src_vocab_size - 4))
    return words, vocab.encode(words)


def _without_rope(encoder: torch.nn.Module) -> torch.nn.Module:
    """A copy of an encoder stack whose attention does not rotate Q and K (the shared model is
    left as it is)."""
    encoder = copy.deepcopy(encoder)
    for layer in encoder.layers:
        layer.self_attn.rope_base = None
    return encoder


def encoder_attention(loaded, ids: list[int], positions: bool = True) -> np.ndarray:
    """The encoder's self-attention for ``ids``, with or without positional encoding.

    Args:
        loaded: an own model (:class:`~model.own.adapter.OwnModel`).
        ids: source ids, one sentence.
        positions: False leaves the sinusoidal table out of the embeddings (and, for RoPE,
            runs a copy of the stack that does not rotate).

    Returns:
        float32 ``[layer, head, query, key]``.
    """
    network = _network(loaded)
    cfg = network.cfg
    embed = network.src_embed
    encoder = network.encoder
    if not positions and cfg.positional == "rope":
        encoder = _without_rope(encoder)
    device = next(network.parameters()).device
    src = torch.tensor([ids], device=device)  # [batch, source]
    with torch.inference_mode():
        if positions:
            x = embed(src)  # token · √d_model + the table (sinusoidal); [batch, pos, d_model]
        else:
            x = embed.dropout(embed.token(src) * math.sqrt(embed.d_model))  # no positions
        mask = padding_mask(src, cfg.pad_id)  # [batch, 1, 1, key]
        with capture(encoder, lambda name: name.endswith("self_attn.hook_pattern")) as store:
            encoder(x, mask)
    return np.stack([  # [layer, head, query, key]
        store[f"layers.{i}.self_attn.hook_pattern"][0].float().cpu().numpy()
        for i in range(len(encoder.layers))])


def compare_orders(loaded, sentence: str, seed: int) -> PositionLesson:
    """Run the encoder on ``sentence`` and on its shuffle (``seed``), with and without
    positional encoding.

    Raises:
        ValueError: see :func:`source_ids`.
    """
    words, ids = source_ids(loaded, sentence)
    order = shuffle_order(len(words), seed)
    shuffled_ids = [ids[i] for i in order]
    runs = {}
    for positions in (True, False):
        runs[positions] = OrderRuns(encoder_attention(loaded, ids, positions),
                                    encoder_attention(loaded, shuffled_ids, positions), order)
    return PositionLesson(words, [words[i] for i in order], order, runs[True], runs[False],
                          _network(loaded).cfg.positional)


# --- who looks at whom ------------------------------------------------------------------------

SAT_SENTENCE = "The cat sat on the mat"
IT_SENTENCE = "The cat chased the mouse because it was hungry"  # §4.1: 猫 追 老鼠 ， 因为 它 饿 了


@dataclass(frozen=True)
class Claim:
    """A claim of the lesson: in ``sentence``, ``query`` looks at ``key``.

    Attributes:
        id: a short name (widget keys).
        sentence: the English sentence the own translator reads.
        query: the word looking: a source word (encoder self-attention) or, for
            cross-attention, the Chinese word being written.
        key: the source word looked at.
        kind: ``encoder.self`` or ``decoder.cross``.
        occurrence: which occurrence of ``query`` (0: the first; "the" → mat is the second
            "the").
    """

    id: str
    sentence: str
    query: str
    key: str
    kind: str
    occurrence: int = 0

    @property
    def label(self) -> str:
        return f"{self.query} → {self.key}"


CLAIMS = (
    Claim("sat_cat", SAT_SENTENCE, "sat", "cat", "encoder.self"),
    Claim("sat_mat", SAT_SENTENCE, "sat", "mat", "encoder.self"),
    Claim("the_mat", SAT_SENTENCE, "the", "mat", "encoder.self", occurrence=1),
    Claim("it_cat", IT_SENTENCE, "it", "cat", "encoder.self"),
    Claim("dianzi_mat", SAT_SENTENCE, "垫子", "mat", "decoder.cross"),
)
CONTRAST = Claim("it_mouse", IT_SENTENCE, "it", "mouse", "encoder.self")


@dataclass(frozen=True)
class Found:
    """Where a pair's weight is largest in a trace.

    Attributes:
        claim: the pair.
        layer, head: the head with the largest weight.
        query, key: the cell (row and column) of the pair in that kind's heatmap.
        weight: the weight there.
        grid: the pair's weight in every head, ``[layer, head]``.
        query_label, key_label: the row's and the column's names, as Explore labels them.
    """

    claim: Claim
    layer: int
    head: int
    query: int
    key: int
    weight: float
    grid: np.ndarray
    query_label: str
    key_label: str


def _position(labels, word: str, occurrence: int, where: str) -> int:
    """Where the ``occurrence``-th ``word`` stands in ``labels`` (case-insensitive)."""
    hits = [i for i, label in enumerate(labels) if str(label).lower() == word.lower()]
    if len(hits) <= occurrence:
        raise ValueError(_("“{word}” is not in {where}").format(word=word, where=where))
    return hits[occurrence]


def pair_cell(trace: AttentionTrace, claim: Claim) -> tuple[int, int]:
    """The (row, column) of ``claim``'s pair in its kind's heatmap; cross-attention rows are
    named by the word written (:func:`~model.analysis.cuts.query_rows`)."""
    rows = query_rows(trace, claim.kind).labels
    keys = list(trace.axes(claim.kind)[1])
    where = " ".join(str(label) for label in rows)
    query = _position(rows, claim.query, claim.occurrence, where)
    key = _position(keys, claim.key, 0, " ".join(str(k) for k in keys))
    return query, key


def pair_weights(trace: AttentionTrace, kind: str, query: int, key: int) -> np.ndarray:
    """One cell's weight in every head of every layer: ``[layer, head]``."""
    return np.stack([trace.layer_weights(kind, layer)[:, query, key]  # [head]
                     for layer in range(trace.layers(kind))])


def find_pair(trace: AttentionTrace, claim: Claim) -> Found:
    """The layer and head where ``claim``'s pair has its largest weight in ``trace``.

    Raises:
        ValueError: a word of the pair is not in the trace (e.g. the translation does not
            write 垫子).
    """
    query, key = pair_cell(trace, claim)
    grid = pair_weights(trace, claim.kind, query, key)
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(grid)), grid.shape))
    return Found(claim, layer, head, query, key, float(grid[layer, head]), grid,
                 str(query_rows(trace, claim.kind).labels[query]),
                 str(trace.axes(claim.kind)[1][key]))
