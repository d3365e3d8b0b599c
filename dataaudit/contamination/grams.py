"""Word k-gram hashes of a batch for several k in one pass, and a vectorized set lookup of 64-bit hashes.

Built on `dataaudit.textops` (its word splitting, word hashes and fold), so every hash here equals
`textops.ngram_hash_of` of the k-gram's text. What this adds for contamination: the k-gram hashes for every k up
to n come out of the same fold loop (an item shorter than n words is matched on its whole text, i.e. as a k-gram
with k = its length), and each k is looked up as soon as it is computed, so no k-gram array is kept.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.checks.text_common import as_string_array, flatten_lists
from dataaudit.textops import GOLD, mix, normalize, token_hashes_of_strings
from dataaudit.textops.hashing import POLY

# What the report records. Whitespace runs are not rewritten in the text: words are split on any run of Unicode
# whitespace, which gives exactly the words `normalize(collapse_ws=True)` would (and saves the costliest regex).
NORMALIZE = {"nfc": True, "lowercase": True, "strip_punct": True, "collapse_ws": True}


def normalize_for_contamination(arr) -> pa.Array:
    """GPT-3 / lm-evaluation-harness style: NFC, lowercase, punctuation removed (words then split on
    whitespace runs). NFC runs only on the rows that are not pure ASCII (it cannot change the others)."""
    arr = as_string_array(arr)
    if len(arr) == arr.null_count:
        return normalize(arr, nfc=False, lowercase=True, strip_punct=True, collapse_ws=False)
    ascii_rows = pc.fill_null(pc.string_is_ascii(arr), True)
    if not bool(pc.all(ascii_rows).as_py()):
        other = pc.invert(ascii_rows)
        composed = pc.utf8_normalize(arr.filter(other), form="NFC")
        arr = pc.replace_with_mask(arr, other, composed.cast(arr.type))
    return normalize(arr, nfc=False, lowercase=True, strip_punct=True, collapse_ws=False)


@dataclass
class Tokens:
    """The words of a batch, flat: hash of each word and the document (row) it belongs to, in order."""
    hash: np.ndarray      # uint64
    doc: np.ndarray       # int64
    count: np.ndarray     # int64 per document
    first: np.ndarray     # int64 per document: index of its first word in the flat arrays

    @property
    def pos(self) -> np.ndarray:
        """Word index of every word inside its document."""
        return np.arange(len(self.hash), dtype=np.int64) - self.first[self.doc]


_WS_ASCII = np.zeros(256, bool)   # ASCII bytes `pc.utf8_split_whitespace` splits on (the kernel adds multi-byte ones)
_WS_ASCII[[0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20]] = True
_CLASS = np.zeros(256, np.uint8)  # for the kernel: 1 ASCII whitespace, 2 lead byte of a multi-byte whitespace
_CLASS[_WS_ASCII] = 1
_CLASS[[0xC2, 0xE1, 0xE2, 0xE3]] = 2
_KERNEL_POWERS = np.ones(256, np.uint64)      # POLY**j: the byte polynomial of `textops.word_hash_of`
with np.errstate(over="ignore"):
    _KERNEL_POWERS[1:] = np.cumprod(np.full(255, POLY, np.uint64), dtype=np.uint64)
_KERNELS = None


def kernels():
    """The numba kernels module, or None (numba missing, or DATAAUDIT_NO_NUMBA set): numpy twins are used."""
    global _KERNELS
    if _KERNELS is None:
        _KERNELS = False
        if not os.environ.get("DATAAUDIT_NO_NUMBA"):
            try:
                from . import _kernels
                _KERNELS = _kernels
            except ImportError:
                pass
    return _KERNELS or None


def _buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets rebased to 0, int64; the bytes they index, uint8) of a string array; null rows own no bytes."""
    bufs = arr.buffers()
    n = len(arr)
    if n == 0 or bufs[1] is None:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.uint8)
    odt = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    off = np.frombuffer(bufs[1], dtype=odt)[arr.offset: arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    if arr.null_count:
        valid = np.asarray(pc.is_valid(arr).to_numpy(zero_copy_only=False), bool)
        lengths = np.diff(off)
        if (lengths[~valid] != 0).any():
            keep = np.repeat(valid, lengths)
            data = data[off[0]:off[-1]][keep]
            off = np.concatenate(([0], np.cumsum(np.where(valid, lengths, 0))))
            return off.astype(np.int64), data
    return off - off[0], data[off[0]:off[-1]]


def _tokens_from(tok: np.ndarray, doc: np.ndarray, num_docs: int) -> Tokens:
    count = np.bincount(doc, minlength=num_docs).astype(np.int64) if len(doc) else np.zeros(num_docs, np.int64)
    first = np.zeros(num_docs, np.int64)
    if num_docs:
        np.cumsum(count[:-1], out=first[1:])
    return Tokens(tok, doc, count, first)


def word_tokens(norm: pa.Array) -> Tokens:
    """Words of already normalized text with their `textops.word_hash_of` hashes: exactly the words (split on
    Unicode whitespace runs) and values `textops.word_ngram_hashes(norm, 1)` gives."""
    norm = as_string_array(norm)
    num_docs = len(norm)
    k = kernels()
    if k is not None:
        off, data = _buffers(norm)
        cap = (len(data) + num_docs) // 2 + 1       # a word takes a byte and a separator (or a row end)
        tok = np.empty(cap, np.uint64)
        doc = np.empty(cap, np.int64)
        nw = k.tokens_kernel(data, off, _CLASS, _KERNEL_POWERS, POLY, tok, doc)
        return _tokens_from(tok[:nw].copy(), doc[:nw].copy(), num_docs)
    words, doc, _ = flatten_lists(pc.utf8_split_whitespace(norm))
    if len(words):
        keep = np.asarray(pc.greater(pc.binary_length(words), 0).to_numpy(zero_copy_only=False), dtype=bool)
        if not keep.all():
            words, doc = words.filter(pa.array(keep)), doc[keep]
    tok = token_hashes_of_strings(words) if len(words) else np.zeros(0, np.uint64)
    return _tokens_from(tok, doc.astype(np.int64), num_docs)


def iter_kgrams(tokens: Tokens, ks) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For each k in `ks` (ascending), yield (k, h, valid): h[i] is the hash of the k words starting at flat
    word i, meaningful where valid[i] (the k words lie inside one document). `h` is reused between steps: use
    it before asking for the next k."""
    ks = sorted(set(int(k) for k in ks))
    tok = tokens.hash
    N = len(tok)
    if N == 0 or not ks:
        return
    left = tokens.count[tokens.doc] - tokens.pos           # words from i to the end of its document
    h = tok.copy()
    want = set(ks)
    for k in range(1, ks[-1] + 1):
        if k > 1:
            m = N - k + 1
            if m <= 0:
                return
            h[:m] = mix(h[:m] * GOLD + tok[k - 1:])
        if k in want:
            yield k, h, left >= k


class HashSet:
    """A sorted set of uint64 keys with a bitmap prefilter on the top bits: `lookup` of many hashes costs one
    gather per hash, and only the few that pass the bitmap are binary-searched."""

    def __init__(self, keys: np.ndarray):
        keys = np.unique(np.asarray(keys, dtype=np.uint64))
        self.keys = keys
        bits = int(np.clip(np.ceil(np.log2(max(len(keys), 1) * 32)), 12, 24))
        self.shift = np.uint64(64 - bits)
        self.bitmap = np.zeros(1 << bits, dtype=bool)
        if len(keys):
            self.bitmap[(keys >> self.shift).astype(np.int64)] = True

    def __len__(self) -> int:
        return len(self.keys)

    def lookup(self, h: np.ndarray, valid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(positions i where h[i] is a key (and valid[i]), index of that key in `keys`)."""
        if not len(self.keys) or not len(h):
            z = np.zeros(0, np.int64)
            return z, z.copy()
        cand = self.bitmap[h >> self.shift]
        if valid is not None:
            cand &= valid
        p = np.flatnonzero(cand)
        hv = h[p]
        j = np.searchsorted(self.keys, hv)
        j[j >= len(self.keys)] = 0
        ok = self.keys[j] == hv
        return p[ok], j[ok].astype(np.int64)


@dataclass
class KgramLookup:
    """The benchmark tables of every gram length k, for `kgram_hits`: one sorted key range per k in a single
    array, and one bitmap prefilter over all keys."""
    sets: dict[int, HashSet]
    kmax: int
    want: np.ndarray       # bool, kmax + 1
    keys: np.ndarray       # uint64: keys of table k are keys[key_lo[k]:key_hi[k]] (sorted)
    key_lo: np.ndarray
    key_hi: np.ndarray
    bitmap: np.ndarray
    shift: np.uint64


def build_lookup(sets: dict[int, HashSet]) -> KgramLookup:
    kmax = max(sets) if sets else 0
    want = np.zeros(kmax + 1, bool)
    key_lo = np.zeros(kmax + 1, np.int64)
    key_hi = np.zeros(kmax + 1, np.int64)
    parts, at = [], 0
    for k in sorted(sets):
        want[k] = True
        key_lo[k] = at
        parts.append(sets[k].keys)
        at += len(sets[k].keys)
        key_hi[k] = at
    keys = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    allset = HashSet(keys)
    return KgramLookup(sets, kmax, want, keys, key_lo, key_hi, allset.bitmap, allset.shift)


def kgram_hits(tokens: Tokens, lk: KgramLookup) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """k -> (flat word positions whose k-gram is in table k, index of that key in table k's sorted keys),
    positions ascending."""
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if not lk.kmax or not len(tokens.hash):
        return out
    k = kernels()
    if k is not None:
        cap = len(tokens.hash) + 16
        while True:
            pos = np.empty(cap, np.int64)
            ks = np.empty(cap, np.int64)
            key = np.empty(cap, np.int64)
            nh = k.kgram_hits_kernel(tokens.hash, tokens.doc, lk.kmax, lk.want, lk.bitmap, lk.shift, lk.keys,
                                     lk.key_lo, lk.key_hi, pos, ks, key)
            if nh >= 0:
                break
            cap *= int(lk.want.sum()) + 1
        pos, ks, key = pos[:nh], ks[:nh], key[:nh]
        for kk in np.unique(ks):
            sel = ks == kk
            out[int(kk)] = (pos[sel], key[sel])
        return out
    for kk, h, valid in iter_kgrams(tokens, sorted(lk.sets)):
        p, u = lk.sets[kk].lookup(h, valid)
        if len(p):
            out[kk] = (p, u)
    return out
