"""The ranks' key sketches (dataaudit.guard.rank_keys): the bottom-k of the distinct (shard, key) hashes, exact
while small, KMV estimates past k; the trace hashes name a sample by its shard and key."""
from __future__ import annotations

import numpy as np

from dataaudit.guard.rank_keys import HEADER, KeySketch, from_row, overlap, trace_hashes, union


def test_trace_hashes_by_shard_and_key():
    h, valid = trace_hashes(["1", 1, None, "1"], ["a", "a", "a", "b"])
    assert valid.tolist() == [True, True, False, True]
    assert h[0] == h[1]                 # a key is its text
    assert h[0] != h[3]                 # the same key in another shard is another sample
    assert (h[valid] >= 0).all() and h.dtype == np.int64
    again, _ = trace_hashes(["1"], ["a"])
    assert again[0] == h[0]             # the same in any batch or process


def test_sketch_is_the_bottom_k_of_the_distinct_hashes():
    rng = np.random.default_rng(0)
    for k in (16, 64):
        for _ in range(40):
            s, seen = KeySketch(k), set()
            for _ in range(rng.integers(1, 25)):
                keys = [str(x) for x in rng.integers(0, 150, rng.integers(1, 20))]
                shards = ["s"] * len(keys)
                s.add(keys, shards)
                h, v = trace_hashes(keys, shards)
                seen |= set(h[v].tolist())
            assert s.hashes.tolist() == sorted(seen)[:k]
            assert s.saturated == (len(seen) > k)
            assert all(h in s.examples for h in s.hashes.tolist())


def test_exact_while_small_and_the_row_round_trips():
    a, b = KeySketch(64), KeySketch(64)
    a.add([str(i) for i in range(10)] + [None], ["s"] * 11)
    b.add([str(i) for i in range(6, 20)], ["s"] * 14)
    assert (a.samples, a.keyless, a.hashes.size, a.saturated) == (11, 1, 10, False)
    n, exact, shared = overlap(a.hashes, False, b.hashes, False, 64)
    assert (n, exact, sorted(a.examples[h] for h in shared.tolist())) == (4.0, True, ["s:6", "s:7", "s:8", "s:9"])
    assert union([(a.hashes, False), (b.hashes, False)], 64) == (20.0, True)
    row = a.row([3, 7])
    assert row.shape == (HEADER + 64,) and row[:2].tolist() == [3, 7] and row[7] == 11
    h, sat = from_row(row)
    assert h.tolist() == a.hashes.tolist() and sat is False


def test_estimates_past_k_are_unbiased():
    """Past k the figures are KMV estimates (relative error ~ 1/sqrt(J k) for an overlap of Jaccard J, 1/sqrt(k) for
    a union): their mean over 8 independent key sets is within 5% of the truth."""
    k, overlaps, unions = 1024, [], []
    for t in range(8):
        a, b = KeySketch(k), KeySketch(k)
        a.add([f"{t}-{i}" for i in range(0, 20000)], None)
        b.add([f"{t}-{i}" for i in range(10000, 30000)], None)
        assert a.saturated and b.saturated
        n, exact, _ = overlap(a.hashes, True, b.hashes, True, k)
        u, u_exact = union([(a.hashes, True), (b.hashes, True)], k)
        assert not exact and not u_exact
        overlaps.append(n / 10000)
        unions.append(u / 30000)
    assert abs(np.mean(overlaps) - 1) < 0.05 and abs(np.mean(unions) - 1) < 0.05
