"""What a tokenizer lost or split of the input, found in a trace (numpy only).

- unknown tokens: ``[UNK]`` where the tokenizer had no token for some text
  (:attr:`~model.trace.AttentionTrace.unknown`);
- byte pieces: a character spread over several tokens, labelled ``猫[1/3]``, ``猫[2/3]``, …
  (the label format of :mod:`model.hf.labels`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from model.trace import AttentionTrace

PIECE = re.compile(r"^(.*)\[(\d+)/(\d+)\]$")
EXAMPLES = 8


@dataclass(frozen=True)
class TokenNote:
    """One thing the reader should know about the tokens of a trace.

    Attributes:
        kind: ``unknown`` (tokens the tokenizer could not represent) or ``pieces``
            (characters split over several tokens).
        count: how many tokens (unknown) or characters (pieces) it concerns.
        total: tokens of the input axes.
        examples: up to :data:`EXAMPLES` of the texts concerned, in order, without repeats.
        label: how the first of them is labelled on the charts (``狗[1/3]``; unknown: ``""``).
    """

    kind: str
    count: int
    total: int
    examples: list[str]
    label: str = ""


def token_notes(trace: AttentionTrace) -> list[TokenNote]:
    """Unknown tokens and split characters of the trace's input axes (the source of an
    encoder-decoder, the tokens of a single-stack model)."""
    axis = "tokens" if trace.family.single_stack else "source"
    tokens = [str(t) for t in trace.axis_tokens(axis)]
    notes = []
    unknown = trace.unknown.get(axis, {})
    if unknown:
        texts = list(dict.fromkeys(t for t in unknown.values() if t.strip()))
        notes.append(TokenNote("unknown", len(unknown), len(tokens), texts[:EXAMPLES]))
    firsts = [(m.group(1).strip() or m.group(1), m.group(0)) for m in map(PIECE.match, tokens)
              if m and m.group(2) == "1"]
    if firsts:
        chars = list(dict.fromkeys(char for char, _ in firsts))
        notes.append(TokenNote("pieces", len(firsts), len(tokens), chars[:EXAMPLES],
                               label=firsts[0][1].strip()))
    return notes
