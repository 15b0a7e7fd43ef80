"""The numbers of the lesson §4.3: attention worked by hand on four words.

§4.3 computes the output of one word (它, "it") from its query ``q`` and the keys and values
of 猫 / 追 / 老鼠 / 它, and writes every intermediate value rounded to two decimals.
:func:`hand_steps` does the same, exactly or with the lesson's rounding;
:func:`run_attention` runs the project's own :func:`model.own.transformer.attention` on the
same numbers, and :func:`attention_lines` finds, in that function's live source, the lines
that compute each step (:func:`translated_comments` writes their comments in the reader's
language). The numbers typed are checked by :func:`.typed.checked_number`.
"""

from __future__ import annotations

import inspect
import io
import math
import textwrap
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from i18n import N_, _
from model.lessons.source import parsed, source_lines
from model.lessons.typed import checked_number
from model.own import transformer

# The lesson's four words (猫 / 追 / 老鼠 / 它), in English; translated where shown.
SEED_WORDS = (N_("cat"), N_("chases"), N_("mouse"), N_("it"))
SEED_K = ((1.0, 0.0), (0.0, 1.0), (0.7, 0.7), (1.0, 0.0))  # [word, d_k]
SEED_V = ((2.0, 1.0), (0.0, 3.0), (1.0, 2.0), (0.0, 0.0))  # [word, d_v]
SEED_Q = (1.0, 0.0)  # the query of 它: "I am looking for an animal"
SEED_DECIMALS = 2  # the lesson writes every intermediate value with two decimals
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
# attention()'s comments as its source writes them (after the #), in English; the lesson shows
# them in its reader's language. A test checks that every comment of the function is here.
CODE_COMMENTS = (
    N_("the seed's d_k"),
    N_("① scores: every q against every k -> [batch, head, query, key]"),
    N_("② mask: forbidden positions get -inf (causal mask / padding)"),
    N_("③ softmax: each row becomes weights summing to 1"),
    N_("④ weighted sum of V -> [batch, head, query, d_v]"),
)


def _comment_tokens(code: str) -> list[tokenize.TokenInfo]:
    """The comment tokens of ``code`` (lines of Python); none for code that does not
    tokenise."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    return [token for token in tokens if token.type == tokenize.COMMENT]


def comments(code: str) -> list[str]:
    """The comments of ``code``, each without its ``#``."""
    return [token.string[1:].strip() for token in _comment_tokens(code)]


def translated_comments(code: str) -> str:
    """``code`` with its comments in the current language: each one of :data:`CODE_COMMENTS`
    translated, any other as it is; the code itself, and every line's indentation, unchanged."""
    lines = code.split("\n")
    for token in reversed(_comment_tokens(code)):  # right to left: nothing still to do moves
        text = token.string[1:].strip()
        if text in CODE_COMMENTS:
            (row, start), (_row, end) = token.start, token.end
            line = lines[row - 1]
            lines[row - 1] = line[:start] + "# " + _(text) + line[end:]
    return "\n".join(lines)


def attention_lines(function=None) -> dict[str, SourceLines]:
    """The lines of the own ``attention()`` that compute each step, read from its live source.

    Returns:
        ``{"d_k": the statement that reads d_k, "①": the scores (QKᵀ/√d_k), "②": the mask,
        "③": the softmax, "④": the weighted sum of V}``; each marker's lines are its comment
        and the statement right after it.
    """
    function = function or transformer.attention
    lines, start = source_lines(function)
    source = textwrap.dedent("".join(lines))
    body = parsed(source).body[0].body  # the function's statements
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
