"""The errors a user can cause and the app explains (all ValueErrors, with a message that says
what to do)."""

from __future__ import annotations

from collections.abc import Sequence

from i18n import _


class ModelLoadError(ValueError):
    """A model could not be loaded; the message says why and what to do."""


class CaptureError(ValueError):
    """A model's attention could not be captured exactly for this input (a trace that would be
    wrong is refused instead); the message says what did not match."""


class UnknownWordsError(ValueError):
    """Text holds words outside a model's fixed vocabulary.

    Attributes:
        words: every unknown word, in order, without repeats.
        side: ``"source"`` or ``"target"`` when the model knows which text held them (an
            encoder-decoder reads two vocabularies), else None.
    """

    def __init__(self, words: Sequence[str], side: str | None = None):
        self.words = list(dict.fromkeys(words))
        self.side = side
        shown = listed(self.words, repr)
        if side == "source":
            message = _("not in the source vocabulary: {words}")
        elif side == "target":
            message = _("not in the target vocabulary: {words}")
        elif side:
            message = _("not in the {side} vocabulary: {words}")
        else:
            message = _("not in the vocabulary: {words}")
        super().__init__(message.format(side=side, words=shown))


def listed(items: Sequence[str], show=str, most: int = 12) -> str:
    """``items`` joined with commas, the first ``most`` of them and how many more: a message
    stays one short line however many there are."""
    shown = ", ".join(show(item[:40]) for item in items[:most])
    if len(items) <= most:
        return shown
    return _("{shown} and {count:,} more").format(shown=shown, count=len(items) - most)
