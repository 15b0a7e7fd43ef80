"""Numbers of the lesson §3.8, the Transformer's own troubles, each measured or computed live:

- :func:`time_attention`: one layer's attention (the lesson's 8 heads of 64) timed against the
  length n on a device, the explicit ``softmax(QKᵀ/√d)V`` that holds the n × n scores beside
  torch's fused ``scaled_dot_product_attention``, with the bytes of the scores measured from
  their tensor (and on CUDA the peak memory of each); :func:`attention_bytes` is what a length
  needs, for a server's limit (:func:`longest_length`);
- :class:`KVModel` and :func:`kv_bytes`: the KV cache of a model per token and for a context,
  with multi-head, grouped-query or multi-head latent attention (MLA), for the models of
  :data:`PUBLISHED_KV` (their published configs) and any :class:`~model.meta.ModelDims`; MHA
  and GQA through :func:`model.lessons.generation.kv_formula`, which the generation lesson
  checks against the cache's own tensors;
- :func:`read_longer`: own-translator (sinusoidal positions) on sentences longer than any it
  was trained on, chained from the training grammar with "and", exact match and word accuracy
  by length, with the training maximum :func:`training_max_words`;
- :class:`MoEConfig` and :func:`moe_parameters`: a mixture of experts' parameters, all of them
  and those one token uses (Mixtral-8x7B's config, :data:`MIXTRAL_8X7B`).
"""

from __future__ import annotations

import json
import math
import random
import statistics
import time
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

from i18n import _
from model.interface import Generation
from model.lessons.generation import KVGrowth, kv_formula, kv_growth
from model.meta import ModelDims
from model.own.training_pairs import Pair, make_corpus, sample_pair
from model.own.translator import CARD
from model.own.vocab import split_words

FLOAT32 = 4

# --- O(n²): attention time and memory against n -------------------------------------------------

HEADS, D_HEAD = 8, 64  # one layer of the lesson's model (seed 3.5: 512 = 8 heads × 64)
LENGTHS = tuple(256 * 2 ** k for k in range(8))  # 256 .. 32,768 tokens
REPEATS = 5  # timed runs of each method at each n (after one warm-up); the median is kept
# The explicit attention's predicted time for the next n (4 × this n's) past which the
# measurement stops: a request holds the server for seconds, not minutes.
RUN_SECONDS = 0.5


def attention_bytes(n: int, heads: int = HEADS, d_head: int = D_HEAD) -> int:
    """Peak bytes of the explicit attention of ``n`` tokens: Q, K, V and the output
    (``[head, n, d_head]`` float32 each) and the n × n scores and weights (``[head, n, n]``
    float32 each).

    Args:
        n: tokens.
        heads, d_head: the layer's heads and their width.

    Returns:
        bytes.
    """
    return 4 * heads * n * d_head * FLOAT32 + 2 * heads * n * n * FLOAT32


def longest_length(limit_bytes: int, lengths=LENGTHS) -> int:
    """The longest of ``lengths`` whose :func:`attention_bytes` fit in ``limit_bytes`` (0: none
    does)."""
    fitting = [n for n in lengths if attention_bytes(n) <= limit_bytes]
    return max(fitting, default=0)


