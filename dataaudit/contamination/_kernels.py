"""numba kernels for the contamination scan (imported only when numba is installed; `grams` has a numpy twin of
each that gives equal values, used when numba is missing or DATAAUDIT_NO_NUMBA is set). Words and their hashes
come from `textops.word_tokens` (textops' kernel).

- `kgram_hits_kernel`: for every word position, the fold of k consecutive word hashes (`textops.fold_int`) for
  k = 1..kmax inside one document, looked up for the wanted k in the benchmark tables (bitmap, then binary
  search), without materializing any k-gram array.
"""
from __future__ import annotations

import numba

from dataaudit.textops.hashing import GOLD
from dataaudit.textops.words import mix


@numba.njit(cache=True, nogil=True, boundscheck=False)
def kgram_hits_kernel(tok, doc, kmax, want, bitmap, shift, keys, key_lo, key_hi, out_pos, out_k, out_key):
    """For k = 1..kmax, h[i] = hash of words i..i+k-1 (`textops.fold_int`), computed level by level (each level
    is independent across positions, so it pipelines); for the wanted k, positions whose k words lie in one
    document are looked up in table k (sorted keys[key_lo[k]:key_hi[k]], prefiltered by the shared bitmap).
    Hits go to out_* (capacity len(out_pos)), by k then position; returns their number, or -1 when the
    capacity is short."""
    n = tok.shape[0]
    h = tok.copy()
    nh = 0
    cap = out_pos.shape[0]
    for k in range(1, kmax + 1):
        m = n - k + 1
        if m <= 0:
            break
        if k > 1:
            for i in range(m):
                h[i] = mix(h[i] * GOLD + tok[i + k - 1])
        if not want[k]:
            continue
        klo = key_lo[k]
        khi = key_hi[k]
        for i in range(m):
            x = h[i]
            if not bitmap[x >> shift]:
                continue
            if doc[i + k - 1] != doc[i]:
                continue
            lo = klo
            hi = khi
            while lo < hi:
                mid = (lo + hi) >> 1
                if keys[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < khi and keys[lo] == x:
                if nh >= cap:
                    return -1
                out_pos[nh] = i
                out_k[nh] = k
                out_key[nh] = lo - klo
                nh += 1
    return nh
