"""CSV and TSV (plain or gzip): the kept rows, byte for byte (quoting, line ends, BOM as they were).

Rows are found by the reader's own parser (dataaudit.sources.delimited), which knows the exact bytes of every row,
and numbered as the reader numbers them: blank lines are no rows and are copied as they are; with a header, the
first row names the columns, is no record, and is always kept.
"""
from __future__ import annotations

import os

import numpy as np

from dataaudit.io import open_input
from dataaudit.sources.base import ShardReadError
from dataaudit.sources.delimited import is_blank, rows
from dataaudit.sources.record_stream import open_stream

from .base import COPY_CHUNK, ShardMismatch, WriteOptions, atomic_stream, check_rows, compressed


def rewrite_delimited(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int, delimiter: str,
                      options: WriteOptions = WriteOptions()) -> dict:
    """Write `src` without the rows whose index is in `drop` (sorted) to `dst`; `expected`: the records the
    findings read (else ShardMismatch, nothing written). `options.header` (default True): the first row names the
    columns. Returns {"records", "kept", "dropped_lines"}."""
    header = options.header is not False
    dropped = np.zeros(int(drop[-1]) + 1 if len(drop) else 0, bool)
    dropped[drop] = True
    row = kept = 0
    dropped_lines = []
    seen_header = not header
    with open_input(src, COPY_CHUNK) as raw, atomic_stream(dst, compressed(src, options)) as out:
        try:
            for r in rows(open_stream(raw), delimiter):
                if is_blank(r) or not seen_header:
                    seen_header = seen_header or not is_blank(r)
                    out.write(r.raw)
                    continue
                if row < len(dropped) and dropped[row]:
                    dropped_lines.append(r.first)
                else:
                    out.write(r.raw)
                    kept += 1
                row += 1
        except ShardReadError as e:
            raise ShardMismatch(f"{src}: {e}") from None
        check_rows(src, row, expected)
    return {"records": row, "kept": kept, "dropped_lines": dropped_lines}
