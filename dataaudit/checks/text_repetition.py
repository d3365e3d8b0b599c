"""Gopher-style repetition statistics (Rae et al. 2021, "MassiveText" quality filter; thresholds as in
datatrove's GopherRepetitionFilter), computed for a whole batch at once.

Every statistic is found without a per-document loop: lines and words of all documents are flattened with
pyarrow, turned into integer ids with `dictionary_encode`, combined into 64-bit n-gram hashes that also mix
in the document index, and grouped once per n with Arrow's hash table (`dictionary_encode` again: group ids
come in order of first appearance). "Is this a repeat of an earlier occurrence in the same document" is then
"is its group id not new at this position", and per-document sums/maxima are `np.bincount` /
`np.maximum.at` over the document index. Hash collisions (64-bit) are ignored.

Statistics (denominators follow datatrove; `len(text)` is the document length in characters):

  dup_line_frac       repeated non-empty lines (every occurrence after the first) / non-empty lines
  dup_line_char_frac  characters of those repeated lines / len(text)
  top_{n}_gram        (n = 2, 3, 4) count x char-length of the most frequent word n-gram / len(text); an
                      n-gram seen only once is not "repetition", so the statistic is 0 unless count >= 2.
                      Ties on count are broken by the longer n-gram. Char length = words joined by one
                      space. Overlapping occurrences are all counted (as in datatrove), so it can exceed 1.
  dup_{n}_gram        (n = 5..10) characters (word characters, no spaces) of words covered by any repeated
                      occurrence of an n-gram (every occurrence after the first) / len(text). Words covered
                      by several repeated n-grams count once (datatrove's greedy scan skips ahead instead;
                      union coverage is its order-independent equivalent and never smaller).

Words are whitespace-separated tokens (Unicode whitespace), compared exactly (case and punctuation kept).
Lines are split on "\n" and compared after trimming surrounding whitespace.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .text_common import char_lengths, flatten_lists, safe_ratio

TOP_NS = (2, 3, 4)
DUP_NS = (5, 6, 7, 8, 9, 10)

from dataaudit.textops.hashing import GOLD as _GOLD  # noqa: E402
from dataaudit.textops.hashing import mix as _mix  # noqa: E402  (splitmix64, shared with dedup/contamination)


def _ids(values: pa.Array) -> np.ndarray:
    """Integer id per string (equal strings -> equal ids) as uint64."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.uint64)
    enc = pc.dictionary_encode(values)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.uint64)


