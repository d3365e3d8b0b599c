"""numba kernels over the UTF-8 bytes of a string array, driven by a per-code-point table (`codepoints.py`
builds the tables and holds the pure-pyarrow twins, which give identical results).

- `longest_run`: per row, the most code points in a row whose table entry is 0 (entry 1 ends a run).
- `count_marked`: per row, the code points whose table entry is 1, and all code points.
- `holds_c3_or_fffd`: per row, whether its bytes hold 0xC3 or U+FFFD (EF BF BD): the rows where mojibake can
  start (checks.text), 64 bytes at a time (`swar.in_ranges64`).
- `prose_counts`: the language pre-pass in one pass per row (checks.language_id): code spans skipped, six classes
  of code points counted, and the marker words among the row's words.

`count_marked` reads a row 64 bytes at a time where the buffer has them (a row's last bytes too, the bytes past its
end left out): the ASCII bytes up to the first other one as one mask of marked bytes, from vector compares against
the ranges of marked ASCII bytes (`calls`, two ranges a compare; `swar.in_ranges64`), its bits counted; then the code
points up to the next ASCII byte one by one. `longest_run` reads 64 ASCII bytes at a time the same way, their runs
eight bits at a time from `_CHUNK_RUNS`. Else (and near the buffer's end) eight bytes at a time (`swar.load8`): a
chunk with no high bit is eight ASCII code points, handled without a branch per byte; its marked bytes come from the
ranges of marked ASCII bytes (`lo`/`hi`: two additions per range, when there are at most `_MAX_RANGES`), else from
table lookups (`count_marked`: one per two bytes, `pairs`), and `longest_run` turns its 8-bit mask of run breaks
into runs with one lookup (`_CHUNK_RUNS`). A chunk holding a non-ASCII byte goes code point by code point
(`_decode`). The caller derives `lo`/`hi`/`pairs`/`calls` from the table's first 128 entries once per pattern
(`codepoints.ascii_ranges`, `ascii_pairs`, `ascii_calls`), so every table gives the result of the byte-by-byte walk
(tests compare them at every alignment).
"""
from __future__ import annotations

import numba
import numpy as np

from .hashing import GOLD
from .swar import HIGH, LOW7, has_byte, high_bits, in_ranges64, load8, load_upto, popcount, trailing_zeros

_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)

_MAX_RANGES = 4     # more ranges of marked ASCII bytes than this: table lookups per chunk are cheaper


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


def _chunk_runs() -> np.ndarray:
    """Per 8-bit mask of run breaks in an ASCII chunk: the code points before the first break (8 for none), the
    longest run between two breaks, the code points after the last break (0 for none) and 1 for no break, as
    bytes 0..3 of an int64. A run carried in grows by byte 0; it goes on as byte 2, plus itself times byte 3."""
    out = np.zeros(256, np.int64)
    for m in range(256):
        bits = [j for j in range(8) if m >> j & 1]
        if not bits:
            out[m] = 8 | 1 << 24
            continue
        inner = max([b - a - 1 for a, b in zip(bits, bits[1:])], default=0)
        out[m] = bits[0] | inner << 8 | (7 - bits[-1]) << 16
    return out


_CHUNK_RUNS = _chunk_runs()

# (tables have 2**21 entries: a malformed 4-byte sequence decodes to at most 0x1FFFFF)


@numba.njit(inline="always")
def _ascii_marks(x, table, lo, hi):
    """The high bit of each byte of the all-ASCII chunk x whose table entry is 1. Per range [a, b] of marked
    bytes, lo = repeat(128 - a) and hi = repeat(127 - b): a 7-bit byte plus either stays below 256 (no carry
    into the next byte) and gets its high bit exactly when it is >= a, resp. > b."""
    m = np.uint64(0)
    if lo.shape[0] <= _MAX_RANGES:
        for k in range(lo.shape[0]):
            m |= (x + lo[k]) & ~(x + hi[k])
        return m & HIGH
    for j in range(8):
        m |= np.uint64(table[(x >> np.uint64(8 * j)) & np.uint64(0x7F)]) << np.uint64(8 * j + 7)
    return m


