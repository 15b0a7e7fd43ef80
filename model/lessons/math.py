"""The numbers of two lessons of the seed: attention worked by hand on four words (§4.3: the
hand calculation) and why the scores are divided by √d_k (§4.4: softmax saturation).

§4.3 computes the output of one word (它, "it") from its query ``q`` and the keys and values
of 猫 / 追 / 老鼠 / 它, and writes every intermediate value rounded to two decimals.
:func:`hand_steps` does the same, exactly or with the lesson's rounding;
:func:`run_attention` runs the project's own :func:`model.own.transformer.attention` on the
same numbers, and :func:`attention_lines` finds, in that function's live source, the lines
that compute each step.

§4.4 argues that q·k of random unit-variance vectors has a spread of √d_k, that large scores
push softmax to one-hot, and that a one-hot softmax has almost no gradient:
:func:`dot_products`, :func:`spread_by_width`, :func:`two_scores`,
:func:`gradient_by_width` and :func:`trace_scaling` measure each claim.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from i18n import N_, _
from model.own import transformer

# --- §4.3: the hand calculation ----------------------------------------------------------------

# The lesson's four words (猫 / 追 / 老鼠 / 它), in English; translated where shown.
SEED_WORDS = (N_("cat"), N_("chases"), N_("mouse"), N_("it"))
SEED_K = ((1.0, 0.0), (0.0, 1.0), (0.7, 0.7), (1.0, 0.0))  # [word, d_k]
SEED_V = ((2.0, 1.0), (0.0, 3.0), (1.0, 2.0), (0.0, 0.0))  # [word, d_v]
SEED_Q = (1.0, 0.0)  # the query of 它: "I am looking for an animal"
SEED_DECIMALS = 2  # the lesson writes every intermediate value with two decimals
LARGEST_INPUT = 100.0  # larger numbers are no hand calculation (and eˣ would overflow)
LARGEST_EXPONENT = 700.0  # e^709 is the largest float64


@dataclass(frozen=True)
class HandInputs:
    """The words and numbers of a hand calculation.

    Args:
        words: ``n`` labels, one per key.
        K: ``[n, d_k]`` keys.
        V: ``[n, d_v]`` values.
        q: ``[d_k]`` the query.
    """

    words: tuple[str, ...]
    K: np.ndarray
    V: np.ndarray
    q: np.ndarray

    @property
    def d_k(self) -> int:
        return int(self.K.shape[1])


def seed_inputs() -> HandInputs:
    """The lesson's numbers, with its words in the current language."""
    return hand_inputs([_(word) for word in SEED_WORDS], SEED_K, SEED_V, SEED_Q)


