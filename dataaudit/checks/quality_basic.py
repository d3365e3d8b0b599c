"""doc_length and char_class_ratio: the simplest pretraining document filters (length in characters and words;
shares of letters, digits, whitespace and punctuation), vectorized over the batch."""
from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from dataaudit.textops import codepoints, spacy_en

from .base import CheckOutput, register
from .quality_common import first_bound, texts
from .text_common import beyond, char_lengths, safe_ratio, to_int64

LENGTH_PARAMS = {"min_chars": 0, "max_chars": 0, "min_words": 50, "max_words": 100000}


@register(
    "doc_length", target="text", severity="warning", params=LENGTH_PARAMS, enabled=False,
    detail="document length out of range: {value:.0f} words",
    description="A document shorter than min_chars characters or min_words words, or longer than max_chars / "
                "max_words (0 turns a bound off). Words are whitespace-separated (str.split). For pretraining "
                "documents: off unless enabled (`--profile pretrain`). value = words.",
)
def doc_length(arr, min_chars: int = 0, max_chars: int = 0, min_words: int = 50, max_words: int = 100000,
               **params) -> CheckOutput:
    arr = texts(arr)
    n = len(arr)
    chars = char_lengths(arr)
    words = to_int64(pc.count_substring_regex(arr, pattern="[^" + spacy_en.SPACE_CLASS + "]+"))
    tests = [(v, op, limit, lambda i, v=v, what=what, op=op, limit=limit: f"doc_length: {v[i]} {what} {op} {limit}")
             for what, v, op, limit in (("characters", chars, "<", min_chars), ("characters", chars, ">", max_chars),
                                        ("words", words, "<", min_words), ("words", words, ">", max_words))]
    flagged, detail = first_bound(tests, n)
    return CheckOutput(flagged=flagged, value=words.astype(np.float64), detail=detail)


CLASS_PARAMS = {"min_letter_ratio": 0.4, "max_digit_ratio": 0.3, "max_whitespace_ratio": 0.5,
                "max_punctuation_ratio": 0.3, "min_chars": 50}
# RE2 classes of the code points counted (one character each: a table, see textops.codepoints)
CLASSES = (("letter", "[\\p{L}\\p{M}]"), ("digit", "[\\p{Nd}]"), ("whitespace", "[" + spacy_en.SPACE_CLASS + "]"),
           ("punctuation", "[\\p{P}\\p{S}]"))


@register(
    "char_class_ratio", target="text", severity="warning", params=CLASS_PARAMS, enabled=False,
    detail="letter share {value:.2f}",
    description="Shares of a document's characters that are letters (\\p{L} and combining marks \\p{M}, so that "
                "Indic and Thai text counts), decimal digits, whitespace, and punctuation or symbols (\\p{P} "
                "\\p{S}): flags a letter share under min_letter_ratio, or a digit, whitespace or punctuation share "
                "over its max_*_ratio (0 turns a bound off), for documents of at least min_chars characters "
                "(the letter/digit ratio filter of web-text pipelines). For pretraining documents: off unless "
                "enabled (`--profile pretrain`). value = letter share.",
)
def char_class_ratio(arr, min_letter_ratio: float = 0.4, max_digit_ratio: float = 0.3,
                     max_whitespace_ratio: float = 0.5, max_punctuation_ratio: float = 0.3, min_chars: int = 50,
                     **params) -> CheckOutput:
    arr = texts(arr)
    n = len(arr)
    shares = {}
    length = char_lengths(arr)
    for name, pattern in CLASSES:
        c, length = codepoints.count_matching(arr, pattern)
        shares[name] = safe_ratio(c, length)
    tests = [("letter", "<", min_letter_ratio), ("digit", ">", max_digit_ratio),
             ("whitespace", ">", max_whitespace_ratio), ("punctuation", ">", max_punctuation_ratio)]
    bounds = [(shares[name], op, limit,
               lambda i, name=name, op=op, limit=limit:
               f"char_class_ratio: {name} share {beyond(shares[name][i], limit)} {op} {limit:g}")
              for name, op, limit in tests]
    flagged, detail = first_bound(bounds, n, eligible=length >= min_chars)
    return CheckOutput(flagged=flagged, value=shares["letter"], detail=detail)


__all__ = ["doc_length", "char_class_ratio"]
