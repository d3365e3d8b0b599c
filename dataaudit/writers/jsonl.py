"""JSONL (plain or gzip): the kept records' lines, byte for byte (line endings, BOM, spacing as they were).

Records are numbered as the reader numbers them (dataaudit.sources.jsonl): every non-blank line is a record,
an overlong line too. Blank lines are no records and are copied as they are.
"""
from __future__ import annotations

import os

import numpy as np

from dataaudit.io import open_input
from dataaudit.sources.jsonl import MAX_LINE_BYTES
from dataaudit.sources.record_stream import open_stream

from .base import COPY_CHUNK, WriteOptions, atomic_stream, check_rows, compressed


def rewrite_jsonl(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int,
                  options: WriteOptions = WriteOptions(), max_line_bytes: int = MAX_LINE_BYTES) -> dict:
    """Write `src` without the records whose row is in `drop` (sorted) to `dst`; `expected`: the records the
    audit read (else ShardMismatch, nothing written). Returns {"records", "kept", "dropped_lines"} (the line where
    each dropped record is, 1-based, as the reader's __line__)."""
    dropped = np.zeros(0, bool)
    if len(drop):
        dropped = np.zeros(int(drop[-1]) + 1, bool)
        dropped[drop] = True
    n_drop = len(dropped)
    row = kept = lineno = 0
    dropped_lines = []
    with open_input(src, COPY_CHUNK) as raw, atomic_stream(dst, compressed(src, options)) as out:
        stream = open_stream(raw)
        readline, write = stream.readline, out.write
        while True:
            line = readline(max_line_bytes + 1)
            if not line:
                break
            lineno += 1
            if len(line) > max_line_bytes and not line.endswith(b"\n"):     # an overlong line: one record
                keep = not (row < n_drop and dropped[row])
                row += 1
                kept += keep
                if not keep:
                    dropped_lines.append(lineno)
                while line:
                    if keep:
                        write(line)
                    if line.endswith(b"\n"):
                        break
                    line = readline(COPY_CHUNK)
                continue
            if not line.strip():          # blank: not a record
                write(line)
                continue
            if not (row < n_drop and dropped[row]):
                write(line)
                kept += 1
            else:
                dropped_lines.append(lineno)
            row += 1
        check_rows(src, row, expected)
    return {"records": row, "kept": kept, "dropped_lines": dropped_lines}
