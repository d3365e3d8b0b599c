"""The loop every record-per-element reader shares (JSONL, JSON arrays): open the file, sniff gzip by its magic
bytes rather than the extension, parse its records (`read_records`: what benchmark loading takes), number and
batch them (`record_batches`), and turn a stream that breaks part way into a ShardReadError after the records read
before the break."""
from __future__ import annotations

import gzip
import zlib
from contextlib import closing
from typing import Callable, Iterable, Iterator

import pyarrow as pa

from dataaudit.io import open_input

from .base import ShardReadError
from .batch import BatchBuilder, one_line

STREAM_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError

# A record as a reader parses it: (values, error, warnings, size in memory as the reader estimates it (its encoded
# size, more for many JSON values: json_budget.memory_bytes), 1-based line where it starts)
Record = tuple[dict, "str | None", list, int, int]


def open_stream(raw):
    """The decompressed byte stream of an open binary file (gzip or plain)."""
    return gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == b"\x1f\x8b" else raw


def read_records(path: str, fmt: str, parse: Callable[[object], Iterable[Record]],
                 stop: tuple[type[BaseException], ...] = ()) -> Iterator[Record]:
    """The records `parse(stream)` finds in the file, in order. A file that cannot be opened, or a stream that
    breaks part way (`stop`: the parser's own errors that end the file; their message names where), raises
    ShardReadError after the records read before the break."""
    try:
        raw = open_input(path)
    except OSError as e:
        raise ShardReadError(f"{fmt}: {one_line(e)}") from e
    with raw:
        try:
            yield from parse(open_stream(raw))
        except (*stop, *STREAM_ERRORS) as e:
            raise ShardReadError(f"{fmt}: {one_line(e) or type(e).__name__}") from None


def record_batches(records: Iterator[Record], columns: list[str] | None, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Batches of `records` (`read_records`), in order: row = record index (0-based), key = the row as text, line =
    where the record starts. A ShardReadError of the records comes after the batch of those read before it."""
    builder = BatchBuilder(columns)
    failure = None
    with closing(records):        # the file closes when the caller stops early, not at garbage collection
        try:
            for values, error, warnings, size, line in records:
                builder.add(str(builder.next_row + len(builder)), values, error, warnings, size, line)
                if builder.full(batch_rows):
                    yield builder.build()
        except ShardReadError as e:
            failure = e
    if len(builder):
        yield builder.build()
    if failure is not None:
        raise failure