@dataclass(frozen=True)
class AttentionCost:
    """One layer's attention timed at each length.

    Attributes:
        lengths: ``[n]`` the lengths measured, ascending.
        explicit_s: ``[n]`` median seconds of ``softmax(QKᵀ/√d)V`` written out (n × n scores).
        fused_s: ``[n]`` median seconds of ``torch.nn.functional.scaled_dot_product_attention``.
        score_bytes: ``[n]`` bytes of the scores tensor the explicit attention made
            (``numel × element_size``: n² × 4 × heads).
        explicit_peak, fused_peak: ``[n]`` peak bytes each needed above what was held before
            (``torch.cuda.max_memory_allocated``; None off CUDA).
        largest_error: the largest ``|explicit − fused|`` of any output (the two agree).
        asked: the longest length asked for.
        stopped_at: the first length not measured because its predicted time passed
            :data:`RUN_SECONDS` (None: every length asked was measured).
        heads, d_head, device, repeats: what was measured, where, how often.
    """

    lengths: np.ndarray
    explicit_s: np.ndarray
    fused_s: np.ndarray
    score_bytes: np.ndarray
    explicit_peak: np.ndarray | None
    fused_peak: np.ndarray | None
    largest_error: float
    asked: int
    stopped_at: int | None
    heads: int
    d_head: int
    device: str
    repeats: int

    def ratios(self, which: str = "explicit") -> np.ndarray:
        """``[n - 1]`` how many times longer each length took than the one before (half as
        long): ``which`` is ``"explicit"`` or ``"fused"``."""
        seconds = self.explicit_s if which == "explicit" else self.fused_s
        return seconds[1:] / seconds[:-1]


