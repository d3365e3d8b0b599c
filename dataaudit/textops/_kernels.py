"""numba kernels for textops (used when numba is installed; hashing.py/normalize.py hold the pure
numpy/pyarrow twins, which give identical results). dedup and contamination build their kernels on `_mix`.

`cls` is `hashing.WS_CLASS` (byte classes: ASCII whitespace, lead byte of a possible multi-byte whitespace).

- `collapse_ws`: every whitespace run -> one space, leading/trailing whitespace removed.
- `word_tokens`: one pass over the UTF-8 bytes of a batch: the words (split on whitespace runs) and each word's
  `hashing.word_hash_of`.
- `fold_ngrams`: n-gram hashes (`hashing.fold_int`) of flat token hashes, document by document.

`word_tokens` is compiled without numba's reference counting (`_nrt=False`; it allocates nothing): its calls of
`_multibyte_ws` otherwise incref and decref `data` with atomic calls (~15% of its time on mixed text).

Whitespace is Python's `str.split()` set: \\t \\n \\v \\f \\r \\x1c-\\x1f space,
U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.
"""
from __future__ import annotations

import numba
import numpy as np

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(inline="always", cache=True)
def _mix(x):
    x ^= x >> np.uint64(30)
    x *= _C1
    x ^= x >> np.uint64(27)
    x *= _C2
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always", cache=True)
def _multibyte_ws(data, i, end):
    """Length of the multi-byte whitespace character at i (lead byte C2, E1, E2 or E3), else 0."""
    b = data[i]
    if b == 0xC2:
        if i + 1 < end:
            c = data[i + 1]
            if c == 0x85 or c == 0xA0:
                return 2
        return 0
    if i + 2 >= end:
        return 0
    c = data[i + 1]
    d = data[i + 2]
    if b == 0xE2:
        if c == 0x80 and ((0x80 <= d <= 0x8A) or d == 0xA8 or d == 0xA9 or d == 0xAF):
            return 3
        if c == 0x81 and d == 0x9F:
            return 3
        return 0
    if b == 0xE1:
        return 3 if (c == 0x9A and d == 0x80) else 0
    return 3 if (c == 0x80 and d == 0x80) else 0      # E3 80 80: U+3000


@numba.njit(cache=True, nogil=True, boundscheck=False)
def collapse_ws(offsets, data, out_offsets, out_data, cls):
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
            if skip:                      # continuation bytes of a multi-byte whitespace character
                skip -= 1
                continue
            b = data[i]
            c = cls[b]
            w = c if c < 2 else _multibyte_ws(data, i, end)      # bytes of whitespace here (0: none)
            if w:
                pending = started
                skip = w - 1
                continue
            if pending:
                out_data[o] = 32
                o += 1
                pending = 0
            out_data[o] = b
            o += 1
            started = 1
        out_offsets[s + 1] = o
    return o


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def word_tokens(data, starts, stops, cls, pows, poly, out_hash, out_doc, ends):
    """The words of the texts data[starts[d]:stops[d]]: fill out_hash and out_doc (the text of each word; capacity
    >= the number of words) and ends (ends[d]: the number of words of texts 0..d); return the number of words.
    pows[j] = poly**j for j < len(pows) (longer words continue the product)."""
    nd = starts.shape[0]
    npow = pows.shape[0]
    nw = 0
    for d in range(nd):
        i = starts[d]
        end = stops[d]
        h = np.uint64(0)
        n = 0
        p = np.uint64(0)
        while i < end:
            b = data[i]
            c = cls[b]
            w = 0                         # bytes of whitespace here (as an if/elif: ~5% faster than a select)
            if c == 1:
                w = 1
            elif c == 2:
                w = _multibyte_ws(data, i, end)
            if w:
                if n:
                    out_hash[nw] = _mix(h + np.uint64(n) * _GOLD)
                    out_doc[nw] = d
                    nw += 1
                    h = np.uint64(0)
                    n = 0
                i += w
                continue
            if n < npow:
                h += (np.uint64(b) + np.uint64(1)) * pows[n]
            else:
                if n == npow:
                    p = pows[npow - 1] * poly
                else:
                    p *= poly
                h += (np.uint64(b) + np.uint64(1)) * p
            n += 1
            i += 1
        if n:
            out_hash[nw] = _mix(h + np.uint64(n) * _GOLD)
            out_doc[nw] = d
            nw += 1
        ends[d] = nw                      # (a count per document here would cost ~3%)
    return nw


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fold_ngrams(tok, count, n, out_hash, out_doc, out_start, out_count):
    """n-gram hashes of flat token hashes (document d owns the next count[d] of them): a document with k >= n
    tokens has k - n + 1 n-grams, one with 1..n-1 tokens one n-gram of all of them. Folded level by level
    inside each document (the positions of a level are independent, so the mixes pipeline). out_* need
    capacity len(tok); returns the number of n-grams written."""
    maxc = 0
    for d in range(count.shape[0]):
        if count[d] > maxc:
            maxc = count[d]
    h = np.empty(maxc, np.uint64)
    o = 0
    f = 0
    for d in range(count.shape[0]):
        c = count[d]
        if c == 0:
            out_count[d] = 0
            continue
        width = n if c >= n else c
        for i in range(c):
            h[i] = tok[f + i]
        for k in range(2, width + 1):
            for i in range(c - k + 1):
                h[i] = _mix(h[i] * _GOLD + tok[f + i + k - 1])
        last = c - width + 1
        for j in range(last):
            out_hash[o] = h[j]
            out_doc[o] = d
            out_start[o] = j
            o += 1
        out_count[d] = last
        f += c
    return o
