"""numba kernels of the repetition check's word n-gram statistics (`checks/text_repetition` holds the numpy twins,
which give identical results):

- `ngram_stats`: one document at a time, n = 2..max_n, the same 64-bit n-gram hashes grouped in an
  open-addressing table instead of Arrow's hash table over the whole batch.
- `word_chars`: the length of every word `textops.hashing.word_tokens` finds (its hashes stand for the words,
  in place of Arrow's split, dictionary ids and lengths).
"""
from __future__ import annotations

import numba
import numpy as np

from ._kernels import _GOLD, _mix, _multibyte_ws


@numba.njit(cache=True, nogil=True, boundscheck=False)
def ngram_stats(wh, cum, starts, doc_key, min_words, max_n, is_top, is_dup, top, dup):
    """wh: word hashes (flat, by document); cum: prefix sums of the word lengths (len(wh) + 1); starts:
    document d owns words starts[d]..starts[d+1]; is_top/is_dup[n]: compute that statistic; top/dup
    [max_n + 1, n_docs] float64 numerators, filled in place."""
    n_docs = starts.shape[0] - 1
    maxw = 0
    for d in range(n_docs):
        if starts[d + 1] - starts[d] > maxw:
            maxw = starts[d + 1] - starts[d]
    cap = 16
    while cap < 2 * maxw:
        cap *= 2
    mask = cap - 1
    keys = np.empty(cap, np.uint64)
    cnt = np.zeros(cap, np.int64)           # 0: empty slot
    first = np.empty(cap, np.int64)
    h = np.empty(maxw + 1, np.uint64)
    rep = np.zeros(maxw + 1, np.bool_)
    slot = np.empty(maxw + 1, np.int64)
    cand = np.empty(maxw + 1, np.int64)
    edge = np.zeros(maxw + 2, np.int64)
    for d in range(n_docs):
        s = starts[d]
        w = starts[d + 1] - s
        if w < 2 or w < min_words:
            continue
        key = doc_key[d]
        for i in range(w):
            h[i] = _mix(wh[s + i] ^ key)
            rep[i] = True
        for n in range(2, max_n + 1):
            m = w - n + 1
            if m <= 0:
                break
            for i in range(m):
                h[i] = _mix(h[i] * _GOLD + wh[s + i + n - 1])
            k = 0                           # candidates: both (n-1)-grams inside occur twice or more
            for i in range(m):
                if rep[i] and rep[i + 1]:
                    cand[k] = i
                    k += 1
            for i in range(w):
                rep[i] = False
            if k == 0:
                break
            for j in range(k):
                i = cand[j]
                hv = h[i]
                p = np.int64(hv & np.uint64(mask))
                while cnt[p] != 0 and keys[p] != hv:
                    p = (p + 1) & mask
                if cnt[p] == 0:
                    keys[p] = hv
                    first[p] = i
                cnt[p] += 1
                slot[j] = p
            best = 0
            for j in range(k):
                c = cnt[slot[j]]
                rep[cand[j]] = c >= 2
                if c > best:
                    best = c
            if is_top[n] and best >= 2:
                t = 0.0
                for j in range(k):
                    p = slot[j]
                    i = cand[j]
                    if cnt[p] == best and first[p] == i:
                        g = s + i
                        v = best * (cum[g + n] - cum[g] + (n - 1))
                        if v > t:
                            t = v
                top[n, d] = t
            if is_dup[n]:
                any_rep = False
                for j in range(k):
                    i = cand[j]
                    if first[slot[j]] != i:
                        edge[i] += 1
                        edge[i + n] -= 1
                        any_rep = True
                if any_rep:
                    run = 0
                    total = 0.0
                    for i in range(w):
                        run += edge[i]
                        if run > 0:
                            total += cum[s + i + 1] - cum[s + i]
                    dup[n, d] = total
                for i in range(w + 1):
                    edge[i] = 0
            for j in range(k):
                cnt[slot[j]] = 0
    return 0


@numba.njit(cache=True, nogil=True, boundscheck=False)
def word_chars(data, off, cls, out):
    """The code points of every word, in `textops.hashing.word_tokens`' order (the same whitespace runs split
    them); fills `out` (capacity >= the number of words), returns the number of words."""
    nw = 0
    for d in range(off.shape[0] - 1):
        i = off[d]
        end = off[d + 1]
        n = 0
        while i < end:
            b = data[i]
            c = cls[b]
            w = 0
            if c == 1:
                w = 1
            elif c == 2:
                w = _multibyte_ws(data, i, end)
            if w:
                if n:
                    out[nw] = n
                    nw += 1
                    n = 0
                i += w
                continue
            n += (b & 0xC0) != 0x80
            i += 1
        if n:
            out[nw] = n
            nw += 1
    return nw
