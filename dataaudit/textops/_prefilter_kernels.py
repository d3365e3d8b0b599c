"""numba kernels of `prefilters`: which rows, and which lines, may hold what a masking check looks for.

- `pii_gate`: per row, whether a text may match pii's RE2 prefilter (a necessary condition, read ~3x faster than
  RE2 reads the prefilter; RE2 then reads the rows that pass): the shapes every match of pii's prefilter holds,
  read at its digit runs, its "@" and its ":" (the bytes before one of those are skipped 64 at a time,
  `swar.in_ranges64`).
- `secrets_gate`: the same for the secrets check's prefilter, read at the bytes its branches hold (an assignment's
  ":", "=", "!", "(" or ".assign" with a value after it and a keyword before it, a quote, a token's first byte).
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


# ------------------------------------------------------------------------------------------------ secrets_gate

@numba.njit(inline="always", cache=True)
def _space(b):              # RE2's \s: [\t\n\f\r ]
    return b == 32 or b == 9 or b == 10 or b == 12 or b == 13


@numba.njit(inline="always", cache=True)
def _value_byte(b):         # [^\s'"`], byte by byte
    return not (_space(b) or b == 34 or b == 39 or b == 96)


@numba.njit(inline="always", cache=True)
def _run_byte(b):           # [\w\]'"] and any byte of a multi-byte character (the keyword "contraseña")
    return (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b == 95 or b == 93 or b == 39 or b == 34
            or b >= 128)


@numba.njit(inline="always", cache=True)
def _lower(b):
    return b | 32 if 65 <= b <= 90 else b


@numba.njit(inline="always", cache=True)
def _at(data, i, start, end, word, fold):
    """data[i:i + len(word)] is `word` (ASCII bytes; fold: either case), within data[start:end]."""
    n = word.shape[0]
    if i < start or i + n > end:
        return False
    for j in range(n):
        b = data[i + j]
        if (_lower(b) if fold else b) != word[j]:
            return False
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _value_follows(data, p, end):
    """The prefilter's `\\s*@?\\(?['"`]?[^\\s'"`]{8}` may start at p: after the spaces, 8 value bytes from one of the
    next four places (the three optional characters taken or not). A place inside a run too short has a shorter
    run: the next place tried is after the byte that ended it."""
    while p < end and _space(data[p]):
        p += 1
    s = p
    while s <= p + 3:
        j = s
        while j < end and j - s < 8 and _value_byte(data[j]):
            j += 1
        if j - s >= 8:
            return True
        if j >= end:
            return False
        s = j + 1
    return False


_KEY, _PASS, _PWD = np.frombuffer(b"key", np.uint8), np.frombuffer(b"pass", np.uint8), np.frombuffer(b"pwd", np.uint8)
_SECRET, _CONTRASE = np.frombuffer(b"secret", np.uint8), np.frombuffer(b"contrase", np.uint8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _keyword_in(data, a, e):
    """data[a:e] holds, in either case, "key", "pass", "pwd", "secret" or "contrase": what each of the prefilter's
    keywords holds."""
    for p in range(a, e):
        c = _lower(data[p])
        if ((c == 107 and _at(data, p, a, e, _KEY, True)) or (c == 112 and (_at(data, p, a, e, _PASS, True)
                or _at(data, p, a, e, _PWD, True))) or (c == 115 and _at(data, p, a, e, _SECRET, True))
                or (c == 99 and _at(data, p, a, e, _CONTRASE, True))):
            return True
    return False


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _run_holds_keyword(data, start, e):
    """The run of [\\w\\]'"] (multi-byte characters too) ending at e, back from it, holds a keyword."""
    a = e
    while a > start and _run_byte(data[a - 1]):
        a -= 1
    return _keyword_in(data, a, e)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _keyword_before(data, start, i):
    """The prefilter's `keyword[\\w\\]'"]*\\s*(?:\\[[0-9]*\\])?\\s*` may end at i: back over the spaces, the run
    before them holds a keyword, or a "[digits]" comes first and the run before it (and its spaces) does."""
    j = i
    while j > start and _space(data[j - 1]):
        j -= 1
    if _run_holds_keyword(data, start, j):
        return True
    if j > start and data[j - 1] == 93:
        k = j - 1
        while k > start and _digit(data[k - 1]):
            k -= 1
        if k > start and data[k - 1] == 91:
            k -= 1
            while k > start and _space(data[k - 1]):
                k -= 1
            return _run_holds_keyword(data, start, k)
    return False


_ASSIGN, _BEGIN = np.frombuffer(b"assign", np.uint8), np.frombuffer(b"BEGIN ", np.uint8)
_PUTTY = np.frombuffer(b"PuTTY-User-Key-File-2", np.uint8)
_HOOKS, _SLACK = np.frombuffer(b"hooks", np.uint8), np.frombuffer(b"slack", np.uint8)
_LIVE, _AWS = np.frombuffer(b"live_", np.uint8), np.frombuffer(b"aws", np.uint8)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _upper_or_digit_run(data, i, end, n):
    """data[i:i + n] are [0-9A-Z]."""
    if i + n > end:
        return False
    for j in range(i, i + n):
        b = data[j]
        if not (48 <= b <= 57 or 65 <= b <= 90):
            return False
    return True


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _aws_secret_at(data, start, i, end):
    """`(?i:aws).{0,20}['"][0-9a-zA-Z/+]{40}['"]` with its quote at i: 40 such bytes and a quote, and "aws" in the
    83 bytes before (20 characters of up to 4 bytes)."""
    if i + 42 > end or not (data[i + 41] == 34 or data[i + 41] == 39):
        return False
    for j in range(i + 1, i + 41):
        b = data[j]
        if not (48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b == 47 or b == 43):
            return False
    for p in range(max(start, i - 83), i - 2):
        if _at(data, p, start, i, _AWS, True):
            return True
    return False