@numba.njit(inline="always")
def _pair_count(x, pairs):
    """Marked bytes of the all-ASCII chunk x: pairs[b0 | b1 << 8] counts those of two bytes b0, b1."""
    two = np.uint64(0x7F7F)
    return (np.int64(pairs[x & two]) + pairs[(x >> np.uint64(16)) & two] + pairs[(x >> np.uint64(32)) & two]
            + pairs[x >> np.uint64(48)])


@numba.njit(inline="always")
def _past(k):
    """Bits k..63 (none for k >= 64): the bytes of a 64-byte block past a row's end, k bytes from its start."""
    return (_ALL << np.uint64(k)) if k < 64 else np.uint64(0)


@numba.njit(inline="always")
def _ascii64(data, i, calls):
    """The marked bytes of data[i:i + 64] (all ASCII) as bits: per row of `calls`, two ranges (first, length) of
    marked ASCII bytes (`codepoints.ascii_calls`), one vector compare each."""
    m = np.uint64(0)
    for c in range(calls.shape[0]):
        m |= in_ranges64(data, i, calls[c, 0], calls[c, 1], calls[c, 2], calls[c, 3])
    return m


@numba.njit(inline="always")
def _chunk_step(c, run, best):
    """(run, best) after eight ASCII code points whose `_CHUNK_RUNS` entry is c: the run carried in grows by the
    code points before the chunk's first break, the longest run seen takes those and the chunk's inner runs, and the
    run goes on with the code points after its last break (or all eight: no break)."""
    run += c & 0xFF
    if run > best:
        best = run
    inner = (c >> 8) & 0xFF
    if inner > best:
        best = inner
    return run * (c >> 24) + ((c >> 16) & 0xFF), best


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def longest_run(off, data, table, lo, hi, calls, out):
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        run = 0
        best = 0
        while i < end:
            if i + 64 <= end and in_ranges64(data, i, 0x80, 0x80, 0, 0) == 0:   # 64 ASCII: one mask of breaks
                brk64 = _ascii64(data, i, calls)
                for j in range(8):        # (a fixed count: a loop of 8 unrolled; fewer at a row's end ran slower)
                    run, best = _chunk_step(_CHUNK_RUNS[(brk64 >> np.uint64(8 * j)) & np.uint64(0xFF)], run, best)
                i += 64
                continue
            if i + 8 <= end:
                x = load8(data, i)
                if (x & HIGH) == 0:       # eight ASCII code points: their run breaks as bits 0..7, no branch
                    run, best = _chunk_step(_CHUNK_RUNS[high_bits(_ascii_marks(x, table, lo, hi))], run, best)
                    i += 8
                    continue
                stop = i + 8              # a non-ASCII byte: code point by code point past this chunk
            else:
                stop = end
            while i < stop:
                b = data[i]
                if b < 0x80:
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


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def count_marked(off, data, table, lo, hi, pairs, calls, marked, length):
    nb = data.shape[0]
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        m = 0
        n = 0
        while i < end:
            if i + 64 <= nb:
                # 64 bytes by vector compares (those past the row's end left out): the marked ASCII bytes before
                # the first other byte by one popcount, then the code points up to the next ASCII byte one by one
                inside = ~_past(end - i)
                wide = in_ranges64(data, i, 0x80, 0x80, 0, 0) & inside
                if wide == 0:
                    m += np.int64(popcount(_ascii64(data, i, calls) & inside))
                    k = min(end - i, 64)
                    n += k
                    i += k
                    continue
                j = trailing_zeros(wide)
                m += np.int64(popcount(_ascii64(data, i, calls) & ((_ONE << j) - _ONE)))
                n += np.int64(j)
                i += np.int64(j)
                while i < end and data[i] >= 0x80:
                    cp, w = _decode(data, i, end)
                    m += table[cp]
                    i += w
                    n += 1
                continue
            if i + 8 <= end:
                x = load8(data, i)
                if (x & HIGH) == 0:       # eight ASCII code points: the marked ones by popcount
                    if lo.shape[0] <= _MAX_RANGES:
                        m += np.int64(popcount(_ascii_marks(x, table, lo, hi)))
                    else:         # many ranges: four lookups of two bytes each
                        m += _pair_count(x, pairs)
                    n += 8
                    i += 8
                    continue
                stop = i + 8              # a non-ASCII byte: code point by code point past this chunk
            else:
                stop = end
            while i < stop:
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


