"""numba kernels for the contamination scan (imported only when numba is installed; `grams` has a numpy twin of
each that gives equal values, used when numba is missing or DATAAUDIT_NO_NUMBA is set).

- `tokens_kernel`: one pass over the UTF-8 bytes of a batch: word boundaries exactly where
  `pc.utf8_split_whitespace` splits, and each word's `textops.word_hash_of`.
- `kgram_hits_kernel`: for every word position, the fold of k consecutive word hashes (`textops.fold_int`) for
  k = 1..kmax inside one document, looked up for the wanted k in the benchmark tables (bitmap, then binary
  search), without materializing any k-gram array.
"""
from __future__ import annotations

import numba
import numpy as np

_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(inline="always")
def _mix(x):
    x ^= x >> np.uint64(30)
    x *= _C1
    x ^= x >> np.uint64(27)
    x *= _C2
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always")
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
        if c == 0x80 and (d <= 0x8A or d == 0xA8 or d == 0xA9 or d == 0xAF):
            return 3
        if c == 0x81 and d == 0x9F:
            return 3
        return 0
    if b == 0xE1:
        return 3 if (c == 0x9A and d == 0x80) else 0
    return 3 if (c == 0x80 and d == 0x80) else 0      # E3 80 80: U+3000


@numba.njit(cache=True, nogil=True, boundscheck=False)
def tokens_kernel(data, off, cls, pows, poly, out_hash, out_doc):
    """Fill out_hash/out_doc (capacity >= the number of words) and return the number of words.

    cls[b]: 0 a byte of a word, 1 ASCII whitespace, 2 lead byte of a possible multi-byte whitespace.
    pows[j] = poly**j for j < len(pows) (longer words continue the product)."""
    nd = off.shape[0] - 1
    npow = pows.shape[0]
    nw = 0
    for d in range(nd):
        i = off[d]
        end = off[d + 1]
        h = np.uint64(0)
        n = 0
        p = np.uint64(0)
        while i < end:
            b = data[i]
            c = cls[b]
            w = 0
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
    return nw


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
                h[i] = _mix(h[i] * _GOLD + tok[i + k - 1])
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
