"""The numba pieces that the word and hash kernels of textops, dedup and contamination inline (this module imports
numba: only kernel modules import it; `hashing` holds the constants and the numpy twins).

- `mix`: `hashing.mix` (splitmix64) compiled for one uint64.
- `multibyte_ws(data, i, end)`: the bytes of the multi-byte whitespace character at i, else 0.
- `word_hashes(data, i, end, cls, pows, poly, out_hash, out_doc, d, o)`: the words of the text data[i:end], each
  one's `hashing.word_hash_of` written out.

`cls` is `hashing.WS_CLASS` (byte classes: ASCII whitespace, lead byte of a possible multi-byte whitespace);
whitespace is Python's `str.split()` set: \\t \\n \\v \\f \\r \\x1c-\\x1f space, U+0085, U+00A0, U+1680,
U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.

numba's cache does not see edits of another file: after an edit here, delete the cached kernels (`__pycache__/*.nbi`
and `*.nbc`) of the modules that import this one, or they keep the old code.
"""
from __future__ import annotations

import numba
import numpy as np

from . import hashing
from .hashing import GOLD

mix = numba.njit(inline="always", cache=True)(hashing.mix)      # the one splitmix64, on a uint64 scalar here


@numba.njit(inline="always", cache=True)
def multibyte_ws(data, i, end):
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


@numba.njit(inline="always", cache=True)
def word_hashes(data, i, end, cls, pows, poly, out_hash, out_doc, d, o):
    """The words of the text data[i:end] (runs of bytes between whitespace): the `hashing.word_hash_of` of each
    into out_hash[o], out_hash[o + 1], ... and d into out_doc at the same places (unless out_doc is empty);
    returns o + their number. pows[j] = poly**j for j < len(pows) (longer words continue the product).

    One loop over the text's bytes (a call per word, returning its hash, took ~5% longer on English text)."""
    npow = pows.shape[0]
    keep_doc = out_doc.shape[0] > 0             # (loop-invariant: no measurable cost)
    h = np.uint64(0)
    p = np.uint64(0)
    n = 0
    while i < end:
        b = data[i]
        c = cls[b]
        w = 0                                   # bytes of whitespace here (as an if/elif: ~5% faster than a select)
        if c == 1:
            w = 1
        elif c == 2:
            w = multibyte_ws(data, i, end)
        if w:
            if n:
                out_hash[o] = mix(h + np.uint64(n) * GOLD)
                if keep_doc:
                    out_doc[o] = d
                o += 1
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
        out_hash[o] = mix(h + np.uint64(n) * GOLD)
        if keep_doc:
            out_doc[o] = d
        o += 1
    return o