@numba.njit(inline="always")
def _c3_or_fffd(data, j):
    """data[j] is 0xC3, or starts EF BF BD within the buffer (the bytes after a row's last one are the next row's:
    valid UTF-8 never ends a row on a lead byte)."""
    if data[j] == 0xC3:
        return True
    return data[j] == 0xEF and j + 2 < data.shape[0] and data[j + 1] == 0xBF and data[j + 2] == 0xBD


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def holds_c3_or_fffd(off, data, out):
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        found = False
        while i + 64 <= end and not found:
            m = in_ranges64(data, i, 0xC3, 1, 0xEF, 1)
            while m != 0:
                if _c3_or_fffd(data, i + np.int64(trailing_zeros(m))):
                    found = True
                    break
                m &= m - np.uint64(1)
            i += 64
        while i < end and not found:
            found = _c3_or_fffd(data, i)
            i += 1
        out[r] = found


@numba.njit(inline="always")
def _code_end(data, i, end):
    """data[i] is a backtick: the end of the code span that starts there as language_id's RE2 pattern
    (?s)```.*?(?:```|$)|`[^`\\n]*` finds it (a fence runs to the next fence or the text's end; an inline span needs
    its closing backtick before a newline), or i when none starts there."""
    if i + 2 < end and data[i + 1] == 96 and data[i + 2] == 96:
        j = i + 3
        while j + 2 < end:
            if data[j] == 96 and data[j + 1] == 96 and data[j + 2] == 96:
                return j + 3
            j += 1
        return end
    j = i + 1
    while j < end:
        c = data[j]
        if c == 96:
            return j + 1
        if c == 10:
            return i
        j += 1
    return i


_FIELD = 10            # prose_counts' per-class counts, packed: 10 bits each, six in a uint64, emptied every
_FULL = (1 << _FIELD) - 1                       # this many code points
_BACKTICKS = np.uint64(0x6060606060606060)
_LOWER = np.uint64(0x2020202020202020)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(inline="always")
def _letters8(y, wlo, whi):
    """Bit j set when byte j of y is an ASCII byte in one of the ranges wlo/whi (`codepoints.ascii_ranges`)."""
    y7 = y & LOW7
    m = np.uint64(0)
    for k in range(wlo.shape[0]):
        m |= (y7 + wlo[k]) & ~(y7 + whi[k])
    return high_bits(m & ~y & HIGH)


@numba.njit(inline="always")
def _word_key(data, p, end, table, wlo, whi, fold):
    """The word of letters (table bit 6) that starts at p as a key: its lower-case letters, the first in the
    lowest byte; 0 for a word of eight letters or more. Its first eight bytes at once when an ASCII byte (or the
    row's end) ends it there, else `_word_key_slow`."""
    y = load8(data, p) if p + 8 <= end else load_upto(data, p, end)
    n8 = (np.uint64(8) * trailing_zeros(~_letters8(y, wlo, whi))) & np.uint64(63)    # 8 letters: 0, key 0
    if (y >> n8) & np.uint64(0x80) == 0:
        return (y | _LOWER) & ((np.uint64(1) << n8) - np.uint64(1))
    return _word_key_slow(data, p, end, table, fold)


