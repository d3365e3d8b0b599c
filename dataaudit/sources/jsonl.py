"""JSONL shards (plain or gzip): one JSON object per line, streamed line by line.

Each object's top-level fields become columns, typed like a WebDataset .json member. A bad line is still a
row (with __error__), so a corrupt line is counted and locatable rather than silently skipped.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from typing import Iterator

import pyarrow as pa

from .base import ShardReadError
from .batch import BatchBuilder, flatten_object, one_line

MAX_LINE_BYTES = 256 << 20  # one line is held in memory; a missing newline must not pull in the whole file
_STREAM_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError


def _parse_line(line: bytes, lineno: int) -> tuple[dict | None, str | None, list[str]]:
    """(values, error, warnings) for one non-blank line."""
    text = line.strip()
    lead = len(line) - len(line.lstrip())
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"line {lineno}: invalid UTF-8 at byte {lead + e.start}", []
    warnings = []
    if lineno == 1 and s.startswith("\ufeff"):
        s = s[1:]
        warnings.append("line 1: UTF-8 byte order mark ignored")
    try:
        obj = json.loads(s)
    except json.JSONDecodeError as e:
        return None, f"line {lineno}: {e.msg} at column {lead + e.colno}", warnings
    except (ValueError, RecursionError) as e:  # e.g. integer too long, nesting too deep
        return None, f"line {lineno}: {one_line(e) or type(e).__name__}", warnings
    if not isinstance(obj, dict):
        return None, f"line {lineno}: not a JSON object ({type(obj).__name__})", warnings
    values: dict = {}
    flatten_object(obj, "", values, warnings, f"line {lineno}")
    return values, None, warnings


def iter_jsonl(path: str, columns: list[str] | None = None, batch_rows: int = 4096,
               max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[pa.RecordBatch]:
    builder = BatchBuilder(columns)
    try:
        raw = open(os.fspath(path), "rb")
    except OSError as e:
        raise ShardReadError(f"jsonl: {one_line(e)}") from e
    with raw:
        broken = None
        try:
            # Sniff gzip by magic rather than trusting the extension.
            stream = gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == b"\x1f\x8b" else raw
            lineno = 0
            while True:
                line = stream.readline(max_line_bytes + 1)
                if not line:
                    break
                lineno += 1
                key = str(builder.next_row + len(builder))
                if len(line) > max_line_bytes and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # skip the rest of the overlong line
                        line = stream.readline(1 << 20)
                    builder.add(key, {}, f"line {lineno}: longer than {max_line_bytes} bytes (not parsed)")
                elif line.strip():
                    values, error, warnings = _parse_line(line, lineno)
                    builder.add(key, values or {}, error, warnings, size=len(line))
                else:
                    continue  # blank lines are not records
                if builder.full(batch_rows):
                    yield builder.build()
        except _STREAM_ERRORS as e:
            broken = one_line(e) or type(e).__name__
        if len(builder):
            yield builder.build()
        if broken is not None:
            raise ShardReadError(f"jsonl: {broken}")
