"""JSON arrays (plain or gzip): the kept elements, each the exact bytes of the original element.

Two streaming passes. The first parses the file with the reader's own parser (dataaudit.sources.json_array,
which tracks every element's byte offset exactly, UTF-8 and invalid bytes included) and keeps only the offsets.
The second copies bytes: what precedes the first element (BOM, '[', indentation), the kept elements joined by
the file's own separator (the bytes between its first two elements, e.g. ",\n  "), and what follows the last
element ("\n]\n"). An unchanged file comes out byte-identical. Objects one after another (JSON Lines named
.json) are handled alike, their separator being the whitespace between them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dataaudit.sources.json_array import MAX_RECORD_BYTES, _Fatal, _Records, _Window, CHUNK_BYTES
from dataaudit.sources.record_stream import STREAM_ERRORS, open_stream

from .output import COPY_CHUNK, ShardMismatch, atomic_stream, check_rows, is_gzip


class _Offsets(_Records):
    """The reader's parser, remembering where each element starts (byte and line) and how long it is."""

    def __init__(self, win, limit):
        super().__init__(win, limit)
        self.spans: list[tuple[int, int, int]] = []

    def _value(self):
        obj, line, start, size, bad = super()._value()
        self.spans.append((start, size, line))
        return obj, line, start, size, bad


def element_spans(src: str, limit: int = MAX_RECORD_BYTES) -> np.ndarray:
    """(start, size, line) of every element, shape (n, 3): its offset and size in the decompressed bytes, and the
    1-based line where it starts."""
    with open(src, "rb") as raw:
        parser = _Offsets(_Window(open_stream(raw), CHUNK_BYTES), limit)
        try:
            for _ in parser:
                pass
        except (_Fatal, *STREAM_ERRORS) as e:
            raise ShardMismatch(f"{src}: json: {e}") from None
    return np.array(parser.spans, np.int64).reshape(-1, 3)


def _copy(stream, out, n: int) -> None:
    while n > 0:
        chunk = stream.read(min(n, COPY_CHUNK))
        if not chunk:
            raise ShardMismatch("json: the file ended early")
        if out is not None:
            out.write(chunk)
        n -= len(chunk)


def rewrite_json_array(src: str, dst: Path, drop: np.ndarray, expected: int) -> dict:
    """Write `src` without the elements whose index is in `drop` (sorted) to `dst`; `expected`: the records the
    audit read (else ShardMismatch, nothing written). Returns {"rows", "kept", "dropped_lines"}."""
    spans = element_spans(src)
    n = len(spans)
    keep = np.ones(n, bool)
    keep[drop[drop < n]] = False
    with open(src, "rb", buffering=COPY_CHUNK) as raw, atomic_stream(dst, is_gzip(src)) as out:
        check_rows(src, n, expected)
        stream = open_stream(raw)
        if n == 0:
            while chunk := stream.read(COPY_CHUNK):
                out.write(chunk)
            return {"rows": 0, "kept": 0, "dropped_lines": []}
        ends = spans[:, 0] + spans[:, 1]
        head = stream.read(int(spans[0, 0]))
        out.write(head)
        pos = int(spans[0, 0])
        sep = None
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
    return {"rows": n, "kept": written, "dropped_lines": spans[~keep, 2].tolist()}
