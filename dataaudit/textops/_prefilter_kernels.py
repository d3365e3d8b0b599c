"""numba kernels of `prefilters`: which rows, and which lines, may hold what a masking check looks for.

- `pii_gate`: per row, whether a text may match pii's RE2 prefilter (a necessary condition, read ~3x faster than
  RE2 reads the prefilter; RE2 then reads the rows that pass): the shapes every match of pii's prefilter holds,
  read at its digit runs, its "@" and its ":" (the bytes before one of those are skipped 64 at a time,
  `swar.in_ranges64`).
- `need_lines`: the lines holding one of some bytes, with their byte and code point spans (pii's cores each need
  an "@", a digit or a ":").
"""
from __future__ import annotations

import numba
import numpy as np

from .swar import in_ranges64, trailing_zeros


@numba.njit(inline="always", cache=True)
def _digit(b):
    return 48 <= b <= 57


@numba.njit(inline="always", cache=True)
def _hex(b):
    return 48 <= b <= 57 or 65 <= b <= 70 or 97 <= b <= 102


@numba.njit(inline="always", cache=True)
def _email_local(b):        # [A-Za-z0-9._%+-]
    return 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b == 46 or b == 95 or b == 37 or b == 43 or b == 45


@numba.njit(inline="always", cache=True)
def _run_end(data, i, end, most):
    """The end of the digit run from i, reading at most `most` digits (i + most + 1 when longer)."""
    j = i
    while j < end and _digit(data[j]) and j - i <= most:
        j += 1
    return j


@numba.njit(inline="always", cache=True)
def _digits_at(data, i, end, n):
    """data[i:i + n] are n digits (within the row)."""
    if i + n > end:
        return False
    for j in range(i, i + n):
        if not _digit(data[j]):
            return False
    return True


@numba.njit(inline="always", cache=True)
def _run_may_match(data, start, s, e, end):
    """Whether a match of pii's prefilter may hold the digit run data[s:e] (the row is data[start:end]): the
    prefilter's branches that hold a digit, each read from the run it holds (`pii_gate`)."""
    n = e - s
    nxt = data[e] if e < end else 0
    # \+[1-9][0-9]{0,3}[ .\-(]?[0-9]{1,4}
    if s > start and data[s - 1] == 43 and data[s] != 48:
        if n >= 2 or ((nxt == 32 or nxt == 46 or nxt == 45 or nxt == 40) and _digits_at(data, e + 1, end, 1)):
            return True
    # [0-9]{12,19}
    if n >= 12:
        return True
    # [0-9]{3}\)?[ .\-][0-9]{2,}: the run's last three digits
    if n >= 3:
        k = e + 1 if nxt == 41 else e
        if k < end and (data[k] == 32 or data[k] == 46 or data[k] == 45) and _digits_at(data, k + 1, end, 2):
            return True
    # \b0[1-9][0-9]{0,4}[ /\-.][0-9]{2}: a run of 2..6 digits (a digit before the 0 is no word boundary)
    if 2 <= n <= 6 and data[s] == 48 and data[s + 1] != 48:
        if (nxt == 32 or nxt == 47 or nxt == 45 or nxt == 46) and _digits_at(data, e + 1, end, 2):
            return True
    # [0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}: this run first, two whole runs of 1..3, one more digit
    j = e
    for _ in range(2):
        if j >= end or data[j] != 46:
            return False
        k = _run_end(data, j + 1, end, 3)
        if k == j + 1 or k - (j + 1) > 3:
            return False
        j = k
    return j < end and data[j] == 46 and _digits_at(data, j + 1, end, 1)


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def pii_gate(off, data, out):
    """out[r]: row r (bytes data[off[r]:off[r + 1]]) may match pii's prefilter: a digit run one of its digit
    branches may start at, an "@" between an address's characters, or a hex digit, ":", up to 4 hex digits and
    ":" (an IPv6 address). The bytes before the next digit, ":" or "@" are skipped 64 at a time."""
    for r in range(off.shape[0] - 1):
        start = off[r]
        end = off[r + 1]
        i = start
        hit = False
        while i < end and not hit:
            if i + 64 <= end:
                m = in_ranges64(data, i, 48, 11, 64, 1)      # 0-9 and ":", "@"
                if m == 0:
                    i += 64
                    continue
                i += np.int64(trailing_zeros(m))
            b = data[i]
            if _digit(b):
                e = _run_end(data, i, end, end)
                hit = _run_may_match(data, start, i, e, end)
                i = e
            elif b == 64:
                hit = i > start and i + 1 < end and _email_local(data[i - 1]) and (
                    _digit(data[i + 1]) or 65 <= data[i + 1] <= 90 or 97 <= data[i + 1] <= 122 or data[i + 1] == 45)
                i += 1
            elif b == 58:
                if i > start and _hex(data[i - 1]):
                    j = i + 1
                    while j < end and j - i <= 4 and _hex(data[j]):
                        j += 1
                    hit = j < end and data[j] == 58
                i += 1
            else:
                i += 1
        out[r] = hit
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def need_lines(off, data, table, text, bstart, bend, cstart, cend, bits):
    """The lines (split on "\\n") of rows data[off[r]:off[r + 1]] holding a byte b with table[b] != 0: for each, in
    order, its row, its byte span, its code point span within its row and the or of table[b] over its bytes.
    Returns their number (the outputs hold one per line at most)."""
    n = 0
    for r in range(off.shape[0] - 1):
        start = off[r]
        end = off[r + 1]
        chars = 0                       # code points before byte i
        line_byte = start
        line_char = 0
        held = 0
        for i in range(start, end + 1):
            b = data[i] if i < end else 10         # the row's end ends its last line
            if b != 10:
                held |= table[b]
                if (b & 0xC0) != 0x80:
                    chars += 1
                continue
            if held != 0:
                text[n], bstart[n], bend[n], cstart[n], cend[n], bits[n] = r, line_byte, i, line_char, chars, held
                n += 1
            held = 0
            chars += 1
            line_byte = i + 1
            line_char = chars
    return n
