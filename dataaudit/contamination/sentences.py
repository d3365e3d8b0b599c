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
  (. ! ? 。！？, then any closing quotes or brackets) followed by whitespace;
- a line break inside hard-wrapped prose is no boundary (`unwrap_hard_breaks`): the line before it does not end
  with a sentence mark or colon, and the next line starts lowercase, or the next line's first word would not have
  fit on a line of the paragraph's width, in a paragraph of several lines of about that width.

Items shorter than `min_item_words` ("Who are you?") are matched more strictly (`whole_sentence_hits`, `strict`):
both ends on a boundary, and the item's own final mark (? . !) ending the match, so a greeting or a two-word
question counts only as a whole sentence or turn of its own.

Normalization removes punctuation, so the boundaries are marked before it: a sentinel word is inserted after the
whitespace that follows each boundary (inserting next to whitespace never splits or joins a word, so the words
are those of the unmarked document, sentinels aside). The sentinels are Unicode noncharacters, which
normalization keeps as they are. Only the documents holding a short-item hit are marked (pyarrow regex, numpy).
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataaudit.textops import Tokens, word_tokens
from dataaudit.textops.arrow import as_string_array
from dataaudit.textops.normalize import PY_WHITESPACE

from .grams import join_hyphen_breaks, normalize_for_contamination

END_MARK = "\ufdd0"      # a sentence ends before it and starts after it (a line break)
START_MARK = "\ufdd1"    # a sentence starts after it (a colon)
# a sentence ends before it with this final mark (and starts after it): '.', '?', '!' (CJK marks alike)
CLASS_MARKS = {1: "\ufdd2", 2: "\ufdd3", 3: "\ufdd4"}
ANY_END = -1             # a strict item without a final mark (or keys whose items differ): any end boundary

_WS = PY_WHITESPACE[:-1]                      # one whitespace character
_LINE_BREAK = r"[\n\x{0B}\x{0C}\r\x{1C}-\x{1E}\x{85}\x{2028}\x{2029}]"
_EMPHASIS = r"*_~`"                            # Markdown emphasis and code marks close a sentence like a quote
_CLOSE = r"[\p{Pe}\p{Pf}\"'" + _EMPHASIS + "]*"
_MARKS = r"[.!?\x{3002}\x{FF01}\x{FF1F}]"
_END_PUNCT = _MARKS + "+" + _CLOSE
_CLASS_CHARS = {1: r"[.\x{3002}]", 2: r"[?\x{FF1F}]", 3: r"[!\x{FF01}]"}   # the last mark names the class
_CLASS_END = {c: _MARKS + "*" + chars + _CLOSE + _WS for c, chars in _CLASS_CHARS.items()}
_COLON = r"[:\x{FF1A}][" + _EMPHASIS + "]*" + _WS
_ITEM_END = _END_PUNCT + _WS + "*$"

# hard wraps (Python re: only documents holding a short-item hit get here)
_ENDS_LINE = re.compile(r"[.!?\u3002\uff01\uff1f:\uff1a][)\]}\"'\u201d\u2019\u00bb*_~`]*\s*$")
_PARAGRAPH = re.compile(r"(\n[ \t\r]*\n)")
WRAP_MIN_WIDTH = 40      # narrower "paragraphs" are lists and verse, not wrapped prose
WRAP_NEAR = 0.75         # a wrapped line is at least this fraction of the paragraph's width


def _mark_hashes() -> dict[str, np.uint64]:
    marks = [END_MARK, START_MARK, *CLASS_MARKS.values()]
    t = word_tokens(normalize_for_contamination(pa.array(marks)))
    return dict(zip(marks, t.hash))


_HASH = _mark_hashes()
_END_HASH, _START_HASH = _HASH[END_MARK], _HASH[START_MARK]
_CLASS_HASH = np.array([_HASH[CLASS_MARKS[c]] for c in (1, 2, 3)], np.uint64)


def ends_a_sentence(texts: pa.Array) -> np.ndarray:
    """Per item text: whether it ends with sentence-ending punctuation (then closing quotes, brackets, spaces)."""
    found = pc.match_substring_regex(as_string_array(texts), pattern=_ITEM_END)
    return np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)


def end_class(texts: pa.Array) -> np.ndarray:
    """Per item text: the class of its final mark (1 '.', 2 '?', 3 '!'; 0 none)."""
    arr = as_string_array(texts)
    out = np.zeros(len(arr), np.int8)
    for c, chars in _CLASS_CHARS.items():
        found = pc.match_substring_regex(arr, pattern=_MARKS + "*" + chars + _CLOSE + _WS + "*$")
        out[np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)] = c
    return out