@numba.njit(inline="always", cache=True)
def _secret_may_match(data, start, i, end):
    """Whether a match of the secrets prefilter may hold data[i] (one of the bytes `secrets_gate` stops at)."""
    b = data[i]
    if b == 58 or b == 61 or b == 33 or b == 40:            # : = ! ( (and := =>): a keyword before, a value after
        # (both must hold; the value after is read first: the word before can be long in code, `self.something(`)
        value = _value_follows(data, i + 1, end) or (
            i + 1 < end and ((b == 58 and data[i + 1] == 61) or (b == 61 and data[i + 1] == 62))
            and _value_follows(data, i + 2, end))
        return value and _keyword_before(data, start, i)
    if b == 46:                                             # .assign, hooks.slack
        if _at(data, i + 1, start, end, _ASSIGN, False) and _keyword_before(data, start, i):
            return _value_follows(data, i + 7, end)
        return _at(data, i - 5, start, end, _HOOKS, True) and _at(data, i + 1, start, end, _SLACK, True)
    if b == 34 or b == 39:
        return _aws_secret_at(data, start, i, end)
    if b == 65:                                             # A3T[A-Z0-9] ABIA ACCA AKIA ASIA, 16 more
        if i + 4 > end:
            return False
        c, d, e = data[i + 1], data[i + 2], data[i + 3]
        prefix = ((c == 51 and d == 84 and (48 <= e <= 57 or 65 <= e <= 90)) or (c == 66 and d == 73 and e == 65)
                  or (c == 67 and d == 67 and e == 65) or (c == 75 and d == 73 and e == 65)
                  or (c == 83 and d == 73 and e == 65))
        return prefix and _upper_or_digit_run(data, i + 4, end, 16)
    if b == 66:
        return _at(data, i, start, end, _BEGIN, False)
    if b == 80:
        return _at(data, i, start, end, _PUTTY, False)
    if b == 74:                                             # eyJ
        return i - 2 >= start and data[i - 2] == 101 and data[i - 1] == 121
    if b == 95:                                             # gh[pousr]_, [rs]k_live_
        if i - 3 >= start and data[i - 3] == 103 and data[i - 2] == 104:
            c = data[i - 1]
            if c == 112 or c == 111 or c == 117 or c == 115 or c == 114:
                return True
        return (i - 2 >= start and data[i - 1] == 107 and (data[i - 2] == 114 or data[i - 2] == 115)
                and _at(data, i + 1, start, end, _LIVE, False))
    if b == 120 or b == 88:                                 # (?i:xox[abposr]-[0-9])
        if i + 6 > end or _lower(data[i + 1]) != 111 or _lower(data[i + 2]) != 120:
            return False
        c = _lower(data[i + 3])
        return ((c == 97 or c == 98 or c == 112 or c == 111 or c == 115 or c == 114) and data[i + 4] == 45
                and _digit(data[i + 5]))
    if b == 0xC5:                                           # ſ, which RE2 reads as s ignoring case
        return i + 1 < end and data[i + 1] == 0xBF
    if b == 0xE2:                                           # K (Kelvin), which it reads as k
        return i + 2 < end and data[i + 1] == 0x84 and data[i + 2] == 0xAA
    return False


@numba.njit(inline="always", cache=True)
def _secret_stops64(data, i):
    """Bit j set when data[i + j] is a byte `_secret_may_match` reads."""
    return (in_ranges64(data, i, 33, 2, 39, 2) | in_ranges64(data, i, 46, 1, 58, 1)
            | in_ranges64(data, i, 61, 1, 65, 2) | in_ranges64(data, i, 74, 1, 80, 1)
            | in_ranges64(data, i, 88, 1, 95, 1) | in_ranges64(data, i, 120, 1, 0xC5, 1)
            | in_ranges64(data, i, 0xE2, 1, 0, 0))


@numba.njit(inline="always", cache=True)
def _secret_stop(b):
    """`_secret_stops64`'s bytes, one at a time (a row's last bytes)."""
    return (b == 33 or b == 34 or b == 39 or b == 40 or b == 46 or b == 58 or b == 61 or b == 65 or b == 66
            or b == 74 or b == 80 or b == 88 or b == 95 or b == 120 or b == 0xC5 or b == 0xE2)


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def secrets_gate(off, data, out):
    """out[r]: row r (bytes data[off[r]:off[r + 1]]) may match the secrets check's prefilter. Read at the bytes each
    branch holds: a keyword's assignment (: = ! ( .assign, a value of 8 after it and a keyword in the word before),
    an AWS secret's quote, the first byte of a token prefix or a PEM header, the "_" of gh?_ and k_live_, the "."
    of hooks.slack, and the two characters RE2 folds to an ASCII letter (ſ, K), which pass the row. 64 bytes at a
    time: the mask of those bytes, then each of them (one call site of `_secret_may_match`: it is inlined, and
    numba took 2 minutes to compile the kernel with every helper inlined at every site)."""
    for r in range(off.shape[0] - 1):
        start = off[r]
        end = off[r + 1]
        i = start
        hit = False
        while i < end and not hit:
            if i + 64 <= end:
                m = _secret_stops64(data, i)
            else:
                m = np.uint64(0)
                for j in range(end - i):
                    if _secret_stop(data[i + j]):
                        m |= np.uint64(1) << np.uint64(j)
            while m != 0 and not hit:                   # each stop of the 64 bytes, the mask made once
                hit = _secret_may_match(data, start, i + np.int64(trailing_zeros(m)), end)
                m &= m - np.uint64(1)
            i += 64
        out[r] = hit
    return 0
