"""Plain text (plain or gzip): the kept records' lines, byte for byte (line endings, BOM, blank lines as they were).

Records are numbered as the reader numbers them (`dataaudit.sources.plain_text.pieces`, the walk both share): a
line, or a paragraph of lines up to a blank line. A dropped paragraph takes the blank lines after it along, so the
paragraphs kept stay one blank-line group apart as they were.
"""
from __future__ import annotations

import os

import numpy as np

from dataaudit.io import open_input
from dataaudit.sources.jsonl import MAX_LINE_BYTES
from dataaudit.sources.plain_text import pieces
from dataaudit.sources.record_stream import open_stream

from .base import COPY_CHUNK, WriteOptions, atomic_stream, check_rows, compressed


def rewrite_text(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int, unit: str,
                 options: WriteOptions = WriteOptions(), limit: int = MAX_LINE_BYTES) -> dict:
    """Write `src` without the records whose row is in `drop` (sorted) to `dst`; `unit`: "line" or "paragraph", as
    the audit read it; `expected`: the records the audit read (else ShardMismatch, nothing written). Returns
    {"records", "kept", "dropped_lines"} (the line where each dropped record starts, 1-based, as `__line__`)."""
    dropped = np.zeros(0, bool)
    if len(drop):
        dropped = np.zeros(int(drop[-1]) + 1, bool)
        dropped[drop] = True
    records = kept = 0
    dropped_lines = []
    skipping = False        # inside a dropped record, or the blank lines after a dropped paragraph
    with open_input(src, COPY_CHUNK) as raw, atomic_stream(dst, compressed(src, options)) as out:
        for p in pieces(open_stream(raw), unit, limit):
            if p.starts:
                records += 1
                skipping = p.record < len(dropped) and bool(dropped[p.record])
                if skipping:
                    dropped_lines.append(p.line)
                else:
                    kept += 1
            elif p.record is None and unit == "line":
                skipping = False        # a blank line between lines is kept; after a paragraph it goes with it
            if not skipping:
                out.write(p.raw)
        check_rows(src, records, expected)
    return {"records": records, "kept": kept, "dropped_lines": dropped_lines}
