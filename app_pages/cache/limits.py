"""The server's limits and the checks made with them before anything runs, so that one request
cannot exhaust a shared server: how much one request and the server as a whole may take
(:class:`Limits`, read from ``ATTENTION_EXPLORER_*`` environment variables; docs/operating.md
lists them), the longest input that fits (:func:`token_budget`, from the models' own memory
estimates of :mod:`model.budget`), the refusals (:class:`BudgetError`) and running out of memory
turned into one (:func:`memory_guard`).

Server policy, not the model's: the Python API and the CLI never limit a request.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from i18n import _
from model.budget import Lengths
from model.errors import ModelLoadError
from model.meta import Family
from model.policy import GB, env_number, is_loopback
from viz.numbers import rough_size


@dataclass(frozen=True)
class Limits:
    """How much one request, and the server as a whole, may take.

    Attributes:
        request_bytes: memory one trace may need at its peak (the forward pass, what the trace
            keeps, what a page computes from it: :mod:`model.budget`); longer texts are
            refused.
        analysis_tokens: the longest input the whole-trace analyses (head statistics, model
            view, rollout) run on.
        trace_cache_bytes: memory the shared cache of traces and analyses may hold.
        concurrent_runs: traces and analyses computed at once; others wait their turn.
        max_chars: the longest text accepted (typed or uploaded).
        corpus_sentences: sentences one corpus run may hold (the Corpus page).
        corpus_tokens: tokens of one sentence of a corpus.
        corpus_file_bytes: bytes of one uploaded sentence file.
    """

    request_bytes: int = 2 * GB
    analysis_tokens: int = 8192
    trace_cache_bytes: int = 1 * GB
    concurrent_runs: int = 2
    max_chars: int = 100_000
    corpus_sentences: int = 1000
    corpus_tokens: int = 256
    corpus_file_bytes: int = 2 << 20

    @classmethod
    def on_this_machine(cls, available: int) -> Limits:
        """The defaults of a server that listens on loopback (one user, their own machine, as
        ``make run``): the memory the machine had free as the server started, less
        :data:`LOCAL_MARGIN`, in equal shares for each run computed at once and for the trace
        cache (which then holds the largest trace a request may make: a larger one would be
        traced again at every rerun); never less than a classroom's. The analyses run as long
        as memory allows, on texts up to :data:`LOCAL_MAX_CHARS` characters (32,768 tokens of
        English are about 150,000)."""
        base = cls()
        margin = max(LOCAL_MARGIN_MIN, int(available * LOCAL_MARGIN))
        share = (available - margin) // (base.concurrent_runs + 1)
        return cls(request_bytes=max(base.request_bytes, share),
                   trace_cache_bytes=max(base.trace_cache_bytes, share),
                   analysis_tokens=LOCAL_ANALYSIS_TOKENS, max_chars=LOCAL_MAX_CHARS)

    @classmethod
    def from_env(cls, server_address: str | None = None,
                 available: int | None = None) -> Limits:
        """The operator's limits (``ATTENTION_EXPLORER_REQUEST_GB``, ``_ANALYSIS_TOKENS``,
        ``_TRACE_CACHE_GB``, ``_CONCURRENT_RUNS``, ``_MAX_CHARS``, ...), else the defaults:
        a classroom's for a server reachable from other machines, :meth:`on_this_machine`'s
        for one on loopback (``server_address``; ``available``: free bytes, default the
        machine's now)."""
        if is_loopback(server_address):
            default = cls.on_this_machine(available_memory() if available is None
                                          else available)
        else:
            default = cls()
        return cls(
            request_bytes=int(env_number("ATTENTION_EXPLORER_REQUEST_GB",
                                         default.request_bytes / GB) * GB),
            analysis_tokens=max(1, int(env_number("ATTENTION_EXPLORER_ANALYSIS_TOKENS",
                                               default.analysis_tokens))),
            trace_cache_bytes=int(env_number("ATTENTION_EXPLORER_TRACE_CACHE_GB",
                                          default.trace_cache_bytes / GB) * GB),
            concurrent_runs=max(1, int(env_number("ATTENTION_EXPLORER_CONCURRENT_RUNS",
                                               default.concurrent_runs))),
            max_chars=max(1, int(env_number("ATTENTION_EXPLORER_MAX_CHARS", default.max_chars))),
            corpus_sentences=max(1, int(env_number("ATTENTION_EXPLORER_CORPUS_SENTENCES",
                                                default.corpus_sentences))),
            corpus_tokens=max(1, int(env_number("ATTENTION_EXPLORER_CORPUS_TOKENS",
                                             default.corpus_tokens))),
            corpus_file_bytes=max(1, int(env_number("ATTENTION_EXPLORER_CORPUS_FILE_MB",
                                                 default.corpus_file_bytes / 2**20) * 2**20)),
        )


# On loopback: of the memory free as the server starts, a fifth (at least 2 GB) is left to the
# rest of the machine.
LOCAL_MARGIN = 0.2
LOCAL_MARGIN_MIN = 2 * GB
# On loopback the analyses of every head of every layer are bounded by memory alone.
LOCAL_ANALYSIS_TOKENS = 1 << 20
LOCAL_MAX_CHARS = 1_000_000


def available_memory() -> int:
    """Bytes of memory this machine can give without swapping, now."""
    import psutil

    return int(psutil.virtual_memory().available)


class BudgetError(ModelLoadError):
    """A request needs more memory (or a longer analysis) than the server allows; nothing ran."""


def token_budget(loaded, limit_bytes: int) -> int:
    """The longest input (tokens; encoder-decoder: a source this long and a target as long,
    after its start token) that a :class:`~model.interface.LoadedModel` traces within
    ``limit_bytes``; at most its ``max_positions``."""
    pair = loaded.family is Family.ENCODER_DECODER

    def fits(n: int) -> bool:
        return loaded.memory_needed(Lengths(n, n + 1 if pair else 0)) <= limit_bytes

    if not fits(1):
        return 0
    low, high = 1, loaded.positions.max_positions or 1 << 20
    while low < high:  # the largest n that fits
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def check_request(loaded, n: Lengths, limit_bytes: int) -> None:
    """Refuse, before anything runs, a request whose estimate exceeds ``limit_bytes``.

    Args:
        loaded: a :class:`~model.interface.LoadedModel`.
        n: the request's token counts (from ``loaded.count_tokens``).
        limit_bytes: the memory one request may need.

    Raises:
        BudgetError: with the input's length, the longest that fits and the limit.
    """
    needed = loaded.memory_needed(n)
    if needed <= limit_bytes:
        return
    budget = token_budget(loaded, limit_bytes)
    if not n.target:
        message = _("this text is {source:,} tokens, which needs about {needed}; on this server "
                    "{model} ({device}) traces at most {budget:,} tokens at a time (a limit of "
                    "{limit} per request). Shorten the text.")
    else:
        message = _("this text is {source:,} source and {target:,} target tokens, which needs "
                    "about {needed}; on this server {model} ({device}) traces at most {budget:,} "
                    "tokens at a time (a limit of {limit} per request). Shorten the text.")
    raise BudgetError(message.format(source=n.source, target=n.target, needed=rough_size(needed),
                                     model=loaded.name, device=loaded.device, budget=budget,
                                     limit=rough_size(limit_bytes)))


def check_analysis(n_tokens: int, limit_tokens: int, what: str) -> None:
    """Refuse an analysis of every head of every layer beyond ``limit_tokens`` tokens."""
    if n_tokens > limit_tokens:
        raise BudgetError(
            _("{what} reads every head of every layer: on this server it runs on texts of up to "
              "{limit:,} tokens, and this one has {count:,}. Shorten the text, or look at one "
              "layer at a time in Explore.").format(what=what, limit=limit_tokens,
                                                     count=n_tokens))


def _is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, MemoryError):
        return True
    import torch

    if isinstance(error, torch.OutOfMemoryError):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and ("out of memory" in text
                                                or "can't allocate memory" in text)


@contextmanager
def memory_guard(what: str) -> Iterator[None]:
    """Turn running out of memory (CPU or GPU) inside the block into a :class:`BudgetError`
    that says so; the model stays usable (CUDA's cached blocks are released)."""
    try:
        yield
    except (MemoryError, RuntimeError) as error:
        if not _is_out_of_memory(error):
            raise
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        raise BudgetError(_("the server ran out of memory while {what}; nothing was kept. Try "
                            "a shorter text, or again when fewer people are running models.")
                          .format(what=what)) from None
