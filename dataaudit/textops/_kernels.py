"""numba kernels for textops (used when numba is installed; hashing.py/normalize.py hold the pure
numpy/pyarrow equivalents, which give identical results).

Whitespace is Python's `str.split()` set: \\t \\n \\v \\f \\r \\x1c-\\x1f space, U+0085, U+00A0, U+1680,
U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
"""
from __future__ import annotations

import numba
import numpy as np

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(inline="always")
def _mix(x):
    x ^= x >> np.uint64(30)
    x *= _C1
    x ^= x >> np.uint64(27)
    x *= _C2
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always")
def _ws_len(data, i, end):
    """Length in bytes of the whitespace character at data[i] (0 if it is not whitespace)."""
    b = data[i]
    if b < 0x80:
        if b == 32 or (9 <= b <= 13) or (28 <= b <= 31):
            return 1
        return 0
    if b == 0xC2 and i + 1 < end:
        c = data[i + 1]
        return 2 if (c == 0x85 or c == 0xA0) else 0
    if i + 2 < end:
        c, d = data[i + 1], data[i + 2]
        if b == 0xE1:
            return 3 if (c == 0x9A and d == 0x80) else 0
        if b == 0xE2:
            if c == 0x80 and (d <= 0x8A or d == 0xA8 or d == 0xA9 or d == 0xAF):
                return 3 if d >= 0x80 else 0
            if c == 0x81 and d == 0x9F:
                return 3
            return 0
        if b == 0xE3:
            return 3 if (c == 0x80 and d == 0x80) else 0
    return 0


# ASCII whitespace as a lookup table: a branch-free test for the common byte
ASCII_WS = np.zeros(128, np.uint8)
ASCII_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = 1


@numba.njit(cache=True, nogil=True, boundscheck=False)
def collapse_ws(offsets, data, out_offsets, out_data, table):
    """Every whitespace run -> one space, leading and trailing whitespace removed (output <= input)."""
    n = offsets.shape[0] - 1
    o = 0
    out_offsets[0] = 0
    for s in range(n):
        end = offsets[s + 1]
        pending = 0
        started = 0
        skip = 0
        for i in range(offsets[s], end):
            b = data[i]
            if skip:                      # continuation bytes of a multi-byte whitespace character
                skip -= 1
                continue
            if b < 128:
                w = table[b]
            else:
                ln = _ws_len(data, i, end)
                w = 1 if ln else 0
                skip = ln - 1 if ln else 0
            if w:
                pending = started
            else:
                if pending:
                    out_data[o] = 32
                    o += 1
                    pending = 0
                out_data[o] = b
                o += 1
                started = 1
        out_offsets[s + 1] = o
    return o


@numba.njit(cache=True, nogil=True, boundscheck=False)
def word_ngrams(offsets, data, n, poly, table, out_doc, out_hash, out_start, counts):
    """Word hashes (byte polynomial, see hashing.py) folded into n-grams, all documents in one pass.
    out_* must hold at least sum over documents of (bytes + 1) // 2 entries; returns the number written."""
    num = offsets.shape[0] - 1
    maxw = 1
    for s in range(num):
        m = (offsets[s + 1] - offsets[s] + 1) // 2
        if m > maxw:
            maxw = m
    wh = np.empty(maxw, np.uint64)
    o = 0
    one = np.uint64(1)
    zero = np.uint64(0)
    for s in range(num):
        end = offsets[s + 1]
        k = 0
        h = zero
        p = one
        ln = zero
        skip = 0
        for i in range(offsets[s], end):
            b = data[i]
            if skip:
                skip -= 1
                continue
            if b < 128:
                w = table[b]
            else:
                wl = _ws_len(data, i, end)
                w = 1 if wl else 0
                skip = wl - 1 if wl else 0
            if w == 0:
                h += (np.uint64(b) + one) * p
                p *= poly
                ln += one
            elif ln:
                wh[k] = _mix(h + ln * _GOLD)
                k += 1
                h = zero
                p = one
                ln = zero
        if ln:
            wh[k] = _mix(h + ln * _GOLD)
            k += 1
        if k == 0:
            counts[s] = 0
            continue
        last = k - n + 1 if k >= n else 1
        width = n if k >= n else k
        for j in range(last):
            g = wh[j]
            for t in range(j + 1, j + width):
                g = _mix(g * _GOLD + wh[t])
            out_doc[o] = s
            out_hash[o] = g
            out_start[o] = j
            o += 1
        counts[s] = last
    return o
