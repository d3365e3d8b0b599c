"""JSON arrays (plain or gzip): the kept elements, each the exact bytes of the original element.

Two streaming passes. The first parses the file with the reader's own parser (dataaudit.sources.json_array,
which tracks every element's byte offset exactly, UTF-8 and invalid bytes included) and keeps only the offsets.
The second copies bytes: what precedes the first element (BOM, '[', indentation), the kept elements joined by
the file's own separator (the bytes between its first two elements, e.g. ",\n  "), and what follows the last
element ("\n]\n"). An unchanged file comes out byte-identical. Objects one after another (JSON Lines named
.json) are handled alike, their separator being the whitespace between them.
"""
from __future__ import annotations

import os

import numpy as np

from dataaudit.io import open_input
from dataaudit.sources.base import ShardReadError
from dataaudit.sources.json_array import element_spans
from dataaudit.sources.record_stream import open_stream

from .base import COPY_CHUNK, ShardMismatch, WriteOptions, atomic_stream, check_rows, compressed


def _spans(src: str) -> np.ndarray:
    with open_input(src) as raw:
        try:
            return element_spans(open_stream(raw))
        except ShardReadError as e:
            raise ShardMismatch(f"{src}: {e}") from None


def _copy(stream, out, n: int) -> None:
    while n > 0:
        chunk = stream.read(min(n, COPY_CHUNK))
        if not chunk:
            raise ShardMismatch("json: the file ended early")
        if out is not None:
            out.write(chunk)
        n -= len(chunk)


def rewrite_json_array(src: str, dst: str | os.PathLike, drop: np.ndarray, expected: int,
                       options: WriteOptions = WriteOptions()) -> dict:
    """Write `src` without the elements whose index is in `drop` (sorted) to `dst`; `expected`: the records the
    audit read (else ShardMismatch, nothing written). Returns {"records", "kept", "dropped_lines"}."""
    spans = _spans(src)
    n = len(spans)
    keep = np.ones(n, bool)
    keep[drop[drop < n]] = False
    with open_input(src, COPY_CHUNK) as raw, atomic_stream(dst, compressed(src, options)) as out:
        check_rows(src, n, expected)
        stream = open_stream(raw)
        if n == 0:
            while chunk := stream.read(COPY_CHUNK):
                out.write(chunk)
            return {"records": 0, "kept": 0, "dropped_lines": []}
        ends = spans[:, 0] + spans[:, 1]
        head = stream.read(int(spans[0, 0]))
        out.write(head)
        pos = int(spans[0, 0])
        sep = None
        between = b""      # the bytes between the first two elements: read once the first is copied
        written = 0
        for i in range(n):
            start, end = int(spans[i, 0]), int(ends[i])
            if i == 1:
                sep = between
            elif i > 1:
                _copy(stream, None, start - pos)
            if keep[i]:
                if written:
                    out.write(sep if sep is not None else b",\n")
                _copy(stream, out, end - start)
                written += 1
            else:
                _copy(stream, None, end - start)
            pos = end
            if i == 0 and n > 1:
                between = stream.read(int(spans[1, 0]) - end)
                pos = int(spans[1, 0])
        while chunk := stream.read(COPY_CHUNK):   # "\n]\n": what follows the last element
            out.write(chunk)
    return {"records": n, "kept": written, "dropped_lines": spans[~keep, 2].tolist()}
