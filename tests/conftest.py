"""Shared fixtures: the own-random model and its trace of the seed sentence, and the tiny
Hugging Face checkpoints (built once per session). Helpers live in :mod:`tests.helpers`."""

from __future__ import annotations

import os

import pytest

# Unexpected errors reach the test (AppTest's ``exception``, the browser's stException) instead
# of the app's one-line message for users: tests must see every failure.
os.environ.setdefault("ATTENTION_EXPLORER_DEBUG", "1")

from tests.helpers import SEED_SENTENCE, build_tiny_checkpoints


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
