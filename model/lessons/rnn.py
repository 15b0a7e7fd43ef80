"""Numbers of the lesson §3.6, RNN against Transformer, measured on the project's own models:
``own-rnn`` and ``own-gru`` (one vector), ``own-bahdanau`` (additive attention) and
``own-translator`` (the Transformer), all trained on the same corpus
(:mod:`model.own.recurrent`).

- :func:`side_by_side`: one sentence through the three: translations, Bahdanau's alignment and
  the Transformer's cross-attention (last layer, mean of heads);
- :func:`accuracy_by_length`: forgetting, exact match on held-out sentences by length;
- :func:`gradient_by_distance`, :func:`gradient_profile`: the information path,
  ‖∂(last state)/∂(word j)‖ by autograd, for one text and as a median over long texts;
- :func:`forward_times`: serial steps, one encoder pass timed against the length.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

import numpy as np
import torch

from i18n import _
from model.lessons.all_at_once import synchronised_seconds
from model.own.position_encoding import sinusoidal_table
from model.own.recurrent import RecurrentTranslator
from model.own.train_recurrent import accuracy_by_length as _held_out
from model.own.training_pairs import make_corpus
from model.own.vocab import split_words

MAX_TIMED_LENGTH = 2048  # tokens: the longest pass the timing runs (a GRU step per token)
TIMED_LENGTHS = (8, 32, 128, 512, 2048)  # tokens the lessons time through each encoder
MAX_GRADIENT_WORDS = 64


@dataclass(frozen=True)
class SideBySide:
    """One sentence through the recurrent models and the Transformer.

    Attributes:
        source: the English words.
        single_vector: ``{model: its greedy translation}`` for the models without attention.
        bahdanau, transformer: the greedy translations of Bahdanau's GRU and the Transformer.
        bahdanau_alignment: ``[written word, source word]``, Bahdanau's weights.
        transformer_alignment: ``[written word, source word]``, the Transformer's last
            decoder layer's cross-attention averaged over its heads.
    """

    source: tuple[str, ...]
    single_vector: dict[str, tuple[str, ...]]
    bahdanau: tuple[str, ...]
    transformer: tuple[str, ...]
    bahdanau_alignment: np.ndarray
    transformer_alignment: np.ndarray


def side_by_side(single: dict[str, RecurrentTranslator], bahdanau: RecurrentTranslator,
                 translator, text: str) -> SideBySide:
    """``text`` through the single-vector models ``single`` (``{name: model}``), Bahdanau's GRU
    and the own Transformer (``translator``: own-translator).

    Raises:
        ValueError: no words, or a word the models do not know (named).
    """
    attended = bahdanau.translate(text)
    plain = {name: model.translate(text).target for name, model in single.items()}
    trace = translator.trace(text)
    last = trace.layers("decoder.cross") - 1
    words = tuple(str(w) for w in trace.target_tokens[1:])  # <bos> is read, never written
    cross = trace.mean_weights("decoder.cross", last)[:len(words)]  # rows writing the words
    return SideBySide(attended.source, plain, attended.target, words, attended.alignment,
                      np.asarray(cross, dtype=np.float32))


@dataclass(frozen=True)
class Forgetting:
    """Held-out exact match by sentence length for each model.

    Attributes:
        bins: ``(first, last)`` English words of each group of sentences.
        sentences: how many held-out sentences each group holds.
        exact_match: ``{model name: [fraction per bin]}`` (None where a bin is empty).
    """

    bins: tuple[tuple[int, int], ...]
    sentences: tuple[int, ...]
    exact_match: dict[str, list[float | None]]


def accuracy_by_length(models: dict, n_test: int = 500, seed: int = 0) -> Forgetting:
    """Greedy exact match of each of ``models`` (``{name: model with translate_ids and
    vocabularies}``) on the corpus's held-out sentences (never seen in training), grouped by
    the number of English words."""
    pairs = make_corpus(seed).test[:n_test]
    results = {name: _held_out(model, pairs) for name, model in models.items()}
    first = next(iter(results.values()))["by_length"]
    bins = tuple((b["words"][0], min(b["words"][1], max(len(split_words(p.en)) for p in pairs)))
                 for b in first)
    return Forgetting(bins, tuple(b["sentences"] for b in first),
                      {name: [b["exact_match"] for b in r["by_length"]]
                       for name, r in results.items()})


@dataclass(frozen=True)
class GradientPath:
    """How strongly the last position's state depends on each word, by distance.

    Attributes:
        distance: ``[position]`` words between each word and the last (0: the last word).
        norms: ``{model: [position]}`` ‖∂(last state)/∂x_j‖ (Frobenius): a recurrent
            encoder's last hidden state against its word embeddings, the Transformer encoder's
            output at the last word against its input vectors.
        words: the sentence's words.
    """

    distance: np.ndarray
    norms: dict[str, np.ndarray]
    words: tuple[str, ...]

    def relative(self, name: str) -> np.ndarray:
        """``name``'s norms divided by their median over the words."""
        values = self.norms[name]
        return values / np.median(values)


