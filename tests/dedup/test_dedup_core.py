"""dataaudit.dedup core: signatures equal datasketch's, LSH parameters and candidates equal datasketch's,
exact hashes, Jaccard verification, connected components."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import xxhash

datasketch = pytest.importorskip("datasketch", reason="datasketch is the optional extra dataaudit[datasketch]")
_optimal_param = pytest.importorskip("datasketch.lsh")._optimal_param

from dataaudit.dedup import (MAX_HASH, band_hashes, cluster_table, components, exact_hashes, jaccard_pairs,
                             minhash_signatures, optimal_params, permutations, signatures_torch, signatures_u32,
                             star_edges, unique_edges)
from dataaudit.dedup.lsh import all_pair_edges, runs
from dataaudit.textops import (char_ngram_hash_of, char_ngram_hashes, ngram_hash_of, normalize,
                               word_ngram_hashes)
from dataaudit.textops.hashing import numba_kernels

DOCS = ["The quick brown fox jumps over the lazy dog and runs far away into the woods",
        "the quick brown fox jumps over the lazy dog and walks far away into the woods",
        "one", "", None, "two words", "a b c d e", "日本語 の テキスト です ね 本当 に",
        "x " * 40]


def _shingles(text, n, char=False):
    if char:
        if not text:
            return []
        return [text] if len(text) < n else [text[i:i + n] for i in range(len(text) - n + 1)]
    w = (text or "").split()
    if not w:
        return []
    return [" ".join(w)] if len(w) < n else [" ".join(w[i:i + n]) for i in range(len(w) - n + 1)]


@pytest.mark.parametrize("char,n,num_perm,seed", [(False, 5, 128, 1), (False, 2, 64, 7), (True, 5, 128, 1),
                                                 (True, 3, 16, 42)])
def test_signatures_equal_datasketch_legacy(char, n, num_perm, seed):
    norm = normalize(pa.array(DOCS))
    hashes = (char_ngram_hashes if char else word_ngram_hashes)(norm, n)
    hashfunc = char_ngram_hash_of if char else ngram_hash_of
    sig = minhash_signatures(hashes, len(DOCS), num_perm=num_perm, seed=seed)
    assert sig.dtype == np.uint64 and sig.shape == (len(DOCS), num_perm)
    for i, text in enumerate(norm.to_pylist()):
        m = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=hashfunc, scheme="legacy")
        m.update_batch(_shingles(text, n, char))
        assert np.array_equal(sig[i], m.hashvalues), i
    # documents without shingles: datasketch's empty MinHash, all 2**32 - 1
    assert (sig[3] == MAX_HASH).all() and (sig[4] == MAX_HASH).all()


def test_backends_agree(monkeypatch):
    torch = pytest.importorskip("torch")
    pytest.importorskip("numba")
    monkeypatch.delenv("DATAAUDIT_NO_NUMBA", raising=False)
    rng = np.random.default_rng(3)
    h = rng.integers(0, 2**64 - 1, 5000, dtype=np.uint64, endpoint=True)
    counts = rng.integers(0, 60, 150)
    h = h[:counts.sum()]
    offsets = np.concatenate(([0], np.cumsum(counts)))
    a = signatures_u32(h, offsets, 64, 5, use="numba")
    b = signatures_u32(h, offsets, 64, 5, use="numpy")
    assert np.array_equal(a, b)
    doc = np.repeat(np.arange(len(counts)), counts)
    t = signatures_torch(torch.from_numpy(h.view(np.int64)), torch.from_numpy(doc), len(counts), 64, 5, block=777)
    assert np.array_equal(t.numpy().astype(np.uint32), a)
    assert (a[counts == 0] == MAX_HASH).all()


def test_permutations_are_datasketchs():
    a, b = permutations(32, 11)
    m = datasketch.MinHash(num_perm=32, seed=11, scheme="legacy")
    assert np.array_equal(a, m.permutations[0]) and np.array_equal(b, m.permutations[1])


@pytest.mark.parametrize("threshold,num_perm", [(0.8, 128), (0.5, 128), (0.9, 64), (0.3, 32)])
def test_optimal_params_equal_datasketch(threshold, num_perm):
    assert optimal_params(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)
    assert optimal_params(0.8, 128) == (9, 13)


def test_band_hashes_numpy_equals_numba(monkeypatch):
    rng = np.random.default_rng(0)
    sig = rng.integers(0, 2**32, (300, 128), dtype=np.uint64).astype(np.uint32)
    fast = band_hashes(sig, 9, 13)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = band_hashes(sig, 9, 13)
    assert np.array_equal(fast, slow)
    # equal bands give equal hashes only within the same band number
    sig2 = sig.copy()
    sig2[1, :13] = sig[0, :13]
    bh = band_hashes(sig2, 9, 13)
    assert bh[0, 0] == bh[1, 0] and bh[0, 1] != bh[1, 1]
    same_values = np.tile(sig[0, :13], 9)[None, :].astype(np.uint32)
    row = band_hashes(same_values, 9, 13)[0]
    assert len(set(row.tolist())) == 9


def test_candidates_equal_datasketch_minhashlsh():
    """Every document's LSH candidates (documents sharing a band) equal MinHashLSH.query's on the same
    signatures, at the same threshold."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2**32, (40, 128), dtype=np.uint64)
    sig = np.concatenate([base, base[:20]])            # 20 near copies: a fraction of values changed
    for i in range(40, 60):
        k = rng.integers(0, 128, size=int(rng.integers(5, 90)))
        sig[i, k] = rng.integers(0, 2**32, size=len(k), dtype=np.uint64)
    threshold = 0.6
    b, r = optimal_params(threshold, 128)
    bh = band_hashes(sig, b, r)
    ours = [set() for _ in range(len(sig))]
    for j in range(b):
        for i in range(len(sig)):
            for k in np.flatnonzero(bh[:, j] == bh[i, j]).tolist():
                if k != i:
                    ours[i].add(k)
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
    assert (lsh.b, lsh.r) == (b, r)
    mh = [datasketch.MinHash(hashvalues=s, scheme="legacy") for s in sig]
    for i, m in enumerate(mh):
        lsh.insert(i, m)
    theirs = [set(lsh.query(m)) - {i} for i, m in enumerate(mh)]
    assert ours == theirs
    assert sum(map(len, ours)) > 20                     # the test has candidates to compare


