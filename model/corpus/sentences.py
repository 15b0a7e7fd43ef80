"""Sentences read from files a person brings: plain text (one sentence per line), CSV or TSV
(a chosen column) and JSON Lines (a chosen field), with limits and one clear message for each
way a file can be wrong.

Used by the app's Corpus page and by ``python -m model corpus``; no torch here.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import PurePath

from i18n import _

TEXT_FORMATS = (".txt", ".md")
TABLE_FORMATS = (".csv", ".tsv")
JSON_FORMATS = (".jsonl",)
FORMATS = (*TEXT_FORMATS, *TABLE_FORMATS, *JSON_FORMATS)
# Column or field names tried first when none is chosen, in this order.
USUAL_COLUMNS = ("sentence", "text", "sentences", "content", "input", "source")
# The most columns (CSV, TSV) or text fields (JSON Lines) a file may offer: each is a choice
# in a list, and a sentence file needs a few.
MAX_COLUMNS = 1000


@dataclass(frozen=True)
class SentenceLimits:
    """What one request may bring.

    Attributes:
        max_bytes: bytes of one file.
        max_sentences: sentences of all files together.
        max_chars: characters of one sentence.
    """

    max_bytes: int = 2 << 20
    max_sentences: int = 1000
    max_chars: int = 1000


@dataclass(frozen=True)
class SentenceFile:
    """The sentences of one file, and how many rows held no text in the chosen column or
    field (a row too short, a number or null): they are left out and counted."""

    sentences: list[str]
    dropped: int = 0


UNLIMITED = SentenceLimits(max_bytes=1 << 62, max_sentences=1 << 62, max_chars=1 << 62)


def decode_text(data: bytes, name: str | None = None) -> tuple[str, str]:
    """Text of a file and the encoding it was read in: UTF-8 (a byte-order mark is dropped),
    else GB18030 (which covers GBK and GB2312, common for Chinese text saved on Windows).

    Raises:
        ValueError: the file holds NUL bytes (a binary file), or is neither encoding.
    """
    name = name or _("the file")
    if b"\x00" in data[:65536]:
        raise ValueError(_("{name} is a binary file, not text: upload a .txt, .csv, .tsv or "
                           ".jsonl file saved as UTF-8").format(name=name))
    try:
        return data.decode("utf-8-sig"), "UTF-8"
    except UnicodeDecodeError as error:
        position = error.start
    try:
        return data.decode("gb18030"), "GB18030"
    except UnicodeDecodeError:
        raise ValueError(_("{name} is neither UTF-8 nor GB18030/GBK text (byte {position} "
                           "cannot be read); save it as UTF-8 and upload it again").format(
            name=name, position=position)) from None


def file_format(name: str) -> str:
    """The format of a file by its name's ending: ``.txt``, ``.csv``, ...

    Raises:
        ValueError: not a format read here.
    """
    suffix = PurePath(name).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(_("{name}: files ending in {formats} are read here").format(
            name=name, formats=", ".join(FORMATS)))
    return suffix


def columns(name: str, data: bytes) -> list[str]:
    """The columns (CSV, TSV) or fields (JSON Lines) a file offers, in order; ``[]`` for plain
    text.

    Raises:
        ValueError: the file cannot be read (see :func:`read_sentences`).
    """
    fmt = file_format(name)
    return [] if fmt in TEXT_FORMATS else _columns(name, fmt, _parsed(name, fmt, data)[1])


def _parsed(name: str, fmt: str, data: bytes) -> tuple[str, list]:
    """The file's text and, for CSV/TSV, its ``(line, row)`` rows (the header first), for
    JSON Lines its ``(line, object)`` records; read once."""
    text, _encoding = decode_text(data, name)
    if fmt in TEXT_FORMATS:
        return text, []
    return text, _table(text, fmt, name) if fmt in TABLE_FORMATS else list(_records(text, name))


def _columns(name: str, fmt: str, parsed: list) -> list[str]:
    if fmt in TABLE_FORMATS:
        if not parsed or not parsed[0][1]:
            raise ValueError(_("{name} is empty").format(name=name))
        return [h.strip() for h in parsed[0][1]]
    found: dict[str, None] = {}
    for _number, record in parsed:
        found.update(dict.fromkeys(k for k, v in record.items() if isinstance(v, str)))
        if len(found) > MAX_COLUMNS:
            raise ValueError(_too_many_columns(name, _("fields"), line=_number))
    if not found:
        raise ValueError(_("{name} has no field holding text").format(name=name))
    return list(found)


def default_column(found: list[str]) -> str | None:
    """The column to read when none is chosen: a usual name, else the first."""
    lowered = {c.lower(): c for c in found}
    for usual in USUAL_COLUMNS:
        if usual in lowered:
            return lowered[usual]
    return found[0] if found else None


def read_sentences(name: str, data: bytes, column: str | None = None,
                   limits: SentenceLimits = SentenceLimits()) -> SentenceFile:
    """The sentences of one file: each non-blank line of plain text, each non-blank cell of
    ``column`` (CSV, TSV, JSON Lines; default :func:`default_column`), spaces around them
    removed; rows without text there are counted in ``dropped``.

    Raises:
        ValueError: the file is too large, binary, not UTF-8 or GB18030 text, empty, has no
            such column or more than :data:`MAX_COLUMNS`, a quote it never closes, more than
            ``limits.max_sentences`` sentences or one longer than ``limits.max_chars``
            characters. The message names the file and the line.
    """
    fmt = file_format(name)
    if len(data) > limits.max_bytes:
        raise ValueError(_("{name} is {size:.1f} MB; this server reads files of at most "
                           "{most:.1f} MB").format(name=name, size=len(data) / 2**20,
                                                   most=limits.max_bytes / 2**20))
    text, parsed = _parsed(name, fmt, data)
    dropped = 0
    if fmt in TEXT_FORMATS:
        numbered = list(enumerate(text.splitlines(), start=1))
    else:
        found = _columns(name, fmt, parsed)
        column = default_column(found) if column is None else column
        if column not in found:
            raise ValueError(_("{name} has no column {column}; it has {found}").format(
                name=name, column=repr(column), found=", ".join(map(repr, found))))
        if fmt in TABLE_FORMATS:
            index = found.index(column)  # rows after the header; None where a row is short
            numbered = [(line, row[index] if len(row) > index else None)
                        for line, row in parsed[1:] if row]
        else:
            numbered = [(number, record.get(column)) for number, record in parsed]
        dropped = sum(not isinstance(v, str) for _n, v in numbered)
        numbered = [(n, v) for n, v in numbered if isinstance(v, str)]
    sentences = []
    for number, line in numbered:
        line = line.strip()
        if not line:
            continue
        if len(line) > limits.max_chars:
            raise ValueError(_("{name}, line {line}: {count:,} characters; a sentence may have "
                               "at most {most:,}").format(name=name, line=number,
                                                          count=len(line),
                                                          most=limits.max_chars))
        sentences.append(line)
        if len(sentences) > limits.max_sentences:
            raise ValueError(_("{name} holds more than {most:,} sentences; this server runs at "
                               "most {most:,} at once: split the file").format(
                name=name, most=limits.max_sentences))
    if not sentences:
        raise ValueError(_("{name} holds no sentences").format(name=name))
    return SentenceFile(sentences, dropped)


def split_lines(text: str) -> list[str]:
    """Pasted text as one sentence per non-blank line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def _too_many_columns(name: str, what: str, line: int | None = None) -> str:
    where = name if line is None else _("{name}, line {line}").format(name=name, line=line)
    return _("{where} has more than {most:,} {what}; this server reads files of at most "
             "{most:,}: keep the column of sentences and a few others").format(
        where=where, most=MAX_COLUMNS, what=what)


