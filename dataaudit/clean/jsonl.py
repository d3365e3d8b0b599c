"""JSONL (plain or gzip): the kept records' lines, byte for byte (line endings, BOM, spacing as they were).

Records are numbered as the reader numbers them (dataaudit.sources.jsonl): every non-blank line is a record,
an overlong line too. Blank lines are no records and are copied as they are.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dataaudit.sources.jsonl import MAX_LINE_BYTES
from dataaudit.sources.record_stream import open_stream

from .output import COPY_CHUNK, atomic_stream, check_rows, is_gzip


def rewrite_jsonl(src: str, dst: Path, drop: np.ndarray, expected: int, max_line_bytes: int = MAX_LINE_BYTES) -> dict:
    """Write `src` without the records whose row is in `drop` (sorted) to `dst`; `expected`: the records the
    audit read (else ShardMismatch, nothing written). Returns {"rows", "kept", "dropped_lines"} (the line where
    each dropped record is, 1-based, as the reader's __line__)."""
    dropped = np.zeros(0, bool)
    if len(drop):
        dropped = np.zeros(int(drop[-1]) + 1, bool)
        dropped[drop] = True
    n_drop = len(dropped)
    row = kept = lineno = 0
    dropped_lines = []
    with open(src, "rb", buffering=COPY_CHUNK) as raw, atomic_stream(dst, is_gzip(src)) as out:
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
    return {"rows": row, "kept": kept, "dropped_lines": dropped_lines}