def _jacobian_norms(function, x: torch.Tensor) -> np.ndarray:
    """``[position]`` the Frobenius norm of ∂function(x)/∂x[position] (x ``[position, d]``)."""
    jac = torch.autograd.functional.jacobian(function, x, vectorize=True)  # [out, position, d]
    return jac.pow(2).sum(dim=(0, 2)).sqrt().detach().cpu().double().numpy()


def recurrent_gradient(model: RecurrentTranslator, ids: list[int]) -> np.ndarray:
    """``[position]`` ‖∂h_last/∂x_j‖ for a recurrent encoder reading ``ids`` (autograd through
    every step of the real cell)."""
    network = model.network
    with torch.enable_grad():
        src = torch.tensor([ids], device=model.device)  # [batch, source]
        embedded = network.src_embed(src)[0].detach()  # [source, d_embed]
        allowed = torch.ones(1, len(ids), dtype=torch.bool, device=model.device)
        return _jacobian_norms(lambda x: network.encode_embedded(x[None], allowed)[1][0],
                               embedded)


def transformer_gradient(translator, ids: list[int]) -> np.ndarray:
    """``[position]`` ‖∂y_last/∂x_j‖ for the Transformer's encoder output at the last word
    against its input vectors (token embedding × √d_model + position)."""
    network = translator.network
    with torch.enable_grad():
        src = torch.tensor([ids], device=translator.device)  # [batch, source]
        x = network.src_embed(src)[0].detach()  # [source, d_model]
        mask = (src != network.cfg.pad_id)[:, None, None, :]  # [batch, 1, 1, key]
        return _jacobian_norms(lambda v: network.encoder(v[None], mask)[0, -1], x)


def gradient_by_distance(recurrent: dict[str, RecurrentTranslator], translator,
                         text: str) -> GradientPath:
    """Autograd on the real modules, for ``text``'s words: the norm of the gradient of the last
    position's state with respect to each word's input vector, for each recurrent encoder of
    ``recurrent`` (``{name: model}``) and for the Transformer's encoder (``own-translator``).

    Raises:
        ValueError: no words, a word the models do not know, or more than
            :data:`MAX_GRADIENT_WORDS` words.
    """
    words = split_words(text)
    if len(words) > MAX_GRADIENT_WORDS:
        raise ValueError(_("the gradient is computed for at most {most} words; the text has "
                           "{count}").format(most=MAX_GRADIENT_WORDS, count=len(words)))
    norms = {name: recurrent_gradient(model, model.source_ids(text))
             for name, model in recurrent.items()}
    norms[translator.name] = transformer_gradient(translator,
                                                  translator.src_vocab.encode(words))
    return GradientPath(np.arange(len(words) - 1, -1, -1), norms, tuple(words))


def words_in(text: str) -> int:
    """How many words (and punctuation marks) the models read of ``text``."""
    return len(split_words(text))


def long_inputs(count: int = 8, clauses: int = 4, seed: int = 0) -> list[str]:
    """``count`` texts of ``clauses`` held-out sentences joined by "and" (the default eight: 28
    to 42 words, longer than any training sentence): inputs for the gradient's profile."""
    rng = random.Random(seed)
    pairs = make_corpus(seed).test
    return [" and ".join(rng.choice(pairs).en.rstrip(".").lower() for _c in range(clauses))
            for _i in range(count)]


