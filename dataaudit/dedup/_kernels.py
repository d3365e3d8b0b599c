"""numba kernels (imported only when numba is installed; every kernel has a numpy twin giving equal values).

`word_minhash` is the signature stage's whole per-document work for word shingles in one pass over the Arrow
string buffer: words (hashed as `textops.word_tokens` does), n-grams (folded as `textops.fold_ngrams` does) and
their MinHash, with no flat array of shingles in between; tests check it against the separate kernels.
"""
from __future__ import annotations

import numba
import numpy as np

from dataaudit.textops.hashing import GOLD
from dataaudit.textops.words import mix, word_hashes

_P = np.uint64((1 << 61) - 1)
_M32 = np.uint64(0xFFFFFFFF)
_S61 = np.uint64(61)
_ONE = np.uint64(1)


@numba.njit(inline="always")
def _sign_into(h, start, stop, a, b, row, out, d):
    """out[d] = the MinHash of shingle hashes h[start:stop] (row: scratch of len(a))."""
    K = a.shape[0]
    for k in range(K):
        row[k] = _M32
    for i in range(start, stop):
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
def minhash_kernel(h, offsets, a, b, out):
    """out[d, k] = min over shingles i of doc d of ((a[k]*h[i] + b[k]) mod 2**64 mod (2**61-1)) & (2**32-1)."""
    nd = offsets.shape[0] - 1
    row = np.empty(a.shape[0], np.uint64)
    for d in range(nd):
        _sign_into(h, offsets[d], offsets[d + 1], a, b, row, out, d)


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def _words(data, i, end, cls, pows, poly, tok, no_doc):
    """`word_hashes` of the text data[i:end] into tok; returns their number. A kernel of its own, without numba's
    reference counting: inlined into `word_minhash`, which has it, each `multibyte_ws` increfs and decrefs the
    arrays with atomic calls (~30% of its time on mixed text with 4 permutations)."""
    return word_hashes(data, i, end, cls, pows, poly, tok, no_doc, 0, 0)


@numba.njit(cache=True, nogil=True, boundscheck=False)
def word_minhash(data, off, cls, pows, poly, n, a, b, out, count, sets, set_ends):
    """out[d] = MinHash of the word n-grams of document d (bytes data[off[d]:off[d+1]]), count[d] = how many
    n-grams (a document of 1..n-1 words has one of all its words, an empty one none and 2**32-1 everywhere).
    When `sets` is not empty (capacity: a value per word), it gets each document's sorted unique n-gram
    hashes, document d's ending at set_ends[d] (the shingle sets that exact verification compares)."""
    nd = off.shape[0] - 1
    most = 0
    for d in range(nd):
        if off[d + 1] - off[d] > most:
            most = off[d + 1] - off[d]
    tok = np.empty(most // 2 + 1, np.uint64)           # a word takes a byte and a separator (or the end)
    gram = np.empty(most // 2 + 1, np.uint64)
    row = np.empty(a.shape[0], np.uint64)
    no_doc = np.empty(0, np.int64)
    keep_sets = sets.shape[0] > 0
    s = 0
    for d in range(nd):
        c = _words(data, off[d], off[d + 1], cls, pows, poly, tok, no_doc)   # the words: textops' word_tokens
        width = n if c >= n else c                     # the n-grams: textops' fold_ngrams, level by level
        for j in range(c):
            gram[j] = tok[j]
        for k in range(2, width + 1):
            for j in range(c - k + 1):
                gram[j] = mix(gram[j] * GOLD + tok[j + k - 1])
        count[d] = c - width + 1 if c else 0
        _sign_into(gram, 0, count[d], a, b, row, out, d)
        if keep_sets:
            g = gram[:count[d]]                         # scratch, already signed: sorted in place
            g.sort()
            for j in range(g.shape[0]):
                if j == 0 or g[j] != g[j - 1]:
                    sets[s] = g[j]
                    s += 1
            set_ends[d] = s


@numba.njit(cache=True, nogil=True, boundscheck=False)
def band_kernel(sig, bands, rows, out):
    """out[d, j] = band hash of band j of signature row d (see lsh.band_hashes for the formula)."""
    n = sig.shape[0]
    for d in range(n):
        for j in range(bands):
            h = mix(np.uint64(j + 1) * GOLD)
            base = j * rows
            for t in range(rows):
                h = mix(h * GOLD + np.uint64(sig[d, base + t]))
            out[d, j] = h


@numba.njit(cache=True, nogil=True, boundscheck=False)
def jaccard_kernel(values, offsets, a, b, out):
    """out[k] = |A & B| / |A | B| of the sets A = values[offsets[a[k]]:offsets[a[k] + 1]] and B (b[k]), each sorted
    and unique, by one merge of the two (two empty sets: 0); `clusters.jaccard_pairs` is its numpy twin."""
    for k in range(a.shape[0]):
        i, i_end = offsets[a[k]], offsets[a[k] + 1]
        j, j_end = offsets[b[k]], offsets[b[k] + 1]
        union = (i_end - i) + (j_end - j)
        inter = 0
        while i < i_end and j < j_end:
            x = values[i]
            y = values[j]
            inter += x == y
            i += x <= y
            j += y <= x
        union -= inter
        out[k] = inter / union if union > 0 else 0.0
    return 0