def _explicit(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, int]:
    """``softmax(QKᵀ/√d)V`` with the n × n scores held, and the scores' bytes."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # [batch, head, query, key]
    weights = torch.softmax(scores, dim=-1)  # [batch, head, query, key]
    return weights @ v, scores.numel() * scores.element_size()  # [batch, head, query, d_head]


def _fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v)  # [batch, head, query, d_head]


def _timed(function, args: tuple, device: torch.device,
           repeats: int) -> tuple[float, object, int | None]:
    """The median seconds of ``repeats`` calls of ``function(*args)`` after one warm-up, its
    result, and on CUDA its peak bytes above what was held before."""
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
    result = function(*args)  # the warm-up: kernels chosen, memory allocated once
    peak = None
    if cuda:
        torch.cuda.synchronize(device)
        peak = int(torch.cuda.max_memory_allocated(device) - before)
    seconds = []
    for _run in range(repeats):
        started = time.perf_counter()
        function(*args)
        if cuda:
            torch.cuda.synchronize(device)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result, peak


@torch.inference_mode()
def time_attention(largest: int, device: str | torch.device = "cpu", heads: int = HEADS,
                   d_head: int = D_HEAD, repeats: int = REPEATS,
                   run_seconds: float = RUN_SECONDS, seed: int = 0) -> AttentionCost:
    """Time one layer's attention (batch 1, ``heads`` heads of ``d_head``, float32) at every
    length of :data:`LENGTHS` up to ``largest``, explicit and fused, on ``device``.

    Lengths double, so the explicit attention's time should grow about 4× a step; the next
    length is not run once 4 × this one's time passes ``run_seconds``.

    Args:
        largest: the longest length to measure (one of :data:`LENGTHS`, or between them).
        device: where to run (a torch device or its name).
        repeats: timed runs of each method per length (the median is kept).
        seed: the random Q, K and V.

    Returns:
        an :class:`AttentionCost`.
    """
    device = torch.device(device)
    lengths = [n for n in LENGTHS if n <= largest]
    if not lengths:
        raise ValueError(_("the shortest length measured is {n:,} tokens").format(n=LENGTHS[0]))
    generator = torch.Generator().manual_seed(seed)
    rows: list[tuple] = []
    error, stopped = 0.0, None
    cuda = device.type == "cuda"
    for n in lengths:
        if rows and 4 * rows[-1][1] > run_seconds:
            stopped = n
            break
        q, k, v = (torch.randn(1, heads, n, d_head, generator=generator).to(device)
                   for _name in "qkv")  # [batch, head, token, d_head]
        explicit_s, (out, score_bytes), explicit_peak = _timed(_explicit, (q, k, v), device,
                                                               repeats)
        fused_s, fused_out, fused_peak = _timed(_fused, (q, k, v), device, repeats)
        error = max(error, float((out - fused_out).abs().max()))
        rows.append((n, explicit_s, fused_s, score_bytes, explicit_peak, fused_peak))
        out = fused_out = None  # freed before the next length's tensors are made
    if cuda:
        torch.cuda.empty_cache()
    columns = list(zip(*rows))
    return AttentionCost(
        lengths=np.array(columns[0], dtype=np.int64),
        explicit_s=np.array(columns[1], dtype=np.float64),
        fused_s=np.array(columns[2], dtype=np.float64),
        score_bytes=np.array(columns[3], dtype=np.int64),
        explicit_peak=np.array(columns[4], dtype=np.int64) if cuda else None,
        fused_peak=np.array(columns[5], dtype=np.int64) if cuda else None,
        largest_error=error, asked=int(largest), stopped_at=stopped, heads=heads,
        d_head=d_head, device=str(device), repeats=repeats)


# --- the KV cache: MHA, GQA, MLA -----------------------------------------------------------------

@dataclass(frozen=True)
class KVModel:
    """What a model keeps per token in its KV cache.

    Attributes:
        name: the model's name.
        attention: ``"MHA"``, ``"GQA"`` or ``"MLA"``.
        layers: decoder layers (each keeps its own cache).
        n_heads: query heads per layer.
        kv_heads: key/value heads per layer (MHA: ``n_heads``; MLA: none, 0).
        d_head: width of one key or value head (MHA, GQA).
        latent: MLA only: numbers cached per layer and token (``kv_lora_rank`` + the RoPE
            key's ``qk_rope_head_dim``).
        bytes_per_element: bytes of one cached number (2 for bfloat16 / float16).
        config: the config values the figures come from, as a reader checks them.
        source: where those values are published.
        dims: the model's sizes for MHA and GQA (:func:`model.lessons.generation.kv_formula`).
    """

    name: str
    attention: str
    layers: int
    n_heads: int
    kv_heads: int
    d_head: int
    latent: int = 0
    bytes_per_element: int = 2
    config: str = ""
    source: str = ""
    dims: ModelDims | None = None

    @property
    def per_token(self) -> int:
        """Bytes one more token adds to the cache of every layer."""
        return int(kv_bytes(self, 1))


def kv_bytes(model: KVModel, tokens) -> np.ndarray:
    """The KV cache of ``model`` holding ``tokens`` tokens (a number or an array of them):
    ``2 × layers × kv_heads × d_head × tokens × bytes`` with MHA and GQA (keys and values;
    :func:`~model.lessons.generation.kv_formula`), ``layers × latent × tokens × bytes`` with MLA
    (one compressed vector and the RoPE key per token).

    Returns:
        bytes, int64, shaped as ``tokens``.
    """
    if model.attention == "MLA":
        return (model.layers * model.latent * np.asarray(tokens, dtype=np.int64)
                * model.bytes_per_element)
    return kv_formula(model.dims, tokens, model.bytes_per_element)


def kv_model(name: str, dims: ModelDims, bytes_per_element: int, config: str = "",
             source: str = "") -> KVModel:
    """A :class:`KVModel` of a decoder of sizes ``dims``: GQA when it has fewer K/V heads than
    query heads, else MHA."""
    return KVModel(name=name, attention="GQA" if dims.n_kv_heads < dims.n_heads else "MHA",
                   layers=dims.n_decoder_layers, n_heads=dims.n_heads, kv_heads=dims.n_kv_heads,
                   d_head=dims.d_head, bytes_per_element=bytes_per_element, config=config,
                   source=source, dims=dims)


def _decoder(d_model: int, n_heads: int, n_kv_heads: int, d_ff: int, layers: int) -> ModelDims:
    return ModelDims(d_model=d_model, n_heads=n_heads, n_kv_heads=n_kv_heads,
                     d_head=d_model // n_heads, d_ff=d_ff, n_encoder_layers=0,
                     n_decoder_layers=layers)


# DeepSeek-V2's heads (its config.json): each head's key is 128 + 64 (RoPE) wide, its value 128.
DEEPSEEK_V2 = {"num_hidden_layers": 60, "num_attention_heads": 128, "kv_lora_rank": 512,
               "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
PUBLISHED_KV = (
    kv_model("Llama-2-7B", _decoder(4096, 32, 32, 11008, 32), 2,
             "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, "
             "hidden_size 4096 (d_head 128), float16",
             "huggingface.co/meta-llama/Llama-2-7b-hf, config.json"),
    kv_model("Llama-3-8B", _decoder(4096, 32, 8, 14336, 32), 2,
             "num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8, "
             "hidden_size 4096 (d_head 128), bfloat16",
             "huggingface.co/meta-llama/Meta-Llama-3-8B, config.json"),
    KVModel("DeepSeek-V2", "MLA", layers=DEEPSEEK_V2["num_hidden_layers"],
            n_heads=DEEPSEEK_V2["num_attention_heads"], kv_heads=0, d_head=0,
            latent=DEEPSEEK_V2["kv_lora_rank"] + DEEPSEEK_V2["qk_rope_head_dim"],
            config="num_hidden_layers 60, kv_lora_rank 512, qk_rope_head_dim 64 "
                   "(num_attention_heads 128), bfloat16",
            source="huggingface.co/deepseek-ai/DeepSeek-V2, config.json; DeepSeek-V2 paper "
                   "(arXiv:2405.04434), §2.1.2"),
)


def mla_as_mha_per_token(config: dict = DEEPSEEK_V2, bytes_per_element: int = 2) -> int:
    """Bytes per token the MLA model's cache would take if every head kept its own key
    (``qk_nope_head_dim + qk_rope_head_dim`` wide) and value (``v_head_dim``), as MHA does."""
    per_head = (config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
                + config["v_head_dim"])
    return (config["num_hidden_layers"] * config["num_attention_heads"] * per_head
            * bytes_per_element)


# Bytes of one number in each precision a model loads in.
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def loaded_kv_model(name: str, dims: ModelDims, dtype: str,
                    kinds: tuple[str, ...] = ("decoder.self",)) -> KVModel | None:
    """The :class:`KVModel` of a loaded model (its ``dims``, ``dtype`` and attention ``kinds``,
    as :class:`~model.interface.LoadedModel` gives them), or None for a model without decoder
    self-attention: an encoder-only one (nothing is generated, nothing cached), or a recurrent
    translator (it carries one state from step to step instead)."""
    if dims.n_decoder_layers == 0 or "decoder.self" not in kinds:
        return None
    config = (f"n_decoder_layers {dims.n_decoder_layers}, n_heads {dims.n_heads}, "
              f"n_kv_heads {dims.n_kv_heads}, d_head {dims.d_head}, {dtype}")
    return kv_model(name, dims, ELEMENT_BYTES.get(dtype, FLOAT32), config=config,
                    source="model.dims")


@dataclass(frozen=True)
class MeasuredCache:
    """A generation's real self-attention cache at its last step beside the formula's bytes.

    Attributes:
        growth: the cache step by step (:func:`model.lessons.generation.kv_growth`).
        measured: bytes of the cache tensors after the last step, summed over the layers.
        tokens: tokens each decoder layer holds then.
        formula: :func:`~model.lessons.generation.kv_formula` for those tokens.
    """

    growth: KVGrowth
    measured: int
    tokens: int
    formula: int


def measured_cache(generation: Generation) -> MeasuredCache:
    """The cache ``generation`` really held at its end, and what the KV formula gives for it
    (the check that the formula applied to the published configs counts what a model keeps)."""
    dims = generation.trace.dims
    growth = kv_growth(generation, dims)
    tokens = int(growth.tokens[-1])
    return MeasuredCache(growth=growth, measured=int(growth.total[-1]), tokens=tokens,
                         formula=int(kv_formula(dims, tokens, growth.bytes_per_element)))


@dataclass(frozen=True)
class KVRow:
    """One model's KV cache: per token and for a context of ``tokens`` tokens."""

    name: str
    attention: str
    per_token: int
    total: int
    config: str
    source: str


def kv_rows(tokens: int, loaded: KVModel | None = None) -> list[KVRow]:
    """The KV cache of ``loaded`` (the sidebar's model, first, when given), of each model of
    :data:`PUBLISHED_KV`, and of DeepSeek-V2's heads as if they kept their own keys and values
    (:func:`mla_as_mha_per_token`), for ``tokens`` tokens.

    Returns:
        one :class:`KVRow` per model.
    """
    if tokens < 1:
        raise ValueError(_("the context must hold at least one token"))
    models = ([loaded] if loaded is not None else []) + list(PUBLISHED_KV)
    rows = [KVRow(m.name, m.attention, m.per_token, int(kv_bytes(m, tokens)), m.config,
                  m.source) for m in models]
    as_mha = mla_as_mha_per_token()
    rows.append(KVRow(_("DeepSeek-V2 if every head kept its own K and V"), "MHA", as_mha,
                      as_mha * tokens,
                      "num_hidden_layers 60 × num_attention_heads 128 × (qk_nope_head_dim 128 + "
                      "qk_rope_head_dim 64 + v_head_dim 128), bfloat16",
                      PUBLISHED_KV[-1].source))
    return rows


# --- beyond the training length ------------------------------------------------------------------

MAX_CLAUSES = 6  # 6 clauses of at most 9 words and 5 "and"s: 59 words, within the 64 positions
BIN_WORDS = 5  # sentences are grouped by length in bins of 5 words
OVERRUN = 8  # words a translation may run past the longest reference of its batch


def _training_seed() -> int:
    return int(json.loads(CARD.read_text(encoding="utf-8"))["corpus"]["seed"])


@lru_cache(maxsize=1)
def training_lengths() -> tuple[int, int]:
    """``(most words, pairs)``: the most source words (punctuation included) of any sentence
    own-translator was trained on, and how many pairs it was trained on: its corpus rebuilt
    from the seed its card records."""
    corpus = make_corpus(_training_seed())
    return max(len(split_words(pair.en)) for pair in corpus.train), len(corpus.train)


def training_max_words() -> int:
    """The most source words of any sentence own-translator was trained on."""
    return training_lengths()[0]


def _clause(rng: random.Random) -> Pair:
    """One plain clause of the grammar (no "because", no "and", no full stop)."""
    while True:
        pair = sample_pair(rng)
        if not {"because", "and", "."} & set(split_words(pair.en.lower())):
            return pair


def chained(rng: random.Random, clauses: int) -> Pair:
    """``clauses`` clauses of the training grammar joined by "and" (its Chinese by "，"), as
    the grammar joins two: a sentence as long as a reader makes it.

    Returns:
        the pair (its ``align`` is empty: the lesson scores whole translations).
    """
    parts = [_clause(rng) for _part in range(clauses)]
    en = " and ".join(p.en[0].lower() + p.en[1:] if i else p.en for i, p in enumerate(parts))
    return Pair(en, " ， ".join(p.zh for p in parts), ())


def word_accuracy(written: list[str], reference: list[str]) -> float:
    """1 − (word edit distance ÷ reference words), at least 0: the word accuracy (1 − WER)."""
    previous = list(range(len(reference) + 1))
    for i, word in enumerate(written, start=1):
        row = [i]
        for j, ref in enumerate(reference, start=1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (word != ref)))
        previous = row
    return max(0.0, 1.0 - previous[-1] / max(len(reference), 1))


