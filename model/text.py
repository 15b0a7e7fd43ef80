"""Checks on the text a model is asked to trace, shared by both adapters.

Text can arrive from a browser, a JSON file or a command line holding a lone surrogate
(``"\\ud800"``): a code point that is no character and that no tokenizer can encode. It is
refused here, with the position, before it reaches a tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from i18n import _

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: object, what: str | None = None) -> str:
    """``text`` unchanged when it is a string a tokenizer can read.

    Args:
        text: the text to check.
        what: how the message names it, in the current language (default: "the text").

    Returns:
        ``text``.

    Raises:
        TypeError: ``text`` is not a string.
        ValueError: ``text`` holds a lone surrogate (the message gives its position).
    """
    if what is None:
        what = _("the text")
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string, not {type(text).__name__}")
    found = _SURROGATE.search(text)
    if found is not None:
        raise ValueError(
            _("{what} holds invalid Unicode (a lone surrogate U+{code:04X} at character "
              "{position}, counting from 0): remove it, or save the text as UTF-8").format(
                what=what, code=ord(found.group()), position=found.start()))
    return text


def check_texts(texts: Sequence[str], targets: Sequence[str] | None = None
                ) -> tuple[list[str], list[str] | None]:
    """A batch of texts (and, when given, one target each) checked by :func:`check_text`.

    Returns:
        ``(texts, targets)`` as lists.

    Raises:
        TypeError: ``texts`` or ``targets`` is one string rather than a list of them, or holds
            something else than strings.
        ValueError: no texts, a target count that differs from the text count, or a text
            holding invalid Unicode.
    """
    for what, values in (("texts", texts), ("targets", targets)):
        if isinstance(values, (str, bytes)):
            raise TypeError(f"{what} must be a list of strings, not one {type(values).__name__}")
    texts = list(texts)
    if not texts:
        raise ValueError(_("there is no text to trace"))
    single = len(texts) == 1
    for i, text in enumerate(texts):
        check_text(text, _("the text") if single else _("text {index}").format(index=i))
    if targets is None:
        return texts, None
    targets = list(targets)
    if len(targets) != len(texts):
        raise ValueError(_("{targets} targets for {texts} texts: give one each").format(
            targets=len(targets), texts=len(texts)))
    for i, target in enumerate(targets):
        check_text(target, _("the target") if single else _("target {index}").format(index=i))
    return texts, targets
