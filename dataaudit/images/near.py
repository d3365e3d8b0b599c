"""Near-duplicate search over 64-bit perceptual hashes without comparing all pairs.

The graph "i ~ j iff hamming(h_i, h_j) <= max_distance" is never built: `near_duplicate_edges` returns a
spanning forest of it (at most N-1 edges), whose connected components are exactly the graph's.

1. Identical hashes are collapsed first (a star to the first occurrence), so a million blank images cost one
   unique hash, not a million squared comparisons.
2. Multi-index hashing over the unique hashes: m disjoint bands of w bits. With band radii r_t such that
   sum(r_t + 1) = k + 1, two hashes within distance k differ by at most r_t bits in some band t (pigeonhole;
   it holds on any subset of the bits, so m*w may be under 64). Per band the hashes are bucketed by band value
   (counting sort); each bucket probes the buckets of every band value within r_t of its own and verifies the
   candidates with the full popcount. Band t takes bits t, t+m, t+2m, ...: pHash
   bits are row-major DCT coefficients, so every band mixes low and high frequencies (the first bit, the DC
   term, is nearly always 1 and would make a contiguous first band lopsided).
3. A union-find inside the kernels keeps only the pairs that join two components: the output stays linear
   even when a cluster holds thousands of mutually close hashes.
m and w come from a cost model fitted on the kernels (`plan`); for few hashes or large distances plain
all-pairs is cheaper and is used instead. At 1M hashes and distance 8 it picks 4 bands of 16 bits (radii
1, 1, 1, 2) rather than 3 of ~log2(1M) = 21: those probe 700+ buckets per hash in a 16 MiB table that misses
the cache, and measured about twice as slow.
"""
from __future__ import annotations

import math
import operator

import numba
import numpy as np

from dataaudit.textops.swar import popcount

MAX_DISTANCE = 32
_MAX_WIDTH = 24          # a band of w bits has a 2**w bucket table (int64): 128 MiB at 24


@numba.njit(inline="always", cache=True)
def _find(parent, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]      # path halving
        x = parent[x]
    return x


@numba.njit(cache=True, nogil=True, boundscheck=False)
def _union(i, j, parent, src, dst, n):
    """Record the edge i-j if it joins two components; -> edge count. Rarely called, and kept out of line:
    inlined into the scan loops it slows them about 15x."""
    ri = _find(parent, i)
    rj = _find(parent, j)
    if ri != rj:
        if ri < rj:
            parent[rj] = ri
        else:
            parent[ri] = rj
        src[n] = i
        dst[n] = j
        n += 1
    return n


@numba.njit(cache=True, nogil=True, boundscheck=False)
def bucket_kernel(hs, band, m, w, starts, keys, sorted_hs, ids):
    """Band `band` of every hash (its bits band, band+m, ..., w of them), then a counting sort by it:
    starts[v]:starts[v+1] are the positions of band value v in keys/sorted_hs/ids."""
    u = hs.shape[0]
    vals = np.empty(u, np.int64)
    for i in range(u):
        h = hs[i]
        v = 0
        for j in range(w):
            v |= np.int64((h >> np.uint64(band + m * j)) & np.uint64(1)) << j
        vals[i] = v
        starts[v + 1] += 1
    for v in range(1, starts.shape[0]):
        starts[v] += starts[v - 1]
    fill = starts[:-1].copy()
    for i in range(u):
        v = vals[i]
        pos = fill[v]
        fill[v] = pos + 1
        keys[pos] = v
        sorted_hs[pos] = hs[i]
        ids[pos] = i


@numba.njit(cache=True, nogil=True, boundscheck=False)
def band_kernel(keys, hs, ids, starts, flips, k, parent, src, dst, n):
    """One band. keys/hs/ids: band value, hash and unique index of every hash, sorted by band value;
    starts[v]:starts[v+1] the positions with band value v; flips: the nonzero masks within the band radius.
    Probes go bucket by bucket (not hash by hash: a bucket of 15 hashes probes its neighbours once), and each
    pair of buckets once, from the smaller band value."""
    u = keys.shape[0]
    p = 0
    while p < u:
        v = keys[p]
        end = starts[v + 1]
        for x in range(p, end):
            a = hs[x]
            for q in range(x + 1, end):
                if popcount(a ^ hs[q]) <= k:
                    n = _union(ids[x], ids[q], parent, src, dst, n)
        for f in range(flips.shape[0]):
            key = v ^ flips[f]
            if key < v:
                continue
            lo = starts[key]
            hi = starts[key + 1]
            for x in range(p, end):
                a = hs[x]
                for q in range(lo, hi):
                    if popcount(a ^ hs[q]) <= k:
                        n = _union(ids[x], ids[q], parent, src, dst, n)
        p = end
    return n


@numba.njit(cache=True, nogil=True, boundscheck=False)
def all_pairs_kernel(hs, k, parent, src, dst, n):
    """Every pair (for few hashes, or distances so large that bands would probe everything anyway)."""
    u = hs.shape[0]
    for i in range(u):
        a = hs[i]
        for j in range(i + 1, u):
            if popcount(a ^ hs[j]) <= k:
                n = _union(i, j, parent, src, dst, n)
    return n


