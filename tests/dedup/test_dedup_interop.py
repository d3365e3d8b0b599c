"""to_datasketch: our signatures as datasketch sketches, usable in a datasketch MinHashLSH index."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit.dedup import DedupSpec, band_hashes, optimal_params, sign_batch, to_datasketch
from dataaudit.dedup.clusters import unique_edges
from dataaudit.dedup.lsh import all_pair_edges, runs
from dataaudit.dedup.signature_columns import signature_matrix
from dataaudit.textops import ngram_hash_of
from fixtures.dedup_corpus import make_corpus

datasketch = pytest.importorskip("datasketch")

# make_corpus(30, seed=3, ...) below plants the groups {0, 8, 13}, {1, 2, 6, 12, 22}, {10, 26}, {14, 15, 18}
# (copies with 1-3% of their words edited): these pairs of them share an LSH band at threshold 0.8 (every
# (original, copy) pair among them), and no pair of unrelated documents does.
EXPECTED_PAIRS = [(0, 8), (0, 13), (1, 2), (1, 6), (1, 12), (1, 22), (2, 6), (2, 22), (6, 12), (6, 22), (8, 13),
                  (10, 26), (12, 22), (14, 15), (14, 18), (15, 18)]


def _signatures(texts):
    cols = sign_batch(pa.array(texts), DedupSpec(threshold=0.8))
    return signature_matrix(cols["sig"])


def test_exported_signatures_find_our_pairs_in_datasketch_lsh():
    c = make_corpus(30, seed=3, exact_frac=0.1, near_frac=0.2, empty_docs=0, one_word_docs=0, edit=(0.01, 0.03))
    planted = {(min(a, b), max(a, b)) for g in c.planted_groups().values() for a in g for b in g if a != b}
    assert set(EXPECTED_PAIRS) <= planted
    assert {(min(i, o), max(i, o)) for i, o in enumerate(c.origin.tolist()) if o >= 0} <= set(EXPECTED_PAIRS)
    sig = _signatures(c.texts)
    bands, rows = optimal_params(0.8, 128)
    keys = band_hashes(sig, bands, rows).reshape(-1)
    gid = np.repeat(np.arange(len(sig)), bands)
    order = np.argsort(keys, kind="stable")
    src, dst = unique_edges(*all_pair_edges(gid[order], runs(keys[order]), 1 << 20))
    assert list(zip(src.tolist(), dst.tolist())) == EXPECTED_PAIRS

    lsh = datasketch.MinHashLSH(threshold=0.8, num_perm=128)
    sketches = to_datasketch(sig, seed=1)
    assert all(isinstance(m, datasketch.LeanMinHash) for m in sketches)
    for i, m in enumerate(sketches):
        lsh.insert(f"doc-{i}", m)
    found = sorted({(min(i, int(k[4:])), max(i, int(k[4:]))) for i, m in enumerate(sketches)
                    for k in lsh.query(m) if k != f"doc-{i}"})
    assert found == EXPECTED_PAIRS


def test_exported_minhash_equals_datasketch_on_our_shingle_hash():
    text = "The quick brown fox jumps over the lazy dog and runs far away"
    [m] = to_datasketch(_signatures([text]), seed=1, lean=False)
    words = text.lower().split()
    theirs = datasketch.MinHash(num_perm=128, seed=1, hashfunc=ngram_hash_of, scheme="legacy")
    theirs.update_batch([" ".join(words[i:i + 5]) for i in range(len(words) - 4)])
    assert np.array_equal(m.hashvalues, theirs.hashvalues)
    assert m.jaccard(theirs) == 1.0
    m.update("a new shingle of five")             # still a MinHash: updatable with our shingle hash
    assert m.jaccard(theirs) < 1.0


def test_bad_signatures_are_refused():
    with pytest.raises(ValueError, match="documents, num_perm"):
        to_datasketch(np.zeros(128, np.uint32))
    with pytest.raises(ValueError, match="< 2\\*\\*32"):
        to_datasketch(np.full((1, 8), 1 << 40, np.uint64))
    with pytest.raises(ValueError, match="'word' or 'char'"):
        to_datasketch(np.zeros((1, 8), np.uint32), shingles="bytes")
