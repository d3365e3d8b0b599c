"""Deterministic 64-bit hashes of words, characters and n-grams, computed for a whole Arrow array at once.

Every hash is a function of the n-gram's text alone (its UTF-8 bytes), never of dictionary indices or batch
positions, so the same shingle gets the same value in any batch, process or machine.

Definitions (all arithmetic modulo 2**64; `mix` is the splitmix64 finalizer):

  word hash   w(word)  = mix(poly(bytes) + len(bytes) * GOLD), poly(bytes) = sum_j (byte_j + 1) * POLY**j
  char hash   c(ch)    = mix(int.from_bytes(ch.encode("utf-8"), "little") + GOLD)
  n-gram      fold(h_1, ..., h_k) = h_1 if k == 1, else mix(fold(h_1..h_{k-1}) * GOLD + h_k)

`ngram_hash_of("w1 w2 w3")` and `char_ngram_hash_of("abc")` compute the same values in pure Python, one at a
time, so tests (and datasketch, through `hashfunc=`) can hash a shingle independently of the bulk code.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

M64 = (1 << 64) - 1
_C1_INT = 0xBF58476D1CE4E5B9
_C2_INT = 0x94D049BB133111EB
GOLD_INT = 0x9E3779B97F4A7C15
POLY_INT = 0x100000001B3 * 0x9E37 | 1          # odd multiplier of the byte polynomial

_C1 = np.uint64(_C1_INT)
_C2 = np.uint64(_C2_INT)
GOLD = np.uint64(GOLD_INT)
POLY = np.uint64(POLY_INT & M64)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic); returns a new array."""
    x = x ^ (x >> _S30)
    x *= _C1
    x ^= x >> _S27
    x *= _C2
    x ^= x >> _S31
    return x


def mix_int(x: int) -> int:
    """`mix` for one Python int."""
    x &= M64
    x ^= x >> 30
    x = (x * _C1_INT) & M64
    x ^= x >> 27
    x = (x * _C2_INT) & M64
    return x ^ (x >> 31)


# ---------------------------------------------------------------------------------------------- pure Python

def word_hash_of(word: str) -> int:
    """Hash of one word (its UTF-8 bytes), as the bulk code computes it."""
    data = word.encode("utf-8")
    h, p = 0, 1
    for b in data:
        h = (h + (b + 1) * p) & M64
        p = (p * POLY_INT) & M64
    return mix_int(h + len(data) * GOLD_INT)


def char_hash_of(ch: str) -> int:
    """Hash of one character (code point)."""
    return mix_int(int.from_bytes(ch.encode("utf-8"), "little") + GOLD_INT)


def fold_int(hashes) -> int:
    """The n-gram hash of a sequence of token hashes."""
    it = iter(hashes)
    h = next(it)
    for x in it:
        h = mix_int(h * GOLD_INT + x)
    return h


def ngram_hash_of(text: str) -> int:
    """Hash of one word n-gram given as its words joined by single spaces (e.g. "the cat sat")."""
    words = text.split(" ")
    if not text or any(not w for w in words):
        raise ValueError(f"not an n-gram of words joined by single spaces: {text!r}")
    return fold_int(word_hash_of(w) for w in words)


def char_ngram_hash_of(text: str) -> int:
    """Hash of one character n-gram (the characters exactly as given, spaces included)."""
    if not text:
        raise ValueError("empty character n-gram")
    return fold_int(char_hash_of(c) for c in text)


# ---------------------------------------------------------------------------------------------- bulk

@dataclass
class NgramHashes:
    """The shingles of a batch of documents, flat, in document order then position order.

    doc:   int64, row index in the input array of each n-gram
    hash:  uint64, the n-gram hash
    count: int64 per document (len = number of documents): how many n-grams it has (0 for null/empty)
    start: int64, position (word or character index in its document) of each n-gram's first token
    """
    doc: np.ndarray
    hash: np.ndarray
    count: np.ndarray
    start: np.ndarray

    @property
    def num_docs(self) -> int:
        return len(self.count)

    def offsets(self) -> np.ndarray:
        """int64 (num_docs + 1): n-grams of document i are [offsets[i], offsets[i + 1])."""
        out = np.zeros(len(self.count) + 1, np.int64)
        np.cumsum(self.count, out=out[1:])
        return out


