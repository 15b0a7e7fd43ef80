"""What a server's operator allows: which models load from where, and how much work one request
may ask for. Read from ``ATTENTION_EXPLORER_*`` environment variables (the README's table lists
them); the Python API and the CLI load with :data:`OPEN` unless told otherwise.

:class:`LoadPolicy` is checked by :func:`model.loader.load` before anything is read: a spec the
policy refuses gets one :class:`~model.errors.ModelLoadError` whose message says nothing about
the server's file system (whether a folder exists, what it holds).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from i18n import _
from model.errors import ModelLoadError

GB = 1024 ** 3
ON = ("1", "on", "true", "yes")
OFF = ("0", "off", "false", "no")


def _flag(name: str, default: bool | None) -> bool | None:
    """An on/off environment variable; ``default`` when unset or ``auto``."""
    value = os.environ.get(name, "").strip().lower()
    if value in ON:
        return True
    if value in OFF:
        return False
    if value in ("", "auto"):
        return default
    raise ValueError(_("{name}={value}: use on, off or auto").format(name=name,
                                                                      value=repr(value)))


def _number(name: str, default: float) -> float:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ValueError(_("{name}={value} is not a number").format(
            name=name, value=repr(value))) from None
    if number <= 0:
        raise ValueError(_("{name}={value} must be positive").format(name=name,
                                                                    value=repr(value)))
    return number


def is_loopback(address: str | None) -> bool:
    """Whether a server listening on ``address`` is reachable from this machine only."""
    if not address:
        return False  # Streamlit's default listens on every interface
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class LoadPolicy:
    """Where models may come from.

    Attributes:
        other: specs beyond the bundled models (hub ids, folders, .gguf files) are allowed.
        folders: when set, local checkpoints must lie inside one of these folders (after
            following links); ``None``: anywhere.
        hub: hub ids may be downloaded (where the machine has network).
        hub_max_bytes: the largest hub download (weights of one checkpoint), in bytes.
        trust_remote_code: a checkpoint's own Python code may run when asked.
        pickle: weights saved as pickles (``pytorch_model.bin``) may be read; else only
            safetensors (and GGUF).
    """

    other: bool = True
    folders: tuple[Path, ...] | None = None
    hub: bool = True
    hub_max_bytes: int = 4 * GB
    trust_remote_code: bool = False
    pickle: bool = True

    @classmethod
    def from_env(cls, server_address: str | None = None) -> LoadPolicy:
        """The operator's policy for a server listening on ``server_address``: "other" models
        are off by default unless it listens on loopback only; pickles and remote code are
        off unless switched on."""
        listed = os.environ.get("ATTENTION_EXPLORER_MODEL_DIRS", "").split(os.pathsep)
        folders = tuple(Path(f.strip()).expanduser().resolve() for f in listed if f.strip())
        return cls(
            other=_flag("ATTENTION_EXPLORER_OTHER_MODELS", is_loopback(server_address)),
            folders=folders or None,
            hub=_flag("ATTENTION_EXPLORER_HUB", True),
            hub_max_bytes=int(_number("ATTENTION_EXPLORER_HUB_MAX_GB", 4) * GB),
            trust_remote_code=_flag("ATTENTION_EXPLORER_TRUST_REMOTE_CODE", False),
            pickle=_flag("ATTENTION_EXPLORER_PICKLE_WEIGHTS", False),
        )

    def check_path(self, path: Path) -> None:
        """Refuse a local checkpoint outside the allowed folders, saying nothing about it."""
        if self.folders is None:
            return
        try:
            resolved = path.expanduser().resolve()
        except (OSError, RuntimeError, ValueError):
            resolved = None
        if resolved is None or not any(resolved.is_relative_to(f) for f in self.folders):
            raise ModelLoadError(_("this server loads local checkpoints only from the folders "
                                   "its operator allows; ask them which"))


# The API's and the CLI's policy: a person on their own machine may load anything (remote code
# still runs only when ``trust_remote_code=True`` is passed).
OPEN = LoadPolicy(trust_remote_code=True)


@dataclass(frozen=True)
class Limits:
    """How much one request, and the server as a whole, may take.

    Attributes:
        request_bytes: memory one trace may need at its peak (the forward pass, what the trace
            keeps, one layer of every head computed for a page); longer texts are refused.
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
    def from_env(cls) -> Limits:
        """The operator's limits (``ATTENTION_EXPLORER_REQUEST_GB``, ``_ANALYSIS_TOKENS``,
        ``_TRACE_CACHE_GB``, ``_CONCURRENT_RUNS``, ``_MAX_CHARS``), else the defaults."""
        default = cls()
        return cls(
            request_bytes=int(_number("ATTENTION_EXPLORER_REQUEST_GB", default.request_bytes / GB)
                              * GB),
            analysis_tokens=max(1, int(_number("ATTENTION_EXPLORER_ANALYSIS_TOKENS",
                                               default.analysis_tokens))),
            trace_cache_bytes=int(_number("ATTENTION_EXPLORER_TRACE_CACHE_GB",
                                          default.trace_cache_bytes / GB) * GB),
            concurrent_runs=max(1, int(_number("ATTENTION_EXPLORER_CONCURRENT_RUNS",
                                               default.concurrent_runs))),
            max_chars=max(1, int(_number("ATTENTION_EXPLORER_MAX_CHARS", default.max_chars))),
            corpus_sentences=max(1, int(_number("ATTENTION_EXPLORER_CORPUS_SENTENCES",
                                                default.corpus_sentences))),
            corpus_tokens=max(1, int(_number("ATTENTION_EXPLORER_CORPUS_TOKENS",
                                             default.corpus_tokens))),
            corpus_file_bytes=max(1, int(_number("ATTENTION_EXPLORER_CORPUS_FILE_MB",
                                                 default.corpus_file_bytes / 2**20) * 2**20)),
        )