@dataclass(frozen=True)
class LengthReading:
    """own-translator on sentences of every length.

    Attributes:
        words: ``[sentence]`` source words of each sentence.
        exact: ``[sentence]`` whether its translation is the reference, word for word.
        accuracy: ``[sentence]`` its word accuracy (:func:`word_accuracy`).
        bins: ``[(first, last)]`` word counts of each bin.
        bin_exact, bin_accuracy: ``[bin]`` the mean of each bin (NaN where empty).
        bin_count: ``[bin]`` sentences in each bin.
        training_max: the most words of a training sentence.
        training_pairs: the pairs own-translator was trained on.
        positions: the longest input the sinusoidal table covers.
        examples: ``[(source, reference, written)]``: the longest sentence of each clause count.
        seed, per_length: the sampling.
    """

    words: np.ndarray
    exact: np.ndarray
    accuracy: np.ndarray
    bins: tuple[tuple[int, int], ...]
    bin_exact: np.ndarray
    bin_accuracy: np.ndarray
    bin_count: np.ndarray
    training_max: int
    training_pairs: int
    positions: int
    examples: tuple[tuple[str, str, str], ...]
    seed: int
    per_length: int

    def within(self) -> tuple[float, float]:
        """Exact match and word accuracy of the sentences no longer than the training's."""
        inside = self.words <= self.training_max
        return float(self.exact[inside].mean()), float(self.accuracy[inside].mean())

    def beyond(self) -> tuple[float, float]:
        """Exact match and word accuracy of the sentences longer than any in training."""
        outside = self.words > self.training_max
        return float(self.exact[outside].mean()), float(self.accuracy[outside].mean())


