"""LSH banding: (bands, rows) from a Jaccard threshold, band hashes, and candidate pairs from sorted keys.

`optimal_params` is datasketch's `MinHashLSH` parameter search (`_optimal_param`): the (b, r) with b*r <=
num_perm minimizing  w_fp * integral_0^t P(s) ds + w_fn * integral_t^1 (1 - P(s)) ds  with
P(s) = 1 - (1 - s**r)**b, weights 0.5/0.5 by default (datasketch integrates with scipy's quad; here the
integrals are exact Gauss-Legendre sums for all (b, r) at once).

A band hash is a 64-bit hash of the band's r signature values and the band's index, so equal hashes mean
equal bands of the same band number (up to 64-bit collisions). Candidate pairs come from sorting the keys
(no dict per document): documents with equal keys form a run; a run becomes edges to its first member
(a star: enough for connected components), or every pair for small runs when candidates are verified.
"""
from __future__ import annotations

import functools

import numpy as np

from dataaudit.textops.hashing import GOLD, mix, numba_kernels


def _gauss_legendre(lo: float, hi: float, points: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(points)
    half = (hi - lo) / 2
    return lo + half * (x + 1), w * half


@functools.lru_cache(maxsize=64)
def optimal_params(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
                   ) -> tuple[int, int]:
    """(bands, rows) as datasketch's MinHashLSH chooses them for this threshold and num_perm.

    P(s) is a polynomial of degree b*r <= num_perm, so Gauss-Legendre with num_perm/2 + 1 nodes integrates it
    exactly (datasketch calls scipy's quad once per (b, r): ~0.6 s at 128 permutations; this is one array
    expression). Ties are broken as datasketch's loop does: the first (b, r) in (b, then r) order wins."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be between 0 and 1 (exclusive), got {threshold}")
    b = np.concatenate([np.full(num_perm // k, k) for k in range(1, num_perm + 1)]).astype(np.float64)
    r = np.concatenate([np.arange(1, num_perm // k + 1) for k in range(1, num_perm + 1)]).astype(np.float64)
    points = num_perm // 2 + 1
    s0, w0 = _gauss_legendre(0.0, threshold, points)
    s1, w1 = _gauss_legendre(threshold, 1.0, points)
    # (1 - s**r)**b as exp(b * log1p(-exp(r * log s))): no pow of arrays (8x faster at 1024 permutations)
    fp = (1 - np.exp(b[:, None] * np.log1p(-np.exp(r[:, None] * np.log(s0)[None, :])))) @ w0
    fn = np.exp(b[:, None] * np.log1p(-np.exp(r[:, None] * np.log(s1)[None, :]))) @ w1
    err = fp * fp_weight + fn * fn_weight
    best = int(np.argmin(err))
    return int(b[best]), int(r[best])


def band_hashes(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """uint64 (n, bands): h_j = fold(mix((j+1)*GOLD), sig[:, j*rows], ..., sig[:, j*rows + rows - 1]) with
    fold(h, v) = mix(h * GOLD + v). `sig` is (n, >= bands*rows), uint32 or uint64 values < 2**32."""
    if bands * rows > sig.shape[1]:
        raise ValueError(f"{bands} bands x {rows} rows need {bands * rows} values, signatures have {sig.shape[1]}")
    n = sig.shape[0]
    out = np.empty((n, bands), np.uint64)
    if n == 0:
        return out
    k = numba_kernels("dataaudit.dedup._kernels", work=sig.nbytes)
    if k is not None:
        k.band_kernel(np.ascontiguousarray(sig), bands, rows, out)
        return out
    cols = np.ascontiguousarray(sig[:, :bands * rows].T).astype(np.uint64)
    with np.errstate(over="ignore"):
        for j in range(bands):
            h = np.full(n, mix(np.array([(j + 1)], np.uint64) * GOLD)[0], np.uint64)
            for t in range(rows):
                h = mix(h * GOLD + cols[j * rows + t])
            out[:, j] = h
    return out


def key_order(key: np.ndarray) -> np.ndarray:
    """The permutation that sorts `key`, equal keys in index order: `np.argsort(kind="stable")`'s, ~3x faster on
    hash keys, where few are equal (an unstable sort, then only the entries of runs of equal keys put in order)."""
    order = np.argsort(key)
    if len(key) < 2:
        return order
    sorted_keys = key[order]
    same = sorted_keys[1:] == sorted_keys[:-1]
    in_run = np.zeros(len(key), bool)
    in_run[1:] = same
    in_run[:-1] |= same
    at = np.flatnonzero(in_run)
    if at.size:            # a run's entries are contiguous and stay where they are: ordered by index inside
        run = np.cumsum(np.concatenate(([True], sorted_keys[at[1:]] != sorted_keys[at[:-1]])))
        n = np.int64(len(key))
        order[at] = np.sort(run * n + order[at]) % n        # (run, index) in one int64: run, index < 2**31
    return order


def runs(sorted_keys: np.ndarray) -> np.ndarray:
    """Start index of every run of equal values in a sorted array, plus len at the end."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(1, np.int64)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return np.concatenate(([0], change, [n])).astype(np.int64)


def star_edges(ids: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs ids[bounds[k]:bounds[k+1]]: edges (first member, other member) of every run of size >= 2."""
    sizes = np.diff(bounds)
    first = np.repeat(ids[bounds[:-1]], sizes)
    keep = np.ones(len(ids), bool)
    keep[bounds[:-1]] = False
    return first[keep], ids[keep]


def all_pair_edges(ids: np.ndarray, bounds: np.ndarray, max_run: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair within runs of size <= max_run, star edges for larger runs (vectorized)."""
    sizes = np.diff(bounds)
    big = sizes > max_run
    src_parts, dst_parts = [], []
    if big.any():
        # star edges of the big runs, vectorized over all of them
        starts, lens = bounds[:-1][big], sizes[big]
        member = np.repeat(starts, lens) + (np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens))
        center = np.repeat(starts, lens)
        nz = member != center
        src_parts.append(ids[center[nz]])
        dst_parts.append(ids[member[nz]])
    small = (~big) & (sizes >= 2)
    if small.any():
        starts, lens = bounds[:-1][small], sizes[small]
        # element at position p of a run of size s pairs with positions p+1..s-1
        pos_start = np.repeat(starts, lens)
        pos = pos_start + (np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens))
        run_end = np.repeat(starts + lens, lens)
        cnt = run_end - pos - 1
        src = np.repeat(pos, cnt)
        off = np.arange(cnt.sum()) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        dst = src + 1 + off
        src_parts.append(ids[src])
        dst_parts.append(ids[dst])
    if not src_parts:
        return np.zeros(0, ids.dtype), np.zeros(0, ids.dtype)
    return np.concatenate(src_parts), np.concatenate(dst_parts)
