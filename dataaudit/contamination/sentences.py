"""Sentence boundaries for items matched on their whole text: such an item counts only as whole sentences.

An item shorter than n words is one gram, so without this a short question would match inside any longer sentence
that starts the same way ("... cold weather?" inside "... cold weather with wet hair?"). A hit of k words at
normalized word i of a document is kept when word i starts a sentence and, for an item that ends a sentence
itself (its text ends with . ! ? 。！？, then any closing quotes or brackets), word i + k - 1 ends one. An item that
stops mid-sentence (a fill-in-the-blank stem: "Snow, rain and fog are all forms of") is the start of a sentence
whose rest, often the answer, may follow in the document: it needs only the start.

- a sentence starts at the document start, after a sentence end, or after a colon followed by whitespace
  ("Q: ...", "Question: ...");
- a sentence ends at the document end, before a line break, or before sentence-ending punctuation
  (. ! ? 。！？, then any closing quotes or brackets) followed by whitespace.

Normalization removes punctuation, so the boundaries are marked before it: a sentinel word is inserted after the
whitespace that follows each boundary (inserting next to whitespace never splits or joins a word, so the words
are those of the unmarked document, sentinels aside). The sentinels are Unicode noncharacters, which
normalization keeps as they are. Only the documents holding a short-item hit are marked (pyarrow regex, numpy).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import Tokens, word_tokens
from dataaudit.textops.arrow import as_string_array
from dataaudit.textops.normalize import PY_WHITESPACE

from .grams import normalize_for_contamination

END_MARK = "\ufdd0"      # a sentence ends before it and starts after it
START_MARK = "\ufdd1"    # a sentence starts after it (a colon)

_WS = PY_WHITESPACE[:-1]                      # one whitespace character
_LINE_BREAK = r"[\n\x{0B}\x{0C}\r\x{1C}-\x{1E}\x{85}\x{2028}\x{2029}]"
_EMPHASIS = r"*_~`"                            # Markdown emphasis and code marks close a sentence like a quote
_END_PUNCT = r"[.!?\x{3002}\x{FF01}\x{FF1F}]+[\p{Pe}\p{Pf}\"'" + _EMPHASIS + "]*"
_SENTENCE_END = _END_PUNCT + _WS + "|" + _LINE_BREAK
_COLON = r"[:\x{FF1A}][" + _EMPHASIS + "]*" + _WS
_ITEM_END = _END_PUNCT + _WS + "*$"


def _mark_hashes() -> tuple[np.uint64, np.uint64]:
    t = word_tokens(normalize_for_contamination(pa.array([END_MARK, START_MARK])))
    return t.hash[0], t.hash[1]


_END_HASH, _START_HASH = _mark_hashes()


def ends_a_sentence(texts: pa.Array) -> np.ndarray:
    """Per item text: whether it ends with sentence-ending punctuation (then closing quotes, brackets, spaces)."""
    found = pc.match_substring_regex(as_string_array(texts), pattern=_ITEM_END)
    return np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)


def mark_boundaries(texts: pa.Array) -> pa.Array:
    """The texts with a sentinel word after every sentence boundary (END_MARK) and colon (START_MARK)."""
    out = pc.replace_substring_regex(texts, pattern=_SENTENCE_END, replacement=f"\\0 {END_MARK} ")
    return pc.replace_substring_regex(out, pattern=_COLON, replacement=f"\\0 {START_MARK} ")


def sentence_flags(texts: pa.Array) -> tuple[Tokens, np.ndarray, np.ndarray]:
    """(the words of the texts as `word_tokens(normalize_for_contamination(texts))` gives them, whether each
    starts a sentence, whether each ends one)."""
    tt = word_tokens(normalize_for_contamination(mark_boundaries(as_string_array(texts))))
    is_end = tt.hash == _END_HASH
    is_mark = is_end | (tt.hash == _START_HASH)
    real = np.flatnonzero(~is_mark)
    rdoc = tt.doc[real]
    marks = np.cumsum(is_mark)
    ends = np.cumsum(is_end)
    same_prev = np.zeros(len(real), bool)
    same_prev[1:] = rdoc[1:] == rdoc[:-1]
    start = np.ones(len(real), bool)
    start[1:] = marks[real[1:]] > marks[real[:-1]]       # a mark between the previous word and this one
    start |= ~same_prev
    end = np.ones(len(real), bool)
    end[:-1] = ends[real[1:]] > ends[real[:-1]]
    end[:-1] |= ~same_prev[1:]
    words = Tokens.of(tt.hash[real], rdoc, np.bincount(rdoc, minlength=len(texts)).astype(np.int64))
    return words, start, end


def whole_sentence_hits(texts: pa.Array, tokens: Tokens, hits: dict[int, tuple[np.ndarray, np.ndarray]],
                        closed: dict[int, np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """`hits` (k -> flat word positions, keys) with the hits of every k in `closed` kept only where the k words
    start a sentence of their document and, where closed[k][key] (the key's items end a sentence), end one. A
    document whose marked words do not line up with `tokens` (it holds the sentinel characters itself) keeps its
    hits: matched as before, never dropped unchecked."""
    short = [k for k in closed if k in hits and len(hits[k][0])]
    if not short:
        return hits
    docs, inv = np.unique(np.concatenate([tokens.doc[hits[k][0]] for k in short]), return_inverse=True)
    words, start, end = sentence_flags(as_string_array(texts).take(pa.array(docs)))
    aligned = words.count == tokens.count[docs]
    start, end = np.append(start, False), np.append(end, False)     # index -1: where a document is not aligned
    out = dict(hits)
    at = 0
    for k in short:
        p, u = hits[k]
        j = inv[at:at + len(p)]
        at += len(p)
        ok = aligned[j]
        i0 = np.where(ok, words.first[j] + p - tokens.first[docs[j]], -1)
        i1 = np.where(ok, i0 + k - 1, -1)
        keep = ~aligned[j] | (start[i0] & (end[i1] | ~closed[k][u]))
        out[k] = (p[keep], u[keep])
    return out
