"""Word k-gram hashes of a batch for several k in one pass, and a vectorized set lookup of 64-bit hashes.

Built on `dataaudit.textops` (its word splitting, word hashes and fold), so every hash here equals
`textops.ngram_hash_of` of the k-gram's text. What this adds for contamination: the k-gram hashes for every k up
to n come out of the same fold loop (an item shorter than n words is matched on its whole text, i.e. as a k-gram
with k = its length), and each k is looked up as soon as it is computed, so no k-gram array is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import GOLD, Tokens, mix, normalize, numba_kernels
from dataaudit.textops.arrow import as_string_array, string_buffers

# What the report records. Whitespace runs are not rewritten in the text: words are split on any run of Unicode
# whitespace, which gives exactly the words `normalize(collapse_ws=True)` would (and saves the costliest regex).
NORMALIZE = {"nfc": True, "lowercase": True, "strip_punct": True, "collapse_ws": True}


# A word hyphenated across a line break ("water-\ncycle", what a hard wrap at 60-80 columns does to a compound) is
# one word again: punctuation removal would give "watercycle" from the unwrapped text, "water cycle" otherwise.
HYPHEN_BREAK = r"(\p{L})-\r?\n[ \t]*(\p{Ll})"


def join_hyphen_breaks(arr: pa.Array) -> pa.Array:
    """`arr` with every HYPHEN_BREAK joined. The regex runs only on the rows holding "-\n" or "-\r\n", found by
    two byte comparisons over the string data (a substring search per row costs more than the whole scan)."""
    offsets, data = string_buffers(arr)
    if len(data) < 2:
        return arr
    dash = np.flatnonzero(data[:-1] == 45)              # '-': rare, so the rest works on few positions
    nxt = data[np.minimum(dash + 1, len(data) - 1)]
    nxt2 = data[np.minimum(dash + 2, len(data) - 1)]
    pos = dash[(nxt == 10) | ((nxt == 13) & (nxt2 == 10))]
    if not len(pos):
        return arr
    rows = np.unique(np.searchsorted(offsets, pos, side="right") - 1)
    has = np.zeros(len(arr), bool)
    has[rows] = True
    mask = pa.array(has)
    joined = pc.replace_substring_regex(arr.filter(mask), pattern=HYPHEN_BREAK, replacement="\\1\\2")
    return pc.replace_with_mask(arr, mask, joined.cast(arr.type))


def normalize_for_contamination(arr) -> pa.Array:
    """GPT-3 / lm-evaluation-harness style: NFC, lowercase, punctuation removed (words then split on
    whitespace runs); a word hyphenated across a line break joined (`join_hyphen_breaks`). NFC runs only on the
    rows that are not pure ASCII (it cannot change the others)."""
    arr = join_hyphen_breaks(as_string_array(arr))
    if len(arr) == arr.null_count:
        return normalize(arr, nfc=False, lowercase=True, strip_punct=True, collapse_ws=False)
    ascii_rows = pc.fill_null(pc.string_is_ascii(arr), True)
    if not bool(pc.all(ascii_rows).as_py()):
        other = pc.invert(ascii_rows)
        composed = pc.utf8_normalize(arr.filter(other), form="NFC")
        arr = pc.replace_with_mask(arr, other, composed.cast(arr.type))
    return normalize(arr, nfc=False, lowercase=True, strip_punct=True, collapse_ws=False)


def kernels(work: int | None = None):
    """contamination's numba kernels module, or None (numba missing, DATAAUDIT_NO_NUMBA set, or `work` bytes too
    few to be worth loading numba: `numba_kernels`): numpy twins."""
    return numba_kernels("dataaudit.contamination._kernels", work)


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
    k = kernels(tokens.hash.nbytes)
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