def _string_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(offsets int64 of len(arr)+1, data uint8) of a string/large_string array, zero-copy where possible."""
    bufs = arr.buffers()
    large = pa.types.is_large_string(arr.type)
    odt = np.int64 if large else np.int32
    n = len(arr)
    if bufs[1] is None or n == 0:
        return np.zeros(n + 1, np.int64), np.zeros(0, np.uint8)
    offsets = np.frombuffer(bufs[1], dtype=odt)[arr.offset: arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _as_strings(arr) -> pa.Array:
    from ._arrow import as_string_array
    return as_string_array(arr)


_POW_CACHE = np.ones(1, np.uint64)


def _powers(n: int) -> np.ndarray:
    """POLY**j mod 2**64 for j < n (cached, grown geometrically)."""
    global _POW_CACHE
    if len(_POW_CACHE) < n:
        size = max(n, 2 * len(_POW_CACHE), 64)
        p = np.full(size, POLY, np.uint64)
        p[0] = 1
        with np.errstate(over="ignore"):
            _POW_CACHE = np.cumprod(p, dtype=np.uint64)
    return _POW_CACHE[:n]


def token_hashes_of_strings(words: pa.Array) -> np.ndarray:
    """`word_hash_of` of every string of a (non-null, non-empty) string array, vectorized over its bytes."""
    n = len(words)
    if n == 0:
        return np.zeros(0, np.uint64)
    offsets, data = _string_buffers(words)
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return mix(np.zeros(n, np.uint64))
    # byte index of every byte that belongs to a word, and its position inside the word
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    first = np.zeros(n, np.int64)
    np.cumsum(lengths[:-1], out=first[1:])
    pos = np.arange(total, dtype=np.int64) - first[owner]
    byte_idx = starts[owner] + pos
    term = data[byte_idx].astype(np.uint64)
    term += np.uint64(1)
    term *= _powers(int(lengths.max()))[pos]
    nonempty = lengths > 0
    h = np.zeros(n, np.uint64)
    h[nonempty] = np.add.reduceat(term, first[nonempty])
    h += lengths.astype(np.uint64) * GOLD
    return mix(h)


def char_hashes_of_text(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(char hash, document index) of every character of every string (nulls: none), in order."""
    offsets, data = _string_buffers(arr)
    lo, hi = int(offsets[0]), int(offsets[-1])
    seg = data[lo:hi]
    if seg.size == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    lead = np.flatnonzero((seg & 0xC0) != 0x80)             # first byte of every code point
    clen = np.diff(np.append(lead, seg.size))
    padded = np.zeros(seg.size + 4, np.uint64)
    padded[:seg.size] = seg
    packed = padded[lead].copy()
    for k in (1, 2, 3):
        more = clen > k
        packed[more] |= padded[lead[more] + k] << np.uint64(8 * k)
    packed += GOLD
    # document of each character: byte position -> row (nulls and empty strings own no bytes)
    doc = np.searchsorted(offsets[1:] - lo, lead, side="right").astype(np.int64)
    return mix(packed), doc


def fold_ngrams(tok: np.ndarray, doc: np.ndarray, num_docs: int, n: int) -> NgramHashes:
    """n-gram hashes from flat token hashes (grouped by document, in order).

    A document with at least n tokens has len - n + 1 n-grams; one with 1..n-1 tokens has exactly one n-gram of
    all its tokens; one with none has none.
    """
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    N = len(tok)
    ntok = np.bincount(doc, minlength=num_docs).astype(np.int64) if N else np.zeros(num_docs, np.int64)
    if N == 0:
        z = np.zeros(0, np.int64)
        return NgramHashes(z, np.zeros(0, np.uint64), ntok * 0, z.copy())
    first = np.zeros(num_docs, np.int64)
    np.cumsum(ntok[:-1], out=first[1:])
    pos = np.arange(N, dtype=np.int64) - first[doc]
    left = ntok[doc] - pos
    out = np.empty(N, np.uint64)
    select = left >= n                                    # start of a full n-gram
    short = (pos == 0) & (ntok[doc] < n)                   # the one n-gram of a short document
    h = tok.copy()
    for k in range(1, n + 1):                             # h[i] = fold of tokens i..i+k-1
        grab = np.flatnonzero(short & (ntok[doc] == k))
        out[grab] = h[grab]
        if k == n:
            break
        m = N - k
        if m <= 0:
            break
        h[:m] = mix(h[:m] * GOLD + tok[k:])
    out[select] = h[select]
    keep = select | short
    d = doc[keep]
    return NgramHashes(d, out[keep], np.bincount(d, minlength=num_docs).astype(np.int64), pos[keep])


def numba_kernels():
    """textops' numba kernels, or None (numba missing, or DATAAUDIT_NO_NUMBA set: the numpy path)."""
    if os.environ.get("DATAAUDIT_NO_NUMBA"):
        return None
    try:
        from . import _kernels
    except ImportError:
        return None
    return _kernels


# Python's str.split() whitespace, as an RE2 class (the numba kernels test the same set byte-wise)
PY_WHITESPACE = (r"[\t\n\x{0B}\x{0C}\r\x{1C}-\x{1F} \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}"
                 r"\x{202F}\x{205F}\x{3000}]+")


def _filled(arr) -> pa.Array:
    arr = _as_strings(arr)
    if arr.null_count:
        arr = pc.fill_null(arr, "")                      # a null slot's bytes are unspecified in Arrow
    return arr


def word_ngram_hashes(arr, n: int) -> NgramHashes:
    """Word n-gram hashes of every document of a string array. Words are split on whitespace as Python's
    `str.split()` does (Unicode spaces included); nulls and empty documents have no n-grams."""
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    arr = _filled(arr)
    num_docs = len(arr)
    k = numba_kernels()
    if k is not None:
        offsets, data = _string_buffers(arr)
        bound = int((np.diff(offsets) + 1).sum() // 2) + num_docs   # words <= (bytes + 1) // 2 per document
        doc, h, st = np.empty(bound, np.int64), np.empty(bound, np.uint64), np.empty(bound, np.int64)
        counts = np.empty(num_docs, np.int64)
        m = k.word_ngrams(offsets, data, n, POLY, k.ASCII_WS, doc, h, st, counts)
        return NgramHashes(doc[:m].copy(), h[:m].copy(), counts, st[:m].copy())
    from ._arrow import flatten_lists
    spaced = pc.replace_substring_regex(arr, pattern=PY_WHITESPACE, replacement=" ")
    words, doc = flatten_lists(pc.split_pattern(spaced, pattern=" "))
    if len(words):
        keep = np.diff(_string_buffers(words)[0]) > 0     # leading/trailing spaces give empty pieces
        if not keep.all():
            words, doc = words.filter(pa.array(keep)), doc[keep]
    return fold_ngrams(token_hashes_of_strings(words), doc, num_docs, n)


def char_ngram_hashes(arr, n: int) -> NgramHashes:
    """Character n-gram hashes (n code points, whitespace included) of every document of a string array."""
    tok, doc = char_hashes_of_text(_filled(arr))
    return fold_ngrams(tok, doc, len(arr), n)