@numba.njit(inline="always")
def _word_key_slow(data, p, end, table, fold):
    """`_word_key` code point by code point (a letter RE2 folds onto an ASCII one: `fold`)."""
    key = np.uint64(0)
    n = 0
    while p < end:
        b = data[p]
        if b < 0x80:
            cp = np.int64(b)
            w = 1
        else:
            cp, w = _decode(data, p, end)
        if table[cp] & 64 == 0:
            break
        if n == 7:
            return np.uint64(0)
        low = np.uint64(cp | 0x20)
        if cp >= 0x80:
            for k in range(fold.shape[0]):
                if fold[k] >> 8 == cp:
                    low = np.uint64(fold[k] & 0xFF)
        key |= low << np.uint64(8 * n)
        n += 1
        p += w
    return key


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def prose_counts(off, data, table, spread, calls, wr, wlo, whi, fold, slots, out):
    """Per row r, over its prose (the row with each code span, as `_code_end` finds them from the left, read as one
    space): out[r, k] for k < 6 the code points whose table entry has bit k (`spread[t]`: bit k of t moved to bit
    10k, so one addition per code point counts all six); out[r, 6] the words of `slots` as Arrow counts
    (?i)(?:^|[^A-Za-z])(?:word|...)(?:[^A-Za-z]|$): every whole word of the letters with table bit 6 (ASCII letters,
    the ranges wlo/whi, and what RE2 folds onto them, `fold`: cp << 8 | its lower-case letter) that is one of them,
    "of the" twice (Arrow restarts RE2 after each match, where ^ matches again).

    64 ASCII bytes without a backtick at a time where a row has them (`in_ranges64`, a bit per byte): per row of
    `calls` (lo1, n1, lo2, n2, 10k: two ranges of class k's ASCII bytes), the bytes in those ranges counted into
    class k; the word starts from the letters' mask (the ranges wr[:4]), less those of words shorter than wr[4] or
    longer than wr[5] letters (the words' lengths: from the mask too), each word read whole where it starts and
    looked up once: `slots` holds each word's key at key * GOLD >> (64 - log2(len(slots))) and 1 (no key)
    elsewhere. Else eight ASCII bytes at a time (`_letters8`, the ranges wlo/whi; `spread` per byte), else code
    point by code point, a word also read where it starts (`_word_key`)."""
    bits = 0
    while (1 << bits) < slots.shape[0]:
        bits += 1
    shift = np.uint64(64 - bits)
    field = np.uint64(_FULL)
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        n0 = n1 = n2 = n3 = n4 = n5 = 0
        acc = np.uint64(0)
        left = np.int64(_FULL)
        marks = 0
        prev = np.uint64(0)       # 1: the code point before i is a letter (its word was read where it starts)
        while i < end:
            if left < 64:         # the fields could overflow in the next 64: into the counts
                n0 += np.int64(acc & field)
                n1 += np.int64((acc >> np.uint64(10)) & field)
                n2 += np.int64((acc >> np.uint64(20)) & field)
                n3 += np.int64((acc >> np.uint64(30)) & field)
                n4 += np.int64((acc >> np.uint64(40)) & field)
                n5 += np.int64((acc >> np.uint64(50)) & field)
                acc = np.uint64(0)
                left = np.int64(_FULL)
            if i + 64 <= end and in_ranges64(data, i, 0x80, 0x80, 96, 1) == 0:     # 64 ASCII, no code
                for c in range(calls.shape[0]):
                    acc += np.uint64(popcount(in_ranges64(data, i, calls[c, 0], calls[c, 1], calls[c, 2],
                                                          calls[c, 3]))) << np.uint64(calls[c, 4])
                m = in_ranges64(data, i, wr[0], wr[1], wr[2], wr[3])
                starts = m & ~((m << np.uint64(1)) | prev)
                for k in range(1, wr[4]):          # not shorter than the shortest word (the next block may go on)
                    starts &= (m >> np.uint64(k)) | (_ALL << np.uint64(64 - k))
                run = m
                for k in range(1, wr[5] + 1):      # nor longer than the longest
                    run &= m >> np.uint64(k)
                starts &= ~run
                while starts != 0:
                    at = trailing_zeros(starts)
                    n = trailing_zeros(~(m >> at))                 # its letters, up to the block's end
                    if at <= 56:      # its first eight bytes, masked (one that runs on past the block: 8+ letters)
                        key = (load8(data, i + np.int64(at)) | _LOWER) & (
                            (np.uint64(1) << ((np.uint64(8) * min(n, np.uint64(8))) & np.uint64(63))) - np.uint64(1))
                    else:
                        key = _word_key(data, i + np.int64(at), end, table, wlo, whi, fold)
                    marks += slots[(key * GOLD) >> shift] == key
                    starts &= starts - np.uint64(1)
                prev = m >> np.uint64(63)
                left -= 64
                i += 64
                continue
            if i + 8 <= end:
                x = load8(data, i)
                if (x & HIGH) == 0 and has_byte(x, _BACKTICKS) == 0:    # eight ASCII code points, no code
                    for j in range(8):
                        acc += spread[table[(x >> np.uint64(8 * j)) & np.uint64(0x7F)]]
                    m = _letters8(x, wlo, whi)
                    starts = m & ~((m << np.uint64(1)) | prev)
                    while starts != 0:
                        key = _word_key(data, i + np.int64(trailing_zeros(starts)), end, table, wlo, whi, fold)
                        marks += slots[(key * GOLD) >> shift] == key
                        starts &= starts - np.uint64(1)
                    prev = m >> np.uint64(7)
                    left -= 8
                    i += 8
                    continue
                stop = i + 8      # code point by code point past these eight bytes (at most 11 code points)
            else:
                stop = end
            while i < stop:
                p = i
                b = data[i]
                if b < 0x80:
                    cp = np.int64(b)
                    i += 1
                    if b == 96:
                        j = _code_end(data, p, end)
                        if j > p:     # a code span: one space
                            cp = 32
                            i = j
                else:
                    cp, w = _decode(data, i, end)
                    i += w
                t = table[cp]
                acc += spread[t]
                left -= 1
                letter = np.uint64(t >> 6)
                if letter > prev:
                    key = _word_key(data, p, end, table, wlo, whi, fold)
                    marks += slots[(key * GOLD) >> shift] == key
                prev = letter
        out[r, 0] = n0 + np.int64(acc & field)
        out[r, 1] = n1 + np.int64((acc >> np.uint64(10)) & field)
        out[r, 2] = n2 + np.int64((acc >> np.uint64(20)) & field)
        out[r, 3] = n3 + np.int64((acc >> np.uint64(30)) & field)
        out[r, 4] = n4 + np.int64((acc >> np.uint64(40)) & field)
        out[r, 5] = n5 + np.int64((acc >> np.uint64(50)) & field)
        out[r, 6] = marks


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def prose_text(off, data, rows, limit, out_off, out_data):
    """The prose of the rows `rows` (each code span, as `prose_counts` reads it, one space), its first `limit`
    code points, one row after another into out_data (room for the rows' bytes): row rows[k] ends at
    out_off[k + 1]. A code point starts at each byte that is no UTF-8 continuation byte (10xxxxxx)."""
    o = 0
    out_off[0] = 0
    for k in range(rows.shape[0]):
        i = off[rows[k]]
        end = off[rows[k] + 1]
        n = 0
        while i < end:
            b = data[i]
            if b & 0xC0 != 0x80:
                if n == limit:
                    break
                n += 1
                if b == 96:
                    j = _code_end(data, i, end)
                    if j > i:     # a code span: one space
                        out_data[o] = 32
                        o += 1
                        i = j
                        continue
            out_data[o] = b
            o += 1
            i += 1
        out_off[k + 1] = o
