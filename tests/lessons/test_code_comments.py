"""§4.3 by hand shows the lines of the project's own attention() beside each step: their code
exactly as the file has it, their comments in the page's language."""

from __future__ import annotations

import inspect
import io
import re
import tokenize

import i18n
from model.lessons import hand
from model.own.transformer import attention
from tests.helpers import ROOT, app_test

CJK = re.compile(r"[\u4e00-\u9fff]")


def code_only(code: str) -> list[tuple[int, str]]:
    """The tokens of ``code`` that are not comments, as ``(type, text)``."""
    return [(token.type, token.string)
            for token in tokenize.generate_tokens(io.StringIO(code).readline)
            if token.type != tokenize.COMMENT]


def test_every_comment_of_attention_has_its_translation():
    """A comment changed in model/own/transformer.py must be changed in CODE_COMMENTS too (and
    translated), or the lesson would show it in English."""
    found = hand.comments(inspect.getsource(attention))
    assert found and set(found) <= set(hand.CODE_COMMENTS), set(found) - set(hand.CODE_COMMENTS)
    shown = {c for block in hand.attention_lines().values() for c in hand.comments(block.code)}
    assert shown == set(hand.CODE_COMMENTS)  # every listed comment is one the lesson shows


def test_comments_are_translated_and_the_code_is_left_as_it_is():
    for marker, block in hand.attention_lines().items():
        with i18n.use("en"):
            assert hand.translated_comments(block.code) == block.code
        with i18n.use("zh"):
            chinese = hand.translated_comments(block.code)
        assert code_only(chinese) == code_only(block.code), marker
        assert [len(line) - len(line.lstrip()) for line in chinese.splitlines()] == \
            [len(line) - len(line.lstrip()) for line in block.code.splitlines()]
        comments = hand.comments(chinese)
        assert comments and all(CJK.search(c) for c in comments), comments
        if marker in hand.MARKERS:
            assert comments[0].startswith(marker)  # the steps point at their markers


def test_the_expected_chinese_comments():
    with i18n.use("zh"):
        shown = hand.translated_comments('d_head = Q.size(-1)  # the seed\'s d_k\n'
                                         '# ③ softmax: each row becomes weights summing to 1\n'
                                         'weights = F.softmax(scores, dim=-1)  # unknown')
    assert shown == ("d_head = Q.size(-1)  # 课文中的 d_k\n"
                     "# ③ softmax：每一行变成总和为 1 的权重\n"
                     "weights = F.softmax(scores, dim=-1)  # unknown")  # not ours: as it is
    assert hand.translated_comments("def broken(:\n  # x") == "def broken(:\n  # x"


def test_the_hand_page_in_chinese_shows_the_files_code_with_chinese_comments():
    with i18n.use("zh"):
        at = app_test("lesson_hand", lang="zh", hand_step=10)
    assert not at.exception, at.exception
    source = (ROOT / "model/own/transformer.py").read_text(encoding="utf-8")
    shown = [element.value for element in at.main.code]
    assert len(shown) == 10  # one block of code beside each step
    for code in shown:
        for line in code.splitlines():
            statement = line.split("#")[0].strip()
            assert not statement or statement in source, line  # the code is the file's
        comments = hand.comments(code)
        assert comments and all(CJK.search(c) for c in comments), code
        assert not any(c in hand.CODE_COMMENTS for c in comments)  # none left in English
    assert "F.softmax(scores, dim=-1)" in "\n".join(shown)