def test_runs_and_edges():
    keys = np.array([1, 1, 1, 2, 3, 3], np.uint64)
    ids = np.array([10, 11, 12, 13, 14, 15])
    bounds = runs(keys)
    assert bounds.tolist() == [0, 3, 4, 6]
    s, d = star_edges(ids, bounds)
    assert s.tolist() == [10, 10, 14] and d.tolist() == [11, 12, 15]
    s, d = all_pair_edges(ids, bounds, 8)
    assert sorted(zip(s.tolist(), d.tolist())) == [(10, 11), (10, 12), (11, 12), (14, 15)]
    s, d = all_pair_edges(ids, bounds, 2)
    assert sorted(zip(s.tolist(), d.tolist())) == [(10, 11), (10, 12), (14, 15)]
    s, d = unique_edges(np.array([3, 1, 1, 2, 5]), np.array([1, 3, 1, 4, 2]))
    assert list(zip(s.tolist(), d.tolist())) == [(1, 3), (2, 4), (2, 5)]


def test_exact_hashes():
    arr = pa.array(["abc", None, "", "abc", "ABC"])
    hi, lo = exact_hashes(arr)
    d = xxhash.xxh3_128_intdigest(b"abc")
    assert (int(hi[0]), int(lo[0])) == (d >> 64, d & (2**64 - 1))
    assert hi[0] == hi[3] and lo[0] == lo[3] and (hi[0], lo[0]) != (hi[4], lo[4])
    e = xxhash.xxh3_128_intdigest(b"")
    assert (int(hi[1]), int(lo[1])) == (int(hi[2]), int(lo[2])) == (e >> 64, e & (2**64 - 1))
    hs, ls = exact_hashes(arr.slice(3, 2))
    assert hs[0] == hi[0] and ls[0] == lo[0]


def test_jaccard_pairs_exact():
    sets = [np.array([1, 2, 3, 4], np.uint64), np.array([2, 3, 4, 5, 6], np.uint64), np.array([], np.uint64),
            np.array([9], np.uint64)]
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in sets])))
    values = np.concatenate(sets)
    j = jaccard_pairs(values, offsets, np.array([0, 0, 2, 3, 1]), np.array([1, 0, 2, 0, 0]), chunk_elems=4)
    assert j.tolist() == [3 / 6, 1.0, 0.0, 0.0, 3 / 6]
    k = numba_kernels("dataaudit.dedup._kernels")
    if k is not None:                           # the kernel (one merge per pair): the same values
        out = np.empty(5)
        k.jaccard_kernel(values, offsets.astype(np.int64), np.array([0, 0, 2, 3, 1]), np.array([1, 0, 2, 0, 0]), out)
        assert out.tolist() == [3 / 6, 1.0, 0.0, 0.0, 3 / 6]


def test_jaccard_kernel_equals_twin(monkeypatch):
    # random sorted sets of 0-300 hashes (the full uint64 range: the merge compares unsigned), random pairs
    rng = np.random.default_rng(4)
    pool = rng.integers(0, 2**64, 500, dtype=np.uint64)
    sets = [np.unique(rng.choice(pool, rng.integers(0, 300))) for _ in range(200)]
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in sets]))).astype(np.int64)
    values = np.concatenate(sets)
    a, b = rng.integers(0, 200, 3000), rng.integers(0, 200, 3000)
    fast = jaccard_pairs(values, offsets, a, b)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    slow = jaccard_pairs(values, offsets, a, b, chunk_elems=5000)
    np.testing.assert_array_equal(fast, slow)
    want = [len(np.intersect1d(sets[i], sets[j])) / max(len(np.union1d(sets[i], sets[j])), 1) for i, j in zip(a, b)]
    np.testing.assert_array_equal(slow, want)
    assert 0 < (fast > 0).mean() < 1 and (fast == 1).any()


def test_components_and_representatives():
    src = np.array([10, 30, 31, 5])
    dst = np.array([11, 31, 32, 11])
    nodes, labels = components(src, dst)
    assert nodes.tolist() == [5, 10, 11, 30, 31, 32]
    assert labels.tolist() == [0, 0, 0, 1, 1, 1]
    ct = cluster_table(src, dst)
    assert ct["is_representative"].tolist() == [True, False, False, True, False, False]
    assert ct["size"].tolist() == [3, 3, 3, 3, 3, 3]
    empty = cluster_table(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(empty["gid"]) == 0
