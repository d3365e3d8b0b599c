"""The `minhash` method: estimated Jaccard similarity of word shingles between a benchmark item and a training
record, reusing the dedup MinHash (datasketch-compatible signatures) and its LSH banding.

Item signatures are banded (bands x rows chosen for the threshold as datasketch's MinHashLSH does) into a hash
table; a training record's band hashes are looked up in it, and every candidate (record, item) pair gets the
signature-agreement estimate, kept when it reaches the threshold. A record much longer than the item has a low
Jaccard similarity with it by definition: this method finds records that are near-copies of an item (reworded,
reformatted); items embedded in longer documents are the `ngram` and `exact` methods' job.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dataaudit.dedup.lsh import band_hashes, optimal_params
from dataaudit.dedup.minhash import signatures_u32
from dataaudit.textops import Tokens

from .config import MinhashSettings
from .grams import HashSet


@dataclass
class MinhashIndex:
    sig: np.ndarray        # uint32 (items, num_perm); rows of empty items are unused
    bands: int
    rows: int
    set: HashSet           # band hashes of the items
    ptr: np.ndarray        # items holding band hash u: items[ptr[u]:ptr[u + 1]]
    items: np.ndarray


def lsh_params(settings: MinhashSettings) -> tuple[int, int]:
    t = min(max(settings.threshold, 0.01), 0.99)
    return optimal_params(t, settings.num_perm)


def build_minhash_index(tokens: Tokens, settings: MinhashSettings) -> MinhashIndex:
    grams = tokens.ngrams(settings.ngram)
    sig = signatures_u32(grams.hash, grams.offsets(), settings.num_perm, settings.seed)
    bands, rows = lsh_params(settings)
    has = np.flatnonzero(grams.count > 0)
    bh = band_hashes(sig[has], bands, rows).ravel()
    owner = np.repeat(has.astype(np.int64), bands)
    hs = HashSet(bh)
    key = np.searchsorted(hs.keys, bh)
    order = np.lexsort((owner, key))
    ptr = np.zeros(len(hs) + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=len(hs)), out=ptr[1:])
    return MinhashIndex(sig, bands, rows, hs, ptr, owner[order])


def minhash_pairs(tokens: Tokens, mi: MinhashIndex, settings: MinhashSettings
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(record, item, estimated Jaccard) of the batch's pairs at or above the threshold."""
    z = np.zeros(0, np.int64)
    if not len(mi.set) or not len(tokens.hash):
        return z, z.copy(), np.zeros(0, np.float32)
    grams = tokens.ngrams(settings.ngram)
    has = np.flatnonzero(grams.count > 0)
    offsets = grams.offsets()
    sig = signatures_u32(grams.hash, offsets, settings.num_perm, settings.seed)
    bh = band_hashes(sig[has], mi.bands, mi.rows).ravel()
    pos, u = mi.set.lookup(bh)
    if not len(pos):
        return z, z.copy(), np.zeros(0, np.float32)
    doc = has[pos // mi.bands]
    cnt = mi.ptr[u + 1] - mi.ptr[u]
    owner = np.repeat(np.arange(len(u)), cnt)
    first = np.cumsum(cnt) - cnt
    items = mi.items[mi.ptr[u][owner] + (np.arange(int(cnt.sum())) - first[owner])]
    docs = doc[owner]
    num_items = len(mi.sig)
    pk = np.unique(docs * num_items + items)
    d, it = pk // num_items, pk % num_items
    est = np.empty(len(pk), np.float32)
    step = 4096
    for s in range(0, len(pk), step):   # blocks bound the temporary (pairs x num_perm)
        est[s:s + step] = (sig[d[s:s + step]] == mi.sig[it[s:s + step]]).mean(axis=1)
    keep = est >= settings.threshold - 1e-9
    return d[keep], it[keep], est[keep]
