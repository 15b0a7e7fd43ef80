"""A synthetic English→Chinese corpus for the own translator (deterministic given a seed).

A small grammar of subjects, verbs, prepositional phrases, objects, adjectives, time adverbs,
"because" clauses and "and" compounds, with Chinese renderings segmented by spaces. Word order
changes on purpose, so that the alignment is not the diagonal:

- "on the mat" → "在 垫子 上" (the preposition splits around the noun), "the" has no Chinese word;
- a time adverb moves from the end of the English clause to after the Chinese subject
  ("The cat sat on the mat yesterday" → "猫 昨天 坐 在 垫子 上");
- "because it was hungry" → "， 因为 它 饿 了" (a comma and 了 with no English word of their own);
- a sentence may end in "." → "。".

Every pair carries its gold alignment: for each Chinese word, the index of the English word it
renders (the comma goes with "because", 了 with "was", 在 and 上 with the preposition).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from model.own.vocab import split_words

ANIMALS = {
    "cat": "猫", "dog": "狗", "mouse": "老鼠", "bird": "鸟", "rabbit": "兔子", "duck": "鸭子",
    "horse": "马", "tiger": "老虎", "monkey": "猴子", "bear": "熊", "pig": "猪", "frog": "青蛙",
    "fox": "狐狸", "sheep": "羊", "cow": "牛",
}
PLACES = {
    "mat": "垫子", "sofa": "沙发", "carpet": "地毯", "table": "桌子", "chair": "椅子", "bed": "床",
    "box": "盒子", "tree": "树", "floor": "地板", "roof": "屋顶", "grass": "草地", "rock": "石头",
    "bridge": "桥", "car": "车", "door": "门",
}
THINGS = {"ball": "球", "bone": "骨头", "apple": "苹果", "cake": "蛋糕", "hat": "帽子",
          "book": "书", "toy": "玩具"}
ADJECTIVES = {"big": "大", "small": "小", "black": "黑", "white": "白", "red": "红",
              "old": "老", "lazy": "懒"}
INTRANSITIVE = {"sat": "坐", "slept": "睡", "lay": "躺", "stood": "站", "waited": "等",
                "played": "玩"}
PREPOSITIONS = {"on": "上", "under": "下", "in": "里", "near": "旁边", "behind": "后面"}
TRANSITIVE = {"chased": "追", "saw": "看见", "ate": "吃", "found": "找到", "liked": "喜欢",
              "bit": "咬", "watched": "看着"}
STATES = {"hungry": "饿", "tired": "累", "sleepy": "困", "cold": "冷", "happy": "高兴",
          "angry": "生气", "scared": "害怕"}
TIMES = {"yesterday": "昨天", "today": "今天"}



@dataclass(frozen=True)
class Pair:
    """One sentence pair with its gold word alignment.

    Args:
        en: the English sentence (words separated by spaces).
        zh: the Chinese sentence, segmented by spaces.
        align: for each Chinese word, the index of the English word it renders.
    """

    en: str
    zh: str
    align: tuple[int, ...]


class _Builder:
    """Grows an English and a Chinese word list side by side, recording alignments."""

    def __init__(self):
        self.en: list[str] = []
        self.zh: list[tuple[str, int]] = []

    def en_word(self, word: str) -> int:
        self.en.append(word)
        return len(self.en) - 1

    def zh_word(self, word: str, source: int) -> None:
        self.zh.append((word, source))

    def noun_phrase(self, rng: random.Random, nouns: dict[str, str]) -> list[tuple[str, int]]:
        """English "the [adj] noun" now; returns its Chinese "[adj] noun" to place later."""
        self.en_word("the")
        zh = []
        if rng.random() < 0.35:
            adjective = rng.choice(list(ADJECTIVES))
            zh.append((ADJECTIVES[adjective], self.en_word(adjective)))
        noun = rng.choice(list(nouns))
        zh.append((nouns[noun], self.en_word(noun)))
        return zh

    def clause(self, rng: random.Random) -> None:
        subject = self.noun_phrase(rng, ANIMALS)
        if rng.random() < 0.55:
            verb = rng.choice(list(INTRANSITIVE))
            verb_index = self.en_word(verb)
            preposition = rng.choice(list(PREPOSITIONS))
            prep_index = self.en_word(preposition)
            place = self.noun_phrase(rng, PLACES)
            predicate = [(INTRANSITIVE[verb], verb_index), ("在", prep_index), *place,
                         (PREPOSITIONS[preposition], prep_index)]
        else:
            verb = rng.choice(list(TRANSITIVE))
            verb_index = self.en_word(verb)
            obj = self.noun_phrase(rng, ANIMALS if rng.random() < 0.6 else THINGS)
            predicate = [(TRANSITIVE[verb], verb_index), *obj]
        time = []
        if rng.random() < 0.2:
            adverb = rng.choice(list(TIMES))
            time = [(TIMES[adverb], self.en_word(adverb))]
        for word, source in (*subject, *time, *predicate):
            self.zh_word(word, source)

    def because(self, rng: random.Random) -> None:
        because = self.en_word("because")
        it = self.en_word("it")
        was = self.en_word("was")
        state = rng.choice(list(STATES))
        state_index = self.en_word(state)
        for word, source in (("，", because), ("因为", because), ("它", it),
                             (STATES[state], state_index), ("了", was)):
            self.zh_word(word, source)

    def pair(self) -> Pair:
        en = " ".join(self.en).replace(" .", ".")
        return Pair(en[0].upper() + en[1:], " ".join(w for w, _ in self.zh),
                    tuple(s for _, s in self.zh))


SEED_PAIRS = (
    Pair("The cat sat on the mat", "猫 坐 在 垫子 上", (1, 2, 3, 5, 3)),
    Pair("The cat chased the mouse because it was hungry", "猫 追 老鼠 ， 因为 它 饿 了",
         (1, 2, 4, 5, 5, 6, 8, 7)),
)


def sample_pair(rng: random.Random) -> Pair:
    """One random sentence pair of the grammar."""
    builder = _Builder()
    builder.clause(rng)
    roll = rng.random()
    if roll < 0.3:
        builder.because(rng)
    elif roll < 0.42:
        and_index = builder.en_word("and")
        builder.zh_word("，", and_index)
        builder.clause(rng)
    if rng.random() < 0.25:
        builder.zh_word("。", builder.en_word("."))
    return builder.pair()


def seed_pairs() -> list[Pair]:
    """The seed's two sentences (seed 3.4 and 4.1) with their alignments."""
    return list(SEED_PAIRS)