def checked_number(value, what: str) -> float:
    """A number a person typed: ``value`` as a float from −:data:`LARGEST_INPUT` to
    :data:`LARGEST_INPUT`, or a ValueError naming ``what`` and the accepted range (an empty
    cell or box, text, NaN, infinity, or a number too large for arithmetic by hand; a number box
    holds None for an empty box and for what it cannot hold: NaN, ±∞)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(_("{what} is empty or not a number: write a number from −{limit:g} "
                           "to {limit:g}.").format(what=what, limit=LARGEST_INPUT))
    if isinstance(value, bool):
        raise ValueError(_("{what} holds “{value}”, which is not a number.").format(
            what=what, value=value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(_("{what} holds “{value}”, which is not a number.").format(
            what=what, value=str(value)[:20])) from None
    if math.isnan(number):
        raise ValueError(_("{what} is empty or not a number: write a number from −{limit:g} "
                           "to {limit:g}.").format(what=what, limit=LARGEST_INPUT))
    if not abs(number) <= LARGEST_INPUT:
        raise ValueError(_("{what} is {value}: keep every number between −{limit:g} and "
                           "{limit:g}.").format(what=what, value=f"{number:g}",
                                                limit=LARGEST_INPUT))
    return number


def _matrix(rows, what: str, words: Sequence[str]) -> np.ndarray:
    """``rows`` (one sequence of numbers per word) as a float64 ``[n, d]`` array; every row the
    same length."""
    if isinstance(rows, np.ndarray):
        rows = rows.tolist() if rows.ndim == 2 else [rows.tolist()]
    rows = list(rows)
    if len(rows) != len(words):
        raise ValueError(_("{what} has {rows} rows but there are {words} words: give one row "
                           "per word.").format(what=what, rows=len(rows), words=len(words)))
    values = []
    for word, row in zip(words, rows):
        if isinstance(row, str) or not isinstance(row, Sequence | np.ndarray):
            row = [row]
        values.append([checked_number(v, _("{what} of “{word}”, entry {index}").format(
            what=what, word=word, index=index + 1)) for index, v in enumerate(row)])
    widths = sorted({len(row) for row in values})
    if len(widths) > 1:
        raise ValueError(_("The rows of {what} have different lengths ({widths}): give every "
                           "word the same number of entries.").format(
            what=what, widths=", ".join(map(str, widths))))
    if widths and widths[0] == 0:
        raise ValueError(_("{what} has no entries.").format(what=what))
    return np.asarray(values, dtype=np.float64)


def hand_inputs(words: Sequence[str], keys, values, query) -> HandInputs:
    """The inputs of a hand calculation, checked.

    Args:
        words: one label per word (an empty one is named by its position).
        keys: ``[n, d_k]`` numbers (nested sequences or an array).
        values: ``[n, d_v]`` numbers.
        query: ``[d_k]`` numbers.

    Raises:
        ValueError: a clear message for an empty cell, text, NaN, a number out of range, no
            word, or sizes that do not match (rows of K and V, the length of q and of the keys).
    """
    words = tuple(str(w).strip() if w is not None and str(w).strip()
                  else _("word {number}").format(number=i + 1) for i, w in enumerate(words))
    if not words:
        raise ValueError(_("There is no word left: add at least one row."))
    K = _matrix(keys, "K", words)
    V = _matrix(values, "V", words)
    if isinstance(query, str) or not isinstance(query, Sequence | np.ndarray):
        query = [query]
    q = np.asarray([checked_number(v, _("q, entry {index}").format(index=i + 1))
                    for i, v in enumerate(query)], dtype=np.float64)
    if q.size != K.shape[1]:
        raise ValueError(_("q has {q} entries but every key has {k}: a query is compared with "
                           "keys of its own length.").format(q=q.size, k=K.shape[1]))
    return HandInputs(words, K, V, q)


@dataclass(frozen=True)
class HandSteps:
    """Every intermediate value of §4.3's calculation for one query.

    Args:
        scores: ``[n]`` q·k for each word.
        sqrt_dk: √d_k as the calculation uses it (1.41 with the lesson's rounding).
        scaled: ``[n]`` scores / √d_k.
        exps: ``[n]`` e to the power of each scaled score.
        total: the sum of ``exps``.
        weights: ``[n]`` exps / total (the softmax).
        weighted: ``[n, d_v]`` each row of V times its weight.
        output: ``[d_v]`` the sum of the weighted rows.
        decimals: the rounding of every intermediate value (None: exact).
    """

    scores: np.ndarray
    sqrt_dk: float
    scaled: np.ndarray
    exps: np.ndarray
    total: float
    weights: np.ndarray
    weighted: np.ndarray
    output: np.ndarray
    decimals: int | None


def hand_steps(inputs: HandInputs, decimals: int | None = None) -> HandSteps:
    """§4.3's five steps on ``inputs``: dot products, ÷√d_k, eˣ and their sum, softmax, the
    weighted sum of V.

    Args:
        decimals: round every intermediate value to this many decimals before the next step
            uses it, as the lesson does when it writes them (2 reproduces its 0.30 / 0.15 /
            0.25 / 0.30 and [0.85, 1.25]); None computes exactly (float64).

    Raises:
        ValueError: eˣ would overflow, or every eˣ rounds to 0.
    """
    def r(x):
        return x if decimals is None else np.round(x, decimals)

    scores = r(inputs.K @ inputs.q)  # [word]
    sqrt_dk = float(r(math.sqrt(inputs.d_k)))
    scaled = r(scores / sqrt_dk)
    if scaled.max() > LARGEST_EXPONENT:
        raise ValueError(_("A scaled score is {value:.0f}: e to that power is too large for "
                           "the computer's numbers. Use smaller numbers.").format(
            value=scaled.max()))
    exps = r(np.exp(scaled))
    total = float(r(exps.sum()))
    if not total > 0:
        raise ValueError(_("Every eˣ is 0 at this precision, so the weights cannot be "
                           "computed: use larger scores, or exact arithmetic."))
    weights = r(exps / total)
    weighted = r(weights[:, None] * inputs.V)  # [word, d_v]
    output = r(weighted.sum(axis=0))  # [d_v]
    return HandSteps(scores, sqrt_dk, scaled, exps, total, weights, weighted, output, decimals)


def run_attention(inputs: HandInputs) -> tuple[np.ndarray, np.ndarray]:
    """The project's own ``attention()`` (model/own/transformer.py) run on ``inputs`` in
    float64, one batch, one head, one query.

    Returns:
        ``(output [d_v], weights [n])``.
    """
    # [batch, head, query, d_k]
    Q = torch.tensor(inputs.q, dtype=torch.float64)[None, None, None, :]
    K = torch.tensor(inputs.K, dtype=torch.float64)[None, None]  # [batch, head, key, d_k]
    V = torch.tensor(inputs.V, dtype=torch.float64)[None, None]  # [batch, head, key, d_v]
    with torch.no_grad():
        output, weights = transformer.attention(Q, K, V)
    return output[0, 0, 0].numpy(), weights[0, 0, 0].numpy()


@dataclass(frozen=True)
class SourceLines:
    """Lines of a function's source: their text and their line numbers in ``path``."""

    code: str
    first: int
    last: int
    path: str


# The markers of attention()'s comments, in the order of the seed's 4.9 listing.
MARKERS = ("①", "②", "③", "④")


def attention_lines(function=None) -> dict[str, SourceLines]:
    """The lines of the own ``attention()`` that compute each step, read from its live source.

    Returns:
        ``{"d_k": the statement that reads d_k, "①": the scores (QKᵀ/√d_k), "②": the mask,
        "③": the softmax, "④": the weighted sum of V}``; each marker's lines are its comment
        and the statement right after it.
    """
    function = function or transformer.attention
    lines, start = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    body = ast.parse(source).body[0].body  # the function's statements
    try:
        root = Path(__file__).resolve().parents[2]
        path = Path(inspect.getsourcefile(function)).resolve().relative_to(root).as_posix()
    except ValueError:  # a function outside the project
        path = Path(inspect.getsourcefile(function)).name
    text = source.splitlines()

    def block(first: int, last: int) -> SourceLines:  # 1-based lines of the dedented source
        code = textwrap.dedent("\n".join(text[first - 1:last]))
        return SourceLines(code, start + first - 1, start + last - 1, path)

    found = {}
    for marker in MARKERS:
        comment = next((i + 1 for i, line in enumerate(text)
                        if line.strip().startswith("#") and marker in line), None)
        if comment is None:
            continue
        statement = next((s for s in body if s.lineno > comment), None)
        if statement is None:
            continue
        found[marker] = block(comment, statement.end_lineno)
        if marker == MARKERS[0]:
            before = [s for s in body if s.end_lineno < comment]
            if before:
                found["d_k"] = block(before[-1].lineno, before[-1].end_lineno)
    return found


# --- §4.4: why divide by √d_k --------------------------------------------------------------------

D_K_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
SEED_SCORES = (8.0, -3.0)  # §4.4: scores of the size d_k = 64 gives them (spread 8)
SAMPLES = 4000  # pairs q, k for the histogram of one d_k
WIDTH_SAMPLES = 2000  # pairs per d_k for the spread over every d_k


def dot_products(d_k: int, n: int = SAMPLES, seed: int = 0) -> np.ndarray:
    """q·k for ``n`` pairs of random vectors of ``d_k`` independent entries of mean 0 and
    variance 1 (a seeded generator: the same numbers every time).

    Returns:
        ``[n]`` float64 dot products; their standard deviation is about √d_k.
    """
    if d_k < 1 or n < 2:
        raise ValueError(f"d_k={d_k} and n={n} must be positive (n at least 2)")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k), dtype=np.float32)  # [pair, d_k]
    k = rng.standard_normal((n, d_k), dtype=np.float32)  # [pair, d_k]
    return np.einsum("nd,nd->n", q, k).astype(np.float64)


