"""Shared fixtures: the own-random model and its trace of the seed sentence, and the tiny
Hugging Face checkpoints (built once per session). Helpers live in :mod:`tests.helpers`.

The tiers: ``tests/unit`` (functions and figures), ``tests/app`` (pages under Streamlit's
AppTest, and the served app), ``tests/browser`` (the served app in Chromium) and
``tests/lessons`` (each lesson's numbers and pages). Markers are set here from what a test does,
so that a tier can be run on its own whatever file it sits in: ``browser`` (drives Chromium;
always ``slow`` too) and ``apptest`` (runs a page under AppTest).
"""

from __future__ import annotations

import inspect
import os

import pytest

# Unexpected errors reach the test (AppTest's ``exception``, the browser's stException) instead
# of the app's one-line message for users: tests must see every failure.
os.environ.setdefault("ATTENTION_EXPLORER_DEBUG", "1")
# A served app loads no model before it is asked (a test that wants the preload sets it):
# each test's server would otherwise load three models, most of them for nothing.
os.environ.setdefault("ATTENTION_EXPLORER_PRELOAD", "off")

from tests.helpers import SEED_SENTENCE, build_tiny_checkpoints

_BROWSER = ("chromium_page(", "sync_playwright(", "CHROMIUM")
_APPTEST = ("app_test(", "AppTest")


def _source(item) -> str:
    try:
        return inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return ""


def pytest_collection_modifyitems(config, items):
    """Mark each test by what it drives: ``browser`` (and ``slow``) or ``apptest``."""
    for item in items:
        source = _source(item)
        if any(word in source for word in _BROWSER):
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.slow)
        if any(word in source for word in _APPTEST):
            item.add_marker(pytest.mark.apptest)


@pytest.fixture(scope="session")
def own_random():
    from model import load

    return load("own-random", device="cpu")


@pytest.fixture(scope="session")
def seed_trace(own_random):
    return own_random.trace(SEED_SENTENCE)


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory):
    """One tiny random checkpoint per architecture (bert, gpt2, llama, mistral, t5, bart)."""
    return build_tiny_checkpoints(tmp_path_factory.mktemp("tiny-checkpoints"))


@pytest.fixture(scope="session")
def nllb_style(tmp_path_factory):
    """A tiny NLLB-style translation checkpoint (M2M100 with NLLB's tokenizer)."""
    from tests.helpers import nllb_style_checkpoint

    return nllb_style_checkpoint(tmp_path_factory.mktemp("nllb"))