def read_longer(translator, per_length: int = 30, seed: int = 1,
                max_clauses: int = MAX_CLAUSES) -> LengthReading:
    """Translate ``per_length`` sentences of each 1..``max_clauses`` clauses with ``translator``
    (own-translator: greedy, batched) and score each against the grammar's reference.

    Args:
        translator: a :class:`~model.own.translator.Translator`.
        per_length: sentences of each clause count.
        seed: the sentences' random seed.
        max_clauses: the most clauses chained (sentences beyond the positions the model reads
            are left out).

    Returns:
        a :class:`LengthReading`.
    """
    if per_length < 1 or max_clauses < 1:
        raise ValueError(_("at least one sentence of at least one clause"))
    rng = random.Random(seed)
    positions = translator.config.max_len
    pairs, outputs, groups = [], [], []
    for clauses in range(1, max_clauses + 1):  # one batch per clause count
        batch = [p for p in (chained(rng, clauses) for _n in range(per_length))
                 if len(split_words(p.en)) <= positions]
        if not batch:
            continue
        sources = [translator.src_vocab.encode(split_words(p.en)) for p in batch]
        # writing stops at the positions the decoder reads, or OVERRUN words past the
        # longest reference (a translation that long is wrong already)
        steps = min(positions, max(len(split_words(p.zh)) for p in batch) + OVERRUN)
        written = translator.translate_ids(sources, max_len=steps)
        groups.append(range(len(pairs), len(pairs) + len(batch)))
        pairs += batch
        outputs += [translator.tgt_vocab.decode(ids) for ids in written]
    references = [split_words(p.zh) for p in pairs]
    words = np.array([len(split_words(p.en)) for p in pairs], dtype=np.int64)
    exact = np.array([o == r for o, r in zip(outputs, references)])
    accuracy = np.array([word_accuracy(o, r) for o, r in zip(outputs, references)])
    top = int(math.ceil(words.max() / BIN_WORDS))
    bins = tuple((BIN_WORDS * b + 1, BIN_WORDS * (b + 1)) for b in range(top))
    index = (words - 1) // BIN_WORDS
    count = np.bincount(index, minlength=top)
    with np.errstate(invalid="ignore"):
        bin_exact = np.bincount(index, exact.astype(float), minlength=top) / count
        bin_accuracy = np.bincount(index, accuracy, minlength=top) / count
    examples = []
    for group in groups:
        i = max(group, key=lambda j: words[j])
        examples.append((pairs[i].en, pairs[i].zh, " ".join(outputs[i])))
    return LengthReading(words=words, exact=exact, accuracy=accuracy, bins=bins,
                         bin_exact=bin_exact, bin_accuracy=bin_accuracy, bin_count=count,
                         training_max=training_lengths()[0],
                         training_pairs=training_lengths()[1], positions=positions,
                         examples=tuple(examples), seed=seed, per_length=per_length)


