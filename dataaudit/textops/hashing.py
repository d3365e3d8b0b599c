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

import importlib
import os
import sys
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .arrow import as_string_array, string_buffers

M64 = (1 << 64) - 1
_C1_INT = 0xBF58476D1CE4E5B9
_C2_INT = 0x94D049BB133111EB
GOLD_INT = 0x9E3779B97F4A7C15
POLY_INT = 0x100000001B3 * 0x9E37 | 1          # odd multiplier of the byte polynomial

C1 = np.uint64(_C1_INT)                          # splitmix64's multipliers
C2 = np.uint64(_C2_INT)
GOLD = np.uint64(GOLD_INT)
POLY = np.uint64(POLY_INT & M64)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer, elementwise on uint64 (wrapping arithmetic); returns a new array. The kernels' `mix`
    (`words.mix`) is this function compiled by numba for one uint64."""
    x = x ^ (x >> _S30)
    x *= C1
    x ^= x >> _S27
    x *= C2
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


@dataclass
class Tokens:
    """The words of a batch, flat, in document order then position order.

    hash:  uint64, `word_hash_of` of each word
    doc:   int64, row index in the input array of each word
    count: int64 per document (len = number of documents): how many words it has (0 for null/empty)
    first: int64 per document: index of its first word in the flat arrays
    """
    hash: np.ndarray
    doc: np.ndarray
    count: np.ndarray
    first: np.ndarray

    @classmethod
    def of(cls, hash_: np.ndarray, doc: np.ndarray, count: np.ndarray) -> "Tokens":
        first = np.zeros(len(count), np.int64)
        if len(count):
            np.cumsum(count[:-1], out=first[1:])
        return cls(hash_, doc, count, first)

    @property
    def num_docs(self) -> int:
        return len(self.count)

    @property
    def pos(self) -> np.ndarray:
        """Word index of every word inside its document."""
        return np.arange(len(self.hash), dtype=np.int64) - self.first[self.doc]

    def ngrams(self, n: int) -> "NgramHashes":
        """The word n-gram hashes of these words (`fold_ngrams`)."""
        return fold_ngrams(self.hash, self.doc, self.num_docs, n, count=self.count)


_POW_CACHE = np.ones(1, np.uint64)


def powers(n: int) -> np.ndarray:
    """POLY**j mod 2**64 for j < n (cached, grown geometrically): the word kernels take `powers(256)` as `pows`."""
    global _POW_CACHE
    if len(_POW_CACHE) < n:
        size = max(n, 2 * len(_POW_CACHE), 64)
        p = np.full(size, POLY, np.uint64)
        p[0] = 1
        with np.errstate(over="ignore"):
            _POW_CACHE = np.cumprod(p, dtype=np.uint64)
    return _POW_CACHE[:n]


def _poly_hashes(starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> np.ndarray:
    """`word_hash_of` of the byte runs data[starts[i]:starts[i] + lengths[i]], vectorized over their bytes."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, np.uint64)
    total = int(lengths.sum())
    if total == 0:
        return mix(np.zeros(n, np.uint64))
    # byte index of every byte that belongs to a run, and its position inside the run
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    first = np.zeros(n, np.int64)
    np.cumsum(lengths[:-1], out=first[1:])
    pos = np.arange(total, dtype=np.int64) - first[owner]
    term = data[starts[owner] + pos].astype(np.uint64)
    term += np.uint64(1)
    term *= powers(int(lengths.max()))[pos]
    nonempty = lengths > 0
    h = np.zeros(n, np.uint64)
    h[nonempty] = np.add.reduceat(term, first[nonempty])
    h += lengths.astype(np.uint64) * GOLD
    return mix(h)


def token_hashes_of_strings(words: pa.Array) -> np.ndarray:
    """`word_hash_of` of every string of a (non-null) string array, vectorized over its bytes."""
    offsets, data = string_buffers(words)
    return _poly_hashes(offsets[:-1], np.diff(offsets), data)


# Byte classes of Python's `str.split()` whitespace, for the kernels' `cls` argument: 1 ASCII whitespace, 2 lead
# byte of a possible multi-byte whitespace character (U+0085/U+00A0: C2; U+1680: E1; U+2000..U+205F: E2;
# U+3000: E3), 0 anything else.
WS_CLASS = np.zeros(256, np.uint8)
WS_CLASS[[0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20]] = 1
WS_CLASS[[0xC2, 0xE1, 0xE2, 0xE3]] = 2


