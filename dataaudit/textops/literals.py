"""Occurrences of a few literal strings in every row of a string array (the `special_tokens` check).

`count_literals` counts as RE2 counts the literals' alternation (`alternation`: longest first, so a literal that
is a prefix of another never shadows it): non-overlapping, leftmost. With numba a kernel
(`_literal_kernels.count_literals`) walks the bytes and skips, eight at a time, those that start no literal;
without, RE2 counts (the twin; tests compare the two).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow import as_string_array, string_buffers
from .hashing import numba_kernels

_KERNELS = "dataaudit.textops._literal_kernels"
MAX_SWAR_FIRST = 4      # more distinct first bytes than this: a table lookup per byte is cheaper than the tests


def _re2_literal(s: str) -> str:
    """`s` as an RE2 literal: letters, digits and _ as they are, every other character as \\x{HEX}."""
    return "".join(c if c.isalnum() or c == "_" else f"\\x{{{ord(c):X}}}" for c in s)


def ordered(literals) -> list[str]:
    """The literals in the order both counts try them at one place: longest first."""
    return sorted(literals, key=len, reverse=True)


def alternation(literals) -> str:
    """The RE2 alternation of the literals, longest first."""
    return "|".join(map(_re2_literal, ordered(literals)))


@lru_cache(maxsize=64)
def _kernel_words(literals: tuple[str, ...]):
    """(bytes one after another, offsets, first-byte table, first bytes in eight lanes or empty, first bytes as at
    most two ranges (lo, n, lo, n) or empty) for the kernel."""
    raw = [w.encode() for w in ordered(literals)]
    words = np.frombuffer(b"".join(raw), np.uint8).copy()
    at = np.concatenate(([0], np.cumsum([len(w) for w in raw]))).astype(np.int64)
    starts = sorted({w[0] for w in raw})
    first = np.zeros(256, np.bool_)
    first[starts] = True
    # each first byte in all eight lanes (as `swar.repeat_byte`, which would import numba here)
    first8 = np.array(starts if len(starts) <= MAX_SWAR_FIRST else [], np.uint64) * np.uint64(0x0101010101010101)
    ranges = []                                          # runs of consecutive first bytes, as [lo, n]
    for b in starts:
        if ranges and ranges[-1][0] + ranges[-1][1] == b:
            ranges[-1][1] += 1
        else:
            ranges.append([b, 1])
    if len(ranges) == 1:
        ranges.append([0, 0])                            # n = 0: an empty range
    wide = np.array([x for r in ranges for x in r] if len(ranges) == 2 else [], np.int64)
    return words, at, first, first8, wide


def count_literals(arr: pa.Array, literals: tuple[str, ...]) -> np.ndarray:
    """Per row, the non-overlapping occurrences of the (non-empty) literal strings (int64; null -> 0)."""
    arr = as_string_array(arr)
    out = np.zeros(len(arr), np.int64)
    if not literals or len(arr) == 0:
        return out
    k = numba_kernels(_KERNELS, work=arr.nbytes)
    if k is None:
        return np.asarray(pc.count_substring_regex(arr, pattern=alternation(literals)).fill_null(0)
                          .to_numpy(zero_copy_only=False), np.int64)
    off, data = string_buffers(arr)
    k.count_literals(off, data, *_kernel_words(tuple(literals)), out)
    return out
