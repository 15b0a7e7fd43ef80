"""Head statistics over many sentences, span attention, and comparisons of two patterns.

A corpus is run in padded batches (:meth:`~model.interface.LoadedModel.attention_batch`); the
statistics of every sentence, layer and head come from one computation per batch and layer on
the model's device. They are the statistics of :mod:`model.analysis.statistics` (the Head
statistics page's numbers for one sentence), with the same definitions, and padding never
enters them: a sentence's rows and keys end where its tokens end.

Attention weights show where a model looked, not why it decided: a head's average over a
corpus is a description, not an explanation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import re2
import torch

from i18n import _
from model.analysis.statistics import STATS
from model.reading.batch import AttentionBatch
from model.reading.statistics import accumulator, means, row_sums

COLUMNS = ("sentence", "kind", "layer", "head", "queries", *STATS)  # one row per head
SPAN = "span"  # the column of span attention, when a span is asked for
# User patterns run on a shared server: RE2 matches in time linear in the token's length (no
# backtracking, so ``(a+)+$`` cannot freeze it), and a pattern is at most this long and its
# compiled program at most this large.
MAX_PATTERN = 200
PATTERN_MEMORY = 1 << 20


@dataclass(frozen=True)
class Span:
    """Which tokens are queries and which are keys of span attention.

    Attributes:
        queries, keys: regular expressions, matched case-insensitively against each whole
            token (its surrounding spaces and a WordPiece ``##`` left out): ``it``, ``cat|mat``.
        before: keep only keys before each query (e.g. the nouns a pronoun may point back to);
            self-attention only (cross-attention's queries and keys are different texts).
    """

    queries: str
    keys: str
    before: bool = False

    def compiled(self) -> tuple[re2._Regexp, re2._Regexp]:
        """Both patterns compiled by RE2 (linear-time matching, case ignored).

        Raises:
            ValueError: a pattern is empty, longer than :data:`MAX_PATTERN`, or not a
                regular expression RE2 reads (back-references and look-arounds are not; the
                message says which pattern and why).
        """
        return (compile_pattern(self.queries, _("the query pattern")),
                compile_pattern(self.keys, _("the key pattern")))


def compile_pattern(pattern: str, what: str) -> re2._Regexp:
    """A user's pattern compiled by RE2, case ignored; ``what`` names it in messages.

    Raises:
        ValueError: empty, too long, too large once compiled, or not a pattern RE2 reads.
    """
    pattern = pattern.strip()
    if not pattern:
        raise ValueError(_("{what} is empty: give a word, or words joined by |").format(
            what=what))
    if len(pattern) > MAX_PATTERN:
        raise ValueError(_("{what} has {count:,} characters; patterns have at most {most}: "
                           "shorten it").format(what=what, count=len(pattern), most=MAX_PATTERN))
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False
    options.max_mem = PATTERN_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as error:
        reason = error.args[0] if error.args else error
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ValueError(_("{what} {pattern} is not a regular expression this server reads "
                           "(words, |, groups, classes and repeats; no back-references or "
                           "look-arounds): {error}").format(
            what=what, pattern=f"“{pattern[:40]}”", error=reason)) from None


def token_text(token: str) -> str:
    """A display token as a pattern sees it: spaces and a WordPiece ``##`` left out."""
    return token.strip().removeprefix("##")


def matches(pattern: re2._Regexp, tokens: Sequence[str]) -> np.ndarray:
    """Which ``tokens`` the pattern matches whole: bool ``[token]``."""
    return np.array([pattern.fullmatch(token_text(t)) is not None for t in tokens], dtype=bool)


def batch_statistics(batch: AttentionBatch, span: Span | None = None) -> dict[str, np.ndarray]:
    """The statistics of every sentence, kind, layer and head of one batch.

    Returns:
        columns of :data:`COLUMNS` (and :data:`SPAN` when ``span`` is given), one row per
        ``(sentence, kind, layer, head)`` in that order; ``sentence`` counts from 0 in the
        batch; ``queries`` is the number of real query tokens. Statistics that need queries
        and keys on one axis are NaN for cross-attention, as is ``previous_token`` of a
        one-token sentence and the span of a sentence where a pattern matches nothing.
    """
    patterns = None if span is None else span.compiled()
    trace = batch.traces[0]
    columns: dict[str, list] = {key: [] for key in (*COLUMNS, *([SPAN] if span else []))}
    per_kind = []
    for name in trace.names:
        n_q, n_k = batch.lengths(name)
        # "before the query" compares positions on one axis: self-attention only
        spans = None if patterns is None else _span_masks(
            batch, name, patterns, span.before and name.endswith(".self"))
        layers = [_statistics(batch.weights(name, layer), n_q, n_k, name.endswith(".self"),
                              spans) for layer in range(trace.layers(name))]
        per_kind.append((name, n_q, layers))
    n_heads = trace.n_heads
    for b in range(len(batch.traces)):
        for name, n_q, layers in per_kind:
            for layer, values in enumerate(layers):
                columns["sentence"].extend([b] * n_heads)
                columns["kind"].extend([name] * n_heads)
                columns["layer"].extend([layer] * n_heads)
                columns["head"].extend(range(n_heads))
                columns["queries"].extend([int(n_q[b])] * n_heads)
                for key, array in values.items():
                    columns[key].extend(array[b].tolist())
    return {key: np.asarray(value) for key, value in columns.items()}


def _span_masks(batch: AttentionBatch, name: str, patterns, before: bool):
    """Bool ``[sentence, query]`` and ``[sentence, key]`` of the span's tokens (padding
    False)."""
    queries, keys = [], []
    for trace in batch.traces:
        q_tokens, k_tokens = trace.axes(name)
        queries.append(matches(patterns[0], q_tokens))
        keys.append(matches(patterns[1], k_tokens))
    return _pad(queries), _pad(keys), before


def _pad(rows: list[np.ndarray]) -> np.ndarray:
    out = np.zeros((len(rows), max(len(r) for r in rows)), dtype=bool)
    for b, row in enumerate(rows):
        out[b, :len(row)] = row
    return out


def _statistics(w: torch.Tensor, n_q: np.ndarray, n_k: np.ndarray, same_axis: bool,
                spans=None) -> dict[str, np.ndarray]:
    """The statistics of a padded layer ``w [sentence, head, query, key]``: each float64
    ``[sentence, head]``, by the kernel that :func:`model.reading.blocks.summarise` uses for
    one sentence (:mod:`model.reading.statistics`; the padding is zeros and adds nothing)."""
    out = means(row_sums(w, 0, same_axis), n_q, same_axis)
    if spans is not None:
        out[SPAN] = _span_mass(w, spans, accumulator(w.device)).cpu().double().numpy()
    return out


def _span_mass(w: torch.Tensor, spans, f64) -> torch.Tensor:
    """Per sentence and head, the weight the span's queries put on the span's keys, averaged
    over those queries: ``[sentence, head]`` (NaN where no query or no key matched)."""
    queries, keys, before = spans
    device = w.device
    q_sel = torch.as_tensor(queries[:, :w.shape[2]], device=device)  # [sentence, query]
    k_sel = torch.as_tensor(keys[:, :w.shape[3]], device=device)  # [sentence, key]
    pair = q_sel[:, :, None] & k_sel[:, None, :]  # [sentence, query, key]
    if before:
        pair &= torch.ones(pair.shape[1:], dtype=torch.bool, device=device).tril_(-1)
    mass = (w * pair[:, None].to(w.dtype)).sum(-1)  # [sentence, head, query]
    total = (mass * q_sel[:, None].to(w.dtype)).sum(-1, dtype=f64)
    n = q_sel.sum(-1).to(f64)[:, None]  # [sentence, 1]
    found = pair.flatten(1).any(-1)[:, None]  # some query has some key to attend to
    return torch.where(found, total / n.clamp_min(1), torch.nan)


def merge(parts: Sequence[tuple[int, dict[str, np.ndarray]]],
          span: Span | None = None) -> dict[str, np.ndarray]:
    """Batches' columns as one table, each batch's ``sentence`` moved by its first index (no
    parts: an empty table with the columns of :func:`batch_statistics`)."""
    if not parts:
        return {key: np.zeros(0, dtype=object if key == "kind" else int if key in (
            "sentence", "layer", "head", "queries") else float)
            for key in (*COLUMNS, *([SPAN] if span else []))}
    keys = parts[0][1].keys()
    return {key: np.concatenate([p[key] + start if key == "sentence" else p[key]
                                 for start, p in parts]) for key in keys}


# --- over the corpus ------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadSummary:
    """One statistic of every head over the sentences: ``[layer, head]`` arrays.

    Attributes:
        mean: the mean over sentences where it is defined.
        low, high: the 95% confidence interval of the mean (Student's t over the sentences;
            NaN with fewer than two).
        count: sentences where it is defined.
    """

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    count: np.ndarray


def t_quantile(count: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Student's t quantile for a two-sided interval of ``level`` with ``count - 1`` degrees of
    freedom (NaN below two)."""
    from scipy.stats import t

    count = np.asarray(count, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(count >= 2, t.ppf(0.5 + level / 2, np.maximum(count - 1, 1)), np.nan)


def summarise_heads(table: dict[str, np.ndarray], name: str, statistic: str) -> HeadSummary:
    """:class:`HeadSummary` of ``statistic`` for kind ``name`` from a corpus table."""
    rows = table["kind"] == name
    if not rows.any():
        raise ValueError(_("the table holds no {kind} rows").format(kind=name))
    layer, head = table["layer"][rows], table["head"][rows]
    values = table[statistic][rows].astype(np.float64)
    shape = (int(layer.max()) + 1, int(head.max()) + 1)
    n = np.zeros(shape)
    total = np.zeros(shape)
    squares = np.zeros(shape)
    defined = ~np.isnan(values)
    np.add.at(n, (layer[defined], head[defined]), 1)
    np.add.at(total, (layer[defined], head[defined]), values[defined])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        np.add.at(squares, (layer[defined], head[defined]),
                  (values[defined] - mean[layer[defined], head[defined]]) ** 2)
        sd = np.sqrt(squares / (n - 1))
        half = t_quantile(n) * sd / np.sqrt(n)
    mean = np.where(n > 0, mean, np.nan)
    return HeadSummary(mean, mean - half, mean + half, n.astype(int))


def ranked_heads(summary: HeadSummary, descending: bool = True) -> list[dict]:
    """Heads with a mean, ordered by it: ``{"layer", "head", "mean", "low", "high",
    "sentences"}``."""
    layer, head = np.nonzero(~np.isnan(summary.mean))
    order = np.argsort(summary.mean[layer, head], kind="stable")
    if descending:
        order = order[::-1]
    return [{"layer": int(layer[i]), "head": int(head[i]),
             "mean": float(summary.mean[layer[i], head[i]]),
             "low": float(summary.low[layer[i], head[i]]),
             "high": float(summary.high[layer[i], head[i]]),
             "sentences": int(summary.count[layer[i], head[i]])} for i in order]


def sentence_values(table: dict[str, np.ndarray], name: str, layer: int, head: int,
                    statistic: str, n_sentences: int) -> np.ndarray:
    """One head's ``statistic`` for each sentence: float64 ``[sentence]`` (NaN where it is not
    defined or the sentence did not run)."""
    rows = (table["kind"] == name) & (table["layer"] == layer) & (table["head"] == head)
    out = np.full(n_sentences, np.nan)
    out[table["sentence"][rows]] = table[statistic][rows]
    return out


def sentences_ran(table: dict[str, np.ndarray]) -> int:
    """How many sentences the table holds a row of (the others were left out)."""
    return len(np.unique(table["sentence"]))


def defined_statistics(table: dict[str, np.ndarray], name: str, statistics) -> list[str]:
    """The ``statistics`` defined for some head of kind ``name`` (cross-attention has no
    distance, a span no value where no token matched), in their order."""
    rows = table["kind"] == name
    return [m for m in statistics if not np.isnan(table[m][rows]).all()]


def queries_per_sentence(table: dict[str, np.ndarray], name: str, n_sentences: int
                         ) -> np.ndarray:
    """Each sentence's number of query tokens of kind ``name``: int ``[sentence]`` (0 where
    the sentence did not run)."""
    out = np.zeros(n_sentences, int)
    rows = table["kind"] == name
    out[table["sentence"][rows]] = table["queries"][rows]
    return out


def longest_sentence(lengths: np.ndarray) -> tuple[int, int]:
    """``(index, tokens)`` of the longest sentence (the first of equals)."""
    index = int(np.argmax(lengths))
    return index, int(lengths[index])


# --- two patterns compared ------------------------------------------------------------------

def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen–Shannon divergence (nats, 0..ln 2) between matching rows of ``p`` and ``q``
    (``[..., key]``, each row a distribution): ``[...]``."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"the patterns' shapes differ: {p.shape} and {q.shape}")
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log(a / np.where(m > 0, m, 1)), 0.0).sum(-1)

    return np.maximum((kl(p) + kl(q)) / 2, 0.0)


def heads_by_change(layers, tolerance: float = 1e-9) -> list[dict]:
    """Heads ordered by how much their pattern changes between two runs of aligned tokens.

    Args:
        layers: for each layer in order, the two runs' weights ``(first, second)``, each
            ``[head, query, key]`` of equal shapes (the two sentences have as many tokens); one
            layer is held at a time.
        tolerance: changes at most this large (floating-point noise) rank no head.

    Returns:
        ``{"layer", "head", "divergence", "largest"}`` of every head that changes (mean
        Jensen–Shannon divergence of its rows, and the largest absolute difference of a
        weight), the most changed first.
    """
    found = []
    for layer, (first, second) in enumerate(layers):
        first, second = np.asarray(first), np.asarray(second)
        divergence = js_divergence(first, second).mean(-1)  # [head]
        largest = np.abs(first.astype(np.float64) - second).max(axis=(-2, -1))
        found += [{"layer": layer, "head": int(h), "divergence": float(divergence[h]),
                   "largest": float(largest[h])} for h in np.flatnonzero(largest > tolerance)]
    return sorted(found, key=lambda row: -row["divergence"])