def whitespace_bytes(off: np.ndarray, data: np.ndarray) -> np.ndarray:
    """bool per byte of `data`: part of a whitespace character (a multi-byte one only when it lies inside one
    document, as the kernels see it). No multi-byte match can overlap another (continuation bytes are never lead
    bytes), so testing every position at once equals the kernels' left-to-right scan, on any bytes."""
    nb = len(data)
    cls = WS_CLASS[data]
    ws = cls == 1
    lead = np.flatnonzero(cls == 2)
    if lead.size:
        inner = np.ones(nb + 2, bool)                    # byte j continues the document of byte j - 1
        inner[off[:-1]] = False
        inner[nb:] = False
        pad = np.zeros(nb + 2, np.uint8)
        pad[:nb] = data
        b, c, d = data[lead], pad[lead + 1], pad[lead + 2]
        two = (b == 0xC2) & ((c == 0x85) | (c == 0xA0)) & inner[lead + 1]
        e2 = (((c == 0x80) & (((d >= 0x80) & (d <= 0x8A)) | (d == 0xA8) | (d == 0xA9) | (d == 0xAF)))
              | ((c == 0x81) & (d == 0x9F)))
        three = (((b == 0xE2) & e2) | ((b == 0xE1) & (c == 0x9A) & (d == 0x80))
                 | ((b == 0xE3) & (c == 0x80) & (d == 0x80))) & inner[lead + 1] & inner[lead + 2]
        for length, hit in ((2, two), (3, three)):
            at = lead[hit]
            for j in range(length):
                ws[at + j] = True
    return ws


def _word_tokens_numpy(off: np.ndarray, data: np.ndarray, num_docs: int) -> Tokens:
    """The numpy twin of the `word_tokens` kernel: word byte ranges from a whitespace mask over all bytes."""
    nb = len(data)
    if nb == 0:
        return Tokens.of(np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(num_docs, np.int64))
    word = ~whitespace_bytes(off, data)
    boundary = np.zeros(nb + 1, bool)                    # a document starts here (or the data ends)
    boundary[off] = True
    starts = np.flatnonzero(word & (boundary[:-1] | np.concatenate(([True], ~word[:-1]))))
    ends = np.flatnonzero(word & (boundary[1:] | np.append(~word[1:], True))) + 1
    doc = np.searchsorted(off, starts, side="right").astype(np.int64) - 1
    return Tokens.of(_poly_hashes(starts, ends - starts, data), doc, np.bincount(doc, minlength=num_docs))


