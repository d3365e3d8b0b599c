"""numba kernels for textops (used when numba is installed; hashing.py/normalize.py hold the pure
numpy/pyarrow twins, which give identical results). Built on `words` (`mix`, `multibyte_ws`, `word_hashes`), which
dedup's and contamination's kernels share.

`cls` is `hashing.WS_CLASS` (byte classes: ASCII whitespace, lead byte of a possible multi-byte whitespace).

- `collapse_ws`: every whitespace run -> one space, leading/trailing whitespace removed.
- `word_tokens`: one pass over the UTF-8 bytes of a batch: the words (split on whitespace runs) and each word's
  `hashing.word_hash_of`.
- `fold_ngrams`: n-gram hashes (`hashing.fold_int`) of flat token hashes, document by document.

`word_tokens` is compiled without numba's reference counting (`_nrt=False`; it allocates nothing): its calls of
`multibyte_ws` otherwise incref and decref `data` with atomic calls (~15% of its time on mixed text).
"""
from __future__ import annotations

import numba
import numpy as np

from .hashing import GOLD
from .words import mix, multibyte_ws, word_hashes


@numba.njit(cache=True, nogil=True, boundscheck=False)
def collapse_ws(offsets, data, out_offsets, out_data, cls):
    """Every whitespace run -> one space, leading and trailing whitespace removed (output <= input)."""
    n = offsets.shape[0] - 1
    o = 0
    out_offsets[0] = 0
    for s in range(n):
        end = offsets[s + 1]
        pending = 0
        started = 0
        skip = 0
        for i in range(offsets[s], end):
            if skip:                      # continuation bytes of a multi-byte whitespace character
                skip -= 1
                continue
            b = data[i]
            c = cls[b]
            w = c if c < 2 else multibyte_ws(data, i, end)       # bytes of whitespace here (0: none)
            if w:
                pending = started
                skip = w - 1
                continue
            if pending:
                out_data[o] = 32
                o += 1
                pending = 0
            out_data[o] = b
            o += 1
            started = 1
        out_offsets[s + 1] = o
    return o


@numba.njit(cache=True, nogil=True, boundscheck=False, _nrt=False)
def word_tokens(data, starts, stops, cls, pows, poly, out_hash, out_doc, ends):
    """The words of the texts data[starts[d]:stops[d]]: fill out_hash and out_doc (the text of each word; capacity
    >= the number of words) and ends (ends[d]: the number of words of texts 0..d); return the number of words.
    pows[j] = poly**j for j < len(pows) (longer words continue the product)."""
    nw = 0
    for d in range(starts.shape[0]):
        nw = word_hashes(data, starts[d], stops[d], cls, pows, poly, out_hash, out_doc, d, nw)
        ends[d] = nw                      # (a count per document here would cost ~3%)
    return nw


@numba.njit(cache=True, nogil=True, boundscheck=False)
def fold_ngrams(tok, count, n, out_hash, out_doc, out_start, out_count):
    """n-gram hashes of flat token hashes (document d owns the next count[d] of them): a document with k >= n
    tokens has k - n + 1 n-grams, one with 1..n-1 tokens one n-gram of all of them. Folded level by level
    inside each document (the positions of a level are independent, so the mixes pipeline). out_* need
    capacity len(tok); returns the number of n-grams written."""
    maxc = 0
    for d in range(count.shape[0]):
        if count[d] > maxc:
            maxc = count[d]
    h = np.empty(maxc, np.uint64)
    o = 0
    f = 0
    for d in range(count.shape[0]):
        c = count[d]
        if c == 0:
            out_count[d] = 0
            continue
        width = n if c >= n else c
        for i in range(c):
            h[i] = tok[f + i]
        for k in range(2, width + 1):
            for i in range(c - k + 1):
                h[i] = mix(h[i] * GOLD + tok[f + i + k - 1])
        last = c - width + 1
        for j in range(last):
            out_hash[o] = h[j]
            out_doc[o] = d
            out_start[o] = j
            o += 1
        out_count[d] = last
        f += c
    return o
