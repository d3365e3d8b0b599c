"""Plain-text shards (plain or gzip): one record per line, or per paragraph (lines up to a blank line), as the
user chooses (`TEXT_UNITS`; plain text has no record boundary of its own, so it is never guessed).

A record is one column, `text`: its lines as they are in the file, without the line break that ends the record
(a paragraph keeps the breaks between its lines). Blank lines (nothing but whitespace) are no records, as in JSONL:
rows count records and `__line__` is the physical line where a record starts. A record that is not valid UTF-8,
or longer than the record limit, is still a row, with `__error__` naming its line, so it is counted and locatable.

`pieces` is the one walk over the file's lines that the reader and the writer (`dataaudit.writers.plain_text`)
share, so both number records the same way; it holds at most one line (or `limit` bytes of one) at a time.
"""
from __future__ import annotations

import codecs
from typing import Iterator, NamedTuple

import pyarrow as pa

from dataaudit.text_records import TEXT_UNITS

from .batch import STR
from .jsonl import MAX_LINE_BYTES, where
from .record_stream import Record, read_records, record_batches

TEXT_FIELD = "text"
COPY_CHUNK = 1 << 20


class Piece(NamedTuple):
    """Bytes of the file, in order: `record` is the 0-based record they belong to (None: blank lines between
    records), `starts` whether they begin that record, `line` the 1-based physical line they are on."""
    raw: bytes
    record: int | None
    starts: bool
    line: int


def pieces(stream, unit: str, limit: int = MAX_LINE_BYTES) -> Iterator[Piece]:
    """Every byte of `stream` as Pieces: a line is one piece, or several when longer than `limit` (read in parts,
    so one overlong line is never held whole)."""
    if unit not in TEXT_UNITS:
        raise ValueError(f"text records must be one of {', '.join(TEXT_UNITS)}, got {unit!r}")
    lineno, row, in_record = 0, -1, False
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        lineno += 1
        blank = not line.strip()
        if blank:
            in_record = False
            yield Piece(line, None, False, lineno)
        else:
            starts = unit == "line" or not in_record
            row += starts
            in_record = True
            yield Piece(line, row, starts, lineno)
        while not line.endswith(b"\n"):          # the rest of an overlong line belongs with its start
            line = stream.readline(COPY_CHUNK)
            if not line:
                return
            yield Piece(line, None if blank else row, False, lineno)


def _record(parts: list[bytes], row: int, line: int, size: int, limit: int) -> Record:
    at = where(row, line)
    if size > limit:
        return {}, f"{at}: longer than {limit} bytes (not read)", [], 0, line
    raw = b"".join(parts)
    warnings = []
    if line == 1 and raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
        warnings.append(f"{at}: UTF-8 byte order mark ignored")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return {}, f"{at}: invalid UTF-8 at byte {e.start}", warnings, 0, line
    if text.endswith("\n"):                      # the break that ends the record is the file's, not the text's
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return {TEXT_FIELD: (STR, text)}, None, warnings, size, line


def _records(stream, unit: str, limit: int) -> Iterator[Record]:
    parts: list[bytes] = []
    row = line = size = -1
    for p in pieces(stream, unit, limit):
        if (p.starts or p.record is None) and row >= 0:
            yield _record(parts, row, line, size, limit)
            row = -1
        if p.record is None:
            continue
        if p.starts:
            parts, row, line, size = [], p.record, p.line, 0
        size += len(p.raw)
        if size <= limit:
            parts.append(p.raw)
    if row >= 0:
        yield _record(parts, row, line, size, limit)


def text_records(path: str, unit: str = "line", limit: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """The records of a plain-text file, one per line or per paragraph (`record_stream.Record`)."""
    return read_records(path, "text", lambda stream: _records(stream, unit, limit))


def iter_text(path: str, columns: list[str] | None = None, batch_rows: int = 4096, unit: str = "line",
              limit: int = MAX_LINE_BYTES) -> Iterator[pa.RecordBatch]:
    return record_batches(text_records(path, unit, limit), columns, batch_rows)