@dataclass(frozen=True)
class Corpus:
    """Training and held-out pairs; no held-out English sentence occurs in training."""

    train: tuple[Pair, ...]
    test: tuple[Pair, ...]
    seed: int


def make_corpus(seed: int = 0, n_train: int = 30_000, n_test: int = 500) -> Corpus:
    """Sample distinct pairs with ``seed``; the seed's sentences always land in training."""
    rng = random.Random(seed)
    seen: dict[str, Pair] = {}
    for pair in seed_pairs():
        seen[pair.en] = pair
    target = n_train + n_test
    attempts = 0
    while len(seen) < target:
        pair = sample_pair(rng)
        seen.setdefault(pair.en, pair)
        attempts += 1
        if attempts > 50 * target:
            raise RuntimeError("the grammar cannot produce that many distinct sentences")
    pairs = list(seen.values())
    fixed, rest = pairs[:len(SEED_PAIRS)], pairs[len(SEED_PAIRS):]
    rng.shuffle(rest)
    test = tuple(rest[:n_test])
    train = tuple(fixed + rest[n_test:])
    return Corpus(train=train, test=test, seed=seed)


def vocabularies(pairs) -> tuple[list[str], list[str]]:
    """Every English and Chinese word of the grammar (fixed order, independent of sampling)."""
    en = ["the", "because", "it", "was", "and", ".", *ANIMALS, *PLACES, *THINGS, *ADJECTIVES,
          *INTRANSITIVE, *PREPOSITIONS, *TRANSITIVE, *STATES, *TIMES]
    zh = ["在", "，", "因为", "它", "了", "。", *ANIMALS.values(), *PLACES.values(),
          *THINGS.values(), *ADJECTIVES.values(), *INTRANSITIVE.values(), *PREPOSITIONS.values(),
          *TRANSITIVE.values(), *STATES.values(), *TIMES.values()]
    words_en = {w.lower() for p in pairs for w in split_words(p.en)}
    words_zh = {w for p in pairs for w in split_words(p.zh)}
    if not words_en <= set(en) or not words_zh <= set(zh):
        raise AssertionError("the corpus uses words outside the grammar's vocabulary")
    return list(dict.fromkeys(en)), list(dict.fromkeys(zh))
