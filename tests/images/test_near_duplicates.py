"""dataaudit.images.near: the components of near_duplicate_edges equal those of the all-pairs Hamming graph
(brute force here), on random hashes with planted clusters, for the band plans the cost model picks and for
forced ones."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from dataaudit.images import near
from dataaudit.images.near import flip_masks, near_duplicate_edges, near_duplicate_groups, plan
from dataaudit.images.phash import hamming


def brute_groups(h: np.ndarray, k: int) -> np.ndarray:
    """Smallest index of each hash's component in the all-pairs graph."""
    n = len(h)
    close = hamming(h[:, None], h[None, :]) <= k
    i, j = np.nonzero(np.triu(close, 1))
    _, labels = connected_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    smallest = np.full(labels.max() + 1, n)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def groups_of_edges(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    _, labels = connected_components(coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)), directed=False)
    smallest = np.full(labels.max() + 1, n)
    np.minimum.at(smallest, labels, np.arange(n))
    return smallest[labels]


def planted(seed: int, n: int) -> np.ndarray:
    """Random hashes; a third are copies of another with 0-10 bits flipped (chains form too), a tenth are 0."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 2**64, n, dtype=np.uint64)
    copies = rng.choice(n, n // 3, replace=False)
    origins = rng.integers(0, n, len(copies))
    bits = rng.integers(0, 64, (len(copies), 10)).astype(np.uint64)
    on = rng.random((len(copies), 10)) < rng.random((len(copies), 1))
    mask = np.bitwise_or.reduce(np.where(on, np.uint64(1) << bits, np.uint64(0)), axis=1)
    h[copies] = h[origins] ^ mask
    h[rng.choice(n, n // 10, replace=False)] = 0
    return h


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [0, 1, 5, 8, 12])
@pytest.mark.parametrize("n", [2, 40, 700, 2500])
def test_components_equal_brute_force(seed, k, n):
    h = planted(seed, n)
    src, dst = near_duplicate_edges(h, k)
    assert src.dtype == np.int64 and dst.dtype == np.int64
    assert (src < dst).all() and len(src) <= n - 1
    assert (hamming(h[src], h[dst]) <= k).all()          # every edge is a true one
    want = brute_groups(h, k)
    assert groups_of_edges(n, src, dst).tolist() == want.tolist()
    assert near_duplicate_groups(h, k).tolist() == want.tolist()


@pytest.mark.parametrize("bands", [(3, 21, None), (4, 16, None), (2, 12, None), (7, 9, None), (13, 4, None)])
@pytest.mark.parametrize("k", [1, 5, 8, 12])
def test_forced_band_plans(monkeypatch, bands, k):
    """Whatever the bands (narrow, wide, fewer bits than 64), the pigeonhole radii give exact components."""
    m, w, _ = bands
    q, rem = divmod(k + 1, m)
    radii = [q - 1 + (t >= m - rem) for t in range(m)]
    monkeypatch.setattr(near, "plan", lambda u, kk: (m, w, radii))
    for seed in (5, 6):
        h = planted(seed, 1500)
        src, dst = near_duplicate_edges(h, k)
        assert (src < dst).all()
        assert groups_of_edges(len(h), src, dst).tolist() == brute_groups(h, k).tolist()


def test_plan_bands_for_a_million():
    m, w, radii = plan(1_000_000, 8)
    assert m * w <= 64 and sum(r + 1 for r in radii) == 9
    assert plan(10, 8) is None                          # all pairs is cheaper


def test_identical_hashes_stay_linear():
    """200,000 blank images (hash 0) and 200 others: 199,999 star edges, no pair of zeros compared."""
    h = np.zeros(200_200, np.uint64)
    others = np.random.default_rng(1).integers(0, 2**64, 200, dtype=np.uint64)
    assert (hamming(others, 0) > 8).all() and (hamming(others[:, None], others[None, :]) + 64 * np.eye(200) > 8).all()
    h[1::1001] = others                                  # index 1, 1002, ...
    src, dst = near_duplicate_edges(h, 8)
    assert len(src) == 200_000 - 1
    assert (h[src] == 0).all() and (src == 0).all()      # the star of the zeros, centred on the first
    g = near_duplicate_groups(h, 8)
    assert (g[h == 0] == 0).all() and g[1] == 1 and g[1002] == 1002 and len(np.unique(g)) == 201


def test_small_and_empty():
    for k in (0, 8):
        s, d = near_duplicate_edges(np.zeros(0, np.uint64), k)
        assert s.dtype == np.int64 and len(s) == 0 and len(d) == 0
        assert near_duplicate_groups(np.zeros(0, np.uint64), k).tolist() == []
        assert near_duplicate_groups(np.array([7], np.uint64), k).tolist() == [0]
        assert len(near_duplicate_edges(np.array([7], np.uint64), k)[0]) == 0
    h = np.array([5, 1, 5, 0xFFFF, 1], np.uint64)
    assert near_duplicate_groups(h, 0).tolist() == [0, 1, 0, 3, 1]
    assert near_duplicate_groups(h, 1).tolist() == [0, 0, 0, 3, 0]      # 0b101 is 1 bit from 0b001
    assert near_duplicate_groups(h, 13).tolist() == [0, 0, 0, 3, 0]     # 0xFFFF is 14 bits from 0b101
    assert near_duplicate_groups(h, 14).tolist() == [0, 0, 0, 0, 0]


@pytest.mark.parametrize("bad", [-1, 33, 2.0, "3", None, True])
def test_invalid_max_distance(bad):
    with pytest.raises(ValueError, match="max_distance"):
        near_duplicate_edges(np.zeros(3, np.uint64), bad)
    with pytest.raises(ValueError, match="max_distance"):
        near_duplicate_groups(np.zeros(3, np.uint64), bad)


def test_flip_masks():
    for w, r in [(16, 0), (16, 1), (14, 2), (10, 4)]:
        f = flip_masks(w, r)
        want = sum(1 for x in range(1, 1 << w) if bin(x).count("1") <= r)
        assert len(f) == want == len(np.unique(f))
        assert len(f) == 0 or (f < (1 << w)).all()
