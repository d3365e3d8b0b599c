"""CSV and TSV shards (plain or gzip): one record per row, streamed line by line.

Rows are parsed by Python's csv module (RFC 4180 quoting: a quoted cell may hold the delimiter, quotes and line
breaks), one physical line at a time, so every row knows the lines it spans and their exact bytes: `__line__` is
where it starts, and the writer (`dataaudit.writers.delimited`) copies kept rows byte for byte. Every cell is text;
nothing is guessed from it (a column of digits stays text). Blank lines are no records, as in JSONL.

With a header (the shard reader: its first row names the columns), a row with another number of cells is still a
row, with `__error__` naming its line. Without one (`records`, what benchmark loading takes: it decides itself
which row, if any, names the columns), cells are named by position: "0", "1", ...

Python's csv module refuses a cell longer than 128 KiB (`csv.field_size_limit`, a process-wide setting that
dataaudit leaves as it is): such a file is unreadable from that row on, with the row's line named.
"""
from __future__ import annotations

import codecs
import csv
from typing import Iterator, NamedTuple

import pyarrow as pa

from .base import ShardReadError
from .batch import STR, one_line
from .jsonl import MAX_LINE_BYTES, where
from .record_stream import Record, read_records, record_batches


class Row(NamedTuple):
    """One parsed row: its cells, the lines it spans (1-based, first and last), its exact bytes, and the 0-based
    offset in its first line of an invalid UTF-8 byte in it (None when the row is valid UTF-8)."""
    cells: list[str]
    first: int
    last: int
    raw: bytes
    bad_byte: int | None


class _Lines:
    """The physical lines of a byte stream for csv.reader, decoded one at a time; remembers the bytes and lines
    consumed since `take()` was last called."""

    def __init__(self, stream, max_line_bytes: int):
        self.stream, self.limit = stream, max_line_bytes
        self.line = 0
        self.raw = bytearray()
        self.first = 1
        self.bad: int | None = None

    def __iter__(self):
        return self

    def __next__(self) -> str:
        data = self.stream.readline(self.limit + 1)
        if not data:
            raise StopIteration
        self.line += 1
        if len(data) > self.limit and not data.endswith(b"\n"):
            raise ShardReadError(f"line {self.line} is longer than {self.limit} bytes (max_line_bytes)")
        body = data
        if self.line == 1 and body.startswith(codecs.BOM_UTF8):
            body = body[len(codecs.BOM_UTF8):]
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            text = body.decode("utf-8", "surrogateescape")
            if self.bad is None:
                self.bad = e.start
        self.raw += data
        return text

    def take(self) -> tuple[bytes, int, int, int | None]:
        """(bytes, first line, last line, invalid byte) of what was consumed since the last take."""
        out = (bytes(self.raw), self.first, self.line, self.bad)
        self.raw.clear()
        self.first, self.bad = self.line + 1, None
        return out


def rows(stream, delimiter: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Row]:
    """Every row of a decompressed byte stream, blank lines included (as rows with no cells), in file order.
    ShardReadError (naming the line) when the file cannot be parsed further."""
    lines = _Lines(stream, max_line_bytes)
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise ShardReadError(f"line {lines.first}: {one_line(e)}") from None
        raw, first, last, bad = lines.take()
        yield Row(cells, first, last, raw, bad)


def is_blank(row: Row) -> bool:
    return not row.cells or (len(row.cells) == 1 and not row.cells[0].strip())


def _records(stream, delimiter: str, header: bool, max_line_bytes: int) -> Iterator[Record]:
    names: list[str] | None = None
    count = 0
    warnings: list[str] = []
    for row in rows(stream, delimiter, max_line_bytes):
        if is_blank(row):
            continue
        if row.first == 1 and row.raw.startswith(codecs.BOM_UTF8):
            warnings = ["UTF-8 byte order mark ignored"]
        at = where(count, row.first)
        if row.bad_byte is not None:
            yield {}, f"{at}: invalid UTF-8 at byte {row.bad_byte}", warnings, len(row.raw), row.first
        elif header and names is None:
            dup = next((c for c in row.cells if row.cells.count(c) > 1), None)
            if dup is not None:
                raise ShardReadError(f"line {row.first}: the header names column {dup!r} twice")
            names = row.cells
            continue
        elif header and len(row.cells) != len(names):
            yield ({}, f"{at}: {len(row.cells)} columns, expected {len(names)} (as in the header)", warnings,
                   len(row.raw), row.first)
        else:
            keys = names if header else [str(i) for i in range(len(row.cells))]
            yield {k: (STR, v) for k, v in zip(keys, row.cells)}, None, warnings, len(row.raw), row.first
        warnings = []
        count += 1


def delimited_records(path: str, delimiter: str, header: bool, max_line_bytes: int = MAX_LINE_BYTES
                      ) -> Iterator[Record]:
    """The records of a CSV (delimiter ",") or TSV ("\\t") file: named by the header row when `header`, else by
    position ("0", "1", ..., the first row included)."""
    fmt = "tsv" if delimiter == "\t" else "csv"
    return read_records(path, fmt, lambda stream: _records(stream, delimiter, header, max_line_bytes),
                        stop=(ShardReadError,))


def iter_delimited(path: str, delimiter: str, columns: list[str] | None = None, batch_rows: int = 4096,
                   max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[pa.RecordBatch]:
    """Batches of a CSV or TSV shard whose first row names the columns."""
    return record_batches(delimited_records(path, delimiter, True, max_line_bytes), columns, batch_rows)
