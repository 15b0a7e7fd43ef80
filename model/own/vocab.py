"""A word-level tokenizer for the own models: words and punctuation, four special tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from model.errors import UnknownWordsError

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
_WORD = re.compile(r"\w+|[^\w\s]")


def split_words(text: str) -> list[str]:
    """Split text into words and punctuation marks (CJK words must be separated by spaces)."""
    return _WORD.findall(text)


class WordVocab:
    """Ids for words, compared case-insensitively; ids 0-3 are ``<pad> <bos> <eos> <unk>``.

    Args:
        words: the vocabulary's words, in id order after the specials (duplicates ignored).
    """

    def __init__(self, words: Iterable[str] = ()):
        self.itos: list[str] = list(SPECIALS)
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(SPECIALS)}
        for word in words:
            key = word.lower()
            if key not in self.stoi:
                self.stoi[key] = len(self.itos)
                self.itos.append(key)

    @classmethod
    def from_text(cls, *texts: str) -> WordVocab:
        """A vocabulary of the words of ``texts``, ids in order of first appearance."""
        return cls(w for text in texts for w in split_words(text))

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word.lower() in self.stoi

    @property
    def pad_id(self) -> int:
        return self.stoi[PAD]

    @property
    def bos_id(self) -> int:
        return self.stoi[BOS]

    @property
    def eos_id(self) -> int:
        return self.stoi[EOS]

    def words(self) -> list[str]:
        """The vocabulary's words without the specials, sorted."""
        return sorted(w for w in self.itos if w not in SPECIALS)

    def unknown(self, words: Iterable[str]) -> list[str]:
        """The words of ``words`` that are not in the vocabulary, in order, without repeats."""
        return list(dict.fromkeys(w for w in words if w not in self))

    def encode(self, words: Sequence[str]) -> list[int]:
        """Ids of ``words``; raises :class:`UnknownWordsError` naming every unknown word."""
        missing = self.unknown(words)
        if missing:
            raise UnknownWordsError(missing)
        return [self.stoi[w.lower()] for w in words]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Words of ``ids``."""
        return [self.itos[i] for i in ids]