def _table(text: str, fmt: str, name: str) -> list[tuple[int, list[str]]]:
    """``(line, row)`` of every row of CSV (quotes as Excel writes them) or TSV (tabs only,
    quotes kept as text).

    Raises:
        ValueError: a row cannot be read, the header has more than :data:`MAX_COLUMNS`
            columns (said before any other row is read), or a quote opens a cell and is never
            closed (which would make the rest of the file one cell); the message names the line.
    """
    if text and not text.endswith(("\n", "\r")):
        text += "\n"  # every row ends before the input does, unless a quoted cell is open
    lines = io.StringIO(text)
    ended = []  # set when the reader has read the last line

    def read_lines():
        yield from lines
        ended.append(True)

    if fmt == ".tsv":
        reader = csv.reader(read_lines(), delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(read_lines())
    rows = []
    try:
        for row in reader:
            if ended:  # a row completed by the end of the file: its last cell's quote is open
                raise ValueError(_("{name}, line {line}: a quote opens a cell here and is "
                                   "never closed, so the rest of the file would be one "
                                   "cell; close it with \" or remove it").format(
                    name=name, line=_open_quote_line(text, row, rows)))
            rows.append((reader.line_num, row))
            if len(rows) == 1 and len(row) > MAX_COLUMNS:
                raise ValueError(_too_many_columns(name, _("columns")))
    except csv.Error as error:
        raise ValueError(_("{name}, line {line} cannot be read as {format}: {error}").format(
            name=name, line=reader.line_num, format=fmt.removeprefix(".").upper(),
            error=error)) from None
    return rows


def _open_quote_line(text: str, row: list[str], rows: list[tuple[int, list[str]]]) -> int:
    """The line where the unclosed quoted cell that ends ``row`` (the file's last) opens: that
    cell runs from its quote to the end of ``text``, its quotes written doubled."""
    raw = '"' + row[-1].replace('"', '""') if row else ""
    if raw and text.endswith(raw):
        return text.count("\n", 0, len(text) - len(raw)) + 1
    return (rows[-1][0] if rows else 0) + 1  # the line the row starts on


def _records(text: str, name: str):
    """``(line, object)`` of each non-blank line of JSON Lines (lines end at ``\\n`` only:
    JSON may hold U+2028 and other line separators unescaped)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else _(
                "nested too deeply")
            raise ValueError(_("{name}, line {line} is not JSON: {error}").format(
                name=name, line=number, error=reason)) from None
        if not isinstance(record, dict):
            raise ValueError(_("{name}, line {line} is not a JSON object with fields").format(
                name=name, line=number))
        yield number, record
