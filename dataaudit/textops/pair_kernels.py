"""numba kernels of the pair checks, over the UTF-8 bytes of two string arrays of equal length (row i of `a`
against row i of `b`; Arrow offsets rebased to 0, see textops.arrow.string_buffers).

- `common_prefix`: the bytes the two strings of each row share at their start.
- `edit_ratio`: 1 - Levenshtein distance / longer length, in bytes, for the rows whose ratio can reach
  `threshold`; a banded dynamic program (only distances up to the bound that the threshold allows are followed),
  so a pair of long, different replies costs a length check, not their product. Others: -1.
"""
from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, boundscheck=False)
def common_prefix(a_off, a_data, b_off, b_data):
    n = a_off.shape[0] - 1
    out = np.zeros(n, np.int64)
    for i in range(n):
        sa, sb = a_off[i], b_off[i]
        m = min(a_off[i + 1] - sa, b_off[i + 1] - sb)
        k = 0
        while k < m and a_data[sa + k] == b_data[sb + k]:
            k += 1
        out[i] = k
    return out


@numba.njit(cache=True, nogil=True, boundscheck=False)
def edit_ratio(a_off, a_data, b_off, b_data, threshold, rows):
    out = np.full(a_off.shape[0] - 1, -1.0)
    big = 1 << 40
    for i in rows:
        sa, la = a_off[i], a_off[i + 1] - a_off[i]
        sb, lb = b_off[i], b_off[i + 1] - b_off[i]
        longest = max(la, lb)
        if longest == 0:
            out[i] = 1.0
            continue
        bound = int((1.0 - threshold) * longest)
        if abs(la - lb) > bound:
            continue
        prev = np.full(lb + 1, big, np.int64)
        cur = np.full(lb + 1, big, np.int64)
        for j in range(min(lb, bound) + 1):
            prev[j] = j
        over = False
        for x in range(1, la + 1):
            lo, hi = max(1, x - bound), min(lb, x + bound)
            cur[0] = x if x <= bound else big
            if lo - 1 >= 1:
                cur[lo - 1] = big
            if hi + 1 <= lb:
                cur[hi + 1] = big
            best = cur[0]
            ca = a_data[sa + x - 1]
            for j in range(lo, hi + 1):
                d = prev[j - 1] + (0 if ca == b_data[sb + j - 1] else 1)
                d = min(d, prev[j] + 1, cur[j - 1] + 1)
                cur[j] = d
                best = min(best, d)
            if best > bound:
                over = True
                break
            prev, cur = cur, prev
        if not over and prev[lb] <= bound:
            out[i] = 1.0 - prev[lb] / longest
    return out
