"""The numbers of the lesson §4.1: attention is a weighted average.

To understand 它 in 「猫 追 老鼠 ， 因为 它 饿 了」 the lesson scans every word, gives each a
relevance score and mixes the words' information by those scores, the weights adding up to 1:
result = w₁·info₁ + w₂·info₂ + …. :func:`weighted_average` does that for scores and 2-D
"information" a person types (the lesson's defaults: 猫 high, 追 low); :func:`model_row` finds
in a trace of the own translator the encoder head whose row for "it" puts the most weight on
"cat" (searched in every layer and head, never fixed in advance) and reads that head's values,
so that the model's own output for "it" is shown as the same kind of weighted average.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from i18n import N_, _
from model.lessons.network import attention_module, own_network, run, to_numpy
from model.lessons.see_it import IT_SENTENCE, pair_cell
from model.lessons.see_it import Claim as _Claim
from model.lessons.typed import checked_number
from model.own.hooks import hook_name
from model.trace import AttentionTrace

# 猫 追 老鼠 ， 因为 它 饿 了, word by word in the lesson's order (English glosses; translated
# back where shown).
WORDS = (N_("cat"), N_("chases"), N_("mouse"), N_(","), N_("because"), N_("it"), N_("hungry"),
         N_("(now)"))
# The relevance of each word to 它, as §4.1 scores it: 猫 (and 饿) high, the verb 追 low.
SCORES = (3.0, -1.0, 1.0, -2.0, -1.0, 0.5, 1.5, -2.0)
# Each word's "information" as a point of a plane (made up, like §4.3's V, so that the mix can
# be drawn): nouns on the right, the verb high, the little words near the middle.
INFO = ((2.0, 1.0), (0.0, 3.0), (1.0, 2.0), (-1.0, -1.0), (-1.5, 0.5), (0.0, 0.0),
        (1.5, -1.5), (-0.5, -1.5))
QUERY_WORD = 5  # 它: the word whose scores these are
# The trace's claim: in "The cat chased the mouse because it was hungry", "it" looks at "cat".
IT_CAT = _Claim("it_cat", IT_SENTENCE, "it", "cat", "encoder.self")


@dataclass(frozen=True)
class Mix:
    """Scores turned into weights, and the weighted average of the information.

    Attributes:
        scores: ``[n]`` the relevance scores.
        exps: ``[n]`` e to the power of each score (less the largest, for safety).
        weights: ``[n]`` softmax of the scores: positive, summing to 1.
        info: ``[n, d]`` each word's information.
        weighted: ``[n, d]`` each row of ``info`` times its weight.
        output: ``[d]`` the sum of the weighted rows: the weighted average.
    """

    scores: np.ndarray
    exps: np.ndarray
    weights: np.ndarray
    info: np.ndarray
    weighted: np.ndarray
    output: np.ndarray

    @property
    def largest(self) -> int:
        """The word with the largest weight (the first, where several are as large)."""
        return int(self.weights.argmax())


def checked_inputs(words: Sequence[str], scores, info) -> tuple[np.ndarray, np.ndarray]:
    """Typed scores and information, checked (:func:`.typed.checked_number`).

    Args:
        words: ``n`` labels, naming the cells in messages.
        scores: ``n`` numbers.
        info: ``[n, d]`` numbers.

    Returns:
        ``(scores [n], info [n, d])`` as float64.

    Raises:
        ValueError: an empty cell, text, NaN or a number out of range, or sizes that differ.
    """
    scores, info = list(scores), [list(row) for row in info]
    if not words or len(scores) != len(words) or len(info) != len(words):
        raise ValueError(_("Give one score and one point per word."))
    values = np.array([checked_number(s, _("The score of “{word}”").format(word=w))
                       for w, s in zip(words, scores)], dtype=np.float64)
    points = np.array([[checked_number(v, _("The information of “{word}”, entry {index}").format(
        word=w, index=i + 1)) for i, v in enumerate(row)] for w, row in zip(words, info)],
        dtype=np.float64)
    return values, points


def weighted_average(scores, info) -> Mix:
    """§4.1's three steps: scores → weights (softmax) → the weighted average of the information.

    Args:
        scores: ``[n]`` relevance scores, any real numbers.
        info: ``[n, d]`` the information of each word.

    Returns:
        a :class:`Mix`; ``weights`` equal ``torch.softmax(scores)`` and ``output`` equals
        ``weights @ info``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    info = np.asarray(info, dtype=np.float64)
    exps = np.exp(scores - scores.max())  # the same weights, and e^x never overflows
    weights = exps / exps.sum()
    weighted = weights[:, None] * info  # [word, d]
    return Mix(scores, exps, weights, info, weighted, weighted.sum(axis=0))