def _repeats(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Group equal `keys` -> (group id per item, is-first-occurrence per item, count per group).

    Arrow's hash-based `dictionary_encode` numbers groups in order of first appearance, so an item is the
    first of its group exactly when its id exceeds every earlier id, and the k-th first occurrence starts
    group k. (O(n), ~2x faster than a stable argsort of the 64-bit keys.)
    """
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64)
    gid = pc.dictionary_encode(pa.array(keys, type=pa.uint64())).indices.to_numpy(zero_copy_only=False)
    first = np.empty(len(gid), dtype=bool)
    first[0] = True
    np.greater(gid[1:], np.maximum.accumulate(gid)[:-1], out=first[1:])
    return gid, first, np.bincount(gid)


def line_stats(arr: pa.Array, doc_key: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """(dup_line_frac, dup_line_char_numerator) per document."""
    lines, parents, _ = flatten_lists(pc.split_pattern(arr, pattern="\n"))
    lines = pc.utf8_trim_whitespace(lines)
    llen = char_lengths(lines)
    keep = llen > 0
    n_lines = np.bincount(parents[keep], minlength=n_docs)
    dup_lines = np.zeros(n_docs, dtype=np.int64)
    dup_chars = np.zeros(n_docs, dtype=np.float64)
    if keep.any():
        lines = lines.filter(pa.array(keep))
        parents, llen = parents[keep], llen[keep]
        _, first, _ = _repeats(_mix(_ids(lines) ^ doc_key[parents]))
        rep = np.flatnonzero(~first)
        dup_lines = np.bincount(parents[rep], minlength=n_docs)
        dup_chars = np.bincount(parents[rep], weights=llen[rep], minlength=n_docs)
    return safe_ratio(dup_lines, n_lines), dup_chars


def ngram_stats(arr: pa.Array, doc_key: np.ndarray, n_docs: int, top_ns, dup_ns, min_words: int):
    """{n: top-n-gram chars} and {n: duplicated-n-gram chars} per document (numerators, float64)."""
    words, doc, _ = flatten_lists(pc.utf8_split_whitespace(arr))
    wlen = char_lengths(words)
    keep = wlen > 0                                             # leading/trailing/repeated whitespace
    if not keep.all():
        words, doc, wlen = words.filter(pa.array(keep)), doc[keep], wlen[keep]
    n_words = np.bincount(doc, minlength=n_docs)
    wlen = wlen.astype(np.float64)
    N = len(doc)
    top = {n: np.zeros(n_docs) for n in top_ns}
    dup = {n: np.zeros(n_docs) for n in dup_ns}
    max_n = max(list(top_ns) + list(dup_ns), default=0)
    if N == 0 or max_n == 0:
        return top, dup
    starts = np.concatenate(([0], np.cumsum(n_words)[:-1]))
    pos = np.arange(N, dtype=np.int64) - starts[doc]            # position of each word in its document
    left = n_words[doc] - pos                                   # words from here to the end of the document
    eligible = n_words[doc] >= min_words
    cum = np.concatenate(([0.0], np.cumsum(wlen)))
    wh = _mix(_ids(words) + _GOLD)                              # per-word hash
    h = _mix(wh ^ doc_key[doc])                                 # 1-gram hash, document mixed in
    # An n-gram can only occur twice in a document if both its (n-1)-gram prefix and suffix do, so each
    # round only groups the positions that survived the previous one (exact, and most text drops out fast).
    repeated = eligible.copy()                                  # (n-1)-gram at i occurs >= 2 times
    for n in range(2, max_n + 1):
        m = N - n + 1
        if m <= 0:
            break
        h = _mix(h[:m] * _GOLD + wh[n - 1:])                    # n-gram starting at i: words i..i+n-1
        idx = np.flatnonzero(repeated[:m] & repeated[1:m + 1] & (left[:m] >= n))
        if idx.size == 0:
            break
        gid, first, counts = _repeats(h[idx])
        repeated = np.zeros(N, dtype=bool)
        repeated[idx] = counts[gid] >= 2
        if n in top:
            g_pos = idx[first]                                  # first position of each distinct n-gram
            g_doc = doc[g_pos]
            g_len = cum[g_pos + n] - cum[g_pos] + (n - 1)       # words joined with single spaces
            best = np.zeros(n_docs, dtype=np.int64)
            np.maximum.at(best, g_doc, counts)
            cand = (counts >= 2) & (counts == best[g_doc])
            np.maximum.at(top[n], g_doc[cand], counts[cand] * g_len[cand])
        if n in dup:
            rep = idx[~first]                                   # repeated occurrences (not the first)
            if rep.size:
                edge = np.bincount(rep, minlength=N + 1) - np.bincount(rep + n, minlength=N + 1)
                covered = np.cumsum(edge[:N]) > 0
                dup[n] = np.bincount(doc, weights=wlen * covered, minlength=n_docs)
    return top, dup


def repetition_stats(arr: pa.Array, *, top_ns=TOP_NS, dup_ns=DUP_NS, lines: bool = True,
                     min_words: int = 0) -> dict[str, np.ndarray]:
    """All statistics as ratios, one float64 array per statistic (documents too short for an n -> 0)."""
    n_docs = len(arr)
    arr = pc.fill_null(arr, "")
    total = char_lengths(arr)
    doc_key = _mix(np.arange(n_docs, dtype=np.uint64) + np.uint64(1))
    out: dict[str, np.ndarray] = {}
    if lines:
        frac, chars = line_stats(arr, doc_key, n_docs)
        out["dup_line_frac"] = frac
        out["dup_line_char_frac"] = safe_ratio(chars, total)
    if top_ns or dup_ns:
        top, dup = ngram_stats(arr, doc_key, n_docs, tuple(top_ns), tuple(dup_ns), min_words)
        for n in top_ns:
            out[f"top_{n}_gram"] = safe_ratio(top[n], total)
        for n in dup_ns:
            out[f"dup_{n}_gram"] = safe_ratio(dup[n], total)
    return out
