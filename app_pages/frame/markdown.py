"""User text shown in Streamlit's markdown as it is: never a link, an image or formatting."""

from __future__ import annotations

import re

MARKDOWN_SPECIAL = re.compile(r"[!-/:-@\[-`{-~]")  # every ASCII punctuation mark
# What GitHub-flavoured markdown turns into a link even when every mark is escaped.
AUTOLINKS = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"  # invisible, and no link runs across it


def literal(text: str) -> str:
    """``text`` shown as it is in Streamlit's markdown: every ASCII punctuation mark written as
    a character reference (``&#58;``), and an invisible word joiner inside ``://``, ``www.``
    and after ``@``, so that a user's file name, model path or words never become links,
    images or formatting. (Escapes alone are not enough: ``https\\://x`` still becomes a
    link.)"""
    text = AUTOLINKS.sub(WORD_JOINER, str(text))
    return MARKDOWN_SPECIAL.sub(lambda match: f"&#{ord(match.group())};", text)


__all__ = ["literal"]