@dataclass(frozen=True)
class ModelRow:
    """One head's row for "it" in a trace of the own translator, and that head's values.

    Attributes:
        layer, head: the encoder head found.
        query, key: the positions of "it" and of "cat" among the source tokens.
        tokens: the source tokens.
        weights: ``[token]`` the row of "it" in that head (sums to 1).
        argmax_is_key: whether "cat" is the row's largest weight (False only when no head
            has its largest weight at "cat"; then the head is the one where "cat" weighs most).
        grid: ``[layer, head]`` the weight of "it" → "cat" in every encoder head.
        values: ``[token, d_head]`` that head's value vectors.
        output: ``[d_head]`` that head's output for "it" (recorded, ``hook_z``).
        plane: ``[token, 2]`` the values projected on their two main directions.
        plane_output: ``[2]`` the output projected the same way.
        difference: the largest difference between ``weights @ values`` and ``output``.
    """

    layer: int
    head: int
    query: int
    key: int
    tokens: tuple[str, ...]
    weights: np.ndarray
    argmax_is_key: bool
    grid: np.ndarray
    values: np.ndarray
    output: np.ndarray
    plane: np.ndarray
    plane_output: np.ndarray
    difference: float


def find_head(trace: AttentionTrace, claim: _Claim = IT_CAT) -> tuple[int, int, bool, np.ndarray]:
    """The encoder head whose row for ``claim.query`` puts the most weight on ``claim.key``:
    of the heads where that key is the row's largest weight, the one where it is largest;
    if there is none, the head where the key weighs most.

    Returns:
        ``(layer, head, argmax_is_key, grid [layer, head])``.

    Raises:
        ValueError: a word of the pair is not in the trace.
    """
    query, key = pair_cell(trace, claim)
    rows = np.stack([trace.layer_weights(claim.kind, layer)[:, query, :]  # [head, key]
                     for layer in range(trace.layers(claim.kind))])  # [layer, head, key]
    grid = rows[:, :, key].astype(np.float64)
    at_key = rows.argmax(axis=-1) == key  # [layer, head]
    argmax_is_key = bool(at_key.any())
    candidates = np.where(at_key, grid, -np.inf) if argmax_is_key else grid
    layer, head = np.unravel_index(int(np.argmax(candidates)), grid.shape)
    return int(layer), int(head), argmax_is_key, grid


def _plane(values: np.ndarray, output: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and ``output`` on the two directions along which the values spread most
    (principal components about the values' mean): a linear map, so that a weighted average
    with weights summing to 1 stays the same weighted average."""
    centre = values.mean(axis=0)
    _u, _s, vt = np.linalg.svd(values - centre, full_matrices=False)
    axes = vt[:2].T  # [d_head, 2]
    if axes.shape[1] < 2:  # one token: a second direction of zeros
        axes = np.pad(axes, ((0, 0), (0, 2 - axes.shape[1])))
    return (values - centre) @ axes, (output - centre) @ axes


def model_row(loaded, trace: AttentionTrace) -> ModelRow:
    """The row of "it" in the head found by :func:`find_head`, with that head's values and
    output recorded in one forward pass of the own network (:func:`.network.run`).

    Args:
        loaded: an own encoder-decoder model (own-translator); ``trace``: its trace of
            :data:`~model.lessons.see_it.IT_SENTENCE`.

    Returns:
        a :class:`ModelRow`.

    Raises:
        ValueError: not an own model, or "it" or "cat" is not in the trace.
    """
    network = own_network(loaded)
    layer, head, argmax_is_key, grid = find_head(trace)
    query, key = pair_cell(trace, IT_CAT)
    module = attention_module(network, IT_CAT.kind, layer)
    store, _logits = run(loaded, trace, [module.hook_v, module.hook_z])
    values = to_numpy(store[hook_name(module.hook_v)][0, head])  # [key, d_head]
    output = to_numpy(store[hook_name(module.hook_z)][0, head, query])  # [d_head]
    plane, plane_output = _plane(values, output)
    weights = trace.weights(IT_CAT.kind, layer, head)[query].astype(np.float64)  # [key]
    return ModelRow(layer, head, query, key, tuple(str(t) for t in trace.axes(IT_CAT.kind)[1]),
                    weights, argmax_is_key, grid, values, output, plane, plane_output,
                    float(np.abs(weights @ values - output).max()))
