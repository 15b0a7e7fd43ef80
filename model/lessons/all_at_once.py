"""The numbers of the lesson §4.5, self-attention does every word at once.

§4.3 computed one word, 它. Self-attention does the same for 猫, 追, 老鼠 and 它 together, as
one matrix product rather than a loop of four. On §4.3's own worked example
(:mod:`.hand`: its keys, values and 它's query), :func:`word_by_word` runs the lesson's
calculation (:func:`.hand.hand_steps`) once per word and :func:`all_at_once` runs the
project's :func:`model.own.transformer.attention` once on every query; they agree.
:func:`loop_and_product_times` times both ways on a device for growing numbers of rows.

The lesson gives only 它's query (q₄ = [1, 0], its key too); the other three words take their
key as their query (:func:`queries`), which the page says.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np
import torch

from i18n import _

# §4.3's numbers: the page reads seed_inputs and SEED_DECIMALS from here (its own lesson's)
from model.lessons.hand import (  # noqa: F401
    SEED_DECIMALS,
    HandInputs,
    HandSteps,
    hand_steps,
    seed_inputs,
)
from model.own import transformer

D_TIMED = 64  # the width of a real head (the lesson's "real dimension is 64")
TIMED_ROWS = (4, 16, 64, 256, 1024, 4096)  # the lengths timed
MAX_TIMED_ROWS = 4096  # longer would hold the server (the loop) and n² floats (the product)
REPEATS = 9  # runs of each measurement at most (their median is shown)
RUN_BUDGET_S = 0.5  # one measurement's runs stop at about this long
TIME_BUDGET_S = 8.0  # a whole timing stops before a length that would take it past this


def queries(inputs: HandInputs) -> np.ndarray:
    """Every word's query: its key, except the last word's, which is §4.3's q.

    Args:
        inputs: §4.3's words, keys, values and query (:func:`.hand.seed_inputs`).

    Returns:
        ``Q [n, d_k]``.
    """
    Q = inputs.K.copy()  # [word, d_k]
    Q[-1] = inputs.q
    return Q


def word_by_word(inputs: HandInputs, Q: np.ndarray, decimals: int | None = None
                 ) -> list[HandSteps]:
    """§4.3's five steps (:func:`.hand.hand_steps`) for each word's query in turn: a loop.

    Args:
        inputs: the keys and values (its ``q`` is not used).
        Q: ``[n, d_k]`` one query per word.
        decimals: the lesson's rounding (2) or exact (None).

    Returns:
        one :class:`~model.lessons.hand.HandSteps` per query, in order.
    """
    return [hand_steps(HandInputs(inputs.words, inputs.K, inputs.V, np.asarray(q)), decimals)
            for q in Q]


def all_at_once(inputs: HandInputs, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """softmax(QKᵀ/√d_k)·V for every query at once: the project's own ``attention()`` called
    once, in float64.

    Returns:
        ``(output [n, d_v], weights [n, n])``.
    """
    as_tensor = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)[None, None]  # noqa: E731
    with torch.no_grad():  # [batch, head, query, d]
        output, weights = transformer.attention(as_tensor(Q), as_tensor(inputs.K),
                                                as_tensor(inputs.V))
    return output[0, 0].numpy(), weights[0, 0].numpy()


def stacked(steps: list[HandSteps]) -> tuple[np.ndarray, np.ndarray]:
    """The loop's rows stacked: ``(output [n, d_v], weights [n, n])``."""
    return (np.stack([s.output for s in steps]), np.stack([s.weights for s in steps]))


@dataclass(frozen=True)
class EveryWord:
    """§4.5 on §4.3's example: the loop's rows and the one product.

    Attributes:
        Q: ``[n, d_k]`` every word's query (:func:`queries`).
        loop: one :class:`~model.lessons.hand.HandSteps` per word, in the arithmetic asked.
        loop_output, loop_weights: the loop's rows stacked, ``[n, d_v]`` and ``[n, n]``.
        product_output, product_weights: the product's, exact.
        difference: the largest difference between the exact loop and the product.
        lesson_row: the last word's (它's) output with the lesson's rounding, ``[d_v]``.
    """

    Q: np.ndarray
    loop: list[HandSteps]
    loop_output: np.ndarray
    loop_weights: np.ndarray
    product_output: np.ndarray
    product_weights: np.ndarray
    difference: float
    lesson_row: np.ndarray


def every_word(inputs: HandInputs, decimals: int | None = None) -> EveryWord:
    """The loop (in the arithmetic ``decimals`` asks) and the product on ``inputs``.

    Args:
        inputs: §4.3's words, keys, values and 它's query.
        decimals: the lesson's rounding (2) or exact (None) for the loop shown.

    Returns:
        an :class:`EveryWord`.
    """
    Q = queries(inputs)
    loop = word_by_word(inputs, Q, decimals)
    exact_output, exact_weights = stacked(word_by_word(inputs, Q))
    output, weights = all_at_once(inputs, Q)
    difference = float(max(np.abs(output - exact_output).max(),
                           np.abs(weights - exact_weights).max()))
    lesson_row = word_by_word(inputs, Q[-1:], SEED_DECIMALS)[0].output
    return EveryWord(Q, loop, *stacked(loop), output, weights, difference, lesson_row)