def _unwrap(text: str) -> str:
    if "\n" not in text:
        return text
    parts = _PARAGRAPH.split(text)         # paragraphs, with the blank lines between them kept
    return "".join(_unwrap_paragraph(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def _unwrap_paragraph(para: str) -> str:
    lines = para.split("\n")
    if len(lines) < 2:
        return para
    lens = [len(x.rstrip()) for x in lines]
    width = max(lens)
    near = sum(n >= WRAP_NEAR * width for n in lens[:-1])
    wide = width >= WRAP_MIN_WIDTH and near >= 2
    parts = [lines[0]]
    for a, b, la in zip(lines, lines[1:], lens):
        head = b.lstrip()
        wrap = bool(a.strip()) and bool(head) and not _ENDS_LINE.search(a)
        if wrap:
            first = head.split(None, 1)[0]
            wrap = head[0].islower() or (wide and head[0].isalpha() and la >= WRAP_NEAR * width
                                         and la + 1 + len(first) > width)
        if wrap and a.endswith("\r"):
            parts[-1] = a[:-1] + " "
        parts.append(" " if wrap else "\n")
        parts.append(b)
    return "".join(parts)


def unwrap_hard_breaks(texts: pa.Array) -> pa.Array:
    """The texts with each line break inside hard-wrapped prose replaced by a space (same length: word positions
    and character offsets do not move)."""
    arr = as_string_array(texts)
    return pa.array([None if t is None else _unwrap(t) for t in arr.to_pylist()], pa.string())


def mark_boundaries(texts: pa.Array) -> pa.Array:
    """The texts with a sentinel word after every sentence boundary: the final mark's class (CLASS_MARKS), a line
    break that is no hard wrap (END_MARK), a colon (START_MARK)."""
    out = unwrap_hard_breaks(join_hyphen_breaks(as_string_array(texts)))    # (the words normalization gives)
    for c, pattern in _CLASS_END.items():
        out = pc.replace_substring_regex(out, pattern=pattern, replacement=f"\\0 {CLASS_MARKS[c]} ")
    out = pc.replace_substring_regex(out, pattern=_LINE_BREAK, replacement=f"\\0 {END_MARK} ")
    return pc.replace_substring_regex(out, pattern=_COLON, replacement=f"\\0 {START_MARK} ")


def sentence_flags(texts: pa.Array, classes: bool = False):
    """(the words of the texts as `word_tokens(normalize_for_contamination(texts))` gives them, whether each
    starts a sentence, whether each ends one[, with `classes`: the class of the mark that ends it, 0 for a line
    break or the document end])."""
    tt = word_tokens(normalize_for_contamination(mark_boundaries(as_string_array(texts))))
    cls_of = np.zeros(len(tt.hash), np.int8)
    for c, h in enumerate(_CLASS_HASH, start=1):
        cls_of[tt.hash == h] = c
    is_end = (tt.hash == _END_HASH) | (cls_of > 0)
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
    if not classes:
        return words, start, end
    # the class of the marks between a word and the next (the highest: "?" then a line break is a "?" end)
    owner = np.cumsum(~is_mark) - 1
    cls = np.zeros(len(real), np.int8)
    m = np.flatnonzero(is_mark & (owner >= 0))
    np.maximum.at(cls, owner[m], cls_of[m])
    return words, start, end, cls


def whole_sentence_hits(texts: pa.Array, tokens: Tokens, hits: dict[int, tuple[np.ndarray, np.ndarray]],
                        closed: dict[int, np.ndarray], strict: dict[int, np.ndarray] | None = None
                        ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """`hits` (k -> flat word positions, keys) with the hits of every k in `closed` kept only where the k words
    start a sentence of their document and, where closed[k][key] (the key's items end a sentence), end one. For
    every k in `strict` (items under min_item_words) the k words must also end a sentence, with the final mark
    class strict[k][key] (ANY_END: any end). A document whose marked words do not line up with `tokens` (it
    holds the sentinel characters itself) keeps its hits: matched as before, never dropped unchecked."""
    strict = strict or {}
    short = [k for k in closed if k in hits and len(hits[k][0])]
    if not short:
        return hits
    docs, inv = np.unique(np.concatenate([tokens.doc[hits[k][0]] for k in short]), return_inverse=True)
    words, start, end, cls = sentence_flags(as_string_array(texts).take(pa.array(docs)), classes=True)
    aligned = words.count == tokens.count[docs]
    start, end = np.append(start, False), np.append(end, False)     # index -1: where a document is not aligned
    cls = np.append(cls, 0)
    out = dict(hits)
    at = 0
    for k in short:
        p, u = hits[k]
        j = inv[at:at + len(p)]
        at += len(p)
        ok = aligned[j]
        i0 = np.where(ok, words.first[j] + p - tokens.first[docs[j]], -1)
        i1 = np.where(ok, i0 + k - 1, -1)
        if k in strict:
            want = strict[k][u]
            keep = ~aligned[j] | (start[i0] & end[i1] & ((want == ANY_END) | (cls[i1] == want)))
        else:
            keep = ~aligned[j] | (start[i0] & (end[i1] | ~closed[k][u]))
        out[k] = (p[keep], u[keep])
    return out
