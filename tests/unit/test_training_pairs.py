"""The synthetic English→Chinese corpus: deterministic, held-out split, real reordering."""

from __future__ import annotations

from model.own.training_pairs import (
    ADJECTIVES,
    ANIMALS,
    INTRANSITIVE,
    PLACES,
    PREPOSITIONS,
    STATES,
    THINGS,
    TIMES,
    TRANSITIVE,
    make_corpus,
    seed_pairs,
    vocabularies,
)
from model.own.vocab import split_words


def test_corpus_is_deterministic_given_its_seed():
    a, b = make_corpus(3, n_train=500, n_test=50), make_corpus(3, n_train=500, n_test=50)
    assert a == b
    assert make_corpus(4, n_train=500, n_test=50).train != a.train


def test_seed_sentences_are_in_training_and_held_out_sentences_never_are():
    corpus = make_corpus(0, n_train=2000, n_test=200)
    train = {p.en for p in corpus.train}
    assert {"The cat sat on the mat", "The cat chased the mouse because it was hungry"} <= train
    assert not train & {p.en for p in corpus.test}
    assert len(corpus.test) == 200


def test_seed_pairs_are_the_seeds_translations_with_word_alignments():
    mat, chased = seed_pairs()
    assert (mat.en, mat.zh) == ("The cat sat on the mat", "猫 坐 在 垫子 上")
    assert chased.zh == "猫 追 老鼠 ， 因为 它 饿 了"
    en = split_words(mat.en)
    assert [en[i] for i in mat.align] == ["cat", "sat", "on", "mat", "on"]


# What each English word may be rendered as: every word list of the grammar, the two-part
# prepositions (在 X 上), and the function words of "because" clauses, "and" and the full stop.
RENDERINGS = {
    **{en: {zh} for words in (ANIMALS, PLACES, THINGS, ADJECTIVES, INTRANSITIVE, TRANSITIVE,
                              STATES, TIMES) for en, zh in words.items()},
    **{en: {"在", zh} for en, zh in PREPOSITIONS.items()},
    "because": {"，", "因为"}, "it": {"它"}, "was": {"了"}, "and": {"，"}, ".": {"。"},
}


def test_every_alignment_points_at_the_english_word_it_renders():
    corpus = make_corpus(0, n_train=3000, n_test=10)
    en_words = set()
    for pair in corpus.train:
        en, zh = split_words(pair.en), split_words(pair.zh)
        assert len(zh) == len(pair.align)
        for zh_word, source in zip(zh, pair.align):
            word = en[source].lower()
            assert word in RENDERINGS, (word, pair)
            assert zh_word in RENDERINGS[word], pair
        en_words.update(w.lower() for w in en)
    # the lexicon covers every word the corpus uses ("the" alone has no Chinese word)
    assert en_words - set(RENDERINGS) == {"the"}


def test_alignment_is_not_the_diagonal():
    corpus = make_corpus(0, n_train=3000, n_test=10)
    crossing = sum(any(b < a for a, b in zip(p.align, p.align[1:])) for p in corpus.train)
    unaligned_the = all("the" not in [split_words(p.en)[i].lower() for i in p.align]
                        for p in corpus.train)
    assert crossing > 0.5 * len(corpus.train)  # 在 X 上, fronted time adverbs, 了 after the state
    assert unaligned_the  # "the" has no Chinese word


def test_vocabularies_cover_the_corpus():
    corpus = make_corpus(0, n_train=3000, n_test=100)
    en, zh = vocabularies(corpus.train + corpus.test)
    assert "mat" in en and "垫子" in zh and "。" in zh