@dataclass(frozen=True)
class Timing:
    """Median seconds of the loop and of the product at each number of rows.

    Attributes:
        rows: the numbers of rows (queries = keys) timed.
        loop: seconds of ``attention()`` called once per row.
        product: seconds of ``attention()`` called once on every row.
        loop_runs, product_runs: how many runs each median is of.
        skipped: the numbers of rows asked for but not timed: the loop would have run past
            the time allowed (:data:`TIME_BUDGET_S`).
        d: the width of every query, key and value.
        device: where it ran.
    """

    rows: tuple[int, ...]
    loop: tuple[float, ...]
    product: tuple[float, ...]
    loop_runs: tuple[int, ...]
    product_runs: tuple[int, ...]
    skipped: tuple[int, ...]
    d: int
    device: str

    @property
    def speedup(self) -> tuple[float, ...]:
        """How many times faster the product is, per number of rows."""
        return tuple(lp / pr for lp, pr in zip(self.loop, self.product))


def timing_bytes(n: int, d: int = D_TIMED) -> int:
    """Bytes the timing at ``n`` rows holds at its peak (float32): Q, K, V, the output, and
    the product's scores and weights (n × n, twice)."""
    return 4 * (4 * n * d + 3 * n * n)


def check_rows(rows: tuple[int, ...]) -> None:
    """Raise ValueError unless every number of rows is from 1 to :data:`MAX_TIMED_ROWS`."""
    if not rows or min(rows) < 1 or max(rows) > MAX_TIMED_ROWS:
        raise ValueError(_("The number of rows must be from 1 to {most:,}.").format(
            most=MAX_TIMED_ROWS))


def synchronised_seconds(function, device: torch.device) -> float:
    """One run of ``function``, the device synchronised before and after it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    function()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def _median_seconds(function, device: torch.device, repeats: int) -> tuple[float, int]:
    """The median of up to ``repeats`` runs after a warm-up run (kernels, the allocator), as
    many as fit in :data:`RUN_BUDGET_S` (at least one); a warm-up that alone takes longer is
    the measurement. Returns ``(seconds, runs)``."""
    warm = synchronised_seconds(function, device)
    if warm > RUN_BUDGET_S:
        return warm, 1
    runs = max(1, min(repeats, int(RUN_BUDGET_S / max(warm, 1e-9))))
    return statistics.median(synchronised_seconds(function, device) for _run in range(runs)), runs


@torch.inference_mode()
def loop_and_product_times(rows: tuple[int, ...] = TIMED_ROWS, device: str | torch.device = "cpu",
                           d: int = D_TIMED, repeats: int = REPEATS) -> Timing:
    """Time, for each ``n`` of ``rows`` (in increasing order), the project's ``attention()``
    called once per query (a loop over n rows, the rows gathered into one output) against one
    call on all n queries, on random float32 ``Q, K, V [n, d]`` on ``device``: the median of
    up to ``repeats`` runs after a warm-up, the device synchronised around each run (CUDA).
    A length whose loop would take the whole timing past :data:`TIME_BUDGET_S` (judged from
    the length before it) is skipped, and so are the longer ones.

    Returns:
        a :class:`Timing`.

    Raises:
        ValueError: a number of rows below 1 or above :data:`MAX_TIMED_ROWS`.
    """
    check_rows(rows)
    device = torch.device(device)
    generator = torch.Generator().manual_seed(0)
    rows = tuple(sorted(int(n) for n in set(rows)))
    done, loops, products, loop_runs, product_runs = [], [], [], [], []
    started = time.perf_counter()
    for n in rows:
        if loops:  # the loop's time grows at least like n: two runs (warm-up and one) of it
            expected = 2 * loops[-1] * n / done[-1]
            if time.perf_counter() - started + expected > TIME_BUDGET_S:
                break
        Q, K, V = (torch.randn(1, 1, n, d, generator=generator).to(device)  # [b, h, n, d]
                   for _which in range(3))

        def loop(Q=Q, K=K, V=V, n=n):
            return torch.cat([transformer.attention(Q[:, :, i:i + 1], K, V)[0]
                              for i in range(n)], dim=2)  # [batch, head, query, d]

        def product(Q=Q, K=K, V=V):
            return transformer.attention(Q, K, V)[0]  # [batch, head, query, d]

        seconds, runs = _median_seconds(loop, device, repeats)
        loops.append(seconds)
        loop_runs.append(runs)
        seconds, runs = _median_seconds(product, device, repeats)
        products.append(seconds)
        product_runs.append(runs)
        done.append(n)
        del Q, K, V
    return Timing(tuple(done), tuple(loops), tuple(products), tuple(loop_runs),
                  tuple(product_runs), tuple(rows[len(done):]), int(d), str(device))


def loop_equals_product(n: int = 64, d: int = D_TIMED, device: str | torch.device = "cpu"
                        ) -> float:
    """The largest difference between the loop's and the product's outputs on random float64
    ``Q, K, V [n, d]``: the two ways compute the same numbers."""
    generator = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(1, 1, n, d, generator=generator, dtype=torch.float64).to(device)
               for _which in range(3))
    with torch.no_grad():
        rows = torch.cat([transformer.attention(Q[:, :, i:i + 1], K, V)[0] for i in range(n)],
                         dim=2)
        whole = transformer.attention(Q, K, V)[0]
    return float((rows - whole).abs().max())

