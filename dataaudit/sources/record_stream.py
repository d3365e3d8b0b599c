"""The loop every record-per-element reader shares (JSONL, JSON arrays): open the file, sniff gzip by its magic
bytes rather than the extension, number the records, batch them, and turn a stream that breaks part way into a
ShardReadError after the records read before the break."""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Callable, Iterable, Iterator

import pyarrow as pa

from .base import ShardReadError
from .batch import BatchBuilder, one_line

STREAM_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError

# A record as a reader parses it: (values, error, warnings, encoded size in bytes, 1-based line where it starts)
Record = tuple[dict, "str | None", list, int, int]


def open_stream(raw):
    """The decompressed byte stream of an open binary file (gzip or plain)."""
    return gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == b"\x1f\x8b" else raw


def record_batches(path: str, fmt: str, records: Callable[[object], Iterable[Record]], columns: list[str] | None,
                   batch_rows: int, stop: tuple[type[BaseException], ...] = ()) -> Iterator[pa.RecordBatch]:
    """Batches of the records `records(stream)` parses, in order: row = record index (0-based), key = the row as
    text, line = where the record starts. `stop`: the reader's own
    errors that end the shard (besides a broken stream); their message names where."""
    builder = BatchBuilder(columns)
    try:
        raw = open(os.fspath(path), "rb")
    except OSError as e:
        raise ShardReadError(f"{fmt}: {one_line(e)}") from e
    with raw:
        failure = None
        try:
            for values, error, warnings, size, line in records(open_stream(raw)):
                builder.add(str(builder.next_row + len(builder)), values, error, warnings, size, line)
                if builder.full(batch_rows):
                    yield builder.build()
        except (*stop, *STREAM_ERRORS) as e:
            failure = one_line(e) or type(e).__name__
        if len(builder):
            yield builder.build()
        if failure is not None:
            raise ShardReadError(f"{fmt}: {failure}")
