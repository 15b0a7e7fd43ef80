"""The errors a user can cause and the app explains (all ValueErrors, with a message that says
what to do)."""

from __future__ import annotations

from collections.abc import Sequence


class ModelLoadError(ValueError):
    """A model could not be loaded; the message says why and what to do."""


class UnknownWordsError(ValueError):
    """Text holds words outside a model's fixed vocabulary; ``words`` lists every one of them,
    in order, without repeats."""

    def __init__(self, words: Sequence[str]):
        self.words = list(dict.fromkeys(words))
        super().__init__(
            "not in the vocabulary: " + ", ".join(repr(w) for w in self.words))
