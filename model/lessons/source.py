"""The lessons' code read from its live source, safely from several sessions at once.

Python 3.11's AST constructor keeps one recursion counter for all threads, so two
``ast.parse`` calls at once (``inspect`` parses a module to find a class) can fail with
"AST constructor recursion depth mismatch"; CI saw it when four sessions ran the 4.9 listing
for the first time together. Source does not change while the app runs: each function's or
class's lines, and each parse, are made once, under one lock, and kept.
"""

from __future__ import annotations

import ast
import inspect
import threading

_LOCK = threading.Lock()
_LINES: dict = {}
_PARSED: dict[str, ast.Module] = {}


def source_lines(item) -> tuple[list[str], int]:
    """``inspect.getsourcelines(item)``, read once and kept: a new list each call."""
    with _LOCK:
        if item not in _LINES:
            _LINES[item] = inspect.getsourcelines(item)
        lines, start = _LINES[item]
    return list(lines), start


def parsed(source: str) -> ast.Module:
    """``ast.parse(source)``, made once per source and kept (callers only read the tree)."""
    with _LOCK:
        if source not in _PARSED:
            _PARSED[source] = ast.parse(source)
        return _PARSED[source]