# --- MoE: parameters, all of them and those a token uses -----------------------------------------

@dataclass(frozen=True)
class MoEConfig:
    """A decoder whose FFN is a mixture of experts (names as in transformers' MixtralConfig).

    Attributes:
        name: the model's name.
        hidden_size, intermediate_size: d_model and each expert's d_ff.
        num_hidden_layers: decoder layers.
        num_attention_heads, num_key_value_heads: query and K/V heads (d_head = hidden ÷ heads).
        num_local_experts: experts per layer.
        num_experts_per_tok: experts each token is routed to.
        vocab_size: tokens of the vocabulary.
        tie_word_embeddings: the output layer reuses the embedding.
        source: where the values are published.
    """

    name: str
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    num_local_experts: int
    num_experts_per_tok: int
    vocab_size: int
    tie_word_embeddings: bool = False
    source: str = ""

    def with_experts(self, experts: int, active: int) -> MoEConfig:
        """The same model with ``experts`` experts per layer, ``active`` of them per token."""
        if not 1 <= active <= experts:
            raise ValueError(_("active experts must be between 1 and the experts ({experts})")
                             .format(experts=experts))
        return replace(self, num_local_experts=experts, num_experts_per_tok=active)


MIXTRAL_8X7B = MoEConfig("Mixtral-8x7B", hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         num_local_experts=8, num_experts_per_tok=2, vocab_size=32000,
                         source="huggingface.co/mistralai/Mixtral-8x7B-v0.1, config.json")


