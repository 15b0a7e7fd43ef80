"""Readable token labels for Hugging Face tokenizers.

Byte-level BPE (GPT-2, Llama 3, SmolLM) spells bytes as printable stand-ins (``Ġ`` for a space)
and may split one character over several tokens; SentencePiece marks word starts with ``▁`` and
falls back to ``<0xE7>`` byte tokens. Labels here are real text: spaces are spaces, CJK and
emoji are characters. A character split over n tokens is shown on each of them with its part,
``猫[1/3]``, ``猫[2/3]``, ``猫[3/3]``. Special tokens keep their text and are listed separately.
"""

from __future__ import annotations

import codecs
import json
import re
import weakref
from collections.abc import Sequence

from transformers.convert_slow_tokenizer import bytes_to_unicode

_BYTE_DECODER = {c: b for b, c in bytes_to_unicode().items()}
_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_VISIBLE = str.maketrans({"\n": "↵", "\t": "⇥", "\r": "␍"})


_KINDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _decoder_kinds(tokenizer) -> frozenset[str]:
    """Decoder types of a fast tokenizer's pipeline (``ByteLevel``, ``Metaspace``, ...), read
    once per tokenizer: serialising the whole tokenizer to find them takes ~9 ms, which every
    trace of a corpus paid."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return frozenset()
    try:
        return _KINDS[backend]
    except (KeyError, TypeError):
        pass
    kinds = _read_decoder_kinds(backend)
    try:
        _KINDS[backend] = kinds
    except TypeError:  # not weakly referable: read it each time
        pass
    return kinds


def _read_decoder_kinds(backend) -> frozenset[str]:
    kinds: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if "type" in node:
                kinds.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(backend.to_str()).get("decoder"))
    return frozenset(kinds)


def _token_bytes(raw: str, byte_level: bool) -> bytes:
    if byte_level and all(c in _BYTE_DECODER for c in raw):
        return bytes(_BYTE_DECODER[c] for c in raw)
    match = _BYTE_FALLBACK.fullmatch(raw)
    if match:
        return bytes([int(match.group(1), 16)])
    return raw.replace("▁", " ").encode("utf-8")


def _labels_from_bytes(pieces: Sequence[bytes]) -> list[str]:
    """Decode the concatenated bytes; give each token the characters its bytes belong to."""
    owner = [i for i, piece in enumerate(pieces) for _ in piece]
    data = b"".join(pieces)
    labels = [""] * len(pieces)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    start = 0
    for end in range(1, len(data) + 1):
        text = decoder.decode(data[end - 1:end])
        if not text:
            continue
        owners = list(dict.fromkeys(owner[start:end]))
        for part, i in enumerate(owners, 1):
            labels[i] += text if len(owners) == 1 else f"{text}[{part}/{len(owners)}]"
        start = end
    return labels


def display_tokens(tokenizer, ids: Sequence[int]) -> tuple[list[str], list[int]]:
    """Readable labels of ``ids`` and the positions of special tokens.

    Args:
        tokenizer: a Hugging Face tokenizer.
        ids: the input ids, special tokens included.

    Returns:
        ``(labels, special_positions)``.
    """
    ids = [int(i) for i in ids]
    raw = tokenizer.convert_ids_to_tokens(ids)
    special_ids = set(tokenizer.all_special_ids)
    special = [i for i, token_id in enumerate(ids) if token_id in special_ids]
    kinds = _decoder_kinds(tokenizer)
    byte_level = "ByteLevel" in kinds
    if byte_level or "Metaspace" in kinds or "ByteFallback" in kinds:
        labels = [""] * len(ids)
        run: list[int] = []  # consecutive non-special tokens decoded together

        def flush():
            if run:
                decoded = _labels_from_bytes([_token_bytes(raw[i], byte_level) for i in run])
                for i, label in zip(run, decoded):
                    labels[i] = label
                run.clear()

        for i, token in enumerate(raw):
            if i in special:
                flush()
                labels[i] = token
            else:
                run.append(i)
        flush()
    else:
        labels = [str(t) for t in raw]
    return [label.translate(_VISIBLE) for label in labels], special
