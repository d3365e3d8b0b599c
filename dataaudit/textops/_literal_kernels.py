"""numba kernel of `literals.count_literals` (its RE2 twin gives identical counts).

- `count_literals`: per row, the non-overlapping occurrences of a few literal byte strings, as RE2 counts their
  alternation (leftmost; at one place the first literal of the list that matches, the list longest first). The
  bytes that start no literal are skipped 64 at a time (`swar.in_ranges64`) when the first bytes form at most two
  ranges (the chat tokens: `<` and `[`), eight at a time (`swar.has_byte`) when at most four bytes start one,
  else one by one through a table.
"""
from __future__ import annotations

import numba
import numpy as np

from .swar import has_byte, in_ranges64, load8, trailing_zeros


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def count_literals(off, data, words, at, first, first8, ranges, out):
    """out[r]: the occurrences in row r (bytes data[off[r]:off[r + 1]]) of the literals words[at[w]:at[w + 1]]
    (in the order to try them: longest first). first[b]: a literal starts with byte b; first8: those bytes
    repeated in all eight lanes (`swar.repeat_byte`) when at most `literals.MAX_SWAR_FIRST` of them, else
    empty; ranges: (lo1, n1, lo2, n2), the first bytes as at most two ranges lo..lo + n - 1, else empty."""
    n_words = at.shape[0] - 1
    swar = first8.shape[0] > 0
    wide = ranges.shape[0] == 4
    for r in range(off.shape[0] - 1):
        i = off[r]
        end = off[r + 1]
        count = 0
        while i < end:
            if wide and i + 64 <= end:          # skip the bytes before the next that starts a literal
                m = in_ranges64(data, i, ranges[0], ranges[1], ranges[2], ranges[3])
                if m == 0:
                    i += 64
                    continue
                i += np.int64(trailing_zeros(m))
            elif swar and i + 8 <= end:         # skip eight bytes that start no literal
                x = load8(data, i)
                m = np.uint64(0)
                for k in range(first8.shape[0]):
                    m |= has_byte(x, first8[k])
                if m == 0:
                    i += 8
                    continue
                i += np.int64(trailing_zeros(m) >> np.uint64(3))   # (the lowest mark is exact)
            elif not first[data[i]]:
                i += 1
                continue
            b = data[i]
            step = 1
            for w in range(n_words):
                a = at[w]
                n = at[w + 1] - a
                if words[a] != b or i + n > end:
                    continue
                same = True
                for t in range(1, n):
                    if data[i + t] != words[a + t]:
                        same = False
                        break
                if same:
                    count += 1
                    step = n
                    break
            i += step
        out[r] = count
    return 0
