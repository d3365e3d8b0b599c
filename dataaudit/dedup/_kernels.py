"""numba kernels (imported only when numba is installed; every kernel has a numpy twin giving equal values)."""
from __future__ import annotations

import numba
import numpy as np

from dataaudit.textops._kernels import _mix

_P = np.uint64((1 << 61) - 1)
_M32 = np.uint64(0xFFFFFFFF)
_S61 = np.uint64(61)
_ONE = np.uint64(1)
_GOLD = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def minhash_kernel(h, offsets, a, b, out):
    """out[d, k] = min over shingles i of doc d of ((a[k]*h[i] + b[k]) mod 2**64 mod (2**61-1)) & (2**32-1)."""
    nd = offsets.shape[0] - 1
    K = a.shape[0]
    row = np.empty(K, np.uint64)
    for d in range(nd):
        for k in range(K):
            row[k] = _M32
        for i in range(offsets[d], offsets[d + 1]):
            hv = h[i]
            for k in range(K):
                x = hv * a[k] + b[k]
                lo = (x & _P) + (x >> _S61)
                v = (lo + ((lo + _ONE) >> _S61)) & _M32
                if v < row[k]:
                    row[k] = v
        for k in range(K):
            out[d, k] = np.uint32(row[k])


@numba.njit(cache=True, nogil=True, boundscheck=False)
def band_kernel(sig, bands, rows, out):
    """out[d, j] = band hash of band j of signature row d (see lsh.band_hashes for the formula)."""
    n = sig.shape[0]
    for d in range(n):
        for j in range(bands):
            h = _mix(np.uint64(j + 1) * _GOLD)
            base = j * rows
            for t in range(rows):
                h = _mix(h * _GOLD + np.uint64(sig[d, base + t]))
            out[d, j] = h