NEAR = (1, 5)  # distances far_over_near takes as near: the five words before the last
FAR = 10  # and as far: the ten farthest distances every text reaches


@dataclass(frozen=True)
class GradientProfile:
    """The gradient's median norm by distance to the last word, over many long texts.

    Attributes:
        distance: ``[distance]`` 0 .. the longest every text reaches.
        median: ``{model: [distance]}`` median over the texts of the norm relative to that
            text's median norm (so that models of different widths compare).
        texts: how many texts.
    """

    distance: np.ndarray
    median: dict[str, np.ndarray]
    texts: int

    def far_over_near(self, name: str) -> float:
        """``name``'s median at the :data:`FAR` farthest distances over its median at the
        :data:`NEAR` distances (the last word itself left out: every model feels it most).
        Below 1: the last state feels far words less than near ones. A ratio of medians, not a
        fitted rate: the profiles are too uneven for a straight line to mean much."""
        values = self.median[name]
        near = values[NEAR[0]:NEAR[1] + 1]
        far = values[-FAR:]
        return float(np.median(far) / np.median(near))


def gradient_profile(recurrent: dict[str, RecurrentTranslator], translator,
                     texts: list[str]) -> GradientProfile:
    """:func:`gradient_by_distance` over ``texts``: each model's norms relative to their
    median in the text, and the median of those over the texts, by distance to the last word
    (the distances every text reaches)."""
    paths = [gradient_by_distance(recurrent, translator, text) for text in texts]
    reach = min(len(p.words) for p in paths)
    median = {name: np.median([(p.norms[name] / np.median(p.norms[name]))[::-1][:reach]
                               for p in paths], axis=0) for name in paths[0].norms}
    return GradientProfile(np.arange(reach), median, len(paths))


@dataclass(frozen=True)
class Timing:
    """Median seconds of one encoder pass over ``n`` tokens.

    Attributes:
        lengths: the lengths timed.
        gru, transformer: ``[length]`` median seconds.
        device: where it ran.
    """

    lengths: tuple[int, ...]
    gru: tuple[float, ...]
    transformer: tuple[float, ...]
    device: str


def _median_seconds(function, device: torch.device, repeats: int) -> float:
    function()  # warm up (kernels, allocator)
    return statistics.median(synchronised_seconds(function, device) for _r in range(repeats))


@torch.inference_mode()
def forward_times(gru: RecurrentTranslator, translator, lengths: tuple[int, ...],
                  repeats: int = 5) -> Timing:
    """Time one pass of the GRU encoder (one step per token, one after another) and of the
    Transformer's encoder (every token at once) over ``n`` random words, for each ``n`` of
    ``lengths``, on the models' device. The Transformer reads positions past its table's
    length through the same sinusoidal formula (timing only: nothing is translated).

    Raises:
        ValueError: a length below 1 or above :data:`MAX_TIMED_LENGTH`.
    """
    if not lengths or min(lengths) < 1 or max(lengths) > MAX_TIMED_LENGTH:
        raise ValueError(_("lengths must be between 1 and {most}").format(
            most=MAX_TIMED_LENGTH))
    device = gru.device
    rnn, network = gru.network, translator.network
    generator = torch.Generator().manual_seed(0)
    gru_times, transformer_times = [], []
    for n in lengths:
        ids = torch.randint(4, rnn.cfg.src_vocab_size, (1, n), generator=generator)
        x = rnn.src_embed(ids.to(device))  # [batch, n, d_embed]
        allowed = torch.ones(1, n, dtype=torch.bool, device=device)
        gru_times.append(_median_seconds(
            lambda x=x, allowed=allowed: rnn.encode_embedded(x, allowed), device, repeats))
        t_ids = ids.to(translator.device)
        d = network.cfg.d_model
        t_x = network.src_embed.token(t_ids) * d ** 0.5 + sinusoidal_table(n, d).to(
            translator.device)  # [batch, n, d_model]
        mask = torch.ones(1, 1, 1, n, dtype=torch.bool, device=translator.device)
        transformer_times.append(_median_seconds(
            lambda t_x=t_x, mask=mask: network.encoder(t_x, mask), translator.device, repeats))
    return Timing(tuple(lengths), tuple(gru_times), tuple(transformer_times), str(device))
