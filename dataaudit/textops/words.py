"""The numba pieces that the word and hash kernels of textops, dedup and contamination inline (this module imports
numba: only kernel modules import it; `hashing` holds the constants and the numpy twins).

- `mix`: `hashing.mix` (splitmix64) compiled for one uint64.
- `multibyte_ws(data, i, end)`: the bytes of the multi-byte whitespace character at i, else 0.

`cls` is `hashing.WS_CLASS` (byte classes: ASCII whitespace, lead byte of a possible multi-byte whitespace);
whitespace is Python's `str.split()` set: \\t \\n \\v \\f \\r \\x1c-\\x1f space, U+0085, U+00A0, U+1680,
U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000.

numba's cache does not see edits of another file: after an edit here, delete the cached kernels (`__pycache__/*.nbi`
and `*.nbc`) of the modules that import this one, or they keep the old code.
"""
from __future__ import annotations

import numba

from . import hashing

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

