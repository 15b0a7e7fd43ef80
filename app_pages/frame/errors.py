"""The one way a page explains an expected error (a leaf: the cache uses it too): bad input or a
model that cannot load becomes one message on the page, and what each model reads."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import streamlit as st

from app_pages.frame.markdown import literal
from i18n import N_, _
from model import UnknownWordsError
from model.errors import listed

# Where to go when a model has no token for part of a text.
READS_ANY_SCRIPT = N_("smollm2 reads any language and script, byte by byte (Chinese "
                       "included): choose it in the Model box.")
# What the own models with a fixed vocabulary read, for messages about unknown words.
READS = {"own-translator": (N_("English words"), "The cat sat on the mat",
                            N_("Chinese words separated by spaces"), "猫 坐 在 垫子 上")}


def describe_error(spec: str, vocabulary_above: bool = False) -> Callable[[ValueError], str]:
    """A message for an expected error of ``spec``: unknown words say which text held them,
    what the model reads and an example; anything else is the error's own text.

    Args:
        vocabulary_above: the page lists the model's vocabulary itself (Translate), instead of
            pointing to the Translate page and the sidebar's other models.
    """

    def describe(error: ValueError) -> str:
        if not isinstance(error, UnknownWordsError):
            return str(error)
        words = listed(error.words, lambda word: f"“{word}”")
        source, source_example, target, target_example = READS.get(
            spec, (N_("words of its vocabulary"), "", N_("words of its vocabulary"), ""))
        source, target = _(source), _(target)
        if error.side == "target":
            return _("The target text holds words {model} does not know: {words}. It writes "
                     "{target}, for example “{example}”. Nothing was dropped.").format(
                model=spec, words=words, target=target, example=target_example)
        if source_example:
            source = _("{what}, for example “{example}”").format(what=source,
                                                                 example=source_example)
        if vocabulary_above:
            return _("{model} does not know: {words}. Nothing was dropped: replace them with "
                     "words from the vocabulary above (it reads {source}).").format(
                model=spec, words=words, source=source)
        return _("{model} does not know: {words}. It reads {source}; the Translate page lists "
                 "its vocabulary. Nothing was dropped. For any text, choose minilm or smollm2 "
                 "in the Model box.").format(model=spec, words=words, source=source)

    return describe


@contextmanager
def explained_errors(prefix: str = "", describe: Callable[[ValueError], str] = str):
    """Show the expected errors of the block (bad input, a model that cannot load: every
    ``ValueError``) as a message on the page, then stop the page.

    Args:
        prefix: put before the message (e.g. "Could not load x: ").
        describe: turns the error into the message (default: its own text).
    """
    try:
        yield
    except ValueError as error:
        st.error(literal(prefix + describe(error)))
        st.stop()
