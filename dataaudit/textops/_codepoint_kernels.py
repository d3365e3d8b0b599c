"""numba kernels over the UTF-8 bytes of a string array, driven by a per-code-point table (`codepoints.py`
builds the tables and holds the pure-pyarrow twins, which give identical results).

- `longest_run`: per row, the most code points in a row whose table entry is 0 (entry 1 ends a run).
- `count_marked`: per row, the code points whose table entry is 1, and all code points.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(inline="always")
def _decode(data, i, end):
    """(code point, byte length) of the UTF-8 character at i; a malformed or cut byte is one U+FFFD."""
    b = data[i]
    if b < 0x80:
        return b, 1
    if b >= 0xF0 and i + 3 < end:
        return ((b & 0x07) << 18) | ((data[i + 1] & 0x3F) << 12) | ((data[i + 2] & 0x3F) << 6) | (
            data[i + 3] & 0x3F), 4
    if b >= 0xE0 and b < 0xF0 and i + 2 < end:
        return ((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F), 3
    if b >= 0xC0 and b < 0xE0 and i + 1 < end:
        return ((b & 0x1F) << 6) | (data[i + 1] & 0x3F), 2
    return 0xFFFD, 1


# (tables have 2**21 entries: a malformed 4-byte sequence decodes to at most 0x1FFFFF)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def longest_run(off, data, table, out):
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        run = 0
        best = 0
        while i < end:
            b = data[i]
            if b < 0x80:                  # ASCII fast path
                cp = b
                i += 1
            else:
                cp, w = _decode(data, i, end)
                i += w
            if table[cp]:
                if run > best:
                    best = run
                run = 0
            else:
                run += 1
        out[r] = best if best > run else run


@numba.njit(cache=True, nogil=True, boundscheck=False)
def count_marked(off, data, table, marked, length):
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        m = 0
        n = 0
        while i < end:
            b = data[i]
            if b < 0x80:
                m += table[b]
                i += 1
            else:
                cp, w = _decode(data, i, end)
                m += table[cp]
                i += w
            n += 1
        marked[r] = m
        length[r] = n
