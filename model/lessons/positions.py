"""Numbers of the lesson §3.4 "Why positions" on the own models.

Attention compares every token with every other one, so on its own it does not know their
order. Shuffle the words of a sentence and, without positional encoding, each token's attention
row is the same row, reordered (the encoder is *permutation equivariant*); with positional
encoding the weights themselves change. :func:`compare_orders` runs the own encoder both ways.
The positional encoding is switched off without touching the shared model: the encoder stack is
called on the token embeddings alone (``token(ids) · √d_model``, the sinusoidal table left out);
for a RoPE model, on a copy of the stack whose attention modules do not rotate.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from i18n import _
from model.own.hooks import capture
from model.own.transformer import Transformer, attention_hook_name, padding_mask
from model.own.vocab import WordVocab, split_words

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
        # the copy without RoPE keeps the hook names set when the network was built
        names = [attention_hook_name("encoder.self", i, "hook_pattern")
                 for i in range(len(encoder.layers))]
        with capture(encoder, lambda name: name in names) as store:
            encoder(x, mask)
    return np.stack([store[name][0].float().cpu().numpy()  # [layer, head, query, key]
                     for name in names])


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
