"""What a server's operator allows of the models: which load from where (how much work one
request may ask for is the app's: :mod:`app_pages.cache.limits`). Read from
``ATTENTION_EXPLORER_*`` environment variables (docs/operating.md lists them); the Python API
and the CLI load with :data:`OPEN` unless told otherwise.

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


def env_flag(name: str, default: bool | None) -> bool | None:
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


def env_number(name: str, default: float) -> float:
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
            other=env_flag("ATTENTION_EXPLORER_OTHER_MODELS", is_loopback(server_address)),
            folders=folders or None,
            hub=env_flag("ATTENTION_EXPLORER_HUB", True),
            hub_max_bytes=int(env_number("ATTENTION_EXPLORER_HUB_MAX_GB", 4) * GB),
            trust_remote_code=env_flag("ATTENTION_EXPLORER_TRUST_REMOTE_CODE", False),
            pickle=env_flag("ATTENTION_EXPLORER_PICKLE_WEIGHTS", False),
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