def spread_by_width(widths: Sequence[int] = D_K_CHOICES, n: int = WIDTH_SAMPLES,
                    seed: int = 0) -> np.ndarray:
    """The measured standard deviation of q·k for each d_k in ``widths``: ``[len(widths)]``."""
    return np.array([dot_products(d, n, seed + i).std() for i, d in enumerate(widths)])


def softmax(x) -> np.ndarray:
    """The softmax of the last axis, computed stably (the largest value subtracted first); −∞
    gets weight 0, and a row of nothing but −∞ is all 0."""
    x = np.asarray(x, dtype=np.float64)
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def softmax_jacobian(p) -> np.ndarray:
    """∂p_i/∂s_j = p_i (δ_ij − p_j) of ``p = softmax(s)``, for ``p`` ``[..., n]``:
    ``[..., n, n]``."""
    p = np.asarray(p, dtype=np.float64)
    return p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])


def gradient_size(p) -> np.ndarray:
    """The size of softmax's gradient at ``p``: the Frobenius norm of its Jacobian, per row."""
    return np.linalg.norm(softmax_jacobian(p), axis=(-2, -1))


@dataclass(frozen=True)
class Saturation:
    """Softmax of some scores without and with ÷√d_k, and the size of its gradient.

    Args:
        scores: ``[n]`` the raw scores.
        sqrt_dk: √d_k.
        exps: ``[n]`` e to the power of each raw score.
        raw: ``[n]`` softmax(scores).
        scaled_scores: ``[n]`` scores / √d_k.
        scaled: ``[n]`` softmax(scores / √d_k).
        raw_gradient, scaled_gradient: the gradient's size (:func:`gradient_size`) at each.
    """

    scores: np.ndarray
    sqrt_dk: float
    exps: np.ndarray
    raw: np.ndarray
    scaled_scores: np.ndarray
    scaled: np.ndarray
    raw_gradient: float
    scaled_gradient: float


