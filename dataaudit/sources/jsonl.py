"""JSONL shards (plain or gzip): one JSON object per line, streamed line by line.

Each object's top-level fields become columns, typed like a WebDataset .json member. A bad line is still a
row (with __error__), so a corrupt line is counted and locatable rather than silently skipped. Blank lines are
not records: rows count records, __line__ is the physical line, and messages name both ("row 3 (line 5)").
A line holding more JSON values than json_budget allows is such a row too, never parsed.
"""
from __future__ import annotations

import json
from typing import Iterator

import pyarrow as pa

from .batch import flatten_object, one_line
from .json_budget import memory_bytes, over, over_budget
from .record_stream import Record, read_records, record_batches

MAX_LINE_BYTES = 256 << 20  # one line is held in memory; a missing newline must not pull in the whole file


def where(row: int, line: int) -> str:
    """How a message names a record of a text shard: its row (0-based record index) and its physical line."""
    return f"row {row} (line {line})"


def _parse_line(line: bytes, row: int, lineno: int) -> tuple[dict | None, str | None, list[str]]:
    """(values, error, warnings) for one non-blank line (record `row`, physical line `lineno`)."""
    text = line.strip()
    lead = len(line) - len(line.lstrip())
    try:
        s = text.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"{where(row, lineno)}: invalid UTF-8 at byte {lead + e.start}", []
    warnings = []
    if lineno == 1 and s.startswith("\ufeff"):
        s = s[1:]
        warnings.append(f"{where(row, lineno)}: UTF-8 byte order mark ignored")
    if (n := over(line, s)) is not None:
        return None, f"{where(row, lineno)}: {over_budget(n)}", warnings
    try:
        obj = json.loads(s)
    except json.JSONDecodeError as e:
        return None, f"{where(row, lineno)}: {e.msg} at column {lead + e.colno}", warnings
    except (ValueError, RecursionError) as e:  # e.g. integer too long, nesting too deep
        return None, f"{where(row, lineno)}: {one_line(e) or type(e).__name__}", warnings
    if not isinstance(obj, dict):
        return None, f"{where(row, lineno)}: not a JSON object ({type(obj).__name__})", warnings
    values: dict = {}
    flatten_object(obj, "", values, warnings, lambda: where(row, lineno))
    return values, None, warnings


def _lines(stream, max_line_bytes: int) -> Iterator[Record]:
    lineno = row = 0
    while True:
        line = stream.readline(max_line_bytes + 1)
        if not line:
            return
        lineno += 1
        if len(line) > max_line_bytes and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of the overlong line
                line = stream.readline(1 << 20)
            yield {}, f"{where(row, lineno)}: longer than {max_line_bytes} bytes (not parsed)", [], 0, lineno
            row += 1
        elif line.strip():   # blank lines are not records: they take no row
            values, error, warnings = _parse_line(line, row, lineno)
            yield values or {}, error, warnings, memory_bytes(line), lineno
            row += 1


def jsonl_records(path: str, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Record]:
    """The records of a JSONL file, parsed (`record_stream.Record`)."""
    return read_records(path, "jsonl", lambda stream: _lines(stream, max_line_bytes))


def iter_jsonl(path: str, columns: list[str] | None = None, batch_rows: int = 4096,
               max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[pa.RecordBatch]:
    return record_batches(jsonl_records(path, max_line_bytes), columns, batch_rows)
