"""The one-pass word-shingle signature kernel gives the values of the separate steps (word tokens, n-gram fold,
MinHash), and sign_batch is the same with and without numba."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.dedup import DedupSpec, sign_batch, signatures_u32
from dataaudit.dedup.minhash import word_signatures
from dataaudit.textops import normalize, word_ngram_hashes
from fixtures.dedup_corpus import make_corpus

EDGE = ["", None, "a", "a b", "x\u00a0y\u3000z  w\u2028v", "日本語 の テキスト です ね 本当 に",
        " ".join(["w" * 300] * 3), "q " * 40, "  trailing and leading  ", "\t\n"]


@pytest.mark.parametrize("n,num_perm,seed,collapse", [(5, 128, 1, True), (1, 16, 3, True), (3, 64, 7, False),
                                                       (9, 32, 1, True)])
def test_word_signatures_equal_separate_steps(n, num_perm, seed, collapse):
    texts = pa.array(make_corpus(300, seed=2).texts + EDGE)
    norm = normalize(texts, collapse_ws=collapse)
    sh = word_ngram_hashes(norm, n)
    sig, count, _ = word_signatures(norm, n, num_perm, seed)
    assert np.array_equal(sig, signatures_u32(sh.hash, sh.offsets(), num_perm, seed))
    assert np.array_equal(count, sh.count)
    assert count[300:303].tolist() == [0, 0, 1] and (sig[300:302] == 2**32 - 1).all()    # "", None, "a"


def test_sign_batch_same_without_numba(monkeypatch):
    texts = pa.array(make_corpus(200, seed=4).texts + EDGE)
    fast = sign_batch(texts, DedupSpec(), with_shingles=True)
    monkeypatch.setenv("DATAAUDIT_NO_NUMBA", "1")
    assert word_signatures(normalize(texts), 5) is None
    slow = sign_batch(texts, DedupSpec(), with_shingles=True)
    assert list(fast) == list(slow) == ["count", "exact_hi", "exact_lo", "sig", "shingles"]
    for name in fast:
        assert fast[name].equals(slow[name]), name
