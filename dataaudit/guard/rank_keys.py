"""Which samples a rank read this epoch, kept small enough to exchange every few steps: a bottom-k sketch (KMV).

Each sample's trace key (shard, key) is hashed to 63 bits (XXH3 of the key and of the shard, folded with the
splitmix64 finalizer; 63 so the values stay non-negative in an int64 tensor). A rank keeps
the k smallest distinct hashes it has seen this epoch. While a sketch holds fewer than k hashes it is the rank's
whole set, and every figure below is exact; past that they are KMV estimates (relative error about 1/sqrt(k)).

    overlap(a, b)   samples read by both ranks: the union's bottom-k, counted where both sketches hold the hash,
                    scaled by the union's estimated size
    union(sketches) distinct samples read by all ranks together (coverage = union / dataset size)

A few (shard, key) examples are kept for the hashes in the sketch (a dict updated only for hashes that enter it:
after the first k samples, about k/n of a batch), so an overlap names real samples.
"""
from __future__ import annotations

import functools

import numpy as np
import xxhash

from dataaudit.textops.hashing import GOLD, mix

_xxh = xxhash.xxh3_64_intdigest

HEADER = 8   # int64 slots before the hashes in an exchanged row (see KeySketch.row)
TOP = float(1 << 63)
PAD = -1     # an empty slot of a row


def trace_hashes(keys, shards) -> tuple[np.ndarray, np.ndarray]:
    """(int64 [n] 63-bit hash of each (shard, key), bool [n] whether the sample has a key). The keys arrive as a
    Python list (the collated batch's), so each is hashed by one C call (XXH3): building an Arrow array for the
    audit's vectorised id hash costs more than that at batch sizes (measured: 64 keys 25 us vs 275 us). Shards
    repeat: each distinct one is hashed once. The two are folded with the splitmix64 finalizer, vectorised."""
    n = len(keys)
    try:   # the common case: every key a str
        kh = np.fromiter(map(_xxh, map(str.encode, keys)), np.uint64, n)
        valid = np.ones(n, bool)
    except TypeError:   # None (no key) or another type (its text)
        valid = np.fromiter((k is not None for k in keys), bool, n)
        kh = np.fromiter((_xxh(str(k).encode()) if k is not None else 0 for k in keys), np.uint64, n)
    sh = np.fromiter(map(_shard_hash, shards), np.uint64, n) if shards is not None else np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        h = mix(mix(sh) * GOLD + kh)
    return (h >> np.uint64(1)).astype(np.int64), valid


@functools.lru_cache(maxsize=4096)
def _shard_hash(shard) -> int:
    return _xxh(str(shard).encode())


class KeySketch:
    """The bottom-k distinct hashes of the trace keys a rank read this epoch, with a few examples."""

    def __init__(self, k: int = 4096):
        self.k = int(k)
        self.reset()

    def reset(self) -> None:
        self.hashes = np.zeros(0, np.int64)   # sorted, distinct, at most k
        self.samples = 0                      # samples seen this epoch (with or without a key)
        self.keyless = 0                      # samples without a trace key (not in the sketch)
        self.saturated = False                # some distinct hash was dropped: figures are estimates
        self.examples: dict[int, str] = {}

    def add(self, keys, shards) -> None:
        """The samples of one batch (keys / shards: lists, None when the batch has no provenance)."""
        if keys is None:
            return
        n = len(keys)
        self.samples += n
        if not n:
            return
        h, valid = trace_hashes(keys, shards)
        self.keyless += int(n - np.count_nonzero(valid))
        idx = np.flatnonzero(valid)
        h = h[idx]
        cur = self.hashes
        if cur.size == self.k:   # full: only hashes below its k-th can enter; one above is a sample dropped
            top = cur[-1]
            if not self.saturated and (h > top).any():
                self.saturated = True
            keep = h < top
            h, idx = h[keep], idx[keep]
        if not h.size:
            return
        pos = np.searchsorted(cur, h)   # membership by binary search (np.isin sorts both sides)
        present = (pos < cur.size) & (cur[np.minimum(pos, max(cur.size - 1, 0))] == h) if cur.size else \
            np.zeros(h.size, bool)
        h, idx = h[~present], idx[~present]
        if not h.size:
            return
        h, first = np.unique(h, return_index=True)
        idx = idx[first]
        merged = np.sort(np.concatenate([cur, h]))
        if merged.size > self.k:
            merged = merged[:self.k]
            self.saturated = True
        self.hashes = merged
        tau = merged[-1]
        ex = self.examples
        for v, i in zip(h.tolist(), idx.tolist()):   # only hashes entering the sketch (few once it is full)
            if v <= tau:
                ex[v] = f"{shards[i]}:{keys[i]}" if shards is not None else str(keys[i])
        if len(ex) > 2 * self.k:   # forget examples of hashes the sketch dropped
            self.examples = {v: ex[v] for v in merged.tolist() if v in ex}

    def row(self, header) -> np.ndarray:
        """int64 [HEADER + k]: `header` (up to HEADER ints: what the ranks exchange with the sketch), then the
        sketch's fields (slot 5 count, slot 6 saturated, slot 7 samples), then the hashes padded with PAD."""
        out = np.full(HEADER + self.k, PAD, np.int64)
        out[:HEADER] = 0
        out[:len(header)] = header
        out[5], out[6], out[7] = self.hashes.size, int(self.saturated), self.samples
        out[HEADER:HEADER + self.hashes.size] = self.hashes
        return out


def from_row(row: np.ndarray) -> tuple[np.ndarray, bool]:
    """(sorted hashes, saturated) of an exchanged row."""
    n = int(row[5])
    return row[HEADER:HEADER + n], bool(row[6])


def distinct(hashes: np.ndarray, saturated: bool, k: int) -> float:
    """Distinct samples behind one sketch: exact when not saturated, else the KMV estimate (k - 1) / tau."""
    if not saturated:
        return float(hashes.size)
    return (k - 1) / ((float(hashes[-1]) + 1) / TOP)


def overlap(a: np.ndarray, sat_a: bool, b: np.ndarray, sat_b: bool, k: int) -> tuple[float, bool, np.ndarray]:
    """(samples in both sets, exact?, the shared hashes seen) from two sketches."""
    exact = not (sat_a or sat_b)
    both = np.intersect1d(a, b, assume_unique=True)
    if exact:
        return float(both.size), True, both
    u = np.union1d(a, b)[:k]      # below the union's k-th hash both sketches are complete
    shared = np.intersect1d(both, u, assume_unique=True)
    return shared.size / u.size * distinct(u, True, k), False, shared


def union(sketches, k: int) -> tuple[float, bool]:
    """(distinct samples read by all the sketches' ranks together, exact?)."""
    hs = [h for h, _ in sketches]
    sat = any(s for _, s in sketches)
    u = np.unique(np.concatenate(hs)) if hs else np.zeros(0, np.int64)
    if not sat and u.size <= k:
        return float(u.size), True
    return distinct(u[:k], True, k), False


__all__ = ["KeySketch", "trace_hashes", "from_row", "distinct", "overlap", "union", "HEADER", "PAD"]
