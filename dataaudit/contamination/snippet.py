"""A short piece of the original training text around a match, located from normalized word positions.

Matching works on normalized words (lowercased, punctuation removed, whitespace collapsed). To show the original
text, the document is split on whitespace (the same Unicode whitespace the normalization collapses), each piece
is normalized, and pieces left empty (pure punctuation) own no word; normalized word i is then the i-th non-empty
piece. Only called for the few matches that are reported, never for every document.
"""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .grams import normalize_for_contamination

_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PIECE = re.compile(f"[^{_WS}]+")

CONTEXT_CHARS = 80
MAX_MATCH_CHARS = 600


_HYPHEN_GAP = re.compile(r"\r?\n[ \t]*")


def _join_hyphen_breaks(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Pieces "water-" + line break + "cycle" as one (as grams.join_hyphen_breaks joins them)."""
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out:
            pa_, pb = out[-1]
            if (pb - pa_ >= 2 and text[pb - 1] == "-" and text[pb - 2].isalpha() and text[a].islower()
                    and _HYPHEN_GAP.fullmatch(text, pb, a)):
                out[-1] = (pa_, b)
                continue
        out.append((a, b))
    return out


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character span in `text` of every normalized word, in order."""
    spans = [(m.start(), m.end()) for m in _PIECE.finditer(text)]
    if not spans:
        return []
    if "-\n" in text or "-\r\n" in text:
        spans = _join_hyphen_breaks(text, spans)
    norm = normalize_for_contamination(pa.array([text[a:b] for a, b in spans], pa.string()))
    keep = np.asarray(pc.greater(pc.utf8_length(norm), 0).to_numpy(zero_copy_only=False), dtype=bool)
    out = []
    for (a, b), k, w in zip(spans, keep, norm.to_pylist()):
        if k:
            # a piece holding whitespace-like characters the splitter knows but we do not: several words
            out.extend([(a, b)] * max(1, len(w.split())))
    return out


def make_snippet(text: str | None, lo: int, hi: int, spans: list[tuple[int, int]] | None = None
                 ) -> tuple[str, int, int]:
    """(snippet, match start, match end): the original text of normalized words [lo, hi) with up to
    CONTEXT_CHARS of context each side; the match itself is cut at MAX_MATCH_CHARS. Offsets index the snippet."""
    if not text:
        return "", 0, 0
    if spans is None:
        spans = word_spans(text)
    if not spans or lo < 0 or lo >= len(spans) or hi <= lo:
        core = text[:MAX_MATCH_CHARS]
        return core, 0, 0
    hi = min(hi, len(spans))
    a, b = spans[lo][0], spans[hi - 1][1]
    cut = b - a > MAX_MATCH_CHARS
    if cut:
        b = a + MAX_MATCH_CHARS
    start = max(0, a - CONTEXT_CHARS)
    before = text[start:a]
    after = "" if cut else text[b:b + CONTEXT_CHARS]
    prefix = "…" if start > 0 else ""
    suffix = "…" if cut or b + CONTEXT_CHARS < len(text) else ""
    snippet = prefix + before + text[a:b] + after + suffix
    m0 = len(prefix) + len(before)
    return snippet, m0, m0 + (b - a)