def check_distance(max_distance) -> int:
    """max_distance as an int in 0..32, else ValueError."""
    try:
        k = operator.index(max_distance)
    except TypeError:
        raise ValueError(f"max_distance must be an integer in 0..{MAX_DISTANCE}, got {max_distance!r}") from None
    if isinstance(max_distance, bool) or not 0 <= k <= MAX_DISTANCE:
        raise ValueError(f"max_distance must be an integer in 0..{MAX_DISTANCE}, got {max_distance!r}")
    return k


def _ball(width: int, radius: int) -> int:
    """Band values within `radius` bits of one value of `width` bits."""
    return sum(math.comb(width, i) for i in range(radius + 1))


def plan(unique: int, k: int) -> tuple[int, int, list[int]] | None:
    """(m bands, w bits each, radius of each band) of least expected cost for `unique` random hashes at
    distance k; None when comparing all pairs is cheaper. Radii r_t sum(r_t + 1) = k + 1, the larger ones
    last; a band with radius -1 is not needed. Costs in ~ns measured on the kernels: 1 per candidate
    compared, 5 per probe (bucket x flip), 6 per (hash, non-empty probed bucket), plus sort and table."""
    u = unique
    best, best_cost = None, 1.0 * u * (u - 1) / 2
    for m in range(1, k + 2):
        q, rem = divmod(k + 1, m)
        radii = [q - 1 + (t >= m - rem) for t in range(m)]
        for w in range(1, min(_MAX_WIDTH, 64 // m) + 1):
            load = u / 2 ** w                                # hashes per bucket
            full = -math.expm1(-load)                        # share of buckets that are not empty
            cost = 0.0
            for r in radii:
                if r >= 0:
                    ball = _ball(w, r)
                    cost += (5 * 2 ** w * full * ball + (6 * full + load) * u * ball / 2
                             + 30 * u + 2 * 2 ** w)
            if cost < best_cost:
                best, best_cost = (m, w, radii), cost
    return best


def flip_masks(width: int, radius: int) -> np.ndarray:
    """Every mask of 1..radius set bits among `width` bits (uint32), built level by level, vectorized."""
    level = (np.uint32(1) << np.arange(width, dtype=np.uint32))
    top = np.arange(width)                                  # highest set bit of each mask of the level
    out = [level] if radius >= 1 else []
    for _ in range(2, radius + 1):
        more = width - 1 - top                              # a mask grows by any bit above its top bit
        base = np.repeat(level, more)
        start = np.repeat(top + 1, more)
        top = start + (np.arange(more.sum()) - np.repeat(np.cumsum(more) - more, more))
        level = base | (np.uint32(1) << top.astype(np.uint32))
        out.append(level)
    return np.concatenate(out) if out else np.zeros(0, np.uint32)


def _unique_edges(uniq: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Spanning-forest edges (indices into uniq) of the distance-<=k graph of distinct hashes."""
    u = len(uniq)
    parent = np.arange(u, dtype=np.int64)
    src = np.empty(max(u - 1, 0), np.int64)
    dst = np.empty_like(src)
    n = 0
    bands = plan(u, k)
    if bands is None:
        n = all_pairs_kernel(uniq, np.uint64(k), parent, src, dst, n)
        return src[:n], dst[:n]
    m, w, radii = bands
    keys, hs, ids = np.empty(u, np.int64), np.empty(u, np.uint64), np.empty(u, np.int64)
    for band, radius in enumerate(radii):
        if radius < 0:
            continue
        starts = np.zeros((1 << w) + 1, np.int64)
        bucket_kernel(uniq, band, m, w, starts, keys, hs, ids)
        n = band_kernel(keys, hs, ids, starts, flip_masks(w, radius).astype(np.int64), np.uint64(k),
                        parent, src, dst, n)
        if n == u - 1:                                      # one component already: nothing left to join
            break
    return src[:n], dst[:n]


def near_duplicate_edges(hashes: np.ndarray, max_distance: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges (src, dst), int64, src < dst, whose connected components are exactly those of "hamming(h_i, h_j)
    <= max_distance" over all pairs of `hashes` (uint64, 1-D). At most N-1 edges; max_distance 0 = equal."""
    k = check_distance(max_distance)
    h = np.asarray(hashes)
    if h.ndim != 1 or not (h.dtype.kind in "ui" or h.size == 0):
        raise ValueError(f"hashes must be a 1-D array of uint64, got {h.dtype} with shape {h.shape}")
    h = h.astype(np.uint64, copy=False)
    if len(h) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    uniq, first, inv = np.unique(h, return_index=True, return_inverse=True)
    first = first.astype(np.int64)
    rep = first[inv]
    copy = np.flatnonzero(rep != np.arange(len(h)))
    src, dst = [rep[copy]], [copy.astype(np.int64)]          # identical hashes: star to the first occurrence
    if k > 0 and len(uniq) > 1:
        a, b = _unique_edges(uniq, k)
        a, b = first[a], first[b]
        src.append(np.minimum(a, b))
        dst.append(np.maximum(a, b))
    return np.concatenate(src), np.concatenate(dst)


def near_duplicate_groups(hashes: np.ndarray, max_distance: int) -> np.ndarray:
    """Group id per hash (int64): the smallest index of its connected component (its own index if alone)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    src, dst = near_duplicate_edges(hashes, max_distance)
    n = len(np.asarray(hashes))
    graph = coo_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=False)
    # np.unique's first occurrence of each label is its component's smallest index
    _, first = np.unique(labels, return_index=True)
    return first[labels].astype(np.int64)