@dataclass(frozen=True)
class MoEParameters:
    """A mixture of experts' parameters by part (whole model, every layer summed).

    Attributes:
        embeddings: the token embedding and the output layer (one when tied).
        attention: W_Q, W_K, W_V and W_O of every layer.
        norms: every RMSNorm's weight (two a layer and the last).
        router: each layer's gate, hidden × experts.
        expert: one expert of one layer: gate, up and down projections, 3 × hidden × d_ff.
        experts: every expert of every layer.
        active_experts: the experts one token runs through, every layer.
    """

    embeddings: int
    attention: int
    norms: int
    router: int
    expert: int
    experts: int
    active_experts: int

    @property
    def shared(self) -> int:
        """What every token uses: embeddings, attention, norms and routers."""
        return self.embeddings + self.attention + self.norms + self.router

    @property
    def total(self) -> int:
        return self.shared + self.experts

    @property
    def active(self) -> int:
        """The parameters one token's forward pass uses."""
        return self.shared + self.active_experts


def moe_parameters(config: MoEConfig) -> MoEParameters:
    """The parameters of ``config``'s model (no biases, as Mixtral): embeddings
    ``vocab × hidden`` (twice unless tied); per layer attention ``hidden × d_head × (2 heads
    + 2 kv_heads)``, two norms of ``hidden``, a router ``hidden × experts`` and ``experts ×
    3 × hidden × d_ff``; a last norm.

    Returns:
        a :class:`MoEParameters`; ``active`` counts ``num_experts_per_tok`` experts a layer.
    """
    h, layers = config.hidden_size, config.num_hidden_layers
    d_head = h // config.num_attention_heads
    expert = 3 * h * config.intermediate_size
    attention = h * d_head * (2 * config.num_attention_heads + 2 * config.num_key_value_heads)
    return MoEParameters(
        embeddings=config.vocab_size * h * (1 if config.tie_word_embeddings else 2),
        attention=layers * attention, norms=(2 * layers + 1) * h,
        router=layers * h * config.num_local_experts, expert=expert,
        experts=layers * config.num_local_experts * expert,
        active_experts=layers * config.num_experts_per_tok * expert)