def char_hashes_of_text(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(char hash, document index) of every character of every string (nulls: none), in order."""
    offsets, seg = string_buffers(arr)
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
    doc = np.searchsorted(offsets[1:], lead, side="right").astype(np.int64)
    return mix(packed), doc


# Below this much work a call whose kernels module is not loaded yet runs its numpy twin (the same results):
# importing numba and loading each cached kernel costs ~0.3-1 s, more than the twins take on a MiB.
NUMBA_MIN_WORK = 1 << 20
NUMBA_MIN_WORK_ENV = "DATAAUDIT_NUMBA_MIN_WORK"


def numba_min_work() -> int:
    """NUMBA_MIN_WORK, or the DATAAUDIT_NUMBA_MIN_WORK environment variable (a whole number >= 0; 0: numba for any
    input). ValueError naming the variable when it is not one."""
    given = os.environ.get(NUMBA_MIN_WORK_ENV, "").strip()
    if not given:
        return NUMBA_MIN_WORK
    if not given.isdigit():
        raise ValueError(f"{NUMBA_MIN_WORK_ENV} must be a whole number >= 0 (bytes), got {given!r}")
    return int(given)


_LOADED: dict[str, object] = {}                         # module name -> the module, or None without numba


def _import_kernels(module: str):
    if module not in _LOADED:
        try:
            _LOADED[module] = importlib.import_module(module)
        except ImportError:                               # numba not installed
            _LOADED[module] = None
    return _LOADED[module]


def numba_kernels(module: str = "dataaudit.textops._kernels", work: int | None = None):
    """The numba kernels module `module` (textops' by default; dedup and contamination name theirs), or None: the
    caller then runs its numpy twin. The module's kernels compiled ahead of time when there is a build for these
    sources (`compiled.compiled_kernels`: the audit's text kernels, loaded without numba). None when numba is
    missing, the DATAAUDIT_NO_NUMBA environment variable is set, or the call is small: `work` (the input's size
    in bytes; a MinHash counts its hash bytes times the permutations) below `numba_min_work()` while `module` is
    not loaded yet. Without `work`, numba whatever the size. A large input after small ones still gets numba;
    once loaded, the kernels serve every size."""
    if os.environ.get("DATAAUDIT_NO_NUMBA"):
        return None
    from .compiled import compiled_kernels

    compiled = compiled_kernels(module)          # built ahead of time: no numba to import, whatever the size
    if compiled is not None:
        return compiled
    if work is not None and module not in _LOADED and module not in sys.modules and work < numba_min_work():
        return None
    return _import_kernels(module)


def fold_ngrams(tok: np.ndarray, doc: np.ndarray, num_docs: int, n: int,
                count: np.ndarray | None = None) -> NgramHashes:
    """n-gram hashes from flat token hashes (grouped by document, in order; `count`, the tokens per document,
    is derived from `doc` when not given).

    A document with at least n tokens has len - n + 1 n-grams; one with 1..n-1 tokens has exactly one n-gram of
    all its tokens; one with none has none.
    """
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    N = len(tok)
    if count is None:
        count = np.bincount(doc, minlength=num_docs).astype(np.int64) if N else np.zeros(num_docs, np.int64)
    k = numba_kernels(work=tok.nbytes)
    if k is not None:
        out_hash, out_doc, out_start = np.empty(N, np.uint64), np.empty(N, np.int64), np.empty(N, np.int64)
        out_count = np.empty(num_docs, np.int64)
        m = k.fold_ngrams(np.ascontiguousarray(tok, np.uint64), np.ascontiguousarray(count, np.int64), n,
                          out_hash, out_doc, out_start, out_count)
        return NgramHashes(out_doc[:m], out_hash[:m], out_count, out_start[:m])
    if N == 0:
        z = np.zeros(0, np.int64)
        return NgramHashes(z, np.zeros(0, np.uint64), np.zeros(num_docs, np.int64), z.copy())
    ntok = count[doc]
    first = np.zeros(num_docs, np.int64)
    np.cumsum(count[:-1], out=first[1:])
    pos = np.arange(N, dtype=np.int64) - first[doc]
    left = ntok - pos
    out = np.empty(N, np.uint64)
    select = left >= n                                    # start of a full n-gram
    short = (pos == 0) & (ntok < n)                       # the one n-gram of a short document
    h = tok.copy()
    for k in range(1, n + 1):                             # h[i] = fold of tokens i..i+k-1
        grab = np.flatnonzero(short & (ntok == k))
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


def word_tokens(arr) -> Tokens:
    """The words of every document of a string array with their `word_hash_of` hashes. Words are split on
    whitespace runs as Python's `str.split()` does (Unicode spaces included); nulls and empty documents have
    none."""
    arr = as_string_array(arr)
    num_docs = len(arr)
    off, data = string_buffers(arr)
    k = numba_kernels(work=len(data))
    if k is not None:
        return span_word_tokens(k, data, off[:-1], off[1:])
    return _word_tokens_numpy(off, data, num_docs)


def span_word_tokens(k, data: np.ndarray, starts: np.ndarray, stops: np.ndarray) -> Tokens:
    """`word_tokens` of the texts data[starts[i]:stops[i]] (UTF-8 bytes; text i is "document" i), with the
    numba kernels module `k` (`numba_kernels()`)."""
    num_docs = len(starts)
    cap = (int((stops - starts).sum()) + num_docs) // 2 + 1     # a word takes a byte and a separator (or an end)
    tok = np.empty(cap, np.uint64)
    doc = np.empty(cap, np.int64)
    ends = np.empty(num_docs, np.int64)
    nw = k.word_tokens(data, starts, stops, WS_CLASS, powers(256), POLY, tok, doc, ends)
    return Tokens.of(tok[:nw].copy(), doc[:nw].copy(), np.diff(ends, prepend=0))


def word_ngram_hashes(arr, n: int) -> NgramHashes:
    """Word n-gram hashes of every document of a string array (words as `word_tokens` splits them); nulls and
    empty documents have no n-grams."""
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    return word_tokens(arr).ngrams(n)


def char_ngram_hashes(arr, n: int) -> NgramHashes:
    """Character n-gram hashes (n code points, whitespace included) of every document of a string array."""
    if n < 1:
        raise ValueError(f"n-gram size must be >= 1, got {n}")
    arr = as_string_array(arr)
    tok, doc = char_hashes_of_text(arr)
    return fold_ngrams(tok, doc, len(arr), n)
