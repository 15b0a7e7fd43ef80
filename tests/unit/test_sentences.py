"""Sentences read from the files people bring: formats, columns, limits and one clear message
for each way a file can be wrong."""

from __future__ import annotations

import json

import pytest

from model.corpus.sentences import (
    SentenceLimits,
    columns,
    decode_text,
    default_column,
    read_sentences,
    split_lines,
)


def test_a_text_file_is_one_sentence_per_non_blank_line():
    data = "The cat sat.\n\n  A dog slept.  \r\n猫 坐 在 垫子 上\n".encode()
    assert read_sentences("s.txt", data).sentences == ["The cat sat.", "A dog slept.",
                                                       "猫 坐 在 垫子 上"]
    assert split_lines("a\n\n b \n") == ["a", "b"]


def test_a_csv_column_is_read_with_quoted_commas_and_newlines():
    data = b'id,sentence,label\n1,"The cat sat, then slept.",x\n2,"Two\nlines",y\n3,,z\n'
    assert columns("d.csv", data) == ["id", "sentence", "label"]
    assert read_sentences("d.csv", data).sentences == ["The cat sat, then slept.", "Two\nlines"]
    assert read_sentences("d.csv", data, "label").sentences == ["x", "y", "z"]


def test_a_tsv_and_a_jsonl_field_are_read():
    assert read_sentences("d.tsv", b"text\tn\nA cat.\t1\nA dog.\t2\n").sentences == [
        "A cat.", "A dog."]
    lines = [json.dumps({"en": "A cat.", "zh": "一只猫", "n": 1}), "",
             json.dumps({"en": "A dog.", "zh": "一只狗"})]
    data = "\n".join(lines).encode()
    assert columns("d.jsonl", data) == ["en", "zh"]
    assert read_sentences("d.jsonl", data, "zh").sentences == ["一只猫", "一只狗"]
    assert default_column(["id", "Text", "x"]) == "Text"


@pytest.mark.parametrize("name, data, column, message", [
    ("b.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", None, "b.txt is a binary file"),
    ("l.txt", "café au lait".encode("latin-1") + b"\xff\xfe", None,
     "neither UTF-8 nor GB18030/GBK"),
    ("e.txt", b"", None, "e.txt holds no sentences"),
    ("e.txt", b"\n  \n\t\n", None, "e.txt holds no sentences"),
    ("e.csv", b"", None, "e.csv is empty"),
    ("c.csv", b"id,text\n1,a\n", "sentence", "c.csv has no column 'sentence'; it has 'id', "
                                             "'text'"),
    ("j.jsonl", b'{"text": "a"}\nnot json\n', "text", "j.jsonl, line 2 is not JSON"),
    ("j.jsonl", b'["a", "b"]\n', None, "line 1 is not a JSON object"),
    ("x.pdf", b"%PDF", None, "files ending in .txt, .md, .csv, .tsv, .jsonl"),
])
def test_a_bad_file_gives_one_clear_message(name, data, column, message):
    with pytest.raises(ValueError) as error:
        read_sentences(name, data, column)
    assert message in str(error.value)


def test_limits_name_the_file_the_line_and_the_limit():
    limits = SentenceLimits(max_bytes=1000, max_sentences=3, max_chars=20)
    with pytest.raises(ValueError, match=r"big.txt is 0.0 MB; this server reads files of at most"):
        read_sentences("big.txt", b"a\n" * 600, limits=limits)
    with pytest.raises(ValueError, match="holds more than 3 sentences"):
        read_sentences("many.txt", b"a\nb\nc\nd\n", limits=limits)
    with pytest.raises(ValueError, match="long.txt, line 2: 25 characters; a sentence may have "
                                         "at most 20"):
        read_sentences("long.txt", b"short\n" + b"x" * 25 + b"\n", limits=limits)
    assert read_sentences("ok.txt", b"a\nb\nc\n", limits=limits).sentences == ["a", "b", "c"]


def test_gbk_text_from_chinese_windows_is_read():
    assert decode_text("猫坐在垫子上。".encode("gbk")) == ("猫坐在垫子上。", "GB18030")


def test_rows_without_text_are_counted_and_odd_files_explained():
    read = read_sentences("d.csv", b"id,text\n1,a cat\n2\n3,a dog\n")
    assert read.sentences == ["a cat", "a dog"] and read.dropped == 1
    data = b'{"text": "a cat"}\n{"text": 3}\n{"text": null}\n'
    assert read_sentences("d.jsonl", data).dropped == 2
    # JSON may hold a line separator unescaped: it is not the end of a line
    assert read_sentences("d.jsonl", '{"text": "a\u2028b"}\n'.encode()).sentences == [
        "a\u2028b"]
    # a TSV keeps quotes as text
    assert read_sentences("d.tsv", b'text\n"quoted" word\nnext\n').sentences == [
        '"quoted" word', "next"]
    with pytest.raises(ValueError, match="line 2 cannot be read as CSV"):
        read_sentences("q.csv", b'text\n"' + b"x" * 200_000 + b"\n")
    with pytest.raises(ValueError, match="line 1 is not JSON: nested too deeply"):
        read_sentences("n.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n")


@pytest.mark.parametrize("data, line", [
    (b'text\n"an open quote\nb\nc\n', 2),
    (b'id,text\n1,a\n2,"never closed, ""quoted"" inside\nnext\nlast', 3),
    (b'text\n"Two\nlines",fine\n"open\r\nb\r\n', 4),
])
def test_an_unclosed_quote_is_refused_at_the_line_it_opens(data, line):
    with pytest.raises(ValueError) as error:
        read_sentences("q.csv", data)
    assert str(error.value).startswith(f"q.csv, line {line}: a quote opens a cell here and is "
                                       "never closed")
    # a closed quote, doubled quotes and a last line without a newline are read as before
    assert read_sentences("ok.csv", b'text\n"a ""b"" c"\n"d\ne"\nf').sentences == [
        'a "b" c', "d\ne", "f"]


def test_a_file_of_too_many_columns_is_refused_before_its_rows_are_read():
    from model.corpus.sentences import MAX_COLUMNS

    assert len(columns("ok.csv", b",".join([b"c"] * MAX_COLUMNS) + b"\nx\n")) == MAX_COLUMNS
    wide = b"a," * 999_000 + b"\n" + b"x\n" * 10 + b'"an open quote\n'
    for name in ("w.csv", "w.tsv"):
        data = wide.replace(b",", b"\t") if name.endswith(".tsv") else wide
        for read in (columns, read_sentences):
            with pytest.raises(ValueError, match=f"{name} has more than 1,000 columns; this "
                                                 "server reads files of at most 1,000"):
                read(name, data)  # the header is refused, not the open quote further down
    fields = json.dumps({f"field{i}": "text" for i in range(MAX_COLUMNS + 1)}).encode()
    with pytest.raises(ValueError, match="w.jsonl, line 1 has more than 1,000 fields"):
        columns("w.jsonl", fields)
