"""The C allocator told to give freed memory back to the system (glibc only): large blocks
mapped above :data:`MMAP_BYTES`, the heap trimmed when the cache lets results go. Applied once,
when the cache is first imported."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys


def return_freed_memory() -> bool:
    """Make the C allocator give large freed blocks back to the system (glibc only).

    glibc serves a request of more than 128 KB with its own memory map, but raises that
    threshold to the size of each such block freed, up to 32 MB: after a few traces, the
    per-head arrays of a long input (16 MB at 2,000 tokens) came from the heap and stayed there
    once freed. Measured over 20 distinct 2,000-token smollm2 traces in one server process
    (``python -m bench.request_memory --traces 20``): 4.1 GB at the worst without this, a flat
    2.1 GB with it. Setting the threshold fixes it at :data:`MMAP_BYTES`, above a block of
    weights (:data:`model.store.BLOCK_BYTES`, more for a long input's rows), so that the
    blocks every analysis reads and their temporaries are reused from the heap; mapping each
    anew made a pass over every head of smollm2 at 2,048 tokens 2.2 times slower (5.7 s
    instead of 2.6 s). What the heap keeps is given back by :func:`trim_freed_memory`.

    Returns:
        whether the setting was applied.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_BYTES))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


MMAP_BYTES = 32 << 20  # above a block of 64 rows of 8,192 keys and 9 heads (19 MB); glibc
# before 2.35 refuses a threshold above 32 MB


def trim_freed_memory() -> bool:
    """Give the heap's free pages back to the system (glibc's ``malloc_trim``), after the
    cache let results go: arrays under :data:`MMAP_BYTES` come from the heap, and a trace's
    queries and keys (5 MB a layer at 2,000 tokens) left free pages between others. Measured
    as in :func:`return_freed_memory`: 3.5 GB at the worst without it; with it 2.7 GB while
    the cache fills, then a flat 2.1 GB."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


M_MMAP_THRESHOLD = -3  # glibc's malloc.h
return_freed_memory()