def two_scores(scores: Sequence[float], d_k: int) -> Saturation:
    """§4.4's example: softmax of ``scores`` as they are and divided by √d_k."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size < 2 or not np.isfinite(scores).all():
        raise ValueError(_("Give at least two finite scores."))
    if d_k < 1:
        raise ValueError(f"d_k={d_k} must be positive")
    sqrt_dk = math.sqrt(d_k)
    raw, scaled = softmax(scores), softmax(scores / sqrt_dk)
    with np.errstate(over="ignore"):
        exps = np.exp(scores)
    return Saturation(scores, sqrt_dk, exps, raw, scores / sqrt_dk, scaled,
                      float(gradient_size(raw)), float(gradient_size(scaled)))


def gradient_by_width(widths: Sequence[int] = D_K_CHOICES, n_keys: int = 8, rows: int = 400,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The mean size of softmax's gradient over rows of ``n_keys`` scores q·k of random
    unit-variance vectors, without and with ÷√d_k, for each d_k in ``widths``.

    Returns:
        ``(without [len(widths)], with [len(widths)])``.
    """
    rng = np.random.default_rng(seed)
    without, with_ = [], []
    for d_k in widths:
        q = rng.standard_normal((rows, 1, d_k), dtype=np.float32)  # [row, 1, d_k]
        k = rng.standard_normal((rows, n_keys, d_k), dtype=np.float32)  # [row, key, d_k]
        scores = (q * k).sum(-1).astype(np.float64)  # [row, key]
        without.append(gradient_size(softmax(scores)).mean())
        with_.append(gradient_size(softmax(scores / math.sqrt(d_k))).mean())
    return np.array(without), np.array(with_)


@dataclass(frozen=True)
class TraceScaling:
    """One head's scores of a real run, before and after ÷√d_k, and softmax of both.

    Args:
        raw: ``[query, key]`` Q·Kᵀ before the division (masked cells NaN).
        scaled: ``[query, key]`` Q·Kᵀ/√d_head, what the model uses (masked cells NaN).
        sqrt_dk: √d_head.
        raw_weights: ``[query, key]`` softmax of ``raw`` (masked cells 0): without scaling.
        weights: ``[query, key]`` the model's own weights.
        raw_spread, scaled_spread: the standard deviation of the allowed scores.
        raw_peak, peak: the mean of each row's largest weight, without and with scaling.
    """

    raw: np.ndarray
    scaled: np.ndarray
    sqrt_dk: float
    raw_weights: np.ndarray
    weights: np.ndarray
    raw_spread: float
    scaled_spread: float
    raw_peak: float
    peak: float


def trace_scaling(trace, name: str, layer: int, head: int) -> TraceScaling:
    """A traced head's scores (the trace keeps Q·Kᵀ/√d_head) multiplied back by √d_head, and
    softmax with and without the division.

    Args:
        trace: an :class:`~model.trace.AttentionTrace` that keeps scores and the model's sizes.
    """
    dims = trace.dims
    if dims is None:
        raise ValueError(_("This trace does not record the width of a head (d_k)."))
    sqrt_dk = math.sqrt(dims.d_head)
    allowed = trace.mask(name, layer)  # [query, key]
    scaled = np.where(allowed, trace.scores(name, layer, head).astype(np.float64), np.nan)
    raw = scaled * sqrt_dk
    raw_weights = softmax(np.where(allowed, raw, -np.inf))
    weights = np.asarray(trace.weights(name, layer, head), dtype=np.float64)
    return TraceScaling(raw, scaled, sqrt_dk, raw_weights, weights,
                        float(np.nanstd(raw)), float(np.nanstd(scaled)),
                        float(raw_weights.max(axis=-1).mean()),
                        float(weights.max(axis=-1).mean()))
